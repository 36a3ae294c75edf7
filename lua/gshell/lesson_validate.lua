-- gshell.lesson_validate: checks a lesson table's shape when it loads, so
-- that a teacher's mistake is a message naming the file, the field and
-- what it should be, and never a raw Lua error in the middle of a
-- learner's session (a table title concatenated, a hole in `steps`
-- indexed, a number where the text to print was expected). The format is
-- docs/shell.md, "Writing a lesson".
local M = {}

-- The keys a lesson, a step and an expectation may have: a misspelt one
-- (`devcie`, `valeus`) is an error when the lesson loads, since a check
-- that silently ignores it would pass wrong answers.
local LESSON_KEYS = { "name", "title", "intro", "outro", "setup", "steps", "sim_gpus" }
local STEP_KEYS = { "title", "explain", "task", "expect", "check", "done", "setup" }
local EXPECT_KEYS = { "var", "is", "device", "module_device", "shape", "values", "fill", "dtype", "type",
                      "equals", "test", "error", "result", "check", "hint" }

-- Edit distance with transpositions, for "did you mean".
local function distance(a, b)
  local m, n = #a, #b
  local d = {}
  for i = 0, m do d[i] = { [0] = i } end
  for j = 0, n do d[0][j] = j end
  for i = 1, m do
    for j = 1, n do
      local c = d[i - 1][j - 1] + (a:sub(i, i) == b:sub(j, j) and 0 or 1)
      d[i][j] = math.min(c, d[i - 1][j] + 1, d[i][j - 1] + 1)
      if i > 1 and j > 1 and a:sub(i, i) == b:sub(j - 1, j - 1) and a:sub(i - 1, i - 1) == b:sub(j, j) then
        d[i][j] = math.min(d[i][j], d[i - 2][j - 2] + 1)
      end
    end
  end
  return d[m][n]
end

local function closest(word, list)
  local best, bd = nil, 3
  for _, w in ipairs(list) do
    local dd = distance(word, w)
    if dd < bd then best, bd = w, dd end
  end
  return best
end

