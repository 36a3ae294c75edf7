#!/bin/sh
# tools/gpu_run.sh: the whole GPU proof in one device call (issue 24).
# Runs, in this order, each part under its own time cap and all of them
# within GPU_RUN_BUDGET seconds (default 350, under the 6 minutes planned
# in bench/results/GPU-RUN.md), writing each part's output to $OUT as it
# goes, so that a call cut short still brings back what finished:
#
#   env.txt        nvidia-smi, the libraries gshell loads (driver, cuBLAS,
#                  NCCL and its version), PyTorch's view of the GPU,
#                  compute-sanitizer's version, and a CPU-only session that
#                  must create no CUDA context
#   gpu_check.txt  tools/gpu_check.lua: every op on the GPU against the CPU
#   memcheck.txt   compute-sanitizer memcheck on a subset of gpu_check
#   gpu_big.txt    tools/gpu_big.lua (> 2^31 elements) when the GPU has
#                  30 GiB free and the host 12 GiB, else why not
#   bench.md       bench/gpu: gshell against PyTorch on the same GPU
#   calib.txt      tools/gpu_calib.lua: the time model's microbenchmarks on
#                  this GPU (issue 29), then tools/fit_gpu_model.lua's fit
#                  of the model's factors against the model of this GPU
#   racecheck.txt  compute-sanitizer racecheck on the reductions, if time is left
#   summary.txt    one line per part: exit status, seconds, cap (written
#                  after each part)
#
# Eight files: the device tool brings back at most eight.
#
# On the GPU machine (carry build/gpu-bundle):
#   build/gpu-bundle/gpu_run.sh              (OUT is set there)
# Dry run here, on simulated GPUs (the CPU kernels), same parts and files:
#   GSHELL_SIM_GPUS=2 OUT=/tmp/gpu-run sh tools/gpu_run.sh
# GSHELL=path picks the gshell binary (default: next to this script, as in
# the bundle, else build/gshell). GPU_RUN_PARTS="gpu_check bench" runs only
# the parts named (a second call after a fix), GPU_RUN_BUDGET=N changes the
# budget.
set -u
here=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-./gpu-run-out}
mkdir -p "$OUT" || exit 1
OUT=$(cd "$OUT" && pwd)
BUDGET=${GPU_RUN_BUDGET:-350}
DEV=${GPU_RUN_DEVICE:-cuda:0}

if [ -n "${GSHELL:-}" ]; then :
elif [ -x "$here/gshell" ]; then GSHELL=$here/gshell
else GSHELL=$here/../build/gshell; fi
# the scripts: beside this one in the bundle, in tools/ and bench/gpu/ in the repo
CHECK=$here/gpu_check.lua
BIG=$here/gpu_big.lua
CALIB=$here/gpu_calib.lua
FIT=$here/fit_gpu_model.lua
if [ -d "$here/bench" ]; then BENCH=$here/bench; else BENCH=$here/../bench/gpu; fi
SIM=${GSHELL_SIM_GPUS:-}
[ "$SIM" = 0 ] && SIM=
have() { command -v "$1" >/dev/null 2>&1; }
# line-buffered output, so a part killed at its cap leaves every line it printed
export PYTHONUNBUFFERED=1
LB=
have stdbuf && LB="stdbuf -oL -eL"

# The checks most likely to index out of bounds or race: strided and
# indexed copies, reductions (split kernels), softmax, gathers, products of
# packed operands, the device-side error flags, and the convolution and
# pooling kernels (matched by name).
MEMCHECK_ONLY="transfer of a non-contiguous view,strided copies,copy_ into a strided,indexed assignment,unary NaN,operators + -,reductions float32,reductions with long rows,whole-tensor sum,softmax/log_softmax,softmax of long rows,index_select every dim,index_select out of range,nll_loss,mm float32,matmul of operands,conv,pool,batch_norm,interpolate"
RACECHECK_ONLY="reductions float32,reductions with long rows,whole-tensor sum,softmax of long rows"

