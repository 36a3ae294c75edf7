-- torch.d2l.text: the book's text helpers for the recurrent chapters
-- (Dive into Deep Learning 9.2 and 9.3, PyTorch edition), translated:
-- read_time_machine, tokenize, Vocab, load_corpus_time_machine, the two
-- sequence iterators and load_data_time_machine. Token indices are 1-based,
-- as gshell's labels, nn.Embedding's ids and F.one_hot's classes: the
-- book's index 0 (`<unk>`) is 1 here, and every index is the book's plus 1.
-- docs/d2l-text.md documents them.
local torch = require("torch")
local E = require("torch.utils.errors")
local fail, describe, check_options = E.fail, E.describe, E.check_options

local M = {}

-- The book downloads H. G. Wells's "The Time Machine"; nothing is
-- downloaded here. The default text is the GNU GPL version 3, which
-- Debian's base-files installs on every machine (no Debian package ships
-- a public-domain book as plain text); `path` reads any other.
M.DEFAULT_TEXT = "/usr/share/common-licenses/GPL-3"

-- read_time_machine([path]): the text's lines, each with runs of
-- non-letters turned into one space, trimmed and lowercased (the book's
-- re.sub('[^A-Za-z]+', ' ', line).strip().lower()).
function M.read_time_machine(path)
  if path ~= nil and type(path) ~= "string" then
    fail("d2l.read_time_machine([path]): path must be a string (a text file), got " .. describe(path))
  end
  path = path or M.DEFAULT_TEXT
  local f, err = io.open(path, "rb")
  if not f then
    fail(("d2l.read_time_machine: cannot read %s (%s); give the path of a text file"):format(path, err))
  end
  local lines = {}
  for line in f:lines() do
    lines[#lines + 1] = line:gsub("[^A-Za-z]+", " "):match("^%s*(.-)%s*$"):lower()
  end
  f:close()
  return lines
end

-- tokenize(lines[, 'word' | 'char']): a list of token lists, one per line.
function M.tokenize(lines, token)
  token = token or "word"
  if type(lines) ~= "table" then fail("d2l.tokenize(lines, token): lines must be a list of strings, got " .. describe(lines)) end
  if token ~= "word" and token ~= "char" then
    fail("d2l.tokenize: unknown token type: " .. tostring(token) .. " (expected 'word' or 'char')")
  end
  local r = {}
  for i, line in ipairs(lines) do
    if type(line) ~= "string" then fail(("d2l.tokenize: lines[%d] is %s, not a string"):format(i, describe(line))) end
    local t = {}
    if token == "word" then
      for w in line:gmatch("%S+") do t[#t + 1] = w end
    else
      for c in line:gmatch(".") do t[#t + 1] = c end
    end
    r[i] = t
  end
  return r
end

-- ---- Vocab ------------------------------------------------------------------

local Vocab = {}
Vocab.__name = "d2l.Vocab"
local methods = {}

-- vocab[token] is the token's index (vocab.unk, 1, when unknown),
-- vocab[{tokens...}] a list of them; the fields and methods below win over a
-- token of the same name (vocab:lookup(token) always looks it up).
function Vocab.__index(self, k)
  local m = methods[k]
  if m ~= nil then return m end
  return methods.lookup(self, k)
end

function Vocab.__len(self) return #self.idx_to_token end

function Vocab.__tostring(self)
  return ("d2l.Vocab(%d tokens)"):format(#self.idx_to_token)
end

-- Counts of every token of a list of tokens or of a list of token lists,
-- with the order of first appearance (Python's Counter keeps it too).
local function count_corpus(tokens)
  local counts, order = {}, {}
  local function add(t)
    if counts[t] == nil then counts[t] = 0; order[#order + 1] = t end
    counts[t] = counts[t] + 1
  end
  for _, t in ipairs(tokens) do
    if type(t) == "table" then
      for _, u in ipairs(t) do add(u) end
    else
      add(t)
    end
  end
  return counts, order
end
M.count_corpus = function(tokens)
  local counts = count_corpus(tokens)
  return counts
end

-- Vocab([tokens][, {min_freq = 0, reserved_tokens = {}}]): index 1 is
-- `<unk>`, then the reserved tokens, then the tokens seen at least
-- min_freq times from the most frequent (ties in order of first
-- appearance, as the book's stable sort of a Counter).
function M.Vocab(tokens, opts)
  if type(tokens) == "table" and getmetatable(tokens) == nil and next(tokens) ~= nil and #tokens == 0 and opts == nil then
    opts, tokens = tokens, nil  -- Vocab({min_freq = 2}) with no tokens
  end
  tokens = tokens or {}
  if type(tokens) ~= "table" then fail("d2l.Vocab(tokens[, options]): tokens must be a list, got " .. describe(tokens)) end
  opts = E.options(opts, "d2l.Vocab")
  check_options(opts, "d2l.Vocab", { "min_freq", "reserved_tokens" })
  local min_freq = opts.min_freq or 0
  if type(min_freq) ~= "number" then fail("d2l.Vocab: min_freq must be a number, got " .. describe(min_freq)) end
  local reserved = opts.reserved_tokens or {}
  if type(reserved) ~= "table" then
    fail("d2l.Vocab: reserved_tokens must be a list of strings, got " .. describe(reserved))
  end
  local counts, order = count_corpus(tokens)
  local rank = {}
  for i, t in ipairs(order) do rank[t] = i end
  table.sort(order, function(a, b)
    if counts[a] ~= counts[b] then return counts[a] > counts[b] end
    return rank[a] < rank[b]
  end)
  local freqs = {}
  for i, t in ipairs(order) do freqs[i] = { t, counts[t] } end
  local idx_to_token, token_to_idx = { "<unk>" }, { ["<unk>"] = 1 }
  for _, t in ipairs(reserved) do
    if token_to_idx[t] == nil then
      idx_to_token[#idx_to_token + 1] = t
      token_to_idx[t] = #idx_to_token
    end
  end
  for _, tf in ipairs(freqs) do
    if tf[2] < min_freq then break end
    if token_to_idx[tf[1]] == nil then
      idx_to_token[#idx_to_token + 1] = tf[1]
      token_to_idx[tf[1]] = #idx_to_token
    end
  end
  return setmetatable({ idx_to_token = idx_to_token, token_to_idx = token_to_idx, token_freqs = freqs, unk = 1 }, Vocab)
end

-- vocab:lookup(token) or vocab:lookup({tokens...}): the index or indices.
function methods.lookup(self, tokens)
  if type(tokens) == "table" then
    local r = {}
    for i, t in ipairs(tokens) do r[i] = methods.lookup(self, t) end
    return r
  end
  return rawget(self, "token_to_idx")[tokens] or 1
end

-- vocab:to_tokens(index) or vocab:to_tokens({indices...} or a tensor).
function methods.to_tokens(self, indices)
  local itt = rawget(self, "idx_to_token")
  local function one(i)
    if math.type(i) ~= "integer" or itt[i] == nil then
      fail(("vocab:to_tokens: index %s is out of range: indices are 1 to %d (1-based)"):format(describe(i), #itt))
    end
    return itt[i]
  end
  if torch.is_tensor(indices) then indices = indices:reshape(-1):tolist() end
  if type(indices) == "table" then
    local r = {}
    for k, i in ipairs(indices) do r[k] = one(i) end
    return r
  end
  return one(indices)
end

M.Vocab_class = Vocab

-- ---- the corpus and its iterators ------------------------------------------

-- load_corpus_time_machine([max_tokens = -1][, {path =}]): the text as a
-- list of character indices and its character vocabulary.
function M.load_corpus_time_machine(max_tokens, opts)
  if type(max_tokens) == "table" then opts, max_tokens = max_tokens, max_tokens.max_tokens end
  opts = E.options(opts, "d2l.load_corpus_time_machine")
  check_options(opts, "d2l.load_corpus_time_machine", { "max_tokens", "path" })
  max_tokens = max_tokens or -1
  if math.type(max_tokens) ~= "integer" then
    fail("d2l.load_corpus_time_machine: max_tokens must be an integer, got " .. describe(max_tokens))
  end
  local tokens = M.tokenize(M.read_time_machine(opts.path), "char")
  local vocab = M.Vocab(tokens)
  local corpus, tti = {}, vocab.token_to_idx
  for _, line in ipairs(tokens) do
    for _, t in ipairs(line) do
      if max_tokens > 0 and #corpus >= max_tokens then break end
      corpus[#corpus + 1] = tti[t]
    end
  end
  return corpus, vocab
end

-- a random integer in [lo, hi] from torch's generator (torch.manual_seed)
local function randint(lo, hi) return torch.randint(lo, hi + 1, { 1 }):item() end

local function check_iter_args(who, corpus, batch_size, num_steps)
  if type(corpus) ~= "table" then fail(who .. ": corpus must be a list of token indices, got " .. describe(corpus)) end
  if math.type(batch_size) ~= "integer" or batch_size < 1 or math.type(num_steps) ~= "integer" or num_steps < 1 then
    fail(("%s: batch_size and num_steps must be positive integers, got %s and %s"):format(who, describe(batch_size),
      describe(num_steps)))
  end
end

-- seq_data_iter_random(corpus, batch_size, num_steps): an iterator over
-- (X, Y) minibatches of random, non-overlapping subsequences (int64
-- [batch_size, num_steps]; Y is X shifted by one token).
function M.seq_data_iter_random(corpus, batch_size, num_steps)
  check_iter_args("d2l.seq_data_iter_random", corpus, batch_size, num_steps)
  local offset = randint(0, num_steps - 1)
  local num_subseqs = (#corpus - offset - 1) // num_steps
  local perm = num_subseqs > 0 and torch.randperm(num_subseqs):tolist() or {}
  local num_batches = num_subseqs // batch_size
  local function data(pos)  -- pos: 0-based start within the offset corpus
    local r = {}
    for k = 1, num_steps do r[k] = corpus[offset + pos + k] end
    return r
  end
  local b = 0
  return function()
    if b >= num_batches then return nil end
    local X, Y = {}, {}
    for k = 1, batch_size do
      local start = (perm[b * batch_size + k] - 1) * num_steps  -- gshell's randperm is 1-based
      X[k], Y[k] = data(start), data(start + 1)
    end
    b = b + 1
    return torch.tensor(X, { dtype = torch.int64 }), torch.tensor(Y, { dtype = torch.int64 })
  end
end

-- seq_data_iter_sequential(corpus, batch_size, num_steps): minibatches
-- whose rows continue the previous minibatch's rows (for carrying the
-- hidden state across minibatches).
function M.seq_data_iter_sequential(corpus, batch_size, num_steps)
  check_iter_args("d2l.seq_data_iter_sequential", corpus, batch_size, num_steps)
  local offset = randint(0, num_steps)
  local num_tokens = ((#corpus - offset - 1) // batch_size) * batch_size
  local num_batches = num_tokens > 0 and (num_tokens // batch_size) // num_steps or 0
  if num_batches == 0 then return function() return nil end end
  local xs, ys = {}, {}
  for k = 1, num_tokens do xs[k], ys[k] = corpus[offset + k], corpus[offset + k + 1] end
  local Xs = torch.tensor(xs, { dtype = torch.int64 }):reshape(batch_size, -1)
  local Ys = torch.tensor(ys, { dtype = torch.int64 }):reshape(batch_size, -1)
  local b = 0
  return function()
    if b >= num_batches then return nil end
    local i = b * num_steps + 1
    b = b + 1
    return Xs:narrow(2, i, num_steps), Ys:narrow(2, i, num_steps)
  end
end

-- SeqDataLoader: `for X, Y in train_iter do ... end` (or train_iter:iter())
-- runs one epoch, a fresh random offset each time, as the book's __iter__.
local SeqDataLoader = {}
SeqDataLoader.__index = SeqDataLoader
SeqDataLoader.__name = "d2l.SeqDataLoader"

function SeqDataLoader:iter()
  return self.data_iter_fn(self.corpus, self.batch_size, self.num_steps)
end

-- The generic for calls the loader with the previous X: nil starts an
-- epoch; otherwise the epoch that last returned that X continues.
function SeqDataLoader:__call(_, prev)
  if prev == nil or not rawequal(prev, self._last) then self._epoch = self:iter() end
  local X, Y = self._epoch()
  self._last = X
  if X == nil then self._epoch = nil end
  return X, Y
end

function SeqDataLoader:__tostring()
  return ("d2l.SeqDataLoader(%d tokens, batch_size=%d, num_steps=%d, %s)"):format(#self.corpus, self.batch_size,
    self.num_steps, self.use_random_iter and "random" or "sequential")
end

-- load_data_time_machine(batch_size, num_steps[, {use_random_iter = false,
-- max_tokens = 10000, path =}]): the iterator and the vocabulary.
function M.load_data_time_machine(batch_size, num_steps, opts)
  local who = "d2l.load_data_time_machine(batch_size, num_steps[, options])"
  opts = E.options(opts, who)
  check_options(opts, "d2l.load_data_time_machine", { "use_random_iter", "max_tokens", "path" })
  check_iter_args(who, {}, batch_size, num_steps)
  local corpus, vocab = M.load_corpus_time_machine(opts.max_tokens or 10000, { path = opts.path })
  local use_random = opts.use_random_iter and true or false
  local loader = setmetatable({ corpus = corpus, vocab = vocab, batch_size = batch_size, num_steps = num_steps,
    use_random_iter = use_random,
    data_iter_fn = use_random and M.seq_data_iter_random or M.seq_data_iter_sequential }, SeqDataLoader)
  return loader, vocab
end

return M
