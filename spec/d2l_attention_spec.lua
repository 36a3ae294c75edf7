-- d2l_attention_spec.lua: the book's masking helpers (d2l.sequence_mask,
-- d2l.masked_softmax, d2l.MaskedSoftmaxCELoss) against the book's own code
-- run by Debian's python3-torch (spec/support/attention_goldens.lua, from
-- gen_attention_goldens.py), forward and gradients, in float64 on the CPU
-- and on a simulated GPU; then their messages.
local torch = require("torch")
local d2l = require("torch.d2l")
local G = require("attention_goldens")

local function numel(shape)
  local n = 1
  for _, s in ipairs(shape) do n = n * s end
  return n
end

-- the generator's formulas (see gen_attention_goldens.py)
local function fx(shape, dev, step)
  local v = {}
  for i = 0, numel(shape) - 1 do v[i + 1] = (((i * 37 + (step or 0) * 11) % 101) - 50) / 16 end
  return torch.tensor(v, { dtype = torch.float64, device = dev }):view(table.unpack(shape))
end

local function fg(shape, dev)
  local v = {}
  for i = 0, numel(shape) - 1 do v[i + 1] = (((i * 13) % 29) - 14) / 8 end
  return torch.tensor(v, { dtype = torch.float64, device = dev }):view(table.unpack(shape))
end

local function assert_close(got, want, what, tol)
  tol = tol or 1e-12
  local vals = got:reshape(-1):double():cpu():tolist()
  assert.are.equal(#want, #vals, what .. ": element count")
  for i = 1, #want do
    if math.abs(vals[i] - want[i]) > tol * (1 + math.abs(want[i])) then
      error(("%s: element %d is %s, PyTorch gives %s"):format(what, i, vals[i], want[i]), 2)
    end
  end
end

local saved_n, saved_cap

describe("d2l's attention masking (issue 31)", function()
  setup(function() saved_n, saved_cap = torch._sim_configure(2) end)
  teardown(function() collectgarbage(); collectgarbage(); torch._sim_configure(saved_n, saved_cap) end)

  for _, dev in ipairs({ "cpu", "cuda:0" }) do
    describe("as the book's code in PyTorch (" .. dev .. ")", function()
      local function t(v, dt) return torch.tensor(v, { dtype = dt, device = dev }) end

      it("sequence_mask masks X in place past each valid length and returns it", function()
        local X = t({ { 1, 2, 3 }, { 4, 5, 6 } })
        local r = d2l.sequence_mask(X, t({ 1, 2 }))
        assert.is_true(rawequal(X, r))
        assert.are.equal(torch.int64, r.dtype)
        assert_close(r, G.sequence_mask_int.out, "int")
        X = fx({ 2, 3, 4 }, dev)
        assert_close(d2l.sequence_mask(X, t(G.sequence_mask_3d.valid), -1), G.sequence_mask_3d.out, "3-d")
      end)

      for _, name in ipairs({ "masked_softmax_1d", "masked_softmax_2d", "masked_softmax_none" }) do
        it(name:gsub("_", " ", 1) .. ": values and the gradient through the in-place mask", function()
          local c = G[name]
          local x = fx(c.shape, dev, 1):requires_grad_()
          local valid = c.valid and t(c.valid) or nil
          local y = d2l.masked_softmax(x * 1, valid)
          assert.are.equal(torch.device(dev), y.device)
          assert_close(y, c.out, "output")
          y:backward(fg(c.shape, dev))
          assert_close(x.grad, c.gx, "gradient")
        end)
      end

      it("MaskedSoftmaxCELoss: the book's check, and losses and gradients of real scores", function()
        local loss = d2l.MaskedSoftmaxCELoss()
        local l = loss(torch.ones(3, 4, 10, { dtype = torch.float64, device = dev }),
          torch.ones(3, 4, { dtype = torch.int64, device = dev }), t({ 4, 2, 0 }))
        assert_close(l, G.ce_book.out, "book")
        local c = G.ce
        local pred = fx({ 3, 4, 5 }, dev, 2):requires_grad_()
        l = loss(pred, t(c.labels):view(3, 4), t(c.valid))
        assert_close(l, c.out, "losses")
        l:backward(t(c.g, torch.float64))
        assert_close(pred.grad, c.gpred, "gradient")
      end)
    end)
  end

  it("masked_softmax in float32 as the book calls it (a random X, 1-d valid lengths)", function()
    local y = d2l.masked_softmax(torch.rand(2, 2, 4), torch.tensor({ 2, 3 }))
    assert.are.same({ 0, 0, 0, 0, 0, 0 }, { y[1][1][3]:item(), y[1][1][4]:item(), y[1][2][3]:item(),
      y[1][2][4]:item(), y[2][1][4]:item(), y[2][2][4]:item() })
    assert.is_true(y:sum(3):sub(1):abs():max():item() < 1e-6)
    assert.are.equal("MaskedSoftmaxCELoss()", tostring(d2l.MaskedSoftmaxCELoss()))
  end)

  it("says what was wrong", function()
    local function err(f)
      local ok, e = pcall(f)
      assert.is_false(ok)
      return tostring(e)
    end
    assert.matches("valid_len must be a 1%-d tensor of 2 lengths", err(function()
      d2l.sequence_mask(torch.zeros(2, 3), torch.tensor({ 1, 2, 3 })) end))
    assert.matches("X must be a tensor of at least 2 dimensions", err(function()
      d2l.sequence_mask(torch.zeros(3), torch.tensor({ 1 })) end))
    assert.matches("valid_lens must be nil or a tensor", err(function()
      d2l.masked_softmax(torch.zeros(2, 3), { 1, 2 }) end))
    assert.matches("label must be a tensor of shape %[3, 4%]", err(function()
      d2l.MaskedSoftmaxCELoss()(torch.zeros(3, 4, 5), torch.ones(3, { dtype = torch.int64 }), torch.tensor({ 1, 1, 1 })) end))
  end)
end)
