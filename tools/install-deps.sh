#!/bin/sh
# Installs the Debian packages gshell needs to build and test, only those missing.
# Used by `make` and `make test`, so a fresh Debian 12 machine needs nothing else.
#   install-deps.sh [--test] [extra Debian packages...]
# --test also fetches what only the specs use (Python's safetensors, and
# Debian's Jupyter client, nbclient and jupyter_kernel_test that drive
# `gshell --kernel` as Jupyter does).
set -e
test_deps=0
if [ "${1:-}" = "--test" ]; then
  test_deps=1
  shift
  set -- python3-jupyter-client python3-nbclient python3-nbformat python3-jupyter-kernel-test "$@"
fi
need=""
# Open MPI: torch.distributed opens libmpi at run time (gshell builds and
# runs without it); mpirun runs the distributed specs and examples.
for p in lua5.4 liblua5.4-dev lua-busted libopenblas-dev libreadline-dev \
         libzmq3-dev libjansson-dev libssl-dev libopenmpi-dev openmpi-bin \
         libpng-dev "$@"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || need="$need $p"
done
if [ -n "$need" ]; then
  echo "installing:$need"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get -o DPkg::Lock::Timeout=600 update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get -o DPkg::Lock::Timeout=600 install -y -qq $need >/dev/null
fi
[ "$test_deps" = 1 ] || exit 0

# Python's safetensors lets the interop specs read our files and write
# files for us; optional (those specs say so and pend without it).
if command -v python3 >/dev/null 2>&1 && ! python3 -c "import safetensors.numpy" 2>/dev/null; then
  python3 -m pip install -q safetensors numpy >/dev/null 2>&1 || true
fi
