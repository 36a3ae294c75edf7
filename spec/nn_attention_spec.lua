-- nn_attention_spec.lua: nn.MultiheadAttention against Debian's
-- python3-torch (spec/support/mha_goldens.lua, from gen_mha_goldens.py):
-- outputs, attention weights and the gradients of the inputs and of every
-- parameter, with the weights copied across, in float64 on the cpu and on
-- a simulated GPU; then dropout in training and eval, the parameters'
-- names and shapes, the printed form and the messages.
local torch = require("torch")
local nn = torch.nn
local G = require("mha_goldens")

local function numel(shape)
  local n = 1
  for _, s in ipairs(shape) do n = n * s end
  return n
end

-- the generator's formulas (see gen_mha_goldens.py)
local function formula(shape, dev, f)
  local v = {}
  for i = 0, numel(shape) - 1 do v[i + 1] = f(i) end
  return torch.tensor(v, { dtype = torch.float64, device = dev }):view(table.unpack(shape))
end
local function fx(shape, dev, step) return formula(shape, dev, function(i) return ((i * 37 + step * 11) % 101 - 50) / 32 end) end
local function fp(shape, dev, step) return formula(shape, dev, function(i) return ((i * 29 + step * 7) % 53 - 26) / 64 end) end
local function fg(shape, dev, a, m, c, d) return formula(shape, dev, function(i) return ((i * a) % m - c) / d end) end

