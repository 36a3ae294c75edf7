-- Options tables (keyword arguments): every one in the API is checked by
-- the same helper, so a misspelt key is an error naming the key, the
-- nearest allowed one and all of them, never silently ignored (a
-- `{devcie = 'cuda'}` used to give a CPU tensor).
local torch = require("torch")
local nn, optim = torch.nn, torch.optim

-- The error message of fn(), which must fail.
local function message(fn)
  local ok, err = pcall(fn)
  assert.is_false(ok, "expected an error")
  return tostring(err)
end

local function plain(s) return (s:gsub("%p", "%%%0")) end

-- fn() fails naming `bad`, suggesting `near` (or nothing when near is nil)
-- and listing every key of `allowed`.
local function refuses(fn, where, bad, near, allowed)
  local msg = message(fn)
  assert.truthy(msg:find(plain(where .. ": unknown option '" .. bad .. "'")), msg)
  if near then
    assert.truthy(msg:find(plain("did you mean '" .. near .. "'?")), msg)
  else
    assert.falsy(msg:find("did you mean", 1, true), msg)
  end
  for _, k in ipairs(allowed) do assert.truthy(msg:find(k, 1, true), msg .. " (missing " .. k .. ")") end
end

describe("options tables", function()
  local FACTORY = { "device", "dtype", "requires_grad" }

  it("C factories refuse unknown keys and suggest the nearest", function()
    refuses(function() return torch.ones(2, 3, { devcie = "cpu" }) end, "torch.ones", "devcie", "device", FACTORY)
    refuses(function() return torch.zeros(2, { requires_gard = true }) end, "torch.zeros", "requires_gard", "requires_grad", FACTORY)
    refuses(function() return torch.tensor({ 1, 2 }, { dtyp = torch.float64 }) end, "torch.tensor", "dtyp", "dtype", FACTORY)
    refuses(function() return torch.arange(5, { device = "cpu", colour = 1 }) end, "torch.arange", "colour", nil, FACTORY)
    refuses(function() return torch.randn(2, { devic = "cpu" }) end, "torch.randn", "devic", "device", FACTORY)
    refuses(function() return torch.full({ 2 }, 1.5, { dvice = "cpu" }) end, "torch.full", "dvice", "device", FACTORY)
    refuses(function() return torch.zeros_like(torch.ones(2), { devcie = "cpu" }) end, "torch.zeros_like", "devcie", "device", FACTORY)
  end)

  it("the known keys still work, and a size table is not an options table", function()
    local x = torch.ones(2, 3, { device = "cpu", dtype = torch.float64, requires_grad = true })
    assert.are.equal(torch.float64, x.dtype)
    assert.is_true(x.requires_grad)
    local z = torch.zeros({ 2, 3 })
    assert.are.equal(2, z.shape[1])
    assert.are.equal(3, z.shape[2])
  end)

  it("*_like refuses a positional device or dtype instead of ignoring it", function()
    local x = torch.ones(2)
    local msg = message(function() return torch.ones_like(x, "cuda") end)
    assert.truthy(msg:find("torch.ones_like: a device goes in the options table: torch.ones_like(x, {device = 'cuda'})", 1, true), msg)
    msg = message(function() return torch.zeros_like(x, torch.float64) end)
    assert.truthy(msg:find("{dtype = torch.float64}", 1, true), msg)
    msg = message(function() return torch.full_like(x, 3, "cpu") end)
    assert.truthy(msg:find("torch.full_like(x, value, {device = 'cpu'})", 1, true), msg)
    msg = message(function() return torch.ones_like(x, true) end)
    assert.truthy(msg:find("unexpected argument #2", 1, true), msg)
    assert.are.equal(7, torch.full_like(x, 7)[1]:item())
  end)

  it("tensor methods check theirs", function()
    local x = torch.ones(2, 3)
    refuses(function() return x:to({ devcie = "cpu" }) end, "to", "devcie", "device", { "device", "dtype", "non_blocking" })
    refuses(function() return x:to("cpu", { non_blockin = true }) end, "to", "non_blockin", "non_blocking", { "device" })
    assert.is_true(rawequal(x, x:to("cpu", { non_blocking = true })))
    assert.are.equal(torch.float64, x:to({ dtype = torch.float64 }).dtype)
    refuses(function() return x:sum({ dimm = 1 }) end, "sum", "dimm", "dim", { "dim", "keepdim" })
    refuses(function() return x:mean({ keepdims = true }) end, "mean", "keepdims", "keepdim", { "dim", "keepdim" })
    refuses(function() return x:var({ corection = 0 }) end, "var", "corection", "correction", { "unbiased" })
    refuses(function() return x:clamp({ mn = 0 }) end, "clamp", "mn", "min", { "min", "max" })
    refuses(function() return x:add(x, { alpah = 2 }) end, "add", "alpah", "alpha", { "alpha" })
    refuses(function() return x:allclose(x, { rtl = 1 }) end, "allclose", "rtl", "rtol", { "rtol", "atol" })
    assert.are.equal(12, x:sum({ dim = 1, keepdim = true }):sum():item() * 2)
  end)

  it("nn, optim and data check theirs, at the caller's line", function()
    refuses(function() return nn.Linear(3, 1, { bais = false }) end, "nn.Linear", "bais", "bias", { "bias", "device", "dtype" })
    local msg = message(function() return nn.Linear(3, 1, { bais = false }) end)
    assert.truthy(msg:find("^spec/options_spec%.lua:%d+:"), msg)
    refuses(function() return nn.MSELoss({ reduce = "sum" }) end, "nn.MSELoss", "reduce", nil, { "reduction" })
    refuses(function() return nn.Dropout({ P = 0.1 }) end, "nn.Dropout", "P", nil, { "p", "inplace" })
    local net = nn.Sequential(nn.Linear(2, 1))
    refuses(function() return net:to({ devcie = "cpu" }) end, "to", "devcie", "device", { "device", "dtype" })
    refuses(function() return net:state_dict({ prefx = "a." }) end, "state_dict", "prefx", "prefix", { "keep_vars" })
    refuses(function() return net:load_state_dict(net:state_dict(), { strct = false }) end, "load_state_dict", "strct", "strict", { "strict" })
    refuses(function() return net:zero_grad({ set_to_nan = false }) end, "zero_grad", "set_to_nan", "set_to_none", { "set_to_none" })
    refuses(function() return optim.SGD(net:parameters(), { momentun = 0.9 }) end, "optim.SGD", "momentun", "momentum",
      { "lr", "momentum", "dampening", "weight_decay", "nesterov", "maximize" })
    refuses(function() return optim.Adam(net:parameters(), { beta = { 0.9, 0.99 } }) end, "optim.Adam", "beta", "betas", { "eps" })
    refuses(function() return optim.SGD({ { params = net:parameters(), lrr = 1 } }, { lr = 0.1 }) end,
      "a parameter group of SGD", "lrr", "lr", { "params", "momentum" })
    refuses(function() return nn.DataParallel(net, { device_id = { 0 } }) end, "nn.DataParallel", "device_id", "device_ids",
      { "output_device", "dim" })
    refuses(function() return torch.utils.data.DataLoader({ 1, 2, 3 }, { batchsize = 2 }) end, "DataLoader", "batchsize",
      "batch_size", { "shuffle", "drop_last", "collate_fn" })
    refuses(function() return torch.load("/nonexistent.st", { map_locaton = "cpu" }) end, "torch.load", "map_locaton",
      "map_location", { "map_location" })
  end)

  it("torch._options_error is the shared check (nil when every key is allowed)", function()
    assert.is_nil(torch._options_error({ a = 1 }, "f", { "a", "b" }))
    assert.is_nil(torch._options_error({ 5, 6 }, "f", { "a" })) -- positional values are not keys
    local msg = torch._options_error({ zz = 1, alpah = 2 }, "f", { "alpha", "beta" })
    -- the smallest unknown key is reported, whatever the table's order
    assert.are.equal("f: unknown option 'alpah' (did you mean 'alpha'?); the options are alpha, beta", msg)
    assert.are.equal("f: unknown option 'b'; the only option is a", torch._options_error({ b = 1 }, "f", { "a" }))
    -- a transposition is one edit; a short key is not matched to a distant one
    assert.truthy(torch._options_error({ lr2 = 1 }, "f", { "lr", "eps" }):find("did you mean 'lr'", 1, true))
    assert.falsy(torch._options_error({ xy = 1 }, "f", { "lr", "eps" }):find("did you mean", 1, true))
  end)
end)
