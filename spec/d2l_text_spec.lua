-- d2l_text_spec.lua: the recurrent chapters' d2l helpers (issue 31):
-- read_time_machine, tokenize and Vocab against the book's code run by
-- Python on the same text (spec/support/text_goldens.lua, from
-- gen_text_goldens.py; indices 1-based), the sequence iterators on the
-- book's toy corpus, load_data_time_machine, grad_clipping against a
-- float64 computation, RNNModel, predict_ch8 and train_ch8 (perplexity
-- falls, the book's last lines, modelled speeds say so) on the CPU and a
-- simulated GPU.
local torch = require("torch")
local d2l = require("d2l")
local nn = torch.nn
local G = require("text_goldens")
local H = require("helpers")
local R = require("gshell_run")
-- the CPU training repeats in single-threaded Lua what the simulated GPU's
-- case runs under the sanitizers too
local plain_it = H.plain_it(it, pending, "the cuda:0 case runs the same loop under the sanitizers")

local function capture(fn)
  local lines, old = {}, _G.print
  _G.print = function(...)
    local t = table.pack(...)
    for i = 1, t.n do t[i] = tostring(t[i]) end
    lines[#lines + 1] = table.concat(t, "\t", 1, t.n)
  end
  local ok, err = pcall(fn)
  _G.print = old
  if not ok then error(err, 0) end
  return lines
end

describe("d2l text helpers (issue 31)", function()
  it("read_time_machine and tokenize as the book's, on the default text (GPL-3 from base-files)", function()
    local lines = d2l.read_time_machine()
    assert.are.equal(G.num_lines, #lines)
    for i, l in ipairs(G.first_lines) do assert.are.equal(l, lines[i]) end
    assert.are.same(G.first_tokens, d2l.tokenize(lines)[1])
    assert.are.same({ "g", "n", "u", " " }, { table.unpack(d2l.tokenize(lines, "char")[1], 1, 4) })
    H.errors(function() d2l.tokenize(lines, "bpe") end, { "unknown token type: bpe" })
    H.errors(function() d2l.read_time_machine("/nonexistent/tm.txt") end, { "cannot read /nonexistent/tm.txt" })
  end)

  it("Vocab: the book's order and frequencies, <unk> at 1, reserved tokens, min_freq, lookups both ways", function()
    local tokens = d2l.tokenize(d2l.read_time_machine())
    local vocab = d2l.Vocab(tokens)
    assert.are.equal(G.word_len, #vocab)
    assert.are.same(G.word_first, { table.unpack(vocab.idx_to_token, 1, 20) })
    assert.are.same(G.word_last, { table.unpack(vocab.idx_to_token, #vocab - 19, #vocab) })
    for i, tf in ipairs(G.word_freqs) do assert.are.same(tf, vocab.token_freqs[i]) end
    assert.are.equal(1, vocab.unk)
    assert.are.same(G.line_ids, vocab[{ "gnu", "general", "public", "license", "nonexistentword" }])
    assert.are.equal(G.line_ids[1], vocab["gnu"])
    assert.are.equal(G.line_ids[1], vocab:lookup("gnu"))
    assert.are.equal("the", vocab:to_tokens(2))
    assert.are.same({ "<unk>", "the" }, vocab:to_tokens(torch.tensor({ 1, 2 })))
    H.errors(function() vocab:to_tokens(0) end, { "out of range", "1-based" })
    local v5 = d2l.Vocab(tokens, { min_freq = 5, reserved_tokens = { "<pad>", "<bos>" } })
    assert.are.equal(G.word5_len, #v5)
    assert.are.same(G.word5_first, { table.unpack(v5.idx_to_token, 1, 10) })
    H.errors(function() d2l.Vocab(tokens, { min_freqs = 5 }) end, { "min_freqs" })
  end)

  it("load_corpus_time_machine: character ids (1-based) and max_tokens", function()
    local corpus, vocab = d2l.load_corpus_time_machine()
    assert.are.same(G.char_tokens, vocab.idx_to_token)
    assert.are.equal(G.corpus_len, #corpus)
    assert.are.same(G.corpus_first, { table.unpack(corpus, 1, 40) })
    local short = d2l.load_corpus_time_machine(100)
    assert.are.equal(100, #short)
  end)

  it("the sequence iterators on the book's toy corpus: Y is X shifted, sequential rows continue", function()
    torch.manual_seed(0)
    local seq = {}
    for i = 1, 35 do seq[i] = i - 1 end
    local n, seen = 0, {}
    for X, Y in d2l.seq_data_iter_random(seq, 2, 5) do
      n = n + 1
      assert.are.same({ 2, 5 }, X.shape)
      assert.are.equal(torch.int64, X.dtype)
      assert.is_true(Y:equal(X + 1))
      for r = 1, 2 do
        local row = X[r]:tolist()
        for k = 2, 5 do assert.are.equal(row[1] + k - 1, row[k]) end
        assert.is_nil(seen[row[1]])
        seen[row[1]] = true
      end
    end
    assert.are.equal(3, n)
    local prev
    n = 0
    for X, Y in d2l.seq_data_iter_sequential(seq, 2, 5) do
      n = n + 1
      assert.is_true(Y:equal(X + 1))
      if prev then assert.is_true(X:select(2, 1):equal(prev:select(2, 5) + 1)) end
      prev = X
    end
    assert.is_true(n == 2 or n == 3)
  end)

  it("load_data_time_machine: the loader, its vocabulary, options and another text through path", function()
    torch.manual_seed(0)
    local train_iter, vocab = d2l.load_data_time_machine(4, 10, { max_tokens = 500 })
    assert.are.equal(#G.char_tokens, #vocab)
    local n = 0
    for X, Y in train_iter do
      n = n + 1
      assert.are.same({ 4, 10 }, X.shape)
      assert.is_true(X:narrow(2, 2, 9):equal(Y:narrow(2, 1, 9)))
    end
    assert.is_true(n >= 11 and n <= 12)
    local again = 0
    for _ in train_iter do again = again + 1 end
    assert.is_true(again >= 11)
    local rnd = d2l.load_data_time_machine(4, 10, { max_tokens = 500, use_random_iter = true })
    local m = 0
    for _, _ in rnd:iter() do m = m + 1 end
    assert.is_true(m >= 11)
    local path = os.tmpname()
    local f = assert(io.open(path, "w"))
    f:write("Abc, ABC!\n  ab\n")
    f:close()
    local _, v = d2l.load_data_time_machine(1, 2, { path = path })
    assert.are.same({ "<unk>", "a", "b", "c", " " }, v.idx_to_token)
    os.remove(path)
    H.errors(function() d2l.load_data_time_machine(4, 10, { use_random = true }) end, { "use_random" })
    H.errors(function() d2l.load_data_time_machine(0, 10) end, { "positive integers" })
  end)

  it("grad_clipping: the global norm capped at theta, as a float64 computation", function()
    local net = nn.Linear(3, 2, { dtype = torch.float64 })
    net.weight.grad = torch.tensor({ { 3, 0, 0 }, { 0, 4, 0 } }, { dtype = torch.float64 })
    net.bias.grad = torch.tensor({ 12, 0 }, { dtype = torch.float64 })  -- norm sqrt(9 + 16 + 144) = 13
    d2l.grad_clipping(net, 1)
    H.assert_close(net.weight.grad:tolist(), { { 3 / 13, 0, 0 }, { 0, 4 / 13, 0 } }, 1e-12, 1e-12)
    H.assert_close(net.bias.grad:tolist(), { 12 / 13, 0 }, 1e-12, 1e-12)
    d2l.grad_clipping(net, 5)  -- the norm is 1 now: unchanged
    H.assert_close(net.bias.grad:tolist(), { 12 / 13, 0 }, 1e-12, 1e-12)
  end)

  it("RNNModel: one-hot inputs, [steps * batch, vocab] outputs, begin_state for each kind", function()
    local net = d2l.RNNModel(nn.LSTM(28, 8, { bidirectional = true }), 28)
    local st = net:begin_state("cpu", 3)
    assert.are.equal(2, #st)
    assert.are.same({ 2, 3, 8 }, st[1].shape)
    local y, st2 = net(torch.ones(3, 5, { dtype = torch.int64 }), st)
    assert.are.same({ 15, 28 }, y.shape)
    assert.are.same({ 2, 3, 8 }, st2[2].shape)
    assert.are.same({ 1, 1, 8 }, d2l.RNNModel(nn.GRU(28, 8), 28):begin_state("cpu").shape)
    assert.are.same({ 1, 4, 8 }, d2l.RNNModel(nn.GRU(28, 8), 28):begin_state(4, "cpu").shape)
    H.errors(function() d2l.RNNModel(nn.Linear(2, 3), 28) end, { "nn.RNN, nn.GRU or nn.LSTM" })
  end)

  it("train_epoch_ch8 with the book's from-scratch RNN (params, begin_state(batch_size, device), d2l.sgd)", function()
    torch.manual_seed(2)
    local train_iter, vocab = d2l.load_data_time_machine(8, 12, { max_tokens = 1500 })
    local V, Hn = #vocab, 24
    local function normal(...) return (torch.randn(...) * 0.01):requires_grad_() end
    local params = { normal(V, Hn), normal(Hn, Hn), torch.zeros(Hn):requires_grad_(), normal(Hn, V),
      torch.zeros(V):requires_grad_() }
    local net = setmetatable({ params = params }, { __call = function(self, X, state)
      local W_xh, W_hh, b_h, W_hq, b_q = table.unpack(self.params)
      local inputs = nn.functional.one_hot(X:t(), V):float()
      local H, outputs = state[1], {}
      for t = 1, inputs:size(1) do
        H = torch.tanh(inputs[t]:matmul(W_xh) + H:matmul(W_hh) + b_h)
        outputs[t] = H:matmul(W_hq) + b_q
      end
      return torch.cat(outputs, 1), { H }
    end })
    function net:begin_state(batch_size, device) return { torch.zeros(batch_size, Hn, { device = device }) } end
    local loss = nn.CrossEntropyLoss()
    local updater = function(batch_size) d2l.sgd(params, 1, batch_size) end
    local first = d2l.train_epoch_ch8(net, train_iter, loss, updater, "cpu", false)
    local ppl
    for _ = 1, 4 do ppl = d2l.train_epoch_ch8(net, train_iter, loss, updater, "cpu", true) end
    assert.is_true(ppl < first * 0.9, ("perplexity %g after 5 epochs, %g after the first"):format(ppl, first))
    assert.are.equal(14 + 5, #d2l.predict_ch8("time traveller", 5, net, vocab, "cpu"))
  end)

  for _, dev in ipairs({ "cpu", "cuda:0" }) do
    local this_it = dev == "cpu" and plain_it or it
    this_it("train_ch8 on " .. dev .. ": perplexity falls, the book's lines, predict_ch8 extends the prefix", function()
      local saved_n, saved_cap = torch._sim_configure(2)
      local ok, err = pcall(function()
        torch.manual_seed(1)
        local train_iter, vocab = d2l.load_data_time_machine(8, 16, { max_tokens = 1000 })
        local net = d2l.RNNModel(nn.GRU(#vocab, 32), #vocab):to(dev)
        local loss = nn.CrossEntropyLoss()
        local opt = torch.optim.SGD(net:parameters(), { lr = 1 })
        local first = d2l.train_epoch_ch8(net, train_iter, loss, opt, dev, false)
        local out = capture(function() d2l.train_ch8(net, train_iter, vocab, 1, 4, dev) end)
        local last = tonumber(out[#out - 2]:match("^perplexity ([%d.]+), [%d.]+ tokens/sec on " .. dev:gsub("%p", "%%%0")))
        assert.is_not_nil(last, out[#out - 2])
        assert.is_true(last < first * 0.9, ("perplexity %g after 5 epochs, %g after the first"):format(last, first))
        if dev == "cuda:0" then
          assert.matches(" modelled on a .*; computing it here ran at [%d.]+ tokens/sec$", out[#out - 2])
        else
          assert.is_nil(out[#out - 2]:find("modelled", 1, true))
        end
        assert.are.equal("time traveller", out[#out - 1]:sub(1, 14))
        assert.are.equal(14 + 50, #out[#out - 1])
        assert.are.equal(9 + 50, #out[#out])
        assert.is_not_nil(d2l.last_animator)
      end)
      collectgarbage()
      torch._sim_configure(saved_n, saved_cap)
      if not ok then error(err, 0) end
    end)
  end

  it("help: ?name gives the recurrent layers' and the text helpers' lines", function()
    local out = R.prompt({ "?nn.LSTM", "help(d2l.Vocab)", "?d2l.train_ch8" })
    assert.truthy(out:find("-> Y, {h_n, c_n} = lstm(X[, {h0, c0}]) (docs/rnn.md)", 1, true), out)
    assert.truthy(out:find("vocab[token] (1-based, <unk> = 1)", 1, true), out)
    assert.truthy(out:find("d2l.train_ch8(net, train_iter, vocab, lr, num_epochs, device", 1, true), out)
  end)
end)
