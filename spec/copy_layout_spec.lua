-- Copies between different memory orders: a transposed or permuted view
-- made contiguous (src/backend/cpu/cpu_copy.c copies these in 8x8 tiles, on the cpu
-- device and inside the simulated GPUs' kernels). Every element is
-- checked against its index worked out here: the source is arange(n) % 200
-- viewed as `shape`, so the element at a multi-index is its row-major
-- position in `shape`, mod 200.
local torch = require("torch")

-- the row-major position of multi-index idx (1-based) in shape
local function position(shape, idx)
  local p = 0
  for d = 1, #shape do p = p * shape[d] + (idx[d] - 1) end
  return p
end

-- the values of x (shape `shape`, filled as above) permuted by perm, row-major
local function expected_permuted(shape, perm)
  local out_shape = {}
  for d, k in ipairs(perm) do out_shape[d] = shape[k] end
  local out, idx, src = {}, {}, {}
  for d = 1, #out_shape do idx[d] = 1 end
  local n = 1
  for _, s in ipairs(out_shape) do n = n * s end
  for _ = 1, n do
    for d, k in ipairs(perm) do src[k] = idx[d] end
    out[#out + 1] = position(shape, src) % 200
    for d = #out_shape, 1, -1 do -- odometer, last dim fastest
      idx[d] = idx[d] + 1
      if idx[d] <= out_shape[d] then break end
      idx[d] = 1
    end
  end
  return out
end

local function filled(shape, dtype, device)
  local n = 1
  for _, s in ipairs(shape) do n = n * s end
  return (torch.arange(n, { dtype = torch.float64 }) % 200):to(device):to(dtype):view(table.unpack(shape))
end

local function values(t) return t:contiguous():view(-1):to("cpu"):to(torch.float64):tolist() end

local dtypes = { "uint8", "float16", "float32", "float64", "int64" } -- elements of 1, 2, 4 and 8 bytes
local cases = {
  { shape = { 37, 45 }, perm = { 2, 1 } },           -- not multiples of the tile
  { shape = { 64, 128 }, perm = { 2, 1 } },          -- rows a power of two apart
  { shape = { 8, 9 }, perm = { 2, 1 } },
  { shape = { 3, 19, 33 }, perm = { 1, 3, 2 } },     -- a batch walked around the tiles
  { shape = { 2, 3, 24, 30 }, perm = { 2, 1, 4, 3 } }, -- two batch dims that do not merge
  { shape = { 3, 19, 33 }, perm = { 3, 2, 1 } },     -- inner runs shorter than a tile
  { shape = { 5, 40, 17 }, perm = { 2, 3, 1 } },
  { shape = { 2, 3, 24, 30 }, perm = { 1, 4, 3, 2 } },
}

for _, dev in ipairs({ "cpu", "cuda:0" }) do
  describe("copying a permuted view to contiguous memory on " .. dev, function()
    local saved_n, saved_cap
    setup(function()
      if dev ~= "cpu" then saved_n, saved_cap = torch._sim_configure(1) end
    end)
    teardown(function()
      collectgarbage()
      if dev ~= "cpu" then torch._sim_configure(saved_n, saved_cap) end
    end)

    for _, dt in ipairs(dtypes) do
      it("keeps every element of each permutation, " .. dt, function()
        for _, c in ipairs(cases) do
          local what = ("shape {%s} permuted {%s}"):format(table.concat(c.shape, ","), table.concat(c.perm, ","))
          local x = filled(c.shape, torch[dt], dev)
          local p = x:permute(table.unpack(c.perm))
          local y = p:contiguous()
          assert.is_true(y:is_contiguous())
          local want = expected_permuted(c.shape, c.perm)
          assert.are.same(want, values(y), what)
          -- copied into the front of a larger buffer: nothing written past the end
          local guard = torch.full({ #want + 64 }, 250, { dtype = torch[dt], device = dev })
          guard:narrow(1, 1, #want):view(table.unpack(p:size())):copy_(p)
          assert.are.same(want, values(guard:narrow(1, 1, #want)), what)
          for _, v in ipairs(values(guard:narrow(1, #want + 1, 64))) do assert.are.equal(250, v, what) end
        end
      end)
    end

    it("copies from a narrowed, transposed source into a transposed destination", function()
      local x = filled({ 40, 50 }, torch.float32, dev)
      local src = x:narrow(2, 4, 40):t()          -- 40 x 40, strides (1, 50), offset 3
      local dst = torch.zeros(40, 40, { device = dev })
      dst:copy_(src)
      local want = {}
      for i = 1, 40 do for j = 1, 40 do want[#want + 1] = ((j - 1) * 50 + (i + 2)) % 200 end end
      assert.are.same(want, values(dst))
      -- and into a transposed view of a fresh tensor (the destination strided)
      local d2 = torch.zeros(40, 40, { device = dev })
      d2:t():copy_(src)
      local want2 = {}
      for i = 1, 40 do for j = 1, 40 do want2[#want2 + 1] = ((i - 1) * 50 + (j + 2)) % 200 end end
      assert.are.same(want2, values(d2))
    end)

    it("leaves the source as it was", function()
      local x = filled({ 33, 47 }, torch.float64, dev)
      local before = values(x)
      local _ = x:t():contiguous()
      assert.are.same(before, values(x))
    end)
  end)
end