-- What a value is, for messages: "a table", "the number 3".
local function what(v)
  local t = type(v)
  if t == "string" then return string.format("the string %q", #v > 40 and v:sub(1, 37) .. "..." or v) end
  if t == "number" or t == "boolean" then return "the " .. t .. " " .. tostring(v) end
  if t == "nil" then return "nothing (nil)" end
  return (t == "userdata" and "a " or (t:match("^[aeiou]") and "an " or "a ")) .. t
end

-- A failed check: `where` names the file and the place in the lesson.
local function bad(where, field, expected, v)
  error({ msg = string.format("%s%s should be %s, not %s", where, field, expected, what(v)) }, 0)
end

local function unknown_key(t, allowed, where)
  local set = {}
  for _, k in ipairs(allowed) do set[k] = true end
  for k in pairs(t) do
    if type(k) == "string" and not set[k] then
      local near = closest(k, allowed)
      error({ msg = string.format("%s has an unknown key '%s'%s; the keys are %s", where, k,
        near and (" (did you mean '" .. near .. "'?)") or "", table.concat(allowed, ", ")) }, 0)
    elseif type(k) ~= "string" then
      error({ msg = string.format("%s has an entry [%s] that is not a named field; the keys are %s", where,
        tostring(k), table.concat(allowed, ", ")) }, 0)
    end
  end
end

-- A list with no holes and nothing but its 1..n entries: returns n. `#`
-- on a table with a hole may stop at either side of it, so a lesson whose
-- `steps` skip a number would lose steps or index a missing one.
local function list_length(t, where, field)
  local n, max = 0, 0
  for k in pairs(t) do
    if math.type(k) ~= "integer" or k < 1 then
      error({ msg = string.format("%s%s should be a list ({...} of entries without names), but it has the key %s",
        where, field, type(k) == "string" and ("'" .. k .. "'") or tostring(k)) }, 0)
    end
    n = n + 1
    if k > max then max = k end
  end
  if max ~= n then
    for i = 1, max do
      if t[i] == nil then
        error({ msg = string.format("%s%s has a hole: entry %d is nil (nil in a list, or a missing comma?) " ..
          "but there are entries up to %d", where, field, i, max) }, 0)
      end
    end
  end
  return n
end

local function opt(v, ty, where, field, expected)
  if v ~= nil and type(v) ~= ty then bad(where, field, expected, v) end
end

-- A device's name as tostring(x.device) gives it: "cpu", "cuda", "cuda:N".
-- Another ("gpu0", "cuda0") could never match, so the check could never pass.
local function device_name(v, where, field)
  if type(v) ~= "string" then bad(where, field, "a device name like \"cuda:0\"", v) end
  if not (v == "cpu" or v == "cuda" or v:match("^cuda:%d+$")) then
    error({ msg = string.format("%s%s is \"%s\", not a device name: devices are named \"cpu\", \"cuda\" or " ..
      "\"cuda:N\" (as tostring(x.device) gives them), so it could never match", where, field, v) }, 0)
  end
end

-- A device name, a list of names, or a function returning one.
local function device_spec(v, where, field)
  if v == nil or type(v) == "function" then return end
  if type(v) == "string" then return device_name(v, where, field) end
  if type(v) == "table" then
    for i = 1, list_length(v, where, field) do device_name(v[i], where, field .. "[" .. i .. "]") end
    return
  end
  bad(where, field, "a device name like \"cuda:0\", a list of names or a function returning one", v)
end

local function check_expectation(e, where)
  unknown_key(e, EXPECT_KEYS, where)
  if e.var == nil and e.error == nil and e.result == nil and e.check == nil then
    error({ msg = where .. " needs one of `var` (a variable's name), `error` (text the error contains), " ..
      "`result` (the cell's value) or `check` (a function)" }, 0)
  end
  local w = where .. "'s "
  opt(e.var, "string", w, "`var`", "a variable's name (a string)")
  opt(e.error, "string", w, "`error`", "a string the error message contains")
  opt(e.check, "function", w, "`check`", "a function of the cell returning true, or false and a hint")
  opt(e.test, "function", w, "`test`", "a function(value, env) returning true, or false and a hint")
  opt(e.hint, "string", w, "`hint`", "a string (the hint shown instead of the generated one)")
  opt(e.dtype, "string", w, "`dtype`", "a dtype's name like \"float32\"")
  opt(e.type, "string", w, "`type`", "a Lua type's name like \"number\"")
  if e.is ~= nil and e.is ~= "device" and e.is ~= "tensor" then bad(w, "`is`", "\"device\" or \"tensor\"", e.is) end
  opt(e.fill, "number", w, "`fill`", "a number")
  device_spec(e.device, w, "`device`")
  device_spec(e.module_device, w, "`module_device`")
  if e.shape ~= nil then
    if type(e.shape) ~= "table" then bad(w, "`shape`", "a list of sizes like {2, 3}", e.shape) end
    for i = 1, list_length(e.shape, w, "`shape`") do
      local s = e.shape[i]
      if math.type(s) ~= "integer" or s < 0 then bad(w, "`shape`[" .. i .. "]", "a size (an integer >= 0)", s) end
    end
  end
  if e.values ~= nil and type(e.values) ~= "number" and type(e.values) ~= "table" and type(e.values) ~= "function"
     and type(e.values) ~= "userdata" then
    bad(w, "`values`", "a number, a (nested) list, a tensor or a function of the environment", e.values)
  end
end

local function check_setup_list(setup, where)
  for i = 1, list_length(setup, where, "`setup`") do
    local pair = setup[i]
    local at = string.format("`setup`[%d]", i)
    if type(pair) ~= "table" then bad(where, at, "a pair {name, expression}", pair) end
    if type(pair[1]) ~= "string" or not pair[1]:match("^[%a_][%w_]*%s*$")
       and not pair[1]:match("^[%a_][%w_]*%s*,[%w_,%s]*[%w_]$") then
      bad(where, at .. "[1]", "a variable's name", pair[1])
    end
    if type(pair[2]) ~= "string" then bad(where, at .. "[2]", "an expression in a string", pair[2]) end
  end
end

local function check_step(st, i, file)
  local where = string.format("%s: step %d", file, i)
  if type(st) ~= "table" then bad(file .. ": ", "step " .. i, "a table {task = ..., expect = ...}", st) end
  unknown_key(st, STEP_KEYS, where)
  if type(st.task) ~= "string" then
    if st.task == nil then error({ msg = where .. " needs a `task` string" }, 0) end
    bad(where .. "'s ", "`task`", "a string (what the learner is asked to do)", st.task)
  end
  if st.expect == nil and st.check == nil then
    error({ msg = where .. " needs `expect` (a list) or `check` (a function)" }, 0)
  end
  local w = where .. "'s "
  opt(st.title, "string", w, "`title`", "a string")
  opt(st.explain, "string", w, "`explain`", "a string")
  opt(st.done, "string", w, "`done`", "a string (printed when the step is passed)")
  opt(st.check, "function", w, "`check`", "a function of the cell returning true, or false and a hint")
  if st.expect ~= nil then
    if type(st.expect) ~= "table" then bad(w, "`expect`", "a list of expectations", st.expect) end
    for j = 1, list_length(st.expect, w, "`expect`") do
      local e = st.expect[j]
      local at = string.format("%s, expectation %d", where, j)
      if type(e) ~= "table" then bad(where .. ", ", "expectation " .. j, "a table", e) end
      check_expectation(e, at)
    end
  end
  if st.setup ~= nil then
    if type(st.setup) == "table" then
      check_setup_list(st.setup, w)
    elseif type(st.setup) ~= "function" then
      bad(w, "`setup`", "a list of {name, expression} or a function", st.setup)
    end
  end
end

-- Checks a lesson table; `file` names it in messages (its path, or the
-- module of a built-in one). Returns the lesson, or nil and the message.
function M.validate(lesson, name, file)
  file = file or name
  local ok, err = pcall(function()
    if type(lesson) ~= "table" then bad(file .. ": ", "the value the file returns", "a table (the lesson)", lesson) end
    unknown_key(lesson, LESSON_KEYS, file .. ": the lesson")
    local w = file .. ": the lesson's "
    opt(lesson.name, "string", w, "`name`", "a string")
    opt(lesson.title, "string", w, "`title`", "a string")
    opt(lesson.intro, "string", w, "`intro`", "a string")
    opt(lesson.outro, "string", w, "`outro`", "a string")
    opt(lesson.setup, "function", w, "`setup`", "a function of the environment")
    if lesson.sim_gpus ~= nil and (math.type(lesson.sim_gpus) ~= "integer" or lesson.sim_gpus < 0 or lesson.sim_gpus > 64) then
      bad(w, "`sim_gpus`", "a number of simulated GPUs (an integer from 0 to 64)", lesson.sim_gpus)
    end
    if type(lesson.steps) ~= "table" then
      error({ msg = file .. ": a lesson needs a non-empty `steps` list" .. (lesson.steps == nil and "" or
        (", not " .. what(lesson.steps))) }, 0)
    end
    local n = list_length(lesson.steps, w, "`steps`")
    if n == 0 then error({ msg = file .. ": a lesson needs a non-empty `steps` list" }, 0) end
    for i = 1, n do check_step(lesson.steps[i], i, file) end
  end)
  if not ok then
    if type(err) == "table" and err.msg then return nil, err.msg end
    return nil, file .. ": " .. tostring(err)
  end
  lesson.name = lesson.name or name
  return lesson
end

return M
