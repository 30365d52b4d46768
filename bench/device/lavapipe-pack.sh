#!/usr/bin/env bash
# Packs Mesa's lavapipe (the CPU Vulkan driver) for a device machine without it into .lvp/ (git-ignored): the
# Debian 12 packages it runs from, fetched here with apt-get download (mesa-vulkan-drivers as installed here,
# from bookworm-backports, and the package of every library libvulkan_lvp.so loads except glibc's and
# GCC's), of which only lavapipe's ICD file and the shared libraries it needs go into .lvp/lavapipe.tar.xz
# (the .debs hold every Mesa Vulkan driver). Two of LLVM 15's libraries lavapipe never calls: Z3 (the static
# analyser's solver) and libxml2 (Windows manifests; with ICU and liblzma behind it), 17 MB of .debs, so the
# archive carries stubs in their place, built here from the symbols libLLVM-15 takes from them (each stub
# function aborts, naming itself, should it ever be called). hetero.sh unpacks the archive outside /
# (LAVAPIPE_PREFIX) and points the Vulkan loader at it beside the NVIDIA ICD. Prints the archive's size and
# what the carry holds together (64 MiB at most).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
LVP_SO=/usr/lib/x86_64-linux-gnu/libvulkan_lvp.so
[ -e "$LVP_SO" ] || { echo "no $LVP_SO here: install mesa-vulkan-drivers (third_party/bootstrap.sh does)"; exit 1; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
# The libraries lavapipe loads (resolved here), less the C and C++ runtimes every device image has and the
# ones replaced by stubs (and what only they load).
STUBS="libz3.so.4 libxml2.so.2"
libs=$(ldd "$LVP_SO" | awk '/=> \// {print $3}' |
  grep -vE '/(libc|libm|libpthread|libdl|librt|libstdc\+\+|libgcc_s|libz3|libxml2|libicuuc|libicudata|liblzma)\.so')
# The package that installed a library: Debian 12 lists files under /lib or /usr/lib (merged /usr).
owner() {
  local f
  f=$(readlink -f "$1")
  { dpkg -S "$f" || dpkg -S "${f#/usr}"; } 2>/dev/null | head -n 1 | cut -d: -f1
}
version() { dpkg-query -W -f='${Version}' "$1"; }
pkgs="mesa-vulkan-drivers=$(version mesa-vulkan-drivers)"
for l in $libs; do
  p=$(owner "$l")
  [ -n "$p" ] || { echo "$l: no package owns it"; exit 1; }
  pkgs+=" $p=$(version "$p")"
done
(cd "$WORK" && apt-get download $pkgs >/dev/null 2>&1)
mkdir -p "$WORK/root" "$WORK/pack/lib"
for d in "$WORK"/*.deb; do dpkg -x "$d" "$WORK/root"; done
cp "$WORK/root/usr/share/vulkan/icd.d/lvp_icd.json" "$WORK/pack/"
cp -a "$WORK/root/usr/lib/x86_64-linux-gnu/libvulkan_lvp.so" "$WORK/pack/lib/"
for l in $libs; do # the soname link and the file it names, from the packages just fetched
  name=$(basename "$l")
  found=$(find "$WORK/root" -name "$name" | head -n 1)
  [ -n "$found" ] || { echo "$name: not in the fetched packages ($pkgs)"; exit 1; }
  cp -a "$found" "$WORK/pack/lib/"
  if [ -L "$found" ]; then cp -a "$(dirname "$found")/$(readlink "$found")" "$WORK/pack/lib/"; fi
done
# The stubs: every symbol libLLVM-15 takes from the library, a function that aborts or an object of the
# real one's size, under the real one's symbol versions.
LLVM=$(find "$WORK/root" -name 'libLLVM-15.so.1' | head -n 1)
for stub in $STUBS; do
  /usr/bin/python3 - "$LLVM" "/usr/lib/x86_64-linux-gnu/$stub" "$WORK/$stub" <<'PY'
import collections, subprocess, sys
llvm, real, out = sys.argv[1:4]
nm = lambda *a: subprocess.run(["nm", "-D", *a], check=True, capture_output=True, text=True).stdout.split("\n")
defined = {}
for line in nm("--defined-only", "-S", real):
    f = line.split()
    if len(f) == 4: defined[f[3].split("@")[0]] = (f[2], int(f[1], 16))
versions = collections.defaultdict(list)
for line in nm("--undefined-only", llvm):
    f = line.split()
    if len(f) == 2 and f[1].split("@")[0] in defined:
        name, _, version = f[1].partition("@")
        versions[version].append(name)
with open(out + ".c", "w") as c:
    c.write("#include <stdio.h>\n#include <stdlib.h>\n")
    for names in versions.values():
        for n in names:
            kind, size = defined[n]
            if kind in "Tt":
                c.write(f'void {n}(void) {{ fputs("lavapipe stub: {n} called\\n", stderr); abort(); }}\n')
            else:
                c.write(f"unsigned char {n}[{max(size, 1)}];\n")
with open(out + ".map", "w") as m:
    for version, names in versions.items():
        m.write(f"{version or 'STUB'} {{ global: {'; '.join(names)}; }};\n")
print(f"{real}: {sum(map(len, versions.values()))} symbols stubbed", file=sys.stderr)
PY
  cc -shared -fPIC -O1 -o "$WORK/pack/lib/$stub" -Wl,-soname,"$stub" -Wl,--version-script="$WORK/$stub.map" \
    "$WORK/$stub.c"
done
ls -1 "$WORK"/*.deb | xargs -n1 basename >"$WORK/pack/packages.txt"
for l in $libs $STUBS; do basename "$l"; done >"$WORK/pack/sonames.txt" # hetero.sh exposes the missing ones
rm -rf "$ROOT/.lvp" && mkdir -p "$ROOT/.lvp"
tar -C "$WORK/pack" -cf - . | xz -9 -T0 --block-size=32MiB >"$ROOT/.lvp/lavapipe.tar.xz"
echo "packages: $(tr '\n' ' ' <"$WORK/pack/packages.txt")"
echo "lavapipe: $(du -sh "$WORK/pack" | cut -f1) unpacked, $(du -sh "$ROOT/.lvp" | cut -f1) in .lvp"
total=$(du -scb "$ROOT/.lvp" "$ROOT/.mpi" "$ROOT/.gl" "$ROOT/.dev" "$ROOT/build/shaders" "$ROOT/.deps/corpus" \
  2>/dev/null | tail -n 1 | cut -f1 || true)
echo "carry .lvp .mpi .gl .dev build/shaders .deps/corpus: $((total >> 20)) MiB of 64"
