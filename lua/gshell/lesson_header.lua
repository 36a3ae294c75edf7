-- gshell.lesson_header: a lesson file's title and number of steps, read
-- from its text without running it. `gshell --lesson` lists every file in
-- $GSHELL_LESSON_PATH; running them to read two fields would run any code
-- they hold (a loop hangs the listing, a file that writes files writes
-- them), so the listing reads the table the file returns as the text
-- says it: the `title = "..."` field (string literals, joined by `..`)
-- and the number of entries in the `steps = { ... }` constructor of the
-- `return { ... }` at the top level of the file. A title computed by
-- code is not read (the listing shows the lesson's name instead), nor a
-- step count of a list built by code (the listing omits it).
local lexer = require "gshell.lexer"

local M = {}

-- The value of one string token (quotes, escapes, long brackets): the
-- lexer has checked it is a single literal, so loading `return <it>` in
-- an empty environment evaluates a constant and nothing else.
local function literal(tok)
  local fn = load("return " .. tok.value, "=(lesson title)", "t", {})
  if not fn then return nil end
  local ok, v = pcall(fn)
  return ok and type(v) == "string" and v or nil
end

-- toks[i] starts an expression; returns the string it spells when it is
-- string literals joined by `..`, and the index of the token after it.
local function string_expr(toks, i)
  local parts = {}
  while toks[i] and toks[i].type == "string" do
    local v = literal(toks[i])
    if not v then return nil end
    parts[#parts + 1] = v
    i = i + 1
    if not (toks[i] and toks[i].value == ".." and toks[i].type == "op") then break end
    i = i + 1
  end
  local after = toks[i]
  -- the field must end here: anything else (a call, an operator) is code
  if #parts == 0 or not after or after.type ~= "op" or not (after.value == "," or after.value == ";" or after.value == "}") then
    return nil
  end
  return table.concat(parts), i
end

-- toks[i] is the `{` of a table constructor; returns how many fields it
-- has (separators at its own level, plus a last field without one) and
-- the index of its closing `}`.
local function count_fields(toks, i)
  local inner = toks[i].depth + 1
  local n, empty = 0, true
  i = i + 1
  while toks[i] do
    local t = toks[i]
    if t.depth < inner then break end -- the closing `}`
    if t.depth == inner and t.type == "op" and (t.value == "," or t.value == ";") then
      if not empty then n = n + 1 end
      empty = true
    else
      empty = false
    end
    i = i + 1
  end
  if not empty then n = n + 1 end
  return n, i
end

-- Reads the header of lesson source `src`: {title = string or nil,
-- steps = number or nil}. Never runs the source.
function M.read(src)
  local toks = lexer.annotate_depth((lexer.code_tokens(src)))
  -- the last `return {` at the top level of the chunk
  local start
  for i = #toks - 1, 1, -1 do
    local t = toks[i]
    if t.depth == 0 and t.type == "keyword" and t.value == "return" and toks[i + 1].value == "{" then
      start = i + 1
      break
    end
  end
  local res = {}
  if not start then return res end
  local inner = toks[start].depth + 1
  local i = start + 1
  while toks[i] and toks[i].depth >= inner do
    local t, eq, v = toks[i], toks[i + 1], toks[i + 2]
    local key = t.depth == inner and t.type == "name" and eq and eq.value == "=" and eq.type == "op" and t.value
    if key == "title" then
      res.title = string_expr(toks, i + 2)
    elseif key == "steps" and v and v.type == "op" and v.value == "{" then
      res.steps = count_fields(toks, i + 2)
    end
    i = i + 1
  end
  return res
end

-- Reads the header of the lesson file at `path`; nil and a message when it
-- cannot be read. Files over 1 MiB are not lessons a listing should read.
function M.read_file(path)
  local f, err = io.open(path, "rb")
  if not f then return nil, err end
  local src = f:read(1 << 20)
  local more = f:read(1)
  f:close()
  if more then return nil, path .. ": larger than 1 MiB" end
  return M.read(src or "")
end

return M
