-- gshell.lesson: guided lessons at the prompt (`gshell --lesson NAME`,
-- `%lesson` inside a session). A lesson is a plain Lua data file (format:
-- docs/shell.md, "Writing a lesson"); the built-in ones live in
-- lua/gshell/lessons/. After every cell the learner runs, the current
-- step's expectations are checked against the *result* (variables, their
-- device, shape, values; an error raised); a right answer moves on, a
-- near miss gets a specific hint. Progress is kept in a small file.
local hints = require "gshell.hints"

local M = {}

local function torch() return package.loaded.torch or rawget(_G, "torch") end

local function out(...) io.stdout:write(...) end

-- ---- finding lessons -------------------------------------------------------

-- $override if set, else $xdg_var/gshell/lessons, else ~<home_default>/gshell/lessons
-- (the XDG base-directory rule); nil when there is no home either.
local function lesson_dir(override, xdg_var, home_default)
  local env = os.getenv(override)
  if env and env ~= "" then return env end
  local base = os.getenv(xdg_var)
  if not base or base == "" then
    local home = os.getenv("HOME")
    if not home or home == "" then return nil end
    base = home .. home_default
  end
  return base .. "/gshell/lessons"
end

-- Directory of lessons a user or teacher installed: $GSHELL_LESSON_PATH or
-- $XDG_DATA_HOME/gshell/lessons (~/.local/share/gshell/lessons).
function M.user_dir()
  return lesson_dir("GSHELL_LESSON_PATH", "XDG_DATA_HOME", "/.local/share")
end

-- (read as --check reads a script: a FIFO or /dev/zero named as a lesson
-- is refused, not read forever)
local function load_file(path)
  local src, rerr = torch()._read_text(path)
  if not src then return nil, rerr end
  local chunk, err = load(src, "@" .. path, "t", setmetatable({}, { __index = _G }))
  if not chunk then return nil, err end
  local ok, lesson = pcall(chunk)
  if not ok then return nil, tostring(lesson) end
  return lesson
end

-- Checks a lesson table's shape (gshell.lesson_validate); `file` names
-- it in messages. Returns the lesson, or nil and what is wrong.
function M.validate(lesson, name, file)
  return require("gshell.lesson_validate").validate(lesson, name, file)
end

-- The lesson called `name`: a file path (ends in .lua or has a /), one in
-- the user directory, or a built-in one.
function M.find(name)
  local lesson, err
  if name:find("/", 1, true) or name:match("%.lua$") then
    lesson, err = load_file(name)
    if not lesson then return nil, err end
    lesson, err = M.validate(lesson, (name:match("([^/]+)%.lua$") or name), name)
    if lesson then lesson.ref = name end  -- what finds it again (--restart hints)
    return lesson, err
  end
  if not name:match("^[%w_%-]+$") then return nil, "no lesson '" .. name .. "'" end
  local dir = M.user_dir()
  if dir then
    local path = dir .. "/" .. name .. ".lua"
    lesson, err = load_file(path)
    -- (a file that is missing falls through to the built-in lessons)
    if lesson ~= nil or not (err and err:find(": No such file or directory$")) then
      if err then return nil, err end
      return M.validate(lesson, name, path)
    end
  end
  local ok, builtin = pcall(require, "gshell.lessons." .. name)
  if ok then return M.validate(builtin, name, "lua/gshell/lessons/" .. name .. ".lua") end
  return nil, "no lesson '" .. name .. "' (`gshell --lesson` lists them)"
end