start=$(date +%s)
failed=0
: >"$OUT/summary.txt"
say() { echo "gpu_run: $*" | tee -a "$OUT/summary.txt"; }
say "start $(date -u '+%Y-%m-%d %H:%M:%S UTC'), budget ${BUDGET}s, gshell $GSHELL${SIM:+, simulated GPUs: $SIM (dry run)}"

# part NAME FILE CAP COMMAND: runs COMMAND (a shell command line) with its
# output in $OUT/FILE, killed after CAP seconds or when the budget is spent.
part() {
  name=$1 file=$2 cap=$3 cmd=$4
  case " ${GPU_RUN_PARTS:-$name} " in *" $name "*) ;; *) say "$name: not asked for (GPU_RUN_PARTS)"; return ;; esac
  left=$((BUDGET - ($(date +%s) - start)))
  [ "$cap" -gt "$left" ] && cap=$left
  if [ "$cap" -lt 5 ]; then
    echo "skipped: the budget (${BUDGET}s) is spent" >>"$OUT/$file"
    say "$name: skipped, no time left"
    return
  fi
  t0=$(date +%s)
  # the command itself when it is one line (the environment's is a script)
  case $cmd in *"
"*) echo "# $name (cap ${cap}s)" ;; *) echo "# $name (cap ${cap}s): $cmd" ;; esac >>"$OUT/$file"
  timeout -k 5 "$cap" sh -c "$cmd" >>"$OUT/$file" 2>&1
  rc=$?
  dt=$(($(date +%s) - t0))
  case $rc in
    0) what=ok ;;
    124|137) what="TIMED OUT at its cap" ;;
    *) what="FAILED" ;;
  esac
  [ "$rc" -ne 0 ] && failed=$((failed + 1))
  say "$name: $what (exit $rc) in ${dt}s, cap ${cap}s"
}

# ---- 1. the environment (and a CPU-only session: no CUDA context)
env_cmd='
echo "== machine"; uname -a; nproc; free -g 2>/dev/null | head -2
echo "== nvidia-smi"
if command -v nvidia-smi >/dev/null; then
  nvidia-smi
  nvidia-smi --query-gpu=name,driver_version,memory.total,memory.free --format=csv
