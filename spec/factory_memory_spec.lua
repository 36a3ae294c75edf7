-- Factories check the destination before building (issue 14): randperm and
-- linspace allocate their result on its device first, so a request beyond
-- the device's memory cap is a clean error before any host memory is
-- used; randperm honours dtype. Fill values a dtype cannot hold raise as in
-- PyTorch, and random fills refuse an infinite range.
local torch = require("torch")
local H = require("helpers")

local MiB = 1 << 20

describe("randperm and linspace on a capped device", function()
  local saved_n, saved_cap
  setup(function() collectgarbage(); saved_n, saved_cap = torch._sim_configure(1, 64 * MiB) end)
  teardown(function() collectgarbage(); collectgarbage(); torch._sim_configure(saved_n, saved_cap) end)

  it("refuse 2^31 elements on a 64 MiB device at once, without building them on the host", function()
    local rss0 = H.rss_kib()
    local t0 = os.clock()
    H.errors(function() torch.randperm(1 << 31, { device = "cuda:0" }) end, "out of memory")
    H.errors(function() torch.linspace(0, 1, 1 << 31, { device = "cuda:0" }) end, "out of memory")
    assert.is_true(os.clock() - t0 < 5, "the refusal took " .. (os.clock() - t0) .. " s")
    if rss0 and not H.UNDER_ASAN then assert.is_true(H.rss_kib() - rss0 < 256 * 1024, "host memory grew") end
  end)

  it("build a permutation and a range on the device", function()
    local p = torch.randperm(1000, { device = "cuda:0" })
    assert.are.equal("cuda", p.device.type)
    assert.are.equal(0, p.device.index)
    assert.are.equal("int64", p.dtype.name)
    local seen = {}
    for _, v in ipairs(p:cpu():tolist()) do seen[v] = (seen[v] or 0) + 1 end
    for v = 1, 1000 do assert.are.equal(1, seen[v], "value " .. v) end
    local l = torch.linspace(-1, 1, 5, { device = "cuda:0", dtype = torch.float64 })
    assert.are.same({ -1.0, -0.5, 0.0, 0.5, 1.0 }, l:cpu():tolist())
  end)
end)

