#!/bin/sh
# Training steps against PyTorch on this machine (issues 20 and 21): D2L's
# LeNet (ReLU, max pooling, batch 256) and ResNet-18 (28x28, batch 64) as
# examples/s of full steps on the cpu, PyTorch's better of 1 and 2
# threads; LeNet through nn.DataParallel on 2 simulated GPUs against 1;
# one train_ch6 epoch of the book's sigmoid LeNet on Fashion-MNIST (data
# loading included); a character LSTM's step (examples/char_rnn.lua's
# size) as tokens/s. Usage: sh bench/train/run.sh [BUILD_DIR]
# (`make bench` runs it). Writes bench/results/train-latest.md.
set -eu
cd "$(dirname "$0")/../.."
. bench/machine.sh
BUILD=${1:-build}
PY=/usr/bin/python3
SRC=/usr/share/datasets/fashion-mnist
OUT=bench/results/train-latest.md
export LUA_CPATH="$BUILD/?.so;;"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
load0=$(cut -d' ' -f1-3 /proc/loadavg)

mkdir -p "$tmp/FashionMNIST/raw"
for f in train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte t10k-labels-idx1-ubyte; do
  gzip -dc "$SRC/$f.gz" >"$tmp/FashionMNIST/raw/$f"
done

# The two sides take turns, BENCH_TRAIN_ROUNDS times each, and each round's
# pair of runs gives a ratio: this VM's speed drifts by a third within
# minutes, and one whole side after the other compared one's fast spell
# with the other's slow one (LeNet 1.14x to 1.36x in one hour, the same trees).
rounds=${BENCH_TRAIN_ROUNDS:-3}
: >"$tmp/gshell"
: >"$tmp/pytorch"
for r in $(seq "$rounds"); do
  echo "bench/train: gshell, round $r of $rounds" >&2
  GSHELL_SIM_GPUS=2 GSHELL_GPU_MODEL=host lua5.4 bench/train/steps.lua >>"$tmp/gshell"
  echo "bench/train: pytorch, round $r of $rounds" >&2
  $PY bench/train/steps.py all "$tmp" >>"$tmp/pytorch"
done

# Per key: each side's median round, and the ratio as the median of
# per-pair ratios (round r of gshell with round r of PyTorch: they ran back
# to back) with the smallest and largest pair (issue 32).
pairs() { # gshell-file key pytorch-file key: "gshell pytorch ratio min max n"
  awk -v ka="$2" -v kb="$4" '
    function med(a, n,   i, j, t) {
      for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
      return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
    }
    FNR == 1 { f++ }   # (both files may be the same one: gshell against itself)
    f == 1 && $1 == ka { x[++nx] = $2 + 0 }
    f == 2 && $1 == kb { y[++ny] = $2 + 0 }
    END {
      n = nx < ny ? nx : ny
      for (i = 1; i <= n; i++) if (x[i] > 0 && y[i] > 0) {
        r[++nr] = x[i] / y[i]; lo = lo == "" || r[nr] < lo ? r[nr] : lo; hi = hi == "" || r[nr] > hi ? r[nr] : hi
      }
      if (!nr) { print "0 0 0 0 0 0"; exit }
      printf "%s %s %s %s %s %d\n", med(x, nx), med(y, ny), med(r, nr), lo, hi, nr
    }' "$1" "$3"
}
fmtrow() { # label target "gshell pytorch ratio min max n"
  echo "$3" | awk -v l="$1" -v t="$2" '{
    printf "| %s | %.0f | %.0f | %.2fx | %.2fx-%.2fx (%d pairs) | >= %sx | %s |\n", l, $1, $2, $3, $4, $5, $6, t, ($3 >= t ? "PASS" : "MISS") }'
}
row() { fmtrow "$2" "$3" "$(pairs "$tmp/gshell" "$1" "$tmp/pytorch" "$1")"; }
dp=$(pairs "$tmp/gshell" lenet_dp2 "$tmp/gshell" lenet_sim1)
table="| benchmark (examples/s) | gshell | pytorch | ratio | spread | target | result |
| --- | ---: | ---: | ---: | ---: | --- | --- |
$(row lenet_cpu "LeNet (ReLU, max pool) train step, batch 256, cpu" 1.2)
$(row resnet18_cpu "ResNet-18 (28x28) train step, batch 64, cpu" 1.0)
$(row lstm_cpu "char LSTM train step (examples/char_rnn.lua: 28 one-hot, 256 hidden, batch 32 x 35 steps), cpu, tokens/s" 1.0)
$(row lenet_epoch_cpu "train_ch6 epoch, sigmoid LeNet, Fashion-MNIST, cpu (data included)" 1.2)
$(fmtrow "$(echo "$dp" | awk '{ printf "LeNet through DataParallel on 2 simulated GPUs (%.0f) vs 1 simulated GPU (%.0f)", $1, $2 }')" 1.4 "$dp")"
load1=$(cut -d' ' -f1-3 /proc/loadavg)
printf '\n%s\n' "$table"
{
  echo "# Training steps: gshell vs PyTorch"
  echo
  echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "- machine: $(bench_machine)"
  echo "- load average before / after: $load0 / $load1"
  echo "- gshell: $(git rev-parse --short HEAD 2>/dev/null || echo '?') ($BUILD), CPU kernels: $(bench_gshell_isa "$BUILD"); PyTorch $($PY -c 'import torch; print(torch.__version__)'), its better of 1 and 2 threads; best of 2-3 timings per run, $rounds alternating runs per side, wall clock"
  echo "- ratio: the median of per-pair ratios (a gshell run and the PyTorch run after it), spread: the smallest and largest pair; gshell, pytorch: each side's median run"
  echo "- the DataParallel row compares gshell with itself (2 simulated GPUs against 1, each a share of the same 2 cores)"
  echo
  echo "$table"
} >"$OUT"
echo "bench/train: wrote $OUT" >&2
