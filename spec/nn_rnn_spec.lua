-- nn_rnn_spec.lua: nn.RNN, nn.GRU and nn.LSTM against PyTorch's numbers
-- (spec/support/rnn_goldens.lua, written by gen_rnn_goldens.py with
-- Debian's python3-torch, weights copied across by formula): outputs,
-- final states and the gradients of every parameter, the input and the
-- initial states, in float64 and float32, on the CPU and on a simulated
-- GPU; then names, initialisation, printing, dropout and the errors.
local torch = require("torch")
local nn = torch.nn
local G = require("rnn_goldens")
local H = require("helpers")

local function numel(shape)
  local n = 1
  for _, s in ipairs(shape) do n = n * s end
  return n
end

-- the generator's formulas (its docstring)
local function fx(shape, dtype, dev, step)
  local v = {}
  for i = 0, numel(shape) - 1 do v[i + 1] = (((i * 37 + (step or 0) * 11) % 101) - 50) / 16 end
  return torch.tensor(v, { dtype = dtype, device = dev }):view(table.unpack(shape))
end

local function fg(t)
  local v = {}
  for i = 0, t:numel() - 1 do v[i + 1] = (((i * 13) % 29) - 14) / 8 end
  return torch.tensor(v, { dtype = t.dtype, device = t.device }):view(table.unpack(t.shape))
end

local function assert_close(got, want, tol, what, shape)
  if shape then assert.are.same(shape, got.shape, what .. ": shape") end
  local vals = got:reshape(-1):double():cpu():tolist()
  assert.are.equal(#want, #vals, what .. ": element count")
  for i = 1, #want do
    local a, b = vals[i], want[i]
    if math.abs(a - b) > tol * (1 + math.abs(b)) then
      error(("%s: element %d is %s, PyTorch gives %s (tolerance %g)"):format(what, i, tostring(a), tostring(b), tol), 2)
    end
  end
end

local CONFIGS = {
  { dtype = torch.float64, tol = 1e-12, dev = "cpu" },
  { dtype = torch.float32, tol = 2e-5, dev = "cpu" },
  { dtype = torch.float64, tol = 1e-12, dev = "cuda:0" },
  { dtype = torch.float32, tol = 2e-5, dev = "cuda:0" },
}

local function build(c, dtype, dev)
  local opts = { device = dev, dtype = dtype }
  for k, v in pairs(c.opts) do opts[k] = v end
  local m = nn[c.kind](4, 3, c.num_layers, opts)
  local names = {}
  torch.no_grad(function()
    for k, kv in ipairs(m:named_parameters()) do
      names[k] = kv[1]
      kv[2]:copy_(fx(kv[2].shape, dtype, dev, k) / 8)
    end
  end)
  return m, names
end

describe("nn.RNN, nn.GRU, nn.LSTM (issue 31)", function()
  local saved_n, saved_cap
  setup(function() saved_n, saved_cap = torch._sim_configure(2) end)
  teardown(function() collectgarbage(); collectgarbage(); torch._sim_configure(saved_n, saved_cap) end)

  for _, cfg in ipairs(CONFIGS) do
    local tag = (" (%s, %s)"):format(tostring(cfg.dtype):gsub("torch%.", ""), cfg.dev)
    describe("as PyTorch" .. tag, function()
      for _, c in ipairs(G) do
        it(c.name, function()
          local m, names = build(c, cfg.dtype, cfg.dev)
          assert.are.same(c.names, names)
          local x = (fx(c.xshape, cfg.dtype, cfg.dev) / 2):requires_grad_()
          local ins, state = { x = x }, nil
          if c.h0 then
            local h0 = (fx(c.hshape, cfg.dtype, cfg.dev, 50) / 4):requires_grad_()
            ins.h0, state = h0, h0
            if c.kind == "LSTM" then
              local c0 = (fx(c.hshape, cfg.dtype, cfg.dev, 60) / 4):requires_grad_()
              ins.c0, state = c0, { h0, c0 }
            end
          end
          local y, st = m(x, state)
          local hn, cn = st, nil
          if c.kind == "LSTM" then hn, cn = st[1], st[2] end
          assert.are.equal(torch.device(cfg.dev), y.device)
          assert_close(y, c.out, cfg.tol, "output", c.out_shape)
          assert_close(hn, c.hn, cfg.tol, "h_n", c.hshape)
          if cn then assert_close(cn, c.cn, cfg.tol, "c_n", c.hshape) end
          local loss = (y * fg(y)):sum() + (hn * fg(hn)):sum() / 2
          if cn then loss = loss + (cn * fg(cn)):sum() / 4 end
          loss:backward()
          for _, kv in ipairs(m:named_parameters()) do
            assert_close(kv[2].grad, c.grads[kv[1]], cfg.tol * 10, "gradient of " .. kv[1])
          end
          for k, t in pairs(ins) do assert_close(t.grad, c.grads[k], cfg.tol * 10, "gradient of " .. k) end
        end)
      end
    end)
  end

  it("PyTorch's parameter names, shapes and U(-1/sqrt(hidden), 1/sqrt(hidden)) initialisation", function()
    torch.manual_seed(3)
    local m = nn.LSTM(5, 4, { num_layers = 2, bidirectional = true })
    local sd = m:state_dict()
    assert.are.same({ 16, 5 }, sd.weight_ih_l0.shape)
    assert.are.same({ 16, 4 }, sd.weight_hh_l0_reverse.shape)
    assert.are.same({ 16, 8 }, sd.weight_ih_l1.shape)
    assert.are.same({ 16 }, sd.bias_hh_l1_reverse.shape)
    local lo, hi = math.huge, -math.huge
    for _, p in ipairs(m:parameters()) do
      lo, hi = math.min(lo, p:min():item()), math.max(hi, p:max():item())
    end
    assert.is_true(lo >= -0.5 and hi <= 0.5 and lo < -0.4 and hi > 0.4)
    assert.are.same({ 9, 12 }, nn.GRU(12, 3).weight_ih_l0.shape)
    assert.are.equal(2, #nn.RNN(2, 3, { bias = false }):parameters())
  end)

  it("prints as PyTorch", function()
    assert.are.equal("LSTM(5, 4, num_layers=2, bidirectional=True)", tostring(nn.LSTM(5, 4, 2, { bidirectional = true })))
    assert.are.equal("RNN(3, 2, nonlinearity='relu', bias=False, batch_first=True)",
      tostring(nn.RNN(3, 2, { nonlinearity = "relu", bias = false, batch_first = true })))
    assert.are.equal("GRU(3, 2, num_layers=3, dropout=0.5)", tostring(nn.GRU(3, 2, 3, { dropout = 0.5 })))
  end)

  it("dropout acts between layers in training mode only", function()
    torch.manual_seed(1)
    local m = nn.GRU(3, 2, 2, { dropout = 1.0 })
    local x = torch.randn(4, 2, 3)
    local y_train = m(x)
    m:eval()
    local y_eval = m(x)
    -- with p = 1 the second layer sees zeros: its output is the GRU of zeros
    local second = nn.GRU(2, 2)
    second:load_state_dict({ weight_ih_l0 = m.weight_ih_l1, weight_hh_l0 = m.weight_hh_l1, bias_ih_l0 = m.bias_ih_l1,
      bias_hh_l0 = m.bias_hh_l1 })
    local want = second(torch.zeros(4, 2, 2))
    assert.is_true((y_train - want):abs():max():item() < 1e-6)
    assert.is_true((y_eval - want):abs():max():item() > 1e-3)
  end)

  it("refuses bad input with PyTorch's messages", function()
    local m = nn.LSTM(4, 3, 2)
    H.errors(function() m(torch.zeros(5, 2, 6)) end, { "input.size(-1) must be equal to input_size. Expected 4, got 6" })
    H.errors(function() m(torch.zeros(5)) end, { "Expected input to be 2D or 3D, got 1D tensor instead" })
    H.errors(function() m(torch.zeros(5, 2, 4), { torch.zeros(1, 2, 3), torch.zeros(2, 2, 3) }) end,
      { "Expected hidden size (2, 2, 3), got [1, 2, 3]" })
    H.errors(function() m(torch.zeros(5, 2, 4), torch.zeros(2, 2, 3)) end, { "{h0, c0}" })
    H.errors(function() nn.GRU(4, 3)(torch.zeros(5, 2, 4), torch.zeros(1, 3, 3)) end,
      { "Expected hidden size (1, 2, 3), got [1, 3, 3]" })
    H.errors(function() nn.RNN(4, 3, { nonlinearity = "gelu" }) end, { "Unknown nonlinearity 'gelu'" })
    H.errors(function() nn.GRU(4, 3, { dropout = 2 }) end, { "dropout should be a number in range [0, 1]" })
    H.errors(function() nn.GRU(4, 3, { nonlinearity = "relu" }) end, { "nonlinearity" })
    H.errors(function() nn.LSTM(4, 0) end, { "hidden_size must be greater than zero" })
    H.errors(function() nn.LSTM(4, 3, 0) end, { "num_layers must be greater than zero" })
    H.errors(function() nn.LSTM("4", 3) end, { "expected integer sizes" })
  end)

  it("a model on cuda:0 refuses a cpu input", function()
    local m = nn.RNN(2, 3):to("cuda:0")
    H.errors(function() m(torch.zeros(2, 1, 2)) end, { "cuda:0" })
  end)
end)
