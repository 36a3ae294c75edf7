-- gshell.complete: tab completion at the prompt.
--
-- The word under the cursor is a dotted name, optionally ending in ":":
-- "pri", "torch.cu", "x:", "net.fc.we". The part before the last "." or
-- ":" is evaluated by indexing only (nothing is called except __index
-- metamethods); its keys are offered, following the __index tables of
-- metatables so tensor methods and class methods appear. After ":" only
-- functions are offered; names starting with "_" only when the typed part
-- does. Userdata whose __index is a function offer their
-- metatable's __methods table and own entries, and the names of its
-- __fields list (tensors: the fields API.md lists).
local M = {}

local keywords = { "and", "break", "do", "else", "elseif", "end", "false", "for",
  "function", "goto", "if", "in", "local", "nil", "not", "or", "repeat", "return",
  "then", "true", "until", "while" }

-- Tensor fields served by the __index function (API.md "Fields").
local tensor_fields = { "device", "dtype", "shape", "ndim", "is_cuda", "requires_grad",
  "grad", "grad_fn", "data", "T" }

local function is_callable(v)
  if type(v) == "function" then return true end
  local mt = getmetatable(v)
  return type(mt) == "table" and rawget(mt, "__call") ~= nil
end

-- Adds the string keys of table t (and what its metatables' __index tables
-- provide) to `out` as key -> value.
local function add_table_keys(out, t, depth, seen)
  if type(t) ~= "table" or seen[t] or depth > 8 then return end
  seen[t] = true
  for k, v in next, t do
    if type(k) == "string" and out[k] == nil then out[k] = v end
  end
  local mt = getmetatable(t)
  if type(mt) == "table" and type(rawget(mt, "__index")) == "table" then
    add_table_keys(out, rawget(mt, "__index"), depth + 1, seen)
  end
end

-- A module (nn.Module instance): its parameters, buffers, children and
-- attributes (kept in tables the class's __index function reads), then
-- its class's methods, up the class chain.
local function add_module_keys(out, v, seen)
  for _, store in ipairs({ "_parameters", "_buffers", "_modules" }) do
    local m = rawget(v, store)
    if type(m) == "table" and type(m.keys) == "table" and type(m.vals) == "table" then
      for _, k in ipairs(m.keys) do
        if type(k) == "string" and out[k] == nil then out[k] = m.vals[k] end
      end
    end
  end
  local attrs = rawget(v, "_attrs")
  if type(attrs) == "table" then
    for k, val in next, attrs do if type(k) == "string" and out[k] == nil then out[k] = val end end
  end
  add_table_keys(out, getmetatable(v), 0, seen)
end

-- key -> value for everything worth offering after "v." or "v:".
function M.members(v)
  local out, seen = {}, {}
  if type(v) == "table" then
    add_table_keys(out, v, 0, seen)
    local vmt = getmetatable(v)
    if type(vmt) == "table" and type(rawget(vmt, "__index")) == "function" and rawget(v, "_modules") ~= nil then
      add_module_keys(out, v, seen)
    end
  end
  local mt = getmetatable(v)
  if type(v) ~= "table" and type(mt) == "table" then
    local idx = rawget(mt, "__index")
    if type(idx) == "table" then
      add_table_keys(out, idx, 0, seen)
    else
      add_table_keys(out, rawget(mt, "__methods"), 0, seen)
      for k, f in next, mt do
        if type(k) == "string" and not k:match("^__") and out[k] == nil then out[k] = f end
      end
    end
    local fields = rawget(mt, "__fields")
    if fields == nil and rawget(mt, "__name") == "torch.Tensor" then fields = tensor_fields end
    if type(fields) == "table" then
      for _, k in ipairs(fields) do
        if type(k) == "string" and out[k] == nil then out[k] = true end
      end
    end
  elseif type(v) == "string" then
    add_table_keys(out, string, 0, seen)
  end
  return out
end

-- Names the library keeps for itself next to the user's: a class's
-- metatable or check function (`Stream_mt`, `Event_check`).
function M.is_internal(k)
  return k:match("^%u%w*_mt$") ~= nil or k:match("^%u%w*_check$") ~= nil
end

-- The characters that end the word being completed. The prompt gives them
-- to readline (src/shell/repl.c); the Jupyter kernel cuts its word with them.
M.word_breaks = " \t\n\"\\'`@$><=;|&{(,+-*/%^#~[]"

-- The word being completed at the end of `text`.
function M.word_before(text)
  local i = #text
  while i > 0 and not M.word_breaks:find(text:sub(i, i), 1, true) do i = i - 1 end
  return text:sub(i + 1)
end

-- Magic names that start with `word`, for a word typed right after the
-- `%` that opens a line (`%ti<Tab>` -> `timeit`; `%` itself is a word break).
local function magic_names(word)
  local list = {}
  for name in pairs(require("gshell.magics").names) do
    if name:sub(1, #word) == word then list[#list + 1] = name end
  end
  table.sort(list)
  return list
end

-- The completions of `word` in the session, as full words, sorted.
-- `before` (optional) is the line's text before the word: after a line's
-- leading `%`, magic names are offered instead of Lua names.
function M.complete(session, word, before)
  if before and before:match("^%s*%%$") then return magic_names(word) end
  local list = {}
  local base, sep, part = word:match("^([%a_][%w_%.]*)([%.:])([%w_]*)$")
  if base and not base:find("[%.:]$") and not base:find("%.%.") then
    local v = session:lookup(base:match("^[%a_][%w_]*"))
    for key in base:gmatch("%.([%a_][%w_]*)") do
      if v == nil then return list end
      local ok, nv = pcall(function() return v[key] end)
      if not ok then return list end
      v = nv
    end
    if v == nil then return list end
    for k, val in pairs(M.members(v)) do
      -- fields (val == true) only after `.`: `x:device` is no call;
      -- the library's internals (`Event_check`, `Stream_mt`) are not offered
      if k:sub(1, #part) == part and k:match("^[%a_][%w_]*$") and (part:sub(1, 1) == "_" or k:sub(1, 1) ~= "_")
         and (sep == "." or (is_callable(val) and val ~= true))
         and (not M.is_internal(k) or part:find("_", 1, true)) then
        list[#list + 1] = base .. sep .. k
      end
    end
  elseif word:match("^[%a_]?[%w_]*$") then
    local seen = {}
    local function add(k)
      if type(k) == "string" and not seen[k] and k:sub(1, #word) == word and k:match("^[%a_][%w_]*$")
         and k:sub(1, 8) ~= "__gshell" then
        seen[k] = true
        list[#list + 1] = k
      end
    end
    for _, k in ipairs(keywords) do add(k) end
    for k in next, session.vals do add(k) end
    for k in next, session.G do add(k) end
  end
  table.sort(list)
  return list
end

return M
