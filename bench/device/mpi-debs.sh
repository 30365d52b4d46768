#!/usr/bin/env bash
# Downloads (here, with apt-get) the Debian 12 packages that mpirun and libmpi need on a device machine
# without OpenMPI into .mpi/ (git-ignored, about 4 MiB); setup.sh unpacks them there. Carry .mpi beside .gl.
# Only what a single-host run loads: the launcher (openmpi-bin: orterun), libmpi and its plugins
# (libopenmpi3, openmpi-common: help texts, MCA defaults), hwloc, libevent, PMIx (+ munge). The network
# transports (UCX, libfabric, PSM, verbs) are left out; mpi.sh turns their plugins off.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
DEBS="openmpi-bin openmpi-common libopenmpi3 libhwloc15 libevent-core-2.1-7 libevent-pthreads-2.1-7 libpmix2
      libmunge2"
rm -rf "$ROOT/.mpi" && mkdir -p "$ROOT/.mpi"
cd "$ROOT/.mpi" && apt-get download $DEBS
ls -1 "$ROOT/.mpi" && du -sh "$ROOT/.mpi"
