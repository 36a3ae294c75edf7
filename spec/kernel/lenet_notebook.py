"""Runs examples/lenet.ipynb with nbclient on the gshell kernel (two
simulated GPUs, as its outputs were made) for spec/lenet_notebook_spec.lua:
per code cell, the stored and the new outputs in a comparable form (as
notebook.py), and every display message the kernel sent while the cell ran
(nbclient folds update_display_data into the saved output, so they are
recorded as they arrive):
    python3 lenet_notebook.py GSHELL OUT.lua"""
import copy
import os
import sys
import time

import nbformat
from nbclient import NotebookClient

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kernel_util as U  # noqa: E402
from notebook import normalize  # noqa: E402

NOTEBOOK = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "lenet.ipynb")


class Recording(NotebookClient):
    """A NotebookClient that keeps, per cell, the output messages in order."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.seen = {}

    def process_message(self, msg, cell, cell_index):
        kind = msg["msg_type"]
        c = msg["content"]
        if kind in ("stream", "display_data", "update_display_data", "execute_result", "error"):
            item = {"type": kind}
            if kind == "stream":
                item["text"] = c["text"]
            elif kind == "error":
                item["text"] = c["ename"] + ": " + c["evalue"]
            else:
                data = c.get("data", {})
                item["mimes"] = sorted(data.keys())
                item["text"] = data.get("text/plain", "")
                item["id"] = c.get("transient", {}).get("display_id")
                svg = data.get("image/svg+xml")
                if svg is not None:
                    item["svg_ok"] = svg.lstrip().startswith("<svg") and svg.rstrip().endswith("</svg>")
            self.seen.setdefault(cell_index, []).append(item)
        return super().process_message(msg, cell, cell_index)


def run(gshell, out):
    U.install_kernelspec(gshell, sim_gpus="2")
    stored = nbformat.read(NOTEBOOK, as_version=4)
    nb = copy.deepcopy(stored)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
    client = Recording(nb, kernel_name="gshell", timeout=120)
    t0 = time.time()
    client.execute()
    seconds = time.time() - t0
    cells = []
    for i, (old, new) in enumerate(zip(stored.cells, nb.cells)):
        if old.cell_type != "code":
            continue
        cells.append({"source": old.source, "expected": normalize(old), "actual": normalize(new),
                      "count": new.execution_count, "messages": client.seen.get(i, []),
                      "varies": "varies" in old.get("metadata", {}).get("tags", [])})
    U.write_lua(out, {"cells": cells, "seconds": seconds, "kernel": stored.metadata["kernelspec"]["name"]})


if __name__ == "__main__":
    U.main_guard(run)
