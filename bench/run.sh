#!/bin/sh
# gshell vs PyTorch on this machine's CPU. Usage: sh bench/run.sh [BUILD_DIR]
# (`make bench` runs it after `make`). Prints a table and writes it, with the
# machine's description, to bench/results/cpu-latest.md. See bench/README.md.
#   BENCH_ROUNDS=N        rounds of the op benchmarks per side (default 3)
#   BENCH_MEM_ROUNDS=N    extra short rounds of the memory-bound rows per
#                         side, alternating (default 6)
#   BENCH_FAIL_ON_DROP=1  exit 3 when a ratio fell more than 15% since the
#                         last run on the same CPU model (the table flags it
#                         either way)
#   BENCH_REPLAY=DIR      measure nothing: DIR/gshell and DIR/pytorch hold the
#                         `name value unit` lines (spec/bench_table_spec.lua)
#   BENCH_OUT=FILE        the results file (default bench/results/cpu-latest.md;
#                         the history goes beside it)
#   BENCH_CPUINFO=FILE    describe the machine from FILE, not /proc/cpuinfo
#                         (bench/machine.sh; the spec's synthetic CPUs)
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
  # background load; each round pairs with the other side's same round.
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

# Per key: each side's median, and the ratio as the median of per-pair
# ratios, with its spread (smallest and largest pair). A side's i-th value
# of a key pairs with the other side's i-th: the rounds alternate
# (gshell, pytorch, pytorch, gshell, ...), so a pair met the same minute
# of this machine's drifting speed, where each side's best over all rounds
# could compare one side's fast spell with the other's slow one. "nan"
# (a side failed) leaves that pair out.
awk -F'|' '
  function num(v) { return v ~ /^[-+]?[0-9]*\.?[0-9]+([eE][-+]?[0-9]+)?$/ }
  function med(a, n,   i, j, t, b) {   # the median of a[1..n] (sorted in place)
    for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
  }
  FILENAME == ARGV[1] { higher[$1] = $3 == "higher"; keys[++nk] = $1; next }
  /^#/ { next }
  {
    split($0, f, " "); k = f[1]; unit[k] = unit[k] == "" ? f[3] : unit[k]
    side = FILENAME == ARGV[2] ? "g" : "p"
    n = ++cnt[side, k]; v[side, k, n] = f[2]
  }
  END {
    for (q = 1; q <= nk; q++) {
      k = keys[q]; ng = 0; np = 0; nr = 0
      for (i = 1; i <= cnt["g", k]; i++) if (num(v["g", k, i]) && v["g", k, i] > 0) g[++ng] = v["g", k, i] + 0
      for (i = 1; i <= cnt["p", k]; i++) if (num(v["p", k, i]) && v["p", k, i] > 0) p[++np] = v["p", k, i] + 0
      m = cnt["g", k] < cnt["p", k] ? cnt["g", k] : cnt["p", k]
      lo = hi = ""
      for (i = 1; i <= m; i++) {
        a = v["g", k, i]; b = v["p", k, i]
        if (!(num(a) && num(b) && a > 0 && b > 0)) continue
        r[++nr] = higher[k] ? a / b : b / a
        if (lo == "" || r[nr] < lo) lo = r[nr]
        if (hi == "" || r[nr] > hi) hi = r[nr]
      }
      print k, ng ? med(g, ng) : "nan", np ? med(p, np) : "nan", nr ? med(r, nr) : "nan", \
            nr ? lo : "nan", nr ? hi : "nan", nr, unit[k] == "" ? "-" : unit[k]
    }
  }' "$tmp/spec" "$tmp/gshell" "$tmp/pytorch" >"$tmp/stats"
# each side's median per key, for the notes: `key value`
awk '{ print $1, $2 }' "$tmp/stats" >"$tmp/gshell.med"
awk '{ print $1, $3 }' "$tmp/stats" >"$tmp/pytorch.med"

# The previous ratios: the last run recorded on this CPU model (issue 32: a
# drop means something only against the same kind of machine). First the
# history, whose lines name the CPU; older history lines do not, so when it
# has none for this CPU the results file this run replaces counts if its
# machine line names the same model (older layouts: "N cores, MODEL, ...";
# its ratios are found by the header's "ratio" column).
. bench/machine.sh
cpu=$(bench_cpu_model)
machine=$(bench_machine)
prev_date=$(awk -F'\t' -v c="$cpu" '$8 == c { d = $1 " UTC" } END { print d }' "$HIST" 2>/dev/null)
if [ -n "$prev_date" ]; then
  awk -F'\t' -v c="$cpu" '$8 == c && $6 + 0 > 0 { r[$3] = $6 } END { for (k in r) print k "|" r[k] }' "$HIST" >"$tmp/prev.keys"
  # by description, as the table is built
  awk -F'|' 'FILENAME == ARGV[1] { d[$1] = $2; next } ($1 in d) { print d[$1] "|" $2 }' "$tmp/spec" "$tmp/prev.keys" >"$tmp/prev"
