-- datasets_spec.lua: the IDX reader (src/io/gs_idx.c), torchvision's data
-- sets and transforms (lua/torch/vision/), and the DataLoader over them
-- (docs/data.md). Fixture files are written here; the real Fashion-MNIST
-- files (Debian's dataset-fashion-mnist) are checked against values that
-- Python's standard library reads from them independently, and the
-- transforms against torchvision's numbers (spec/support/vision_goldens.lua,
-- from gen_vision_goldens.py).
local torch = require("torch")
local H = require("helpers")
local R = require("gshell_run")
local tv = require("torchvision")
local G = require("vision_goldens")
local T = tv.transforms
local DataLoader = torch.utils.data.DataLoader

local FMNIST = "/usr/share/datasets/fashion-mnist"
local tmp = R.tmpdir()
-- the decompressed copies of this spec go to its own folder, not ~/.cache
tv.datasets.cache_dir = tmp .. "/cache"

-- Shell commands run without the sanitizer preload of a SANITIZE=1 run
-- (cp, gzip and python3 are not instrumented; ASan's runtime in them
-- fails or reports their own leaks).
local function sh(cmd)
  return os.execute("env -u LD_PRELOAD sh -c " .. R.quote(cmd))
end

local function write(name, bytes)
  local p = tmp .. "/" .. name
  local f = assert(io.open(p, "wb"))
  f:write(bytes)
  f:close()
  return p
end

local function gzip(path)
  assert(sh("gzip -c " .. R.quote(path) .. " > " .. R.quote(path .. ".gz")))
  return path .. ".gz"
end

