#!/bin/sh
# gshell vs PyTorch on this machine's CPU. Usage: sh bench/run.sh [BUILD_DIR]
# (`make bench` runs it after `make`). Prints a table and writes it, with the
# machine's description, to bench/results/cpu-latest.md. See bench/README.md.
#   BENCH_ROUNDS=N        rounds of the op benchmarks per side (default 3)
#   BENCH_MEM_ROUNDS=N    extra short rounds of the memory-bound rows per
#                         side, alternating (default 6)
#   BENCH_FAIL_ON_DROP=1  exit 3 when a ratio fell more than 15% since the
#                         previous run (the table flags it either way)
#   BENCH_REPLAY=DIR      measure nothing: DIR/gshell and DIR/pytorch hold the
#                         `name value unit` lines (spec/bench_table_spec.lua)
#   BENCH_OUT=FILE        the results file (default bench/results/cpu-latest.md;
#                         the history goes beside it)
set -u
cd "$(dirname "$0")/.."
BUILD=${1:-build}
ROUNDS=${BENCH_ROUNDS:-3}
MEM_ROUNDS=${BENCH_MEM_ROUNDS:-6}
PY=/usr/bin/python3          # Debian's python, the one with torch
LUA=lua5.4
export LUA_CPATH="$BUILD/?.so;;"
OUT=${BENCH_OUT:-bench/results/cpu-latest.md}
HIST=$(dirname "$OUT")/cpu-history.tsv
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

# Measure (or, with BENCH_REPLAY, take the lines given).
if [ -z "${BENCH_REPLAY:-}" ]; then
  [ -f "$BUILD/torch.so" ] || { echo "bench: $BUILD/torch.so is missing: run make first" >&2; exit 1; }
  $PY -c 'import torch' 2>/dev/null || { echo "bench: $PY cannot import torch (apt-get install python3-torch)" >&2; exit 1; }

  load0=$(cut -d' ' -f1-3 /proc/loadavg)
  awk -v l="$load0" 'BEGIN { exit !(l + 0 > 1) }' &&
    echo "bench: warning: load average $load0 before starting: other work will skew the numbers" >&2

  # Each step prints `name value unit` lines (and `# note` lines); failures go
  # to stderr. The op benchmarks run in rounds, alternating which side goes
  # first (gshell, pytorch, pytorch, gshell, ...) so that both meet the same
  # background load; the best round of each side counts.
  gs() { echo "bench: ops, gshell (round $1/$ROUNDS)" >&2; $LUA bench/lua/ops.lua >>"$tmp/gshell"; }
  py() { echo "bench: ops, pytorch (round $1/$ROUNDS)" >&2; $PY bench/py/ops.py >>"$tmp/pytorch"; }
  echo "bench: start-up (gshell, then pytorch)" >&2
  $PY bench/py/startup.py gshell "$BUILD" >"$tmp/gshell"
  $PY bench/py/startup.py pytorch         >"$tmp/pytorch"
  r=1
  while [ "$r" -le "$ROUNDS" ]; do
    if [ $((r % 2)) -eq 1 ]; then gs $r; py $r; else py $r; gs $r; fi
    r=$((r + 1))
  done
  # The memory-bound rows again, in short alternating rounds (a few
  # seconds each): the machine's bandwidth drifts by up to 1.7x within a
  # minute, so rounds a minute apart can compare one side's fast spell
  # with the other's slow one; short rounds close together meet the same.
  r=1
  while [ "$r" -le "$MEM_ROUNDS" ]; do
    echo "bench: memory-bound rows, round $r/$MEM_ROUNDS" >&2
    if [ $((r % 2)) -eq 1 ]; then
      $LUA bench/lua/ops.lua memory >>"$tmp/gshell"; $PY bench/py/ops.py memory >>"$tmp/pytorch"
    else
      $PY bench/py/ops.py memory >>"$tmp/pytorch"; $LUA bench/lua/ops.lua memory >>"$tmp/gshell"
    fi
    r=$((r + 1))
  done
else
  cp "$BENCH_REPLAY/gshell" "$BENCH_REPLAY/pytorch" "$tmp/" || exit 1
  load0=$(cut -d' ' -f1-3 /proc/loadavg)
fi

