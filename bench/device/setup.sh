# Sourced by the device scripts (repository root as the working directory, .gl and .dev carried): unpacks
# the Vulkan loader from .gl (and OpenMPI from .mpi where carried: bench/device/mpi-debs.sh), puts .dev's
# binaries and libraries first, selects the NVIDIA device with a pipeline cache in /tmp, and points the
# loader at the NVIDIA ICD where it does not find it alone.
for f in .gl/*.deb .mpi/*.deb; do if [ -e "$f" ]; then dpkg -x "$f" /; fi; done
ldconfig
export LD_LIBRARY_PATH=$PWD/.dev/lib:${LD_LIBRARY_PATH:-} PATH=$PWD/.dev/bin:$PATH
export HELIOS_DEVICE=${HELIOS_DEVICE:-nvidia} HELIOS_CACHE_DIR=${HELIOS_CACHE_DIR:-/tmp/helios-cache} PYTHONUNBUFFERED=1
helios-probe >/dev/null 2>&1 || export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
