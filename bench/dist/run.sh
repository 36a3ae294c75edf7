#!/bin/sh
# Distributed benchmarks: all-reduce bus bandwidth between 2 ranks, and a
# DDP step on 2 ranks vs 1 at the same global batch with the share of
# communication hidden behind backward. Usage: sh bench/dist/run.sh [BUILD]
# Writes bench/results/dist-latest.md (the numbers, then
# bench/dist/method.md). Each rank computes on one thread
# (GSHELL_NUM_THREADS=1, and OPENBLAS_NUM_THREADS=1 for the matrix
# products): with 2 ranks on a 2-core machine more would oversubscribe it.
set -u
cd "$(dirname "$0")/../.."
BUILD=${1:-build}
OUT=bench/results/dist-latest.md
MPI="mpirun --oversubscribe"
[ "$(id -u)" -eq 0 ] && MPI="$MPI --allow-run-as-root"
export GSHELL_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
command -v mpirun >/dev/null || { echo "bench: mpirun is missing (apt-get install openmpi-bin)" >&2; exit 1; }
load=$(cut -d' ' -f1-3 /proc/loadavg)
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT INT TERM
echo "bench: all-reduce, 2 ranks" >&2
$MPI -np 2 "$BUILD/gshell" bench/dist/allreduce.lua >>"$tmp" || exit 1
echo "bench: DDP step, 1 rank" >&2
$MPI -np 1 "$BUILD/gshell" bench/dist/ddp.lua >>"$tmp" || exit 1
echo "bench: DDP step, 2 ranks" >&2
$MPI -np 2 "$BUILD/gshell" bench/dist/ddp.lua >>"$tmp" || exit 1
{
  echo "# gshell distributed benchmarks"
  echo
  echo "$(date -u '+%Y-%m-%d %H:%M UTC'), $(. bench/machine.sh; bench_machine), load before: $load, after: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo
  echo '```'
  cat "$tmp"
  echo '```'
  echo
  cat bench/dist/method.md
} >"$OUT"
cat "$OUT"