# The rows: key | what is measured | which is better | target ratio ("-": none).
# ratio = how many times better gshell is: gshell/pytorch when higher is
# better, pytorch/gshell when lower is better. So ratio > 1 favours gshell.
cat >"$tmp/spec" <<'SPEC'
startup|start-up to a first tensor (process wall time)|lower|20
add_tiny|per-op overhead, a + b on 4 floats|lower|2
matmul_500|matmul 500x500 float32|higher|0.95
matmul_2000|matmul 2000x2000 float32|higher|0.95
add_16M|x + y, 16M float32 (out of place)|higher|2
exp_16M|x:exp(), 16M float32 (out of place)|higher|2
sum_16M|x:sum(), 16M float32|higher|1
max_16M|x:max(), 16M float32|higher|1
sum_rows_16M|x:sum(2), 4096x4096 float32 (along rows)|higher|1
sum_cols_16M|x:sum(1), 4096x4096 float32 (down columns)|higher|1
copy_16M|y:copy_(x), 16M float32 (memory bandwidth)|higher|-
mlp_step|MLP 784-256-10 train step, batch 256, SGD|higher|1
conv_lenet1|conv2d 1->6 5x5 pad 2, 28x28, batch 256, fwd+bwd GFLOP/s (PyTorch: best of 1, 2 threads)|higher|-
conv_lenet2|conv2d 6->16 5x5, 14x14, batch 256, fwd+bwd GFLOP/s (PyTorch: best of 1, 2 threads)|higher|-
conv_res28|conv2d 64->64 3x3 pad 1, 28x28, batch 32, fwd+bwd GFLOP/s (PyTorch: best of 1, 2 threads)|higher|1
conv_res56|conv2d 64->64 3x3 pad 1, 56x56, batch 8, fwd+bwd GFLOP/s (PyTorch: best of 1, 2 threads)|higher|1
SPEC

# Best value per side and key ("nan": that side failed or lacks the feature).
best() {
  awk -F'|' '
    function num(v) { return v ~ /^[-+]?[0-9]*\.?[0-9]+([eE][-+]?[0-9]+)?$/ }
    FILENAME == ARGV[1] { higher[$1] = $3 == "higher"; next }
    /^#/ { next }
    {
      split($0, f, " "); k = f[1]; v = f[2]; unit[k] = f[3]
      if (!(k in val) || !num(val[k])) val[k] = v
      else if (num(v) && (higher[k] ? v + 0 > val[k] + 0 : v + 0 < val[k] + 0)) val[k] = v
    }
    END { for (k in val) print k, val[k], unit[k] }' "$tmp/spec" "$1"
}
best "$tmp/gshell" >"$tmp/gshell.best"
best "$tmp/pytorch" >"$tmp/pytorch.best"

# The previous run's ratios (from the results file this run replaces), by
# benchmark description, found by the header's "ratio" column so that
# older layouts still read.
prev_date=$(sed -n 's/^- date: //p' "$OUT" 2>/dev/null | head -1)
awk -F'|' '
  function trim(v) { gsub(/^ +| +$/, "", v); return v }
  /^\| benchmark / { for (i = 2; i < NF; i++) if (trim($i) ~ /^ratio/) col = i; next }
  col && /^\| / && trim($col) ~ /^[0-9.]+x$/ { r = trim($col); sub(/x$/, "", r); print trim($2) "|" r }
' "$OUT" 2>/dev/null >"$tmp/prev"

