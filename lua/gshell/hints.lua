-- gshell.hints: Python habits get a hint, not a puzzle.
--
--   hints.python_line(line)     `import torch`, `from torch import nn`: the
--                               note to print (true when it is one)
--   hints.after_error(env, src) hints for a cell that failed: a method
--                               called with `.` (net.parameters()), a
--                               0 position (net[0], x.shape[0])
--   hints.locate(msg, level)    the error message with the location of
--                               the user's line (cell or file), never a
--                               library file's
--   hints.user_traceback(tb)    a traceback without the shell's frames
--   hints.missing_command(cmd)  `!nvidia-smi` where there is none
local M = {}

-- ---- import --------------------------------------------------------------

local PRELOADED = { torch = "torch", nn = "nn", optim = "optim", d2l = "d2l" }

-- `import X`, `import X as Y`, `from X import Y`: Python, not Lua. Returns
-- the text to show, and whether it is only a note (the module is there).
function M.python_import(line)
  local mod = line:match("^%s*import%s+([%a_][%w_%.]*)") or line:match("^%s*from%s+([%a_][%w_%.]*)%s+import%s")
  if not mod then return nil end
  local root = mod:match("^[^.]+")
  if root == "torch" then
    return "torch is already loaded in gshell, and so are its parts as globals: nn (= torch.nn), " ..
      "optim (= torch.optim); nothing to import", true
  elseif root == "torchvision" then -- data sets (issue 21)
    return "torchvision is already loaded in gshell as a global: torchvision.datasets.FashionMNIST, " ..
      "torchvision.transforms (from stock Lua: local torchvision = require('torchvision')); nothing to import", true
  elseif root == "d2l" then
    return "no d2l package in gshell: the book's helpers try_gpu() and try_all_gpus() are globals, " ..
      "torch, nn and optim are loaded", true
  end
  return string.format("`%s` is Python; gshell speaks Lua: torch, nn and optim are already loaded, " ..
    "and a Lua module is loaded with `local m = require('%s')`", line:gsub("^%s+", ""):gsub("%s+$", ""), mod), false
end

M.is_python_import = function(line)
  return line:match("^%s*import%s+[%a_]") ~= nil or line:match("^%s*from%s+[%a_][%w_%.]*%s+import%s") ~= nil
end

-- ---- `.` for `:` ---------------------------------------------------------

-- Looks a dotted name up in env without running user code beyond indexing.
local function lookup(env, dotted)
  local v = env
  for part in dotted:gmatch("[^.]+") do
    if type(v) ~= "table" and type(v) ~= "userdata" then return nil end
    local ok, r = pcall(function() return v[part] end)
    if not ok then return nil end
    v = r
  end
  return v
end

-- Is obj[name] a method (a function obj inherits from its class), rather
-- than a plain function stored in a table like torch.ones?
local function is_method(obj, name)
  local mt = getmetatable(obj)
  if mt == nil then return false end
  local ok, f = pcall(function() return obj[name] end)
  if not ok or type(f) ~= "function" then return false end
  if type(obj) == "table" and rawget(obj, name) ~= nil then return false end
  return true
end