describe("randperm", function()
  it("honours dtype", function()
    for _, dt in ipairs({ torch.float32, torch.float64, torch.int32, torch.int16, torch.int8, torch.uint8 }) do
      local p = torch.randperm(100, { dtype = dt })
      assert.are.equal(dt.name, p.dtype.name)
      local sorted = p:tolist()
      table.sort(sorted)
      for i = 1, 100 do assert.are.equal(i, math.tointeger(sorted[i]) or sorted[i]) end
    end
  end)

  it("refuses a dtype that cannot hold every value exactly", function()
    H.errors(function() torch.randperm(200, { dtype = torch.int8 }) end, { "randperm", "int8", "at most 127" })
    H.errors(function() torch.randperm(3000, { dtype = torch.float16 }) end, { "float16", "at most 2048" })
    H.errors(function() torch.randperm(3, { dtype = torch.bool }) end, "bool")
    assert.are.equal(127, torch.randperm(127, { dtype = torch.int8 }):max():item())
  end)

  it("of math.maxinteger values is a clear error, without signed overflow (fuzz seed 1, case 101)", function()
    local ok, err = pcall(torch.randperm, math.maxinteger)
    assert.is_false(ok)
    assert.matches("too large", err)
    ok, err = pcall(torch.randperm, math.maxinteger, {dtype = torch.int32})
    assert.is_false(ok)
    assert.matches("do not all fit exactly in int32", err)
  end)

  it("torch.tensor and new_tensor refuse a table whose __len claims an impossible length (fuzz seed 1, case 119)", function()
    for _, n in ipairs({ math.maxinteger, -1 }) do
      local t = setmetatable({}, { __len = function() return n end, __index = function() return 1 end })
      H.errors(function() torch.tensor(t) end, { "torch.tensor", "reports length", "expected 0 to 2^32" })
      H.errors(function() torch.zeros(2):new_tensor(t) end, "reports length")
    end
    local ok3 = setmetatable({}, { __len = function() return 3 end, __index = function(_, k) return k end })
    assert.are.same({ 1, 2, 3 }, torch.tensor(ok3):tolist())
  end)

  it("follows manual_seed, and a large one is a permutation", function()
    torch.manual_seed(5)
    local a = torch.randperm(3000000)
    torch.manual_seed(5)
    local b = torch.randperm(3000000)
    assert.is_true(a:equal(b))
    assert.are.equal(3000000 * 3000001 // 2, a:sum():item())
    assert.are.equal(1, a:min():item())
    assert.are.equal(3000000, a:max():item())
  end)
end)

describe("linspace in chunks", function()
  it("matches the two-ended formula across chunk boundaries", function()
    local n = (1 << 20) * 2 + 3
    local l = torch.linspace(0, 1, n, { dtype = torch.float64 })
    local step = 1 / (n - 1)
    for _, i in ipairs({ 0, 1, (1 << 20) - 1, 1 << 20, (1 << 20) + 1, n // 2, n - 2, n - 1 }) do
      local want = i < n // 2 and step * i or 1 - step * (n - 1 - i)
      assert.are.equal(want, l[i + 1]:item(), "element " .. i)
    end
  end)
end)

describe("fill values the dtype cannot hold", function()
  it("raise as in PyTorch for full and fill_", function()
    H.errors(function() torch.full({ 2 }, 300, { dtype = torch.int8 }) end, "value cannot be converted to type int8 without overflow")
    H.errors(function() torch.full({ 2 }, -129, { dtype = torch.int8 }) end, "int8 without overflow")
    H.errors(function() torch.full({ 2 }, -1, { dtype = torch.uint8 }) end, "uint8 without overflow")
    H.errors(function() torch.zeros(2, { dtype = torch.int16 }):fill_(40000) end, "int16 without overflow")
    H.errors(function() torch.zeros(2, { dtype = torch.int32 }):fill_(1e10) end, "int32 without overflow")
    H.errors(function() torch.zeros(2, { dtype = torch.int8 }):fill_(0 / 0) end, "int8 without overflow")
    H.errors(function() torch.zeros(2, { dtype = torch.float16 }):fill_(1e6) end, "float16 without overflow")
    H.errors(function() torch.zeros(2):fill_(1e300) end, "float32 without overflow")
    local x = torch.zeros(2, { dtype = torch.int8 })
    H.errors(function() x:fill_(128) end, "overflow")
    H.errors(function() x[1] = 300 end, "int8 without overflow")
    H.errors(function() torch.zeros_like(x, { dtype = torch.int8 }):fill_(-200) end, "overflow")
    H.errors(function() torch.full_like(x, 1000) end, "int8 without overflow")
    assert.are.same({ 0, 0 }, x:tolist())
  end)

  it("accept the limits, inf and nan in floats, and truncate fractions into integers", function()
    assert.are.same({ 127, 127 }, torch.full({ 2 }, 127, { dtype = torch.int8 }):tolist())
    assert.are.same({ -128 }, torch.full({ 1 }, -128, { dtype = torch.int8 }):tolist())
    assert.are.same({ 255 }, torch.full({ 1 }, 255, { dtype = torch.uint8 }):tolist())
    assert.are.same({ 2 }, torch.full({ 1 }, 2.7, { dtype = torch.int8 }):tolist())
    assert.are.equal(math.huge, torch.zeros(1, { dtype = torch.float16 }):fill_(math.huge):item())
    assert.are.equal(65504.0, torch.zeros(1, { dtype = torch.float16 }):fill_(65504):item())
    assert.is_true(H.isnan(torch.zeros(1):fill_(0 / 0):item()))
    assert.are.equal(math.maxinteger, torch.full({ 1 }, math.maxinteger):item())
  end)
end)

describe("random fills and dropout refuse unusable parameters", function()
  it("uniform_ refuses an infinite range", function()
    H.errors(function() torch.zeros(3):uniform_(-math.huge, math.huge) end, { "uniform_", "finite range" })
    H.errors(function() torch.zeros(3):uniform_(0, math.huge) end, "finite range")
    H.errors(function() torch.zeros(3, { dtype = torch.float64 }):uniform_(-1e308, 1e308) end, "finite range")
  end)

  it("Dropout refuses nan", function()
    H.errors(function() torch.nn.Dropout(0 / 0) end, { "dropout probability has to be between 0 and 1, but got", "nan" })
    H.errors(function() torch.nn.Dropout(1.5) end, "between 0 and 1")
  end)
end)
