-- gshell.magics: the shell's own commands, typed on a line of their own.
--
--   %time stmt         run once, print wall and CPU time (devices synchronised)
--   %timeit [-n N] [-r R] stmt
--                      IPython's %timeit: warm up, pick the loop count, time
--                      R runs, print "mean ± std per loop (...)"
--   %prof stmt         run under torch.profiler: the table per op, the
--                      profile in `_` (Jupyter also shows its timeline)
--   %explain stmt      a roofline of its ops on the modelled GPU, and why
--   %devices           the devices, their memory, simulated or real
--   %who, %whos        the user's variables (names; names with type and info)
--   %tb                the traceback of the last error
--   %magic             this list
--   !cmd               run cmd with the system shell
--   ?name, name?       help on name (also help(obj))
local pretty = require "gshell.pretty"
local core = require "gshell.core"
local hints = require "gshell.hints"

local M = {}
local magics = {}
M.names = magics

local function torch_mod()
  return package.loaded.torch or rawget(_G, "torch")
end

-- A monotonic wall clock (seconds).
local clock = core.clock
M.clock = clock

-- Waits for queued device work, so timings measure work done, not queued.
local function synchronize()
  local t = torch_mod()
  local cuda = t and t.cuda
  if type(cuda) == "table" and type(cuda.synchronize) == "function" then
    pcall(cuda.synchronize)
  end
end
M.synchronize = synchronize