local function assert_close(got, want, what, tol)
  tol = tol or 1e-10
  local vals = got:reshape(-1):double():cpu():tolist()
  assert.are.equal(#want, #vals, what .. ": element count")
  for i = 1, #want do
    if not (math.abs(vals[i] - want[i]) <= tol * (1 + math.abs(want[i]))) then
      error(("%s: element %d is %s, PyTorch gives %s"):format(what, i, vals[i], want[i]), 2)
    end
  end
end

local function err(f)
  local ok, e = pcall(f)
  assert.is_false(ok)
  return tostring(e)
end

local saved_n, saved_cap

describe("nn.MultiheadAttention (issue 31)", function()
  setup(function() saved_n, saved_cap = torch._sim_configure(2) end)
  teardown(function() collectgarbage(); collectgarbage(); torch._sim_configure(saved_n, saved_cap) end)

  local cases = {
    bool_masks = { opts = {}, fwd = function(c, dev)
      return { attn_mask = torch.tensor(c.attn_mask, { device = dev }):view(3, 4),
               key_padding_mask = torch.tensor(c.key_padding_mask, { device = dev }):view(2, 4) } end },
    kdim_vdim_float_masks = { opts = { batch_first = true, kdim = 5, vdim = 6 }, fwd = function(c, dev)
      return { attn_mask = torch.tensor(c.attn_mask, { dtype = torch.float64, device = dev }):view(3, 4),
               key_padding_mask = torch.tensor(c.key_padding_mask, { dtype = torch.float64, device = dev }):view(2, 4),
               average_attn_weights = false } end },
    unbatched_nobias = { opts = { bias = false } },
    no_weights = { opts = {}, fwd = function() return { need_weights = false } end },
  }

  for _, dev in ipairs({ "cpu", "cuda:0" }) do
    for _, name in ipairs({ "bool_masks", "kdim_vdim_float_masks", "unbatched_nobias", "no_weights" }) do
      it(name:gsub("_", " ") .. ": outputs, weights and gradients as PyTorch's (" .. dev .. ")", function()
        local c, how = G[name], cases[name]
        local o = { dtype = torch.float64, device = dev }
        for k, v in pairs(how.opts) do o[k] = v end
        local m = nn.MultiheadAttention(c.E, c.H, o)
        local names = {}
        torch.no_grad(function()
          for step, pair in ipairs(m:named_parameters()) do
            names[step] = pair[1]
            pair[2]:copy_(fp(pair[2].shape, dev, step - 1))
          end
        end)
        assert.are.same(c.names, names)
        local q = fx(c.q, dev, 1):requires_grad_()
        local k = fx(c.k, dev, 2):requires_grad_()
        local v = fx(c.v, dev, 3):requires_grad_()
        local out, w = m(q, k, v, how.fwd and how.fwd(c, dev) or nil)
        assert.are.equal(torch.device(dev), out.device)
        assert.are.same(c.out.shape, out.shape)
        assert_close(out, c.out.v, "output")
        local loss = (out * fg(out.shape, dev, 13, 29, 14, 8)):sum()
        if c.weights == nil then
          assert.is_nil(w)
        else
          assert.are.same(c.weights.shape, w.shape)
          assert_close(w, c.weights.v, "weights")
          loss = loss + (w * fg(w.shape, dev, 17, 23, 11, 4)):sum()
        end
        loss:backward()
        assert_close(q.grad, c.gq, "query's gradient")
        assert_close(k.grad, c.gk, "key's gradient")
        assert_close(v.grad, c.gv, "value's gradient")
        for _, pair in ipairs(m:named_parameters()) do
          assert_close(pair[2].grad, c.grads[pair[1]], pair[1] .. "'s gradient")
        end
      end)
    end
  end

  it("has PyTorch's parameters, shapes, initial values and printed form", function()
    local m = nn.MultiheadAttention(8, 2)
    local shapes = {}
    for _, pair in ipairs(m:named_parameters()) do shapes[pair[1]] = pair[2].shape end
    assert.are.same({ ["in_proj_weight"] = { 24, 8 }, ["in_proj_bias"] = { 24 }, ["out_proj.weight"] = { 8, 8 },
      ["out_proj.bias"] = { 8 } }, shapes)
    assert.are.equal(0, m.in_proj_bias:abs():sum():item())
    assert.are.equal(0, m.out_proj.bias:abs():sum():item())
    -- xavier_uniform_ over [24, 8]: bound sqrt(6 / 32)
    assert.is_true(m.in_proj_weight:abs():max():item() <= math.sqrt(6 / 32))
    assert.are.equal(4, m.head_dim)
    assert.are.equal("MultiheadAttention(\n  (out_proj): NonDynamicallyQuantizableLinear(in_features=8, "
      .. "out_features=8, bias=True)\n)", tostring(m))
    local k = nn.MultiheadAttention(8, 2, { kdim = 3, vdim = 5, bias = false })
    local names = {}
    for i, pair in ipairs(k:named_parameters()) do names[i] = pair[1] .. " " .. tostring(pair[2].shape) end
    assert.are.same({ "q_proj_weight torch.Size([8, 8])", "k_proj_weight torch.Size([8, 3])",
      "v_proj_weight torch.Size([8, 5])", "out_proj.weight torch.Size([8, 8])" }, names)
    -- the state dict loads into a module of the same shape
    local m2 = nn.MultiheadAttention(8, 2)
    m2:load_state_dict(m:state_dict())
    assert.is_true(m2.in_proj_weight:equal(m.in_proj_weight))
  end)

  it("drops attention weights in training (scaled by 1 / (1 - p)) and not in eval", function()
    torch.manual_seed(3)
    local m = nn.MultiheadAttention(8, 2, { dropout = 0.5, batch_first = true })
    local x = torch.randn(2, 5, 8)
    m:eval()
    local o1, w1 = m(x, x, x, { average_attn_weights = false })
    local o2 = m(x, x, x)
    assert.is_true(o1:equal(o2))
    m:train()
    local o3, w3 = m(x, x, x, { average_attn_weights = false })
    assert.is_false(o3:allclose(o1))
    -- each weight is dropped (0) or doubled
    local kept = w3:ne(0)
    local n_kept = kept:sum():item()
    assert.is_true(n_kept > 0 and n_kept < w3:numel())
    assert.is_true((w3 - w1 * 2):masked_fill(kept:logical_not(), 0):abs():max():item() < 1e-6)
  end)

  it("masks whole rows to NaN, as PyTorch, and says what was wrong", function()
    local m = nn.MultiheadAttention(4, 2)
    local x = torch.randn(3, 1, 4)
    local _, w = m(x, x, x, { key_padding_mask = torch.tensor({ { true, true, true } }) })
    assert.is_true(w:ne(w):all():item()) -- NaN everywhere
    assert.matches("embed_dim must be divisible by num_heads", err(function() nn.MultiheadAttention(6, 4) end))
    assert.matches("expected two positive integers", err(function() nn.MultiheadAttention(0, 1) end))
    assert.matches("unknown option 'add_bias_kv'", err(function() nn.MultiheadAttention(4, 2, { add_bias_kv = true }) end))
    assert.matches("was expecting embedding dimension of 4, but got 5", err(function()
      m(torch.randn(3, 1, 5), x, x) end))
    assert.matches("query should be unbatched 2D or batched 3D tensor but received 4%-D", err(function()
      m(torch.randn(1, 3, 1, 4), x, x) end))
    assert.matches("key shape %[3, 1, 4%] does not match value shape %[2, 1, 4%]", err(function()
      m(x, x, torch.randn(2, 1, 4)) end))
    assert.matches("The shape of the 2D attn_mask is %[2, 3%], but should be %[3, 3%]", err(function()
      m(x, x, x, { attn_mask = torch.zeros(2, 3) }) end))
    assert.matches("expected key_padding_mask of shape %[1, 3%], but got %[1, 2%]", err(function()
      m(x, x, x, { key_padding_mask = torch.zeros(1, 2, { dtype = torch.bool }) }) end))
    assert.matches("only bool and floating types of attn_mask", err(function()
      m(x, x, x, { attn_mask = torch.zeros(3, 3, { dtype = torch.int64 }) }) end))
    assert.matches("unknown option 'is_causal'", err(function() m(x, x, x, { is_causal = true }) end))
  end)
end)
