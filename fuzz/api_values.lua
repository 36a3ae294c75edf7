-- fuzz/api_values.lua: the argument generator of the API fuzzer
-- (fuzz/api.lua). Every value comes from math.random, seeded per case, so
-- a case replays exactly. Values mix the plausible (small shapes, dims in
-- range, tensors of every dtype on every device, views) with the hostile
-- (math.maxinteger, NaN, wrong types, tables whose metamethods raise or
-- change a tensor while the library reads them).
local torch = require("torch")

local V = {}

local R = math.random
local function pick(list) return list[R(#list)] end
V.pick = pick

V.DTYPES = {torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.int32,
            torch.int16, torch.int8, torch.uint8, torch.bool}
V.FLOAT_DTYPES = {torch.float32, torch.float64, torch.float16, torch.bfloat16}
V.DEVICES = {"cpu"} -- api.lua adds the simulated GPUs

local MAX, MIN = math.maxinteger, math.mininteger
V.EXTREME_INTS = {MAX, MIN, MAX - 1, MIN + 1, 2 ^ 31 // 1, -(2 ^ 31 // 1), 2 ^ 32 // 1, 2 ^ 53 // 1 + 1,
                  2 ^ 62 // 1, -(2 ^ 62 // 1), 4611686018427387904, 65536, 1 << 40}
V.SPECIAL_FLOATS = {0.0, -0.0, 0.5, 1.5, -2.5, 0 / 0, math.huge, -math.huge, 1e308, -1e308, 5e-324, 1e-8,
                    3.4e38, 65504.0, 1e20, 2.0, 1.0}
V.STRINGS = {"", "cpu", "cuda", "cuda:0", "cuda:1", "cuda:7", "cuda:-1", "float32", "int64", "mean", "sum",
             "none", "abc", "x", "weight", "bias", "\0", "cuda:99999999999999999999", "%s%d"}

-- The one marker in errors the fuzzer raises on purpose (from metamethods):
-- such an error may escape a library call unchanged.
V.MARK = "fuzz-raised"

function V.small_int() return R(-3, 6) end
function V.int()
  local r = R()
  if r < 0.7 then return V.small_int() end
  if r < 0.85 then return R(-100, 100) end
  return pick(V.EXTREME_INTS)
end
function V.float()
  if R() < 0.5 then return pick(V.SPECIAL_FLOATS) end
  return (R() - 0.5) * 10
end

-- A shape: mostly small; sometimes an empty dim.
function V.shape(max_ndim)
  local nd = R(0, max_ndim or 3)
  local s = {}
  for i = 1, nd do s[i] = R() < 0.08 and 0 or R(1, 4) end
  return s
end

-- A size argument as a table, including hostile ones.
function V.size_table()
  local r = R()
  if r < 0.75 then return V.shape(3) end
  if r < 0.85 then return {V.int(), V.int()} end
  if r < 0.9 then return {pick(V.EXTREME_INTS)} end
  if r < 0.95 then return {1.5} end
  return {-1, 2}
end

local function fill_values(t)
  local dt = t.dtype
  if dt == torch.bool then return t:copy_(torch.rand(t.shape):lt(0.5)) end
  if dt == torch.uint8 then return t:copy_(torch.randint(0, 6, t.shape)) end
  if dt == torch.float16 or dt == torch.bfloat16 or dt == torch.float32 or dt == torch.float64 then
    t:copy_(torch.randn(t.shape, {dtype = torch.float64}) * 3)
    if R() < 0.1 and t:numel() > 0 then t:view(-1)[1] = pick({0 / 0, math.huge, -math.huge}) end
    return t
  end
  return t:copy_(torch.randint(-5, 6, t.shape))
end

-- A fresh contiguous tensor of any dtype on any device (numel <= 64).
function V.base_tensor(dtype, device)
  dtype = dtype or pick(V.DTYPES)
  local s = V.shape(3)
  local t = torch.empty(s, {dtype = dtype})
  fill_values(t)
  device = device or pick(V.DEVICES)
  if device ~= "cpu" then t = t:to(device) end
  return t
end

-- A view of t: transposed, sliced with a step, expanded, selected, ...
function V.view_of(t)
  local nd = t:dim()
  local r = R(8)
  if nd >= 2 and r == 1 then return t:transpose(1, nd) end
  if nd >= 1 and r == 2 and t:size(1) > 0 then return t[{{1, -1, R(1, 2)}}] end
  if nd >= 1 and r == 3 and t:size(1) > 0 then return t:select(1, R(t:size(1))) end
  if r == 4 then
    local s = {R(1, 3)}
    for i = 1, nd do s[#s + 1] = t:size(i) end
    if nd == 0 or t:size(1) == 1 or R() < 0.5 then return t:unsqueeze(1):expand(s) end
  end
  if nd >= 1 and r == 5 then return t:unsqueeze(R(nd + 1)) end
  if nd >= 2 and r == 6 then
    local p = {}
    for i = 1, nd do p[i] = nd + 1 - i end
    return t:permute(p)
  end
  if nd >= 1 and r == 7 and t:size(1) > 1 then return t:narrow(1, 2, t:size(1) - 1) end
  return t
end

-- A tensor argument: fresh, a view, requiring grad, or a non-leaf.
function V.tensor(dtype, device)
  local t = V.base_tensor(dtype, device)
  local r = R()
  if r < 0.3 then t = V.view_of(t) end
  if t.dtype == torch.float32 or t.dtype == torch.float64 then
    r = R()
    if r < 0.15 then t = t:clone():requires_grad_() -- a leaf
    elseif r < 0.25 then t = t:clone():requires_grad_() * 1 end -- a non-leaf
  end
  return t
end

-- Tables whose metamethods run while the library reads them: raising,
-- or changing `victim` (x.data = y) part-way through. A tensor changed so
-- is noted in V.touched: the oracle does not expect it unchanged.
V.touched = setmetatable({}, {__mode = "k"})
function V.hostile_table(victim)
  local r = R(4)
  if r == 1 then
    return setmetatable({}, {__index = function() error(V.MARK .. ": __index", 0) end,
                             __len = function() return 2 end})
  elseif r == 2 then
    return setmetatable({}, {__len = function() error(V.MARK .. ": __len", 0) end})
  elseif r == 3 and victim then
    return setmetatable({}, {__len = function() return 2 end, __index = function(_, k)
      if k == 2 then V.touched[victim] = true; victim.data = V.base_tensor(victim.dtype, "cpu") end
      return k == 1 and V.small_int() or {1, V.small_int()}
    end})
  end
  return setmetatable({}, {__len = function() return pick({MAX, -1, 3}) end, __index = function() return 1 end})
end

-- Any Lua value, weighted towards what the API takes.
function V.any(pool)
  local r = R()
  if r < 0.3 then return V.int() end
  if r < 0.5 and pool and #pool > 0 then return pick(pool) end
  if r < 0.6 then return V.float() end
  if r < 0.68 then return V.size_table() end
  if r < 0.72 then return pick(V.DTYPES) end
  if r < 0.76 then return pick(V.STRINGS) end
  if r < 0.8 then return R() < 0.5 end
  if r < 0.84 then return nil end
  if r < 0.88 then return V.options(pool) end
  if r < 0.9 then return torch.device(pick(V.DEVICES)) end
  if r < 0.92 then return function() return V.small_int() end end
  if r < 0.95 then return V.hostile_table(pool and #pool > 0 and pick(pool) or nil) end
  if r < 0.97 then return {V.tensor(), V.tensor()} end
  return V.tensor()
end

-- A trailing options table: the keys the API knows, with any values.
local OPTION_KEYS = {"dtype", "device", "requires_grad", "dim", "keepdim", "alpha", "min", "max", "rtol", "atol",
                     "correction", "bias", "lr", "momentum", "weight_decay", "nesterov", "betas", "eps",
                     "map_location", "reduction", "device_ids", "output_device", "set_to_none", "p", "inplace",
                     "batch_size", "shuffle", "drop_last", "unknown_key"}
function V.options(pool)
  local o = {}
  for _ = 1, R(0, 3) do
    local k = pick(OPTION_KEYS)
    local r = R()
    if k == "dtype" and r < 0.7 then o[k] = pick(V.DTYPES)
    elseif k == "device" and r < 0.7 then o[k] = pick(V.DEVICES)
    elseif r < 0.5 then o[k] = V.small_int()
    elseif r < 0.7 then o[k] = V.float()
    elseif r < 0.8 then o[k] = R() < 0.5
    else o[k] = V.any(pool) end
  end
  return o
end

-- n arguments for a call: plausible ones most of the time.
function V.args(pool, n)
  local a = {}
  for i = 1, n do a[i] = V.any(pool) end
  return a
end

return V
