-- d2l_transformer_spec.lua: the book's attention and transformer modules
-- (d2l.DotProductAttention, AdditiveAttention, MultiHeadAttention,
-- PositionalEncoding, TransformerEncoderBlock, TransformerEncoder) against
-- the book's own code run by Debian's python3-torch
-- (spec/support/transformer_goldens.lua, from gen_transformer_goldens.py):
-- outputs, attention weights and the gradients of the inputs and of every
-- parameter, the weights copied across, in float64 on the cpu and on a
-- simulated GPU. Then the book's own checks (its shapes, and the additive
-- attention's averaged values), the encoder-decoder scaffolding and the
-- messages.
local torch = require("torch")
local nn = torch.nn
local d2l = require("torch.d2l")
local G = require("transformer_goldens")

local function numel(shape)
  local n = 1
  for _, s in ipairs(shape) do n = n * s end
  return n
end

-- the generator's formulas (see gen_transformer_goldens.py)
local function formula(shape, dev, f, dt)
  local v = {}
  for i = 0, numel(shape) - 1 do v[i + 1] = f(i) end
  return torch.tensor(v, { dtype = dt or torch.float64, device = dev }):view(table.unpack(shape))
end
local function fx(shape, dev, step) return formula(shape, dev, function(i) return ((i * 37 + step * 11) % 101 - 50) / 32 end) end
local function fp(shape, dev, step) return formula(shape, dev, function(i) return ((i * 29 + step * 7) % 53 - 26) / 64 end) end
local function fg(shape, dev) return formula(shape, dev, function(i) return ((i * 13) % 29 - 14) / 8 end) end

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

