#!/usr/bin/env bash
# Obtains every Helios dependency on a fresh Debian 12 (bookworm) machine.
#
# Idempotent: each step checks first and does nothing when its result is already there, so a second
# run takes seconds. Debian 12's own Vulkan headers, SPIRV-Tools, glslang and Catch2 are too old for
# cooperative matrices, so:
#   - system packages (compiler, CMake, fmt, nlohmann-json, CLI11, the Vulkan loader and validation layer)
#     come from bookworm;
#   - lavapipe (mesa-vulkan-drivers 25) and Catch2 v3 come from bookworm-backports;
#   - the Vulkan headers and SPIRV-Headers (1.4.363: they know VK_KHR_shader_bfloat16 and SPV_KHR_bfloat16)
#     are forky's header packages, volk is trixie's; all *unpacked* into the prefix (never installed);
#   - SPIRV-Tools (2026.4, whose validator knows bf16) is forky's static library, unpacked into a per-user
#     cache ($HELIOS_CACHE, default ~/.cache/helios, keyed by version) and linked into the prefix: the Debian
#     mirror serves forky's binary packages but not the sources of its '~rc' versions, and the library needs
#     only two glibc 2.38 entry points and one GCC 13 symbol beyond bookworm's, which deps.cmake supplies
#     (third_party/spirv_tools_compat.cpp). Its command-line tools need forky's glibc and are not used;
#   - glslang is built from trixie's source tarball into the same cache;
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

# --- 2. header packages from newer suites, unpacked (not installed) into the prefix ----------------------
# Private apt configurations (one per suite) so neither suite ever enters the system's sources.
APT_DIR=$PREFIX/apt
rm -rf "$APT_DIR/lists" "$APT_DIR/updated" "$APT_DIR/trixie.list" # the one-suite layout of earlier bootstraps
suite_opts() { # $1 = suite; sets SUITE_OPTS
  SUITE_OPTS=(-o "Dir::Etc::SourceList=$APT_DIR/$1.list" -o "Dir::Etc::SourceParts=/dev/null"
    -o "Dir::State::Lists=$APT_DIR/lists-$1" -o "Dir::Cache=$APT_DIR/cache" -o "APT::Architecture=amd64"
    -o "APT::Get::AllowUnauthenticated=false")
}
suite_update() { # $1 = suite; reads its package lists once
  suite_opts "$1"
  [ -f "$APT_DIR/updated-$1" ] && return 0
  mkdir -p "$APT_DIR/lists-$1/partial" "$APT_DIR/cache/archives/partial"
  cat >"$APT_DIR/$1.list" <<EOF
deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian $1 main
deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian $1 main
EOF
  log "reading $1 package lists (private apt dir)"
  apt-get "${SUITE_OPTS[@]}" update -q
  touch "$APT_DIR/updated-$1"
}
suite_download() { # $1 = suite, $2 = directory, then package=version...; a missing pin is a clear error
  local suite=$1 dir=$2
  shift 2
  suite_update "$suite"
  mkdir -p "$dir"
  (cd "$dir" && apt-get "${SUITE_OPTS[@]}" download "$@") ||
    { log "could not download $* from $suite: bump the pinned versions in third_party/bootstrap.sh"; exit 1; }
}

# Pinned: the Vulkan headers and SPIRV-Headers that know VK_KHR_shader_bfloat16 / SPV_KHR_bfloat16.
HEADER_PINS=(libvulkan-dev=1.4.363.0-1 spirv-headers=1.6.1+1.4.363.0-1)
VOLK_PKG=libvulkan-volk-dev
HDR=$PREFIX/headers # unpacked -dev packages
HDR_STAMP="${HEADER_PINS[*]} trixie:$VOLK_PKG"
if [ "$(cat "$HDR/.done" 2>/dev/null)" != "$HDR_STAMP" ]; then
  rm -rf "$HDR" "$APT_DIR/debs"
  mkdir -p "$HDR"
  suite_download forky "$APT_DIR/debs" "${HEADER_PINS[@]}"
  suite_download trixie "$APT_DIR/debs" "$VOLK_PKG"
  for deb in "$APT_DIR"/debs/*.deb; do dpkg-deb -x "$deb" "$HDR"; done
  # dpkg-deb keeps the packages' dates: newer headers must look newer to builds made against older ones.
  find "$HDR" -type f -exec touch {} +
  echo "$HDR_STAMP" >"$HDR/.done"
  log "unpacked ${HEADER_PINS[*]} (forky) and volk (trixie) into $HDR"
else
  log "headers present ($HDR_STAMP)"
fi

# --- 3. SPIRV-Tools (forky's static library) and glslang (trixie's source), cached per user ---------------
# The cache lives in $CACHE/<package>-<version>/ (outside any clone) and the prefix links to it, so a fresh
# clone on the same machine reuses it.
src_version() { # $1 = source package; prints trixie's version of it
  suite_update trixie
  apt-cache "${SUITE_OPTS[@]}" showsrc "$1" | awk '/^Version:/ { print $2; exit }'
}
fetch_source() { # $1 = source package, $2 = directory to unpack its trixie tarball into
  local pkg=$1 dest=$2 dl=$2.dl
  mkdir -p "$dl"
  suite_update trixie
  # The mirror may refuse the .dsc of a '~' version while serving its tarball; only the tarball is needed.
  (cd "$dl" && apt-get "${SUITE_OPTS[@]}" source --download-only "$pkg") || true
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

SPIRV_TOOLS_VERSION=2026.4~rc2-1
ST=$CACHE/spirv-tools-$SPIRV_TOOLS_VERSION-forky
if [ "$(readlink "$PREFIX/lib/libSPIRV-Tools.a" 2>/dev/null)" != "$ST/lib/libSPIRV-Tools.a" ]; then
  if [ ! -f "$ST/.done" ]; then
    W=$CACHE/work-spirv-tools-$SPIRV_TOOLS_VERSION
    rm -rf "$W"
    suite_download forky "$W/debs" "spirv-tools-dev=$SPIRV_TOOLS_VERSION" \
      "spirv-tools-headers=$SPIRV_TOOLS_VERSION"
    for deb in "$W"/debs/*.deb; do dpkg-deb -x "$deb" "$W/root"; done
    rm -rf "$ST" && mkdir -p "$ST/lib" "$ST/include"
    cp "$W/root/usr/lib/x86_64-linux-gnu/libSPIRV-Tools.a" "$ST/lib/"
    cp -r "$W/root/usr/include/spirv-tools" "$ST/include/"
    touch "$ST/.done"
    rm -rf "$W"
  fi
  # The source-built SPIRV-Tools of earlier bootstraps left its tools and headers here; nothing uses them.
  rm -rf "$PREFIX/bin/spirv-val" "$PREFIX/bin/spirv-dis" "$PREFIX/bin/spirv-as" "$PREFIX/include/spirv-tools"
  link_into_prefix "$ST"
  log "SPIRV-Tools $SPIRV_TOOLS_VERSION (forky's static library) linked from $ST"
else
  log "SPIRV-Tools present ($SPIRV_TOOLS_VERSION)"
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
