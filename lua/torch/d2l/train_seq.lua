-- torch.d2l.train_seq: the book's training loop for recurrent language
-- models (Dive into Deep Learning 9.5 and 9.6, PyTorch edition),
-- translated: grad_clipping, predict_ch8, train_epoch_ch8, train_ch8 and
-- the RNNModel wrapper around nn.RNN / nn.GRU / nn.LSTM. Token indices
-- are 1-based (text.lua). docs/d2l-text.md documents them.
local torch = require("torch")
local E = require("torch.utils.errors")
local fail, describe, check_options = E.fail, E.describe, E.check_options

local M = {}

local function d2l() return require("torch.d2l") end
local function is_module(v) return torch.nn.is_module(v) end

local function params_of(net, who)
  if is_module(net) then
    local r = {}
    for _, p in ipairs(net:parameters()) do if p.requires_grad then r[#r + 1] = p end end
    return r
  end
  if type(net) == "table" and type(net.params) == "table" then return net.params end
  fail(who .. ": net must be an nn.Module or a model with a params list (the book's RNNModelScratch), got "
    .. describe(net))
end

-- grad_clipping(net, theta): scales the gradients so their global norm is
-- at most theta. The book reads the norm back (`if norm > theta`); here
-- the factor min(1, theta / norm) is computed where the gradients are, so
-- the step does not wait for the device. Returns nothing, as the book's.
function M.grad_clipping(net, theta)
  if type(theta) ~= "number" then fail("d2l.grad_clipping(net, theta): theta must be a number, got " .. describe(theta)) end
  local params = params_of(net, "d2l.grad_clipping(net, theta)")
  local grads = {}
  for _, p in ipairs(params) do if p.grad ~= nil then grads[#grads + 1] = p.grad end end
  if #grads == 0 then return end
  torch.no_grad(function()
    local dev = grads[1].device
    local sq = {}
    for i, g in ipairs(grads) do sq[i] = (g * g):sum():to(dev) end
    local norm = torch.stack(sq):sum():sqrt()
    local coef = (theta / norm):clamp(nil, 1.0)
    for _, g in ipairs(grads) do g:mul_(coef:to(g.device)) end
  end)
end

-- The book calls begin_state with keywords; its scratch model takes
-- (batch_size, device) and its RNNModel (device, batch_size). In Lua the
-- call is positional: (batch_size, device), as a translated scratch model
-- takes them; d2l.RNNModel's begin_state takes either order.
local function begin_state(net, device, batch_size)
  if type(net) ~= "table" or type(net.begin_state) ~= "function" then
    fail("d2l: net needs a begin_state(batch_size, device) method (as d2l.RNNModel has), got " .. describe(net))
  end
  return net:begin_state(batch_size, device)
end

-- predict_ch8(prefix, num_preds, net, vocab, device): the prefix followed
-- by num_preds characters the model predicts, greedily.
function M.predict_ch8(prefix, num_preds, net, vocab, device)
  if type(prefix) ~= "string" or #prefix == 0 then
    fail("d2l.predict_ch8(prefix, num_preds, net, vocab, device): prefix must be a non-empty string, got " .. describe(prefix))
  end
  if math.type(num_preds) ~= "integer" or num_preds < 0 then
    fail("d2l.predict_ch8: num_preds must be a non-negative integer, got " .. describe(num_preds))
  end
  device = torch.device(device)
  local state = begin_state(net, device, 1)
  local outputs = { vocab:lookup(prefix:sub(1, 1)) }
  local function get_input() return torch.tensor({ { outputs[#outputs] } }, { dtype = torch.int64, device = device }) end
  torch.no_grad(function()
    for k = 2, #prefix do
      local _
      _, state = net(get_input(), state)
      outputs[#outputs + 1] = vocab:lookup(prefix:sub(k, k))
    end
    for _ = 1, num_preds do
      local y
      y, state = net(get_input(), state)
      outputs[#outputs + 1] = y:argmax(2):reshape(1):item()
    end
  end)
  return table.concat(vocab:to_tokens(outputs))
end

local function detach_state(state)
  if torch.is_tensor(state) then return state:detach() end
  local r = {}
  for i, s in ipairs(state) do r[i] = s:detach() end
  return r
end

-- train_epoch_ch8(net, train_iter, loss, updater, device, use_random_iter):
-- one epoch; returns the perplexity and tokens per second (torch.clock:
-- the modelled GPU's time on a modelled device) and, third, tokens per
-- second of this machine's real time.
function M.train_epoch_ch8(net, train_iter, loss, updater, device, use_random_iter)
  local D = d2l()
  local state
  local timer = D.Timer()
  local real0 = torch._real_clock()
  local metric = D.Accumulator(2)
  local it = type(train_iter) == "table" and type(train_iter.iter) == "function" and train_iter:iter() or train_iter
  for X, Y in it do
    if state == nil or use_random_iter then
      state = begin_state(net, device, X:size(1))
    else
      -- the book's state.detach_(): the graph stops at the minibatch's start
      state = detach_state(state)
    end
    local y = Y:t():reshape(-1)
    X, y = X:to(device), y:to(device)
    local y_hat
    y_hat, state = net(X, state)
    local l = loss(y_hat, y):mean()
    if type(updater) == "table" and type(updater.step) == "function" then
      updater:zero_grad()
      l:backward()
      M.grad_clipping(net, 1)
      updater:step()
    else
      l:backward()
      M.grad_clipping(net, 1)
      updater(1)
    end
    metric:add(l:detach() * y:numel(), y:numel())
  end
  local t, real = timer:stop(), torch._real_clock() - real0
  if metric[2] == 0 then fail("d2l.train_epoch_ch8: the data iterator gave no minibatch (a text too short?)") end
  return math.exp(metric[1] / metric[2]), metric[2] / t, metric[2] / real
end

-- The GPU model a device's time follows (issue 29), or nil.
local function model_of(device)
  if device.type ~= "cuda" then return nil end
  local ok, m = pcall(torch.cuda.gpu_model, device.index or torch.cuda.current_device())
  return ok and m or nil
end

-- train_ch8(net, train_iter, vocab, lr, num_epochs, device[, {use_random_iter
-- = false}]): the book's loop; the perplexity curve goes to a d2l.Animator
-- every 10 epochs (every epoch when num_epochs < 10), then the book's final
-- lines. On a modelled GPU the speed is the modelled GPU's, and says so.
function M.train_ch8(net, train_iter, vocab, lr, num_epochs, device, opts)
  local D = d2l()
  local who = "d2l.train_ch8(net, train_iter, vocab, lr, num_epochs, device[, options])"
  if type(opts) == "boolean" then opts = { use_random_iter = opts } end
  opts = E.options(opts, who)
  check_options(opts, "d2l.train_ch8", { "use_random_iter" })
  if type(lr) ~= "number" then fail(who .. ": lr must be a number, got " .. describe(lr)) end
  if math.type(num_epochs) ~= "integer" or num_epochs < 1 then
    fail(who .. ": num_epochs must be a positive integer, got " .. describe(num_epochs))
  end
  device = torch.device(device)
  local loss = torch.nn.CrossEntropyLoss()
  local every = num_epochs < 10 and 1 or 10
  local animator = D.Animator({ xlabel = "epoch", ylabel = "perplexity", legend = { "train" },
    xlim = { every, num_epochs } })
  local updater
  if is_module(net) then
    updater = torch.optim.SGD(net:parameters(), { lr = lr })
  else
    updater = function(batch_size) D.sgd(params_of(net, who), lr, batch_size) end
  end
  local function predict(prefix) return M.predict_ch8(prefix, 50, net, vocab, device) end
  local ppl, speed, real
  for epoch = 1, num_epochs do
    ppl, speed, real = M.train_epoch_ch8(net, train_iter, loss, updater, device, opts.use_random_iter)
    if epoch % every == 0 then
      if every == 10 then print(predict("time traveller")) end
      animator:add(epoch, { ppl })
    end
  end
  local line = ("perplexity %.1f, %.1f tokens/sec on %s"):format(ppl, speed, D.device_name(device))
  local model = model_of(device)
  if model then line = line .. (" modelled on %s; computing it here ran at %.1f tokens/sec"):format(model.a_name, real) end
  print(line)
  print(predict("time traveller"))
  print(predict("traveller"))
  D.last_animator = animator
end

-- ---- RNNModel -----------------------------------------------------------------

-- RNNModel(rnn_layer, vocab_size): the book's concise model: one-hot
-- inputs (1-based ids) through rnn_layer, then a Linear to vocab_size.
-- forward(inputs [batch, steps], state) gives the outputs
-- [steps * batch, vocab_size] and the new state.
local RNNModel
local function rnn_model_class()
  if RNNModel then return RNNModel end
  local nn = torch.nn
  RNNModel = nn.Module:extend("RNNModel")
  function RNNModel:init(rnn_layer, vocab_size)
    if not (is_module(rnn_layer) and rnn_layer:isinstance(nn.RNNBase)) then
      fail("d2l.RNNModel(rnn_layer, vocab_size): rnn_layer must be an nn.RNN, nn.GRU or nn.LSTM, got "
        .. describe(rnn_layer))
    end
    if math.type(vocab_size) ~= "integer" or vocab_size < 1 then
      fail("d2l.RNNModel(rnn_layer, vocab_size): vocab_size must be a positive integer (#vocab), got "
        .. describe(vocab_size))
    end
    self.rnn = rnn_layer
    self.vocab_size = vocab_size
    self.num_hiddens = rnn_layer.hidden_size
    self.num_directions = rnn_layer.bidirectional and 2 or 1
    self.linear = nn.Linear(self.num_hiddens * self.num_directions, vocab_size)
  end
  function RNNModel:forward(inputs, state)
    local X = nn.functional.one_hot(inputs:t():long(), self.vocab_size)
    X = X:to(self.linear.weight.dtype)
    local Y
    Y, state = self.rnn(X, state)
    local output = self.linear(Y:reshape(-1, Y:size(Y:dim())))
    return output, state
  end
  -- begin_state(device[, batch_size = 1]) (the book's order) or
  -- begin_state(batch_size, device) (d2l's calls, the scratch model's
  -- order): zeros; the LSTM's {h, c}
  function RNNModel:begin_state(device, batch_size)
    if math.type(device) == "integer" then device, batch_size = batch_size, device end
    batch_size = batch_size or 1
    local function z()
      return torch.zeros(self.num_directions * self.rnn.num_layers, batch_size, self.num_hiddens,
        { device = device, dtype = self.linear.weight.dtype })
    end
    if self.rnn:isinstance(nn.LSTM) then return { z(), z() } end
    return z()
  end
  return RNNModel
end

function M.RNNModel(...) return rnn_model_class()(...) end

return M
