"""Writes examples/lenet.ipynb, the LeNet chapter of Dive into Deep Learning
as a notebook for the gshell kernel (Fashion-MNIST, show_images, LeNet and
its layer shapes, train_ch6 with its live chart over 2 epochs,
evaluation), and fills in its outputs by running it (two simulated GPUs):
    /usr/bin/python3 spec/kernel/make_lenet_notebook.py build/gshell
spec/kernel/lenet_notebook.py runs it again for spec/lenet_notebook_spec.lua."""
import os
import sys

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kernel_util as U  # noqa: E402

M, C = new_markdown_cell, new_code_cell
VARIES = {"tags": ["varies"]}

# What is trained on: the book's hyper-parameters and all 235 batches, 2
# epochs (the book: 10) and 10 test batches, so that the notebook runs in
# well under a minute and its chart still shows the sigmoid LeNet leave
# chance in the second epoch (on fewer images it stays flat at 0.1).
TEST_BATCHES, EPOCHS = 10, 2


def cells():
    return [
        M("# LeNet, in gshell\n\n"
          "The *Convolutional Neural Networks (LeNet)* chapter of Dive into Deep Learning, cell by cell, "
          "in Lua with gshell's PyTorch-like `torch` and the book's `d2l` helpers. Pick the kernel "
          "*gshell (Lua + torch)* (`build/gshell --install-kernel --user`). On a machine without a GPU the "
          "kernel simulates two in host memory (its banner says so), which is how the outputs stored here "
          "were made.\n\n"
          "Labels are 1-based in gshell: 1 is t-shirt, 10 ankle boot."),
        C("torch.manual_seed(0)\ntry_gpu()"),
        M("## The data\n\n`d2l.load_data_fashion_mnist(batch_size)` returns the training and test "
          "loaders of Fashion-MNIST, read from Debian's `dataset-fashion-mnist` package."),
        C("batch_size = 256\ntrain_iter, test_iter = d2l.load_data_fashion_mnist(batch_size)\n"
          "#train_iter, #test_iter"),
        M("The book's `next(iter(train_iter))` is `train_iter:iter()()`; `d2l.show_images` draws a grid "
          "of images with their labels (a PNG here)."),
        C("X, y = table.unpack(train_iter:iter()())\n"
          "d2l.show_images(X[{{1, 18}}]:reshape(18, 28, 28), 2, 9, "
          "{titles = d2l.get_fashion_mnist_labels(y[{{1, 18}}])})\n"
          "X.shape, y.shape"),
        M("## LeNet\n\nTwo convolutional blocks (convolution, sigmoid, average pooling) and three fully "
          "connected layers, as in the book."),
        C("net = nn.Sequential(\n"
          "  nn.Conv2d(1, 6, 5, {padding = 2}), nn.Sigmoid(),\n"
          "  nn.AvgPool2d(2, {stride = 2}),\n"
          "  nn.Conv2d(6, 16, 5), nn.Sigmoid(),\n"
          "  nn.AvgPool2d(2, {stride = 2}),\n"
          "  nn.Flatten(),\n"
          "  nn.Linear(16 * 5 * 5, 120), nn.Sigmoid(),\n"
          "  nn.Linear(120, 84), nn.Sigmoid(),\n"
          "  nn.Linear(84, 10))\n"
          "net"),
        M("Each layer's output shape, for one 28 x 28 image (the book's loop):"),
        C("X = torch.rand(1, 1, 28, 28)\n"
          "for _, layer in ipairs(net) do\n"
          "  X = layer(X)\n"
          "  print(layer:_get_name(), 'output shape:', X.shape)\n"
          "end"),
        M("## Training\n\n"
          "The book trains 10 epochs over all 60000 images (`d2l.train_ch6(net, train_iter, test_iter, "
          "10, 0.9, d2l.try_gpu())`). This notebook trains %d epochs over all of them and tests on the "
          "first %d test batches after each, so that it runs in well under a minute: the sigmoid LeNet stays "
          "near chance (0.1) for most of its first epoch, then learns in the second, which is the curve the "
          "chapter is about. The chart is drawn once and updated in place as training goes."
          % (EPOCHS, TEST_BATCHES)),
        C("test_small = {}\n"
          "for i, X, y in test_iter:enumerate() do\n"
          "  test_small[i] = {X, y}\n"
          "  if i == %d then break end\n"
          "end\n"
          "#test_small" % TEST_BATCHES),
        C("lr, num_epochs = 0.9, %d\n"
          "d2l.train_ch6(net, train_iter, test_small, num_epochs, lr, d2l.try_gpu())" % EPOCHS,
          metadata=VARIES),
        M("## Evaluation\n\n`d2l.evaluate_accuracy_gpu` runs the net in eval mode, without gradients, "
          "on the device of its parameters:"),
        C("acc = d2l.evaluate_accuracy_gpu(net, test_small)\n"
          "acc >= 0 and acc <= 1, net[1].weight.device"),
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
    path = os.path.join(here, "..", "..", "examples", "lenet.ipynb")
    nbformat.write(nb, path)
    print("wrote", os.path.normpath(path))


if __name__ == "__main__":
    main()
