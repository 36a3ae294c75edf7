-- Guided lessons: the checking logic on its own (expectations against a
-- session's variables and a cell's outcome), lesson files a teacher
-- writes, progress kept between runs, and the whole gpu lesson typed
-- through a pseudo-terminal.
local R = require("gshell_run")

local function has(s, piece) return s:find(piece, 1, true) ~= nil end

-- The checking logic runs inside gshell (gshell.lesson is built into the
-- binary): a Lua snippet prints what it finds.
local function lua_in_gshell(code, env)
  local out, err, status = R.run({ "-e", code }, nil, env or { GSHELL_SIM_GPUS = "2" })
  assert.are.equal(0, status, err)
  return out
end

describe("lesson checks", function()
  it("a variable on the wrong device gets a hint naming the device and the fix", function()
    local out = lua_in_gshell([[
      local L = require("gshell.lesson")
      local env = { X = torch.ones(2, 3) }
      local e = { var = "X", device = "cuda:0", shape = { 2, 3 }, fill = 1 }
      print(L.check_expectation(e, { env = env, src = "X = torch.ones(2, 3)", status = "ok" }))
      env.X = torch.ones(2, 3, { device = "cuda:1" })
      print(L.check_expectation(e, { env = env, src = "X = 1", status = "ok" }))
      env.X = torch.ones(3, 2, { device = "cuda:0" })
      print(L.check_expectation(e, { env = env, src = "X = 1", status = "ok" }))
      env.X = torch.zeros(2, 3, { device = "cuda:0" })
      print(L.check_expectation(e, { env = env, src = "X = 1", status = "ok" }))
      env.X = torch.ones(2, 3, { device = "cuda:0" })
      print(L.check_expectation(e, { env = env, src = "X = 1", status = "ok" }))
      -- quiet when the cell did not touch X
      env.X = nil
      print(L.check_expectation(e, { env = env, src = "y = 2", status = "ok" }))
      print(L.check_expectation(e, { env = env, src = "X = nil", status = "ok" }))
    ]])
    local lines = {}
    for l in out:gmatch("[^\n]+") do lines[#lines + 1] = l end
    assert.are.equal("false\tX is a CPU tensor, but the task asks for one on cuda:0: create it with " ..
      "{device = ...} or move it with X:to(...) / X:cuda(...)", lines[1])
    assert.are.equal("false\tX is on cuda:1, but the task asks for cuda:0 (X:cuda(0) copies it there)", lines[2])
    assert.are.equal("false\tX has shape torch.Size([3, 2]), the task asks for [2, 3]", lines[3])
    -- the hint shows the actual value next to the expected one
    assert.are.equal("false\tX should be filled with 1; it is tensor([[0., 0., 0.], [0., 0., 0.]], device='cuda:0')", lines[4])
    assert.are.equal("true", lines[5])
    assert.are.equal("false\tnil", lines[6])
    assert.are.equal("false\t`X` is not defined yet", lines[7])
  end)

  it("devices, modules, values, equality, errors and a forgotten colon", function()
    local out = lua_in_gshell([[
      local L = require("gshell.lesson")
      local function show(...) print((select(1, ...)), (select(2, ...))) end
      local env = { d = torch.device("cuda", 1), net = nn.Linear(2, 1), n = 2, Y = torch.ones(2) }
      show(L.check_expectation({ var = "d", is = "device", device = { "cuda:1" } }, { env = env, src = "d", status = "ok" }))
      show(L.check_expectation({ var = "d", is = "device", device = "cpu" }, { env = env, src = "d", status = "ok" }))
      show(L.check_expectation({ var = "net", module_device = "cuda:0" }, { env = env, src = "net", status = "ok" }))
      env.net:to("cuda:0")
      show(L.check_expectation({ var = "net", module_device = "cuda:0" }, { env = env, src = "net", status = "ok" }))
      show(L.check_expectation({ var = "n", equals = function() return torch.cuda.device_count() end }, { env = env, src = "n", status = "ok" }))
      env.S = torch.tensor({ 2.0, 2.0 })
      show(L.check_expectation({ var = "S", values = function(e) return e.Y + 1 end }, { env = env, src = "S", status = "ok" }))
      env.S = torch.tensor({ 2.0, 3.0 })
      show(L.check_expectation({ var = "S", values = function(e) return e.Y + 1 end }, { env = env, src = "S", status = "ok" }))
      show(L.check_expectation({ error = "same device" }, { env = env, src = "X + Y", status = "ok" }))
      show(L.check_expectation({ error = "same device" }, { env = env, src = "X + Y", status = "error",
        err = "stdin:1: Expected all tensors to be on the same device, but found at least two devices" }))
      local x = torch.ones(2)
      env.x = x
      show(L.check_step({ expect = { { var = "Z", device = "cuda:1" } } },
        { env = env, src = "Z = x.cuda(1)", status = "error", err = "bad argument" }))
      show(L.check_step({ expect = { { var = "Z", device = "cuda:1" } } },
        { env = env, src = "Z = q + 1", status = "error", err = "attempt to perform arithmetic" }))
    ]])
    local lines = {}
    for l in out:gmatch("[^\n]+") do lines[#lines + 1] = l end
    assert.are.same({
      "true\tnil",
      "false\td is cuda:1, the task asks for cpu",
      "false\tnet's parameters are on cpu, the task asks for cuda:0: net:to(try_gpu()) moves them (modules move in place)",
      "true\tnil",
      "true\tnil",
      "true\tnil",
      "false\tS does not hold the expected values: it is tensor([2., 3.]), expected tensor([2., 2.])",
      "false\tthat ran without an error; the task is to see the error happen",
      "true\tnil",
      "false\tforgot the `:`? `x.cuda(1)` calls the method without its object; Lua needs a colon: `x:cuda(1)`",
      "false\tthat cell failed (the error is above); fix it and run it again",
    }, lines)
  end)

  it("a teacher's lesson file runs by path; bad files are clear errors", function()
    local dir = R.tmpdir()
    R.write_file(dir .. "/mini.lua", [[
return {
  title = "Two steps",
  steps = {
    { title = "a", task = "Set a = 1", expect = { { var = "a", equals = 1 } } },
    { task = "Set b to a tensor of 3 zeros", expect = { { var = "b", shape = { 3 }, fill = 0 } }, done = "Well done." },
  },
}]])
    R.write_file(dir .. "/bad.lua", "return { steps = { { task = 'x' } } }")
    local state = dir .. "/state"
    local out, err, code = R.run({ "--lesson", dir .. "/mini.lua", "--repl-stdin" }, "a = 2\na = 1\nb = torch.zeros(3)\n",
      { GSHELL_LESSON_STATE = state })
    assert.are.equal(0, code, err)
    assert.truthy(has(out, "Lesson mini: Two steps"), out)
    assert.truthy(has(out, "✗ Not yet: a is 2, expected 1"), out)
    assert.truthy(has(out, "Step 2 of 2"), out)
    assert.truthy(has(out, "✓ Well done."), out)
    assert.truthy(has(out, "Lesson complete"), out)
    assert.are.equal("mini\t3\n", R.read_file(state))
    local _, err2, code2 = R.run({ "--lesson", dir .. "/bad.lua" }, "", { GSHELL_LESSON_STATE = state })
    assert.are.equal(1, code2)
    assert.truthy(has(err2, "bad.lua: step 1 needs `expect` (a list) or `check` (a function)"), err2)
    local _, err3, code3 = R.run({ "--lesson", "nosuch" }, "", { GSHELL_LESSON_STATE = state })
    assert.are.equal(1, code3)
    assert.truthy(has(err3, "no lesson 'nosuch'"), err3)
    os.execute("rm -rf " .. R.quote(dir))
  end)

  it("gshell --lesson lists the lessons with their progress; lessons in GSHELL_LESSON_PATH are found by name", function()
    local dir = R.tmpdir()
    R.write_file(dir .. "/extra.lua", "return { title = 'Extra', steps = { { task = 't', expect = { { var = 'q', equals = 1 } } } } }")
    R.write_file(dir .. "/state", "gpu\t4\n")
    local out, _, code = R.run({ "--lesson" }, "", { GSHELL_LESSON_STATE = dir .. "/state", GSHELL_LESSON_PATH = dir })
    assert.are.equal(0, code)
    assert.truthy(out:find("gpu%s+GPUs: devices, tensors and networks on the GPU.-%(17 steps, at step 4%)"), out)
    assert.truthy(out:find("extra%s+Extra %(1 steps, not started%)"), out)
    local out2 = R.run({ "--lesson", "extra", "--repl-stdin" }, "q = 1\n",
      { GSHELL_LESSON_STATE = dir .. "/state", GSHELL_LESSON_PATH = dir })
    assert.truthy(has(out2, "Lesson complete"), out2)
    os.execute("rm -rf " .. R.quote(dir))
  end)

  it("%lesson inside a session starts, skips, goes back and quits", function()
    local dir = R.tmpdir()
    local out = R.run({ "--repl-stdin" }, table.concat({
      "%lesson gpu --restart", "%lesson skip", "%lesson back", "cpu, gpu, gpu1 = torch.device('cpu'), torch.device('cuda'), torch.device('cuda:1')",
      "%lesson quit", "n = 5", "%lesson gpu",
    }, "\n") .. "\n", { GSHELL_LESSON_STATE = dir .. "/state" })
    assert.truthy(has(out, "this lesson uses 2 SIMULATED CUDA devices"), out)
    assert.truthy(has(out, "(skipped)"), out)
    assert.truthy(out:find("Step 1 of 17.-Step 2 of 17.-Step 1 of 17.-✓.-Step 2 of 17"), out)
    assert.truthy(has(out, "Lesson gpu stopped at step 2"), out)
    assert.falsy(has(out, "n is 5"), out) -- no checking after quit
    assert.truthy(has(out, "Resuming at step 2 (of 17)"), out)
    os.execute("rm -rf " .. R.quote(dir))
  end)
end)

describe("the gpu lesson through a terminal", function()
  local answers = {
    { "gpu1 = torch.device('cuda:2')", "gpu1 is cuda:2, the task asks for cuda:1" },
    { "gpu1 = torch.device('cuda:1')", "" },
    { "cpu, gpu = torch.device('cpu'), torch.device('cuda')" },
    { "n = torch.cuda.device_count()" },
    { "g, g10, all = try_gpu(), try_gpu(10), try_all_gpus()" },
    { "x = torch.tensor({1, 2, 3})" },
    { "X = torch.ones(2, 3)", "X is a CPU tensor, but the task asks for one on cuda:0" },
    { "X = torch.ones(2, 3, {device = try_gpu()})" },
    { "Y = torch.rand(2, 3, {device = try_gpu(1)})" },
    { "X + Y" },
    { "Z = X.cuda(1)", "forgot the `:`?" },
    { "Z = X:cuda(1)" },
    { "S = Y + Z" },
    { "same = rawequal(Z:cuda(1), Z)" },
    { "net = nn.Sequential(nn.Linear(3, 1)):to(try_gpu())" },
    { "out = net(X)" },
    { "w_dev = net[1].weight.data.device" },
    { "A = torch.rand(500, 500, {device = try_gpu()})", "" },
    { "t = %timeit -o -q -n 2 -r 2 A:matmul(A)" },
    { "torch.save(net:state_dict(), lesson_dir .. '/net.safetensors'); sd = torch.load(lesson_dir .. '/net.safetensors')" },
    { "M = torch.rand(100, 100, {device = try_gpu()}); list = {} for i = 1, 100 do list[i] = torch.linalg.norm(M:matmul(M)) end; norms = torch.stack(list)" },
    { "A0 = torch.rand(300, 300, {device = try_gpu(0)}); A1 = A0:to(try_gpu(1)); C0, C1 = A0:matmul(A0), A1:matmul(A1)" },
  }

  it("runs from the first step to the end, with hints for wrong answers, and keeps progress", function()
    local dir = R.tmpdir()
    local env = { GSHELL_LESSON_STATE = dir .. "/state" }
    local steps = { { expect = "Step 1 of 17" }, { expect = "gshell> " } }
    local right = 0
    for _, a in ipairs(answers) do
      steps[#steps + 1] = { send = a[1] .. "\r" }
      if a[2] == "" then
        -- right, but the step is not finished: no verdict, only the prompt
      elseif a[2] then
        steps[#steps + 1] = { expect = "✗ Not yet: [^\n]*" .. a[2]:gsub("[%(%)%.%`%?%*%+%[%]%^%$\\|{}]", "\\%0") }
      else
        right = right + 1
        steps[#steps + 1] = { expect = "✓", timeout = 60 }
      end
      steps[#steps + 1] = { expect = "gshell> ", timeout = 60 }
    end
    steps[#steps + 1] = { send = "\4" }
    local out, ok = R.pty(steps, { "--lesson", "gpu", "--restart" }, env)
    assert.is_true(ok, out)
    assert.are.equal(17, right)
    assert.truthy(has(out, "Lesson complete"), out)
    assert.are.equal("gpu\t18\n", R.read_file(dir .. "/state"))
    -- a later run knows the lesson is done
    local again = R.run({ "--lesson", "gpu", "--repl-stdin" }, "", env)
    assert.truthy(has(again, "You finished this lesson before"), again)
    os.execute("rm -rf " .. R.quote(dir))
  end)

  it("stops and resumes where it was (progress in GSHELL_LESSON_STATE)", function()
    local dir = R.tmpdir()
    local env = { GSHELL_LESSON_STATE = dir .. "/state" }
    local out, ok = R.pty({
      { expect = "Step 1 of 17" }, { expect = "gshell> " },
      { send = "cpu, gpu, gpu1 = torch.device('cpu'), torch.device('cuda'), torch.device('cuda:1')\r" },
      { expect = "Step 2 of 17" }, { expect = "gshell> " },
      { send = "\4" },
    }, { "--lesson", "gpu" }, env)
    assert.is_true(ok, out)
    local out2, ok2 = R.pty({
      { expect = "Resuming at step 2 \\(of 17\\)" }, { expect = "gshell> " }, { send = "\4" },
    }, { "--lesson", "gpu" }, env)
    assert.is_true(ok2, out2)
    os.execute("rm -rf " .. R.quote(dir))
  end)
end)

-- issue 23 (Low): the progress file was written to a temporary file with
-- its errors ignored and renamed over the old one, so a full disk left an
-- empty or cut progress file
describe("lesson progress on a full disk", function()
  it("is written as torch.save writes: a failed save leaves the old file and says so", function()
    local dir = R.tmpdir()
    local lines = {}
    for i = 1, 2000 do lines[i] = string.format("lesson%05d\t%d\n", i, i % 7 + 1) end
    local old = table.concat(lines)
    R.write_file(dir .. "/state", old) -- about 28 KB
    local gshell = R.GSHELL:sub(1, 1) == "/" and R.GSHELL or (os.getenv("PWD") .. "/" .. R.GSHELL)
    -- a file size limit stands in for a full disk (SIGXFSZ ignored: EFBIG)
    R.write_file(dir .. "/save.lua", 'require("gshell.lesson").save_progress("gpu", 5)\n')
    R.write_file(dir .. "/run.sh", string.format("trap '' XFSZ\nulimit -f 16\nGSHELL_LESSON_STATE=%s exec %s %s\n",
      R.quote(dir .. "/state"), R.quote(gshell), R.quote(dir .. "/save.lua")))
    local p = io.popen("bash " .. R.quote(dir .. "/run.sh") .. " 2>&1")
    local out = p:read("a")
    p:close()
    assert.are.equal(old, R.read_file(dir .. "/state"))
    assert.truthy(has(out, "gshell: lesson progress not saved: cannot save to '" .. dir .. "/state': File too large"), out)
    -- with room, the step is saved beside the others
    local _, err = R.run({ "-e", 'require("gshell.lesson").save_progress("gpu", 5)' }, nil,
      { GSHELL_LESSON_STATE = dir .. "/state" })
    local now = R.read_file(dir .. "/state")
    assert.truthy(has(now, "gpu\t5\n"), err)
    assert.truthy(has(now, "lesson02000\t"), now:sub(-40))
    os.execute("rm -rf " .. R.quote(dir))
  end)
end)
