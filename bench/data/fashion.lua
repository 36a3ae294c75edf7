-- bench/data/fashion.lua: the gshell side of the data-loading benchmark
-- (bench/data/run.sh): loading Fashion-MNIST's training set from Debian's
-- gzipped files and iterating one epoch of shuffled batches of 256 with
-- ToTensor, no model; also the book's Resize(96) pipeline, and loading
-- without the decompressed cache (decompressing the gzipped files). Prints
-- `name value unit` lines. Run with LUA_CPATH="build/?.so;;" lua5.4.
local torch = require("torch")
local tv = require("torchvision")
local T = tv.transforms
local DataLoader = torch.utils.data.DataLoader
local clock = torch.clock
local rounds = tonumber(arg[1]) or 5

local function epoch(loader)
  local n = 0
  for _, X, y in loader:enumerate() do n = n + X:size(1) + 0 * y:size(1) end
  assert(n == 60000, "an epoch saw " .. n .. " samples")
end

local best = { load = math.huge, epoch = math.huge, total = math.huge, epoch96 = math.huge, load_gz = math.huge }
for _ = 1, rounds do
  collectgarbage()
  local t0 = clock()
  local ds = tv.datasets.FashionMNIST({ train = true, transform = T.ToTensor() })
  local t1 = clock()
  torch.manual_seed(0)
  epoch(DataLoader(ds, { batch_size = 256, shuffle = true }))
  local t2 = clock()
  best.load = math.min(best.load, t1 - t0)
  best.epoch = math.min(best.epoch, t2 - t1)
  best.total = math.min(best.total, t2 - t0)
end
-- without the decompressed cache: every load decompresses
local cache_dir = tv.datasets.cache_dir
tv.datasets.cache_dir = nil
for _ = 1, 3 do
  collectgarbage()
  local t0 = clock()
  tv.datasets.FashionMNIST({ train = true, transform = T.ToTensor() })
  best.load_gz = math.min(best.load_gz, clock() - t0)
end
tv.datasets.cache_dir = cache_dir
-- the book's Resize(96) pipeline (ResNet's input size): one epoch
collectgarbage()
local ds96 = tv.datasets.FashionMNIST({ train = true, transform = T.Compose({ T.Resize(96), T.ToTensor() }) })
local t3 = clock()
epoch(DataLoader(ds96, { batch_size = 256, shuffle = true }))
best.epoch96 = clock() - t3
print(string.format("fmnist_load %.4f s", best.load))
print(string.format("fmnist_epoch %.4f s", best.epoch))
print(string.format("fmnist_total %.4f s", best.total))
print(string.format("fmnist_epoch_resize96 %.4f s", best.epoch96))
print(string.format("fmnist_load_nocache %.4f s", best.load_gz))
