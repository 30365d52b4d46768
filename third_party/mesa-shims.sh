#!/usr/bin/env bash
# Builds Mesa's no-op DRM shims for Intel and AMD (libintel_noop_drm_shim.so, libamdgpu_noop_drm_shim.so).
#
# Preloaded under Debian's ANV/RADV (mesa-vulkan-drivers), they make those drivers enumerate an emulated
# GPU and compile pipelines with the vendor's real compiler without the hardware (tools/vendor-env.sh).
# The shims must come from the same Mesa version as the installed drivers, so the version is read from
# dpkg and the source tarball is fetched from bookworm-backports. Results are cached per user, keyed by
# version, outside any clone: $HELIOS_CACHE/mesa-<version>-drm-shims-p<patch>/{libintel,libamdgpu}_noop_drm_shim.so.
# Usage: mesa-shims.sh   (prints the cache directory on success; idempotent)
set -euo pipefail

CACHE=${HELIOS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/helios}
JOBS=${JOBS:-$(nproc)}
log() { printf '[mesa-shims] %s\n' "$*" >&2; }
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; fi

full_ver=$(dpkg-query -W -f='${Version}' mesa-vulkan-drivers 2>/dev/null || true)
[ -n "$full_ver" ] || { log "mesa-vulkan-drivers is not installed"; exit 1; }
ver=${full_ver%%-*}          # 25.0.7-2~bpo12+1 -> 25.0.7
# Two changes to Mesa's source, so a GPT-2-small step's buffers can be allocated: the shims' buffer pool (a
# sparse memfd, 4 GiB upstream) grows to 256 GiB, and the Intel shim reports 128 GiB memory regions instead of
# 4. Bump PATCH_LEVEL when the patch changes.
PATCH_LEVEL=4
SHIM_MEM_GIB=256
INTEL_REGION_GIB=128
OUT=$CACHE/mesa-$ver-drm-shims-p$PATCH_LEVEL
if [ -f "$OUT/libintel_noop_drm_shim.so" ] && [ -f "$OUT/libamdgpu_noop_drm_shim.so" ]; then
  log "present in $OUT"
  echo "$OUT"
  exit 0
fi

# --- build dependencies: LLVM 15 (bookworm has LLVMSPIRVLib only for 14/15; ANV needs Mesa's CLC),
# meson >= 1.4 and libdrm >= 2.4.121 from bookworm-backports.
PKGS=(llvm-15-dev libclang-15-dev libclang-cpp15-dev libclc-15-dev libllvmspirvlib-15-dev python3-mako
  python3-yaml python3-packaging python3-ply flex bison glslang-tools spirv-tools libelf-dev zlib1g-dev
  libexpat1-dev libzstd-dev libudev-dev xz-utils)