-- An IDX file: magic 00 00 type ndim, big-endian sizes, then payload.
local function idx(dims, payload, typ)
  local parts = { string.char(0, 0, typ or 8, #dims) }
  for _, d in ipairs(dims) do parts[#parts + 1] = string.pack(">I4", d) end
  parts[#parts + 1] = payload
  return table.concat(parts)
end

local function bytes(n, f)
  local t = {}
  for i = 1, n do t[i] = string.char(f(i) % 256) end
  return table.concat(t)
end

-- a and b (tensors or nested lists) agree within tol (0: exactly)
local function close(a, b, tol)
  if torch.is_tensor(a) then a = a:tolist() end
  if torch.is_tensor(b) then b = b:tolist() end
  H.assert_close(a, b, 0, tol)
end

describe("the IDX reader", function()
  local payload = bytes(24, function(i) return i * 11 end)

  it("reads a plain file into a uint8 tensor shaped as the header says", function()
    local x = torch._read_idx(write("good", idx({ 2, 3, 4 }, payload)))
    assert.are.equal(torch.uint8, x.dtype)
    assert.are.same({ 2, 3, 4 }, H.shape(x))
    assert.are.equal("cpu", x.device.type)
    local want = {}
    for i = 1, 24 do want[i] = (i * 11) % 256 end
    assert.are.same(want, x:flatten():tolist())
  end)

  it("reads the same file gzipped, and a labels file", function()
    local x = torch._read_idx(gzip(write("good2", idx({ 2, 3, 4 }, payload))))
    assert.are.same({ 2, 3, 4 }, H.shape(x))
    assert.are.equal(11 * 24 % 256, x[2][3][4]:item())
    local l = torch._read_idx(gzip(write("labels", idx({ 5 }, string.char(9, 0, 3, 1, 7), 8))))
    assert.are.same({ 9, 0, 3, 1, 7 }, l:tolist())
  end)

  it("reads a file with no samples (a size of 0)", function()
    local x = torch._read_idx(write("none", idx({ 0, 28, 28 }, "")))
    assert.are.same({ 0, 28, 28 }, H.shape(x))
  end)

  it("refuses empty files, plain or gzipped", function()
    local p = write("empty", "")
    H.errors(function() torch._read_idx(p) end, { p, "empty file", "IDX header" })
    local g = gzip(write("empty2", ""))
    H.errors(function() torch._read_idx(g) end, { g, "empty file" })
  end)

  it("refuses a wrong magic number, a wrong element type and a wrong number of dimensions", function()
    local p = write("magic", "\x01\x02\x08\x03" .. string.rep("\0", 40))
    H.errors(function() torch._read_idx(p) end, { p, "not an IDX file", "01 02 08 03", "00 00 08 03 for images" })
    p = write("float", idx({ 2 }, string.rep("\0", 8), 0x0D))
    H.errors(function() torch._read_idx(p) end, { p, "type 0x0d (float32) is not supported", "type 0x08" })
    p = write("ndim0", "\0\0\8\0")
    H.errors(function() torch._read_idx(p) end, { p, "announces 0 dimensions", "expected 1 to 4" })
    p = write("ndim9", "\0\0\8\9" .. string.rep("\0", 36))
    H.errors(function() torch._read_idx(p) end, { p, "announces 9 dimensions" })
  end)

  it("refuses truncated files: header, plain payload, gzipped payload, gzip stream", function()
    local p = write("thead", "\0\0\8\3\0\0\0\2\0\0")
    H.errors(function() torch._read_idx(p) end, { p, "truncated IDX header", "3 dimension sizes" })
    local full = idx({ 2, 3, 4 }, payload)
    p = write("tpay", full:sub(1, -2))
    H.errors(function() torch._read_idx(p) end, { p, "truncated IDX file", "2 x 3 x 4", "24 bytes", "holds 23" })
    local g = gzip(write("tpay2", full:sub(1, -5)))
    H.errors(function() torch._read_idx(g) end, { g, "truncated IDX file", "24 bytes", "decompressed content holds 20" })
    -- the compressed stream itself cut short
    local whole = gzip(write("tgz", idx({ 100, 28, 28 }, bytes(78400, function(i) return i * 7 + i // 13 end))))
    local f = assert(io.open(whole, "rb"))
    local z = f:read("a")
    f:close()
    local cut = write("tgz_cut.gz", z:sub(1, #z // 2))
    H.errors(function() torch._read_idx(cut) end, { cut, "truncated" })
  end)

  it("refuses corrupt gzip data (the CRC check)", function()
    local g = gzip(write("crc", idx({ 50, 28, 28 }, bytes(39200, function(i) return i * 31 end))))
    local f = assert(io.open(g, "rb"))
    local z = f:read("a")
    f:close()
    -- flip one byte of the stored CRC-32 (the trailer's first 4 bytes)
    local k = #z - 7
    local bad = write("crc_bad.gz", z:sub(1, k - 1) .. string.char((z:byte(k) + 1) % 256) .. z:sub(k + 1))
    H.errors(function() torch._read_idx(bad) end, { bad, "damaged gzip file: the CRC-32 in its trailer does not match" })
  end)

  it("refuses oversized dimensions before allocating", function()
    local p = write("huge", idx({ 4294967295, 4294967295, 4294967295 }, payload))
    H.errors(function() torch._read_idx(p) end, { p, "oversized IDX dimensions", "4294967295 x 4294967295", "overflows" })
    p = write("big", idx({ 60000, 28, 28 }, payload))
    H.errors(function() torch._read_idx(p) end, { p, "47040000 bytes", "the file holds 24" })
    local g = gzip(write("biggz", idx({ 1000000, 1000, 1000 }, payload)))
    H.errors(function() torch._read_idx(g) end, { g, "oversized IDX dimensions", "1000000 x 1000 x 1000", "gzip file" })
  end)

  it("refuses trailing bytes after the payload, plain or gzipped", function()
    local full = idx({ 2, 3, 4 }, payload)
    local p = write("trail", full .. "xyz")
    H.errors(function() torch._read_idx(p) end, { p, "3 trailing bytes", "announces 24 bytes" })
    local g = gzip(write("trail2", full .. "x"))
    H.errors(function() torch._read_idx(g) end, { g, "1 trailing bytes", "announces 24 bytes" })
  end)

  it("names a missing file or a directory", function()
    H.errors(function() torch._read_idx(tmp .. "/nope") end, { tmp .. "/nope", "No such file" })
    H.errors(function() torch._read_idx(tmp) end, { tmp, "not a regular file" })
  end)
end)

-- the decompressed cache: spec/dataset_cache_spec.lua

-- ------------------------------------------------------------------- data

-- Facts of the real files, read by Python's gzip and struct (not gshell).
local facts
local function real_facts()
  if facts then return facts end
  local script = [[
import gzip, struct
for split in ("train", "t10k"):
    with gzip.open("%s/%%s-labels-idx1-ubyte.gz" %% split) as f:
        magic, n = struct.unpack(">II", f.read(8)); labels = f.read()
    with gzip.open("%s/%%s-images-idx3-ubyte.gz" %% split) as f:
        magic2, n2, r, c = struct.unpack(">IIII", f.read(16)); imgs = f.read()
    assert magic == 0x801 and magic2 == 0x803 and n == n2 == len(labels) and len(imgs) == n * r * c
    first, last = imgs[:r * c], imgs[-r * c:]
    print("%%s = {n = %%d, rows = %%d, first_label = %%d, last_label = %%d, label_sum = %%d, "
          "first_sum = %%d, last_sum = %%d, first_row14 = {%%s}, counts = {%%s}}," %% (
          split, n, r, labels[0], labels[-1], sum(labels), sum(first), sum(last),
          ", ".join(str(b) for b in first[14 * c:15 * c]),
          ", ".join(str(labels.count(k)) for k in range(10))))
]]
  script = script:format(FMNIST, FMNIST)
  local p = write("facts.py", script)
  local h = assert(io.popen("env -u LD_PRELOAD python3 " .. R.quote(p)))
  local out = h:read("a")
  h:close()
  facts = assert(load("return {" .. out .. "}"))()
  return facts
end

describe("torchvision.datasets.FashionMNIST", function()
  local train, test
  setup(function()
    train = tv.datasets.FashionMNIST({ train = true })
    test = tv.datasets.FashionMNIST({ train = false })
  end)
  teardown(function() train, test = nil, nil; collectgarbage(); collectgarbage() end)

  it("holds the training and test sets as uint8 images and 1-based int64 targets", function()
    assert.are.equal(60000, #train)
    assert.are.equal(10000, #test)
    assert.are.same({ 60000, 28, 28 }, H.shape(train.data))
    assert.are.equal(torch.uint8, train.data.dtype)
    assert.are.equal(torch.int64, train.targets.dtype)
    assert.are.equal(FMNIST, train.root)
    assert.is_true(train.train)
    assert.is_false(test.train)
  end)

  it("gives the first training image as an ankle boot, label 10, with its class name", function()
    local s = train:get(1)
    assert.are.equal(2, #s)
    assert.are.same({ 28, 28 }, H.shape(s[1]))
    assert.are.equal(torch.uint8, s[1].dtype)
    assert.are.equal(10, s[2])
    assert.are.equal("Ankle boot", train.classes[s[2]])
    assert.are.same({ "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag",
      "Ankle boot" }, tv.datasets.FashionMNIST.classes)
  end)

  it("matches the files as Python's gzip and struct read them: labels, first and last images", function()
    local F = real_facts()
    for _, c in ipairs({ { train, F.train }, { test, F.t10k } }) do
      local ds, f = c[1], c[2]
      assert.are.equal(f.n, #ds)
      assert.are.equal(f.first_label + 1, ds:get(1)[2])
      assert.are.equal(f.last_label + 1, ds:get(#ds)[2])
      assert.are.equal(f.label_sum + f.n, ds.targets:sum():item())
      assert.are.equal(f.first_sum, ds:get(1)[1]:to(torch.int64):sum():item())
      assert.are.equal(f.last_sum, ds:get(#ds)[1]:to(torch.int64):sum():item())
      assert.are.same(f.first_row14, ds.data[1][15]:tolist())
      local counts = {}
      for k = 1, 10 do counts[k] = ds.targets:eq(k):sum():item() end
      assert.are.same(f.counts, counts)
    end
  end)

  it("refuses indices out of range", function()
    H.errors(function() test:get(0) end, "index 0 out of range 1..10000")
    H.errors(function() test:get(10001) end, "index 10001 out of range 1..10000")
  end)

  it("applies its transform in get", function()
    local ds = tv.datasets.FashionMNIST({ train = false, transform = T.ToTensor() })
    local s = ds:get(1)
    assert.are.same({ 1, 28, 28 }, H.shape(s[1]))
    assert.are.equal(torch.float32, s[1].dtype)
    close(test:get(1)[1]:float():div(255):unsqueeze(1), s[1], 0)
  end)
end)

describe("where the data sets are found", function()
  local F
  setup(function() F = real_facts() end)

  -- a root with the four files decompressed (plain IDX), the labels
  -- possibly replaced
  local function plain_root(name, labels)
    local dir = tmp .. "/" .. name
    assert(sh("mkdir -p " .. R.quote(dir)))
    for _, b in ipairs({ "train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte",
      "t10k-labels-idx1-ubyte" }) do
      assert(sh(("gzip -dc %s/%s.gz > %s/%s"):format(FMNIST, b, R.quote(dir), b)))
    end
    if labels then
      local f = assert(io.open(dir .. "/t10k-labels-idx1-ubyte", "wb"))
      f:write(labels)
      f:close()
    end
    return dir
  end

  it("reads plain (not gzipped) files from root", function()
    local ds = tv.datasets.FashionMNIST({ root = plain_root("plain"), train = false })
    assert.are.equal(10000, #ds)
    assert.are.equal(F.t10k.first_label + 1, ds:get(1)[2])
  end)

  it("reads torchvision's layout root/FashionMNIST/raw, and $GSHELL_DATA/fashion-mnist", function()
    local root = tmp .. "/tvroot"
    assert(sh("mkdir -p " .. R.quote(root .. "/FashionMNIST/raw")))
    assert(sh(("cp %s/t10k-* %s/FashionMNIST/raw/"):format(FMNIST, R.quote(root))))
    local ds = tv.datasets.FashionMNIST({ root = root, train = false })
    assert.are.equal(root .. "/FashionMNIST/raw", ds.root)
    -- $GSHELL_DATA in a fresh gshell (the environment of this process is fixed)
    local data_dir = tmp .. "/gsdata"
    assert(sh("mkdir -p " .. R.quote(data_dir) .. " && ln -sfn " .. R.quote(plain_root("plain")) .. " "
      .. R.quote(data_dir .. "/fashion-mnist")))
    local out, err, code = R.run({ "-e", "local ds = torchvision.datasets.FashionMNIST({train = false}) "
      .. "print(ds.root, #ds, ds:get(1)[2])" }, "", { GSHELL_DATA = data_dir, GSHELL_CACHE = "none" })
    assert.are.equal(0, code, err)
    assert.are.equal(data_dir .. "/fashion-mnist\t10000\t" .. (F.t10k.first_label + 1) .. "\n", out)
  end)

  it("names the package and the four files when they are missing; refuses download", function()
    H.errors(function() tv.datasets.FashionMNIST({ root = tmp .. "/nowhere" }) end,
      { "FashionMNIST: train-images-idx3-ubyte.gz", "not found in root '" .. tmp .. "/nowhere'",
        "dataset-fashion-mnist", "train-images-idx3-ubyte, train-labels-idx1-ubyte, t10k-images-idx3-ubyte, "
        .. "t10k-labels-idx1-ubyte", "nothing is downloaded" })
    H.errors(function() tv.datasets.MNIST({ root = tmp .. "/nowhere" }) end,
      { "MNIST: train-images-idx3-ubyte.gz", "Debian packages no MNIST" })
    H.errors(function() tv.datasets.FashionMNIST({ download = true }) end, "download is not supported")
    H.errors(function() tv.datasets.FashionMNIST({ roots = "/x" }) end, "roots")
    H.errors(function() tv.datasets.FashionMNIST({ transform = 3 }) end, "transform must be a transform")
  end)

  it("refuses files that do not belong together, and labels out of range", function()
    -- 5 labels for 10000 images
    local dir = plain_root("short", idx({ 5 }, string.char(1, 2, 3, 4, 5)))
    H.errors(function() tv.datasets.FashionMNIST({ root = dir, train = false }) end,
      { "holds 10000 images", "holds 5 labels" })
    dir = plain_root("badlabel", idx({ 10000 }, string.rep("\10", 10000)))
    H.errors(function() tv.datasets.FashionMNIST({ root = dir, train = false }) end,
      { "holds a label 10", "expected 0 to 9" })
    -- an images file where the labels should be
    dir = plain_root("swapped")
    assert(sh(("cp %s/t10k-images-idx3-ubyte %s/t10k-labels-idx1-ubyte"):format(R.quote(dir), R.quote(dir))))
    H.errors(function() tv.datasets.FashionMNIST({ root = dir, train = false }) end,
      { "t10k-labels-idx1-ubyte", "expected an IDX labels file (1 dims", "got 3 dims" })
  end)

  it("require('torchvision') works in stock lua5.4 before require('torch'), and is one module", function()
    local out = H.run_lua([[
      local tv = require("torchvision")
      local torch = require("torch")
      print(tv == require("torchvision"), tv.datasets.FashionMNIST({train = false}):get(1)[2], torch.is_tensor(tv.datasets.FashionMNIST({train = false}).data))
    ]])
    assert.are.equal("true\t" .. (F.t10k.first_label + 1) .. "\ttrue\n", out)
  end)

  it("is a global in gshell, and `import torchvision` gets a note saying so", function()
    local out, err, code = R.run({ "-e", "print(torchvision == require('torchvision'), "
      .. "require('gshell.hints').python_import('from torchvision import transforms'))" }, "", { GSHELL_CACHE = "none" })
    assert.are.equal(0, code, err)
    assert.matches("^true\ttorchvision is already loaded in gshell as a global", out)
    assert.matches("nothing to import\ttrue\n$", out)
  end)

  it("MNIST reads the same format from its root", function()
    local ds = tv.datasets.MNIST({ root = plain_root("plain"), train = false })
    assert.are.equal(10000, #ds)
    assert.are.equal("0 - zero", ds.classes[1])
  end)
end)

-- ------------------------------------------------------------- transforms

local function u8(list) return torch.tensor(list, { dtype = torch.uint8 }) end

describe("torchvision.transforms against torchvision's numbers", function()
  it("ToTensor: uint8 HxW to float32 1xHxW divided by 255, bit for bit", function()
    local y = T.ToTensor()(u8(G.img))
    assert.are.equal(torch.float32, y.dtype)
    assert.are.same(G.to_tensor, y:tolist())
    -- HxWxC becomes CxHxW; a batch gains its channel dim after the batch dim
    local hwc = u8(G.img):unsqueeze(3):expand(5, 7, 3):contiguous()
    assert.are.same({ 3, 5, 7 }, H.shape(T.ToTensor()(hwc)))
    assert.are.same({ 4, 1, 5, 7 }, H.shape(T.ToTensor():batch(u8(G.img):expand(4, 5, 7))))
    H.errors(function() T.ToTensor()(torch.ones(2, 2, 2, 2)) end, "ToTensor: expected an image HxW or HxWxC")
  end)

  it("Resize: bilinear (align_corners=False) on uint8 and float images, up and down", function()
    local img = u8(G.img)
    local r = T.Resize({ 11, 13 })(img)
    assert.are.equal(torch.uint8, r.dtype)
    assert.are.same(G.resize_u8_11x13, r:tolist())
    local f = T.ToTensor()(img)
    local rf = T.Resize({ 11, 13 })(f)
    assert.are.same({ 1, 11, 13 }, H.shape(rf))
    assert.are.same(G.resize_f32_11x13, rf[1]:tolist())
    assert.are.same(G.resize_f32_3x4, T.Resize({ 3, 4 })(f)[1]:tolist())
    -- an integer size is the shorter side: 5 x 7 -> 9 x 12
    local s = T.Resize(9)(img)
    assert.are.same({ 9, 12 }, H.shape(s))
    assert.are.same(G.resize_u8_short9, s:tolist())
    close(G.resize_f64_8x10, T.Resize({ 8, 10 })(f:double())[1], 1e-15)
    -- three channels: PyTorch rounds these through another kernel
    local rgb = u8(G.rgb)
    assert.are.same(G.resize_rgb_u8_11x13, T.Resize({ 11, 13 })(rgb):tolist())
    assert.are.same(G.resize_rgb_f32_11x13, T.Resize({ 11, 13 })(rgb:float():div(255)):tolist())
    -- a batch of them, and a batch of gray images, give each image's result
    local b = T.Resize({ 11, 13 }):batch(torch.stack({ rgb, rgb }))
    assert.are.same(G.resize_rgb_u8_11x13, b[2]:tolist())
    local g = T.Resize({ 11, 13 }):batch(torch.stack({ img, img, img }))
    assert.are.same(G.resize_u8_11x13, g[3]:tolist())
  end)

  it("Resize(96) then ToTensor on the first Fashion-MNIST image, as the book's loader does", function()
    local x = tv.datasets.FashionMNIST({ train = true }):get(1)[1]
    local y = T.ToTensor()(T.Resize(96)(x)):double():flatten()
    assert.are.same({ 9216 }, H.shape(y))
    local w = (torch.arange(0, 9216, { dtype = torch.int64 }) % 97 + 1):double()
    assert.are.near(G.fmnist1_resize96_checksum, (y * w):sum():item(), 1e-6)
    for k, at in ipairs({ 0, 1234, 4660, 9215 }) do assert.are.equal(G.fmnist1_resize96_at[k], y[at + 1]:item()) end
  end)

  it("Resize refuses bad sizes and images", function()
    H.errors(function() T.Resize(0) end, "Resize: size must be a positive integer")
    H.errors(function() T.Resize({ 2, 3, 4 }) end, "Resize: size must be")
    H.errors(function() T.Resize(2.5) end, "Resize: size must be")
    H.errors(function() T.Resize(4)(torch.ones(3)) end, "expected an image (..., H, W)")
    H.errors(function() T.Resize(4)(torch.ones(3, 3, { dtype = torch.int32 })) end, "expected a uint8, float32 or float64")
    H.errors(function() T.Resize(4)(torch.ones(0, 3)) end, "the input image is empty")
  end)

  it("Normalize: (x - mean) / std per channel", function()
    local y = T.Normalize({ 0.5, 0.25 }, { 0.2, 0.3 })(torch.tensor(G.norm_in))
    close(G.norm_out, y, 1e-6)
    -- the batch form gives the same per image
    local b = T.Normalize({ 0.5, 0.25 }, { 0.2, 0.3 }):batch(torch.tensor(G.norm_in):unsqueeze(1):expand(3, 2, 5, 7))
    close(G.norm_out, b[3], 1e-6)
    H.errors(function() T.Normalize({ 0.5 }, { 0 }) end, "std[1] is 0")
    H.errors(function() T.Normalize({ 0.5, 0.5, 0.5 }, { 1, 1 }) end, "mean has 3 values and std 2")
    H.errors(function() T.Normalize(0.5, 1)(u8(G.img):unsqueeze(1)) end, "expected a float image (apply ToTensor first)")
    H.errors(function() T.Normalize({ 0.5, 0.5, 0.5 }, 1)(torch.ones(2, 4, 4)) end,
      "the image has 2 channels, mean and std have 3 values")
  end)

  it("Compose chains transforms, and tells whether they can work on a batch", function()
    local c = T.Compose({ T.Resize(14), T.ToTensor(), T.Normalize(0.5, 0.5) })
    local y = c(u8(G.img))
    close(T.Normalize(0.5, 0.5)(T.ToTensor()(T.Resize(14)(u8(G.img)))), y, 0)
    assert.is_true(tv.transforms.batchable(c))
    assert.is_false(tv.transforms.batchable(T.Compose({ T.ToTensor(), function(x) return x end })))
    H.errors(function() T.Compose({ T.ToTensor(), 5 }) end, "item 2 is not a transform")
    assert.matches("Resize%(size=14", tostring(c))
  end)
end)

-- ------------------------------------------------------------- DataLoader

describe("DataLoader over FashionMNIST", function()
  local ds
  setup(function() ds = tv.datasets.FashionMNIST({ train = true, transform = T.ToTensor() }) end)
  -- the next spec files start without this file's data sets in memory
  teardown(function() ds = nil; collectgarbage(); collectgarbage() end)

  it("has #loader batches with the right shapes, and drop_last", function()
    local loader = DataLoader(ds, { batch_size = 256 })
    assert.are.equal(235, #loader)
    local n, last = 0, nil
    for i, X, y in loader:enumerate() do
      assert.are.equal(n + 1, i)
      n = i
      if i == 1 then
        assert.are.same({ 256, 1, 28, 28 }, H.shape(X))
        assert.are.equal(torch.float32, X.dtype)
        assert.are.same({ 256 }, H.shape(y))
        assert.are.equal(torch.int64, y.dtype)
        assert.are.equal(10, y[1]:item())
      end
      last = X
    end
    assert.are.equal(235, n)
    assert.are.same({ 96, 1, 28, 28 }, H.shape(last)) -- 60000 - 234 * 256
    local dl = DataLoader(ds, { batch_size = 256, drop_last = true })
    assert.are.equal(234, #dl)
    local count = 0
    for _, X in dl:enumerate() do count = count + 1; assert.are.equal(256, X:size(1)) end
    assert.are.equal(234, count)
  end)

  it("shuffles with torch.manual_seed: the order is torch.randperm's", function()
    local loader = DataLoader(ds, { batch_size = 100, shuffle = true })
    torch.manual_seed(7)
    local perm = torch.randperm(60000)
    torch.manual_seed(7)
    local _, X, y = loader:enumerate()()
    local want = perm:narrow(1, 1, 100)
    assert.are.same(ds.targets:index_select(1, want):tolist(), y:tolist())
    close(ds.data:index_select(1, want):float():div(255):unsqueeze(2), X, 0)
    torch.manual_seed(7)
    local _, _, y2 = loader:enumerate()()
    assert.are.same(y:tolist(), y2:tolist())
    torch.manual_seed(8)
    local _, _, y3 = loader:enumerate()()
    assert.are_not.same(y:tolist(), y3:tolist())
  end)

  it("builds the batch with whole-batch operations equal to the samples one by one", function()
    local tr = T.Compose({ T.Resize(32), T.ToTensor(), T.Normalize({ 0.286 }, { 0.353 }) })
    local d = tv.datasets.FashionMNIST({ train = false, transform = tr })
    local idx = { 5, 1, 9999, 42 }
    local b = d:get_batch(idx)
    assert.are.same({ 4, 1, 32, 32 }, H.shape(b[1]))
    for k, i in ipairs(idx) do
      local s = d:get(i)
      close(s[1], b[1][k], 0)
      assert.are.equal(s[2], b[2][k]:item())
    end
    -- a transform that is a plain function: sample by sample, same result
    local f = tv.datasets.FashionMNIST({ train = false, transform = function(x) return tr(x) end })
    local fb = DataLoader(f, { batch_size = 4, sampler = idx }):iter()()
    close(b[1], fb[1], 0)
    assert.are.same(b[2]:tolist(), fb[2]:tolist())
  end)

  it("with pin_memory gives pinned batches that copy to a simulated GPU without blocking", function()
    assert.is_true(H.gpus(1))
    local ok, e = pcall(function()
      local d = tv.datasets.FashionMNIST({ train = false, transform = T.ToTensor() })
      local loader = DataLoader(d, { batch_size = 512, pin_memory = true, num_workers = 2 })
      local seen = 0
      for i, X, y in loader:enumerate() do
        assert.is_true(X:is_pinned())
        assert.is_true(y:is_pinned())
        torch.cuda.set_sync_debug_mode("error") -- a copy that makes the host wait would raise
        local Xd = X:to("cuda:0", { non_blocking = true })
        local yd = y:cuda(0, { non_blocking = true })
        torch.cuda.set_sync_debug_mode("default")
        assert.are.equal("cuda", Xd.device.type)
        if i == 1 then
          close(X, Xd:cpu(), 0)
          assert.are.same(y:tolist(), yd:cpu():tolist())
        end
        seen = seen + yd:size(1)
      end
      assert.are.equal(10000, seen)
    end)
    torch.cuda.set_sync_debug_mode("default")
    H.release_gpus()
    assert(ok, e)
  end)

  it("checks num_workers", function()
    H.errors(function() DataLoader(ds, { num_workers = -1 }) end, "num_workers option should be a non-negative integer")
  end)
end)
