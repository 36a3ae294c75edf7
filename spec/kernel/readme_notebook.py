"""Installs the kernel exactly as the README says (`gshell --install-kernel
--user`, nothing in the environment: no GSHELL_SIM_GPUS) into a private
Jupyter data directory, and runs examples/gpu_chapter.ipynb through nbclient
on it: as installed, then with GSHELL_SIM_GPUS=1 and =0 put in the
kernelspec's env (one GPU, none), where the cells needing a second GPU must
say so instead of failing. Records per run the kernel's banner and, per code
cell, its errors and printed text, for spec/kernel_spec.lua:
    python3 readme_notebook.py GSHELL OUT.lua"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

import nbformat
from nbclient import NotebookClient

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kernel_util as U  # noqa: E402

NOTEBOOK = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples",
                        "gpu_chapter.ipynb")


def run_notebook():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
    NotebookClient(nb, kernel_name="gshell", timeout=120, allow_errors=True).execute()
    log = tempfile.NamedTemporaryFile(suffix=".log", delete=False).name
    km, kc, logf = U.start(log)
    try:
        banner = kc.kernel_info(reply=True, timeout=30)["content"].get("banner", "")
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
        logf.close()
        os.remove(log)
    cells = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        errors = [o["ename"] + ": " + o["evalue"] for o in cell.outputs if o["output_type"] == "error"]
        text = "".join(o.get("text", "") for o in cell.outputs if o["output_type"] == "stream")
        tags = cell.get("metadata", {}).get("tags", [])
        cells.append({"source": cell.source, "errors": errors, "text": text,
                      "raises": "raises-exception" in tags})
    return {"banner": banner, "cells": cells}


def readme(gshell, out):
    data = tempfile.mkdtemp(prefix="gshell-readme-")
    try:
        env = dict(os.environ, JUPYTER_DATA_DIR=data)
        env.pop("GSHELL_SIM_GPUS", None)
        os.environ.pop("GSHELL_SIM_GPUS", None)
        os.environ.pop("JUPYTER_PATH", None)
        os.environ["JUPYTER_DATA_DIR"] = data
        inst = subprocess.run([gshell, "--install-kernel", "--user"], env=env, capture_output=True,
                              text=True)
        spec_path = os.path.join(data, "kernels", "gshell", "kernel.json")
        with open(spec_path) as f:
            spec = json.load(f)
        runs = {"installed": {"status": inst.returncode, "spec_env": spec.get("env", {})}}
        runs["as_installed"] = run_notebook()
        for n in ("1", "0"):
            spec2 = dict(spec, env=dict(spec.get("env", {}), GSHELL_SIM_GPUS=n))
            with open(spec_path, "w") as f:
                json.dump(spec2, f)
            runs["sim" + n] = run_notebook()
        U.write_lua(out, runs)
    finally:
        shutil.rmtree(data, True)


if __name__ == "__main__":
    U.main_guard(readme)
