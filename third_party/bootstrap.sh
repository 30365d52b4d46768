#!/usr/bin/env bash
# Obtains every Helios dependency on a fresh Debian 12 (bookworm) machine.
#
# Idempotent: each step checks first and does nothing when its result is already there, so a second
# run takes seconds. Debian 12's own Vulkan headers, SPIRV-Tools, glslang and Catch2 are too old for
# cooperative matrices, so:
#   - system packages (compiler, CMake, fmt, nlohmann-json, CLI11, the Vulkan loader and validation layer)
#     come from bookworm;
#   - lavapipe (mesa-vulkan-drivers 25) and Catch2 v3 come from bookworm-backports;
#   - Vulkan headers 1.4, SPIRV-Headers and volk are header/source packages from trixie, *unpacked* into the
#     prefix (never installed: trixie binaries need a newer glibc);
#   - SPIRV-Tools and glslang are built from trixie's source tarballs into a per-user cache
#     ($HELIOS_CACHE, default ~/.cache/helios, keyed by version) and linked into the prefix;
#   - Mesa's no-op DRM shims for Intel and AMD (third_party/mesa-shims.sh, same cache) let CI compile
#     pipelines with ANV's and RADV's real compilers without the hardware (tools/vendor-env.sh).
# Everything else non-system lands in $HELIOS_DEPS (default: <repo>/.deps, git-ignored).
# On other distros with new-enough packages, CMake finds the system copies and none of this is needed.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PREFIX=${HELIOS_DEPS:-$ROOT/.deps}
JOBS=${JOBS:-$(nproc)}
mkdir -p "$PREFIX"
PREFIX=$(cd "$PREFIX" && pwd)
# Per-user build cache shared by every clone (SPIRV-Tools, glslang, Mesa's DRM shims), keyed by version.
CACHE=${HELIOS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/helios}
mkdir -p "$CACHE"
export HELIOS_CACHE=$CACHE

log() { printf '[bootstrap] %s\n' "$*"; }
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; fi

# --- 1. system packages ----------------------------------------------------------------------------------
BOOKWORM_PKGS=(build-essential cmake ninja-build pkg-config python3 git xz-utils dpkg-dev
  libfmt-dev nlohmann-json3-dev libcli11-dev libvulkan1 libvulkan-dev vulkan-validationlayers bible-kjv
  bible-kjv-text python3-numpy libsentencepiece-dev sentencepiece python3-dev python3-pybind11 pybind11-dev
  libopenmpi-dev openmpi-bin libpcre2-dev libutf8proc-dev python3-regex)
BACKPORTS_PKGS=(mesa-vulkan-drivers catch2)
BACKPORTS_LIST=/etc/apt/sources.list.d/helios-bookworm-backports.list

need_apt=0
for p in "${BOOKWORM_PKGS[@]}" "${BACKPORTS_PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || need_apt=1
done
# lavapipe must be Mesa >= 25 and Catch2 >= 3; bookworm's own versions are older.
mesa_ver=$(dpkg-query -W -f='${Version}' mesa-vulkan-drivers 2>/dev/null || true)
catch_ver=$(dpkg-query -W -f='${Version}' catch2 2>/dev/null || true)
case "$mesa_ver" in 2[5-9].*|[3-9]*) ;; *) need_apt=1 ;; esac
case "$catch_ver" in 3.*) ;; *) need_apt=1 ;; esac

if [ "$need_apt" = 1 ]; then
  if grep -q bookworm /etc/os-release 2>/dev/null && [ ! -f "$BACKPORTS_LIST" ] &&
     ! grep -rqs bookworm-backports /etc/apt/sources.list /etc/apt/sources.list.d/; then
    log "adding bookworm-backports"
    echo "deb http://deb.debian.org/debian bookworm-backports main" | $SUDO tee "$BACKPORTS_LIST" >/dev/null
  fi
  log "installing system packages"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${BOOKWORM_PKGS[@]}"
  if grep -q bookworm /etc/os-release 2>/dev/null; then
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends \
      -t bookworm-backports "${BACKPORTS_PKGS[@]}"
  else
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${BACKPORTS_PKGS[@]}"
  fi
