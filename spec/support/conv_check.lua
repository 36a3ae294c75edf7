-- Helpers shared by the convolution specs (conv_spec, conv_winograd_spec):
-- the golden generators' inputs and the comparison with their results.
local torch = require("torch")
local assert = require("luassert")
local C = {}

-- The generators' inputs: ((i*a + b) % m) / (m/2) - 1 over the element index.
function C.fill(shape, a, b, m, dt)
  local n = 1
  for _, s in ipairs(shape) do n = n * s end
  local i = torch.arange(n)
  local v = ((i * a + b) % m):double() / (m / 2) - 1
  return v:view(table.unpack(shape)):to(dt)
end

-- t's shape as a plain list
function C.dims(t)
  local r = {}
  for i = 1, t:dim() do r[i] = t:size(i) end
  return r
end

-- got (any device, any float dtype) against a flat float64 golden list:
-- |got - want| <= tol * (1 + |want|), the float32 tolerance scaled by the
-- number of terms a result sums.
function C.expect_close(got, want, shape, tol, what)
  assert(got ~= nil, what .. ": no result")
  assert.are.same(shape, C.dims(got), what .. ": shape")
  local w = torch.tensor(want, { dtype = torch.float64 }):view(table.unpack(shape))
  local g = got:detach():cpu():double()
  local err = ((g - w):abs() - (w:abs() + 1) * tol):max():item()
  if err > 0 then
    local d = (g - w):abs():max():item()
    error(("%s: differs from PyTorch by up to %.3g (tolerance %.1g relative)"):format(what, d, tol), 2)
  end
end

return C
