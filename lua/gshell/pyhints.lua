-- gshell.pyhints: Python spellings get their Lua spelling.
--
-- A learner coming from the book types Python: `torch.ones(2, device='cuda')`,
-- `[1, 2]`, `a @ b`, `x[:, 1]`, `for i in range(3):`. Lua answers with a
-- parse error that names a token (`')' expected near '='`), which does not
-- say what to write instead. This module rewrites a line the way a Lua
-- speaker would write it and the shell shows that as a hint.
--
--   pyhints.translate(line)        the line in Lua, and the list of the
--                                  Python habits it found (nil when none)
--   pyhints.after_syntax_error(src, msg)
--                                  hint lines for a chunk that did not parse
--   pyhints.after_runtime_error(src, msg)
--                                  hint lines for Python that parses as Lua
--                                  but fails (len(x), f"{x}", None.x)
--   pyhints.python_constants(src, env)
--                                  hint lines for True/False/None used as
--                                  names while they are nil
--
-- The rewriting works on characters with bracket matching, not on a parser:
-- it only has to be right for the short lines learners type, and a hint
-- is only shown when the original did not work.
local M = {}

local OPEN = { ["("] = ")", ["["] = "]", ["{"] = "}" }

-- Position of the bracket closing the one at i (skipping strings), or nil.
local function close_of(s, i)
  local stack, j = {}, i
  while j <= #s do
    local c = s:sub(j, j)
    if c == '"' or c == "'" then
      local k = j + 1
      while k <= #s and s:sub(k, k) ~= c do
        if s:sub(k, k) == "\\" then k = k + 1 end
        k = k + 1
      end
      j = k
    elseif OPEN[c] then
      stack[#stack + 1] = OPEN[c]
    elseif c == ")" or c == "]" or c == "}" then
      if stack[#stack] ~= c then return nil end
      stack[#stack] = nil
      if #stack == 0 then return j end
    end
    j = j + 1
  end
  return nil
end

-- Splits s at its top-level occurrences of the character sep (strings
-- and brackets respected).
local function split_top(s, sep)
  local parts, depth, start, j = {}, 0, 1, 1
  while j <= #s do
    local c = s:sub(j, j)
    if c == '"' or c == "'" then
      local k = j + 1
      while k <= #s and s:sub(k, k) ~= c do
        if s:sub(k, k) == "\\" then k = k + 1 end
        k = k + 1
      end
      j = k
    elseif OPEN[c] then depth = depth + 1
    elseif c == ")" or c == "]" or c == "}" then depth = depth - 1
    elseif c == sep and depth == 0 then
      parts[#parts + 1] = s:sub(start, j - 1)
      start = j + 1
    end
    j = j + 1
  end
  parts[#parts + 1] = s:sub(start)
  return parts
end

local function trim(s) return (s:gsub("^%s+", ""):gsub("%s+$", "")) end

-- Does the text before position i end an operand (so a bracket at i
-- indexes or calls it rather than starting a literal)?
local function after_operand(s, i)
  local before = s:sub(1, i - 1):match("(%S)%s*$")
  if not before then return false end
  if before:match("[%w_%)%]}\"']") then
    -- a keyword ends no operand: `return [1, 2]`, `in [1, 2]`
    local word = s:sub(1, i - 1):match("([%a_][%w_]*)%s*$")
    local kw = { ["return"] = true, ["in"] = true, ["and"] = true, ["or"] = true, ["not"] = true,
                 ["if"] = true, ["then"] = true, ["do"] = true, ["else"] = true }
    return not (word and kw[word])
  end
  return false
end

-- A Python index (`:` slices, commas, 0-based) as a Lua index, 1-based.
local function plus_one(e)
  e = trim(e)
  local n = math.tointeger(tonumber(e))
  if n then return tostring(n < 0 and n or n + 1) end
  return e .. " + 1"
end

local function index_part(p)
  p = trim(p)
  if p == ":" or p == "" then return "{}" end
  local parts = split_top(p, ":")
  if #parts == 1 then return plus_one(p) end
  local a, b = trim(parts[1]), trim(parts[2])
  local first = a == "" and "1" or plus_one(a)
  local last
  if b == "" then last = "-1"
  else
    local n = math.tointeger(tonumber(b))
    if n then last = tostring(n < 0 and n - 1 or n) else last = b end
  end
  return "{" .. first .. ", " .. last .. "}"
end

local rewrite -- forward

-- Rewrites the brackets of s: list literals, slices, keyword arguments,
-- tuples as arguments. `found` collects the habits seen.
local function rewrite_brackets(s, found)
  local out, i = {}, 1
  while i <= #s do
    local c = s:sub(i, i)
    if c == '"' or c == "'" then
      local k = i + 1
      while k <= #s and s:sub(k, k) ~= c do
        if s:sub(k, k) == "\\" then k = k + 1 end
        k = k + 1
      end
      out[#out + 1] = s:sub(i, k)
      i = k + 1
    elseif c == "[" or c == "(" then
      local j = close_of(s, i)
      if not j then out[#out + 1] = s:sub(i); break end
      local inner = s:sub(i + 1, j - 1)
      local operand = after_operand(s, i)
      if c == "[" and not operand then
        -- a table key `{[k] = v}` stays; `[1, 2]` is a Python list
        if s:sub(j + 1):match("^%s*=[^=]") then
          out[#out + 1] = "[" .. rewrite(inner, found) .. "]"
        else
          found.list = true
          out[#out + 1] = "{" .. rewrite(inner, found) .. "}"
        end
      elseif c == "[" then
        local parts = split_top(inner, ",")
        local slice = #parts > 1 or #split_top(inner, ":") > 1
        if slice and not inner:match("^%s*{") then
          found.slice = true
          local idx = {}
          for k, p in ipairs(parts) do idx[k] = index_part(rewrite(p, found)) end
          out[#out + 1] = "[{" .. table.concat(idx, ", ") .. "}]"
        else
          out[#out + 1] = "[" .. rewrite(inner, found) .. "]"
        end
      elseif operand then -- a call: keyword arguments, a tuple argument
        local parts = split_top(inner, ",")
        local pos, kw = {}, {}
        for _, p in ipairs(parts) do
          local k, v = p:match("^%s*([%a_][%w_]*)%s*=%s*(.-)%s*$")
          if k and not v:match("^=") then
            kw[#kw + 1] = k .. " = " .. rewrite(v, found)
          elseif trim(p) ~= "" then
            local tup = trim(p):match("^%((.*)%)$")
            if tup and close_of(trim(p), 1) == #trim(p) and #split_top(tup, ",") > 1 then
              found.tuple = true
              pos[#pos + 1] = "{" .. rewrite(tup, found) .. "}"
            else
              pos[#pos + 1] = rewrite(trim(p), found)
            end
          end
        end
        if #kw > 0 then
          found.kwargs = true
          pos[#pos + 1] = "{" .. table.concat(kw, ", ") .. "}"
        end
        out[#out + 1] = "(" .. table.concat(pos, ", ") .. ")"
      else
        local parts = split_top(inner, ",")
        if #parts > 1 and trim(parts[#parts]) ~= "" then found.tuple = true end
        out[#out + 1] = "(" .. rewrite(inner, found) .. ")"
      end
      i = j + 1
    else
      out[#out + 1] = c
      i = i + 1
    end
  end
  return table.concat(out)
end

-- The operand ending just before position i (a name chain with calls and
-- indexes), as its start position.
local function operand_start(s, i)
  local j = i
  while j >= 1 and s:sub(j, j):match("%s") do j = j - 1 end
  while j >= 1 do
    local c = s:sub(j, j)
    if c == ")" or c == "]" or c == "}" then
      -- find the matching opener backwards
      local depth, k = 0, j
      while k >= 1 do
        local d = s:sub(k, k)
        if d == ")" or d == "]" or d == "}" then depth = depth + 1
        elseif d == "(" or d == "[" or d == "{" then
          depth = depth - 1
          if depth == 0 then break end
        end
        k = k - 1
      end
      j = k - 1
    elseif c:match("[%w_%.:]") then
      j = j - 1
    else
      break
    end
  end
  return j + 1
end

-- The operand starting at position i, as its end position.
local function operand_end(s, i)
  local j = i
  while j <= #s and s:sub(j, j):match("%s") do j = j + 1 end
  local start = j
  while j <= #s do
    local c = s:sub(j, j)
    if c == "(" or c == "[" or c == "{" then
      local k = close_of(s, j)
      if not k then return #s end
      j = k + 1
    elseif c:match("[%w_%.:]") then
      j = j + 1
    elseif (c == '"' or c == "'") and j == start then
      local k = s:find(c, j + 1, true)
      j = (k or #s) + 1
    else
      break
    end
  end
  return j - 1, start
end

-- `a @ b` -> `a:matmul(b)`, `a is b` -> `rawequal(a, b)`.
local function rewrite_binary(s, found)
  for _ = 1, 20 do
    local at = s:find("@", 1, true)
    if not at then break end
    local ls, re = operand_start(s, at - 1), nil
    local rs
    re, rs = operand_end(s, at + 1)
    if ls >= at or re < rs then break end
    found.matmul = true
    s = s:sub(1, ls - 1) .. trim(s:sub(ls, at - 1)) .. ":matmul(" .. s:sub(rs, re) .. ")" .. s:sub(re + 1)
  end
  s = s:gsub("%s+is%s+not%s+None%f[^%w_]", function() found.is = true; return " ~= nil" end)
  s = s:gsub("%s+is%s+None%f[^%w_]", function() found.is = true; return " == nil" end)
  for _ = 1, 20 do
    local a, b, neg = s:find("%s+is%s+not%s+")
    if not a then a, b = s:find("%s+is%s+") else neg = true end
    if not a then break end
    local ls = operand_start(s, a)
    local re, rs = operand_end(s, b + 1)
    if ls >= a or re < rs then break end
    found.is = true
    s = s:sub(1, ls - 1) .. (neg and "not " or "") .. "rawequal(" .. s:sub(ls, a - 1) .. ", " .. s:sub(rs, re) .. ")" .. s:sub(re + 1)
  end
  return s
end

-- f"text {x} {y:.2f}" -> string.format("text %s %.2f", x, y)
local function rewrite_fstrings(s, found)
  return (s:gsub("%f[%w_]f([\"'])(.-)%1", function(q, body)
    found.fstring = true
    local args = {}
    local fmt = body:gsub("%%", "%%%%"):gsub("{([^{}]*)}", function(e)
      local expr, spec = e:match("^(.-):([%d%.]*[%a])$")
      args[#args + 1] = trim(expr or e)
      return "%" .. (spec or "s")
    end)
    if fmt == "%s" and #args == 1 then return "tostring(" .. args[1] .. ")" end
    return "string.format(" .. q .. fmt .. q .. (#args > 0 and ", " or "") .. table.concat(args, ", ") .. ")"
  end))
end

local CONST = { True = "true", False = "false", None = "nil" }

local function rewrite_words(s, found)
  s = s:gsub("%f[%w_]len%s*(%b())", function(p)
    found.len = true
    return "#" .. p:sub(2, -2)
  end)
  s = s:gsub("%f[%w_](%a+)%f[^%w_]", function(w)
    if CONST[w] then found.const = true; return CONST[w] end
  end)
  s = s:gsub("!=", function() found.ne = true; return "~=" end)
  return s
end

-- An expression in Lua spelling.
function rewrite(s, found)
  s = rewrite_fstrings(s, found)
  s = rewrite_brackets(s, found)
  s = rewrite_binary(s, found)
  s = rewrite_words(s, found)
  return s
end

-- Block headers: `for i in range(n):`, `def f(x):`, `with e as v:`,
-- `if c:`, `while c:`. Returns the Lua line (with its body when it was
-- on the same line), or nil.
local function rewrite_block(line, found)
  local indent, head, rest = line:match("^(%s*)(.-):%s*(.-)%s*$")
  if not head then return nil end
  local body = rest ~= "" and (" " .. rewrite(rest, found) .. " ") or " ... "
  local v, args = head:match("^for%s+([%a_][%w_]*)%s+in%s+range%s*(%b())%s*$")
  if v then
    found.range = true
    local a = split_top(args:sub(2, -2), ",")
    for k = 1, #a do a[k] = rewrite(trim(a[k]), found) end
    local first, last, step = "0", a[1], nil
    if #a >= 2 then first, last, step = a[1], a[2], a[3] end
    local n = math.tointeger(tonumber(last))
    local stop = n and tostring(n - 1) or (last .. " - 1")
    return indent .. "for " .. v .. " = " .. first .. ", " .. stop .. (step and (", " .. step) or "") ..
      " do" .. body .. "end"
  end
  local k, x, seq = head:match("^for%s+([%a_][%w_]*)%s*,%s*([%a_][%w_]*)%s+in%s+enumerate%s*(%b())%s*$")
  if k then
    found.range = true
    return indent .. "for " .. k .. ", " .. x .. " in ipairs(" .. rewrite(seq:sub(2, -2), found) ..
      ") do" .. body .. "end  -- (positions start at 1)"
  end
  local x2, seq2 = head:match("^for%s+([%a_][%w_]*)%s+in%s+(.+)$")
  if x2 then
    found.range = true
    return indent .. "for _, " .. x2 .. " in ipairs(" .. rewrite(seq2, found) .. ") do" .. body .. "end"
  end
  local name, params = head:match("^def%s+([%a_][%w_%.]*)%s*(%b())%s*$")
  if name then
    found.def = true
    return indent .. "function " .. name .. params .. body .. "end"
  end
  local ctx, var = head:match("^with%s+(.-)%s+as%s+([%a_][%w_]*)%s*$")
  if not ctx then ctx = head:match("^with%s+(.+)$") end
  if ctx then
    found.with = true
    return indent .. "do local " .. (var or "ctx") .. " <close> = " .. rewrite(ctx, found) .. ";" .. body .. "end"
  end
  local kw, cond = head:match("^(%a+)%s+(.+)$")
  if kw == "if" or kw == "elif" or kw == "while" then
    found.block = true
    local lk = kw == "elif" and "elseif" or kw
    return indent .. lk .. " " .. rewrite(cond, found) .. (kw == "while" and " do" or " then") .. body ..
      (kw == "elif" and "" or "end")
  end
  if head:match("^else$") then found.block = true; return indent .. "else" .. body .. "end" end
  return nil
end

-- What each habit is, for the hint's first words.
local WHAT = {
  kwargs = "keyword arguments go in an options table",
  list = "a list is a table in braces",
  slice = "indexes are 1-based and slices are tables",
  tuple = "sizes are numbers or a table, not a tuple",
  matmul = "Lua has no `@`",
  is = "Lua has no `is`: rawequal tells the same object",
  len = "Lua's length operator is `#`",
  fstring = "Lua has no f-strings",
  const = "Lua spells them true, false, nil",
  range = "Lua's for loop is `for i = first, last do ... end`, both ends included",
  def = "a function is `function name(args) ... end`",
  with = "a `<close>` local ends the block's context",
  block = "Lua blocks end with `end`, not indentation",
  ne = "not-equal is `~=`",
}
local ORDER = { "kwargs", "list", "tuple", "slice", "matmul", "is", "len", "fstring", "const",
                "range", "def", "with", "block", "ne" }

-- The Lua spelling of one line, and the habits found (nil when none).
function M.translate(line)
  local found = {}
  local code = line:gsub("%s+#%s[^\"']*$", "")  -- a Python comment
  local lua = rewrite_block(code, found)
  if not lua then lua = rewrite(code, found) end
  if next(found) == nil then return nil end
  local why = {}
  for _, k in ipairs(ORDER) do if found[k] then why[#why + 1] = WHAT[k] end end
  return lua, why, found
end

local function hint_for(line)
  local lua, why = M.translate(line)
  if not lua or trim(lua) == trim(line) then return nil end
  return string.format("hint: this looks like Python (%s); in Lua: `%s`", table.concat(why, "; "), trim(lua))
end

local function lines_of(src)
  local t = {}
  for l in (src .. "\n"):gmatch("(.-)\n") do t[#t + 1] = l end
  return t
end

-- The line number a Lua error message names for chunk `src`, or nil.
local function error_line(msg)
  return tonumber(tostring(msg):match("^[^\n]-:(%d+):"))
end

-- Is the chunk's first line a Python block header (`for i in range(3):`,
-- `def f(x):`, `if x:`)? Lua reads some of them as unfinished statements
-- and the prompt would wait for more instead of saying what is wrong.
function M.is_python_block(src)
  local first = tostring(src):match("^%s*([^\n]*)")
  local kw = first:match("^(%a+)%f[^%w_]")
  local heads = { ["for"] = true, def = true, with = true, ["if"] = true, elif = true, ["while"] = true,
                  ["else"] = true, class = true, try = true, except = true }
  if not heads[kw] then return false end
  if first:find("%f[%w_]do%f[^%w_]") or first:find("%f[%w_]then%f[^%w_]") then return false end
  return first:find(":%s*$") ~= nil or first:find("^for%s.-%sin%s+range%s*%b():") ~= nil
    or first:find("^def%s+[%w_.]+%s*%b():") ~= nil
end

-- Hint lines for a chunk that Lua could not parse (msg: the parse
-- error). The line the error names first; else every line that
-- translates.
function M.after_syntax_error(src, msg, first_line)
  if type(src) ~= "string" then return {} end
  local lines = lines_of(src)
  local n = error_line(msg)
  if n then n = n - ((first_line or 1) - 1) end
  local out = {}
  if n and lines[n] then
    local h = hint_for(lines[n])
    if h then return { h } end
  end
  for _, l in ipairs(lines) do
    local h = hint_for(l)
    if h then out[#out + 1] = h; if #out >= 3 then break end end
  end
  return out
end

-- Python that parses as Lua and then fails: len(x), f"{x}" (a call of a
-- global f), None.x, torch.tensor([[1, 2]]) (a long string). Only when
-- the error agrees, so ordinary Lua never gets a Python hint.
function M.after_runtime_error(src, msg)
  if type(src) ~= "string" then return {} end
  msg = tostring(msg)
  local out = {}
  for _, l in ipairs(lines_of(src)) do
    local py = (l:find("%f[%w_]len%s*%(") and msg:find("'len'", 1, true))
      or (l:find("%f[%w_]f[\"']") and msg:find("global 'f'", 1, true))
      or (l:find("%f[%w_]None%f[^%w_]") and msg:find("'None'", 1, true))
      or (l:find("%f[%w_]True%f[^%w_]") and msg:find("'True'", 1, true))
      or (l:find("%f[%w_]False%f[^%w_]") and msg:find("'False'", 1, true))
      or (l:find("%(%s*%[%[") and msg:find("string", 1, true))
    if py then
      local h = hint_for(l)
      if h then out[#out + 1] = h end
    end
  end
  return out
end

-- True, False and None used as names while nil (`x = None` at the prompt
-- runs and means nil only by luck; `if flag == True` is always false).
function M.python_constants(src, env)
  if type(src) ~= "string" then return {} end
  local out, seen = {}, {}
  -- names in the code only: 'True' inside a string is text, and x.None
  -- or t.True (a field) is not the global
  local toks = require("gshell.lexer").code_tokens(src)
  for k, t in ipairs(toks) do
    local w = t.type == "name" and t.value
    local prev = toks[k - 1]
    if prev and prev.type == "op" and (prev.value == "." or prev.value == ":") then w = nil end
    local nxt = toks[k + 1]
    if nxt and nxt.type == "op" and nxt.value == "=" then w = nil end  -- assigned (or a table key), not read
    if w and CONST[w] and not seen[w] then
      seen[w] = true
      local ok, v = pcall(function() return env[w] end)
      if ok and v == nil then
        out[#out + 1] = string.format("hint: `%s` is Python; Lua spells it `%s` (`%s` here is an unset global, nil)",
          w, CONST[w], w)
      end
    end
  end
  return out
end

return M
