-- A character-level language model (Dive into Deep Learning 9.6 and 10.1,
-- concise implementations): an nn.LSTM (or nn.GRU: `gru` as an argument)
-- through the book's d2l.RNNModel, trained with d2l.train_ch8 on the
-- default text (/usr/share/common-licenses/GPL-3; the book's is "The Time
-- Machine", docs/d2l-text.md) on d2l.try_gpu(), then a prediction.
--   gshell --sim-gpus 2 examples/char_rnn.lua [gru] [epochs]
-- The book trains 500 epochs of 10000 characters (batch 32, 35 steps,
-- 256 hidden units, lr 1), reaching perplexity about 1.0 on its text;
-- the default run here is 50 epochs (reduced: the book's would take a
-- quarter of an hour here). Measured on 2 busy cores (AMD EPYC, load 7 to
-- 11): 100 s, perplexity 17.6 at epoch 10 and 11.3 at epoch 50, about 5000
-- tokens/sec, the predictions at "the the the"; `gru` reaches 9.1.
-- With GSHELL_EXAMPLE_QUICK=1 (or `quick` as an argument) it runs the
-- short mode the specs use: 1000 characters, 32 hidden units, 5 epochs,
-- where the perplexity falls from about 28 (the vocabulary's size: a
-- uniform guess) to 18.
local torch = require("torch")
local d2l = require("d2l")
local nn = torch.nn

local QUICK = os.getenv("GSHELL_EXAMPLE_QUICK") == "1"
local kind, num_epochs = "lstm", nil
for _, a in ipairs(arg or {}) do
  if a == "quick" then QUICK = true
  elseif a == "gru" or a == "lstm" then kind = a
  elseif tonumber(a) then num_epochs = math.tointeger(tonumber(a)) end
end

torch.manual_seed(0)
local batch_size, num_steps = 32, 35
local max_tokens, num_hiddens, lr = 10000, 256, 1
num_epochs = num_epochs or 50
if QUICK then
  batch_size, num_steps, max_tokens, num_hiddens = 8, 16, 1000, 32
  num_epochs = 5
end
local train_iter, vocab = d2l.load_data_time_machine(batch_size, num_steps, { max_tokens = max_tokens })
-- the vocabulary's first entries, its space shown as '_'
local first = {}
for i = 1, 8 do first[i] = vocab.idx_to_token[i] == " " and "_" or vocab.idx_to_token[i] end
print(("%d characters, vocabulary of %d: %s ..."):format(#train_iter.corpus, #vocab, table.concat(first, " ")))

local device = d2l.try_gpu()
local layer = kind == "gru" and nn.GRU(#vocab, num_hiddens) or nn.LSTM(#vocab, num_hiddens)
local net = d2l.RNNModel(layer, #vocab):to(device)
print(net)
-- untrained, the model's guesses are arbitrary
print("before training: " .. d2l.predict_ch8("time traveller", 10, net, vocab, device))
d2l.train_ch8(net, train_iter, vocab, lr, num_epochs, device)
