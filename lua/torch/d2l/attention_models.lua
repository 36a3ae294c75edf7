-- torch.d2l.attention_models: the attention and transformer chapters'
-- modules (Dive into Deep Learning, PyTorch edition 1.0: 10.6, 11.3, 11.5,
-- 11.6, 11.7), translated line by line as nn.Module classes, so a learner
-- can extend them (d2l.Encoder:extend("Seq2SeqEncoder")) as the book
-- subclasses them. Dims are 1-based (the book's keys.transpose(1, 2) is
-- keys:transpose(2, 3)); token ids are 1-based as nn.Embedding's.
-- docs/d2l.md documents each one.
local torch = require("torch")
local nn = require("torch.nn")
local E = require("torch.utils.errors")
local fail, describe = E.fail, E.describe
local masked_softmax = require("torch.d2l.attention").masked_softmax

local M = {}

local function shape_str(s)
  local p = {}
  for i = 1, #s do p[i] = tostring(s[i]) end
  return "(" .. table.concat(p, ", ") .. ")"
end

-- check_shape(a, shape): the book's assertion that a tensor has a shape.
function M.check_shape(a, shape)
  if not torch.is_tensor(a) then fail("d2l.check_shape(a, shape): a must be a tensor, got " .. describe(a)) end
  if torch.is_tensor(shape) or type(shape) ~= "table" then
    fail("d2l.check_shape(a, shape): shape must be a list of sizes, got " .. describe(shape))
  end
  local same = a:dim() == #shape
  for i = 1, #shape do if same and a:size(i) ~= shape[i] then same = false end end
  if not same then
    fail(("tensor's shape %s != expected shape %s"):format(shape_str(a.shape), shape_str(shape)))
  end
end

local function check_qkv(who, queries, keys, values)
  for _, p in ipairs({ { "queries", queries }, { "keys", keys }, { "values", values } }) do
    if not torch.is_tensor(p[2]) or p[2]:dim() ~= 3 then
      fail(("%s: %s must be a 3-d tensor (batch, count, features), got %s"):format(who, p[1], describe(p[2])))
    end
  end
end

-- ---- 11.3: attention scoring functions ------------------------------------------

-- DotProductAttention(dropout): scaled dot-product attention. forward(
-- queries [b, q, d], keys [b, k, d], values [b, k, v][, valid_lens]) ->
-- [b, q, v]; the weights stay on the module (attention_weights).
local DotProductAttention = nn.Module:extend("DotProductAttention")
M.DotProductAttention = DotProductAttention

function DotProductAttention:init(dropout)
  self.dropout = nn.Dropout(dropout)
end

function DotProductAttention:forward(queries, keys, values, valid_lens)
  check_qkv("DotProductAttention", queries, keys, values)
  local d = queries:size(3)
  -- swap the last two dimensions of keys with keys:transpose(2, 3)
  local scores = torch.bmm(queries, keys:transpose(2, 3)) / math.sqrt(d)
  self.attention_weights = masked_softmax(scores, valid_lens)
  return torch.bmm(self.dropout(self.attention_weights), values)
end

