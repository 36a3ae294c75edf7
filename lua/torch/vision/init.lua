-- torchvision: data sets and image transforms, PyTorch's torchvision under
-- the same names. A global in gshell; require("torchvision") in stock Lua
-- (torch.so registers the name; build/torchvision.so is the same library).
--   torchvision.datasets.FashionMNIST({root =, train = true, transform =})
--   torchvision.datasets.MNIST(...)
--   torchvision.transforms.ToTensor(), Resize(size), Normalize(mean, std),
--   Compose({...})
return {
  datasets = require("torch.vision.datasets"),
  transforms = require("torch.vision.transforms"),
}
