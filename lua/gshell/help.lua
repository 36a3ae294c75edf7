-- gshell.help: help(obj), ?name and name? in the shell.
--
-- Documentation is a table of one-line signatures (gshell.docs) keyed
-- by dotted names: "torch.ones", "Tensor.sum", "nn.Linear". A value is
-- found by name, or by identity: every function reachable from torch, nn,
-- optim and the tensor metatable is indexed once, so help(x.sum) and
-- help(torch.cuda.synchronize) find their entries. Without an entry, a
-- Lua function shows its parameters and where it is defined, a table its
-- fields, a tensor its shape and methods.
local docs = require "gshell.docs"
local pretty = require "gshell.pretty"

local M = {}

local function torch_mod()
  return package.loaded.torch or rawget(_G, "torch")
end

-- Tables to index, with the names they are known by.
local function roots()
  local t = torch_mod()
  local list = {}
  if type(t) == "table" then
    list[#list + 1] = { "torch", t }
    if type(t.nn) == "table" then list[#list + 1] = { "nn", t.nn } end
    if type(t.optim) == "table" then list[#list + 1] = { "optim", t.optim } end
  end
  -- d2l (the book's helpers), when loaded
  local d2l = package.loaded["torch.d2l"]
  if type(d2l) == "table" then list[#list + 1] = { "d2l", d2l } end
  local reg = debug.getregistry()
  local mt = reg["torch.Tensor"]
  if type(mt) == "table" then
    if type(rawget(mt, "__methods")) == "table" then list[#list + 1] = { "Tensor", mt.__methods } end
    if type(rawget(mt, "__index")) == "table" then list[#list + 1] = { "Tensor", mt.__index } end
  end
  return list
end

local by_value        -- function/table -> name, built on first use

local function index_table(map, prefix, t, depth, seen)
  if seen[t] or depth > 3 then return end
  seen[t] = true
  for k, v in next, t do
    if type(k) == "string" and not k:match("^__") then
      local name = prefix .. "." .. k
      if (type(v) == "function" or type(v) == "table") and map[v] == nil then
        -- prefer names that have docs
        map[v] = name
      elseif map[v] and docs.get(name) and not docs.get(map[v]) then
        map[v] = name
      end
      if type(v) == "table" and depth < 3 then index_table(map, name, v, depth + 1, seen) end
    end
  end
end

local function name_of(v)
  if not by_value then
    by_value = {}
    for _, r in ipairs(roots()) do
      if by_value[r[2]] == nil then by_value[r[2]] = r[1] end
      index_table(by_value, r[1], r[2], 1, {})
    end
  end
  return by_value[v]
end

local function is_tensor(v)
  local mt = getmetatable(v)
  return type(mt) == "table" and rawget(mt, "__name") == "torch.Tensor"
end

-- Method names of a tensor (from its metatable), sorted.
local function tensor_methods(v)
  local mt = getmetatable(v)
  local names, seen = {}, {}
  local function add(t)
    for k, f in next, t do
      if type(k) == "string" and not k:match("^__") and type(f) == "function" and not seen[k] then
        seen[k] = true
        names[#names + 1] = k
      end
    end
  end
  if type(rawget(mt, "__methods")) == "table" then add(mt.__methods) end
  if type(rawget(mt, "__index")) == "table" then add(mt.__index) end
  add(mt)
  table.sort(names)
  return names
end

local function wrap_list(prefix, names)
  local lines, line = {}, prefix
  for i, n in ipairs(names) do
    local piece = n .. (i < #names and ", " or "")
    if #line + #piece > 79 then lines[#lines + 1] = line:gsub("%s+$", ""); line = "  " end
    line = line .. piece
  end
  lines[#lines + 1] = line
  return table.concat(lines, "\n")
end

local function is_module(v)
  local mt = getmetatable(v)
  return type(v) == "table" and rawget(v, "_modules") ~= nil and type(mt) == "table" and mt.__is_module == true
end

local function is_optimizer(v)
  return type(v) == "table" and type(rawget(v, "param_groups")) == "table" and type(v.step) == "function"
end

-- The methods a class (and its parents) define, sorted.
local function class_methods(cls)
  local names, seen = {}, {}
  local depth = 0
  while type(cls) == "table" and depth < 10 do
    for k, f in next, cls do
      if type(k) == "string" and not k:match("^_") and type(f) == "function" and not seen[k] then
        seen[k] = true
        names[#names + 1] = k
      end
    end
    local mt = getmetatable(cls)
    cls = type(mt) == "table" and rawget(mt, "__index") or nil
    depth = depth + 1
  end
  table.sort(names)
  return names
end

-- Help on a module: what it is, its printout, children, parameters with
-- their shapes and devices, and its methods.
local function module_text(v, name)
  local cls = getmetatable(v)
  local lines = { string.format("%s%s (an nn.Module; call it: %s(input))", name and (name .. ": ") or "",
    tostring(cls.__name or "Module"), name or "net") }
  lines[#lines + 1] = tostring(v)
  local kids = {}
  for _, k in ipairs(rawget(v, "_modules").keys or {}) do kids[#kids + 1] = k end
  if #kids > 0 then lines[#lines + 1] = wrap_list("Children: ", kids) end
  local params = {}
  local ok, named = pcall(v.named_parameters, v)
  if ok then
    for _, kv in ipairs(named) do
      local p = kv[2]
      params[#params + 1] = string.format("%s %s on %s", kv[1], tostring(p.shape):gsub("^torch%.Size%((.*)%)$", "%1"),
        tostring(p.device))
    end
  end
  if #params > 0 then lines[#lines + 1] = wrap_list("Parameters: ", params) end
  lines[#lines + 1] = wrap_list("Methods: ", class_methods(cls))
  return table.concat(lines, "\n")
end

local function optimizer_text(v, name)
  local n = 0
  for _, g in ipairs(v.param_groups) do n = n + #g.params end
  return table.concat({
    string.format("%s%s (an optimizer over %d parameter tensor%s; opt:zero_grad(), loss:backward(), opt:step())",
      name and (name .. ": ") or "", tostring(getmetatable(v).__name), n, n == 1 and "" or "s"),
    tostring(v),
    wrap_list("Methods: ", class_methods(getmetatable(v))),
  }, "\n")
end

-- "Members: a, b, c" for a library table (torch.cuda), without the
-- private names and internals; nil for anything else.
local function members_text(v)
  if type(v) ~= "table" or getmetatable(v) ~= nil and (getmetatable(v)).__call then return nil end
  local keys = {}
  for k in next, v do
    if type(k) == "string" and not k:match("^_") and not require("gshell.complete").is_internal(k) then
      keys[#keys + 1] = k
    end
  end
  if #keys == 0 then return nil end
  table.sort(keys)
  return wrap_list("Members: ", keys)
end

local function is_device(v)
  local mt = getmetatable(v)
  return type(mt) == "table" and rawget(mt, "__name") == "torch.device"
end

-- What a device is, for help(x.device).
local function device_text(v, name)
  local where = tostring(v)
  local lines = { string.format("%sa device: %s (type '%s', index %s)", name and (name .. ": ") or "", where,
    tostring(v.type), tostring(v.index)) }
  if v.type == "cuda" then
    lines[#lines + 1] = "  a CUDA device" .. (torch_mod().cuda.is_simulated and torch_mod().cuda.is_simulated()
      and " (simulated: host memory, kernels on the CPU)" or "") .. "; torch.cuda.get_device_name(" ..
      tostring(v.index or 0) .. ") names it, %devices lists them all"
  else
    lines[#lines + 1] = "  the host CPU (all its cores)"
  end
  lines[#lines + 1] = "  tensors go there with x:to(d) or {device = d} in a factory; d.type and d.index are its fields"
  return table.concat(lines, "\n")
end

-- The help text for a value known as `name` (either may be nil).
function M.text(v, name)
  if is_device(v) then return device_text(v, name) end
  if v ~= nil and v == rawget(_G, "help") then return M.about() end
  if is_module(v) then return module_text(v, name) end
  if is_optimizer(v) then return optimizer_text(v, name) end
  local docname = name and docs.get(name) and name
  if not docname and v ~= nil then
    local n = name_of(v)
    if n and docs.get(n) then docname = n end
    name = name or n
  end
  if docname then
    local more = members_text(v)
    return docs.get(docname) .. (more and ("\n" .. more) or "")
  end
  local ty = type(v)
  if ty == "function" then
    local info = debug.getinfo(v, "Su")
    if info.what == "C" then
      return string.format("%s: a built-in function (no documentation)", name or "function")
    end
    local params = {}
    for i = 1, info.nparams do params[i] = debug.getlocal(v, i) end
    if info.isvararg then params[#params + 1] = "..." end
    return string.format("%s(%s)  -- defined at %s:%d", name or "function",
      table.concat(params, ", "), info.short_src, info.linedefined)
  elseif is_tensor(v) then
    local ok, desc = pcall(function()
      local d = v.device
      local where = d.index and (d.type .. ":" .. d.index) or d.type
      return string.format("Tensor of shape %s, %s, on %s", tostring(v.shape), tostring(v.dtype), where)
    end)
    return (ok and desc or "Tensor") .. "\n" .. wrap_list("Methods: ", tensor_methods(v))
  elseif ty == "table" and not (getmetatable(v) or {}).__tostring then
    local keys = {}
    for k in next, v do
      if type(k) == "string" and not k:match("^__") then keys[#keys + 1] = k end
    end
    table.sort(keys)
    local head = (name and (name .. ": ") or "") .. "a table"
    if #keys == 0 then return head .. " with no named fields" end
    return head .. "\n" .. wrap_list("Fields: ", keys)
  elseif v == nil then
    return nil
  end
  return string.format("%s: %s", type(v), (pretty.repr(v):gsub("\n.*", " ...")))
end

local general = [[
gshell: Lua 5.4 with a PyTorch-like `torch` (globals torch, nn, optim, try_gpu, try_all_gpus).
  x = torch.ones(2, 3, {device = try_gpu()})   expressions print their value
  local y = x * 2                               locals stay for later lines; _ is the last value
  x:sum();                                      a trailing ; prints nothing
  help(torch.ones), ?torch.ones, torch.ones?    help on a function, table or value
  x:<TAB>, torch.cu<TAB>                        completion of methods, fields, globals
Magics:]]

-- What `help` alone (and ?help, help(help)) says: how the help system works.
function M.about()
  return table.concat({
    "help: the help system.",
    "  help()                 an overview of gshell and the list of magics",
    "  help(obj), ?obj, obj?  help on a value: a torch function's signature, a tensor's shape and methods,",
    "                         a module's layers, parameters and methods, an optimizer's settings",
    "  help('torch.ones')     help by name (also ?torch.ones)",
    "  ?%timeit               help on a magic (%magic lists them)",
  }, "\n")
end

-- Help on a magic: "%timeit" -> its line in the summary, and its options.
function M.magic_text(name)
  local magics = require("gshell.magics")
  local bare = name:gsub("^%%+", "")
  if not magics.names[bare] then return nil end
  local lines = {}
  for _, s in ipairs(magics.summary) do
    if s[1]:match("^%%" .. bare .. "[%s/]") or s[1] == "%" .. bare or s[1]:match("/ %%" .. bare .. "$") then
      lines[#lines + 1] = string.format("%s: %s", s[1], s[2])
    end
  end
  local more = magics.details and magics.details[bare]
  if more then lines[#lines + 1] = more end
  if #lines == 0 then lines[1] = "%" .. bare .. ": a magic (%magic lists them)" end
  return table.concat(lines, "\n")
end

-- help(): general help; help(v): help on a value; help("name"): by name.
function M.help(...)
  local v = ...
  if select("#", ...) == 0 then
    local lines = { general }
    for _, s in ipairs(require("gshell.magics").summary) do
      lines[#lines + 1] = string.format("  %-28s %s", s[1], s[2])
    end
    lines[#lines + 1] = "Ctrl-C interrupts running code, Ctrl-D leaves. Docs: docs/shell.md"
    io.stdout:write(table.concat(lines, "\n"), "\n")
    return
  end
  if type(v) == "string" and v:match("^[%a_][%w_%.:]*$") then
    return M.help_name(nil, v)                 -- help("torch.ones")
  end
  local text = M.text(v)
  if v == nil then text = "no help: the value is nil (is the name defined?)" end
  io.stdout:write(text or "no help for this value", "\n")
end

-- Evaluates a dotted name in the session without calling anything.
local function resolve(session, name)
  local first, rest = name:match("^([%a_][%w_]*)(.*)$")
  if not first then return nil end
  local v
  if session then v = session:lookup(first) else v = _G[first] end
  local path = first
  for sep, key in rest:gmatch("([%.:])([%a_][%w_]*)") do
    if v == nil then return nil end
    local ok, nv = pcall(function() return v[key] end)
    if not ok then return nil end
    if is_tensor(v) then path = "Tensor" end
    path = path .. "." .. key
    v = nv
  end
  return v, path
end

-- The help text for a dotted name: its documentation, or what the name
-- evaluates to in the session; nil when there is neither (?name at the
-- prompt, and the Jupyter kernel's inspect_request).
function M.name_text(session, name)
  if name:sub(1, 1) == "%" then return M.magic_text(name) end
  if name == "help" then return M.about() end
  local text = docs.get((name:gsub(":", ".")))
  if text then
    local more = members_text((resolve(session, name)))
    if more then text = text .. "\n" .. more end
  else
    local v, path = resolve(session, name)
    if path and docs.get(path) then
      text = docs.get(path)
    elseif v ~= nil then
      text = M.text(v, name)
    end
  end
  return text
end

-- ?name: help by name, or on what the name evaluates to.
function M.help_name(session, name)
  if name == "" then return M.help() end
  if name:sub(1, 1) == "%" and not M.magic_text(name) then
    io.stdout:write(string.format("no magic '%s' (%%magic lists them)", name), "\n")
    return
  end
  local text = M.name_text(session, name)
  io.stdout:write(text or string.format("no help for '%s': no such name, and no documentation", name), "\n")
end

return M
