-- torchvision.datasets: FashionMNIST and MNIST from their IDX files.
--
-- The images live once in memory as a uint8 tensor (N x 28 x 28) read by
-- the C reader (torch._read_idx, src/io/gs_idx.c); targets are int64 and
-- 1-based (the contract's rule for class targets). ds:get(i) is one sample
-- {image, label}; ds:get_batch(indices) is what the DataLoader calls: one
-- index_select of the images, then the transform once on the whole batch
-- (when every step of it can work on batches; else sample by sample).
local torch = require("torch")
local E = require("torch.utils.errors")
local fail = E.fail
local data = require("torch.utils.data")
local transforms = require("torch.vision.transforms")

local M = {}

-- Where data sets are looked for when no root is given: $GSHELL_DATA/<dir>,
-- then Debian's /usr/share/datasets/<dir>.
M.system_dir = "/usr/share/datasets"

-- Gzipped files are read once and kept decompressed under cache_dir
-- (datasets/<file name>-<hash of the source's real path>), so later loads
-- skip the decompression: $GSHELL_CACHE, else $XDG_CACHE_HOME/gshell, else
-- ~/.cache/gshell; GSHELL_CACHE=none (or cache_dir = nil) turns it off. A
-- copy records its source's identity and is used only while it matches
-- (src/io/gs_idx_cache.c).
local function default_cache_dir()
  local c = os.getenv("GSHELL_CACHE")
  if c == "none" then return nil end
  if c and c ~= "" then return c end
  local x = os.getenv("XDG_CACHE_HOME")
  if x and x ~= "" then return x .. "/gshell" end
  local h = os.getenv("HOME")
  if h and h ~= "" then return h .. "/.cache/gshell" end
  return nil
end
M.cache_dir = default_cache_dir()

-- The most bytes of data one IDX file may hold (gzip lets a small file
-- announce 1000 times its size); raise it for a bigger data set.
M.max_bytes = 1 << 30

-- The cache file for a gzipped source path, or nil: named after the
-- source's real path (links, "." and ".." resolved), never $PWD.
function M.cache_path(path)
  if not M.cache_dir or not path:match("%.gz$") then return nil end
  return torch._idx_cache_path(path, M.cache_dir)
end

local FILES = {
  train = { "train-images-idx3-ubyte", "train-labels-idx1-ubyte" },
  test = { "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte" },
}
local ALL_FILES = { FILES.train[1], FILES.train[2], FILES.test[1], FILES.test[2] }

-- A stat, not an open: opening a FIFO waits for a writer (and Ctrl-C
-- then made it "not found"). Anything there that is not a regular file
-- is an error naming what it is.
local function exists(kind, path)
  local what = torch._file_kind(path)
  if what == nil then return false end
  if what ~= "file" then fail(string.format("%s: %s is %s, expected an IDX file", kind.name, path, what)) end
  return true
end

-- The directories to search, in order, and a sentence saying where they are.
local function search_dirs(kind, root)
  if root ~= nil then
    if type(root) ~= "string" then fail(kind.name .. ": root must be a directory path (a string), got " .. E.describe(root)) end
    -- root itself, or torchvision's layout root/FashionMNIST/raw
    return { root, root .. "/" .. kind.name .. "/raw" }, "root '" .. root .. "'"
  end
  local env = os.getenv("GSHELL_DATA")
  if env and env ~= "" then return { env .. "/" .. kind.dir }, "$GSHELL_DATA/" .. kind.dir .. " ('" .. env .. "/" .. kind.dir .. "')" end
  return { M.system_dir .. "/" .. kind.dir }, "'" .. M.system_dir .. "/" .. kind.dir .. "'"
end

local function find_file(kind, dirs, where, base)
  for _, d in ipairs(dirs) do
    for _, name in ipairs({ base .. ".gz", base }) do
      local p = d .. "/" .. name
      if exists(kind, p) then return p end
    end
  end
  local install = kind.package and ("install Debian's package " .. kind.package .. " (apt-get install " .. kind.package
    .. "), or ") or "Debian packages no " .. kind.name .. ": "
  fail(string.format("%s: %s.gz (or %s) not found in %s: %sgive a root directory holding the four files %s "
    .. "(each gzipped or not); nothing is downloaded", kind.name, base, base, where, install,
    table.concat(ALL_FILES, ", ")))
end

local function read(path, want_dims, what)
  if math.type(M.max_bytes) ~= "integer" or M.max_bytes < 1 then
    fail("torchvision.datasets.max_bytes must be a positive integer (bytes), got " .. E.describe(M.max_bytes))
  end
  local ok, x
  if M.cache_dir and path:match("%.gz$") then ok, x = pcall(torch._read_idx_cached, path, M.cache_dir, M.max_bytes)
  else ok, x = pcall(torch._read_idx, path, M.max_bytes) end
  if not ok then fail(tostring(x)) end
  if x:dim() ~= want_dims then
    fail(string.format("%s: expected an IDX %s file (%d dims, magic 00 00 08 0%d), got %d dims", path, what, want_dims,
      want_dims, x:dim()))
  end
  return x
end

local function make_dataset(kind)
  local cls = data.Dataset:extend(kind.name)
  cls.classes = kind.classes

  -- cls({root =, train = true, transform =, target_transform =})
  function cls:init(opts)
    opts = opts or {}
    if type(opts) ~= "table" then fail(kind.name .. ": expected an options table {root =, train =, transform =}, got "
      .. E.describe(opts)) end
    E.check_options(opts, kind.name, { "root", "train", "transform", "target_transform", "download" })
    if opts.download then
      fail(kind.name .. ": download is not supported: gshell reads the files from root, $GSHELL_DATA or "
        .. (kind.package and ("Debian's package " .. kind.package) or "a directory you fill"))
    end
    for _, k in ipairs({ "transform", "target_transform" }) do
      local t = opts[k]
      if t ~= nil and type(t) ~= "function" and not (type(t) == "table" and getmetatable(t) and getmetatable(t).__call) then
        fail(string.format("%s: %s must be a transform (a callable), got %s", kind.name, k, E.describe(t)))
      end
    end
    self.train = opts.train ~= false
    local dirs, where = search_dirs(kind, opts.root)
    local files = self.train and FILES.train or FILES.test
    local ipath = find_file(kind, dirs, where, files[1])
    local lpath = find_file(kind, dirs, where, files[2])
    self.root = ipath:match("^(.*)/[^/]*$")
    self.data = read(ipath, 3, "images")
    local labels = read(lpath, 1, "labels")
    if labels:size(1) ~= self.data:size(1) then
      fail(string.format("%s: %s holds %d images but %s holds %d labels", kind.name, ipath, self.data:size(1), lpath,
        labels:size(1)))
    end
    local ncls = #kind.classes
    if labels:numel() > 0 and labels:max():item() >= ncls then
      fail(string.format("%s: %s holds a label %d, expected 0 to %d (%d classes)", kind.name, lpath,
        labels:max():item(), ncls - 1, ncls))
    end
    -- 1-based class indices, int64 as torchvision's targets
    self.targets = labels:to(torch.int64):add(1)
    self.transform = opts.transform
    self.target_transform = opts.target_transform
  end

  function cls:__len() return self.data:size(1) end

  function cls:get(i)
    local n = self.data:size(1)
    if math.type(i) ~= "integer" or i < 1 or i > n then
      fail(string.format("%s:get: index %s out of range 1..%d", kind.name, tostring(i), n))
    end
    local img, label = self.data[i], self.targets[i]:item()
    if self.transform then img = self.transform(img) end
    if self.target_transform then label = self.target_transform(label) end
    return { img, label }
  end

  -- The collated batch {X, y} of samples `indices` (1-based), what
  -- DataLoader's default collate would build from get(i), with a few
  -- whole-batch operations when the transforms allow it.
  function cls:get_batch(indices)
    local t = self.transform
    if (t ~= nil and not transforms.batchable(t)) or self.target_transform ~= nil then
      local samples = {}
      for k, i in ipairs(indices) do samples[k] = self:get(i) end
      return data.default_collate(samples)
    end
    local idx = torch.tensor(indices, { dtype = torch.int64 })
    local X = self.data:index_select(1, idx)
    if t ~= nil then X = t:batch(X) end
    return { X, self.targets:index_select(1, idx) }
  end

  function cls:__tostring()
    local lines = {
      "Dataset " .. kind.name,
      "    Number of datapoints: " .. self.data:size(1),
      "    Root location: " .. self.root,
      "    Split: " .. (self.train and "Train" or "Test"),
    }
    if self.transform then lines[#lines + 1] = "    Transform: " .. tostring(self.transform) end
    return table.concat(lines, "\n")
  end

  return cls
end

M.FashionMNIST = make_dataset({
  name = "FashionMNIST",
  dir = "fashion-mnist",
  package = "dataset-fashion-mnist",
  classes = { "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot" },
})

M.MNIST = make_dataset({
  name = "MNIST",
  dir = "mnist",
  classes = { "0 - zero", "1 - one", "2 - two", "3 - three", "4 - four", "5 - five", "6 - six", "7 - seven", "8 - eight",
    "9 - nine" },
})

return M