-- AdditiveAttention(num_hiddens, dropout): queries and keys projected to
-- num_hiddens features (lazily sized, as the book's LazyLinear), added,
-- tanh, scored by one more projection.
local AdditiveAttention = nn.Module:extend("AdditiveAttention")
M.AdditiveAttention = AdditiveAttention

function AdditiveAttention:init(num_hiddens, dropout)
  self.W_k = nn.LazyLinear(num_hiddens, { bias = false })
  self.W_q = nn.LazyLinear(num_hiddens, { bias = false })
  self.w_v = nn.LazyLinear(1, { bias = false })
  self.dropout = nn.Dropout(dropout)
end

function AdditiveAttention:forward(queries, keys, values, valid_lens)
  check_qkv("AdditiveAttention", queries, keys, values)
  queries, keys = self.W_q(queries), self.W_k(keys)
  -- queries [b, q, 1, h] + keys [b, 1, k, h], broadcast
  local features = queries:unsqueeze(3) + keys:unsqueeze(2)
  features = torch.tanh(features)
  -- w_v has one output: drop that last dim. scores [b, q, k]
  local scores = self.w_v(features):squeeze(-1)
  self.attention_weights = masked_softmax(scores, valid_lens)
  return torch.bmm(self.dropout(self.attention_weights), values)
end

-- ---- 11.5: multi-head attention ----------------------------------------------------

-- MultiHeadAttention(num_hiddens, num_heads, dropout[, bias = false]): the
-- book's own (d2l.MultiHeadAttention, not nn.MultiheadAttention): the heads
-- side by side in the batch through transpose_qkv / transpose_output.
local MultiHeadAttention = nn.Module:extend("MultiHeadAttention")
M.MultiHeadAttention = MultiHeadAttention

function MultiHeadAttention:init(num_hiddens, num_heads, dropout, bias)
  if math.type(num_hiddens) ~= "integer" or math.type(num_heads) ~= "integer" or num_heads < 1
      or num_hiddens % num_heads ~= 0 then
    fail(("d2l.MultiHeadAttention(num_hiddens, num_heads, dropout): num_hiddens must be a multiple of num_heads, "
      .. "got %s and %s"):format(tostring(num_hiddens), tostring(num_heads)))
  end
  bias = bias and true or false
  self.num_heads = num_heads
  self.attention = M.DotProductAttention(dropout)
  self.W_q = nn.LazyLinear(num_hiddens, { bias = bias })
  self.W_k = nn.LazyLinear(num_hiddens, { bias = bias })
  self.W_v = nn.LazyLinear(num_hiddens, { bias = bias })
  self.W_o = nn.LazyLinear(num_hiddens, { bias = bias })
end

function MultiHeadAttention:forward(queries, keys, values, valid_lens)
  check_qkv("d2l.MultiHeadAttention", queries, keys, values)
  -- queries, keys, values: [b, n, num_hiddens] -> [b * num_heads, n, num_hiddens / num_heads]
  queries = self:transpose_qkv(self.W_q(queries))
  keys = self:transpose_qkv(self.W_k(keys))
  values = self:transpose_qkv(self.W_v(values))
  if valid_lens ~= nil then
    -- each length once per head, copy after copy along dim 1
    valid_lens = torch.repeat_interleave(valid_lens, self.num_heads, 1)
  end
  local output = self.attention(queries, keys, values, valid_lens)
  local output_concat = self:transpose_output(output)
  return self.W_o(output_concat)
end

-- [b, n, h] -> [b * num_heads, n, h / num_heads]
function MultiHeadAttention:transpose_qkv(X)
  X = X:reshape(X:size(1), X:size(2), self.num_heads, -1)
  X = X:permute(1, 3, 2, 4)
  return X:reshape(-1, X:size(3), X:size(4))
end

-- transpose_qkv's inverse
function MultiHeadAttention:transpose_output(X)
  X = X:reshape(-1, self.num_heads, X:size(2), X:size(3))
  X = X:permute(1, 3, 2, 4)
  return X:reshape(X:size(1), X:size(2), -1)
end

-- ---- 11.6: positional encoding -----------------------------------------------------

-- PositionalEncoding(num_hiddens, dropout[, max_len = 1000]): adds
-- P[1, i, 2j - 1] = sin(i / 10000^(2(j-1)/d)) and P[1, i, 2j] = cos(...)
-- (0-based position i) to its input, then dropout. P is a plain tensor
-- attribute, as the book's (moved to the input's device in forward).
local PositionalEncoding = nn.Module:extend("PositionalEncoding")
M.PositionalEncoding = PositionalEncoding

