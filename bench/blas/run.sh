#!/bin/sh
# Products against OpenBLAS called directly (issue 32): is gshell's
# torch.matmul ever slower than one cblas_sgemm into the same OpenBLAS?
# Usage: sh bench/blas/run.sh [BUILD_DIR]. Writes bench/results/blas-latest.md.
#   BENCH_BLAS_ROUNDS=N  rounds per side (default 5)
# Three sides take turns, round after round, the order rotating (gshell,
# blas, pytorch; blas, pytorch, gshell; ...): gshell (bench/blas/matmul.lua),
# OpenBLAS direct (numpy.matmul on float32: one cblas_sgemm into Debian's
# libblas.so.3, which is OpenBLAS, with OPENBLAS_NUM_THREADS = the cores
# this process may use) and PyTorch (torch.set_num_threads to the same).
# Each ratio is the median of per-round ratios, with the smallest and
# largest round. Then bench/blas/split.c times, in one process and in
# alternation, the two ways to use 2 cores for one product: split into
# single-threaded OpenBLAS calls on two threads (what
# src/backend/cpu/cpu_gemm.c does), or one call with OpenBLAS's threads.
set -eu
cd "$(dirname "$0")/../.."
. bench/machine.sh
BUILD=${1:-build}
PY=/usr/bin/python3
ROUNDS=${BENCH_BLAS_ROUNDS:-5}
OUT=bench/results/blas-latest.md
T=$(nproc)
export LUA_CPATH="$BUILD/?.so;;"
[ -f "$BUILD/torch.so" ] || { echo "bench/blas: $BUILD/torch.so is missing: run make first" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
load0=$(cut -d' ' -f1-3 /proc/loadavg)

side() {
  case $1 in
    gshell) lua5.4 bench/blas/matmul.lua ;;
    blas) OPENBLAS_NUM_THREADS=$T $PY bench/blas/matmul.py blas ;;
    pytorch) $PY bench/blas/matmul.py pytorch ;;
  esac | sed "s/^/$1 $r /" >>"$tmp/all"
}
r=1
while [ "$r" -le "$ROUNDS" ]; do
  echo "bench/blas: round $r of $ROUNDS" >&2
  case $((r % 3)) in
    1) side gshell; side blas; side pytorch ;;
    2) side blas; side pytorch; side gshell ;;
    0) side pytorch; side gshell; side blas ;;
  esac
  r=$((r + 1))
done

# `side round key value unit` lines -> per key: each side's median, and
# gshell's ratio to each other side as the median of per-round ratios
table=$(awk '
  function med(a, n,   i, j, t) {
    for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
  }
  { v[$1, $2, $3] = $4; if (!($3 in seen)) { seen[$3] = 1; keys[++nk] = $3 }; if ($2 > nr) nr = $2 }
  END {
    for (q = 1; q <= nk; q++) {
      k = keys[q]; line = "| " k
      split("gshell blas pytorch", sides, " ")
      for (s = 1; s <= 3; s++) { n = 0; for (i = 1; i <= nr; i++) if ((sides[s], i, k) in v) x[++n] = v[sides[s], i, k]; line = line sprintf(" | %.1f", n ? med(x, n) : 0) }
      for (s = 2; s <= 3; s++) {
        n = 0; lo = hi = ""
        for (i = 1; i <= nr; i++) if (v["gshell", i, k] > 0 && v[sides[s], i, k] > 0) {
          y[++n] = v["gshell", i, k] / v[sides[s], i, k]
          lo = lo == "" || y[n] < lo ? y[n] : lo; hi = hi == "" || y[n] > hi ? y[n] : hi
        }
        line = line (n ? sprintf(" | %.3fx (%.3f-%.3f)", med(y, n), lo, hi) : " | n/a")
      }
      print line " |"
    }
  }' "$tmp/all")
cc -O2 -o "$tmp/split" bench/blas/split.c -lopenblas -lpthread
echo "bench/blas: split.c, 500 and 2000" >&2
split500=$("$tmp/split" 500 21)
split2000=$("$tmp/split" 2000 7)
load1=$(cut -d' ' -f1-3 /proc/loadavg)
header="| product (GFLOP/s, float32) | gshell | OpenBLAS direct | PyTorch | gshell / OpenBLAS (spread) | gshell / PyTorch (spread) |
| --- | ---: | ---: | ---: | ---: | ---: |"
printf '\n%s\n%s\n\n%s\n%s\n' "$header" "$table" "$split500" "$split2000"
{
  echo "# Products: gshell vs OpenBLAS called directly"
  echo
  echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "- machine: $(bench_machine)"
  echo "- load average before / after: $load0 / $load1 (other work running at the same time skews the numbers)"
  echo "- gshell: $(git rev-parse --short HEAD 2>/dev/null || echo '?') ($BUILD), CPU kernels: $(bench_gshell_isa "$BUILD"); OpenBLAS direct: numpy $($PY -c 'import numpy; print(numpy.__version__)') matmul, OPENBLAS_NUM_THREADS=$T; PyTorch $($PY -c 'import torch; print(torch.__version__)'), set_num_threads($T)"
  echo "- $ROUNDS rounds per side, the order rotating; each value the median repetition after at least 4 warm-up products, the columns each side's median round; ratios: the median of per-round ratios (smallest-largest)"
  echo
  echo "$header"
  echo "$table"
  echo
  echo "bench/blas/split.c (one process, alternating; below 1 the split is faster):"
  echo
  echo "- $split500"
  echo "- $split2000"
} >"$OUT"
echo "bench/blas: wrote $OUT" >&2
