#!/bin/sh
# tools/ptx_diff.sh [REV] [ARCHS]: compiles every kernel file (kernels/*.cu)
# to PTX at git revision REV (default HEAD) and in the working tree, and
# prints, per file and architecture, how many PTX lines differ. A kernel
# refactor that should not change behaviour can be checked this way on a
# machine with nvcc and no GPU: 0 everywhere means the same instructions.
set -eu
cd "$(dirname "$0")/.."
REV=${1:-HEAD}
ARCHS=${2:-"sm_75 sm_80 sm_90"}
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
[ -x "$NVCC" ] || { echo "ptx_diff: nvcc not found (set NVCC)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
mkdir -p "$tmp/old"
git archive "$REV" src kernels | tar -x -C "$tmp/old"
status=0
for f in kernels/*.cu; do
  b=$(basename "$f" .cu)
  for a in $ARCHS; do
    "$NVCC" -O3 -std=c++17 -I"$tmp/old/src" -I"$tmp/old/kernels" -arch="$a" -ptx -o "$tmp/$b.$a.old" "$tmp/old/$f"
    "$NVCC" -O3 -std=c++17 -Isrc -Ikernels -arch="$a" -ptx -o "$tmp/$b.$a.new" "$f"
    n=$(diff "$tmp/$b.$a.old" "$tmp/$b.$a.new" | grep -c '^[<>]' || true)
    echo "$b $a: $n lines differ"
    [ "$n" -eq 0 ] || { status=1; [ -n "${PTX_SHOW:-}" ] && diff "$tmp/$b.$a.old" "$tmp/$b.$a.new" | head -40; }
  done
done
exit $status
