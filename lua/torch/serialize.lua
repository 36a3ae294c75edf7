-- torch/serialize.lua: torch.save and torch.load in the safetensors format
-- (docs/files.md), over the C functions torch._save, torch._load and
-- torch._resolve_device (src/bind/lua_serialize.c).
--
-- What a file holds besides the tensors, in its "__metadata__":
--   format = "pt"                         as the reference Python writer
--   gshell.kind = "tensor" | "dict" | "list"
--   gshell.device.<name> = "cuda:1"       the device each tensor was on
--   gshell.requires_grad.<name> = "true"  only for tensors that require grad
-- A single tensor is stored under the reserved name "__tensor__"; a list
-- {t1, t2} under the names "1", "2". Files from other tools have no gshell
-- keys and load as a table of CPU tensors.
local torch = require("torch")

local M = {}

M.TENSOR_NAME = "__tensor__"
local KIND, DEVICE, GRAD = "gshell.kind", "gshell.device.", "gshell.requires_grad."
-- The keys of a state dict in their saved order, one per line.
local ORDER = "gshell.order"

local is_tensor = torch.is_tensor

local function device_string(d)
  if d.type == "cpu" then return "cpu" end
  return d.index and ("cuda:" .. d.index) or "cuda"
end

-- Names and tensors of obj, and its kind; a clear error for anything else.
local function flatten(obj)
  if is_tensor(obj) then return { M.TENSOR_NAME }, { obj }, "tensor" end
  if type(obj) ~= "table" then
    error("torch.save: can only save a tensor or a table of tensors, got " .. type(obj), 3)
  end
  if rawget(obj, "_modules") ~= nil and type(obj.state_dict) == "function" then
    error("torch.save: a module is saved through its state dict: torch.save(net:state_dict(), path), " ..
          "and loaded back with net:load_state_dict(torch.load(path))", 3)
  end
  local mt = getmetatable(obj)
  local ordered = type(mt) == "table" and rawget(mt, "__order") ~= nil
  local names, nstr, nint, maxi = {}, 0, 0, 0
  for k, v in pairs(obj) do
    if type(k) == "string" then
      nstr = nstr + 1
    elseif math.type(k) == "integer" and k >= 1 then
      nint, maxi = nint + 1, math.max(maxi, k)
    else
      error("torch.save: table keys must be strings (a state dict) or 1..n (a list), got key " ..
            tostring(k) .. " (" .. type(k) .. ")", 3)
    end
    if not is_tensor(v) then
      error(("torch.save: can only save tensors, but the value at key '%s' is a %s"):format(tostring(k), type(v)), 3)
    end
    names[#names + 1] = k
  end
  if nstr > 0 and nint > 0 then
    error("torch.save: a table must have either string keys (a state dict) or 1..n (a list), not both", 3)
  end
  if nint > 0 and maxi ~= nint then error("torch.save: a list of tensors must have no holes", 3) end
  local tensors, kind = {}, nint > 0 and "list" or "dict"
  if kind == "list" then
    for i = 1, nint do names[i], tensors[i] = tostring(i), obj[i] end
  else
    -- an nn.OrderedDict (a state dict) keeps its order (pairs follows
    -- it); a plain table has none, so its keys are sorted
    if not ordered then table.sort(names) end
    for i, k in ipairs(names) do tensors[i] = obj[k] end
  end
  return names, tensors, kind, ordered
end

-- Runs fn(...) and re-raises its error at the caller's caller (the user's
-- line), without the position inside this file that C errors carry.
local function user_level(fn, ...)
  local res = table.pack(pcall(fn, ...))
  if res[1] then return table.unpack(res, 2, res.n) end
  local err = res[2]
  if type(err) == "string" then err = err:gsub("^[^\n]-serialize%.lua:%d+: ", "") end
  error(err, 3)
end

-- torch.save(obj, path [, {metadata = {k = "v"}}])
local function save(obj, path, opts)
  if type(path) ~= "string" then error("torch.save: the path must be a string, got " .. type(path), 2) end
  local names, tensors, kind, ordered = flatten(obj)
  local meta = { format = "pt", [KIND] = kind }
  if ordered and not table.concat(names, ""):find("\n", 1, true) then meta[ORDER] = table.concat(names, "\n") end
  if opts ~= nil and type(opts) ~= "table" then error("torch.save: options must be a table", 2) end
  local msg = opts and torch._options_error(opts, "torch.save", { "metadata" })
  if msg then error(msg, 2) end
  for k, v in pairs(opts and opts.metadata or {}) do
    if type(k) ~= "string" or type(v) ~= "string" then
      error("torch.save: metadata keys and values must be strings", 2)
    end
    if k:sub(1, 7) == "gshell." or k == "format" then error("torch.save: metadata key '" .. k .. "' is reserved", 2) end
    meta[k] = v
  end
  for i, name in ipairs(names) do
    local t = tensors[i]
    meta[DEVICE .. name] = device_string(t.device)
    if t.requires_grad then meta[GRAD .. name] = "true" end
  end
  torch._save(path, names, tensors, meta)