describe("d2l's attention and transformer modules (issue 31)", function()
  setup(function() saved_n, saved_cap = torch._sim_configure(2) end)
  teardown(function() collectgarbage(); collectgarbage(); torch._sim_configure(saved_n, saved_cap) end)

  -- each case: the module, its inputs (float ones get gradients) and the
  -- other arguments, as the generator's run()
  local cases = {
    dot = function(dev) return d2l.DotProductAttention(0.5),
      { fx({ 2, 1, 2 }, dev, 1), fx({ 2, 10, 2 }, dev, 2), fx({ 2, 10, 4 }, dev, 3) },
      { torch.tensor({ 2, 6 }, { device = dev }) } end,
    additive = function(dev) return d2l.AdditiveAttention(8, 0.1),
      { fx({ 2, 1, 20 }, dev, 1), fx({ 2, 10, 2 }, dev, 2), fx({ 2, 10, 4 }, dev, 3) },
      { torch.tensor({ 2, 6 }, { device = dev }) } end,
    mha = function(dev) return d2l.MultiHeadAttention(12, 3, 0.5),
      { fx({ 2, 4, 12 }, dev, 1), fx({ 2, 6, 10 }, dev, 2), fx({ 2, 6, 10 }, dev, 3) },
      { torch.tensor({ 3, 2 }, { device = dev }) } end,
    mha_2d_valid = function(dev) return d2l.MultiHeadAttention(8, 2, 0.5, true),
      { fx({ 2, 3, 8 }, dev, 1), fx({ 2, 5, 8 }, dev, 2), fx({ 2, 5, 8 }, dev, 3) },
      { torch.tensor({ { 1, 2, 3 }, { 5, 4, 2 } }, { device = dev }) } end,
    block = function(dev) return d2l.TransformerEncoderBlock(16, 32, 4, 0.5), { fx({ 2, 5, 16 }, dev, 1) },
      { torch.tensor({ 3, 2 }, { device = dev }) } end,
    encoder = function(dev)
      local ids = formula({ 2, 6 }, dev, function(i) return (i * 7 + 3) % 20 + 1 end, torch.int64)
      return d2l.TransformerEncoder(20, 8, 16, 2, 2, 0.5), { ids }, { torch.tensor({ 3, 5 }, { device = dev }) }
    end,
  }

  for _, dev in ipairs({ "cpu", "cuda:0" }) do
    for _, name in ipairs({ "dot", "additive", "mha", "mha_2d_valid", "block", "encoder" }) do
      it(name .. ": outputs, weights and gradients as the book's code in PyTorch (" .. dev .. ")", function()
        local c = G[name]
        -- the encoder adds the float32 positional encoding, whose sines
        -- may differ from PyTorch's by an ulp (6e-8)
        local tol = name == "encoder" and 1e-7 or 1e-10
        local net, inputs, extra = cases[name](dev)
        net:to(torch.float64):to(dev)
        local args = {}
        for i, x in ipairs(inputs) do args[i] = x end
        for _, x in ipairs(extra) do args[#args + 1] = x end
        net(table.unpack(args)) -- sizes the lazy layers
        net:eval()
        local names = {}
        torch.no_grad(function()
          for step, pair in ipairs(net:named_parameters()) do
            names[step] = pair[1]
            pair[2]:copy_(fp(pair[2].shape, dev, step - 1))
          end
        end)
        assert.are.same(c.names, names)
        for _, x in ipairs(inputs) do if x:is_floating_point() then x:requires_grad_() end end
        local o = net(table.unpack(args))
        assert.are.equal(torch.device(dev), o.device)
        assert.are.same(c.out.shape, o.shape)
        assert_close(o, c.out.v, "output", tol)
        local w = net.attention_weights
        if type(w) == "table" and not torch.is_tensor(w) then w = w[#w] end
        if w == nil and net.attention then w = net.attention.attention_weights or net.attention.attention.attention_weights end
        assert.are.same(c.weights.shape, w.shape)
        assert_close(w, c.weights.v, "attention weights", tol)
        local loss = (o * fg(o.shape, dev)):sum()
        loss:backward()
        local k = 0
        for _, x in ipairs(inputs) do
          if x:is_floating_point() then k = k + 1; assert_close(x.grad, c.gin[k], "input " .. k .. "'s gradient", tol) end
        end
        for _, pair in ipairs(net:named_parameters()) do
          assert_close(pair[2].grad, c.grads[pair[1]], pair[1] .. "'s gradient", tol)
        end
      end)
    end
  end

  it("PositionalEncoding's P is the book's (float32, sines and cosines interleaved)", function()
    local pe = d2l.PositionalEncoding(16, 0, 20)
    assert.are.equal(torch.float32, pe.P.dtype)
    assert.are.same({ 1, 20, 16 }, pe.P.shape)
    assert_close(pe.P, G.pos_encoding.P, "P", 1e-6)
    pe:eval()
    local X = torch.ones(2, 7, 16, { device = "cuda:1" })
    local Y = pe(X)
    assert.are.equal(torch.device("cuda:1"), Y.device)
    assert.is_true(Y:cpu():equal(torch.ones(2, 7, 16) + pe.P:narrow(2, 1, 7)))
  end)

  it("gives the book's shapes, and the additive attention's averaged values of its first edition", function()
    local queries = torch.normal(0, 1, { 2, 1, 2 })
    local keys = torch.normal(0, 1, { 2, 10, 2 })
    local values = torch.normal(0, 1, { 2, 10, 4 })
    local valid_lens = torch.tensor({ 2, 6 })
    local attention = d2l.DotProductAttention(0.5)
    attention:eval()
    d2l.check_shape(attention(queries, keys, values, valid_lens), { 2, 1, 4 })
    d2l.check_shape(attention.attention_weights, { 2, 1, 10 })
    -- keys all equal: every valid key gets the same weight, so the output
    -- is the mean of the first 2 and 6 value rows: {2, 3, 4, 5}, {10, ..., 13}
    attention = d2l.AdditiveAttention(8, 0.1)
    attention:eval()
    values = torch.arange(40, { dtype = torch.float32 }):reshape(1, 10, 4):tile(2, 1, 1)
    local out = attention(torch.normal(0, 1, { 2, 1, 20 }), torch.ones(2, 10, 2), values, valid_lens)
    assert.is_true(out:allclose(torch.tensor({ { { 2, 3, 4, 5 } }, { { 10, 11, 12, 13 } } }), 1e-5, 1e-5))
    local mha = d2l.MultiHeadAttention(100, 5, 0.5)
    mha:eval()
    local X, Y = torch.ones(2, 4, 100), torch.ones(2, 6, 100)
    d2l.check_shape(mha(X, Y, Y, torch.tensor({ 3, 2 })), { 2, 4, 100 })
    local ffn = d2l.PositionWiseFFN(4, 8)
    ffn:eval()
    d2l.check_shape(ffn(torch.ones(2, 3, 4)), { 2, 3, 8 })
    local add_norm = d2l.AddNorm(4, 0.5)
    add_norm:eval()
    d2l.check_shape(add_norm(torch.ones(2, 3, 4), torch.ones(2, 3, 4)), { 2, 3, 4 })
    X = torch.ones(2, 100, 24)
    local blk = d2l.TransformerEncoderBlock(24, 48, 8, 0.5)
    blk:eval()
    d2l.check_shape(blk(X, valid_lens), X.shape)
    local encoder = d2l.TransformerEncoder(200, 24, 48, 8, 2, 0.5)
    d2l.check_shape(encoder(torch.ones(2, 100, { dtype = torch.int64 }), valid_lens), { 2, 100, 24 })
    assert.are.equal(2, #encoder.attention_weights)
    d2l.check_shape(encoder.attention_weights[2], { 16, 100, 100 })
    -- the book's block names, so state dicts line up
    assert.is_not_nil(encoder:state_dict()["blks.block1.ffn.dense2.bias"])
  end)

  it("has the encoder-decoder scaffolding to subclass", function()
    local Enc = d2l.Encoder:extend("Enc")
    function Enc:init() self.fc = nn.Linear(3, 3) end
    function Enc:forward(X) return self.fc(X), X:sum() end   -- two results: a Python tuple
    local Dec = d2l.AttentionDecoder:extend("Dec")
    function Dec:init() self.fc = nn.Linear(3, 2) end
    function Dec:init_state(enc_all_outputs, extra)
      self.got = { enc_all_outputs, extra }
      return enc_all_outputs[1]
    end
    function Dec:forward(X, state)
      self._attention_weights = state
      return self.fc(X + state), state
    end
    local model = d2l.EncoderDecoder(Enc(), Dec())
    local out, second = model(torch.ones(2, 3), torch.ones(2, 3), "extra")
    d2l.check_shape(out, { 2, 3 - 1 })
    assert.is_nil(second) -- the decoder's output only, as the book's [0]
    assert.are.equal("extra", model.decoder.got[2])
    assert.are.equal(2, #model.decoder.got[1])
    assert.is_true(model:isinstance(d2l.EncoderDecoder))
    assert.is_true(d2l.TransformerEncoder(5, 4, 8, 2, 1, 0):isinstance(d2l.Encoder))
    assert.matches("Encoder:forward%(X, ...%) is not implemented", err(function() d2l.Encoder()(torch.ones(1)) end))
    assert.matches("Decoder:init_state%(enc_all_outputs, ...%) is not implemented", err(function()
      d2l.Decoder():init_state(torch.ones(1)) end))
    assert.matches("Dec.attention_weights is not implemented", err(function() return Dec().attention_weights end))
    assert.matches("AttentionDecoder:forward%(X, state%) is not implemented", err(function()
      d2l.AttentionDecoder()(torch.ones(1), nil) end))
  end)

  it("says what was wrong", function()
    assert.matches("tensor's shape %(2, 3%) != expected shape %(2, 4%)", err(function()
      d2l.check_shape(torch.ones(2, 3), { 2, 4 }) end))
    assert.matches("queries must be a 3%-d tensor", err(function()
      d2l.DotProductAttention(0)(torch.ones(2, 3), torch.ones(2, 3, 1), torch.ones(2, 3, 1)) end))
    assert.matches("num_hiddens must be a multiple of num_heads, got 10 and 3", err(function()
      d2l.MultiHeadAttention(10, 3, 0) end))
    assert.matches("num_hiddens must be an even positive integer", err(function() d2l.PositionalEncoding(5, 0) end))
    assert.matches("8 steps, more than max_len = 4", err(function()
      d2l.PositionalEncoding(4, 0, 4)(torch.ones(1, 8, 4)) end))
    assert.matches("expected two modules", err(function() d2l.EncoderDecoder(1, 2) end))
  end)
end)
