#!/bin/sh
# Asynchronous simulated GPUs: what queuing costs and what concurrency
# buys. Usage: sh bench/async/run.sh [BUILD_DIR] (`make bench` runs it).
# Writes bench/results/async-latest.md. See bench/README.md.
#   BENCH_ROUNDS=N   processes per benchmark group (default 3); each
#                    process measures its comparison alternately, and the
#                    table shows the median over the rounds
set -u
cd "$(dirname "$0")/../.."
BUILD=${1:-build}
ROUNDS=${BENCH_ROUNDS:-3}
OUT=bench/results/async-latest.md
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
[ -x "$BUILD/gshell" ] || { echo "bench: $BUILD/gshell is missing: run make first" >&2; exit 1; }

load0=$(cut -d' ' -f1-3 /proc/loadavg)
awk -v l="$load0" 'BEGIN { exit !(l + 0 > 1) }' &&
  echo "bench: warning: load average $load0 before starting: other work will skew the numbers" >&2

# How many cores the machine gives this benchmark right now: two copies of
# a fixed busy loop run at once, against one alone (2: both cores free, 1:
# the two copies take turns, as two simulated GPUs then must). Speed-ups
# from running two devices at once are bounded by it.
now() { date +%s.%N; }
busy() { lua5.4 -e 'local x = 0; for i = 1, 4e7 do x = x + i end'; }
capacity() {
  t0=$(now); busy; t1=$(now); busy & busy; wait; t2=$(now)
  awk -v a="$t0" -v b="$t1" -v c="$t2" 'BEGIN { printf "%.2f", 2 * (b - a) / (c - b) }'
}

# this machine's own time: no GPU model (issue 29; the tiny group measures
# what a model adds by switching one on)
export GSHELL_GPU_MODEL=host