function PositionalEncoding:init(num_hiddens, dropout, max_len)
  max_len = max_len or 1000
  if math.type(num_hiddens) ~= "integer" or num_hiddens < 2 or num_hiddens % 2 ~= 0 then
    fail("d2l.PositionalEncoding(num_hiddens, dropout, max_len): num_hiddens must be an even positive integer "
      .. "(a sine and a cosine column per frequency), got " .. describe(num_hiddens))
  end
  if math.type(max_len) ~= "integer" or max_len < 1 then
    fail("d2l.PositionalEncoding: max_len must be a positive integer, got " .. describe(max_len))
  end
  self.dropout = nn.Dropout(dropout)
  local X = torch.arange(max_len, { dtype = torch.float32 }):reshape(-1, 1)
    / torch.pow(10000, torch.arange(0, num_hiddens, 2, { dtype = torch.float32 }) / num_hiddens)
  -- the book's P[:, :, 0::2] = sin(X) and P[:, :, 1::2] = cos(X): sines and
  -- cosines interleaved
  self.P = torch.stack({ torch.sin(X), torch.cos(X) }, 3):reshape(1, max_len, num_hiddens)
end

function PositionalEncoding:forward(X)
  if not torch.is_tensor(X) or X:dim() ~= 3 then
    fail("d2l.PositionalEncoding: X must be a 3-d tensor (batch, steps, num_hiddens), got " .. describe(X))
  end
  if X:size(2) > self.P:size(2) then
    fail(("d2l.PositionalEncoding: %d steps, more than max_len = %d"):format(X:size(2), self.P:size(2)))
  end
  X = X + self.P:narrow(2, 1, X:size(2)):to(X.device)
  return self.dropout(X)
end

-- ---- 11.7: the transformer's encoder -------------------------------------------

-- PositionWiseFFN(ffn_num_hiddens, ffn_num_outputs): the same two-layer
-- MLP at every position.
local PositionWiseFFN = nn.Module:extend("PositionWiseFFN")
M.PositionWiseFFN = PositionWiseFFN

function PositionWiseFFN:init(ffn_num_hiddens, ffn_num_outputs)
  self.dense1 = nn.LazyLinear(ffn_num_hiddens)
  self.relu = nn.ReLU()
  self.dense2 = nn.LazyLinear(ffn_num_outputs)
end

function PositionWiseFFN:forward(X)
  return self.dense2(self.relu(self.dense1(X)))
end

-- AddNorm(norm_shape, dropout): the residual connection followed by layer
-- normalisation: ln(dropout(Y) + X).
local AddNorm = nn.Module:extend("AddNorm")
M.AddNorm = AddNorm

function AddNorm:init(norm_shape, dropout)
  self.dropout = nn.Dropout(dropout)
  self.ln = nn.LayerNorm(norm_shape)
end

function AddNorm:forward(X, Y)
  return self.ln(self.dropout(Y) + X)
end

-- TransformerEncoderBlock(num_hiddens, ffn_num_hiddens, num_heads,
-- dropout[, use_bias = false]): self-attention and the FFN, each with
-- AddNorm. forward(X, valid_lens) keeps X's shape.
local TransformerEncoderBlock = nn.Module:extend("TransformerEncoderBlock")
M.TransformerEncoderBlock = TransformerEncoderBlock

function TransformerEncoderBlock:init(num_hiddens, ffn_num_hiddens, num_heads, dropout, use_bias)
  self.attention = M.MultiHeadAttention(num_hiddens, num_heads, dropout, use_bias)
  self.addnorm1 = M.AddNorm(num_hiddens, dropout)
  self.ffn = M.PositionWiseFFN(ffn_num_hiddens, num_hiddens)
  self.addnorm2 = M.AddNorm(num_hiddens, dropout)
end

function TransformerEncoderBlock:forward(X, valid_lens)
  local Y = self.addnorm1(X, self.attention(X, X, X, valid_lens))
  return self.addnorm2(Y, self.ffn(Y))
end

-- ---- 10.6: the encoder-decoder scaffolding ----------------------------------------

-- Encoder: the base of encoders; a subclass defines forward(X, ...).
local Encoder = nn.Module:extend("Encoder")
M.Encoder = Encoder

function Encoder:forward()
  fail(self:_get_name() .. ":forward(X, ...) is not implemented: an encoder class defines it (NotImplementedError)")
end

-- Decoder: the base of decoders; a subclass defines init_state(
-- enc_all_outputs, ...) and forward(X, state) -> output, state.
local Decoder = nn.Module:extend("Decoder")
M.Decoder = Decoder

