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

-- Position of the quote closing the string that opens at i (its
-- backslash escapes skipped), or past the end of s when it is unclosed.
local function string_end(s, i)
  local c, k = s:sub(i, i), i + 1
  while k <= #s and s:sub(k, k) ~= c do
    if s:sub(k, k) == "\\" then k = k + 1 end
    k = k + 1
  end
  return k
end

-- Position of the bracket closing the one at i (skipping strings), or nil.
local function close_of(s, i)
  local stack, j = {}, i
  while j <= #s do
    local c = s:sub(j, j)
    if c == '"' or c == "'" then
      local k = string_end(s, j)
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
      local k = string_end(s, j)
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
local rewrite_call -- forward

-- Rewrites the brackets of s: list literals, slices, keyword arguments,
-- tuples as arguments. `found` collects the habits seen.
local function rewrite_brackets(s, found)
  local out, i = {}, 1
  while i <= #s do
    local c = s:sub(i, i)
    if c == '"' or c == "'" then
      local k = string_end(s, i)
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
        out[#out + 1] = rewrite_call(s, i, inner, found)
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
    elseif c:match("[%w_%.:\1]") then
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

-- A tuple `(a, b)` as a table `{a, b}`; anything else as it is.
local function tuple_to_table(v, found)
  local t = trim(v)
  local tup = t:match("^%((.*)%)$")
  if tup and close_of(t, 1) == #t and #split_top(tup, ",") > 1 then
    found.tuple = true
    return "{" .. tup .. "}"
  end
  return v
end

-- A 0-based dimension as a 1-based one (negative ones stay).
local function shift_dim(v)
  local n = math.tointeger(tonumber(trim(v)))
  if n then return tostring(n < 0 and n or n + 1) end
  return trim(v) .. " + 1"
end

-- The call whose `(` is at position i of s, with inner its argument text:
-- keywords the signature takes by position become positional, the rest
-- an options table; 0-based dims shift when the call was written the
-- Python way. A keyword the hints cannot place marks found.unsure.
function rewrite_call(s, i, inner, found)
  local sigs = require("gshell.pysigs")
  -- a function body among the arguments is Lua: its commas are not the call's
  if inner:find("%f[%w_]function%f[^%w_]") then return "(" .. inner .. ")" end
  local callee = trim(s:sub(operand_start(s, i - 1), i - 1)):gsub("\1", ":")
  local sig = sigs.lookup(callee)
  local local_found = {}
  local pos, kw, placed, nplaced = {}, {}, {}, 0
  for _, p in ipairs(split_top(inner, ",")) do
    local k, v = p:match("^%s*([%a_][%w_]*)%s*=%s*(.-)%s*$")
    if k and not v:match("^=") then
      if k == "axis" then k = "dim"; found.axis = true end
      v = tuple_to_table(rewrite(v, local_found), local_found)
      local idx
      for n, name in ipairs(sig and sig.pos or {}) do if name == k then idx = n end end
      if idx then
        if sig.dims and sig.dims[k] then v = shift_dim(v); found.dim = true end
        placed[idx] = v
        nplaced = math.max(nplaced, idx)
      elseif sig and sig.opts then
        kw[#kw + 1] = k .. " = " .. v
      else
        found.unsure = callee
        kw[#kw + 1] = k .. " = " .. v
      end
      found.kwargs = true
    elseif trim(p) ~= "" then
      pos[#pos + 1] = tuple_to_table(rewrite(trim(p), local_found), local_found)
    end
  end
  local pythonish = next(local_found) ~= nil or #kw > 0 or nplaced > 0 or s:sub(1, i - 1):find("\1[%a_][%w_]*%s*$")
  for k in pairs(local_found) do found[k] = true end
  if sig and sig.dims and pythonish then
    for n, v in ipairs(pos) do
      if sig.dims[sig.pos[n]] then pos[n] = shift_dim(v); found.dim = true end
    end
  end
  for n = #pos + 1, nplaced do
    -- a keyword after a parameter left out: its place is not sure
    if placed[n] == nil then found.unsure = callee; placed[n] = "nil" end
    pos[n] = placed[n]
  end
  if #kw > 0 then pos[#pos + 1] = "{" .. table.concat(kw, ", ") .. "}" end
  return "(" .. table.concat(pos, ", ") .. ")"
end

-- `obj.method(` -> `obj:method(` for a tensor's or module's method on an
-- object that is not a library table (torch.ones stays). The colon is
-- written as \1 until the end, so rewrite_call knows the call was Python.
local function rewrite_colons(s, found)
  local sigs = require("gshell.pysigs")
  local out, i = {}, 1
  while i <= #s do
    local c = s:sub(i, i)
    if c == '"' or c == "'" then
      local k = string_end(s, i)
      out[#out + 1] = s:sub(i, k)
      i = k + 1
    else
      local name, rest = s:match("^%.([%a_][%w_]*)(%s*%()", i)
      local chain = name and table.concat(out):sub(operand_start(table.concat(out), #table.concat(out)))
      local root = chain and chain:match("^[%a_][%w_]*")
      local plain = root and sigs.NAMESPACES[root] and not chain:find("[%(%[\1:]")
      if name and chain ~= "" and not plain and sigs.is_method(name) then
        found.colon = true
        out[#out + 1] = "\1" .. name .. rest
        i = i + 1 + #name + #rest
      else
        out[#out + 1] = c
        i = i + 1
      end
    end
  end
  return table.concat(out)
end

-- `a if c else b` -> `(c and a or b)` (at the top level of s; an
-- assignment or return before it stays in front).
local function rewrite_ternary(s, found)
  local depth, j, at_if, at_else = 0, 1, nil, nil
  while j <= #s do
    local c = s:sub(j, j)
    if c == '"' or c == "'" then
      local k = string_end(s, j)
      j = k
    elseif OPEN[c] then depth = depth + 1
    elseif c == ")" or c == "]" or c == "}" then depth = depth - 1
    elseif depth == 0 and not at_if and s:find("^%sif%s", j) then at_if = j
    elseif depth == 0 and at_if and s:find("^%selse%s", j) then at_else = j; break
    end
    j = j + 1
  end
  if not (at_if and at_else) then return s end
  local head = s:sub(1, at_if - 1)
  local lhs, a = head:match("^(.-[^=<>~!]=%s*)([^=].*)$")
  if not lhs then lhs, a = head:match("^(%s*return%s+)(.*)$") end
  if not lhs then lhs, a = "", head end
  if trim(a) == "" then return s end
  found.ternary = true
  return lhs .. "(" .. trim(s:sub(at_if + 4, at_else - 1)) .. " and " .. trim(a) .. " or " ..
    trim(s:sub(at_else + 6)) .. ")"
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
  -- `X, y = next(iter(loader))` unpacks the batch list; `batch = ...` keeps it
  local unpack = s:find("^%s*[%a_][%w_]*%s*,[%w_,%s]*=%s*next%s*%(") ~= nil
  s = s:gsub("%f[%w_]next%s*%(%s*iter%s*(%b())%s*%)", function(p)
    found.iter = true
    local e = trim(p:sub(2, -2)) .. ":iter()()"
    return unpack and ("table.unpack(" .. e .. ")") or e
  end)
  s = s:gsub("%.__class__%.__name__%f[^%w_]", function() found.classname = true; return ".__name" end)
  return s
end

-- An expression in Lua spelling.
function rewrite(s, found)
  s = rewrite_ternary(s, found)
  s = rewrite_fstrings(s, found)
  s = rewrite_brackets(s, found)
  s = rewrite_binary(s, found)
  s = rewrite_words(s, found)
  return s
end

-- Block headers: `for i in range(n):`, `def f(x):`, `with e as v:`,
-- `if c:`, `while c:`. Returns the Lua line (with its body when it was
-- on the same line), or nil.
-- Is `name` a DataLoader (in env when given; else by the book's names)?
local function is_loader(name, env)
  if env then
    local ok, v = pcall(function()
      local t = env
      for part in name:gmatch("[^.]+") do t = t[part] end
      return t
    end)
    if ok and v ~= nil then
      local mt = getmetatable(v)
      return type(mt) == "table" and rawget(mt, "__name") == "DataLoader"
    end
  end
  return name:find("iter$") ~= nil or name:find("loader$") ~= nil
end

local function rewrite_block(line, found, env)
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
  local iv, vars, lseq = head:match("^for%s+([%a_][%w_]*)%s*,%s*%(([%w_,%s]+)%)%s+in%s+enumerate%s*(%b())%s*$")
  if iv then
    found.loader = true
    return indent .. "for " .. iv .. ", " .. trim(vars) .. " in " .. rewrite(lseq:sub(2, -2), found) ..
      ":enumerate() do" .. body .. "end  -- (i from 1)"
  end
  local lvars, lname = head:match("^for%s+([%a_][%w_,%s]-)%s+in%s+([%a_][%w_%.]*)%s*$")
  if lvars and is_loader(lname, env) then
    found.loader = true
    if lvars:find(",") then
      return indent .. "for _, " .. trim(lvars) .. " in " .. lname .. ":enumerate() do" .. body .. "end"
    end
    return indent .. "for " .. lvars .. " in " .. lname .. " do" .. body .. "end"
  end
  local k, x, seq = head:match("^for%s+([%a_][%w_]*)%s*,%s*([%a_][%w_]*)%s+in%s+enumerate%s*(%b())%s*$")
  if k then
    found.range = true
    return indent .. "for " .. k .. ", " .. x .. " in ipairs(" .. rewrite(seq:sub(2, -2), found) ..
      ") do" .. body .. "end  -- (positions start at 1)"
  end
  local x2, seq2 = head:match("^for%s+([%a_][%w_]*)%s+in%s+(.+)$")
  if x2 then
    found.forin = true
    return indent .. "for _, " .. x2 .. " in ipairs(" .. rewrite(seq2, found) .. ") do" .. body .. "end"
  end
  local name, params = head:match("^def%s+([%a_][%w_%.]*)%s*(%b())%s*$")
  if name then
    found.def = true
    return indent .. "function " .. name .. params .. body .. "end"
  end
  local pvar = head:match("^with%s+torch%.profiler%.profile%s*%(%s*%)%s+as%s+([%a_][%w_]*)%s*$")
  if pvar then
    found.profile = true
    return indent .. pvar .. " = torch.profiler.profile(function()" .. body .. "end)"
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
  kwargs = "keyword arguments: a parameter goes by position, an option in a table last",
  list = "a list is a table in braces",
  slice = "indexes are 1-based and slices are tables",
  tuple = "sizes are numbers or a table, not a tuple",
  dim = "dims are 1-based",
  axis = "`axis` is `dim`",
  colon = "a method call needs a colon",
  matmul = "Lua has no `@`",
  is = "Lua has no `is`: rawequal tells the same object",
  len = "Lua's length operator is `#`",
  fstring = "Lua has no f-strings",
  const = "Lua spells them true, false, nil",
  ternary = "`a if c else b` is `(c and a or b)`",
  iter = "a loader's iterator is `loader:iter()`, and calling it gives the next batch",
  classname = "a module's class name is `m.__name` (or `m:_get_name()`)",
  repeat_kw = "`repeat` is a Lua keyword: the method is `x:tile(...)` (torch.tile), or `x['repeat'](x, ...)`",
  loader = "a DataLoader is looped over with `for batch in loader do`, or `loader:enumerate()` for i, X, y",
  range = "Lua's for loop is `for i = first, last do ... end`, both ends included",
  forin = "a loop over a list is `for _, v in ipairs(list) do ... end`",
  def = "a function is `function name(args) ... end`",
  with = "a `<close>` local ends the block's context",
  profile = "torch.profiler.profile takes the code to profile as a function",
  block = "Lua blocks end with `end`, not indentation",
  ne = "not-equal is `~=`",
}
local ORDER = { "colon", "kwargs", "axis", "dim", "list", "tuple", "slice", "matmul", "is", "len", "fstring",
                "const", "ternary", "iter", "classname", "repeat_kw", "loader", "range", "forin", "def", "with",
                "profile", "block", "ne" }

-- A line without its Lua comment (`-- len(x)` is a note, not code).
local function strip_lua_comment(line)
  local j = 1
  while j <= #line do
    local c = line:sub(j, j)
    if c == '"' or c == "'" then
      local k = string_end(line, j)
      j = k
    elseif line:sub(j, j + 1) == "--" then
      return line:sub(1, j - 1)
    end
    j = j + 1
  end
  return line
end

-- The Lua spelling of one line, the habits found (nil when none) and
-- whether the spelling is sure. env (optional): the session's variables,
-- to tell a DataLoader from a list.
function M.translate(line, env)
  local found = {}
  local code = line:gsub("%s+#%s[^\"']*$", "")  -- a Python comment
  code = code:gsub("[%.:]repeat%s*%(", function() found.repeat_kw = true; return "\1tile(" end)
  code = rewrite_colons(code, found)
  local lua = rewrite_block(code, found, env)
  if not lua then lua = rewrite(code, found) end
  lua = lua:gsub("\1", ":")
  if next(found) == nil then return nil end
  local why = {}
  for _, k in ipairs(ORDER) do if found[k] then why[#why + 1] = WHAT[k] end end
  return lua, why, found
end

local function hint_for(line, env)
  line = strip_lua_comment(line)
  local lua, why, found = M.translate(line, env)
  if not lua or trim(lua) == trim(line) then return nil end
  if found.unsure then
    -- a keyword the hints cannot place: the rule, not a line that may not run
    local callee = found.unsure
    return string.format("hint: this looks like Python (keyword arguments); Lua has none: a gshell function " ..
      "takes its parameters by position and its options in a table last, `f(a, b, {name = value})`; " ..
      "`?%s` shows which is which", callee)
  end
  return string.format("hint: this looks like Python (%s); in Lua: `%s`", table.concat(why, "; "), trim(lua))
end
M.hint_for = hint_for

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
-- `def f(x):`, `if x:`, `for p in net.parameters(): print(p)`)? Lua reads
-- some of them as unfinished statements and the prompt would wait for
-- more instead of saying what is wrong.
function M.is_python_block(src)
  local first = strip_lua_comment(tostring(src):match("^%s*([^\n]*)"))
  local kw = first:match("^(%a+)%f[^%w_]")
  local heads = { ["for"] = true, def = true, with = true, ["if"] = true, elif = true, ["while"] = true,
                  ["else"] = true, class = true, try = true, except = true }
  if not heads[kw] then return false end
  if first:find("%f[%w_]do%f[^%w_]") or first:find("%f[%w_]then%f[^%w_]") then return false end
  if first:find(":%s*$") then return true end
  -- a header with its body on the same line: a top-level `:` followed by
  -- a space (Lua's method colon is followed by the method's name)
  local parts = split_top(first, ":")
  for k = 2, #parts do
    if parts[k]:find("^%s") then return true end
  end
  return false
end

-- Does the line parse as Lua on its own? Such a line is never "fixed".
local function is_lua(line)
  return load("return " .. line, "=l", "t", {}) ~= nil or load(line, "=l", "t", {}) ~= nil
end

-- Hint lines for a chunk that Lua could not parse (msg: the parse
-- error): for the line the error names (or the one before it, where Lua
-- names the token after a header), never for a line that is Lua.
function M.after_syntax_error(src, msg, first_line, env)
  if type(src) ~= "string" then return {} end
  local lines = lines_of(src)
  local n = error_line(msg)
  if n then n = n - ((first_line or 1) - 1) else n = #lines end
  for _, k in ipairs({ n, n - 1 }) do
    local l = lines[k]
    if l and not is_lua(strip_lua_comment(l)) then
      local h = hint_for(l, env)
      if h then return { h } end
    end
  end
  return {}
end

-- Python that parses as Lua and then fails: len(x), f"{x}" (a call of a
-- global f), None.x, torch.tensor([[1, 2]]) (a long string),
-- next(iter(loader)), layer.__class__.__name__, quit(). Only for the line
-- the error names, and only when the error agrees, so ordinary Lua never
-- gets a Python hint.
function M.after_runtime_error(src, msg, env)
  if type(src) ~= "string" then return {} end
  msg = tostring(msg)
  local out = {}
  local lines = lines_of(src)
  local n = error_line(msg)
  local pick = (n and lines[n]) and { lines[n] } or (#lines == 1 and lines or {})
  for _, l in ipairs(pick) do
    l = strip_lua_comment(l)
    local py = (l:find("%f[%w_]len%s*%(") and msg:find("'len'", 1, true))
      or (l:find("%f[%w_]f[\"']") and msg:find("global 'f'", 1, true))
      or (l:find("%f[%w_]None%f[^%w_]") and msg:find("'None'", 1, true))
      or (l:find("%f[%w_]True%f[^%w_]") and msg:find("'True'", 1, true))
      or (l:find("%f[%w_]False%f[^%w_]") and msg:find("'False'", 1, true))
      or (l:find("%(%s*%[%[") and msg:find("string", 1, true))
      or (l:find("%f[%w_]iter%s*%(") and msg:find("'iter'", 1, true))
      or (l:find("__class__", 1, true) and msg:find("'__class__'", 1, true))
    if py then
      local h = hint_for(l, env)
      if h then out[#out + 1] = h end
    end
    local leave = l:match("^%s*(%a+)%s*%(%s*%)%s*$")
    if (leave == "quit" or leave == "exit") and msg:find("'" .. leave .. "'", 1, true) then
      out[#out + 1] = M.LEAVE
    end
  end
  return out
end

-- How to leave, for `quit()`, `exit()` and `exit` typed bare.
M.LEAVE = "hint: Lua has no quit() or exit(): Ctrl-D on an empty line leaves gshell (os.exit() from code); " ..
  "in a lesson, `%lesson quit`"

-- True, False and None used as names while nil (`x = None` at the prompt
-- runs and means nil only by luck; `if flag == True` is always false).
function M.python_constants(src, env)
  if type(src) ~= "string" then return {} end
  local out, seen = {}, {}
  -- `exit`, `quit`, `clear` typed bare print nil in Lua
  local bare = src:match("^%s*(%a+)%s*$")
  if bare == "exit" or bare == "quit" or bare == "clear" then
    local ok, v = pcall(function() return env[bare] end)
    if ok and v == nil then
      out[#out + 1] = bare == "clear" and "hint: `clear` is not a command here: Ctrl-L clears the terminal "
        .. "(`!clear` runs the shell's clear)" or M.LEAVE
      return out
    end
  end
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
