#!/bin/sh
# A transformer encoder block's training step against PyTorch on this
# machine (issue 31): the book's d2l.TransformerEncoderBlock (batch 32, 32
# steps, 64 hidden, 4 heads, FFN 128, dropout 0.1) as sequences/s of full
# steps (forward, MSE, backward, SGD) on the cpu, PyTorch's better of 1
# and 2 threads. Usage: sh bench/train/transformer.sh [BUILD_DIR]
# (`make bench` runs it). Writes bench/results/transformer-latest.md.
set -eu
cd "$(dirname "$0")/../.."
BUILD=${1:-build}
PY=/usr/bin/python3
OUT=bench/results/transformer-latest.md
export LUA_CPATH="$BUILD/?.so;;"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
load0=$(cut -d' ' -f1-3 /proc/loadavg)

# the sides take turns and each side's best run counts, as bench/train/run.sh
rounds=${BENCH_TRAIN_ROUNDS:-3}
: >"$tmp/gshell"
: >"$tmp/pytorch"
for r in $(seq "$rounds"); do
  echo "bench/train/transformer: gshell, round $r of $rounds" >&2
  lua5.4 bench/train/transformer_step.lua >>"$tmp/gshell"
  GSHELL_NUM_THREADS=1 lua5.4 bench/train/transformer_step.lua >>"$tmp/gshell"
  echo "bench/train/transformer: pytorch, round $r of $rounds" >&2
  $PY bench/train/transformer_step.py >>"$tmp/pytorch"
done

val() { awk -v k="$2" '$1 == k && (m == "" || $2 + 0 > m + 0) { m = $2 } END { print m }' "$1"; }
g=$(val "$tmp/gshell" transformer_block_cpu); p=$(val "$tmp/pytorch" transformer_block_cpu)
g1=$(val "$tmp/gshell" transformer_block_cpu_1t)
table="| benchmark (sequences/s) | gshell | pytorch | ratio | target | result |
| --- | ---: | ---: | ---: | --- | --- |
$(awk -v g="$g" -v p="$p" 'BEGIN { r = g / p; printf "| d2l.TransformerEncoderBlock train step, batch 32 x 32 steps, d 64, 4 heads, cpu | %.0f | %.0f | %.2fx | >= 1.0x | %s |\n", g, p, r, (r >= 1.0 ? "PASS" : "MISS") }')
$(awk -v g="$g1" -v p="$p" 'BEGIN { r = g / p; printf "| the same, gshell on 1 thread (GSHELL_NUM_THREADS=1) | %.0f | %.0f | %.2fx | info | - |\n", g, p, r }')"
load1=$(cut -d' ' -f1-3 /proc/loadavg)
printf '\n%s\n' "$table"
{
  echo "# Transformer block training step: gshell vs PyTorch"
  echo
  echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "- machine: $(nproc) cores, $(lscpu | grep 'Model name' | sed 's/.*: *//')"
  echo "- load average before / after: $load0 / $load1"
  echo "- the second row runs gshell's pool on one thread: on a loaded machine a pool of 2 waits for a core at every parallel op"
  echo "- gshell: $(git rev-parse --short HEAD 2>/dev/null || echo '?') ($BUILD); PyTorch $($PY -c 'import torch; print(torch.__version__)'), its better of 1 and 2 threads; best of 3 timings of 20 steps per run, $rounds alternating runs per side, wall clock"
  echo
  echo "$table"
} >"$OUT"
echo "bench/train/transformer: wrote $OUT" >&2
