-- Cases found by the API fuzzer (fuzz/api.lua, `make fuzz-api`), each
-- reduced to its reproducer once fixed. The seed and case that found it
-- are named; the fuzzer's oracle is restated as the assertion: a clear
-- error naming the function and what was expected, never a raw Lua
-- error from inside the library, and nothing the user had is changed.
local torch = require("torch")
local H = require("helpers")
local nn = torch.nn

-- the raw errors the oracle refuses
local function no_internal(msg)
  for _, raw in ipairs({"attempt to index", "attempt to call", "attempt to compare", "attempt to perform"}) do
    assert.is_nil(msg:find(raw, 1, true), "raw Lua error: " .. msg)
  end
end

describe("options tables of the Lua library are checked (fuzz seed 1, cases 8, 18, 20)", function()
  local function errors(fn, needles)
    no_internal(H.errors(fn, needles))
  end

  it("nn.Module methods", function()
    local m = nn.Linear(2, 3)
    errors(function() return m:named_buffers(true, -2) end, {"named_buffers", "options table", "boolean"})
    errors(function() return m:named_parameters(5) end, {"named_parameters", "options table", "number"})
    errors(function() return m:state_dict(1, {1}) end, {"state_dict", "options table", "number"})
    errors(function() return m:_apply(1.5) end, {"_apply", "expected a function", "number"})
    -- the table forms still work
    assert.are.equal(2, #m:state_dict({prefix = "p."}).__keys)
  end)

  it("nn.init, optimizers, DataLoader and DataParallel", function()
    local w = torch.empty(3, 2)
    errors(function() nn.init.kaiming_normal_(w, 3) end, {"kaiming_normal_", "options table", "number"})
    errors(function() nn.init.kaiming_uniform_(w, "fan_in") end, {"kaiming_uniform_", "options table", "string"})
    local params = nn.Linear(2, 2):parameters()
    errors(function() torch.optim.SGD(params, 0.1) end, {"SGD", "options table", "number"})
    errors(function() torch.optim.Adam(params, true) end, {"Adam", "options table", "boolean"})
    local ds = torch.utils.data.TensorDataset(torch.zeros(4, 2), torch.zeros(4))
    errors(function() torch.utils.data.DataLoader(ds, "shuffle") end, {"DataLoader", "options table", "string"})
    errors(function() nn.DataParallel(nn.Linear(2, 2), 1) end, {"nn.DataParallel", "options table", "the number 1"})
  end)

  it("torch.try_gpu takes a GPU ordinal", function()
    -- (issue 14) the message names what it got: a tensor, not "userdata"
    errors(function() torch.try_gpu(torch.zeros(2)) end,
      "torch.try_gpu(i): expected a GPU ordinal, an integer >= 0 such as 0 or 1, " ..
      "got a tensor (torch.FloatTensor of size 2) (a tensor's device is x.device)")
    errors(function() torch.try_gpu(-1) end, {"try_gpu", "got the number -1"})
    errors(function() torch.try_gpu(0.5) end, {"try_gpu", "got the number 0.5"})
    errors(function() torch.try_gpu("cuda:0") end, {"try_gpu", 'got the string "cuda:0"'})
    assert.are.equal("cpu", torch.try_gpu(63).type)
  end)
end)

describe("optimizer load_state_dict checks what it loads (fuzz seed 2, case 5)", function()
  local function make()
    local m = torch.nn.Linear(2, 1)
    local opt = torch.optim.Adam(m:parameters(), {lr = 0.01})
    opt:zero_grad()
    m(torch.ones(3, 2)):sum():backward()
    opt:step()
    return opt
  end

  it("a malformed group, setting or state entry is a clear error, and the optimizer is unchanged", function()
    local opt = make()
    local before = opt:state_dict()
    for _, bad in ipairs({
      {edit = function(sd) sd.param_groups[1] = 3 end, says = {"param_groups[1]", "number"}},
      {edit = function(sd) sd.param_groups[1].lr = "fast" end, says = {"param_groups[1].lr", "number", "string"}},
      {edit = function(sd) sd.state = 5 end, says = {"`state` must be a table"}},
      {edit = function(sd) sd.state[1] = "x" end, says = {"state[1]", "table"}},
      {edit = function(sd) sd.state[1].step = "one" end, says = {"state[1].step", "string"}},
    }) do
      local sd = opt:state_dict()
      bad.edit(sd)
      no_internal(H.errors(function() opt:load_state_dict(sd) end, bad.says))
      assert.are.equal(before.param_groups[1].lr, opt:state_dict().param_groups[1].lr)
      assert.are.equal(before.state[1].step, opt:state_dict().state[1].step)
    end
  end)
end)

describe("module and init arguments are checked (fuzz seed 3, cases 69-160)", function()
  it("apply, ModuleList, Flatten and xavier gains name what they expected", function()
    local m = nn.Sequential(nn.Linear(2, 2))
    no_internal(H.errors(function() m:apply({}) end, {"apply", "expected a function", "table"}))
    no_internal(H.errors(function() nn.ModuleList(5) end, {"nn.ModuleList", "list of modules", "number"}))
    no_internal(H.errors(function() nn.Flatten(torch.zeros(1)) end, {"nn.Flatten", "start_dim", "integer"}))
    no_internal(H.errors(function() nn.init.xavier_uniform_(torch.empty(3, 3), {3, 4}) end,
      {"xavier_uniform_", "gain must be a number", "table"}))
    no_internal(H.errors(function() nn.init.xavier_normal_(torch.empty(3, 3), "2") end, {"xavier_normal_", "string"}))
    local visited = 0
    m:apply(function() visited = visited + 1 end)
    assert.are.equal(2, visited)
  end)

  it("sizes and numeric options read from tables name what must be an integer", function()
    local x = torch.zeros(2, 3)
    no_internal(H.errors(function() return x:view({1.5, 4}) end, {"view/reshape: a size must be an integer", "1.5"}))
    no_internal(H.errors(function() return x:expand({2, "3"}) end, {"expand: a size must be an integer", "string"}))
    no_internal(H.errors(function() return x:split({1, 0.5}) end, {"split: a size must be an integer", "0.5"}))
    no_internal(H.errors(function() return x:std({correction = 0.5}) end, {"correction must be an integer", "0.5"}))
    no_internal(H.errors(function() return x:allclose(x, {rtol = "big"}) end, {"rtol must be a number", "string"}))
  end)
end)

describe("Adam betas and named_modules prefix (fuzz seed 4, cases 82 and 264)", function()
  it("are checked with clear errors", function()
    local params = nn.Linear(2, 2):parameters()
    no_internal(H.errors(function() torch.optim.Adam(params, {betas = 0.9}) end, {"betas must be a pair", "number"}))
    no_internal(H.errors(function() nn.Linear(1, 1):named_modules({}) end, {"named_modules", "prefix", "table"}))
    local names = {}
    for name in nn.Sequential(nn.ReLU()):named_modules("net") do names[#names + 1] = name end
    assert.are.same({"net", "net.1"}, names)
  end)
end)

describe("fuzz seed 1 under the sanitizers (cases 30, 81, 88)", function()
  it("index_select of empty rows copies nothing (no memcpy from a NULL buffer)", function()
    local x = torch.zeros(3, 0)
    H.check(x:index_select(1, torch.tensor({1, 3})), "float32", {2, 0})
    H.errors(function() return x:index_select(1, torch.tensor({4})) end, "index 4 is out of bounds")
  end)

  it("torch.cuda.device(dev, fn) and state_dict's prefix check their types", function()
    local saved_n, saved_cap = torch._sim_configure(1)
    finally(function() collectgarbage(); torch._sim_configure(saved_n, saved_cap) end)
    no_internal(H.errors(function() torch.cuda.device("cuda:0", {2}) end, {"expected a function", "table"}))
    no_internal(H.errors(function() nn.Linear(1, 1):state_dict({prefix = {}}) end, {"state_dict", "prefix", "table"}))
  end)
end)

describe("fuzz seed 1, 60 s under the sanitizers (cases 735 and 3205)", function()
  it("DataParallel's device_ids must be a list; cuda() names a non-device argument", function()
    local saved_n, saved_cap = torch._sim_configure(2)
    finally(function() collectgarbage(); torch._sim_configure(saved_n, saved_cap) end)
    no_internal(H.errors(function() nn.DataParallel(nn.Linear(1, 1), {device_ids = 0}) end,
      {"device_ids must be a list", "number"}))
    local err = H.errors(function() return torch.zeros(2):cuda(torch.device("cpu")) end,
      {"cuda(): expected a CUDA device, got ", "cpu"})
    assert.is_nil(err:find("(null)", 1, true), err)
  end)
end)

describe("named_parameters prefix and Module:to dtype (fuzz seed 1, cases 3032 and 3556)", function()
  it("are checked with clear errors", function()
    local m = nn.Linear(1, 1)
    no_internal(H.errors(function() m:named_parameters({prefix = {}}) end, {"parameters", "prefix", "table"}))
    no_internal(H.errors(function() m:named_buffers({prefix = 5}) end, {"buffers", "prefix", "number"}))
    no_internal(H.errors(function() m:to({dtype = 5}) end, {"Module:to", "torch.dtype", "number"}))
    local names = {}
    for name in m:named_parameters({prefix = "lin"}) do names[#names + 1] = name end
    table.sort(names)
    assert.are.same({"lin.bias", "lin.weight"}, names)
    assert.are.equal(torch.float64, m:to({dtype = torch.float64}).weight.dtype)
  end)
end)

describe("an empty result of a refused gather on a simulated GPU (fuzz seed 99991, case 20870)", function()
  -- the output [1, 0] has no memory; zeroing it was memset(NULL, 0, 0),
  -- undefined behaviour that UBSan reports (run under the sanitizers)
  local saved_n, saved_cap
  setup(function() collectgarbage(); saved_n, saved_cap = torch._sim_configure(2) end)
  teardown(function() collectgarbage(); torch._sim_configure(saved_n, saved_cap) end)
  it("reports the bad index at the next synchronisation, and nothing else", function()
    local x = torch.zeros(3, 0, { device = "cuda:0" })
    local y = x:index_select(1, torch.tensor({ 7 }, { device = "cuda:0" }))
    assert.are.same({ 1, 0 }, y:size())
    no_internal(H.errors(function() torch.cuda.synchronize() end,
      { "index_select on cuda:0", "index 7 is out of bounds for dimension 1 with size 3" }))
    torch.cuda.synchronize() -- reported once
  end)
end)
