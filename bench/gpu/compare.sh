#!/bin/sh
# bench/gpu/compare.sh GSHELL [cuda:N]: runs bench/gpu/ops.lua with GSHELL and
# bench/gpu/ops.py with python3 on the same GPU, one after the other, and
# prints a markdown table of both and their ratio (gshell / PyTorch; for
# "us" lower is better, so the ratio is PyTorch / gshell there).
set -e
gshell=${1:?usage: compare.sh path/to/gshell [cuda:N]}
dev=${2:-cuda:0}
here=$(dirname "$0")
g=$(mktemp); p=$(mktemp)
"$gshell" "$here/ops.lua" "$dev" > "$g"
python3 "$here/ops.py" "$dev" > "$p"
echo "| benchmark | gshell | PyTorch | unit | ratio (1 = parity, higher is better) |"
echo "| --- | --- | --- | --- | --- |"
awk 'NR == FNR { v[$1] = $2; next }
  ($1 in v) { r = ($3 == "us") ? v[$1] / $2 : $2 / v[$1];
    printf "| %s | %s | %s | %s | %.2f |\n", $1, $2, v[$1], $3, r }' "$p" "$g"
rm -f "$g" "$p"
