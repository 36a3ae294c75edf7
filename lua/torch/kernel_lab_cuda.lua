-- torch/kernel_lab_cuda.lua: k:cuda_source(), a kernel lab kernel as CUDA
-- C (issue 30; docs/kernel-lab.md, "The kernel as CUDA C"). The Lua
-- function's text comes from its file (debug.getinfo) or from the chunk
-- it was loaded from; a small parser reads the subset kernels use and
-- writes it out as C. Types are worked out by use: a parameter that is
-- indexed is an array (float, or the dtype of the tensor the last launch
-- passed; const when never written), others are scalars (int, or float
-- when the last launch passed a float); a local is float when any value
-- stored in it is, else int. Anything outside the subset is refused with
-- the line and the list of what is supported.
local M = {}

M.SUPPORTED = "local variables, assignments, if/elseif/else, numeric for, while, return (no value), arithmetic "
  .. "(+ - * / // % ^), comparisons, and/or/not (and `c and x or y` as c ? x : y), threadIdx/blockIdx/blockDim/"
  .. "gridDim .x .y .z, syncthreads(), shared(n [, dtype]) with a constant n, atomic_add/atomic_max/atomic_min/"
  .. "atomic_exch/atomic_cas, math.sqrt/exp/log/sin/cos/tan/abs/floor/ceil/max/min/huge/pi, and number upvalues"

local function refuse(line, what)
  error(string.format("cuda_source: line %d: %s is not supported by the CUDA translation (supported: %s)",
    line or 0, what, M.SUPPORTED), 0)
end

-- ---- tokens ----
local KEYWORDS = {}
for w in ("and break do else elseif end false for function goto if in local nil not or repeat return then "
  .. "true until while"):gmatch("%a+") do KEYWORDS[w] = true end

