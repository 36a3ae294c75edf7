"""Writes examples/gpu_chapter.ipynb, the GPU chapter (examples/gpu_chapter.lua)
as a notebook for the gshell kernel, and fills in its outputs by running it
(two simulated GPUs):
    python3 spec/kernel/make_gpu_notebook.py build/gshell
spec/kernel/notebook.py runs it again and compares the outputs."""
import os
import sys

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kernel_util as U  # noqa: E402

M, C = new_markdown_cell, new_code_cell


def cells():
    return [
        M("# GPUs, in gshell\n\n"
          "The *GPUs* chapter of Dive into Deep Learning, cell by cell, in Lua with gshell's "
          "PyTorch-like `torch`. Every cell is what you would type at the `gshell>` prompt: the "
          "value of a cell's last line is its `Out`.\n\n"
          "Install the kernel as the README says, `build/gshell --install-kernel --user`, and "
          "pick *gshell (Lua + torch)*. On a machine with real GPUs the cells run on them; on a "
          "machine without one the kernel simulates two in host memory (its banner says so), "
          "which is how the outputs stored here were made. With a single GPU, or with "
          "`GSHELL_SIM_GPUS=0` in the kernelspec's env (no GPU at all: `try_gpu()` is the CPU), "
          "the cells that need a second GPU say so and go on."),
        C("torch.manual_seed(0);\ntorch.cuda.device_count(), torch.cuda.is_simulated()"),
        M("## `!nvidia-smi`\n\nThe book starts by asking the driver what GPUs there are. "
          "`torch.cuda.smi()` prints the same table for gshell's devices, real or simulated."),
        C("torch.cuda.smi()", metadata={"tags": ["varies"]}),
        M("## Computing devices\n\nA device names where a tensor lives and where its operations "
          "run: the CPU, or CUDA device *i*."),
        C('torch.device("cpu"), torch.device("cuda"), torch.device("cuda:1")'),
        C("torch.cuda.device_count()"),
        M("The book's helpers are gshell globals: `try_gpu(i)` is `cuda:i` when it exists, "
          "else the CPU; `try_all_gpus()` lists every GPU."),
        C("try_gpu(), try_gpu(10), try_all_gpus()"),
        M("## Tensors and GPUs\n\nBy default tensors are made on the CPU."),
        C("X = torch.tensor({1, 2, 3})\nX.device"),
        M("### Storage on the GPU\n\nGive a device when making a tensor."),
        C("X = torch.ones(2, 3, {device = try_gpu()})\nX"),
        C("Y = torch.rand(2, 3, {device = try_gpu(1)})\nY"),
        M("### Copying\n\nTo compute `X + Y`, both must be on one device: copy `X` to the second "
          "GPU."),
        C("if torch.cuda.device_count() >= 2 then\n"
          "  Z = X:cuda(1)\n"
          "else  -- X:cuda(1) needs a second GPU: Z goes where Y is\n"
          "  print(\"(no second GPU here, so Z = X:to(try_gpu(1)) instead of X:cuda(1))\")\n"
          "  Z = X:to(try_gpu(1))\n"
          "end\n"
          "print(X)\nprint(Z)"),
        C("Y + Z"),
        M("`Z:cuda(1)` on a tensor already there returns the same tensor, not a copy "
          "(Python's `Z.cuda(1) is Z`)."),
        C("if torch.cuda.device_count() < 2 then\n"
          "  print(\"(no second GPU here: the same question with Z:to(try_gpu(1)))\")\n"
          "  return rawequal(Z:to(try_gpu(1)), Z)\n"
          "end\n"
          "rawequal(Z:cuda(1), Z)"),
        M("### Side notes\n\nAdding tensors on different devices is an error, not a silent "
          "copy:"),
        C("X + Y", metadata={"tags": ["raises-exception"]}),
        M("Copies are slow, so gshell counts them. Many small reads are much worse than one "
          "big one:"),
        C("torch.cuda.reset_transfers()\n"
          "local big = torch.rand(100, 100, {device = try_gpu()})\n"
          "local s = 0\n"
          "for i = 1, 100 do s = s + big[{i, 1}]:item() end   -- 100 tiny copies\n"
          "local col = big:select(2, 1):tolist()              -- one copy of the same numbers\n"
          "local t = torch.cuda.transfers()\n"
          "t.d2h.count, t.d2h.bytes"),
        M("## Neural networks and GPUs\n\nA model moves to a device with `:to`; its input must "
          "be there too."),
        C("net = nn.Sequential(nn.Linear(3, 1))\nnet = net:to(try_gpu())\nnet(X)"),
        C("net[1].weight.data.device"),
        M("## Memory on the device\n\nAs PyTorch reports it:"),
        C("if torch.cuda.device_count() == 0 then\n"
          "  print(\"(no GPU here: nothing is allocated on a device)\")\n"
          "  return\n"
          "end\n"
          "torch.cuda.memory_allocated(0), torch.cuda.memory_reserved(0)"),
        M("## Timing\n\nDevice work is asynchronous: `%timeit` synchronises the devices, so it "
          "measures the work, not the queueing. (Timings differ from run to run.)"),
        C("local A = torch.rand(256, 256, {device = try_gpu()})\n"
          "%timeit -n 20 -r 3 local B = A:matmul(A)", metadata={"tags": ["varies"]}),
    ]


def main():
    gshell = sys.argv[1]
    from nbclient import NotebookClient
    U.install_kernelspec(gshell, sim_gpus="2")
    nb = new_notebook(cells=cells())
    nb.metadata["kernelspec"] = {"name": "gshell", "display_name": "gshell (Lua + torch)",
                                 "language": "lua"}
    nb.metadata["language_info"] = {"name": "lua"}
    NotebookClient(nb, kernel_name="gshell", timeout=120).execute()
    here = os.path.dirname(os.path.abspath(__file__))
    path = os.path.join(here, "..", "..", "examples", "gpu_chapter.ipynb")
    nbformat.write(nb, path)
    print("wrote", os.path.normpath(path))


if __name__ == "__main__":
    main()