end

-- Where a tensor saved on `saved` (a device string) goes under map_location.
local function target(map, saved, name)
  if map == nil then return saved end
  if type(map) == "function" then
    local d = map(saved, name)
    if d == nil then return saved end
    return d
  end
  if type(map) == "table" and getmetatable(map) == nil then
    local d = map[saved]
    if d == nil then return saved end
    return d
  end
  return map -- a device, a string or an ordinal: everything goes there
end

local function check_opts(opts)
  if opts == nil then return nil end
  if type(opts) ~= "table" then error("torch.load: options must be a table, e.g. {map_location = 'cpu'}", 3) end
  local msg = torch._options_error(opts, "torch.load", { "map_location" })
  if msg then error(msg, 3) end
  return opts.map_location
end

-- torch.load(path [, {map_location = device | {saved = device} | function(saved, name)}])
local function load(path, opts)
  if type(path) ~= "string" then error("torch.load: the path must be a string, got " .. type(path), 2) end
  local map = check_opts(opts)
  local f <close> = torch._load(path)
  local names, meta = f:keys(), f:metadata()
  -- Every tensor's device is decided and checked before any data is read.
  local devices = {}
  for i, name in ipairs(names) do
    local saved = meta[DEVICE .. name] or "cpu"
    local ok, d = pcall(torch.device, saved)
    if not ok then
      error(("torch.load('%s'): tensor '%s' has an invalid saved device '%s'"):format(path, name, saved), 2)
    end
    local want = target(map, saved, name)
    local rok, res = pcall(torch._resolve_device, want)
    if not rok then
      local how = map == nil and "was saved on " .. saved or "is mapped to " .. tostring(want)
      error(("torch.load('%s'): tensor '%s' %s, but %s; pass map_location (e.g. {map_location = 'cpu'}) " ..
             "to load it elsewhere"):format(path, name, how, res), 2)
    end
    devices[i] = res
  end
  local out = {}
  for i, name in ipairs(names) do
    local t = f:get(name, devices[i])
    if meta[GRAD .. name] == "true" and t:is_floating_point() then t.requires_grad = true end
    out[name] = t
  end
  local kind = meta[KIND]
  if kind == "tensor" then
    if #names ~= 1 or out[M.TENSOR_NAME] == nil then
      error(("torch.load('%s'): the file says it holds one tensor but has %d named %s"):format(
            path, #names, names[1] and "'" .. names[1] .. "'" or "nothing"), 2)
    end
    return out[M.TENSOR_NAME]
  elseif kind == "list" then
    local list = {}
    for i = 1, #names do
      list[i] = out[tostring(i)]
      if list[i] == nil then error(("torch.load('%s'): list element %d is missing"):format(path, i), 2) end
    end
    return list
  end
  if meta[ORDER] then
    -- saved from a state dict: the same order back, as an nn.OrderedDict
    local od = torch.nn.OrderedDict()
    for name in (meta[ORDER] .. "\n"):gmatch("(.-)\n") do
      if out[name] ~= nil then od[name] = out[name]; out[name] = nil end
    end
    local rest = {}
    for name in pairs(out) do rest[#rest + 1] = name end
    table.sort(rest)
    for _, name in ipairs(rest) do od[name] = out[name] end
    return od
  end
  return out
end

-- The user metadata of a file (gshell's own keys left out), without
-- reading any tensor data.
local function metadata(path)
  local f <close> = torch._load(path)
  local out = {}
  for k, v in pairs(f:metadata()) do
    if k:sub(1, 7) ~= "gshell." and k ~= "format" then out[k] = v end
  end
  return out
end

-- (parenthesised: not tail calls, so that level 3 is the user's line)
function M.save(obj, path, opts) user_level(save, obj, path, opts) end
function M.load(path, opts) return (user_level(load, path, opts)) end
function M.metadata(path) return (user_level(metadata, path)) end

torch.save, torch.load = M.save, M.load
return M
