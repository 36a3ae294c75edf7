-- examples/attention_heatmaps.lua: Dive into Deep Learning's attention
-- chapter (11.3 "Attention Scoring Functions", 11.5 "Multi-Head
-- Attention", 11.7 "The Transformer Architecture") on the book's toy
-- inputs: the masked softmax, dot-product and additive attention with the
-- heatmaps of their weights, then multi-head self-attention (the book's
-- d2l.MultiHeadAttention and PyTorch's nn.MultiheadAttention) and a
-- transformer encoder's weights per layer and head, on d2l.try_gpu().
--
--   build/gshell --sim-gpus 2 examples/attention_heatmaps.lua
--   build/gshell examples/attention_heatmaps.lua            (no GPU: the cpu)
--   build/gshell --notebook examples/attention_heatmaps.lua --md out.md
--                                                           (the heatmaps as SVG files)
--
-- At a terminal the heatmaps are drawn in colour; piped, each is one line.
-- It takes about a second; there is no short mode.
torch = torch or require("torch")
nn = nn or torch.nn
d2l = d2l or require("d2l")

torch.manual_seed(0)
local device = d2l.try_gpu()
print("device: " .. d2l.device_name(device))

-- %% masked softmax: the padding past each valid length gets weight 0
print("-- masked_softmax, one valid length per matrix, then one per row")
print(d2l.masked_softmax(torch.rand(2, 2, 4), torch.tensor({ 2, 3 })))
print(d2l.masked_softmax(torch.rand(2, 2, 4), torch.tensor({ { 1, 3 }, { 2, 4 } })))

-- %% scaled dot-product attention (the book's toy inputs)
local queries = torch.normal(0, 1, { 2, 1, 2 })
local keys = torch.normal(0, 1, { 2, 10, 2 })
local values = torch.normal(0, 1, { 2, 10, 4 })
local valid_lens = torch.tensor({ 2, 6 })
local attention = d2l.DotProductAttention(0.5)
attention:eval()
d2l.check_shape(attention(queries, keys, values, valid_lens), { 2, 1, 4 })
print("-- DotProductAttention: output " .. tostring(attention(queries, keys, values, valid_lens).shape))
d2l.show_heatmaps(attention.attention_weights:reshape(1, 1, 2, 10), "Keys", "Queries")

-- %% additive attention, with the first edition's inputs: every key the
-- same, so each query spreads its weight evenly over the valid keys and
-- gets the mean of their values: rows 1-2 and 1-6 of 0..39
attention = d2l.AdditiveAttention(8, 0.1)
attention:eval()
local values40 = torch.arange(40, { dtype = torch.float32 }):reshape(1, 10, 4):tile(2, 1, 1)
local out = attention(torch.normal(0, 1, { 2, 1, 20 }), torch.ones(2, 10, 2), values40, valid_lens)
print("-- AdditiveAttention with equal keys: the mean of the valid values")
print(out)
d2l.show_heatmaps(attention.attention_weights:reshape(1, 1, 2, 10), "Keys", "Queries")

-- %% multi-head attention, the book's own, on the device
local num_hiddens, num_heads = 100, 5
local mha = d2l.MultiHeadAttention(num_hiddens, num_heads, 0.5):to(device)
mha:eval()
local X = torch.ones(2, 4, num_hiddens, { device = device })
local Y = torch.ones(2, 6, num_hiddens, { device = device })
d2l.check_shape(mha(X, Y, Y, torch.tensor({ 3, 2 }, { device = device })), { 2, 4, num_hiddens })
print("-- d2l.MultiHeadAttention: output torch.Size([2, 4, 100]) on " .. d2l.device_name(mha.W_o.weight.device))

-- %% self-attention with PyTorch's module: every position of a sequence
-- attends to the others; the weights of each of 4 heads for one sequence,
-- the last two positions padding
local self_attn = nn.MultiheadAttention(16, 4, { batch_first = true, device = device })
local seq = torch.randn(1, 8, 16, { device = device })
local padding = torch.tensor({ { false, false, false, false, false, false, true, true } }, { device = device })
local y, w = self_attn(seq, seq, seq, { key_padding_mask = padding, average_attn_weights = false })
print(("-- nn.MultiheadAttention self-attention: output %s, weights %s on %s"):format(tostring(y.shape),
  tostring(w.shape), d2l.device_name(w.device)))
print(("   weight on the padding: %.1f"):format(w[{ {}, {}, {}, { 7, 8 } }]:sum():item()))
d2l.show_heatmaps(w:cpu(), "Key positions", "Query positions",
  { titles = { "Head 1", "Head 2", "Head 3", "Head 4" }, figsize = { 7, 3.5 } })

-- %% a transformer encoder: the weights of each layer (rows) and head
-- (columns) over a batch whose second sequence has 5 valid tokens
local num_steps = 10
local encoder = d2l.TransformerEncoder(50, 16, 32, 4, 2, 0.1):to(device)
encoder:eval()
local tokens = torch.randint(1, 51, { 2, num_steps }, { device = device })
local enc_out = encoder(tokens, torch.tensor({ num_steps, 5 }, { device = device }))
print("-- TransformerEncoder: output " .. tostring(enc_out.shape))
local enc_weights = torch.cat(encoder.attention_weights, 1):reshape(2, 2, 4, num_steps, num_steps)
d2l.show_heatmaps(enc_weights[{ {}, 2 }]:cpu(), "Key positions", "Query positions",
  { titles = { "Head 1", "Head 2", "Head 3", "Head 4" }, figsize = { 7, 3.5 } })
