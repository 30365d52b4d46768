#!/usr/bin/env bash
# Stages what a device run needs into .dev/ (git-ignored): stripped binaries from build/, the fmt and
# SentencePiece shared libraries they link, and the compiled GLSL oracles. The device machine runs
# glibc >= 2.36 x86-64 binaries built here as they are. Carry: .gl (Vulkan loader .deb), .dev, build/shaders. STAGE="helios-bench test_attention ..."
# stages only those binaries (a carry holds 64 MiB in all, and every binary together is about that much).
# helios-train (and the test binaries linking helios_train) need libmpi.so.40 where CMake found MPI: carry
# .mpi as well (bench/device/mpi-debs.sh, 4 MiB; setup.sh unpacks it), or build with -DHELIOS_WITH_MPI=OFF.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${HELIOS_BUILD_DIR:-$ROOT/build}
DEV=$ROOT/.dev
rm -rf "$DEV" && mkdir -p "$DEV/bin" "$DEV/lib"
for exe in $(find "$BUILD/bin" "$BUILD/tests" -maxdepth 3 -type f -executable \( -name 'helios-*' -o -name 'test_*' \)); do
  name=$(basename "$exe")
  [ -n "${STAGE:-}" ] && [[ " $STAGE " != *" $name "* ]] && continue
  strip -o "$DEV/bin/$name" "$exe"
done
cp -L /usr/lib/x86_64-linux-gnu/libfmt.so.9 "$DEV/lib/"
# helios-train and the tokenizer tests link Debian's SentencePiece, PCRE2 and utf8proc (engine/text).
cp -L /usr/lib/x86_64-linux-gnu/libsentencepiece.so.0 /usr/lib/x86_64-linux-gnu/libsentencepiece_train.so.0 \
  /usr/lib/x86_64-linux-gnu/libpcre2-8.so.0 /usr/lib/x86_64-linux-gnu/libutf8proc.so.2 "$DEV/lib/"
du -sh "$DEV"