function Decoder:init_state()
  fail(self:_get_name() .. ":init_state(enc_all_outputs, ...) is not implemented: a decoder class defines it "
    .. "(NotImplementedError)")
end

function Decoder:forward()
  fail(self:_get_name() .. ":forward(X, state) is not implemented: a decoder class defines it (NotImplementedError)")
end

-- AttentionDecoder: a decoder whose attention_weights a subclass keeps.
-- Reading them from a class that does not is an error, as the book's
-- property raising NotImplementedError.
local AttentionDecoder = Decoder:extend("AttentionDecoder")
M.AttentionDecoder = AttentionDecoder

local base_index = AttentionDecoder.__index
function AttentionDecoder.__index(self, k)
  local v = base_index(self, k)
  if v == nil and k == "attention_weights" then
    fail(self:_get_name() .. ".attention_weights is not implemented: an attention decoder keeps its weights "
      .. "(NotImplementedError)")
  end
  return v
end

-- EncoderDecoder(encoder, decoder): forward(enc_X, dec_X, ...) runs the
-- encoder, the decoder's init_state on its outputs and the decoder, and
-- returns the decoder's output (its first result). An encoder returning
-- several values (the book's tuple: outputs, state) hands them to
-- init_state as one list, {outputs, state}, as Python's tuple.
local EncoderDecoder = nn.Module:extend("EncoderDecoder")
M.EncoderDecoder = EncoderDecoder

function EncoderDecoder:init(encoder, decoder)
  if not nn.is_module(encoder) or not nn.is_module(decoder) then
    fail(("d2l.EncoderDecoder(encoder, decoder): expected two modules, got %s and %s"):format(describe(encoder),
      describe(decoder)))
  end
  self.encoder = encoder
  self.decoder = decoder
end

function EncoderDecoder:forward(enc_X, dec_X, ...)
  local outs = table.pack(self.encoder(enc_X, ...))
  local enc_all_outputs = outs.n > 1 and { table.unpack(outs, 1, outs.n) } or outs[1]
  local dec_state = self.decoder:init_state(enc_all_outputs, ...)
  -- the decoder's output only
  return (self.decoder(dec_X, dec_state))
end

-- ---- 11.7: the transformer encoder ---------------------------------------------

-- TransformerEncoder(vocab_size, num_hiddens, ffn_num_hiddens, num_heads,
-- num_blks, dropout[, use_bias = false]): an embedding scaled by
-- sqrt(num_hiddens) plus positional encoding, then num_blks blocks named
-- block0, block1, ... (the book's names, so state dicts line up).
-- forward(X, valid_lens) with X [b, steps] of 1-based token ids;
-- attention_weights holds each block's weights after a call.
local TransformerEncoder = Encoder:extend("TransformerEncoder")
M.TransformerEncoder = TransformerEncoder

function TransformerEncoder:init(vocab_size, num_hiddens, ffn_num_hiddens, num_heads, num_blks, dropout, use_bias)
  if math.type(num_blks) ~= "integer" or num_blks < 0 then
    fail("d2l.TransformerEncoder: num_blks must be a non-negative integer, got " .. describe(num_blks))
  end
  self.num_hiddens = num_hiddens
  self.embedding = nn.Embedding(vocab_size, num_hiddens)
  self.pos_encoding = M.PositionalEncoding(num_hiddens, dropout)
  self.blks = nn.Sequential()
  for i = 0, num_blks - 1 do
    self.blks:add_module("block" .. i,
      M.TransformerEncoderBlock(num_hiddens, ffn_num_hiddens, num_heads, dropout, use_bias))
  end
end

function TransformerEncoder:forward(X, valid_lens)
  -- the embedding's values are about N(0, 1), the positional encoding's
  -- within [-1, 1]: scaling the embedding keeps it from being drowned out
  X = self.pos_encoding(self.embedding(X) * math.sqrt(self.num_hiddens))
  self.attention_weights = {}
  for i, blk in self.blks:ipairs() do
    X = blk(X, valid_lens)
    self.attention_weights[i] = blk.attention.attention.attention_weights
  end
  return X
end

return M
