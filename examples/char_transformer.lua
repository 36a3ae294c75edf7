-- A small GPT-like next-character model (Dive into Deep Learning 11.7 and
-- 11.9's decoder-only idea): token embedding + learned positional
-- embedding, 2 pre-norm blocks of causal self-attention
-- (nn.MultiheadAttention with batch_first and the mask
-- torch.ones(T, T, {dtype = torch.bool}):triu(1)) and a GELU MLP, a final
-- nn.LayerNorm and a linear head over the vocabulary, trained with
-- cross-entropy and Adam on the (X, Y) windows of
-- d2l.load_data_time_machine (the default text is
-- /usr/share/common-licenses/GPL-3, docs/d2l-text.md). It prints the
-- perplexity each epoch (a d2l.Animator), the final perplexity and
-- tokens/sec (d2l.timing_note says when they are a modelled GPU's), then a
-- greedy sample from the prefix "the program".
--   gshell --sim-gpus 2 examples/char_transformer.lua [dp] [epochs]
-- On one device (d2l.try_gpu()) by default; with `dp` as an argument (or
-- GSHELL_EXAMPLE_DP=1) on every GPU through nn.DataParallel, which splits
-- each batch over the devices (on a machine without a GPU it runs on the
-- cpu and says so).
-- The default run: 10000 characters, 64 features, 4 heads, 32 steps, batch
-- 32, Adam at lr 0.01, 20 epochs (106k parameters). MEASURED on 2 busy
-- cores (AMD EPYC, load about 3): the perplexity falls from 15.6 to 4.2 on
-- every device (the same numbers: one seed, the same arithmetic), and
-- "the program of the work the work is the work any an"; on the cpu 9 s,
-- 20700 tokens/sec; on one simulated V100 103500 tokens/sec modelled; on
-- two with `dp` 63100 (slower: at this size the host's queuing of many
-- tiny kernels decides a step, two GPUs need twice the kernels queued, and
-- DataParallel adds copying the parameters to the second GPU and splitting
-- and gathering the batch every step; docs/book-numbers.md, LeNet).
-- With GSHELL_EXAMPLE_QUICK=1 (or `quick`) the short mode the specs run:
-- 1500 characters, 32 features, 2 heads, 16 steps, batch 16, 3 epochs, the
-- perplexity from 20.8 to 12.4 (a uniform guess is 28, the vocabulary).
local torch = require("torch")
local d2l = require("d2l")
local nn = torch.nn

local QUICK = os.getenv("GSHELL_EXAMPLE_QUICK") == "1"
local DP = os.getenv("GSHELL_EXAMPLE_DP") == "1"
local num_epochs
for _, a in ipairs(arg or {}) do
  if a == "quick" then QUICK = true
  elseif a == "dp" then DP = true
  elseif tonumber(a) then num_epochs = math.tointeger(tonumber(a)) end
end

torch.manual_seed(0)
local batch_size, num_steps, max_tokens = 32, 32, 10000
local d_model, num_heads, num_layers, lr = 64, 4, 2, 0.01
num_epochs = num_epochs or 20
if QUICK then
  batch_size, num_steps, max_tokens, d_model, num_heads = 16, 16, 1500, 32, 2
  num_epochs = 3
end
local train_iter, vocab = d2l.load_data_time_machine(batch_size, num_steps, { max_tokens = max_tokens })
print(("%d characters, vocabulary of %d"):format(#train_iter.corpus, #vocab))

-- One block: x + attention(norm(x)), then x + mlp(norm(x)) (GPT-2's
-- pre-norm order, which trains without a warm-up at this size).
local Block = nn.Module:extend("CausalBlock")
function Block:init(d, heads)
  self.ln1 = nn.LayerNorm(d)
  self.attn = nn.MultiheadAttention(d, heads, { batch_first = true })
  self.ln2 = nn.LayerNorm(d)
  self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
end
function Block:forward(x, mask)
  local h = self.ln1(x)
  x = x + self.attn(h, h, h, { attn_mask = mask, need_weights = false })
  return x + self.mlp(self.ln2(x))
end

-- forward(X [batch, steps] of 1-based ids) -> scores [batch, steps, vocab].
local CharGPT = nn.Module:extend("CharGPT")
function CharGPT:init(vocab_size, d, heads, layers, max_len)
  self.tok = nn.Embedding(vocab_size, d)
  self.pos = nn.Embedding(max_len, d)
  local blocks = {}
  for i = 1, layers do blocks[i] = Block(d, heads) end
  self.blocks = nn.ModuleList(blocks)
  self.ln_f = nn.LayerNorm(d)
  self.head = nn.Linear(d, vocab_size)
end
function CharGPT:forward(X)
  local T, dev = X:size(2), X.device
  local h = self.tok(X) + self.pos(torch.arange(1, T + 1, { device = dev }))
  -- true above the diagonal: step t may not look at steps after it
  local mask = torch.ones(T, T, { dtype = torch.bool, device = dev }):triu(1)
  for _, block in ipairs(self.blocks) do h = block(h, mask) end
  return self.head(self.ln_f(h))
end

-- the devices: one, or every GPU through DataParallel
local devices = { d2l.try_gpu() }
if DP then devices = d2l.try_all_gpus() end
local net = CharGPT(#vocab, d_model, num_heads, num_layers, num_steps):to(devices[1])
local model = net
if DP and devices[1].type == "cuda" then
  model = nn.DataParallel(net, { device_ids = devices })
elseif DP then
  print("no GPU: DataParallel would call the model on the cpu; running on the cpu")
end
local names = {}
for i, d in ipairs(devices) do names[i] = tostring(d) end
local where = #devices == 1 and names[1] or ("[" .. table.concat(names, ", ") .. "]")
local count = 0
for _, p in ipairs(net:parameters()) do count = count + p:numel() end
print(("CharGPT: %d layers, %d features, %d heads, %d parameters, training on %s%s"):format(num_layers, d_model,
  num_heads, count, where, #devices > 1 and " (nn.DataParallel)" or ""))

-- greedy: the prefix, then each next character the most likely one, the
-- model seeing at most its num_steps last characters
local function predict(prefix, num_preds)
  net:eval()
  local ids = vocab[d2l.tokenize({ prefix }, "char")[1]]
  torch.no_grad(function()
    for _ = 1, num_preds do
      local first = math.max(1, #ids - num_steps + 1)
      local X = torch.tensor({ table.move(ids, first, #ids, 1, {}) }, { dtype = torch.int64, device = devices[1] })
      local scores = net(X)
      ids[#ids + 1] = scores[{ 1, X:size(2) }]:argmax():item()
    end
  end)
  net:train()
  return table.concat(vocab:to_tokens(ids))
end

local loss = nn.CrossEntropyLoss()
local trainer = torch.optim.Adam(net:parameters(), { lr = lr })
local animator = d2l.Animator({ xlabel = "epoch", ylabel = "perplexity", legend = { "train" }, xlim = { 1, num_epochs } })
local timer, tokens = d2l.Timer(), 0
local real0 = torch._real_clock()
local ppl
for epoch = 1, num_epochs do
  local sum, n = torch.zeros(1, { device = devices[1] }), 0
  for X, Y in train_iter do
    X, Y = X:to(devices[1]), Y:to(devices[1])
    local scores = model(X)
    local l = loss(scores:reshape(-1, #vocab), Y:reshape(-1))
    trainer:zero_grad()
    l:backward()
    nn.utils.clip_grad_norm_(net:parameters(), 1.0)
    trainer:step()
    sum = sum + l:detach() * Y:numel()
    n = n + Y:numel()
  end
  -- one read of the device per epoch
  ppl = math.exp(sum:item() / n)
  tokens = tokens + n
  animator:add(epoch, { ppl })
end
local t, real = timer:stop(), torch._real_clock() - real0
local line = ("perplexity %.1f, %.1f tokens/sec on %s"):format(ppl, tokens / t, where)
local note = d2l.timing_note(devices)
if note ~= "" then
  line = line .. note .. ("; computing it here ran at %.1f tokens/sec"):format(tokens / real)
end
print(line)
print(predict("the program", 40))