else
  log "system packages present (mesa $mesa_ver, catch2 $catch_ver)"
fi

# --- 2. trixie header/source packages, unpacked (not installed) into the prefix ---------------------------
# A private apt configuration so trixie never enters the system's sources.
APT_DIR=$PREFIX/apt
TRIXIE_OPTS=(-o "Dir::Etc::SourceList=$APT_DIR/trixie.list" -o "Dir::Etc::SourceParts=/dev/null"
  -o "Dir::State::Lists=$APT_DIR/lists" -o "Dir::Cache=$APT_DIR/cache" -o "APT::Architecture=amd64"
  -o "APT::Get::AllowUnauthenticated=false")
trixie_update() {
  [ -f "$APT_DIR/updated" ] && return 0
  mkdir -p "$APT_DIR/lists/partial" "$APT_DIR/cache/archives/partial"
  cat >"$APT_DIR/trixie.list" <<EOF
deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian trixie main
deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian trixie main
EOF
  log "reading trixie package lists (private apt dir)"
  apt-get "${TRIXIE_OPTS[@]}" update -q
  touch "$APT_DIR/updated"
}

HDR=$PREFIX/headers   # unpacked trixie -dev packages
if [ ! -f "$HDR/.done" ]; then
  trixie_update
  mkdir -p "$HDR" "$APT_DIR/debs"
  (cd "$APT_DIR/debs" && apt-get "${TRIXIE_OPTS[@]}" download libvulkan-dev spirv-headers libvulkan-volk-dev)
  for deb in "$APT_DIR"/debs/*.deb; do dpkg-deb -x "$deb" "$HDR"; done
  touch "$HDR/.done"
  log "unpacked trixie headers into $HDR"
else
  log "trixie headers present"
fi

# --- 3. SPIRV-Tools and glslang from trixie sources, built once per user ------------------------------------
# The builds live in $CACHE/<package>-<version>/ (outside any clone) and the prefix links to them, so a fresh
# clone on the same machine reuses them instead of rebuilding.
src_version() { # $1 = source package; prints trixie's version of it
  trixie_update
  apt-cache "${TRIXIE_OPTS[@]}" showsrc "$1" | awk '/^Version:/ { print $2; exit }'
}
fetch_source() { # $1 = source package, $2 = directory to unpack its tarball into
  local pkg=$1 dest=$2 dl=$2.dl
  mkdir -p "$dl"
  # The mirror may refuse the .dsc of a '~' version while serving its tarball; only the tarball is needed.
  (cd "$dl" && apt-get "${TRIXIE_OPTS[@]}" source --download-only "$pkg") || true
  local tarball
  tarball=$(ls "$dl"/*.orig.tar.* 2>/dev/null | grep -v '\.asc$' | head -n1 || true)
  [ -n "$tarball" ] || { log "could not download the $pkg source tarball from trixie"; exit 1; }
  rm -rf "$dest" && mkdir -p "$dest"
  tar -xf "$tarball" -C "$dest" --strip-components=1
  rm -rf "$dl"
}
link_into_prefix() { # $1 = cached install directory; links each of its files into the prefix
  (cd "$1" && find . -type f ! -name .done) | while read -r f; do
    mkdir -p "$PREFIX/$(dirname "$f")"
    ln -sfn "$1/${f#./}" "$PREFIX/${f#./}"
  done
}

if [ ! -x "$PREFIX/bin/spirv-val" ] || [ ! -f "$PREFIX/lib/libSPIRV-Tools.a" ]; then
  ver=$(src_version spirv-tools)
  [ -n "$ver" ] || { log "trixie lists no spirv-tools source"; exit 1; }
  ST=$CACHE/spirv-tools-$ver
  if [ ! -f "$ST/.done" ]; then
    W=$CACHE/work-spirv-tools-$ver
    fetch_source spirv-tools "$W"
    log "building SPIRV-Tools $ver (several minutes on 2 cores)"
    cmake -S "$W" -B "$W/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DSPIRV-Headers_SOURCE_DIR="$HDR/usr" -DSPIRV_SKIP_TESTS=ON -DSPIRV_WERROR=OFF \
      -DSPIRV_TOOLS_BUILD_STATIC=ON -DBUILD_SHARED_LIBS=OFF -DCMAKE_POSITION_INDEPENDENT_CODE=ON \
      >"$W.configure.log"
    # Only what Helios uses: the core library (validator, disassembler) and its CLIs; the optimizer is skipped.
    cmake --build "$W/build" -j "$JOBS" --target SPIRV-Tools-static spirv-val spirv-dis spirv-as
    rm -rf "$ST" && mkdir -p "$ST/bin" "$ST/lib" "$ST/include/spirv-tools"
    cp "$W/build/tools/spirv-val" "$W/build/tools/spirv-dis" "$W/build/tools/spirv-as" "$ST/bin/"
    cp "$W/build/source/libSPIRV-Tools.a" "$ST/lib/"
    cp "$W/include/spirv-tools/"*.h "$W/include/spirv-tools/"*.hpp "$ST/include/spirv-tools/"
    touch "$ST/.done"
    rm -rf "$W" "$W.configure.log"
  fi
  link_into_prefix "$ST"
  log "SPIRV-Tools $ver linked from $ST"
else
  log "SPIRV-Tools present ($("$PREFIX/bin/spirv-val" --version | head -n1))"
fi

if [ ! -x "$PREFIX/bin/glslangValidator" ]; then
  ver=$(src_version glslang)
  [ -n "$ver" ] || { log "trixie lists no glslang source"; exit 1; }
  GL=$CACHE/glslang-$ver
  if [ ! -f "$GL/.done" ]; then
    W=$CACHE/work-glslang-$ver
    fetch_source glslang "$W"
    log "building glslang $ver (a couple of minutes)"
    cmake -S "$W" -B "$W/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DENABLE_OPT=OFF -DGLSLANG_TESTS=OFF -DENABLE_HLSL=OFF -DBUILD_SHARED_LIBS=OFF \
      -DGLSLANG_ENABLE_INSTALL=ON >"$W.configure.log"
    cmake --build "$W/build" -j "$JOBS" --target glslang-standalone
    rm -rf "$GL" && mkdir -p "$GL/bin"
    cp "$W/build/StandAlone/glslang" "$GL/bin/glslangValidator"
    touch "$GL/.done"
    rm -rf "$W" "$W.configure.log"
  fi
  link_into_prefix "$GL"
  log "glslang $ver linked from $GL"
else
  log "glslang present"
fi

# --- 4. the default training corpus: the King James Bible (bible-kjv + bible-kjv-text, step 1) ------------
# `bible` prints every verse as "Ge1:1 In the beginning ..."; the reference is stripped, one verse a line
# (31,102 lines, about 4.1 MB of English). helios-train reads $PREFIX/corpus/kjv.txt when --data is not given.
CORPUS=$PREFIX/corpus/kjv.txt
if [ ! -s "$CORPUS" ]; then
  mkdir -p "$PREFIX/corpus"
  bible -f gen1:1-rev22:21 | sed -E 's/^[1-3]?[A-Za-z]+[0-9]+:[0-9]+ //' >"$CORPUS.tmp"
  [ "$(wc -l <"$CORPUS.tmp")" -ge 31000 ] || { log "bible printed too little text into $CORPUS.tmp"; exit 1; }
  mv "$CORPUS.tmp" "$CORPUS"
  log "wrote the default corpus $CORPUS ($(wc -c <"$CORPUS") bytes)"
else
  log "default corpus present ($CORPUS)"
fi

# --- 5. Mesa's no-op DRM shims (emulated Intel/AMD devices for compile-only checks) --------------------------
if [ "${HELIOS_SKIP_SHIMS:-0}" != 1 ]; then
  JOBS=$JOBS "$ROOT/third_party/mesa-shims.sh" >/dev/null
fi

log "done: dependencies in $PREFIX"
