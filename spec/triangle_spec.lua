-- triangle_spec.lua: x:triu(diagonal) and x:tril(diagonal) (issue 31: the
-- causal mask of a GPT-like model, examples/char_transformer.lua) against
-- Debian's python3-torch (spec/support/triangle_goldens.lua, from
-- gen_triangle_goldens.py): values and gradients in float64 on the cpu
-- and on a simulated GPU, PyTorch's diagonal offsets (0 the main
-- diagonal), batches, other dtypes, the in-place forms and the messages;
-- then the causal mask in nn.MultiheadAttention: no query sees a later key.
local torch = require("torch")
local nn = torch.nn
local G = require("triangle_goldens")

local function formula(shape, dev, a, m, c, d)
  local n = 1
  for _, s in ipairs(shape) do n = n * s end
  local v = {}
  for i = 0, n - 1 do v[i + 1] = ((i * a) % m - c) / d end
  return torch.tensor(v, { dtype = torch.float64, device = dev }):view(table.unpack(shape))
end

local function err(f, ...)
  local ok, e = pcall(f, ...)
  assert.is_false(ok)
  return tostring(e)
end

local saved_n, saved_cap

describe("triu and tril (issue 31)", function()
  setup(function() saved_n, saved_cap = torch._sim_configure(1) end)
  teardown(function() collectgarbage(); collectgarbage(); torch._sim_configure(saved_n, saved_cap) end)

  for _, dev in ipairs({ "cpu", "cuda:0" }) do
    it("values and gradients as PyTorch's on " .. dev, function()
      for _, c in ipairs(G) do
        local what = ("%s(%s) of [%s]"):format(c.fn, c.diagonal, table.concat(c.shape, ", "))
        local x = formula(c.shape, dev, 37, 101, 50, 16):requires_grad_()
        local out = c.fn == "triu" and x:triu(c.diagonal) or torch.tril(x, c.diagonal)
        assert.are.equal(dev, tostring(out.device), what)
        assert.are.same(c.out, out:detach():reshape(-1):cpu():tolist(), what)
        ;(out * formula(c.shape, dev, 13, 29, 14, 8)):sum():backward()
        assert.are.same(c.grad, x.grad:reshape(-1):cpu():tolist(), what .. ": gradient")
      end
    end)
  end

  it("keeps the dtype; zeroes by choosing, so kept NaN and infinities stay", function()
    local b = torch.ones(3, 3, { dtype = torch.bool }):triu(1)
    assert.are.equal(torch.bool, b.dtype)
    assert.are.same({ { false, true, true }, { false, false, true }, { false, false, false } }, b:tolist())
    assert.are.same({ { 1, 0, 0 }, { 1, 1, 0 } }, torch.ones(2, 3, { dtype = torch.int64 }):tril():tolist())
    local x = torch.tensor({ { 0 / 0, 1 }, { 2, math.huge } }):triu()
    local v = x:tolist()
    assert.is_true(v[1][1] ~= v[1][1])
    assert.are.same({ 1, 0, math.huge }, { v[1][2], v[2][1], v[2][2] })
    -- an empty matrix, and an options table for the diagonal
    assert.are.same({ 0, 3 }, { torch.ones(0, 3):triu():size(1), torch.ones(0, 3):triu():size(2) })
    assert.are.same({ { 0, 1 }, { 0, 0 } }, torch.ones(2, 2):triu({ diagonal = 1 }):tolist())
  end)

  it("triu_ and tril_ write in place", function()
    local y = torch.ones(3, 3)
    assert.is_true(rawequal(y, y:tril_(-1)))
    assert.are.same({ { 0, 0, 0 }, { 1, 0, 0 }, { 1, 1, 0 } }, y:tolist())
    local z = torch.ones(2, 2, { device = "cuda:0" })
    z:triu_(1)
    assert.are.same({ { 0, 1 }, { 0, 0 } }, z:tolist())
  end)

  it("clear messages for bad input", function()
    assert.truthy(err(torch.triu, torch.ones(3)):find("triu: input tensor must have at least 2 dimensions", 1, true))
    assert.truthy(err(function() return torch.ones(3):tril_() end)
      :find("tril: input tensor must have at least 2 dimensions", 1, true))
    assert.truthy(err(torch.tril, torch.ones(2, 2), 1.5)
      :find("tril(diagonal): diagonal must be an integer offset (0 the main diagonal, 1 above it), got the number 1.5", 1, true))
    assert.truthy(err(torch.triu, torch.ones(2, 2), { k = 1 }):find("k", 1, true))
    assert.truthy(err(torch.triu, "x"):find("triu", 1, true))
    -- the in-place forms check their tensor before touching it (the API
    -- fuzzer's torch.triu_(-1): "attempt to index a number value")
    for _, bad in ipairs({ -1, false, "x" }) do
      local e = err(torch.triu_, bad)
      assert.truthy(e:find("triu_", 1, true) and not e:find("attempt to index", 1, true), e)
      e = err(torch.tril_, bad, 0)
      assert.truthy(e:find("tril_", 1, true) and not e:find("attempt to index", 1, true), e)
    end
    local e = err(torch.triu_)
    assert.truthy(e:find("triu_", 1, true) and not e:find("attempt to index", 1, true), e)
  end)

  -- the mask a GPT-like model gives nn.MultiheadAttention: query t sees
  -- keys 1..t only, so changing a later step leaves earlier outputs alone
  it("a causal mask in nn.MultiheadAttention: no output depends on a later step", function()
    torch.manual_seed(0)
    local T = 5
    local mha = nn.MultiheadAttention(8, 2, { batch_first = true })
    local mask = torch.ones(T, T, { dtype = torch.bool }):triu(1)
    local x = torch.randn(2, T, 8)
    local out, w = mha(x, x, x, { attn_mask = mask })
    local x2 = x:clone()
    x2[{ {}, T }] = torch.randn(2, 8)
    local out2 = mha(x2, x2, x2, { attn_mask = mask })
    assert.is_true(out:narrow(2, 1, T - 1):equal(out2:narrow(2, 1, T - 1)))
    assert.is_false(out:narrow(2, T, 1):equal(out2:narrow(2, T, 1)))
    -- the weights above the diagonal are zero, each row sums to 1
    assert.are.equal(0, w:triu(1):abs():sum():item())
    assert.is_true(w:sum(3):sub(1):abs():max():item() < 1e-6)
  end)
end)