BPO_PKGS=(meson libdrm-dev)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
meson_ver=$(dpkg-query -W -f='${Version}' meson 2>/dev/null || true)
drm_ver=$(dpkg-query -W -f='${Version}' libdrm-dev 2>/dev/null || true)
case "$meson_ver" in 1.[4-9]*|1.[1-9][0-9]*) ;; *) missing+=(meson) ;; esac
case "$drm_ver" in 2.4.12[1-9]*|2.4.1[3-9]*) ;; *) missing+=(libdrm-dev) ;; esac
if [ ${#missing[@]} -gt 0 ]; then
  log "installing ${missing[*]}"
  $SUDO apt-get update -q >&2
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${PKGS[@]}" >&2
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends \
    -t bookworm-backports "${BPO_PKGS[@]}" >&2
fi

# --- source: only the orig tarball is needed (the mirror may refuse a backport's .dsc).
WORK=$CACHE/mesa-$ver-src
APT_DIR=$WORK/apt
if [ ! -f "$WORK/mesa/meson.build" ]; then
  mkdir -p "$APT_DIR/lists/partial" "$APT_DIR/cache/archives/partial" "$WORK/dl"
  echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian bookworm-backports main" \
    >"$APT_DIR/sources.list"
  OPTS=(-o "Dir::Etc::SourceList=$APT_DIR/sources.list" -o "Dir::Etc::SourceParts=/dev/null"
    -o "Dir::State::Lists=$APT_DIR/lists" -o "Dir::Cache=$APT_DIR/cache")
  log "fetching the mesa $full_ver source tarball"
  apt-get "${OPTS[@]}" update -q >&2
  (cd "$WORK/dl" && apt-get "${OPTS[@]}" source --download-only "mesa=$full_ver" >&2) || true
  tarball=$(ls "$WORK"/dl/mesa_"$ver".orig.tar.* 2>/dev/null | grep -v '\.asc$' | head -n1 || true)
  [ -n "$tarball" ] || { log "could not download mesa_$ver.orig.tar.* from bookworm-backports"; exit 1; }
  rm -rf "$WORK/mesa.tmp" && mkdir -p "$WORK/mesa.tmp"
  tar -xf "$tarball" -C "$WORK/mesa.tmp" --strip-components=1
  mv "$WORK/mesa.tmp" "$WORK/mesa"
fi

DEVICE_C=$WORK/mesa/src/drm-shim/device.c
if ! grep -q "define SHIM_MEM_SIZE ($SHIM_MEM_GIB" "$DEVICE_C"; then
  sed -i -E "s/^#define SHIM_MEM_SIZE \(.*$/#define SHIM_MEM_SIZE ($SHIM_MEM_GIB""ull * 1024 * 1024 * 1024)/" "$DEVICE_C"
  grep -q "define SHIM_MEM_SIZE ($SHIM_MEM_GIB" "$DEVICE_C" || { log "could not patch $DEVICE_C"; exit 1; }
fi
INTEL_C=$WORK/mesa/src/intel/tools/intel_noop_drm_shim.c
sed -i -E "s/probed_size = [0-9]+ull \* 1024/probed_size = $INTEL_REGION_GIB""ull * 1024/" "$INTEL_C"
[ "$(grep -c "probed_size = $INTEL_REGION_GIB""ull" "$INTEL_C")" = 2 ] || { log "could not patch $INTEL_C"; exit 1; }

# --- configure and build only the two shim libraries.
B=$WORK/build
if [ ! -f "$B/build.ninja" ]; then
  log "configuring mesa $ver (drm-shim tools only)"
  rm -rf "$B"
  # /usr/bin first: meson must find Debian's python3 (with mako), not a user's pyenv.
  PATH=/usr/lib/llvm-15/bin:/usr/bin:$PATH meson setup "$B" "$WORK/mesa" --buildtype=release \
    -Dvulkan-drivers=intel,amd -Dgallium-drivers= -Dtools=drm-shim,intel -Dllvm=enabled \
    -Dplatforms= -Dglx=disabled -Degl=disabled -Dgles1=disabled -Dgles2=disabled -Dopengl=false \
    -Dgbm=disabled -Dvideo-codecs= -Dvalgrind=disabled -Dlibunwind=disabled -Dlmsensors=disabled \
    -Dzstd=enabled -Dbuild-tests=false >"$WORK/configure.log" 2>&1 ||
    { tail -n 30 "$WORK/configure.log" >&2; log "meson setup failed (log: $WORK/configure.log)"; exit 1; }
fi
log "building the shims (-j$JOBS)"
PATH=/usr/lib/llvm-15/bin:/usr/bin:$PATH ninja -C "$B" -j "$JOBS" src/intel/tools/libintel_noop_drm_shim.so src/amd/drm-shim/libamdgpu_noop_drm_shim.so \
  >"$WORK/build.log" 2>&1 || { tail -n 30 "$WORK/build.log" >&2; log "build failed (log: $WORK/build.log)"; exit 1; }
mkdir -p "$OUT.tmp"
cp "$B/src/intel/tools/libintel_noop_drm_shim.so" "$B/src/amd/drm-shim/libamdgpu_noop_drm_shim.so" "$OUT.tmp/"
echo "mesa $full_ver, patch level $PATCH_LEVEL (SHIM_MEM_SIZE $SHIM_MEM_GIB GiB, Intel regions $INTEL_REGION_GIB GiB), built $(date -u +%F)" >"$OUT.tmp/VERSION"
rm -rf "$OUT" && mv "$OUT.tmp" "$OUT"
log "built into $OUT"
echo "$OUT"
