-- torch.tensor_extra: tensor functions written with the engine's ops, so
-- autograd and every device come with them (issue 31): torch.normal,
-- tile and repeat (registered as the method "repeat", since x:repeat(...)
-- does not parse: x['repeat'](x, 2, 3), or x:tile(2, 3)), torch.where,
-- masked_fill(_), repeat_interleave, triu and tril (triu_, tril_), and
-- boolean-mask indexing
-- (x[mask], x[mask] = v: the C __index/__newindex call the functions this
-- file leaves in the Lua registry).
-- Each is a method and, through init.lua, a torch.<name> function.
local torch = require("torch")
local errors = require("torch.utils.errors")
local fail, describe = errors.fail, errors.describe

local M = torch._methods
local is_tensor = torch.is_tensor

local function shape_str(s)
  local p = {}
  for i = 1, #s do p[i] = tostring(s[i]) end
  return "[" .. table.concat(p, ", ") .. "]"
end

-- Sizes given as numbers (2, 3) or one table ({2, 3}).
local function size_list(who, ...)
  local n = select("#", ...)
  local first = ...
  local list
  if n == 1 and type(first) == "table" and not is_tensor(first) then list = first
  else list = table.pack(...); list.n = nil end
  local r = {}
  -- a tensor has at most 16 dims (GS_MAX_DIMS): a table whose length is
  -- huge (a __len of 2^63) is refused before the loop, not walked
  local n_sizes = #list
  if math.type(n_sizes) ~= "integer" or n_sizes > 16 then
    fail(("%s: at most 16 sizes (a tensor has at most 16 dimensions), got %s"):format(who, describe(n_sizes)))
  end
  for i = 1, n_sizes do
    if math.type(list[i]) ~= "integer" then
      fail(("%s: the sizes must be integers, got %s at position %d"):format(who, describe(list[i]), i))
    end
    r[i] = list[i]
  end
  return r
end

