# Sourced by the device scripts that run mpirun (mpi.sh, hetero.sh), after setup.sh: Debian's OpenMPI launcher
# from .mpi (bench/device/mpi-debs.sh) with the settings a single-host job needs, and tmpi LIMIT N ARGS...
# (mpirun with N ranks, ended after LIMIT seconds). Needs $OUT (a folder for the library links).
# Debian's launcher, unpacked from .mpi by setup.sh: helios-train links Debian's libmpi, and the device
# image's own Open MPI (4.1.6, first on its PATH) crashed in PMIx before any rank started. That MPI's
# settings (OPAL_PREFIX, PMIX_*, OMPI_*, ORTE_*) would point Debian's launcher at the other installation's
# plugins, and its library directories would give the launcher and helios-train its libraries under the
# same sonames: the settings go, its directories leave LD_LIBRARY_PATH, and Debian's copies come first.
MPIRUN=/usr/bin/mpirun.openmpi
[ -x "$MPIRUN" ] || { echo "no $MPIRUN: carry .mpi (bash bench/device/mpi-debs.sh here)"; exit 1; }
for v in $(env | grep -oE '^(OPAL|PMIX|OMPI|ORTE)_[A-Za-z0-9_]*' || true); do
  echo "unset $v (another MPI's setting)"
  unset "$v"
done
DEBLIB=$OUT/debian-mpi-lib
mkdir -p "$DEBLIB"
for l in libmpi.so.40 libopen-rte.so.40 libopen-pal.so.40 libpmix.so.2 libhwloc.so.15 libevent_core-2.1.so.7 \
  libevent_pthreads-2.1.so.7; do
  ln -sf "/usr/lib/x86_64-linux-gnu/$l" "$DEBLIB/$l"
done
ldpath=$DEBLIB
IFS=: read -ra dirs <<<"${LD_LIBRARY_PATH:-}"
for d in "${dirs[@]}"; do
  if [ -n "$d" ] && compgen -G "$d/libmpi.so*" >/dev/null; then
    echo "dropped from LD_LIBRARY_PATH (another MPI): $d"
  elif [ -n "$d" ]; then
    ldpath=$ldpath:$d
  fi
done
export LD_LIBRARY_PATH=$ldpath
# libpmix.so.2 may still resolve to the image's PMIx 5 (Ubuntu's, same soname); its "compress" regex component
# crashes Debian's ORTE while it registers the job (pmix_preg_base_generate_ppn), "native" does not.
export PMIX_MCA_preg=native
# One host, no ssh: ORTE starts the ranks itself (the image set this too, among the settings unset above).
export OMPI_MCA_plm=isolated
# One host: shared memory between ranks, no network transports (their plugins are not carried), no
# single-copy (CMA needs ptrace rights containers rarely grant), no binding (each rank drives a GPU from
# several threads), and quiet about plugins that cannot load.
export OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none
export OMPI_MCA_mca_base_component_show_load_errors=0 OMPI_MCA_mtl=^ofi,psm,psm2 OMPI_MCA_osc=^ucx
# `timeout` runs programs, not shell functions: the limit goes inside.
tmpi() { local limit=$1; shift; "$MPIRUN" --allow-run-as-root --oversubscribe --bind-to none --timeout "$limit" -np "$@"; }
