#!/bin/sh
# bench/gpu/compare.sh GSHELL [cuda:N] [--small]: runs bench/gpu/ops.lua with
# GSHELL and bench/gpu/ops.py with python3 on the same GPU, one after the
# other, and prints a markdown table of both and their ratio (gshell /
# PyTorch; for "us" lower is better, so the ratio is PyTorch / gshell
# there). --small: gshell's side at small sizes alone, the dry run on
# simulated GPUs (tools/gpu_run.sh). Without a CUDA PyTorch the table has
# gshell's column only, and says why.
set -u
gshell=${1:?usage: compare.sh path/to/gshell [cuda:N] [--small]}
dev=${2:-cuda:0}
small=${3:-}
here=$(dirname "$0")
g=$(mktemp); p=$(mktemp)
trap 'rm -f "$g" "$p"' EXIT INT TERM
"$gshell" "$here/ops.lua" "$dev" $small > "$g" || { echo "compare.sh: gshell's side failed (exit $?)"; cat "$g"; exit 1; }
if [ -z "$small" ] && python3 "$here/ops.py" "$dev" > "$p"; then :
else
  echo "compare.sh: no PyTorch column (${small:+small sizes, }python3 ops.py: no CUDA PyTorch here or it failed)"
  : > "$p"
fi
echo "host: $(. "$here/../machine.sh"; bench_machine)"
echo
echo "| benchmark | gshell | PyTorch | unit | ratio (1 = parity, higher is better) |"
echo "| --- | --- | --- | --- | --- |"
awk 'FILENAME == ARGV[1] { v[$1] = $2; next }
  ($1 in v) { r = ($3 == "us") ? v[$1] / $2 : $2 / v[$1];
    printf "| %s | %s | %s | %s | %.2f |\n", $1, $2, v[$1], $3, r; next }
  { printf "| %s | %s | - | %s | - |\n", $1, $2, $3 }' "$p" "$g"
