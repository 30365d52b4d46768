#!/usr/bin/env bash
# Installs the build into WORK/stage, moves it to WORK/prefix (an installed Helios must not depend on where
# it was installed, nor on the build or source tree), and fails if an installed text file names either tree.
# Usage: install_prefix.sh BUILD SOURCE WORK
set -euo pipefail
BUILD=$1 SOURCE=$2 WORK=$3
rm -rf "$WORK"
mkdir -p "$WORK"
cmake --install "$BUILD" --prefix "$WORK/stage" >/dev/null
mv "$WORK/stage" "$WORK/prefix"
for tree in "$BUILD" "$SOURCE" "$WORK/stage"; do
  if grep -rlI --exclude=kjv.txt -F "$tree" "$WORK/prefix"; then
    echo "install/prefix: the installed files above name $tree" >&2
    exit 1
  fi
done
if readelf -d "$WORK"/prefix/lib*/libhelios.so | grep -E "RPATH|RUNPATH"; then
  echo "install/prefix: libhelios.so keeps a run path" >&2
  exit 1
fi
ls "$WORK/prefix"/bin "$WORK"/prefix/lib*/cmake/Helios "$WORK/prefix/include/helios"