-- PyTorch's broadcasting of two shapes, with its message.
local function broadcast(a, b)
  local n = math.max(#a, #b)
  local r = {}
  for i = 1, n do
    local ia, ib = #a - n + i, #b - n + i
    local x, y = ia >= 1 and a[ia] or 1, ib >= 1 and b[ib] or 1
    if x ~= y and x ~= 1 and y ~= 1 then
      fail(("The size of tensor a (%d) must match the size of tensor b (%d) at non-singleton dimension %d")
        :format(x, y, i))
    end
    r[i] = x == 1 and y or x
  end
  return r
end

-- ------------------------------------------------------------ torch.normal

-- normal(mean, std, size[, opts]) with numbers; normal(mean, std) with a
-- tensor mean or std (or both): one draw per element of their broadcast.
function torch.normal(mean, std, ...)
  if std == nil then std = 1.0 end
  if not is_tensor(mean) and not is_tensor(std) then
    if type(mean) ~= "number" or type(std) ~= "number" then
      fail("torch.normal(mean, std, size): expected numbers or tensors for mean and std, got "
        .. describe(mean) .. " and " .. describe(std))
    end
    if select("#", ...) == 0 then
      fail("torch.normal(mean, std, size): with numbers for mean and std a size is needed, e.g. {2, 3}")
    end
    if not (std >= 0) then fail(("normal expects std >= 0.0, but found std %s"):format(std)) end
    local t = torch.empty(...)
    local rg = t.requires_grad
    if rg then t = t:detach() end
    t:normal_(mean, std)
    if rg then t:requires_grad_() end
    return t
  end
  if select("#", ...) > 0 then
    fail("torch.normal(mean, std): with a tensor mean or std the shape is theirs; give no size")
  end
  for _, v in ipairs({ mean, std }) do
    if not is_tensor(v) and type(v) ~= "number" then
      fail("torch.normal(mean, std): expected numbers or tensors for mean and std, got " .. describe(mean)
        .. " and " .. describe(std))
    end
  end
  if is_tensor(std) then
    if not std:detach():ge(0):all():item() then fail("normal expects all elements of std >= 0.0") end
  elseif not (std >= 0) then
    fail(("normal expects std >= 0.0, but found std %s"):format(std))
  end
  local ref = is_tensor(mean) and mean or std
  local shape = broadcast(is_tensor(mean) and mean.shape or {}, is_tensor(std) and std.shape or {})
  local noise = torch.randn(shape, { dtype = ref.dtype, device = ref.device })
  return noise * std + mean
end

-- ---------------------------------------------------------- tile / repeat

-- x viewed with a size-1 dim before each repeated one, expanded, and
-- reshaped: one copy, and expand's backward sums the gradient back.
local function tiled(x, reps)
  local pad = #reps - x:dim()
  local vshape, eshape, oshape = {}, {}, {}
  for i = 1, #reps do
    local s = i > pad and x:size(i - pad) or 1
    if reps[i] ~= 1 then
      vshape[#vshape + 1] = 1
      eshape[#eshape + 1] = reps[i]
    end
    vshape[#vshape + 1] = s
    eshape[#eshape + 1] = s
    oshape[i] = reps[i] * s
  end
  return x:reshape(vshape):expand(eshape):reshape(oshape):clone()
end

local function check_reps(x, reps)
  local pad = #reps - x:dim()
  for i = 1, #reps do
    if reps[i] < 0 then
      local out = {}
      for j = 1, #reps do out[j] = reps[j] * (j > pad and x:size(j - pad) or 1) end
      fail(("Trying to create tensor with negative dimension %d: %s"):format(out[i], shape_str(out)))
    end
  end
end

-- x['repeat'](x, sizes...): PyTorch's Tensor.repeat (at least x:dim() sizes).
M["repeat"] = function(x, ...)
  errors.check_tensor(x, "tensor", "repeat")
  local reps = size_list("repeat", ...)
  if #reps < x:dim() then
    fail("Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor")
  end
  check_reps(x, reps)
  return tiled(x, reps)
end

-- x:tile(dims...): as repeat, with fewer dims than x padded with leading 1s.
function M.tile(x, ...)
  errors.check_tensor(x, "tensor", "tile")
  local reps = size_list("tile", ...)
  while #reps < x:dim() do table.insert(reps, 1, 1) end
  check_reps(x, reps)
  return tiled(x, reps)
end

-- ------------------------------------------------------------------ where

-- A number or tensor argument of where as a tensor of dtype dt on dev.
local function as_tensor(v, dt, dev)
  if is_tensor(v) then return v:to(dt) end
  return torch.tensor(v, { dtype = dt, device = dev })
end

-- The dtype PyTorch gives an op of a and b (tensors or numbers).
local function result_dtype(a, b)
  local function probe(v)
    if is_tensor(v) then
      return v:dim() == 0 and torch.tensor(0, { dtype = v.dtype }) or torch.empty(0, { dtype = v.dtype })
    end
    return v
  end
  local pa, pb = probe(a), probe(b)
  if not is_tensor(pa) and not is_tensor(pb) then
    return (math.type(a) == "float" or math.type(b) == "float") and torch.float32 or torch.int64
  end
  if type(pa) == "boolean" or type(pb) == "boolean" then
    return is_tensor(pa) and pa.dtype or pb.dtype
  end
  return (pa + pb).dtype
end

-- where(cond, x, y): x where cond is true, else y, broadcast together.
-- The two sources are interleaved ([y1, x1, y2, x2, ...]) and one
-- index_select picks 2i-1 or 2i by cond, so NaN and infinities pass
-- through unchanged and the gradient reaches x and y through stack and
-- index_select on every device.
function torch.where(cond, x, y)
  if not is_tensor(cond) then fail("torch.where(condition, x, y): expected a boolean tensor condition, got " .. describe(cond)) end
  if x == nil or y == nil then
    fail("torch.where(condition, x, y): x and y are needed (tensors or numbers); for the positions use mask:nonzero()")
  end
  if cond.dtype ~= torch.bool then
    fail(("where expected condition to be a boolean tensor, but got a tensor with dtype %s")
      :format(tostring(cond.dtype):gsub("^torch%.", ""):gsub("^%l", string.upper)))
  end
  for _, v in ipairs({ x, y }) do
    if not is_tensor(v) and type(v) ~= "number" and type(v) ~= "boolean" then
      fail("torch.where(condition, x, y): x and y must be tensors or numbers, got " .. describe(v))
    end
  end
  local dev = cond.device
  for _, v in ipairs({ x, y }) do
    if is_tensor(v) and v.device ~= dev then
      fail(("Expected all tensors to be on the same device, but found at least two devices, %s and %s!")
        :format(tostring(dev), tostring(v.device)))
    end
  end
  local dt = result_dtype(x, y)
  local xt, yt = as_tensor(x, dt, dev), as_tensor(y, dt, dev)
  local shape = broadcast(broadcast(cond.shape, xt.shape), yt.shape)
  local n = 1
  for i = 1, #shape do n = n * shape[i] end
  local pair = torch.stack({ yt:expand(shape):reshape(-1), xt:expand(shape):reshape(-1) }, 2):reshape(-1)
  -- 1, 3, ..., 2n - 1 (the end 2n + 1, not 2n: arange(1, 0, 2) is an error, an empty result is not)
  local idx = torch.arange(1, 2 * n + 1, 2, { device = dev }) + cond:expand(shape):reshape(-1):long()
  return pair:index_select(1, idx):reshape(shape)
end
M.where = function(x, cond, y) return torch.where(cond, x, y) end -- x:where(cond, y), as PyTorch

-- ------------------------------------------------------------ masked_fill

local function check_fill(who, x, mask, value)
  errors.check_tensor(x, "input", who)
  if not is_tensor(mask) then fail(who .. "(mask, value): expected a boolean tensor mask, got " .. describe(mask)) end
  if mask.dtype ~= torch.bool then
    fail(("%s only supports boolean masks, but got mask with dtype %s"):format(who,
      tostring(mask.dtype):gsub("^torch%.", "")))
  end
  if is_tensor(value) then
    if value:dim() ~= 0 then
      fail(("%s only supports a 0-dimensional value tensor, but got tensor with %d dimension(s).")
        :format(who, value:dim()))
    end
  elseif type(value) ~= "number" and type(value) ~= "boolean" then
    fail(who .. "(mask, value): the value must be a number or a 0-d tensor, got " .. describe(value))
  end
end

-- masked_fill(x, mask, value): x with value where mask is true (x's dtype).
function M.masked_fill(x, mask, value)
  check_fill("masked_fill", x, mask, value)
  local v = is_tensor(value) and value:to(x.dtype) or torch.tensor(value, { dtype = x.dtype, device = x.device })
  return torch.where(mask, v, x)
end

-- masked_fill_(x, mask, value): in place; mask must broadcast to x's shape.
function M.masked_fill_(x, mask, value)
  check_fill("masked_fill_", x, mask, value)
  local s = broadcast(x.shape, mask.shape)
  for i = 1, #s do
    if #s ~= x:dim() or s[i] ~= x:size(i) then
      fail(("masked_fill_: the mask of shape %s does not broadcast to the tensor's shape %s")
        :format(shape_str(mask.shape), shape_str(x.shape)))
    end
  end
  return x:copy_(M.masked_fill(x, mask, value))
end

-- ------------------------------------------------------ repeat_interleave

-- repeat_interleave(x, repeats[, dim]): each element (or slice along dim,
-- 1-based) repeated; repeats a number or a 1-d integer tensor with one
-- count per slice. Without dim x is flattened first, as PyTorch.
function M.repeat_interleave(x, repeats, dim)
  errors.check_tensor(x, "tensor", "repeat_interleave")
  if type(dim) == "table" then errors.check_options(dim, "repeat_interleave", { "dim" }); dim = dim.dim end
  if dim == nil then x = x:reshape(-1); dim = 1 end
  if math.type(dim) ~= "integer" then fail("repeat_interleave: dim must be an integer, got " .. describe(dim)) end
  if dim < 0 then dim = dim + x:dim() + 1 end
  if dim < 1 or dim > math.max(x:dim(), 1) then
    fail(("Dimension out of range (expected to be in range of [%d, %d], but got %d)"):format(-x:dim(), x:dim(), dim))
  end
  if x:dim() == 0 then x = x:reshape(1) end
  if math.type(repeats) == "integer" then
    if repeats < 0 then fail("repeats can not be negative") end
    local e = {}
    for i = 1, x:dim() + 1 do e[i] = -1 end
    e[dim + 1] = repeats
    return x:unsqueeze(dim + 1):expand(e):flatten(dim, dim + 1):clone()
  end
  if not is_tensor(repeats) or repeats.dtype == torch.float32 or repeats.dtype == torch.float64
      or repeats:dim() > 1 then
    fail("repeat_interleave: repeats must be an integer or a 1-d integer tensor, got " .. describe(repeats))
  end
  local counts = repeats:reshape(-1):cpu():tolist()
  if #counts == 1 then
    for i = 2, x:size(dim) do counts[i] = counts[1] end
  end
  if #counts ~= x:size(dim) then fail("repeats must have the same size as input along dim") end
  local idx = {}
  for i, c in ipairs(counts) do
    if c < 0 then fail("repeats can not be negative") end
    for _ = 1, c do idx[#idx + 1] = i end
  end
  return x:index_select(dim, torch.tensor(idx, { dtype = torch.int64, device = x.device }))
end

-- ------------------------------------------------------------- triu, tril

-- triu(x[, diagonal = 0]) and tril: x with the elements below (triu) or
-- above (tril) a diagonal of its last two dims set to zero, batched over
-- the others. diagonal is PyTorch's offset, not a position: 0 is the main
-- diagonal, 1 the one above it, -1 the one below, so a causal attention
-- mask reads as PyTorch's, torch.ones(T, T, {dtype = torch.bool}):triu(1).
-- Zeroes are chosen with where (no multiplication), so NaN and infinities
-- kept stay as they are and the gradient is 1 on the kept part, 0 elsewhere.
local function triangle(who, upper, x, diagonal)
  errors.check_tensor(x, "input", who)
  if type(diagonal) == "table" and not is_tensor(diagonal) then
    errors.check_options(diagonal, who, { "diagonal" })
    diagonal = diagonal.diagonal
  end
  if diagonal == nil then diagonal = 0 end
  if math.type(diagonal) ~= "integer" then
    fail(("%s(diagonal): diagonal must be an integer offset (0 the main diagonal, 1 above it), got %s")
      :format(who, describe(diagonal)))
  end
  if x:dim() < 2 then fail(("%s: input tensor must have at least 2 dimensions"):format(who:gsub("_$", ""))) end
  local n, m = x:size(x:dim() - 1), x:size(x:dim())
  local dev = x.device
  -- each element's column minus its row: which diagonal it lies on
  local offset = torch.arange(m, { device = dev }):reshape(1, m) - torch.arange(n, { device = dev }):reshape(n, 1)
  local keep = upper and offset:ge(diagonal) or offset:le(diagonal)
  return torch.where(keep, x, torch.zeros({}, { dtype = x.dtype, device = dev }))
end

function M.triu(x, diagonal) return triangle("triu", true, x, diagonal) end
function M.tril(x, diagonal) return triangle("tril", false, x, diagonal) end
-- the triangle first: `x:copy_(...)` would index x before it is checked
function M.triu_(x, diagonal)
  local r = triangle("triu_", true, x, diagonal)
  return x:copy_(r)
end
function M.tril_(x, diagonal)
  local r = triangle("tril_", false, x, diagonal)
  return x:copy_(r)
end

-- --------------------------------------------------- boolean-mask indexing

-- The mask's shape must equal x's leading dims; returns the number of
-- rows it covers and (unless shape_only) the 1-based flat positions
-- where it is true, read back to the host.
local function mask_rows(x, mask, shape_only)
  if mask:dim() > x:dim() then
    fail(("too many indices for tensor of dimension %d (a mask of %d dims)"):format(x:dim(), mask:dim()))
  end
  for i = 1, mask:dim() do
    if mask:size(i) ~= x:size(i) then
      fail(("The shape of the mask %s at index %d does not match the shape of the indexed tensor %s at index %d")
        :format(shape_str(mask.shape), i - 1, shape_str(x.shape), i - 1))
    end
  end
  local rows = 1
  for i = 1, mask:dim() do rows = rows * x:size(i) end
  if shape_only then return rows end
  local flags = mask:reshape(-1):cpu():tolist()
  local pos = {}
  for i, f in ipairs(flags) do if f then pos[#pos + 1] = i end end
  return rows, pos
end

local function rest_shape(x, k, lead)
  local s = { lead }
  for i = k + 1, x:dim() do s[#s + 1] = x:size(i) end
  return s
end

-- x[mask]: the selected elements (or slices) as a new tensor [count, rest...].
local registry = debug.getregistry()
registry["torch.mask_index"] = function(x, mask)
  local rows, pos = mask_rows(x, mask)
  local flat = x:reshape(rest_shape(x, mask:dim(), rows))
  return flat:index_select(1, torch.tensor(pos, { dtype = torch.int64, device = x.device }))
end

-- x[mask] = v: v a number, a 0-d tensor, a tensor broadcast over the
-- selected slices, or one value (slice) per selected position.
registry["torch.mask_assign"] = function(x, mask, v)
  local k = mask:dim()
  if type(v) == "number" or type(v) == "boolean" or (is_tensor(v) and v:dim() <= x:dim() - k) then
    -- no positions needed: the mask stays on its device (d2l.sequence_mask
    -- no longer reads a [4096, 32] mask back as a Lua list every call)
    mask_rows(x, mask, true)
    -- the mask over x's leading dims, broadcast over the rest
    local ms = {}
    for i = 1, k do ms[i] = mask:size(i) end
    for i = k + 1, x:dim() do ms[i] = 1 end
    local m = mask:reshape(ms)
    if is_tensor(v) then
      if v.device ~= x.device then
        fail(("Expected all tensors to be on the same device, but found at least two devices, %s and %s!")
          :format(tostring(x.device), tostring(v.device)))
      end
      x:copy_(torch.where(m, v:to(x.dtype), x))
    else
      x:masked_fill_(m, v)
    end
    return
  end
  if not is_tensor(v) then fail("cannot assign " .. describe(v) .. " to masked elements: expected a number or a tensor") end
  local rows, pos = mask_rows(x, mask)
  local want = rest_shape(x, k, #pos)
  local ok = v:dim() <= #want
  if ok then
    for i = 1, v:dim() do
      local a, b = v:size(v:dim() - i + 1), want[#want - i + 1]
      if a ~= b and a ~= 1 then ok = false end
    end
  end
  if not ok then
    fail(("shape mismatch: value tensor of shape %s cannot be broadcast to indexing result of shape %s")
      :format(shape_str(v.shape), shape_str(want)))
  end
  local vals = v:expand(want)
  local flat = x:view(rest_shape(x, k, rows))
  for j, p in ipairs(pos) do flat[p] = vals[j] end
end

return M
