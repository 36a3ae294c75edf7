-- Lesson files a teacher installs or writes (issue 23, Low "Lessons"):
-- `gshell --lesson` lists the files in $GSHELL_LESSON_PATH without running
-- any of them (titles and step counts are read from the text), and a
-- malformed lesson is a message naming the file, the field and what it
-- should be, never a raw Lua error in the middle of a session.
local R = require("gshell_run")

local function has(s, piece) return s:find(piece, 1, true) ~= nil end

-- gshell under a time limit (a listing that runs a looping file never
-- ends); returns stdout and stderr together, and the exit code.
local function run_limited(args, env, stdin)
  local parts = {}
  for i, a in ipairs(args) do parts[i] = R.quote(a) end
  local envs = { "GSHELL_HISTORY=", "GSHELL_SIM_GPUS=" }
  for k, v in pairs(env) do envs[#envs + 1] = k .. "=" .. R.quote(v) end
  local exe = R.GSHELL:sub(1, 1) == "/" and R.GSHELL or (os.getenv("PWD") .. "/" .. R.GSHELL)
  local inf = os.tmpname()
  R.write_file(inf, stdin or "")
  local p = io.popen(string.format("timeout 20 env %s %s %s <%s 2>&1", table.concat(envs, " "), R.quote(exe),
    table.concat(parts, " "), inf))
  local out = p:read("a")
  local _, _, code = p:close()
  os.remove(inf)
  return out, code
end

describe("gshell --lesson (the listing)", function()
  local dir
  before_each(function() dir = R.tmpdir() end)
  after_each(function() os.execute("rm -rf " .. R.quote(dir)) end)

  it("does not run the lesson files it lists: a looping file and one that writes a file", function()
    local lessons = dir .. "/lessons"
    os.execute("mkdir -p " .. R.quote(lessons))
    R.write_file(lessons .. "/loop.lua", [[
while true do end
return { title = "Forever", steps = { { task = "t", expect = { { var = "q", equals = 1 } } } } }]])
    R.write_file(lessons .. "/marker.lua", string.format([[
local f = io.open(%q, "w") f:write("ran") f:close()
os.execute("touch " .. %q)
return { title = "Writes " .. 'a file', steps = {
  { task = "t", check = function(ctx) local a, b = 1, 2 return a < b end },
  { task = [==[two, three]==], expect = { { var = "x", shape = { 2, 3 } } } };
} }]], dir .. "/MARKER", dir .. "/MARKER2"))
    -- a FIFO named like a lesson would block a reader: not a regular file
    os.execute("mkfifo " .. R.quote(lessons .. "/fifo.lua"))
    local out, code = run_limited({ "--lesson" }, { GSHELL_LESSON_PATH = lessons, GSHELL_LESSON_STATE = dir .. "/state" })
    assert.are.equal(0, code, out) -- (124: the listing hung)
    assert.is_nil(io.open(dir .. "/MARKER"), "the listing ran marker.lua")
    assert.is_nil(io.open(dir .. "/MARKER2"), "the listing ran marker.lua")
    -- the titles and step counts come from the text
    assert.truthy(out:find("loop%s+Forever %(1 steps, not started%)"), out)
    assert.truthy(out:find("marker%s+Writes a file %(2 steps, not started%)"), out)
    assert.falsy(has(out, "fifo"), out)
    -- the built-in lessons keep their titles
    assert.truthy(out:find("gpu%s+GPUs: devices, tensors and networks on the GPU.-%(17 steps, not started%)"), out)
    assert.truthy(out:find("lenet%s+LeNet on Fashion%-MNIST"), out)
    -- %lesson list inside a session lists the same way
    local out2, code2 = run_limited({ "--repl-stdin" }, { GSHELL_LESSON_PATH = lessons, GSHELL_LESSON_STATE = dir .. "/state" },
      "%lesson list\n")
    assert.are.equal(0, code2, out2)
    assert.truthy(out2:find("loop%s+Forever"), out2)
    assert.is_nil(io.open(dir .. "/MARKER"), "%lesson list ran marker.lua")
  end)

  it("a title or step list built by code is not run: the name stands for the title, the count is left out", function()
    R.write_file(dir .. "/computed.lua", [[
local steps = {}
for i = 1, 3 do steps[i] = { task = "t" .. i, expect = { { var = "a", equals = i } } } end
return { title = string.upper("made by code"), steps = steps }]])
    -- a helper returning a table before the lesson's own return
    R.write_file(dir .. "/helper.lua", [===[
local function step(v) return { task = "set a", expect = { { var = "a", equals = v } } } end
if false then return { title = "not this one", steps = {} } end
return { title = [[Long
title]] .. "!", steps = { step(1), step(2), step(3) } }]===])
    local out, code = run_limited({ "--lesson" }, { GSHELL_LESSON_PATH = dir, GSHELL_LESSON_STATE = dir .. "/state" })
    assert.are.equal(0, code, out)
    assert.truthy(out:find("computed%s+computed %(not started%)"), out)
    -- (a newline or a terminal escape in a title prints as a space)
    assert.truthy(out:find("helper%s+Long title! %(3 steps, not started%)"), out)
    -- run by name, the lesson itself runs (it is the learner's choice)
    local out2 = run_limited({ "--lesson", "computed", "--repl-stdin" }, { GSHELL_LESSON_PATH = dir,
      GSHELL_LESSON_STATE = dir .. "/state" }, "a = 1\na = 2\na = 3\n")
    assert.truthy(has(out2, "Lesson computed: MADE BY CODE"), out2)
    assert.truthy(has(out2, "Lesson complete"), out2)
  end)
end)

describe("a malformed lesson", function()
  local dir
  before_each(function() dir = R.tmpdir() end)
  after_each(function() os.execute("rm -rf " .. R.quote(dir)) end)

  local ok_step = '{ task = "t", expect = { { var = "a", equals = 1 } } }'
  local cases = {
    { "a table title", "return { title = {}, steps = { " .. ok_step .. " } }",
      "the lesson's `title` should be a string, not a table" },
    { "a hole in steps", "return { steps = { " .. ok_step .. ", nil, " .. ok_step .. " } }",
      "the lesson's `steps` has a hole: entry 2 is nil (nil in a list, or a missing comma?) but there are entries up to 3" },
    { "a named entry in steps", "return { steps = { " .. ok_step .. ", extra = " .. ok_step .. " } }",
      "the lesson's `steps` should be a list ({...} of entries without names), but it has the key 'extra'" },
    { "steps that are not a table", "return { steps = 'abc' }",
      "a lesson needs a non-empty `steps` list, not the string \"abc\"" },
    { "a non-string done", 'return { steps = { { task = "t", expect = { { var = "a", equals = 1 } }, done = 42 } } }',
      "step 1's `done` should be a string (printed when the step is passed), not the number 42" },
    { "a non-string hint", 'return { steps = { { task = "t", expect = { { var = "a", equals = 1, hint = {} } } } } }',
      "step 1, expectation 1's `hint` should be a string (the hint shown instead of the generated one), not a table" },
    { "a non-string task", 'return { steps = { { task = 5, expect = {} } } }',
      "step 1's `task` should be a string (what the learner is asked to do), not the number 5" },
    { "a step that is not a table", 'return { steps = { "do this" } }',
      "step 1 should be a table {task = ..., expect = ...}, not the string \"do this\"" },
    { "a non-string title of a step", 'return { steps = { { title = 3, task = "t", check = function() return true end } } }',
      "step 1's `title` should be a string, not the number 3" },
    { "a hole in expect", 'return { steps = { { task = "t", expect = { { var = "a", equals = 1 }, nil, { var = "b", equals = 1 } } } } }',
      "step 1's `expect` has a hole: entry 2 is nil" },
    { "an expectation of nothing", 'return { steps = { { task = "t", expect = { { equals = 1 } } } } }',
      "step 1, expectation 1 needs one of `var` (a variable's name), `error` (text the error contains), `result` " ..
      "(the cell's value) or `check` (a function)" },
    { "a shape holding a string", 'return { steps = { { task = "t", expect = { { var = "a", shape = { 2, "x" } } } } } }',
      "step 1, expectation 1's `shape`[2] should be a size (an integer >= 0), not the string \"x\"" },
    { "a device that is a number", 'return { steps = { { task = "t", expect = { { var = "a", device = 0 } } } } }',
      "step 1, expectation 1's `device` should be a device name like \"cuda:0\", a list of names or a function " ..
      "returning one, not the number 0" },
    { "a non-function check", 'return { steps = { { task = "t", check = "yes" } } }',
      "step 1's `check` should be a function of the cell returning true, or false and a hint, not the string \"yes\"" },
    { "sim_gpus that is a string", 'return { sim_gpus = "two", steps = { ' .. ok_step .. ' } }',
      "the lesson's `sim_gpus` should be a number of simulated GPUs (an integer from 0 to 64), not the string \"two\"" },
    { "a step setup naming no variable", 'return { steps = { { task = "t", setup = { { 1, "x" } }, expect = { { var = "a", equals = 1 } } } } }',
      "step 1's `setup`[1][1] should be a variable's name, not the number 1" },
    { "a file returning a number", "return 1",
      "the value the file returns should be a table (the lesson), not the number 1" },
    { "a lesson setup that fails", 'return { setup = function() error("no data here") end, steps = { ' .. ok_step .. ' } }',
      "the lesson's `setup` failed: " },
  }
  for _, c in ipairs(cases) do
    it(c[1] .. " is an error naming the file and the field", function()
      local path = dir .. "/bad.lua"
      R.write_file(path, c[2])
      local out, code = run_limited({ "--lesson", path, "--repl-stdin" }, { GSHELL_LESSON_STATE = dir .. "/state" }, "a = 1\n")
      assert.are.equal(1, code, out)
      assert.truthy(has(out, "gshell: " .. path .. ": " .. c[3]), out)
      assert.falsy(has(out, "attempt to"), out)
      assert.falsy(has(out, "stack traceback"), out)
    end)
  end

  it("in $GSHELL_LESSON_PATH, run by name: the message names the file", function()
    R.write_file(dir .. "/named.lua", 'return { steps = { { task = "t", expect = { { var = "a", equals = 1 } }, done = {} } } }')
    local out, code = run_limited({ "--lesson", "named" }, { GSHELL_LESSON_PATH = dir, GSHELL_LESSON_STATE = dir .. "/state" })
    assert.are.equal(1, code, out)
    assert.truthy(has(out, "gshell: " .. dir .. "/named.lua: step 1's `done` should be a string"), out)
  end)

  it("a check function's hint that is not a string is said, and the lesson goes on", function()
    local path = dir .. "/hint.lua"
    R.write_file(path, [[return { steps = {
  { task = "t", expect = { { var = "a", test = function(v) return v == 2, { "not text" } end } } } } }]])
    local out, code = run_limited({ "--lesson", path, "--repl-stdin" }, { GSHELL_LESSON_STATE = dir .. "/state" }, "a = 1\na = 2\n")
    assert.are.equal(0, code, out)
    assert.truthy(has(out, "✗ Not yet. (lesson " .. path .. ": this step's check gave a hint that is not a string but a table)"), out)
    assert.truthy(has(out, "Lesson complete"), out)
  end)
end)

-- issue 23 (Low): the progress file goes through torch.save's writer
-- (src/core/gs_file.c: a temporary file beside it, checked writes, then a
-- rename); lesson_spec.lua fills the disk with a size limit, this case
-- uses a directory the learner cannot write and /dev/full.
describe("lesson progress that cannot be written", function()
  it("where its directory cannot be made: the old file stays, the learner is told, the lesson goes on", function()
    local dir = R.tmpdir()
    -- a plain file where the directory should be: no one (root neither)
    -- can create a file under it
    R.write_file(dir .. "/notadir", "")
    R.write_file(dir .. "/mini.lua", 'return { steps = { { task = "t", expect = { { var = "a", equals = 1 } } }, ' ..
      '{ task = "u", expect = { { var = "b", equals = 1 } } } } }')
    local out, code = run_limited({ "--lesson", dir .. "/mini.lua", "--repl-stdin" },
      { GSHELL_LESSON_STATE = dir .. "/notadir/state" }, "a = 1\nb = 1\n")
    assert.are.equal(0, code, out)
    assert.truthy(has(out, "Lesson complete"), out)
    assert.truthy(has(out, "gshell: lesson progress not saved: cannot save to '" .. dir .. "/notadir/state'"), out)
    assert.are.equal("", R.read_file(dir .. "/notadir"))
    os.execute("rm -rf " .. R.quote(dir))
  end)

  it("on /dev/full or a FIFO: refused with the reason, neither read forever nor blocking", function()
    local out, code = run_limited({ "-e", 'require("gshell.lesson").save_progress("gpu", 5)' }, { GSHELL_LESSON_STATE = "/dev/full" })
    assert.are.equal(0, code, out) -- (it read /dev/full's endless zeros until killed)
    assert.truthy(has(out, "gshell: lesson progress not saved: cannot read /dev/full: it is a character device, " ..
      "not a regular file"), out)
    local dir = R.tmpdir()
    os.execute("mkfifo " .. R.quote(dir .. "/state"))
    local out2, code2 = run_limited({ "--lesson" }, { GSHELL_LESSON_STATE = dir .. "/state" })
    assert.are.equal(0, code2, out2)
    assert.truthy(out2:find("gpu%s+GPUs.-not started"), out2)
    -- a lesson named by a path that is a FIFO is refused too
    local out3, code3 = run_limited({ "--lesson", dir .. "/state" }, { GSHELL_LESSON_STATE = dir .. "/x" })
    assert.are.equal(1, code3, out3)
    assert.truthy(has(out3, "cannot read " .. dir .. "/state: it is a FIFO (named pipe), not a regular file"), out3)
    os.execute("rm -rf " .. R.quote(dir))
  end)
end)
