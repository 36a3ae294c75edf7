-- gshell.pretty: how the shell shows values.
--
-- Values with a __repr metamethod (devices) show as it gives them, others
-- with a __tostring metamethod (tensors, dtypes, sizes, modules) as
-- tostring gives them. Plain tables are shown as Lua
-- constructors, on one line when they fit and nested with indentation
-- otherwise; keys in order (the array part, then numbers, then strings,
-- then the rest); a table met again inside itself shows as <cycle>; very
-- deep or long tables are cut with "...". Strings at the top level print
-- raw, as Lua's own REPL does; inside tables they are quoted.
local M = {}

M.width = 80        -- a table longer than this on one line is split
M.max_depth = 8     -- deeper tables show as {...}
M.max_items = 100   -- more entries than this show as "... (N more)"

local keywords = {}
for w in ([[and break do else elseif end false for function goto if in
  local nil not or repeat return then true until while]]):gmatch("%a+") do
  keywords[w] = true
end

local escapes = { ["\n"] = "\\n", ["\t"] = "\\t", ["\r"] = "\\r", ["\\"] = "\\\\", ['"'] = '\\"' }

-- A string as a Lua literal: double quotes, common escapes, other control
-- bytes as \ddd.
function M.quote(s)
  return '"' .. s:gsub('[%c\\"]', function(c)
    return escapes[c] or string.format("\\%03d", c:byte())
  end) .. '"'
end

local function is_tensor(v)
  local torch = package.loaded.torch
  return type(v) == "userdata" and type(torch) == "table" and type(torch.is_tensor) == "function"
    and torch.is_tensor(v)
end

-- tostring that fails only where the failure is news: a broken __tostring
-- inside a table shows as the raw type, but a tensor's error (a device
-- error found while the display waited for its values: it must never be
-- lost) and any error of a whole result (`strict`) are raised.
local function safe_tostring(v, strict)
  local ok, s = pcall(tostring, v)
  if ok and type(s) == "string" then return s end
  if not ok and (strict or is_tensor(v)) then error(s, 0) end
  return string.format("<%s (__tostring failed)>", type(v))
end

-- A __repr metamethod (devices: device(type='cuda', index=1)) is what the
-- prompt shows, as Python's REPL shows repr() while print shows str().
local function repr_of(v)
  local mt = getmetatable(v)
  local f = type(mt) == "table" and rawget(mt, "__repr")
  if type(f) ~= "function" then return nil end
  local ok, s = pcall(f, v)
  if ok and type(s) == "string" then return s end
  return nil
end

local function has_tostring(v)
  local mt = getmetatable(v)
  return type(mt) == "table" and rawget(mt, "__tostring") ~= nil
end

local type_rank = { number = 1, string = 2, boolean = 3 }

-- Keys of a table other than its array part 1..n, in a stable order.
local function sorted_keys(t, n)
  local keys = {}
  for k in next, t do
    if not (math.type(k) == "integer" and k >= 1 and k <= n) then keys[#keys + 1] = k end
  end
  table.sort(keys, function(a, b)
    local ta, tb = type_rank[type(a)] or 4, type_rank[type(b)] or 4
    if ta ~= tb then return ta < tb end
    if ta <= 2 then return a < b end
    return safe_tostring(a) < safe_tostring(b)
  end)
  return keys
end

-- The length of the array part without invoking __len or __index.
local function raw_array_len(t)
  local n = 0
  while rawget(t, n + 1) ~= nil do n = n + 1 end
  return n
end

local function indent_lines(s, pad)
  return (s:gsub("\n", "\n" .. pad))
end

local format_value

local function format_key(k, seen, depth)
  if type(k) == "string" and k:match("^[%a_][%w_]*$") and not keywords[k] then
    return k .. " = "
  end
  return "[" .. format_value(k, seen, depth, false) .. "] = "
end

local function format_table(t, seen, depth)
  if seen[t] then return "<cycle>" end
  local mt = getmetatable(t)
  local name = type(mt) == "table" and rawget(mt, "__name")
  local prefix = type(name) == "string" and (name .. " ") or ""
  if depth >= M.max_depth then return prefix .. "{...}" end
  seen[t] = true
  local items, multiline = {}, false
  local n = raw_array_len(t)
  local count = 0
  local function add(s)
    count = count + 1
    items[#items + 1] = s
    if s:find("\n", 1, true) then multiline = true end
  end
  for i = 1, n do
    if count >= M.max_items then break end
    add(format_value(rawget(t, i), seen, depth + 1, false))
  end
  local keys = sorted_keys(t, n)
  for _, k in ipairs(keys) do
    if count >= M.max_items then break end
    add(format_key(k, seen, depth + 1) .. format_value(rawget(t, k), seen, depth + 1, false))
  end
  local total = n + #keys
  if total > count then items[#items + 1] = string.format("... (%d more)", total - count) end
  seen[t] = nil
  if #items == 0 then return prefix .. "{}" end
  local one = prefix .. "{" .. table.concat(items, ", ") .. "}"
  if not multiline and #one + depth * 2 <= M.width then return one end
  local pad = string.rep("  ", depth + 1)
  for i, s in ipairs(items) do items[i] = pad .. indent_lines(s, pad) end
  return prefix .. "{\n" .. table.concat(items, ",\n") .. "\n" .. string.rep("  ", depth) .. "}"
end

-- One value as text; `top` says it is a whole result (strings raw).
function format_value(v, seen, depth, top)
  local ty = type(v)
  local r = (ty == "userdata" or ty == "table") and repr_of(v)
  if r then return r end
  if ty == "string" then
    return top and v or M.quote(v)
  elseif ty == "table" then
    if has_tostring(v) then return safe_tostring(v, top) end
    return format_table(v, seen, depth)
  else
    return safe_tostring(v, top)
  end
end

-- The text the shell prints for one result value.
function M.repr(v)
  return format_value(v, {}, 0, true)
end

-- Several results separated by tabs, as Lua's REPL prints them.
function M.repr_values(n, ...)
  local out = {}
  for i = 1, n do out[i] = M.repr((select(i, ...))) end
  return table.concat(out, "\t")
end

return M