# group and the number of simulated GPUs it runs on
groups="tiny:2 ex4:2 dp:2 mlp:1"
r=1
while [ "$r" -le "$ROUNDS" ]; do
  for g in $groups; do
    name=${g%%:*} ngpu=${g#*:}
    echo "bench: async $name (round $r/$ROUNDS, load $(cut -d' ' -f1 /proc/loadavg))" >&2
    echo "load_$name $(cut -d' ' -f1 /proc/loadavg) -" >>"$tmp/all"
    echo "cores_free $(capacity) cores" >>"$tmp/all"
    "$BUILD/gshell" --sim-gpus "$ngpu" bench/async/ops.lua "$name" >>"$tmp/all" ||
      echo "bench: async $name failed" >&2
    if [ -n "${BENCH_BASELINE:-}" ]; then
      "$BENCH_BASELINE/gshell" --sim-gpus "$ngpu" bench/async/ops.lua "$name" | sed 's/^/base_/' >>"$tmp/all" ||
        echo "bench: async $name failed on the baseline build" >&2
    fi
  done
  r=$((r + 1))
done

# median over the rounds of every value
awk '
  { n[$1]++; v[$1, n[$1]] = $2; unit[$1] = $3; if (!($1 in order)) { order[$1] = ++k; key[k] = $1 } }
  END {
    for (i = 1; i <= k; i++) {
      name = key[i]; m = n[name]
      for (a = 1; a <= m; a++) s[a] = v[name, a] + 0
      for (a = 1; a <= m; a++) for (b = a + 1; b <= m; b++) if (s[b] < s[a]) { t = s[a]; s[a] = s[b]; s[b] = t }
      med = m % 2 ? s[(m + 1) / 2] : (s[m / 2] + s[m / 2 + 1]) / 2
      printf "%s %s %s", name, med, unit[name]
      for (a = 1; a <= m; a++) printf " %s", v[name, a]
      printf "\n"
    }
  }' "$tmp/all" >"$tmp/med"
val() { awk -v k="$1" '$1 == k { print $2 }' "$tmp/med"; }
runs() { awk -v k="$1" '$1 == k { for (i = 4; i <= NF; i++) printf "%s%s", $i, i < NF ? ", " : ""; print "" }' "$tmp/med"; }
row() { # key, what, unit, goal, pass test (an awk expression on v; "-": no goal)
  v=$(val "$1")
  if [ "$5" = "-" ]; then res=info
  else res=$(awk -v v="$v" "BEGIN { if (v == \"\") print \"n/a\"; else print ($5) ? \"PASS\" : \"MISS\" }")
  fi
  printf '| %s | %s %s | %s | %s | %s |\n' "$2" "$(printf '%.3g' "${v:-0}")" "$3" "$4" "$res" "$(runs "$1")"
}
table=$( {
  echo "| benchmark | median | goal | result | each round |"
  echo "| --- | ---: | --- | --- | --- |"
  row cores_free "cores free for this benchmark (two busy loops at once vs one)" "" "2 on a quiet machine" "-"
  row tiny_queue_sim "queue a 4-element add on a simulated GPU (host time)" us/op "<= 2 us" "v <= 2"
  row tiny_done_sim "the same adds until done (device throughput)" us/op "-" "-"
  row tiny_cpu "the same add on the cpu device" us/op "no regression" "-"
  row tiny_queue_host "queue the add on cuda:0 with no model (host), this machine's real time" us/op "-" "-"
  row tiny_queue_model "the same bursts with cuda:0 modelling a V100, this machine's real time" us/op "-" "-"
  row tiny_model_cost "what the time model adds per queued op (median of each pair's difference)" us/op "<= 0.2 us" "v <= 0.2"
  row ex4_one_device "exercise 4: two ${BENCH_EX4_N:-1024}x${BENCH_EX4_N:-1024} products, both on cuda:0" ms "-" "-"
  row ex4_two_devices "exercise 4: one on cuda:0, one on cuda:1" ms "-" "-"
  row ex4_speedup "exercise 4 speed-up, two devices vs one" x ">= 1.7x" "v >= 1.7"
  row dp_one_device "3x1024 MLP forward+backward, batch 1024, on cuda:0" ms "-" "-"
  row dp_two_devices "the same through nn.DataParallel on cuda:0 and cuda:1" ms "-" "-"
  row dp_speedup "DataParallel speed-up" x ">= 1.3x" "v >= 1.3"
  row mlp_cpu "MLP 784-256-10 train step, batch 256, cpu device" steps/s "-" "-"
  row mlp_sim "the same on one simulated GPU (--sim-gpus 1)" steps/s "-" "-"
  row mlp_sim_vs_cpu "simulated GPU vs cpu (>1: the GPU is faster)" x "-" "-"
  if [ -n "${BENCH_BASELINE:-}" ]; then
    row base_tiny_queue_sim "baseline build: the add on a simulated GPU" us/op "-" "-"
    row base_tiny_cpu "baseline build: the add on the cpu device" us/op "-" "-"
    row base_ex4_speedup "baseline build: exercise 4 speed-up" x "-" "-"
    row base_dp_speedup "baseline build: DataParallel speed-up" x "-" "-"
    row base_mlp_sim_vs_cpu "baseline build: simulated GPU vs cpu, MLP step" x "-" "-"
  fi
} )
loads=$(awk '$1 ~ /^load_/ { printf "%s%s %s", sep, substr($1, 6), $2; sep = ", " } END { print "" }' "$tmp/all")
load1=$(cut -d' ' -f1-3 /proc/loadavg)
machine=$(. bench/machine.sh; bench_machine)
printf '\n%s\n' "$table"
mkdir -p "$(dirname "$OUT")"
{
  echo "# gshell: asynchronous simulated GPUs"
  echo
  echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "- machine: $machine"
  echo "- gshell: $(git rev-parse --short HEAD 2>/dev/null || echo '?') ($BUILD)${BENCH_BASELINE:+; baseline rows: the build in $BENCH_BASELINE, run in the same rounds}"
  echo "- load average before / after: $load0 / $load1; 1-minute load at the start of each process: $loads"
  echo "- each process measures the two sides of a comparison alternately (ABBA) and prints medians;"
  echo "  the table gives the median over $ROUNDS processes, and every process's value"
  echo
  echo "$table"
} >"$OUT"
echo "bench: wrote $OUT" >&2
