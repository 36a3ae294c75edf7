-- gshell.lexer: a small Lua 5.4 tokenizer for the shell.
--
-- The shell rewrites code typed at the prompt (top-level `local`s, a trailing
-- `;`, magic lines inside cells) and decides where a cell's last statement
-- starts. Both need to know what is code and what is a string or a comment,
-- and how deeply blocks and brackets nest; the real parser only answers
-- "does it compile". This lexer gives tokens with their byte positions:
--   {type = "name"|"keyword"|"number"|"string"|"op"|"comment", value = text,
--    s = first byte, e = last byte, line = line of the first byte}
-- Unfinished strings and comments end the token list early (the compiler
-- reports them); the lexer never raises.
local M = {}

local keywords = {}
for w in ([[and break do else elseif end false for function goto if in
  local nil not or repeat return then true until while]]):gmatch("%a+") do
  keywords[w] = true
end
M.keywords = keywords

-- Operators, longest first so that `...` wins over `..` and `.`.
local ops3 = { ["..."] = true }
local ops2 = {
  ["=="] = true, ["~="] = true, ["<="] = true, [">="] = true, ["//"] = true,
  ["::"] = true, ["<<"] = true, [">>"] = true, [".."] = true,
}

-- Finds the end of a long bracket opened at `i` ("[", then `level` "=", then
-- "["); returns the position of the final "]" or nil when unfinished.
local function long_end(src, i, level)
  local close = "]" .. string.rep("=", level) .. "]"
  local _, e = src:find(close, i, true)
  return e
end

-- The level of a long bracket starting at i ("[==[" is 2), or nil.
local function long_level(src, i)
  local eqs = src:match("^%[(=*)%[", i)
  return eqs and #eqs or nil
end

-- Returns the list of tokens of `src` and, when the text ends inside a
-- string or long comment, a second value "unfinished".
function M.tokenize(src)
  local toks, n = {}, 0
  local i, len, line = 1, #src, 1
  local function push(ty, s, e)
    n = n + 1
    toks[n] = { type = ty, value = src:sub(s, e), s = s, e = e, line = line }
    -- count newlines inside the token for the next one's line number
    local _, nl = src:sub(s, e):gsub("\n", "")
    line = line + nl
  end
  while i <= len do
    local c = src:sub(i, i)
    if c == "\n" then
      line = line + 1
      i = i + 1
    elseif c:match("%s") then
      i = i + 1
    elseif c == "-" and src:sub(i + 1, i + 1) == "-" then
      local lvl = long_level(src, i + 2)
      if lvl then
        local e = long_end(src, i + 2, lvl)
        if not e then return toks, "unfinished" end
        push("comment", i, e)
        i = e + 1
      else
        local e = src:find("\n", i, true) or len + 1
        push("comment", i, e - 1)
        i = e
      end
    elseif c:match("[%a_]") then
      local e = select(2, src:find("^[%w_]*", i + 1))
      local word = src:sub(i, e)
      push(keywords[word] and "keyword" or "name", i, e)
      i = e + 1
    elseif c:match("%d") or (c == "." and src:sub(i + 1, i + 1):match("%d")) then
      local e
      if src:match("^0[xX]", i) then
        e = select(2, src:find("^0[xX][%x%.]*", i))
        local pe = select(2, src:find("^[pP][%+%-]?%d+", e + 1))
        e = pe or e
      else
        e = select(2, src:find("^%d*%.?%d*", i))
        local xe = select(2, src:find("^[eE][%+%-]?%d+", e + 1))
        e = xe or e
      end
      push("number", i, e)
      i = e + 1
    elseif c == '"' or c == "'" then
      local j = i + 1
      while true do
        local d = src:sub(j, j)
        if d == "" or d == "\n" then return toks, "unfinished" end
        if d == "\\" then
          -- \z skips following whitespace, newlines included
          if src:sub(j + 1, j + 1) == "z" then
            j = select(2, src:find("^%s*", j + 2)) + 1
          else
            j = j + 2
          end
        elseif d == c then
          break
        else
          j = j + 1
        end
      end
      push("string", i, j)
      i = j + 1
    elseif c == "[" and long_level(src, i) then
      local e = long_end(src, i, long_level(src, i))
      if not e then return toks, "unfinished" end
      push("string", i, e)
      i = e + 1
    else
      local three, two = src:sub(i, i + 2), src:sub(i, i + 1)
      if ops3[three] then
        push("op", i, i + 2); i = i + 3
      elseif ops2[two] then
        push("op", i, i + 1); i = i + 2
      else
        push("op", i, i); i = i + 1
      end
    end
  end
  return toks
end

-- Tokens without comments: what the grammar sees.
function M.code_tokens(src)
  local all, unfinished = M.tokenize(src)
  local out = {}
  for _, t in ipairs(all) do
    if t.type ~= "comment" then out[#out + 1] = t end
  end
  return out, unfinished
end

-- Tokens after which an expression is complete (an operand ends there).
function M.ends_operand(t)
  if not t then return false end
  if t.type == "name" or t.type == "number" or t.type == "string" then return true end
  if t.type == "keyword" then
    local v = t.value
    return v == "end" or v == "nil" or v == "true" or v == "false"
  end
  local v = t.value
  return v == ")" or v == "]" or v == "}" or v == "..."
end

local binops = {}
for o in ([[+ - * / // % ^ .. == ~= < <= > >= & | ~ << >>]]):gmatch("%S+") do
  binops[o] = true
end

-- True when token t, coming right after a complete operand, continues the
-- same expression (a binary operator, an index, a call, a method call).
function M.continues(t)
  if not t then return false end
  if t.type == "string" then return true end            -- f "str"
  if t.type == "keyword" then return t.value == "and" or t.value == "or" end
  if t.type ~= "op" then return false end
  local v = t.value
  return binops[v] or v == "." or v == ":" or v == "[" or v == "(" or v == "{"
end

-- Block nesting: +1 for keywords that open a block closed by `end`/`until`.
local opens = { ["function"] = true, ["do"] = true, ["if"] = true, ["repeat"] = true }
local closes = { ["end"] = true, ["until"] = true }

-- Annotates each code token with `depth`: how many blocks and brackets
-- enclose it (0 = top level of the chunk). Opening tokens carry the outer
-- depth, as do their closers.
function M.annotate_depth(toks)
  local depth = 0
  for _, t in ipairs(toks) do
    local v = t.value
    if t.type == "keyword" and closes[v] then
      depth = depth - 1
      t.depth = depth
    elseif t.type == "op" and (v == ")" or v == "]" or v == "}") then
      depth = depth - 1
      t.depth = depth
    else
      t.depth = depth
      if (t.type == "keyword" and opens[v]) or
         (t.type == "op" and (v == "(" or v == "[" or v == "{")) then
        depth = depth + 1
      end
    end
  end
  return toks
end

return M
