-- torch.linalg: vector_norm, matrix_norm and norm with PyTorch's
-- definitions, built on the engine's elementwise ops and reductions (so
-- they run on any device and carry autograd). Also the small tensor
-- methods exercise solutions use: x:get_device(), x:new_ones(...),
-- new_zeros, new_empty, new_full, new_tensor.
local torch = require("torch")
local errors = require("torch.utils.errors")
local fail, check_options = errors.fail, errors.check_options

local linalg = {}

local function is_options(v)
  if type(v) ~= "table" or getmetatable(v) ~= nil then return false end
  for k in pairs(v) do if type(k) == "string" then return true end end
  return false
end

-- A list of 1-based dims (negatives from the end) as sorted 0..ndim-1
-- positions, refusing repeats and out-of-range values.
local function dims_of(dim, ndim, who)
  local list = type(dim) == "table" and dim or { dim }
  local out, seen = {}, {}
  for _, d in ipairs(list) do
    if math.type(d) ~= "integer" then fail(who .. ": dim must be an integer or a list of them, got " .. tostring(d)) end
    local n = math.max(ndim, 1)
    if d == 0 or d > n or d < -n then
      fail(string.format("%s: Dimension out of range (expected to be in range of [-%d, %d] without 0, but got %d)",
        who, n, n, d))
    end
    local p = d > 0 and d - 1 or d + n
    if seen[p] then fail(who .. ": dim " .. d .. " appears multiple times in the list of dims") end
    seen[p] = true
    out[#out + 1] = p
  end
  table.sort(out)
  return out
end

-- Reduces x over the 0-based dims with op ("sum", "max" or "min"),
-- keeping them as size 1 when keepdim, else removing them.
local function reduce(x, op, dims, keepdim)
  if #dims == 0 then
    if op == "sum" then return x:sum() end
    return x[op](x)
  end
  for i = #dims, 1, -1 do
    local r = x[op](x, dims[i] + 1, true)
    x = r
  end
  if not keepdim then
    for i = #dims, 1, -1 do x = x:squeeze(dims[i] + 1) end
  end
  return x
end

local function check_float(x, who)
  if not torch.is_tensor(x) then fail(who .. ": expected a tensor, got " .. type(x)) end
  if not x:is_floating_point() then
    fail(string.format("%s: Expected a floating point tensor as input. Got %s", who, tostring(x.dtype)))
  end
end

-- Positional (ord, dim, keepdim) or a trailing options table.
local function args_of(who, default_ord, ...)
  local a = table.pack(...)
  local opts = {}
  if a.n > 0 and is_options(a[a.n]) then
    opts = a[a.n]
    check_options(opts, who, { "ord", "dim", "keepdim", "dtype" })
    a[a.n] = nil
    a.n = a.n - 1
  end
  local ord = a[1]
  if ord == nil then ord = opts.ord end
  if ord == nil then ord = default_ord end
  local dim = a[2]
  if dim == nil then dim = opts.dim end
  local keepdim = a[3]
  if keepdim == nil then keepdim = opts.keepdim end
  return ord, dim, keepdim and true or false, opts.dtype
end

-- torch.linalg.vector_norm(x[, ord = 2[, dim[, keepdim]]]) or with
-- {ord =, dim =, keepdim =, dtype =}: sum(|x|^ord)^(1/ord) over dim (all
-- elements when dim is nil); ord = math.huge is max|x|, -math.huge min|x|,
-- 0 the number of non-zeros.
function linalg.vector_norm(x, ...)
  local who = "linalg.vector_norm"
  local ord, dim, keepdim, dtype = args_of(who, 2, ...)
  check_float(x, who)
  if dtype ~= nil then x = x:to(dtype) end
  if type(ord) ~= "number" then fail(who .. ": ord must be a number (math.huge for inf), got " .. tostring(ord)) end
  local dims = dim == nil and {} or dims_of(dim, x:dim(), who)
  if dim == nil and keepdim then
    for i = 0, x:dim() - 1 do dims[#dims + 1] = i end
  end
  local a = x:abs()
  if ord == math.huge then return reduce(a, "max", dims, keepdim) end
  if ord == -math.huge then return reduce(a, "min", dims, keepdim) end
  if ord == 0 then return reduce(a:ne(0):to(x.dtype), "sum", dims, keepdim) end
  if ord == 1 then return reduce(a, "sum", dims, keepdim) end
  if ord == 2 then return reduce(a * a, "sum", dims, keepdim):sqrt() end
  return reduce(a:pow(ord), "sum", dims, keepdim):pow(1 / ord)
end

-- torch.linalg.matrix_norm(A[, ord = 'fro'[, dim = {-2, -1}[, keepdim]]]):
-- 'fro' sqrt(sum |a|^2); 1 / -1 the largest / smallest column sum of |a|;
-- math.huge / -math.huge the largest / smallest row sum. The spectral (2,
-- -2) and nuclear ('nuc') norms need singular values, which gshell lacks.
function linalg.matrix_norm(A, ...)
  local who = "linalg.matrix_norm"
  local ord, dim, keepdim, dtype = args_of(who, "fro", ...)
  check_float(A, who)
  if dtype ~= nil then A = A:to(dtype) end
  if A:dim() < 2 then
    fail(who .. ": The input tensor A must have at least 2 dimensions.")
  end
  dim = dim or { -2, -1 }
  if type(dim) ~= "table" or #dim ~= 2 then fail(who .. ": dim must be a list of 2 dims") end
  local d = dims_of(dim, A:dim(), who)
  -- the row and column dims in the order the user gave them
  local row = dim[1] > 0 and dim[1] - 1 or dim[1] + A:dim()
  local col = dim[2] > 0 and dim[2] - 1 or dim[2] + A:dim()
  local a = A:abs()
  if ord == "fro" then return reduce(a * a, "sum", d, keepdim):sqrt() end
  if ord == "nuc" or ord == 2 or ord == -2 then
    fail(who .. ": ord=" .. tostring(ord) .. " needs singular values (an SVD), which gshell does not have; " ..
      "'fro', 1, -1, math.huge and -math.huge are available")
  end
  local sum_dim, pick_dim
  if ord == 1 or ord == -1 then sum_dim, pick_dim = row, col
  elseif ord == math.huge or ord == -math.huge then sum_dim, pick_dim = col, row
  else
    fail(who .. ": Order " .. tostring(ord) .. " not supported (expected 'fro', 1, -1, math.huge or -math.huge)")
  end
  local sums = a:sum(sum_dim + 1, true)
  local r = sums[ord > 0 and "max" or "min"](sums, pick_dim + 1, true)
  if not keepdim then
    for _, p in ipairs({ math.max(row, col), math.min(row, col) }) do r = r:squeeze(p + 1) end
  end
  return r
end

-- torch.linalg.norm(A[, ord[, dim[, keepdim]]]): PyTorch's dispatch. With
-- dim a number, a vector norm; with a list of two, a matrix norm; with no
-- dim, the 2-norm of all elements when ord is nil, else a vector norm of
-- a 1-D input or a matrix norm of a 2-D one.
function linalg.norm(A, ...)
  local who = "linalg.norm"
  local ord, dim, keepdim, dtype = args_of(who, nil, ...)
  check_float(A, who)
  local opts = { keepdim = keepdim, dtype = dtype }
  if math.type(dim) == "integer" or (type(dim) == "table" and #dim == 1) then
    opts.ord, opts.dim = ord == nil and 2 or ord, dim
    return linalg.vector_norm(A, opts)
  end
  if type(dim) == "table" then
    opts.ord, opts.dim = ord == nil and "fro" or ord, dim
    return linalg.matrix_norm(A, opts)
  end
  if ord == nil then
    opts.ord = 2
    return linalg.vector_norm(A, opts)
  end
  if A:dim() == 1 then opts.ord = ord; return linalg.vector_norm(A, opts) end
  if A:dim() == 2 then opts.ord = ord; return linalg.matrix_norm(A, opts) end
  fail(who .. ": If dim is not specified but ord is, the input must be 1D or 2D. Got " .. A:dim() .. "D.")
end

torch.linalg = linalg

-- ---- tensor methods ------------------------------------------------------

local M = torch._methods

-- x:get_device(): the CUDA ordinal, -1 for a CPU tensor (as PyTorch).
function M.get_device(x)
  local d = x.device
  if d.type == "cpu" then return -1 end
  return d.index
end

-- The size arguments and the options (defaults from x) of a new_* call.
local function new_args(x, who, ...)
  local a = table.pack(...)
  local opts = {}
  if a.n > 0 and is_options(a[a.n]) then
    opts = a[a.n]
    a.n = a.n - 1
  end
  check_options(opts, who, { "dtype", "device", "requires_grad" })
  local full = { dtype = opts.dtype or x.dtype, device = opts.device or x.device, requires_grad = opts.requires_grad }
  return a, full
end

for _, kind in ipairs({ "ones", "zeros", "empty" }) do
  M["new_" .. kind] = function(x, ...)
    local a, opts = new_args(x, "new_" .. kind, ...)
    a[a.n + 1] = opts
    return torch[kind](table.unpack(a, 1, a.n + 1))
  end
end

-- x:new_full(size, value[, opts])
function M.new_full(x, size, value, ...)
  local _, opts = new_args(x, "new_full", ...)
  return torch.full(size, value, opts)
end

-- x:new_tensor(data[, opts]): a copy of data with x's dtype and device.
function M.new_tensor(x, data, ...)
  local _, opts = new_args(x, "new_tensor", ...)
  if torch.is_tensor(data) then
    local r = data:detach():to(opts.device, opts.dtype):clone()
    if opts.requires_grad then r.requires_grad = true end
    return r
  end
  return torch.tensor(data, opts)
end

return linalg
