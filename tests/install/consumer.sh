#!/usr/bin/env bash
# Configures and builds examples/consumer against the installed prefix (find_package(Helios)) and runs it.
# Usage: consumer.sh SOURCE WORK
set -euo pipefail
SOURCE=$1 WORK=$2
cmake -S "$SOURCE/examples/consumer" -B "$WORK/consumer" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$WORK/prefix" >/dev/null
cmake --build "$WORK/consumer"
"$WORK/consumer/helios-consumer" "$WORK"