-- Every installed lesson: {name =, title =, steps =}, built-in first.
-- The built-in lessons are part of gshell and are loaded; a file in the
-- user directory is never run here (gshell.lesson_header reads its title
-- and step count from its text: a listing must not run what it lists),
-- so its `steps` is nil when the file builds its list with code.
function M.list()
  local res, seen = {}, {}
  for _, name in ipairs(require("gshell.lessons")) do
    local ok, l = pcall(require, "gshell.lessons." .. name)
    if ok and type(l) == "table" and type(l.steps) == "table" then
      seen[name] = true
      res[#res + 1] = { name = name, title = type(l.title) == "string" and l.title or name, steps = #l.steps }
    end
  end
  local dir = M.user_dir()
  if dir then
    -- regular files only (a FIFO named x.lua would block the read)
    local p = io.popen("find -L '" .. dir:gsub("'", "'\\''") .. "' -mindepth 1 -maxdepth 1 -type f -name '*.lua' " ..
      "2>/dev/null | sort")
    if p then
      local header = require "gshell.lesson_header"
      for path in p:lines() do
        local name = path:match("/([%w_%-]+)%.lua$")
        if name and not seen[name] then
          local h = header.read_file(path)
          if h then
            seen[name] = true
            -- (control characters, a terminal's escapes included, print as spaces)
            res[#res + 1] = { name = name, title = h.title and h.title:gsub("%c", " ") or name, steps = h.steps }
          end
        end
      end
      p:close()
    end
  end
  return res
end

-- ---- progress ----------------------------------------------------------------

-- $GSHELL_LESSON_STATE, else $XDG_STATE_HOME/gshell/lessons
-- (~/.local/state/gshell/lessons): lines "name<TAB>next step".
function M.state_path()
  return lesson_dir("GSHELL_LESSON_STATE", "XDG_STATE_HOME", "/.local/state")
end

-- The progress, and a message when the file exists but cannot be read (a
-- device or a FIFO in its place is refused, not read forever).
function M.load_progress()
  local path, prog = M.state_path(), {}
  if not path then return prog end
  local text, err = torch()._read_text(path)
  if not text then
    -- (no file yet: saving makes it, or says why it cannot)
    if err:find(": No such file or directory$") or err:find(": Not a directory$") then return prog end
    return prog, err
  end
  for line in text:gmatch("[^\n]+") do
    local name, n = line:match("^([^\t]+)\t(%d+)$")
    if name then prog[name] = tonumber(n) end
  end
  return prog
end

function M.save_progress(name, step)
  local path = M.state_path()
  if not path then return end
  local prog, rerr = M.load_progress()
  if rerr then -- (writing would drop the other lessons' progress)
    io.stderr:write("gshell: lesson progress not saved: ", rerr, "\n")
    return
  end
  prog[name] = step
  local dir = path:match("^(.*)/[^/]*$")
  if dir and dir ~= "" then os.execute("mkdir -p '" .. dir:gsub("'", "'\\''") .. "' 2>/dev/null") end
  local names, lines = {}, {}
  for k in pairs(prog) do names[#names + 1] = k end
  table.sort(names)
  for _, k in ipairs(names) do lines[#lines + 1] = k .. "\t" .. prog[k] .. "\n" end
  -- as torch.save writes (issue 23): a full disk leaves the old progress,
  -- never an empty file; the learner is told
  local ok, err = torch()._save_text(path, table.concat(lines))
  if not ok then io.stderr:write("gshell: lesson progress not saved: ", tostring(err), "\n") end
end

-- ---- checking a step -----------------------------------------------------------

local function is_tensor(v)
  local t = torch()
  return t and t.is_tensor(v)
end

local function is_device(v)
  local mt = getmetatable(v)
  return type(mt) == "table" and rawget(mt, "__name") == "torch.device"
end

local function is_module(v)
  return type(v) == "table" and rawget(v, "_modules") ~= nil and type(v.parameters) == "function"
end

-- An expectation's value: functions are called (with the environment), so
-- a lesson can say device = function() return tostring(try_gpu(1)) end.
local function value_of(x, env)
  if type(x) == "function" then return x(env) end
  return x
end

local function one_of(want, got)
  if type(want) == "table" then
    for _, w in ipairs(want) do if w == got then return true end end
    return false
  end
  return want == got
end

local function want_text(want)
  if type(want) == "table" then return table.concat(want, " or ") end
  return tostring(want)
end

local function shape_of(t)
  local s = {}
  for i = 1, t:dim() do s[i] = t.shape[i] end
  return s
end

local function same_list(a, b)
  if #a ~= #b then return false end
  for i = 1, #a do if a[i] ~= b[i] then return false end end
  return true
end

-- Does the cell's source name `var`? (Hints only for the variable the
-- learner was working on, so trying other things stays quiet.)
local function mentions(src, var)
  return type(src) == "string" and (" " .. src .. " "):find("[^%w_]" .. var:gsub("%p", "%%%0") .. "[^%w_]") ~= nil
end

-- A hint for a tensor on the wrong device.
local function device_hint(var, got, want)
  local w = type(want) == "table" and want[1] or want
  if got == "cpu" and w ~= "cpu" then
    return string.format("%s is a CPU tensor, but the task asks for one on %s: create it with " ..
      "{device = ...} or move it with %s:to(...) / %s:cuda(...)", var, want_text(want), var, var)
  end
  if w == "cpu" then
    return string.format("%s is on %s, but the task asks for the CPU: %s:cpu() copies it back", var, got, var)
  end
  local idx = w:match("^cuda:(%d+)$")
  return string.format("%s is on %s, but the task asks for %s%s", var, got, want_text(want),
    idx and string.format(" (%s:cuda(%s) copies it there)", var, idx) or "")
end

-- Checks one {var = ...} expectation. Returns true, or false and a hint
-- (nil when the learner was not working on that variable).
-- Equal for a lesson: tensors by shape and values (== on two tensors is
-- an error), anything else by ==.
function M.same_value(a, b)
  if is_tensor(a) and is_tensor(b) then return rawequal(a, b) or torch().equal(a:cpu(), b:cpu()) end
  if is_tensor(a) or is_tensor(b) then return false end
  return a == b
end

-- A value as the prompt shows it, on one line and short.
local function short(v)
  local ok, text = pcall(function() return require("gshell.pretty").repr_values(1, v) end)
  text = (ok and text or tostring(v)):gsub("%s*\n%s*", " ")
  if #text > 120 then text = text:sub(1, 117) .. "..." end
  return text
end

local function check_var(e, ctx)
  local env, var = ctx.env, e.var
  local v = env[var]
  local speak = mentions(ctx.src, var)
  -- an expectation's own `hint` replaces the generated one
  local function no(h) return false, speak and (e.hint or h) or nil end
  if v == nil then return no(string.format("`%s` is not defined yet", var)) end
  -- n = torch.cuda.device_count: the function itself, not its result
  if type(v) == "function" and e.equals ~= nil and type(value_of(e.equals, env)) ~= "function" then
    return no(string.format("%s holds a function, not its result: call it, with () at the end", var))
  end
  if e.is == "device" or (e.device ~= nil and is_device(v)) then
    if not is_device(v) then return no(string.format("%s should be a device, e.g. torch.device('cuda')", var)) end
    local want = value_of(e.device, env)
    if want ~= nil and not one_of(want, tostring(v)) then
      return no(string.format("%s is %s, the task asks for %s", var, tostring(v), want_text(want)))
    end
    return true
  end
  if e.module_device ~= nil then
    if not is_module(v) then return no(string.format("%s should be a module (nn.Sequential(...))", var)) end
    local want = value_of(e.module_device, env)
    for _, p in ipairs(v:parameters()) do
      local got = tostring(p.device)
      if not one_of(want, got) then
        return no(string.format("%s's parameters are on %s, the task asks for %s: %s:to(%s) moves them " ..
          "(modules move in place)", var, got, want_text(want), var, "try_gpu()"))
      end
    end
    return true
  end
  if e.device ~= nil or e.shape ~= nil or e.values ~= nil or e.fill ~= nil or e.dtype ~= nil or e.is == "tensor" then
    if not is_tensor(v) then
      return no(string.format("%s should be a tensor, but it is a %s", var, type(v)))
    end
    local want = value_of(e.device, env)
    if want ~= nil and not one_of(want, tostring(v.device)) then
      return no(device_hint(var, tostring(v.device), want))
    end
    if e.shape and not same_list(shape_of(v), e.shape) then
      return no(string.format("%s has shape %s, the task asks for [%s]", var, tostring(v.shape),
        table.concat(e.shape, ", ")))
    end
    if e.dtype and tostring(v.dtype) ~= "torch." .. e.dtype then
      return no(string.format("%s is %s, the task asks for torch.%s", var, tostring(v.dtype), e.dtype))
    end
    local t = torch()
    if e.fill ~= nil then
      local c = v:detach():cpu():double()
      if not t.equal(c, t.full(shape_of(v), e.fill + 0.0, { dtype = t.float64 })) then
        return no(string.format("%s should be filled with %s; it is %s", var, tostring(e.fill), short(v)))
      end
    end
    if e.values ~= nil then
      local ref = value_of(e.values, env)
      if not is_tensor(ref) then ref = t.tensor(ref) end
      local a, b = v:detach():cpu():double(), ref:detach():cpu():double()
      if not same_list(shape_of(a), shape_of(b)) or not a:allclose(b, { rtol = 1e-4, atol = 1e-5 }) then
        return no(string.format("%s does not hold the expected values: it is %s, expected %s", var, short(v),
          short(ref)))
      end
    end
    return true
  end
  if e.type ~= nil and type(v) ~= e.type then
    return no(string.format("%s should be a %s, but it is a %s", var, e.type, type(v)))
  end
  if e.equals ~= nil then
    local want = value_of(e.equals, env)
    if not M.same_value(v, want) then return no(string.format("%s is %s, expected %s", var, short(v), short(want))) end
  end
  if e.test ~= nil then
    local ok, h = e.test(v, env)
    if not ok then return no(h or string.format("%s is not what the task asks for", var)) end
  end
  return true
end

-- One expectation. ctx: {env =, src =, status = "ok"|"error", err =, results =}.
function M.check_expectation(e, ctx)
  if e.var then return check_var(e, ctx) end
  if e.error then
    if ctx.status ~= "error" then
      return false, "that ran without an error; the task is to see the error happen"
    end
    if not tostring(ctx.err):find(e.error, 1, true) then
      return false, "that failed, but not with the error the task is about (" .. e.error .. ")"
    end
    return true
  end
  if e.result ~= nil then
    local want = value_of(e.result, ctx.env)
    local got = ctx.results and ctx.results[1]
    if not M.same_value(got, want) then return false, nil end
    return true
  end
  if e.check then return M.run_check(e.check, ctx) end
  return false, "this step's expectation is malformed (no var, error, result or check)"
end

-- "✗ Not yet" with no hint: a check that returned a plain `false`. A
-- check returning `false, nil` stays quiet (the cell was about something
-- else).
M.NOT_YET = setmetatable({}, { __name = "lesson.NOT_YET" })

-- Runs a check function: true, or false and its hint (M.NOT_YET when it
-- returned false alone).
function M.run_check(fn, ctx)
  local r = table.pack(fn(ctx))
  if r[1] then return true end
  if r.n < 2 then return false, M.NOT_YET end
  return false, r[2]
end

-- Checks a step after a cell. Returns true, or false and a hint (or nil).
function M.check_step(step, ctx)
  -- a method called with `.` is the most common slip: say so first
  -- (the session has printed its hints already: say where, not twice)
  if ctx.status == "error" then
    local h = ctx.hints or hints.after_error(ctx.env, ctx.src, ctx.err)
    for _, line in ipairs(h) do
      if line:find("Lua needs a colon", 1, true) then
        return false, ctx.hints and "forgot the `:`? (the hint above shows the line with it)"
          or ("forgot the `:`? " .. line:gsub("^hint: ", ""))
      end
    end
    if ctx.hints and #ctx.hints > 0 then
      return false, "that cell failed; the hint above gives the Lua spelling"
    end
  end
  if type(step.check) == "function" then
    local ok, h = M.run_check(step.check, ctx)
    if not ok then return false, h end
  end
  -- every expectation must hold; the hint is the first one a failing
  -- expectation gives (those about variables the cell did not touch
  -- stay quiet)
  local passed, hint = true, nil
  for _, e in ipairs(step.expect or {}) do
    local ok, h = M.check_expectation(e, ctx)
    if not ok then
      passed = false
      hint = hint or h
    end
  end
  if passed then return true end
  if ctx.status == "error" then
    local about_error = false
    for _, e in ipairs(step.expect or {}) do about_error = about_error or e.error ~= nil end
    if not about_error then hint = "that cell failed (the error is above); fix it and run it again" end
  end
  return false, hint
end

-- ---- running a lesson ------------------------------------------------------------

local Run = {}
Run.__index = Run

local function rule(text)
  local w = 72 - #text - 4
  return "── " .. text .. " " .. string.rep("─", w > 3 and w or 3)
end

-- A step's setup makes what it builds on from earlier steps, for a
-- learner who arrives without them (resuming in a new session, after
-- %lesson skip): {{"X", "torch.ones(2, 3, {device = try_gpu()})"}, ...}
-- makes each name that is not defined, in order, in the session; a
-- function(env) runs as is. The learner's own values are never replaced.
function Run:setup_step(st)
  local env = self.session.env
  if type(st.setup) == "function" then
    local ok, err = pcall(st.setup, env)
    if not ok then out("lesson: this step's setup failed: ", tostring(err), "\n") end
    return
  end
  local made = {}
  for _, pair in ipairs(st.setup or {}) do
    -- "a, b" names the values of one expression (the data set's two
    -- loaders come from one load); only the missing names are set
    local var, expr = pair[1], pair[2]
    local names, missing = {}, false
    for name in var:gmatch("[%a_][%w_]*") do
      names[#names + 1] = name
      missing = missing or env[name] == nil
    end
    if missing then
      local fn, err = load("return " .. expr, "=(lesson setup)", "t", env)
      local r
      if fn then r = table.pack(pcall(fn)) else r = { false, err } end
      if not r[1] then
        out("lesson: could not make ", var, " for this step: ", tostring(r[2]), "\n")
        return
      end
      for k, name in ipairs(names) do
        if env[name] == nil then env[name] = r[k + 1] end  -- as the learner's `name = ...` would
      end
      made[#made + 1] = var .. " = " .. expr
    end
  end
  if #made > 0 then
    out("(made what this step builds on: ", table.concat(made, "; "), ")\n")
  end
end

function Run:show()
  local st = self.lesson.steps[self.step]
  if not st then return end
  out("\n", rule(string.format("Step %d of %d: %s", self.step, #self.lesson.steps, st.title or "")), "\n")
  if st.explain then out(st.explain:gsub("^%s+", ""):gsub("%s+$", ""), "\n\n") end
  out("Task: ", st.task:gsub("^%s+", ""):gsub("%s+$", ""), "\n")
  if st.setup then self:setup_step(st) end
end

function Run:finish()
  out("\n", rule("Lesson complete"), "\n", self.lesson.outro or
    "You have done every step. `gshell --lesson " .. (self.lesson.ref or self.lesson.name) ..
    " --restart` starts again.", "\n")
  self.done = true
end

function Run:advance()
  self.step = self.step + 1
  M.save_progress(self.lesson.name, self.step)
  if self.step > #self.lesson.steps then self:finish() else self:show() end
end

-- After each cell the learner runs.
function Run:after_cell(ctx)
  if self.done then return end
  if type(ctx.src) == "string" and ctx.src:match("^%s*%%lesson") then return end
  local st = self.lesson.steps[self.step]
  ctx.env = ctx.env or self.session.env
  local ok, passed, hint = pcall(M.check_step, st, ctx)
  if not ok then
    out("lesson: the check of this step failed: ", tostring(passed), "\n")
    return
  end
  if passed then
    out("✓ ", (st.done or "Right."):gsub("^%s+", ""):gsub("%s+$", ""), "\n")
    self:advance()
  elseif hint == M.NOT_YET then
    out("✗ Not yet.\n")
  elseif type(hint) == "string" then
    out("✗ Not yet: ", hint, "\n")
  elseif hint ~= nil then
    -- a `check` or `test` function may return anything as its hint
    out("✗ Not yet. (lesson ", self.lesson.ref or self.lesson.name, ": this step's check gave a hint that is ",
      "not a string but a ", type(hint), ")\n")
  end
end

-- Makes simulated devices when the machine has fewer CUDA devices than
-- the lesson needs and none at all (a real GPU is never hidden).
local function ensure_devices(lesson)
  local t = torch()
  local need = lesson.sim_gpus or 0
  if need == 0 or not t then return end
  if t.cuda.device_count() == 0 and t._sim_configure then
    t._sim_configure(need)
    out(string.format("(No CUDA device here: this lesson uses %d SIMULATED CUDA devices, backed by host memory. " ..
      "%s)\n", need, require("gshell.sim_speed").banner))
  end
end

-- Starts lesson `name` in `session`. opts.restart: from the first step.
-- Returns true, or nil and an error message.
function M.start(session, name, opts)
  opts = opts or {}
  local lesson, err = M.find(name)
  if not lesson then return nil, err end
  ensure_devices(lesson)
  local step = 1
  if not opts.restart then step = M.load_progress()[lesson.name] or 1 end
  if step < 1 then step = 1 end
  if lesson.setup then
    local ok, serr = pcall(lesson.setup, session.env)
    if not ok then
      return nil, string.format("%s: the lesson's `setup` failed: %s", lesson.ref or lesson.name, tostring(serr))
    end
  end
  local run = setmetatable({ session = session, lesson = lesson, step = step }, Run)
  session.lesson = run
  session.on_cell = function(_, ctx) run:after_cell(ctx) end
  out(rule("Lesson " .. lesson.name .. ": " .. (lesson.title or lesson.name)), "\n")
  if lesson.intro then out(lesson.intro:gsub("^%s+", ""):gsub("%s+$", ""), "\n") end
  out("Type the code at the prompt. %lesson shows the task again, %lesson skip skips a step, " ..
    "%lesson quit stops (progress is kept).\n")
  if step > #lesson.steps then
    local ref = lesson.ref or lesson.name
    out("You finished this lesson before; `gshell --lesson " .. ref .. " --restart` (or `%lesson " .. ref ..
      " --restart`) starts again.\n")
    run.done = true
  else
    if step > 1 then out(string.format("Resuming at step %d (of %d).\n", step, #lesson.steps)) end
    if opts.restart then M.save_progress(lesson.name, 1) end
    run:show()
  end
  return true
end

-- The text listing installed lessons.
function M.list_text()
  local lines = { "Lessons (gshell --lesson NAME, or %lesson NAME at the prompt):" }
  local prog = M.load_progress()
  for _, l in ipairs(M.list()) do
    local p = prog[l.name]
    local where = p and (l.steps and p > l.steps and "done" or string.format("at step %d", p)) or "not started"
    local count = l.steps and string.format("%d steps, ", l.steps) or ""
    lines[#lines + 1] = string.format("  %-10s %s (%s%s)", l.name, l.title, count, where)
  end
  return table.concat(lines, "\n")
end

-- %lesson [NAME [--restart] | skip | back | quit | list]
function M.command(session, rest)
  local words = {}
  for w in rest:gmatch("%S+") do words[#words + 1] = w end
  local run = session.lesson
  local cmd = words[1]
  if cmd == nil then
    if run and not run.done then run:show() else out(M.list_text(), "\n") end
  elseif cmd == "list" then
    out(M.list_text(), "\n")
  elseif cmd == "skip" or cmd == "next" then
    if not run or run.done then error("%lesson skip: no lesson running", 0) end
    out("(skipped)\n")
    run:advance()
  elseif cmd == "back" then
    if not run then error("%lesson back: no lesson running", 0) end
    run.done = false
    run.step = math.max(1, math.min(run.step, #run.lesson.steps + 1) - 1)
    M.save_progress(run.lesson.name, run.step)
    run:show()
  elseif cmd == "quit" or cmd == "stop" then
    if run then
      out("Lesson ", run.lesson.name, " stopped at step ", tostring(run.step), "; `%lesson ", run.lesson.name,
        "` or `gshell --lesson ", run.lesson.name, "` resumes there.\n")
    end
    session.lesson, session.on_cell = nil, nil
  else
    local restart = words[2] == "--restart"
    local ok, err = M.start(session, cmd, { restart = restart })
    if not ok then error(err, 0) end
  end
end

return M