table=$(awk -F'|' '
  function num(v) { return v ~ /^[-+]?[0-9]*\.?[0-9]+([eE][-+]?[0-9]+)?$/ }
  function fmt(v, u) {
    if (!num(v)) return "n/a"
    v += 0
    return sprintf(v >= 100 ? "%.0f" : v >= 10 ? "%.1f" : v >= 1 ? "%.2f" : "%.3f", v) u
  }
  FILENAME == ARGV[1] { split($0, f, " "); gs[f[1]] = f[2]; unit[f[1]] = f[3]; next }
  FILENAME == ARGV[2] { split($0, f, " "); py[f[1]] = f[2]; if (!(f[1] in unit)) unit[f[1]] = f[3]; next }
  FILENAME == ARGV[3] { prev[$1] = $2; next }
  {
    k = $1; g = gs[k]; p = py[k]; ok = num(g) && num(p) && g > 0 && p > 0
    ratio = ok ? ($3 == "higher" ? g / p : p / g) : 0
    tgt = $4 == "-" ? "-" : ">= " $4 "x"
    res = !ok ? "n/a" : $4 == "-" ? "info" : ratio >= $4 ? "PASS" : "MISS"
    # the previous ratio and the change; a drop of more than 15% is flagged
    was = "-"
    if (($2 in prev) && prev[$2] > 0) {
      ch = ok ? (ratio / prev[$2] - 1) * 100 : 0
      was = sprintf("%s (%s)", fmt(prev[$2], "x"), !ok ? "n/a" : ch < -15 ? sprintf("**DROP %+.0f%%**", ch) : sprintf("%+.0f%%", ch))
    }
    printf "| %s | %s | %s | %s | %s | %s | %s |\n", $2, fmt(g, " " unit[k]), fmt(p, " " unit[k]),
           fmt(ok ? ratio : "", "x"), was, tgt, res
  }' "$tmp/gshell.best" "$tmp/pytorch.best" "$tmp/prev" "$tmp/spec")

header="| benchmark | gshell | pytorch | ratio (>1: gshell better) | previous ratio (${prev_date:-none}) | target | result |
| --- | ---: | ---: | ---: | ---: | --- | --- |"

# Notes: the steps' own `#` lines, and the memory-bound rows as a share of the
# best copy bandwidth either side reached (the machine's bandwidth).
notes=$( { grep -h '^#' "$tmp/gshell" "$tmp/pytorch" | sort -u | sed 's/^# */- /'
  awk 'FILENAME == ARGV[1] { gs[$1] = $2 } FILENAME == ARGV[2] { py[$1] = $2 }
    END {
      bw = gs["copy_16M"] + 0 > py["copy_16M"] + 0 ? gs["copy_16M"] : py["copy_16M"]
      if (bw + 0 <= 0) exit
      printf "- memory bandwidth (best copy): %.1f GB/s; as a share of it:", bw
      n = split("add_16M exp_16M sum_16M max_16M sum_rows_16M sum_cols_16M", k, " ")
      for (i = 1; i <= n; i++)
        printf " %s gshell %.0f%% / pytorch %.0f%%%s", k[i], 100 * gs[k[i]] / bw, 100 * py[k[i]] / bw, i < n ? "," : "\n"
    }' "$tmp/gshell.best" "$tmp/pytorch.best"; } )

load1=$(cut -d' ' -f1-3 /proc/loadavg)
machine="$(nproc) cores, $(lscpu | grep 'Model name' | sed 's/.*: *//'), $(awk '/MemTotal/ { printf "%.0f GiB RAM", $2 / 1048576 }' /proc/meminfo)"
torchv=$([ -n "${BENCH_REPLAY:-}" ] && echo "(replayed)" || $PY -c 'import torch; print(torch.__version__)')

printf '\n%s\n%s\n\n%s\n' "$header" "$table" "$notes"

mkdir -p "$(dirname "$OUT")"
{
  echo "# gshell vs PyTorch, CPU"
  echo
  echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "- machine: $machine"
  echo "- load average before / after: $load0 / $load1 (other work running at the same time skews the numbers)"
  echo "- gshell: $(git rev-parse --short HEAD 2>/dev/null || echo '?') ($BUILD), PyTorch $torchv with torch.set_num_threads(2)"
  echo "- ratio: how many times better gshell is (time: pytorch/gshell; rate: gshell/pytorch)"
  echo "- each value: median of timed repetitions after warm-up, best of $ROUNDS rounds per side (memory-bound rows: of $((ROUNDS + MEM_ROUNDS)), $MEM_ROUNDS of them short alternating rounds of those rows only); GB/s counts bytes read + written"
  echo "- previous ratio: the run this file replaced (${prev_date:-none}); a ratio more than 15% below it is flagged DROP; every run's ratios are in bench/results/cpu-history.tsv"
  echo
  echo "$header"
  echo "$table"
  [ -n "$notes" ] && { echo; echo "$notes"; }
} >"$OUT"
echo "bench: wrote $OUT" >&2

# Every run's ratios, one line per benchmark, for the longer view.
[ -f "$HIST" ] || printf 'date\tcommit\tbenchmark\tgshell\tpytorch\tratio\tload_before\n' >"$HIST"
commit=$(git rev-parse --short HEAD 2>/dev/null || echo '?')
awk -F'|' -v d="$(date -u '+%Y-%m-%d %H:%M')" -v c="$commit" -v l="${load0%% *}" '
  FILENAME == ARGV[1] { split($0, f, " "); gs[f[1]] = f[2]; next }
  FILENAME == ARGV[2] { split($0, f, " "); py[f[1]] = f[2]; next }
  {
    k = $1; g = gs[k] + 0; p = py[k] + 0
    r = g > 0 && p > 0 ? ($3 == "higher" ? g / p : p / g) : 0
    printf "%s\t%s\t%s\t%s\t%s\t%.3f\t%s\n", d, c, k, gs[k], py[k], r, l
  }' "$tmp/gshell.best" "$tmp/pytorch.best" "$tmp/spec" >>"$HIST"

# The drops, said once more where they cannot be missed.
drops=$(printf '%s\n' "$table" | grep 'DROP' | awk -F'|' '{ gsub(/^ +| +$/, "", $2); gsub(/^ +| +$/, "", $6); print "bench: ratio DROP since the previous run: " $2 ": " $6 }')
if [ -n "$drops" ]; then
  printf '%s\n' "$drops" >&2
  echo "bench: (on a busy machine, run again before concluding; BENCH_FAIL_ON_DROP=1 makes a drop fail the run)" >&2
  [ "${BENCH_FAIL_ON_DROP:-0}" = 1 ] && exit 3
fi
exit 0
