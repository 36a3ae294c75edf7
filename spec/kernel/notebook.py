"""Runs examples/gpu_chapter.ipynb with nbclient on the gshell kernel (two
simulated GPUs, as its outputs were made) and records, per code cell, the
stored and the new outputs in a comparable form, for spec/kernel_spec.lua:
    python3 notebook.py GSHELL OUT.lua"""
import copy
import os
import sys
import time

import nbformat
from nbclient import NotebookClient

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kernel_util as U  # noqa: E402

NOTEBOOK = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples",
                        "gpu_chapter.ipynb")


def normalize(cell):
    """The outputs as {kind, name, text}: adjacent streams of one name joined
    (how output is cut into messages is not part of it); cells tagged
    "varies" (dates, timings) keep only their kinds."""
    varies = "varies" in cell.get("metadata", {}).get("tags", [])
    out = []
    for o in cell.get("outputs", []):
        kind = o["output_type"]
        if kind == "stream":
            if out and out[-1]["kind"] == "stream" and out[-1]["name"] == o["name"]:
                out[-1]["text"] += o["text"]
                continue
            item = {"kind": kind, "name": o["name"], "text": o["text"]}
        elif kind in ("execute_result", "display_data"):
            item = {"kind": kind, "text": o["data"].get("text/plain", "")}
        elif kind == "error":
            item = {"kind": kind, "name": o["ename"], "text": o["evalue"]}
        else:
            item = {"kind": kind}
        out.append(item)
    if varies:
        for item in out:
            item.pop("text", None)
    return out


def notebook(gshell, out):
    U.install_kernelspec(gshell, sim_gpus="2")
    stored = nbformat.read(NOTEBOOK, as_version=4)
    nb = copy.deepcopy(stored)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
    t0 = time.time()
    NotebookClient(nb, kernel_name="gshell", timeout=120).execute()
    seconds = time.time() - t0
    cells = []
    for old, new in zip(stored.cells, nb.cells):
        if old.cell_type != "code":
            continue
        cells.append({"source": old.source, "expected": normalize(old), "actual": normalize(new),
                      "count": new.execution_count})
    U.write_lua(out, {"cells": cells, "seconds": seconds, "kernel": stored.metadata["kernelspec"]["name"]})


if __name__ == "__main__":
    U.main_guard(notebook)