-- IPython's time format: 3 significant digits in s, ms, µs or ns.
function M.format_time(t, precision)
  precision = precision or 3
  if t >= 60 then
    local parts, left = {}, t
    for _, u in ipairs({ { "d", 86400 }, { "h", 3600 }, { "min", 60 }, { "s", 1 } }) do
      local v = math.floor(left / u[2])
      if v > 0 then
        left = left % u[2]
        parts[#parts + 1] = v .. u[1]
      end
      if left < 1 then break end
    end
    return table.concat(parts, " ")
  end
  local units = { "s", "ms", "µs", "ns" }
  local scale = { 1, 1e3, 1e6, 1e9 }
  local order = 3
  if t > 0 then order = math.min(-(math.floor(math.log(t, 10)) // 3), 3) end
  return string.format("%." .. precision .. "g %s", t * scale[order + 1], units[order + 1])
end

-- 1234567 -> "1,234,567"
local function thousands(n)
  local s = tostring(math.tointeger(n) or n)
  while true do
    local r, k = s:gsub("^(%d+)(%d%d%d)", "%1,%2")
    s = r
    if k == 0 then return s end
  end
end

local function split_opts(rest, known)
  local opts = {}
  while true do
    local flag, val, after = rest:match("^%s*%-(%a)%s*(%d*)%s*(.*)$")
    if not flag or not known[flag] then break end
    if known[flag] == "number" then
      -- the whole word after the flag: -n 1e99 used to read as 1 (and
      -- the statement as "e99 ..."), -n 0 timed nothing and printed nan
      local word, more = rest:match("^%s*%-%a%s*(%S*)%s*(.*)$")
      local n = word:match("^%d+$") and tonumber(word)
      if word == "" then error("%timeit: -" .. flag .. " needs a number", 0) end
      if not n or n < 1 or n > 1e9 then
        error(string.format("%%timeit: -%s wants a whole number of %s from 1 to 1000000000, not '%s'", flag,
          flag == "n" and "loops" or "runs", word), 0)
      end
      opts[flag] = math.tointeger(n)
      after = more
    else
      if val ~= "" then break end
      opts[flag] = true
    end
    rest = after
  end
  return opts, (rest:gsub("^%s+", ""))
end

-- The statement as a loop that runs it n times, compiled in the session.
local function compile_loop(session, stmt)
  local head = "return function(__gshell_n) for __gshell_i = 1, __gshell_n do "
  local f = load(head .. stmt .. "\nend end", "=%timeit", "t", session.env)
  if not f then
    local err
    f, err = load(head .. "local _ = " .. stmt .. "\nend end", "=%timeit", "t", session.env)
    if not f then
      _, err = load(stmt, "=%timeit", "t", session.env)
      error(err or "%timeit: cannot compile the statement", 0)
    end
  end
  return f()
end

-- The GPU model the current device's time follows (issue 29), or nil:
-- a CPU-only session, a real GPU, or simulated GPUs on "host".
local function current_model()
  local t = torch_mod()
  local cuda = t and t.cuda
  if type(cuda) ~= "table" or type(cuda.gpu_model) ~= "function" or type(t.clock) ~= "function" then return nil end
  local ok, m = pcall(function()
    if cuda.device_count() == 0 then return nil end
    return cuda.gpu_model(cuda.current_device())
  end)
  return ok and m or nil
end
M.current_model = current_model

-- Seconds taken by `loop(n)`, devices synchronised before and after: this
-- machine's real time, and the host's modelled clock (torch.clock) when
-- `modelled` (it then reads what the modelled GPU would take).
local function time_loop(loop, n, modelled)
  synchronize()
  local t = modelled and torch_mod()
  local t0, m0, e0 = clock(), t and t.clock(), t and t._model_events()
  loop(n)
  -- (the loop launched or waited for nothing modelled: the model had no part in it)
  local touched = t and t._model_events() ~= e0
  synchronize()
  local real = clock() - t0
  return real, t and (touched and t.clock() - m0 or real)
end

-- What `r = %timeit -o stmt` gives: shows as IPython's TimeitResult.
local TimeitResult = { __name = "TimeitResult" }
TimeitResult.__index = TimeitResult
TimeitResult.__tostring = function(r)
  return string.format("<TimeitResult : %s ± %s per loop (mean ± std. dev. of %d run%s, %s loop%s each)>",
    M.format_time(r.mean), M.format_time(r.std), r.runs, r.runs == 1 and "" or "s",
    thousands(r.loops), r.loops == 1 and "" or "s")
end

-- mean and standard deviation of xs[1..n]
local function mean_std(xs, n)
  local mean = 0
  for i = 1, n do mean = mean + xs[i] end
  mean = mean / n
  local var = 0
  for i = 1, n do var = var + (xs[i] - mean) ^ 2 end
  return mean, math.sqrt(var / n)
end

-- Loops and runs are chosen by this machine's real time (so %timeit stays
-- interactive however fast the modelled GPU is); on a modelled device the
-- line reports the modelled time per loop and, beside it, what computing
-- it here took (issue 29). Work that launched nothing on a modelled
-- device (CPU work, Lua) shows the one time.
magics.timeit = function(session, rest)
  local opts, stmt = split_opts(rest, { n = "number", r = "number", o = "flag", q = "flag" })
  if stmt == "" then error("usage: %timeit [-n loops] [-r runs] statement", 0) end
  local loop = compile_loop(session, stmt)
  local model = current_model()
  local timings, modelled = {}, {}
  time_loop(loop, 1)                                  -- warm up: caches, lazy init
  local number = opts.n
  if not number then
    -- 1, 2, 5, 10, 20, 50, ... until one run takes 0.2 s
    local base = 1
    while true do
      for _, m in ipairs({ 1, 2, 5 }) do
        number = base * m
        local t, mt = time_loop(loop, number, model)
        if t >= 0.2 then timings[1], modelled[1] = t, mt; break end
      end
      if timings[1] or base >= 1e9 then break end
      base = base * 10
    end
  end
  local runs = opts.r
  if not runs then
    if not timings[1] then timings[1], modelled[1] = time_loop(loop, number, model) end
    runs = math.max(1, math.min(7, math.floor(2.0 / math.max(timings[1], 1e-9))))
  end
  for i = #timings + 1, runs do timings[i], modelled[i] = time_loop(loop, number, model) end
  for i = runs + 1, #timings do timings[i], modelled[i] = nil, nil end
  for i = 1, runs do
    timings[i] = timings[i] / number
    if model then modelled[i] = modelled[i] / number end
  end
  local real_mean = mean_std(timings, runs)
  -- the modelled clock is what the learner's GPU would show
  local shown = timings
  if model then
    local same = true
    for i = 1, runs do same = same and modelled[i] == timings[i] end
    if same then model = nil else shown = modelled end
  end
  local mean, std = mean_std(shown, runs)
  if not opts.q then
    io.stdout:write(string.format(
      "%s ± %s per loop%s (mean ± std. dev. of %d run%s, %s loop%s each)%s\n",
      M.format_time(mean), M.format_time(std), model and (" modelled on " .. model.a_name) or "",
      runs, runs == 1 and "" or "s", thousands(number), number == 1 and "" or "s",
      model and ("; computing it here took " .. M.format_time(real_mean) .. " per loop") or ""))
  end
  if opts.o then
    local best, worst = math.huge, 0
    for i = 1, runs do best = math.min(best, shown[i]); worst = math.max(worst, shown[i]) end
    return setmetatable({ mean = mean, std = std, runs = runs, loops = number, timings = shown,
      -- IPython's TimeitResult names (seconds per loop)
      average = mean, stdev = std, best = best, worst = worst, all_runs = shown, ["repeat"] = runs,
      -- on a modelled device: what computing it here took, per loop
      real = model and real_mean or nil, model = model and model.key or nil },
      TimeitResult)
  end
end

magics.time = function(session, rest)
  if rest:match("^%s*$") then error("usage: %time statement", 0) end
  local fn, err = session:compile(rest, { chunkname = "=%time" })
  if not fn then error(err, 0) end
  local model = current_model()
  local t = model and torch_mod()
  synchronize()
  local c0, t0, m0, e0 = os.clock(), clock(), t and t.clock(), t and t._model_events()
  local res = table.pack(fn())
  local touched = t and t._model_events() ~= e0
  synchronize()
  local wall, cpu = clock() - t0, os.clock() - c0
  io.stdout:write(string.format("CPU time: %s\nWall time: %s\n", M.format_time(cpu), M.format_time(wall)))
  -- on a modelled GPU (issue 29): the time that GPU would take, when the
  -- statement launched or waited for work on it
  if touched then
    io.stdout:write(string.format("Modelled time on %s: %s\n", model.a_name, M.format_time(t.clock() - m0)))
  end
  return table.unpack(res, 1, res.n)
end

-- %prof stmt: runs stmt under torch.profiler.profile and gives back the
-- profile, so it prints as its table and `_` keeps it for
-- _:export_chrome_trace(path) or _:export_timeline(path). The Jupyter
-- kernel also shows a profile as its SVG timeline.
magics.prof = function(session, rest)
  if rest:match("^%s*$") then error("usage: %prof statement", 0) end
  local fn, err = session:compile(rest, { chunkname = "=%prof" })
  if not fn then error(err, 0) end
  local t = torch_mod()
  if not (t and t.profiler) then error("%prof: torch.profiler is not loaded", 0) end
  return (t.profiler.profile(fn))
end

-- %explain stmt: runs stmt under torch.cuda.explain and gives back the
-- explanation (a roofline of its ops on the modelled GPU), which prints as
-- its text; `_` keeps it (_.rows, _.profile).
magics.explain = function(session, rest)
  if rest:match("^%s*$") then error("usage: %explain statement", 0) end
  local fn, err = session:compile(rest, { chunkname = "=%explain" })
  if not fn then error(err, 0) end
  local t = torch_mod()
  if not (t and t.cuda and t.cuda.explain) then error("%explain: torch is not loaded", 0) end
  return (t.cuda.explain(fn))
end

local function fmt_bytes(n)
  if type(n) ~= "number" then return "?" end
  local units = { "B", "KiB", "MiB", "GiB", "TiB" }
  local i = 1
  while n >= 1024 and i < #units do n = n / 1024; i = i + 1 end
  return i == 1 and string.format("%d B", n) or string.format("%.2f %s", n, units[i])
end
M.fmt_bytes = fmt_bytes

-- The CUDA devices as a list of {name=, total=, used=, simulated=}.
function M.cuda_devices()
  local t = torch_mod()
  local cuda = t and t.cuda
  local list = {}
  if type(cuda) ~= "table" or type(cuda.device_count) ~= "function" then return list end
  local ok, n = pcall(cuda.device_count)
  if not ok or type(n) ~= "number" then return list end
  for i = 0, n - 1 do
    local d = { index = i }
    local okp, props = pcall(cuda.get_device_properties, i)
    if okp and type(props) == "table" then
      d.name, d.total, d.simulated = props.name, props.total_memory, props.simulated
    end
    if not d.name and cuda.get_device_name then
      local okn, name = pcall(cuda.get_device_name, i)
      if okn then d.name = name end
    end
    if cuda.memory_allocated then
      local oku, used = pcall(cuda.memory_allocated, i)
      if oku then d.used = used end
    end
    list[#list + 1] = d
  end
  return list
end

-- GSHELL_SIM_CONTEXT_MS as the simulated devices apply it (0: off, or no
-- torch loaded), for the banner.
function M.sim_context_ms()
  local t = torch_mod()
  local cuda = t and t.cuda
  if type(cuda) ~= "table" or type(cuda._sim_context_ms) ~= "function" then return 0 end
  local ok, ms = pcall(cuda._sim_context_ms)
  return ok and math.type(ms) == "integer" and ms or 0
end

magics.devices = function()
  local t = torch_mod()
  local rows = { { "device", "name", "memory", "kind" } }
  rows[2] = { "cpu", "host CPU", "-", "" }
  for _, d in ipairs(M.cuda_devices()) do
    local mem = d.total and ((d.used and (fmt_bytes(d.used) .. " used of ") or "") .. fmt_bytes(d.total)) or "?"
    rows[#rows + 1] = { "cuda:" .. d.index, tostring(d.name or "?"), mem,
      d.simulated and "simulated (host memory)" or "GPU" }
  end
  local w = {}
  for _, r in ipairs(rows) do
    for c, s in ipairs(r) do w[c] = math.max(w[c] or 0, utf8.len(s) or #s) end
  end
  for _, r in ipairs(rows) do
    local cells = {}
    for c, s in ipairs(r) do cells[c] = s .. string.rep(" ", w[c] - (utf8.len(s) or #s)) end
    io.stdout:write((table.concat(cells, "  "):gsub("%s+$", "")), "\n")
  end
  if #rows == 2 then io.stdout:write("(no CUDA device; `gshell --sim-gpus 2` simulates two)\n") end
  if t and type(t.get_default_device) == "function" then
    local ok, dev = pcall(t.get_default_device)
    if ok then io.stdout:write("default device: ", tostring(dev), "\n") end
  end
end

magics.who = function(session)
  local names = session:user_names()
  if #names == 0 then
    io.stdout:write("Interactive namespace is empty.\n")
  else
    io.stdout:write(table.concat(names, "\t"), "\n")
  end
end

-- A short description of a value for %whos.
local function info(v)
  local mt = getmetatable(v)
  local tname = type(mt) == "table" and type(rawget(mt, "__name")) == "string" and mt.__name or type(v)
  if tname == "torch.Tensor" then
    local ok, s = pcall(function()
      return string.format("%s %s %s", tostring(v.shape), tostring(v.dtype), tostring(v.device))
    end)
    return "Tensor", ok and s or ""
  end
  local s = pretty.repr(v):gsub("\n.*", " ...")
  if #s > 50 then s = s:sub(1, 47) .. "..." end
  return tname, s
end

magics.whos = function(session)
  local names = session:user_names()
  if #names == 0 then
    io.stdout:write("Interactive namespace is empty.\n")
    return
  end
  local rows = { { "Variable", "Type", "Data/Info" } }
  for _, n in ipairs(names) do
    local ty, s = info(session:lookup(n))
    rows[#rows + 1] = { n, ty, s }
  end
  local w1, w2 = 0, 0
  for _, r in ipairs(rows) do w1 = math.max(w1, #r[1]); w2 = math.max(w2, #r[2]) end
  for i, r in ipairs(rows) do
    io.stdout:write(string.format("%-" .. w1 .. "s   %-" .. w2 .. "s   %s", r[1], r[2], r[3]):gsub("%s+$", ""), "\n")
    if i == 1 then io.stdout:write(string.rep("-", w1 + w2 + 20), "\n") end
  end
end

-- %reset [-f]: forget every variable the user made. Asks first, as
-- IPython does, when a person is typing (stdin a terminal) and -f is not
-- given.
magics.reset = function(session, rest)
  local force = rest:match("^%-f%s*$") ~= nil
  if not force and rest:match("%S") then error("usage: %reset [-f]", 0) end
  if not force and core and core.isatty(0) then
    io.stdout:write("Once deleted, variables cannot be recovered. Proceed (y/[n])? ")
    io.stdout:flush()
    local answer = io.stdin:read("l")
    if not (answer and answer:match("^%s*[yY]")) then
      io.stdout:write("Nothing done.\n")
      return
    end
  end
  session:reset()
end

-- %run file [args]: run a Lua file in the session (its variables stay).
magics.run = function(session, rest)
  local words = {}
  for w in rest:gmatch("%S+") do words[#words + 1] = w end
  if #words == 0 then error("usage: %run file.lua [args]", 0) end
  local path = table.remove(words, 1)
  session:run_file(path, words)
end

-- Selected history entries: "4", "2-5" (1-based, inclusive), or all but
-- the current line when no range is given.
local function pick_history(session, words, upto)
  local h, out = session.history, {}
  if #words == 0 then
    for i = 1, upto do out[#out + 1] = { i, h[i] } end
    return out
  end
  for _, w in ipairs(words) do
    local a, b = w:match("^(%d+)%-(%d+)$")
    if not a then a = w:match("^(%d+)$"); b = a end
    if not a then error("history range: expected N or A-B, got " .. w, 0) end
    for i = tonumber(a), math.min(tonumber(b), #h) do out[#out + 1] = { i, h[i] } end
  end
  return out
end

-- %history [-n] [ranges]: the cells typed in this session.
magics.history = function(session, rest)
  local numbers = false
  local words = {}
  for w in rest:gmatch("%S+") do
    if w == "-n" then numbers = true else words[#words + 1] = w end
  end
  for _, e in ipairs(pick_history(session, words, #session.history)) do
    if numbers then
      local text = e[2]:gsub("\n", "\n" .. string.rep(" ", 6))
      io.stdout:write(string.format("%4d: %s\n", e[1], text))
    else
      io.stdout:write(e[2], "\n")
    end
  end
end
magics.hist = magics.history

-- %save [-a] file [ranges]: write cells to a file (".lua" added when the
-- name has no extension), IPython's %save; -a appends.
magics.save = function(session, rest)
  local append = false
  local words = {}
  for w in rest:gmatch("%S+") do
    if w == "-a" then append = true else words[#words + 1] = w end
  end
  if #words == 0 then error("usage: %save [-a] file [ranges]", 0) end
  local path = table.remove(words, 1)
  if not path:match("%.[%w_]+$") then path = path .. ".lua" end
  local picked = pick_history(session, words, #session.history - 1) -- not the %save line itself
  local code = {}
  for i, e in ipairs(picked) do code[i] = e[2] end
  local text = table.concat(code, "\n") .. "\n"
  local f, why = io.open(path, append and "ab" or "wb")
  if not f then error("%save: cannot open " .. tostring(why), 0) end
  f:write(text)
  f:close()
  io.stdout:write("The following commands were written to file `", path, "`:\n", text)
end

-- %lesson [NAME [--restart] | skip | back | quit | list]: guided lessons.
magics.lesson = function(session, rest)
  require("gshell.lesson").command(session, rest)
end

magics.tb = function(session)
  io.stdout:write(session.last_traceback or "no error yet", "\n")
  io.stdout:flush()
end

local summary = {
  { "%time stmt", "run stmt once; CPU and wall time (devices synchronised)" },
  { "%timeit [-n N] [-r R] stmt", "time stmt over many loops, as IPython" },
  { "%prof stmt", "profile stmt: time per op and device; _ is the profile" },
  { "%explain stmt", "roofline of stmt's ops on the modelled GPU: why each takes its time" },
  { "%devices", "the CPU and CUDA devices (real or simulated), memory" },
  { "%who / %whos", "your variables / with types and values" },
  { "%tb", "traceback of the last error" },
  { "%history [-n] [ranges]", "the cells typed in this session" },
  { "%save [-a] file [ranges]", "write cells to a file" },
  { "%run file [args]", "run a Lua file in this session" },
  { "%reset [-f]", "forget all your variables" },
  { "%lesson [name|skip|back|quit]", "guided lessons (gshell --lesson lists them)" },
  { "!cmd", "run cmd in the system shell" },
  { "?name, name?, help(obj)", "help" },
}

magics.magic = function()
  for _, s in ipairs(summary) do io.stdout:write(string.format("  %-28s %s\n", s[1], s[2])) end
end
magics.lsmagic = magics.magic
M.summary = summary

-- More on the magics with options, for ?%name.
M.details = {
  timeit = "  -n N loops per run, -r R runs, -q print nothing, -o return the result: r = %timeit -o stmt\n" ..
    "  (devices are synchronised around every run; the first call is a warm-up)",
  time = "  prints CPU and wall time, then the statement's value (devices synchronised)",
  prof = "  runs stmt under torch.profiler.profile and prints its table (per op and device: calls,\n" ..
    "  total and mean time, bytes, GB/s, GFLOP/s); `_` is the profile: _:export_chrome_trace('t.json'),\n" ..
    "  _:export_timeline('t.svg'). In Jupyter the timeline is shown too. docs/profiling.md",
  explain = "  runs stmt under torch.cuda.explain: per op on a simulated GPU that models a real one, its\n" ..
    "  FLOPs per byte, the rate it reached, the roof there and why (compute, memory, launch, copy), and a\n" ..
    "  roofline picture (SVG in Jupyter); `_` is the explanation (_.rows, _.profile). docs/profiling.md",
  history = "  -n numbers the cells; ranges: 4 or 2-5 (1-based)",
  save = "  -a appends; ranges as for %history; '.lua' is added to a name without extension",
  reset = "  -f does not ask",
  lesson = "  %lesson NAME [--restart] starts a lesson, %lesson shows the task, skip / back / quit / list",
}

-- Runs one shell line.
function M.run(session, line)
  line = line:gsub("^%s+", ""):gsub("%s+$", "")
  local c = line:sub(1, 1)
  if c == "!" then
    local hint = hints.missing_command(line:sub(2))
    if hint then error(hint, 0) end
    io.stdout:flush()
    os.execute(line:sub(2))
    return
  end
  if hints.is_python_import(line) then
    local text, note = hints.python_import(line)
    if not note then error(text, 0) end
    io.stdout:write(text, "\n")
    return
  end
  if c == "?" or line:sub(-1) == "?" then
    local name = line:gsub("^%?+", ""):gsub("%?+$", "")
    require("gshell.help").help_name(session, name)
    return
  end
  local name, rest = line:match("^%%%%?([%a_][%w_]*)%s*(.*)$")
  local f = name and magics[name]
  if not f then
    -- %timit, %devcies: name the closest magic
    local near
    if name then
      local best = 3
      for m in pairs(magics) do
        if type(m) == "string" then
          local d = M.name_distance(name, m)
          if d < best and d <= math.max(1, #name // 3) then near, best = m, d end
        end
      end
    end
    error(string.format("unknown magic %%%s%s (%%magic lists them)", name or line,
      near and string.format(" (did you mean %%%s?)", near) or ""), 0)
  end
  return f(session, rest)
end

-- Edit distance between two short names (insert, delete, substitute, swap).
function M.name_distance(a, b)
  local m, n = #a, #b
  local d = {}
  for i = 0, m do d[i] = { [0] = i } end
  for j = 0, n do d[0][j] = j end
  for i = 1, m do
    for j = 1, n do
      local c = d[i - 1][j - 1] + (a:sub(i, i) == b:sub(j, j) and 0 or 1)
      c = math.min(c, d[i - 1][j] + 1, d[i][j - 1] + 1)
      if i > 1 and j > 1 and a:sub(i, i) == b:sub(j - 1, j - 1) and a:sub(i - 1, i - 1) == b:sub(j, j) then
        c = math.min(c, d[i - 2][j - 2] + 1)
      end
      d[i][j] = c
    end
  end
  return d[m][n]
end

return M
