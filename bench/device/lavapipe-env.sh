# Sourced by device scripts (after setup.sh): Mesa's lavapipe from .lvp/lavapipe.tar.xz
# (bench/device/lavapipe-pack.sh) unpacked into $LAVAPIPE_PREFIX (/tmp/helios-lavapipe), not /, and
# lvpenv CMD... running CMD with the Vulkan loader told of lavapipe's ICD beside the ones it finds itself (or
# beside VK_DRIVER_FILES where setup.sh set it) and with the libraries lavapipe needs that this system lacks
# (ldconfig does not know their sonames) first on LD_LIBRARY_PATH: only CMD sees them, so the system's own
# programs keep their own, newer copies. Falls back to all of lavapipe's libraries when the loader does not
# list lavapipe with the system's; exits when it still does not.
# Lavapipe beside the NVIDIA ICD: its ICD file names the unpacked library by absolute path.
LVP=${LAVAPIPE_PREFIX:-/tmp/helios-lavapipe}
[ -e .lvp/lavapipe.tar.xz ] || { echo "no .lvp/lavapipe.tar.xz: bash bench/device/lavapipe-pack.sh here, carry .lvp"; exit 1; }
rm -rf "$LVP" && mkdir -p "$LVP/expose" && tar -C "$LVP" -xJf .lvp/lavapipe.tar.xz
sed -E "s#\"library_path\": *\"[^\"]*\"#\"library_path\": \"$LVP/lib/libvulkan_lvp.so\"#" "$LVP/lvp_icd.json" >"$LVP/icd.json"
expose() { # $1: all, or missing (the sonames ldconfig does not know)
  rm -f "$LVP"/expose/*
  while read -r so; do
    if [ "$1" = all ] || ! ldconfig -p | awk '{print $1}' | grep -qxF "$so"; then ln -s "$LVP/lib/$so" "$LVP/expose/$so"; fi
  done <"$LVP/sonames.txt"
}
drivers=${VK_DRIVER_FILES:+$VK_DRIVER_FILES:}$LVP/icd.json
if [ -z "${VK_DRIVER_FILES:-}" ]; then # the loader's default search finds NVIDIA here; lavapipe is added
  lvpenv() { LD_LIBRARY_PATH=$LVP/expose${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} VK_ADD_DRIVER_FILES=$LVP/icd.json "$@"; }
else
  lvpenv() { LD_LIBRARY_PATH=$LVP/expose${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} VK_DRIVER_FILES=$drivers "$@"; }
fi
# helios-probe lists only the selected device where HELIOS_DEVICE is set (setup.sh sets it): ask for all.
probe_all() { (unset HELIOS_DEVICE; "$@" helios-probe 2>&1); }
expose missing
if ! probe_all lvpenv 2>&1 | grep -q llvmpipe; then
  echo "lavapipe not listed with the system's own copies of its libraries ($(ls "$LVP/expose" | wc -l) exposed); exposing all"
  expose all
fi
probe_all lvpenv | grep -E '^Device [0-9]+:' | sed 's/^/  /'
probe_all lvpenv | grep -q llvmpipe || {
  echo "FAIL: the Vulkan loader does not list lavapipe:"
  VK_LOADER_DEBUG=error,warn,driver probe_all lvpenv | grep -iE 'lavapipe|lvp|error|warn' | tail -n 20
  exit 1
}
echo "lavapipe from $(tr '\n' ' ' <"$LVP/packages.txt" | cut -c1-200)..., exposed: $(ls "$LVP/expose" | tr '\n' ' ')"
