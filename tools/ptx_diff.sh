#!/bin/sh
# tools/ptx_diff.sh [REV] [ARCHS]: compiles every kernel file
# (src/backend/cuda/kernels/*.cu) to PTX at git revision REV (default HEAD)
# and in the working tree, and
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
# Revisions before issue 28 kept the kernels in a top-level kernels/ folder
# (and compiled them with -Ikernels); a file is looked up at either place.
old_dirs=src
git cat-file -e "$REV:kernels" 2>/dev/null && old_dirs="src kernels"
git archive "$REV" $old_dirs | tar -x -C "$tmp/old"
status=0
for f in src/backend/cuda/kernels/*.cu; do
  b=$(basename "$f" .cu)
  old="$tmp/old/$f"
  [ -f "$old" ] || old="$tmp/old/kernels/$b.cu"
  for a in $ARCHS; do
    "$NVCC" -O3 -std=c++17 -I"$tmp/old/src" -I"$tmp/old/kernels" -arch="$a" -ptx -o "$tmp/$b.$a.old" "$old"
    "$NVCC" -O3 -std=c++17 -Isrc -arch="$a" -ptx -o "$tmp/$b.$a.new" "$f"
    n=$(diff "$tmp/$b.$a.old" "$tmp/$b.$a.new" | grep -c '^[<>]' || true)
    echo "$b $a: $n lines differ"
    [ "$n" -eq 0 ] || { status=1; [ -n "${PTX_SHOW:-}" ] && diff "$tmp/$b.$a.old" "$tmp/$b.$a.new" | head -40; }
  done
done
exit $status
