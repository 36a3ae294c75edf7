#!/bin/sh
# Data loading: gshell's torchvision.datasets.FashionMNIST + ToTensor +
# DataLoader vs torchvision's (issue 21: at least 10x faster). Loads the
# training set and iterates one epoch of shuffled batches of 256, no
# model; PyTorch's best of num_workers 0 and 2 counts. Usage:
#   sh bench/data/run.sh [BUILD_DIR]       (`make bench` runs it)
# Writes bench/results/data-latest.md. Rounds: 5 for gshell (it takes a
# fraction of a second), 2 for PyTorch per num_workers value; the best
# round counts (on a busy machine the quietest one).
set -eu
cd "$(dirname "$0")/../.."
BUILD=${1:-build}
PY=/usr/bin/python3
SRC=/usr/share/datasets/fashion-mnist
OUT=bench/results/data-latest.md
export LUA_CPATH="$BUILD/?.so;;"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

[ -f "$SRC/train-images-idx3-ubyte.gz" ] || { echo "bench/data: $SRC is missing (apt-get install dataset-fashion-mnist)" >&2; exit 1; }
$PY -c 'import torchvision' 2>/dev/null || { echo "bench/data: $PY cannot import torchvision (apt-get install python3-torchvision)" >&2; exit 1; }
load0=$(cut -d' ' -f1-3 /proc/loadavg)

# torchvision reads the decompressed files from ROOT/FashionMNIST/raw
# (its download step would put them there); not timed.
mkdir -p "$tmp/FashionMNIST/raw"
for f in train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte t10k-labels-idx1-ubyte; do
  gzip -dc "$SRC/$f.gz" >"$tmp/FashionMNIST/raw/$f"
done

echo "bench/data: gshell" >&2
lua5.4 bench/data/fashion.lua 5 >"$tmp/gshell"
# A fresh process's first d2l.load_data_fashion_mnist(256), the cache
# written by the rounds above: five processes, the median counts.
echo "bench/data: gshell, first load_data_fashion_mnist in fresh processes" >&2
for _ in 1 2 3 4 5; do lua5.4 bench/data/first_load.lua; done >"$tmp/first"
first_med=$(awk '{ print $2 }' "$tmp/first" | sort -g | sed -n 3p)
first_max=$(awk '{ print $2 }' "$tmp/first" | sort -g | tail -1)
echo "bench/data: pytorch (num_workers 0 and 2)" >&2
$PY bench/data/fashion.py "$tmp" 2 >"$tmp/pytorch"

val() { awk -v k="$2" '$1 == k { print $2 }' "$1"; }
g_total=$(val "$tmp/gshell" fmnist_total); p_total=$(val "$tmp/pytorch" fmnist_total)
ratio=$(awk -v g="$g_total" -v p="$p_total" 'BEGIN { printf "%.1f", p / g }')
result=$(awk -v r="$ratio" 'BEGIN { print (r + 0 >= 10 ? "PASS" : "MISS") }')
fmt() { awk -v v="$1" 'BEGIN { printf "%.3f s", v }'; }
ms() { awk -v v="$1" 'BEGIN { printf "%.1f ms", v * 1000 }'; }
table="| benchmark | gshell | pytorch | ratio (>1: gshell faster) | target | result |
| --- | ---: | ---: | ---: | --- | --- |
| load the training set + one epoch, batch 256, ToTensor, shuffled | $(fmt "$g_total") | $(fmt "$p_total") | ${ratio}x | >= 10x | $result |
| of which loading | $(fmt "$(val "$tmp/gshell" fmnist_load)") | $(fmt "$(val "$tmp/pytorch" fmnist_load)") | | | |
| of which the epoch | $(fmt "$(val "$tmp/gshell" fmnist_epoch)") | $(fmt "$(val "$tmp/pytorch" fmnist_epoch)") | | | |
| \`d2l.load_data_fashion_mnist(256)\`, a fresh process's first call (cache on disk; median of 5, slowest $(ms "$first_max")) | $(ms "$first_med") | | | < 100 ms | $(awk -v v="$first_med" 'BEGIN { print (v + 0 < 0.1 ? "PASS" : "MISS") }') |"
notes="- PyTorch: torchvision $($PY -c 'import torchvision; print(torchvision.__version__)'), total with num_workers=0: $(fmt "$(val "$tmp/pytorch" fmnist_total_w0)"), with num_workers=2: $(fmt "$(val "$tmp/pytorch" fmnist_total_w2)") (the better counts); it reads decompressed files (prepared beforehand, not timed), gshell Debian's gzipped ones through its decompressed cache
- gshell loads through its decompressed cache (the first load on a machine writes it, ~/.cache/gshell); loading without it (decompressing the gzipped files each time) takes $(fmt "$(val "$tmp/gshell" fmnist_load_nocache)"), which would make the first row $(awk -v e="$(val "$tmp/gshell" fmnist_epoch)" -v l="$(val "$tmp/gshell" fmnist_load_nocache)" -v p="$p_total" 'BEGIN { printf "%.3f s, %.1fx", e + l, p / (e + l) }')
- gshell, the book's Resize(96) + ToTensor pipeline (ResNet's input), one epoch (one round): $(fmt "$(val "$tmp/gshell" fmnist_epoch_resize96)")"
load1=$(cut -d' ' -f1-3 /proc/loadavg)
printf '\n%s\n\n%s\n' "$table" "$notes"
mkdir -p "$(dirname "$OUT")"
{
  echo "# Data loading: gshell vs torchvision, Fashion-MNIST"
  echo
  echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "- machine: $(. bench/machine.sh; bench_machine)"
  echo "- load average before / after: $load0 / $load1 (other work running at the same time skews the numbers)"
  echo "- gshell: $(git rev-parse --short HEAD 2>/dev/null || echo '?') ($BUILD); best of 5 rounds (gshell) and 2 rounds per num_workers value (PyTorch), wall clock"
  echo
  echo "$table"
  echo
  echo "$notes"
} >"$OUT"
echo "bench/data: wrote $OUT" >&2