local function tokenize(src, first_line)
  local toks, i, line = {}, 1, first_line
  local n = #src
  while i <= n do
    local c = src:sub(i, i)
    if c == "\n" then line = line + 1; i = i + 1
    elseif c:match("%s") then i = i + 1
    elseif src:sub(i, i + 1) == "--" then
      local lvl = src:match("^%-%-%[(=*)%[", i)
      if lvl then
        local close = src:find("]" .. lvl .. "]", i, true) or n
        for _ in src:sub(i, close):gmatch("\n") do line = line + 1 end
        i = close + #lvl + 2
      else
        i = (src:find("\n", i, true) or n + 1)
      end
    elseif c:match("[%a_]") then
      local w = src:match("^[%w_]+", i)
      toks[#toks + 1] = { t = KEYWORDS[w] and w or "name", v = w, line = line }
      i = i + #w
    elseif c:match("%d") or (c == "." and src:sub(i + 1, i + 1):match("%d")) then
      local num = src:match("^0[xX]%x+", i) or src:match("^%d*%.?%d*[eE][%+%-]?%d+", i) or src:match("^%d*%.?%d*", i)
      toks[#toks + 1] = { t = "number", v = num, line = line, float = num:find("[%.eE]") ~= nil and not num:find("^0[xX]") }
      i = i + #num
    elseif c == '"' or c == "'" then
      -- (strings are tokens; the parser takes them only as shared()'s dtype)
      local j = i + 1
      while j <= n and src:sub(j, j) ~= c and src:sub(j, j) ~= "\n" do
        j = j + (src:sub(j, j) == "\\" and 2 or 1)
      end
      toks[#toks + 1] = { t = "string", v = src:sub(i + 1, j - 1), line = line }
      i = j + 1
    elseif src:match("^%[=*%[", i) then
      local lvl = src:match("^%[(=*)%[", i)
      local close = src:find("]" .. lvl .. "]", i, true) or n
      for _ in src:sub(i, close):gmatch("\n") do line = line + 1 end
      toks[#toks + 1] = { t = "string", v = "", line = line }
      i = close + #lvl + 2
    else
      local op = src:match("^//", i) or src:match("^==", i) or src:match("^~=", i) or src:match("^<=", i)
        or src:match("^>=", i) or src:match("^%.%.%.?", i) or src:match("^::", i) or c
      toks[#toks + 1] = { t = op, v = op, line = line }
      i = i + #op
    end
  end
  toks[#toks + 1] = { t = "<eof>", line = line }
  return toks
end

-- ---- parser: the function's body to a tree ----
local P = {}
P.__index = P

function P:peek(k) return self.toks[self.pos + (k or 0)] end
function P:next() local t = self.toks[self.pos]; self.pos = self.pos + 1; return t end
function P:check(t) return self:peek().t == t end
function P:accept(t) if self:check(t) then return self:next() end end
function P:expect(t, what)
  local tok = self:next()
  if tok.t ~= t then
    if tok.t == "<eof>" then refuse(tok.line, "a kernel whose text ends before '" .. t .. "'") end
    refuse(tok.line, string.format("'%s' where %s was expected%s", tok.v or tok.t, "'" .. t .. "'", what or ""))
  end
  return tok
end

local BINARY = {
  ["or"] = { 1, 1 }, ["and"] = { 2, 2 },
  ["<"] = { 3, 3 }, [">"] = { 3, 3 }, ["<="] = { 3, 3 }, [">="] = { 3, 3 }, ["~="] = { 3, 3 }, ["=="] = { 3, 3 },
  ["+"] = { 10, 10 }, ["-"] = { 10, 10 },
  ["*"] = { 11, 11 }, ["/"] = { 11, 11 }, ["//"] = { 11, 11 }, ["%"] = { 11, 11 },
  ["^"] = { 14, 13 },
}
local UNARY = 12

function P:primary()
  local tok = self:next()
  local e
  if tok.t == "name" then e = { k = "name", v = tok.v, line = tok.line }
  elseif tok.t == "(" then
    e = { k = "paren", e = self:expr(0), line = tok.line }
    self:expect(")")
  else
    refuse(tok.line, "'" .. tostring(tok.v or tok.t) .. "' in an expression")
  end
  while true do
    if self:accept(".") then
      local f = self:expect("name", " after '.'")
      e = { k = "field", e = e, v = f.v, line = f.line }
    elseif self:accept("[") then
      e = { k = "index", e = e, i = self:expr(0), line = tok.line }
      self:expect("]")
    elseif self:check("(") then
      self:next()
      local args = {}
      if not self:check(")") then
        repeat args[#args + 1] = self:expr(0) until not self:accept(",")
      end
      self:expect(")")
      e = { k = "call", f = e, args = args, line = tok.line }
    elseif self:check(":") then refuse(tok.line, "a method call (:)")
    else return e end
  end
end

function P:simple()
  local tok = self:peek()
  if tok.t == "number" then self:next(); return { k = "num", v = tok.v, float = tok.float, line = tok.line } end
  if tok.t == "string" then self:next(); return { k = "str", v = tok.v, line = tok.line } end
  if tok.t == "true" or tok.t == "false" then self:next(); return { k = "num", v = tok.t == "true" and "1" or "0" } end
  if tok.t == "nil" or tok.t == "function" or tok.t == "{" or tok.t == "..." then
    refuse(tok.line, tok.t == "{" and "a table" or ("'" .. tok.t .. "'"))
  end
  return self:primary()
end

function P:expr(limit)
  local e
  local tok = self:peek()
  if tok.t == "-" or tok.t == "not" then
    self:next()
    e = { k = "unop", op = tok.t, e = self:expr(UNARY), line = tok.line }
  elseif tok.t == "#" or tok.t == "~" then refuse(tok.line, "the operator '" .. tok.t .. "'")
  else e = self:simple() end
  while true do
    local op = self:peek().t
    if op == ".." or op == "&" or op == "|" or op == "<<" or op == ">>" then
      refuse(self:peek().line, "the operator '" .. op .. "'")
    end
    local b = BINARY[op]
    if not b or b[1] <= limit then return e end
    local t = self:next()
    e = { k = "binop", op = op, a = e, b = self:expr(b[2]), line = t.line }
  end
end

function P:block(stop)
  local body = {}
  while not stop[self:peek().t] do
    local s = self:statement()
    if s then body[#body + 1] = s end
  end
  return body
end

local END = { ["end"] = true }
function P:statement()
  local tok = self:peek()
  local t = tok.t
  if t == ";" then self:next(); return nil end
  if t == "local" then
    self:next()
    if self:check("function") then refuse(tok.line, "a local function") end
    local names = {}
    repeat names[#names + 1] = self:expect("name", " after 'local'").v until not self:accept(",")
    local vals = {}
    if self:accept("=") then repeat vals[#vals + 1] = self:expr(0) until not self:accept(",") end
    return { k = "local", names = names, vals = vals, line = tok.line }
  elseif t == "if" then
    self:next()
    local arms = {}
    local cond = self:expr(0)
    self:expect("then")
    arms[1] = { cond = cond, body = self:block({ ["elseif"] = true, ["else"] = true, ["end"] = true }) }
    local other
    while true do
      if self:accept("elseif") then
        local c = self:expr(0)
        self:expect("then")
        arms[#arms + 1] = { cond = c, body = self:block({ ["elseif"] = true, ["else"] = true, ["end"] = true }) }
      elseif self:accept("else") then other = self:block(END)
      else break end
    end
    self:expect("end")
    return { k = "if", arms = arms, other = other, line = tok.line }
  elseif t == "for" then
    self:next()
    local v = self:expect("name", " after 'for'").v
    if not self:check("=") then refuse(tok.line, "a generic for (for ... in ...)") end
    self:next()
    local a = self:expr(0)
    self:expect(",")
    local b = self:expr(0)
    local step = self:accept(",") and self:expr(0) or nil
    self:expect("do")
    local body = self:block(END)
    self:expect("end")
    return { k = "for", v = v, a = a, b = b, step = step, body = body, line = tok.line }
  elseif t == "while" then
    self:next()
    local c = self:expr(0)
    self:expect("do")
    local body = self:block(END)
    self:expect("end")
    return { k = "while", cond = c, body = body, line = tok.line }
  elseif t == "do" then
    self:next()
    local body = self:block(END)
    self:expect("end")
    return { k = "do", body = body, line = tok.line }
  elseif t == "return" then
    self:next()
    if not (self:check("end") or self:check(";") or self:check("else") or self:check("elseif")) then
      refuse(tok.line, "return with a value (a kernel returns nothing)")
    end
    return { k = "return", line = tok.line }
  elseif t == "break" then self:next(); return { k = "break", line = tok.line }
  elseif t == "name" or t == "(" then
    local e = self:primary()
    if e.k == "call" then return { k = "callstat", e = e, line = tok.line } end
    if self:check(",") then refuse(tok.line, "an assignment to several variables") end
    self:expect("=", " (a statement is an assignment or a call)")
    return { k = "assign", target = e, val = self:expr(0), line = tok.line }
  end
  refuse(tok.line, "'" .. tostring(tok.v or t) .. "'")
end

-- The function whose `function` keyword is the first at or after `line`.
local function parse_function(src, first_line, line)
  -- tokenize from the function's line on (what precedes it is not Lua the
  -- translator needs to read)
  local at, l = 1, first_line
  while l < line do
    local nl = src:find("\n", at, true)
    if not nl then break end
    at, l = nl + 1, l + 1
  end
  local toks = tokenize(src:sub(at), l)
  local p = setmetatable({ toks = toks, pos = 1 }, P)
  while not (p:peek().t == "function" and p:peek().line >= line) do
    if p:peek().t == "<eof>" then error("cuda_source: the kernel's function was not found in its source text", 0) end
    p:next()
  end
  p:next()
  if p:check("name") then p:next() end -- function name(...)
  p:expect("(")
  local params = {}
  if not p:check(")") then
    repeat
      if p:check("...") then refuse(p:peek().line, "a vararg parameter (...)") end
      params[#params + 1] = p:expect("name").v
    until not p:accept(",")
  end
  p:expect(")")
  local body = p:block(END)
  p:expect("end")
  return params, body
end

-- ---- types and C ----
local CTYPE = { float32 = "float", float64 = "double", int32 = "int", int64 = "long long", int16 = "short",
  int8 = "signed char", uint8 = "unsigned char" }
local MATH = { sqrt = "sqrtf", exp = "expf", log = "logf", sin = "sinf", cos = "cosf", tan = "tanf", abs = "fabsf",
  floor = "floorf", ceil = "ceilf", max = "fmaxf", min = "fminf" }
local ATOMIC = { atomic_add = "atomicAdd", atomic_max = "atomicMax", atomic_min = "atomicMin",
  atomic_exch = "atomicExch", atomic_cas = "atomicCAS" }
local DIMS = { threadIdx = true, blockIdx = true, blockDim = true, gridDim = true }
local COMPARE = { ["<"] = true, [">"] = true, ["<="] = true, [">="] = true, ["=="] = true, ["~="] = true }

local function is_float(t) return t == "float" or t == "double" end

-- fn: the kernel's function; params, body: its tree; last: the last
-- launch's arguments ({dtype = "float32"} for tensors, a Lua number else).
local function emit(name, fn, params, body, last)
  local arrays, scalars, locals, consts, written = {}, {}, {}, {}, {}
  local const_order = {}
  local isparam = {}
  for i, p in ipairs(params) do isparam[p] = i end
  -- arrays: the parameters that are indexed; written: stored into or atomics
  local function scan(node)
    if type(node) ~= "table" then return end
    if node.k == "index" and node.e.k == "name" and isparam[node.e.v] then arrays[node.e.v] = true end
    if node.k == "assign" and node.target.k == "index" and node.target.e.k == "name" then
      written[node.target.e.v] = true
    end
    if node.k == "call" and node.f.k == "name" and ATOMIC[node.f.v] and node.args[1] and node.args[1].k == "name" then
      written[node.args[1].v] = true
      if isparam[node.args[1].v] then arrays[node.args[1].v] = true end
    end
    if node.k == "local" then for _, n in ipairs(node.names) do locals[n] = locals[n] or "int" end end
    if node.k == "for" then locals[node.v] = "int" end
    for _, v in pairs(node) do if type(v) == "table" then scan(v) end end
  end
  scan(body)
  local real = "float"
  local elem = {}
  for i, p in ipairs(params) do
    local a = last and last[i]
    if arrays[p] then
      local dt = type(a) == "table" and a.dtype or "float32"
      elem[p] = CTYPE[dt] or refuse(0, "a tensor of dtype " .. dt)
      if dt == "float64" then real = "double" end
    else
      scalars[p] = math.type(a) == "float" and "float" or "int"
    end
  end
  local shared_t = {} -- local name -> element type of its shared array
  local function upvalue(n, line)
    if consts[n] then return consts[n] end
    for i = 1, math.huge do
      local un, uv = debug.getupvalue(fn, i)
      if not un then break end
      if un == n then
        if type(uv) ~= "number" then refuse(line, "the upvalue '" .. n .. "' (a " .. type(uv) .. "; only numbers)") end
        consts[n] = { v = uv, t = math.type(uv) == "float" and real or "int" }
        const_order[#const_order + 1] = n
        return consts[n]
      end
    end
    refuse(line, "the global '" .. n .. "'")
  end
  -- a constant expression's value (shared sizes, for steps)
  local function const(e)
    if e.k == "num" then return math.tointeger(tonumber(e.v)) or tonumber(e.v) end
    if e.k == "paren" then return const(e.e) end
    if e.k == "unop" and e.op == "-" then local v = const(e.e); return v and -v end
    if e.k == "name" and not locals[e.v] and not isparam[e.v] then return upvalue(e.v, e.line).v end
    if e.k == "binop" then
      local a, b = const(e.a), const(e.b)
      if not (a and b) then return nil end
      if e.op == "+" then return a + b elseif e.op == "-" then return a - b elseif e.op == "*" then return a * b
      elseif e.op == "//" then return a // b end
    end
    return nil
  end
  local ty
  local function boolish(e)
    return (e.k == "binop" and (COMPARE[e.op] or ((e.op == "and" or e.op == "or") and boolish(e.a) and boolish(e.b))))
      or (e.k == "unop" and e.op == "not") or (e.k == "paren" and boolish(e.e))
  end
  function ty(e)
    local k = e.k
    if k == "num" then return e.float and real or "int" end
    if k == "paren" then return ty(e.e) end
    if k == "name" then
      if locals[e.v] then return locals[e.v] end
      if scalars[e.v] then return scalars[e.v] end
      if arrays[e.v] then return "array" end
      return upvalue(e.v, e.line).t
    end
    if k == "field" then
      if e.e.k == "name" and DIMS[e.e.v] then return "int" end
      if e.e.k == "name" and e.e.v == "math" and (e.v == "pi" or e.v == "huge") then return real end
      refuse(e.line, "the field '" .. e.v .. "'")
    end
    if k == "index" then
      local base = e.e.k == "name" and e.e.v
      local t = base and (elem[base] or shared_t[base])
      if not t then refuse(e.line, "indexing something that is not an array argument or a shared array") end
      return is_float(t) and real or "int"
    end
    if k == "call" then
      local f = e.f
      if f.k == "field" and f.e.k == "name" and f.e.v == "math" then
        if f.v == "floor" or f.v == "ceil" then return "int" end
        if f.v == "max" or f.v == "min" then
          for _, a in ipairs(e.args) do if is_float(ty(a)) then return real end end
          return "int"
        end
        return real
      end
      if f.k == "name" and ATOMIC[f.v] then
        local a = e.args[1]
        local t = a and a.k == "name" and (elem[a.v] or shared_t[a.v])
        return t and is_float(t) and real or "int"
      end
      return "int"
    end
    if k == "unop" then return e.op == "not" and "int" or ty(e.e) end
    if k == "binop" then
      local op = e.op
      if COMPARE[op] then return "int" end
      if op == "or" and e.a.k == "binop" and e.a.op == "and" then
        local x, y = ty(e.a.b), ty(e.b)
        return (is_float(x) or is_float(y)) and real or "int"
      end
      if op == "and" or op == "or" then return "int" end
      if op == "/" or op == "^" then return real end
      local x, y = ty(e.a), ty(e.b)
      return (is_float(x) or is_float(y)) and real or "int"
    end
    refuse(e.line, "this expression")
  end
  -- locals' types: float when any value stored in them is (to a fixed point)
  local function infer(node)
    if type(node) ~= "table" then return false end
    local changed = false
    if node.k == "local" then
      for i, n in ipairs(node.names) do
        local v = node.vals[i]
        if v and v.k == "call" and v.f.k == "name" and v.f.v == "shared" then
          local dt = v.args[2]
          local dname = dt and (dt.k == "str" and dt.v or (dt.k == "field" and dt.v)) or "float32"
          shared_t[n] = CTYPE[dname] or refuse(node.line, "a shared array of dtype " .. tostring(dname))
          locals[n] = "array"
        elseif v and is_float(ty(v)) and locals[n] ~= real then locals[n] = real; changed = true end
      end
    elseif node.k == "assign" and node.target.k == "name" and locals[node.target.v] then
      local n = node.target.v
      if is_float(ty(node.val)) and locals[n] ~= real then locals[n] = real; changed = true end
    end
    for _, v in pairs(node) do if type(v) == "table" and infer(v) then changed = true end end
    return changed
  end
  for _ = 1, 8 do if not infer(body) then break end end

  local lit = function(v, float)
    if not float then return v end
    return real == "float" and (v:find("[%.eE]") and v or v .. ".0") .. "f" or v
  end
  local ex
  local function args_of(e) local r = {} for i, a in ipairs(e.args) do r[i] = ex(a) end return r end
  function ex(e)
    local k = e.k
    if k == "num" then return lit(e.v, e.float) end
    if k == "paren" then return "(" .. ex(e.e) .. ")" end
    if k == "name" then ty(e); return e.v end
    if k == "field" then
      ty(e)
      if e.e.v == "math" then return e.v == "pi" and "3.14159265358979323846" .. (real == "float" and "f" or "")
        or "INFINITY" end
      return e.e.v .. "." .. e.v
    end
    if k == "index" then ty(e); return e.e.v .. "[" .. ex(e.i) .. "]" end
    if k == "str" then refuse(e.line, "a string outside shared(n, dtype)") end
    if k == "call" then
      local f = e.f
      if f.k == "name" and f.v == "syncthreads" then return "__syncthreads()" end
      if f.k == "field" and f.e.k == "name" and f.e.v == "math" and MATH[f.v] then
        local fname = MATH[f.v]
        if real == "double" then fname = fname:gsub("f$", "") end
        local a = table.concat(args_of(e), ", ")
        if f.v == "floor" or f.v == "ceil" then return "(int)" .. fname .. "(" .. a .. ")" end
        if (f.v == "max" or f.v == "min") and ty(e) == "int" then return f.v .. "(" .. a .. ")" end
        return fname .. "(" .. a .. ")"
      end
      if f.k == "name" and ATOMIC[f.v] then
        local arr = e.args[1]
        if not (arr and arr.k == "name" and (arrays[arr.v] or shared_t[arr.v])) then
          refuse(e.line, f.v .. " on something that is not an array")
        end
        local t = elem[arr.v] or shared_t[arr.v]
        if is_float(t) and f.v ~= "atomic_add" and f.v ~= "atomic_exch" then
          refuse(e.line, f.v .. " on a float array (CUDA has it for integers only)")
        end
        local rest = {}
        for i = 3, #e.args do rest[#rest + 1] = ex(e.args[i]) end
        return ATOMIC[f.v] .. "(&" .. arr.v .. "[" .. ex(e.args[2]) .. "], " .. table.concat(rest, ", ") .. ")"
      end
      if f.k == "name" and f.v == "shared" then refuse(e.line, "shared() other than as `local s = shared(n)`") end
      refuse(e.line, "a call to '" .. (f.k == "name" and f.v or (f.k == "field" and f.v) or "?") .. "'")
    end
    if k == "unop" then
      if e.op == "not" then
        if not boolish(e.e) then refuse(e.line, "`not` of a number (in Lua only nil and false are false)") end
        return "(!" .. ex(e.e) .. ")"
      end
      return "(-" .. ex(e.e) .. ")"
    end
    if k == "binop" then
      local op = e.op
      if op == "or" and e.a.k == "binop" and e.a.op == "and" and boolish(e.a.a) then
        return "(" .. ex(e.a.a) .. " ? " .. ex(e.a.b) .. " : " .. ex(e.b) .. ")"
      end
      if op == "and" or op == "or" then
        if not (boolish(e.a) and boolish(e.b)) then
          refuse(e.line, "`" .. op .. "` between numbers (only conditions, or `c and x or y`)")
        end
        return "(" .. ex(e.a) .. (op == "and" and " && " or " || ") .. ex(e.b) .. ")"
      end
      local a, b = ex(e.a), ex(e.b)
      if op == "^" then return (real == "float" and "powf(" or "pow(") .. a .. ", " .. b .. ")" end
      if op == "//" then
        if ty(e) == "int" then return "(" .. a .. " / " .. b .. ")" end
        return (real == "float" and "floorf(" or "floor(") .. a .. " / " .. b .. ")"
      end
      if op == "%" and ty(e) ~= "int" then return (real == "float" and "fmodf(" or "fmod(") .. a .. ", " .. b .. ")" end
      if op == "/" and ty(e.a) == "int" and ty(e.b) == "int" then a = "(" .. real .. ")" .. a end
      return "(" .. a .. " " .. (op == "~=" and "!=" or op) .. " " .. b .. ")"
    end
    refuse(e.line, "this expression")
  end
  local function cond(e)
    if not boolish(e) then refuse(e.line, "a condition that is a number (in Lua 0 is true; compare it: x ~= 0)") end
    local c = ex(e)
    return c:match("^%(.*%)$") and c or "(" .. c .. ")"
  end

  local out = {}
  local function put(depth, text) out[#out + 1] = string.rep("  ", depth) .. text end
  local block
  local function stat(s, d)
    local k = s.k
    if k == "local" then
      for i, n in ipairs(s.names) do
        local v = s.vals[i]
        if v and v.k == "call" and v.f.k == "name" and v.f.v == "shared" then
          local size = v.args[1] and const(v.args[1])
          if math.type(size) ~= "integer" then
            refuse(s.line, "shared(n) with an n that is not a constant (a number, or number upvalues)")
          end
          put(d, string.format("__shared__ %s %s[%d];", shared_t[n], n, size))
        elseif v then put(d, string.format("%s %s = %s;", locals[n], n, ex(v)))
        else put(d, string.format("%s %s;", locals[n], n)) end
      end
      if #s.vals > #s.names then refuse(s.line, "more values than names in a local") end
    elseif k == "assign" then
      local t = s.target
      if t.k == "name" and not locals[t.v] then refuse(s.line, "an assignment to '" .. t.v .. "', not a local") end
      put(d, ex(t) .. " = " .. ex(s.val) .. ";")
    elseif k == "callstat" then put(d, ex(s.e) .. ";")
    elseif k == "if" then
      for i, arm in ipairs(s.arms) do
        put(d, (i == 1 and "if " or "} else if ") .. cond(arm.cond) .. " {")
        block(arm.body, d + 1)
      end
      if s.other then put(d, "} else {"); block(s.other, d + 1) end
      put(d, "}")
    elseif k == "for" then
      local step = s.step and const(s.step) or 1
      if not step or step == 0 then refuse(s.line, "a for loop whose step is not a nonzero constant") end
      put(d, string.format("for (int %s = %s; %s %s %s; %s += %s) {", s.v, ex(s.a), s.v, step > 0 and "<=" or ">=",
        ex(s.b), s.v, tostring(step)))
      block(s.body, d + 1)
      put(d, "}")
    elseif k == "while" then
      put(d, "while " .. cond(s.cond) .. " {")
      block(s.body, d + 1)
      put(d, "}")
    elseif k == "do" then put(d, "{"); block(s.body, d + 1); put(d, "}")
    elseif k == "return" then put(d, "return;")
    elseif k == "break" then put(d, "break;") end
  end
  function block(b, d) for _, s in ipairs(b) do stat(s, d) end end
  block(body, 1)
  local sig = {}
  for _, p in ipairs(params) do
    if arrays[p] then sig[#sig + 1] = string.format("%s%s *%s", written[p] and "" or "const ", elem[p], p)
    else sig[#sig + 1] = scalars[p] .. " " .. p end
  end
  local head = { string.format('extern "C" __global__ void %s(%s) {', name, table.concat(sig, ", ")) }
  for _, n in ipairs(const_order) do
    local c = consts[n]
    head[#head + 1] = string.format("  const %s %s = %s;", c.t, n, c.t == "int" and string.format("%d", c.v)
      or string.format("%.17g", c.v))
  end
  return table.concat(head, "\n") .. "\n" .. table.concat(out, "\n") .. "\n}\n"
end

-- The text of fn's chunk and the line it starts at, or nil and why not.
local function source_of(fn)
  local info = debug.getinfo(fn, "S")
  local src = info.source
  if src:sub(1, 1) == "@" then
    local f = io.open(src:sub(2), "r")
    if not f then return nil, "its file " .. src:sub(2) .. " cannot be read" end
    local text = f:read("a")
    f:close()
    return text, 1, info.linedefined
  elseif src:sub(1, 1) == "=" then
    return nil, "it was typed at the prompt or loaded from a chunk named " .. src:sub(2) .. ", whose text Lua " ..
      "does not keep; put the kernel in a file (gshell file.lua) or load it with load(text)"
  end
  return src, 1, info.linedefined
end

-- k:cuda_source(): the CUDA C of the kernel.
function M.source(k)
  local text, first, line = source_of(k.fn)
  if not text then error("cuda_source: the kernel's source text is unavailable: " .. first, 0) end
  local params, body = parse_function(text, first, line)
  local cname = (k.opts_name or "kernel"):gsub("[^%w_]", "_")
  if cname:match("^%d") then cname = "k_" .. cname end
  return emit(cname, k.fn, params, body, k.last_args)
end

return M