else echo "nvidia-smi: not installed here"; fi
echo "== gshell: devices, libraries, NCCL"
$LB "$GSHELL" -e "
print(\"cuda devices\", torch.cuda.device_count(), \"unavailable reason\", tostring(torch.cuda.unavailable_reason()))
if torch.cuda.device_count() > 0 then
  local p = torch.cuda.get_device_properties(0)
  print(\"device 0\", p.name, p.total_memory, p.simulated and \"(simulated)\" or \"\")
  local x = torch.ones(4, 4, {device = \"cuda:0\"}):mm(torch.ones(4, 4, {device = \"cuda:0\"}))
  print(\"a first product\", x:sum():item())
end
print(\"nccl\", pcall(torch.cuda.nccl.version))
for _, l in ipairs(torch.cuda.libraries()) do print(\"loaded\", l.name, l.path) end"
echo "== PyTorch"
python3 -c "import torch; print(\"torch\", torch.__version__, \"cuda\", torch.version.cuda, \"available\", torch.cuda.is_available(), torch.cuda.get_device_name(0) if torch.cuda.is_available() else \"\")" 2>&1 | tail -3
echo "== compute-sanitizer"
if command -v compute-sanitizer >/dev/null; then compute-sanitizer --version | head -3; else echo "compute-sanitizer: not installed here"; fi
echo "== libraries on the loader path"
ldconfig -p 2>/dev/null | grep -E "libcuda\.so|libcublas|libnccl" | head -8
echo "== a CPU-only session (dozens of full collections) must create no CUDA context"
$LB "$GSHELL" -e "
for _ = 1, 200 do local _ = torch.empty(4 * 2^20) end
print(\"full collections\", torch._gc_pacing().full_collections)
if os.execute(\"command -v nvidia-smi >/dev/null\") then
  os.execute(\"nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv\")
else print(\"(no nvidia-smi: nothing to list)\") end"
'
export GSHELL LB
part env env.txt 40 "$env_cmd"

# ---- 2. every op on the GPU against the CPU
# (GPU_RUN_CHECK_ONLY=WORDS: a subset, for the spec's quick dry run)
part gpu_check gpu_check.txt 90 "$LB \"$GSHELL\" \"$CHECK\" $DEV -v${GPU_RUN_CHECK_ONLY:+ --only='$GPU_RUN_CHECK_ONLY'}"

# ---- 3. compute-sanitizer memcheck on a subset
if [ -n "$SIM" ]; then
  part memcheck memcheck.txt 70 "echo 'simulated GPUs: the subset runs without compute-sanitizer (no CUDA kernels here)'
    $LB \"$GSHELL\" \"$CHECK\" $DEV --no-timing -v --only='$MEMCHECK_ONLY'"
elif have compute-sanitizer; then
  part memcheck memcheck.txt 70 "compute-sanitizer --tool memcheck --leak-check full --error-exitcode 3 \
    \"$GSHELL\" \"$CHECK\" $DEV --no-timing -v --only='$MEMCHECK_ONLY'"
else
  echo "compute-sanitizer is not installed here" >"$OUT/memcheck.txt"; say "memcheck: skipped, no compute-sanitizer"
fi

# ---- 4. tensors past 2^31 elements, when the memory is there
if [ -n "$SIM" ]; then
  part gpu_big gpu_big.txt 80 "$LB \"$GSHELL\" \"$BIG\" $DEV --small"
else
  gpu_free=$(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits -i "${DEV#cuda:}" 2>/dev/null | head -1)
  host_free=$(awk '/MemAvailable/ { print int($2 / 1048576) }' /proc/meminfo)
  if [ "${gpu_free:-0}" -ge 30000 ] && [ "${host_free:-0}" -ge 12 ]; then
    part gpu_big gpu_big.txt 80 "$LB \"$GSHELL\" \"$BIG\" $DEV"
  else
    echo "skipped: needs 30000 MiB free on the GPU (has ${gpu_free:-?}) and 12 GiB of host memory (has ${host_free:-?})" >"$OUT/gpu_big.txt"
    say "gpu_big: skipped (GPU ${gpu_free:-?} MiB free, host ${host_free:-?} GiB)"
  fi
fi

# ---- 5. the benchmark table against PyTorch on the same GPU
part bench bench.md 70 "sh \"$BENCH/compare.sh\" \"$GSHELL\" $DEV ${SIM:+--small}"

# ---- 6. the time model's calibration (issue 29): the microbenchmarks on
# this GPU, then the fit against the model whose name the GPU's contains
# (a simulated GPU: its own model, the quick sizes)
calib_cmd='
m=$("$GSHELL" -e "local n = torch.cuda.get_device_name(0):lower()
for _, k in ipairs(torch.cuda.gpu_models()) do if n:find(k, 1, true) then print(k) return end end
print(\"h100\")")
t=$(mktemp)
$LB "$GSHELL" "$CALIB" $DEV ${SIM:+quick} | tee "$t"
echo "== fitted against the $m model"
"$GSHELL" "$FIT" "$m" "$t"; rc=$?
rm -f "$t"
exit $rc
'
export CALIB FIT DEV SIM
part calib calib.txt 60 "$calib_cmd"

# ---- 7. racecheck on the reductions, with what time is left
if [ -z "$SIM" ] && have compute-sanitizer; then
  part racecheck racecheck.txt 40 "compute-sanitizer --tool racecheck --error-exitcode 3 \
    \"$GSHELL\" \"$CHECK\" $DEV --no-timing -v --only='$RACECHECK_ONLY'"
else
  echo "racecheck: needs compute-sanitizer and a real GPU${SIM:+ (simulated GPUs here)}" >"$OUT/racecheck.txt"
  say "racecheck: skipped${SIM:+ (simulated GPUs)}"
fi

say "total $(($(date +%s) - start))s of ${BUDGET}s, $failed part(s) failed or timed out"
[ "$failed" -eq 0 ]