elif [ -f "$OUT" ] && sed -n 's/^- machine: //p' "$OUT" | head -1 | awk -v c="$cpu" '
    { n = split($0, f, ", "); for (i = 1; i <= n; i++) if (f[i] == c) ok = 1; if (index($0, c " (") == 1) ok = 1 }
    END { exit !ok }'; then
  prev_date=$(sed -n 's/^- date: //p' "$OUT" | head -1)
  awk -F'|' '
    function trim(v) { gsub(/^ +| +$/, "", v); return v }
    /^\| benchmark / { col = 0; for (i = 2; i < NF; i++) if (!col && trim($i) ~ /^ratio/) col = i; next }
    col && /^\| / && trim($col) ~ /^[0-9.]+x$/ { r = trim($col); sub(/x$/, "", r); print trim($2) "|" r }
  ' "$OUT" >"$tmp/prev"
else
  : >"$tmp/prev"
fi
prev_label=${prev_date:+"$cpu, $prev_date"}
prev_label=${prev_label:-"none for $cpu"}

table=$(awk -F'|' '
  function num(v) { return v ~ /^[-+]?[0-9]*\.?[0-9]+([eE][-+]?[0-9]+)?$/ }
  function fmt(v, u) {
    if (!num(v)) return "n/a"
    v += 0
    return sprintf(v >= 100 ? "%.0f" : v >= 10 ? "%.1f" : v >= 1 ? "%.2f" : "%.3f", v) u
  }
  FILENAME == ARGV[1] { split($0, f, " "); k = f[1]; g[k] = f[2]; p[k] = f[3]; r[k] = f[4]; lo[k] = f[5]; hi[k] = f[6]; n[k] = f[7]; unit[k] = f[8]; next }
  FILENAME == ARGV[2] { prev[$1] = $2; next }
  {
    k = $1; ok = num(r[k])
    ratio = ok ? r[k] + 0 : 0
    tgt = $4 == "-" ? "-" : ">= " $4 "x"
    res = !ok ? "n/a" : $4 == "-" ? "info" : ratio >= $4 ? "PASS" : "MISS"
    spread = !ok ? "-" : n[k] == 1 ? "1 pair" : sprintf("%s-%s (%d pairs)", fmt(lo[k], "x"), fmt(hi[k], "x"), n[k])
    # the previous ratio and the change; a drop of more than 15% is flagged
    was = "-"
    if (($2 in prev) && prev[$2] > 0) {
      ch = ok ? (ratio / prev[$2] - 1) * 100 : 0
      was = sprintf("%s (%s)", fmt(prev[$2], "x"), !ok ? "n/a" : ch < -15 ? sprintf("**DROP %+.0f%%**", ch) : sprintf("%+.0f%%", ch))
    }
    printf "| %s | %s | %s | %s | %s | %s | %s | %s |\n", $2, fmt(g[k], " " unit[k]), fmt(p[k], " " unit[k]),
           fmt(ok ? ratio : "", "x"), spread, was, tgt, res
  }' "$tmp/stats" "$tmp/prev" "$tmp/spec")

header="| benchmark | gshell | pytorch | ratio (>1: gshell better) | spread | previous ratio ($prev_label) | target | result |
| --- | ---: | ---: | ---: | ---: | ---: | --- | --- |"

# Notes: the steps' own `#` lines, and the memory-bound rows as a share of the
# better of the two sides' median copy bandwidths (the machine's bandwidth).
notes=$( { grep -h '^#' "$tmp/gshell" "$tmp/pytorch" | sort -u | sed 's/^# */- /'
  awk 'FILENAME == ARGV[1] { gs[$1] = $2 } FILENAME == ARGV[2] { py[$1] = $2 }
    END {
      bw = gs["copy_16M"] + 0 > py["copy_16M"] + 0 ? gs["copy_16M"] : py["copy_16M"]
      if (bw + 0 <= 0) exit
      printf "- memory bandwidth (copy, the better median): %.1f GB/s; as a share of it:", bw
      n = split("add_16M exp_16M sum_16M max_16M sum_rows_16M sum_cols_16M", k, " ")
      for (i = 1; i <= n; i++)
        printf " %s gshell %.0f%% / pytorch %.0f%%%s", k[i], 100 * gs[k[i]] / bw, 100 * py[k[i]] / bw, i < n ? "," : "\n"
    }' "$tmp/gshell.med" "$tmp/pytorch.med"; } )

load1=$(cut -d' ' -f1-3 /proc/loadavg)
torchv=$([ -n "${BENCH_REPLAY:-}" ] && echo "(replayed)" || $PY -c 'import torch; print(torch.__version__)')
gs_isa=$([ -n "${BENCH_REPLAY:-}" ] && echo "(replayed)" || bench_gshell_isa "$BUILD")

printf '\n%s\n%s\n\n%s\n' "$header" "$table" "$notes"

mkdir -p "$(dirname "$OUT")"
{
  echo "# gshell vs PyTorch, CPU"
  echo
  echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "- machine: $machine"
  echo "- load average before / after: $load0 / $load1 (other work running at the same time skews the numbers)"
  echo "- gshell: $(git rev-parse --short HEAD 2>/dev/null || echo '?') ($BUILD), CPU kernels: $gs_isa; PyTorch $torchv with torch.set_num_threads(2)"
  echo "- ratio: how many times better gshell is (time: pytorch/gshell; rate: gshell/pytorch)"
  echo "- ratio statistic: the median of per-pair ratios, a pair being one round of each side taken back to back (the rounds alternate: gshell, pytorch, pytorch, gshell, ...); spread: the smallest and largest pair; gshell and pytorch: each side's median over the rounds"
  echo "- each round's value: median of timed repetitions after warm-up; $ROUNDS rounds per side (memory-bound rows: $((ROUNDS + MEM_ROUNDS)), $MEM_ROUNDS of them short alternating rounds of those rows only); GB/s counts bytes read + written"
  echo "- previous ratio: the last run recorded on the same CPU model ($prev_label); a ratio more than 15% below it is flagged DROP; every run's ratios are in bench/results/cpu-history.tsv"
  echo
  echo "$header"
  echo "$table"
  [ -n "$notes" ] && { echo; echo "$notes"; }
} >"$OUT"
echo "bench: wrote $OUT" >&2
[ -n "$prev_date" ] || echo "bench: no earlier result on this CPU ($cpu): nothing to compare against, no drop can be flagged" >&2

# Every run's ratios, one line per benchmark, for the longer view; the CPU
# column is what the next run finds its previous ratios by. (Lines from
# before issue 32 have neither the CPU nor the spread: their header gains
# the columns, the lines stay as they were.)
hist_head='date\tcommit\tbenchmark\tgshell\tpytorch\tratio\tload_before\tcpu\tratio_min\tratio_max\n'
if [ ! -f "$HIST" ]; then
  printf "$hist_head" >"$HIST"
elif ! head -1 "$HIST" | grep -q '	cpu	'; then
  sed -i "1s/.*/$(printf "$hist_head" | sed 's/\\n$//')/" "$HIST"
fi
commit=$(git rev-parse --short HEAD 2>/dev/null || echo '?')
awk -v d="$(date -u '+%Y-%m-%d %H:%M')" -v c="$commit" -v l="${load0%% *}" -v cpu="$cpu" '
  function num(v) { return v ~ /^[-+]?[0-9]*\.?[0-9]+([eE][-+]?[0-9]+)?$/ }
  {
    printf "%s\t%s\t%s\t%s\t%s\t%.3f\t%s\t%s\t%s\t%s\n", d, c, $1, $2, $3, num($4) ? $4 : 0, l, cpu,
           num($5) ? sprintf("%.3f", $5) : "-", num($6) ? sprintf("%.3f", $6) : "-"
  }' "$tmp/stats" >>"$HIST"

# The drops, said once more where they cannot be missed.
drops=$(printf '%s\n' "$table" | grep 'DROP' | awk -F'|' '{ gsub(/^ +| +$/, "", $2); gsub(/^ +| +$/, "", $7); print "bench: ratio DROP since the last run on this CPU: " $2 ": " $7 }')
if [ -n "$drops" ]; then
  printf '%s\n' "$drops" >&2
  echo "bench: (on a busy machine, run again before concluding; BENCH_FAIL_ON_DROP=1 makes a drop fail the run)" >&2
  [ "${BENCH_FAIL_ON_DROP:-0}" = 1 ] && exit 3
fi
exit 0