-- The hints for a cell (source `src`) that failed with message `msg`, as
-- a list of lines.
function M.after_error(env, src, msg)
  local out, seen = {}, {}
  if type(src) ~= "string" then return out end
  for _, h in ipairs(require("gshell.pyhints").after_runtime_error(src, msg, env)) do out[#out + 1] = h end
  -- obj.method( where obj is a name or a dotted chain of names
  for obj, name, paren in src:gmatch("([%a_][%w_]*[%w_%.]*)%.([%a_][%w_]*)%s*(%b())") do
    local v = lookup(env, obj)
    local key = obj .. "." .. name
    if v ~= nil and not seen[key] and is_method(v, name) then
      seen[key] = true
      local args = paren:sub(2, -2)
      out[#out + 1] = string.format("hint: `%s.%s(%s)` calls the method without its object; Lua needs a colon: `%s:%s(%s)`",
        obj, name, args, obj, name, args)
    end
  end
  -- net[0], x.shape[0]
  for obj in src:gmatch("([%a_][%w_%.]*)%[%s*0%s*%]") do
    if not seen[obj .. "[0]"] then
      seen[obj .. "[0]"] = true
      if lookup(env, obj) == nil then
        -- the error is the missing name, not the position
        out[#out + 1] = string.format("hint: `%s` is not defined (nil): nothing has been assigned to it yet", obj)
      else
        out[#out + 1] = string.format("hint: positions are 1-based in Lua: the first is `%s[1]`", obj)
      end
    end
  end
  return out
end

-- ---- scripts -------------------------------------------------------------------

-- Hint lines for a script (`gshell file.lua`) that stopped with msg, as one
-- string, or nil. Only the line the error names is looked at, so a script
-- never gets a hint about a line that did not fail.
function M.for_script(path, msg)
  local f = io.open(path, "rb")
  if not f then return nil end
  local src = f:read("a") or ""
  f:close()
  return M.for_source(src, msg)
end

-- The same for source text (`gshell -e 'code'`).
function M.for_source(src, msg)
  msg = tostring(msg)
  local lines = {}
  for l in (src .. "\n"):gmatch("(.-)\n") do lines[#lines + 1] = l end
  local first = msg:match("^([^\n]*)")
  local n = tonumber(first:match(":(%d+): "))
  local line = n and lines[n]
  local out
  local ok, syntax = pcall(load, (src:gsub("^#![^\n]*", "")), "=script")
  if ok and syntax == nil then
    out = require("gshell.pyhints").after_syntax_error(src, first)
  else
    if not line then return nil end
    out = M.after_error(_G, line, first)
  end
  if #out == 0 then return nil end
  return table.concat(out, "\n")
end

-- The binding's own colon clause (src/bind/lua_core.c) says `x:NAME(...)`;
-- when a hint names the real object and arguments, the message drops it so
-- the learner reads the fix once.
function M.drop_colon_clause(msg, hint_lines)
  if type(msg) ~= "string" then return msg end
  for _, h in ipairs(hint_lines) do
    local name = h:match("^hint: `[^`]-%.([%a_][%w_]*)%(.-` calls the method without its object")
    if name then
      msg = msg:gsub("; a method needs its tensor before a colon: write `x:" .. name .. "%(%.%.%.%)`, not `x%." ..
        name .. "%(%.%.%.%)`", "", 1)
      msg = msg:gsub("; a method needs its module before a colon: write `net:" .. name .. "%(%.%.%.%)`, not `net%." ..
        name .. "%(%.%.%.%)`", "", 1)
    end
  end
  return msg
end

-- ---- where an error happened -----------------------------------------------

-- Library chunks: the Lua that ships inside gshell.
local function is_library(source)
  return source:find("^@lua/") ~= nil or source == "=[C]" or source:find("^=%(gshell") ~= nil
end
M.is_library = is_library

-- The location (short_src:line) of the innermost user frame, counting from
-- `level` of the caller's stack, or nil.
function M.user_location(level)
  level = (level or 1) + 1
  while true do
    local info = debug.getinfo(level, "Sl")
    if not info then return nil end
    if info.what ~= "C" and not is_library(info.source) and info.currentline and info.currentline > 0 then
      return info.short_src .. ":" .. info.currentline
    end
    level = level + 1
  end
end

-- msg with its location replaced by the user's line when it names a
-- library file, or added when it has none. `level` as for user_location
-- (called from a message handler: the frames above it are the error's).
function M.locate(msg, level)
  if type(msg) ~= "string" then return msg end
  local where = M.user_location((level or 1) + 1)
  local src, rest = msg:match("^([^\n]-):%d+: (.*)$")
  if src then
    if not (src:find("^lua/") or src == "[C]") then return msg end -- already the user's
    return where and (where .. ": " .. rest) or rest
  end
  if msg:find("^interrupted!") then return msg end
  return where and (where .. ": " .. msg) or msg
end

-- A traceback without the shell's own frames (the xpcall that ran the
-- cell and what called it): they are not the user's.
function M.user_traceback(tb)
  local lines = {}
  for line in (tb .. "\n"):gmatch("(.-)\n") do lines[#lines + 1] = line end
  local out = {}
  local lib = 0
  -- frames inside gshell's own Lua (lua/torch/..., its error helpers) are
  -- not the user's: a run of them becomes one line saying how many
  local function flush()
    if lib > 0 then
      out[#out + 1] = string.format("\t(... %d frame%s inside gshell's library)", lib, lib == 1 and "" or "s")
      lib = 0
    end
  end
  for _, line in ipairs(lines) do
    if line:find("lua/torch/shell/", 1, true) or line:find("lua/gshell/", 1, true)
       or line:find("in function 'xpcall'", 1, true) or line:find("in function 'pcall'", 1, true) then
      break
    end
    if line:match("^%s+lua/torch/") or line:match("^%s+%[C%]: in function 'error'") then
      lib = lib + 1
    else
      flush()
      out[#out + 1] = line
    end
  end
  flush()
  return table.concat(out, "\n")
end

-- ---- shell commands ----------------------------------------------------------

-- A hint for `!cmd` whose program does not exist, or nil.
function M.missing_command(cmd)
  local prog = cmd:match("^%s*([^%s;|&]+)")
  if prog ~= "nvidia-smi" then return nil end
  if os.execute("command -v nvidia-smi >/dev/null 2>&1") then return nil end
  return "nvidia-smi is not installed here (no NVIDIA driver on this machine). In gshell, " ..
    "torch.cuda.smi() prints the same kind of table for the devices gshell sees (real or simulated), " ..
    "and %devices lists them"
end

return M
