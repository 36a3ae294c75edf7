-- Lessons hold their state and check their own files (issue 22, item 6):
-- a step's setup rebuilds what earlier steps made (resume, %lesson skip),
-- the gpu lesson's step hints, and the authoring errors and features.
local R = require("gshell_run")

local function has(s, piece) return s:find(piece, 1, true) ~= nil end
local function count(s, piece)
  local n, i = 0, 1
  while true do
    local a = s:find(piece, i, true)
    if not a then return n end
    n, i = n + 1, a + 1
  end
end

-- Runs the gpu lesson from step `at` with these lines typed.
local function gpu_from(at, lines)
  local dir = R.tmpdir()
  R.write_file(dir .. "/state", "gpu\t" .. at .. "\n")
  local out, err, code = R.run({ "--lesson", "gpu", "--repl-stdin" }, table.concat(lines, "\n") .. "\n",
    { GSHELL_LESSON_STATE = dir .. "/state" })
  local state = R.read_file(dir .. "/state")
  os.execute("rm -rf " .. R.quote(dir))
  return out .. err, code, state
end

describe("the gpu lesson holds its state", function()
  it("resumed at step 15 in a new session, net is there and saving it passes", function()
    local all, code, state = gpu_from(15, {
      "torch.save(net:state_dict(), lesson_dir .. '/net.safetensors')",
      "sd = torch.load(lesson_dir .. '/net.safetensors')",
    })
    assert.are.equal(0, code, all)
    assert.truthy(has(all, "Resuming at step 15"), all)
    assert.truthy(has(all, "(made what this step builds on: net = "), all)
    assert.falsy(has(all, "attempt to index a nil value"), all)
    assert.truthy(has(all, "Step 16 of 17"), all)
    assert.are.equal("gpu\t16\n", state)
  end)

  it("%lesson skip past the step that makes net: step 12 passes with out = net(X)", function()
    local all = gpu_from(11, { "%lesson skip", "out = net(X)" })
    assert.truthy(has(all, "(skipped)"), all)
    assert.truthy(has(all, "X = torch.ones(2, 3, {device = try_gpu()})"), all)
    assert.truthy(has(all, "Inputs and parameters on the same GPU"), all)
    assert.truthy(has(all, "Step 13 of 17"), all)
  end)

  it("a setup never replaces the learner's own values", function()
    local all = gpu_from(11, { "X = torch.zeros(2, 3, {device = try_gpu()})", "%lesson skip", "print(X:sum():item())" })
    assert.truthy(has(all, "(made what this step builds on: net = nn.Sequential"), all)
    assert.falsy(has(all, "X = torch.ones"), all)
    assert.truthy(has(all, "\n0.0\n") or has(all, "\n0\n"), all)
  end)
end)

describe("the gpu lesson's step hints", function()
  it("step 2: the function itself instead of its result says call it", function()
    local all = gpu_from(2, { "n = torch.cuda.device_count" })
    assert.truthy(has(all, "n holds a function, not its result: call it, with () at the end"), all)
  end)

  it("step 8: the colon hint is said once", function()
    local all = gpu_from(8, { "Z = X.cuda(1)" })
    assert.are.equal(1, count(all, "Lua needs a colon"), all)
    assert.truthy(has(all, "forgot the `:`?"), all)
  end)

  it("step 14 names %timeit -o", function()
    local all = gpu_from(14, { "A = torch.rand(500, 500, {device = try_gpu()})", "t = 5" })
    assert.truthy(has(all, "t should be what `%timeit -o` returns: `t = %timeit -o -q A:matmul(A)`"), all)
  end)

  it("step 17 steers to computing on the second GPU, not copying there", function()
    local all = gpu_from(17, {
      "A0 = torch.rand(300, 300, {device = try_gpu(0)})",
      "A1 = A0:to(try_gpu(1))",
      "C0, C1 = A0:matmul(A0), A0:matmul(A0)",
    })
    assert.truthy(has(all, "C1 should be computed on the second GPU, not copied there"), all)
    assert.falsy(has(all, "C1:cuda(1) copies it there"), all)
  end)
end)

describe("lesson authoring", function()
  local dir
  before_each(function() dir = R.tmpdir() end)
  after_each(function() os.execute("rm -rf " .. R.quote(dir)) end)

  it("a misspelt expectation key is an error when the lesson loads, with the closest key", function()
    R.write_file(dir .. "/typo.lua", [[
return { steps = { { task = "Make x on the CPU", expect = { { var = "x", devcie = "cpu" } } } } }]])
    local _, err, code = R.run({ "--lesson", dir .. "/typo.lua" }, "", { GSHELL_LESSON_STATE = dir .. "/state" })
    assert.are.equal(1, code)
    assert.truthy(has(err, "typo.lua: step 1, expectation 1 has an unknown key 'devcie' (did you mean 'device'?)"), err)
    R.write_file(dir .. "/typo2.lua", [[
return { steps = { { task = "t", expect = { { var = "x", valeus = { 1 } } } } } }]])
    local _, err2, code2 = R.run({ "--lesson", dir .. "/typo2.lua" }, "", { GSHELL_LESSON_STATE = dir .. "/state" })
    assert.are.equal(1, code2)
    assert.truthy(has(err2, "unknown key 'valeus' (did you mean 'values'?)"), err2)
    R.write_file(dir .. "/typo3.lua", [[
return { steps = { { task = "t", expcet = {}, check = function() return true end } } }]])
    local _, err3 = R.run({ "--lesson", dir .. "/typo3.lua" }, "", { GSHELL_LESSON_STATE = dir .. "/state" })
    assert.truthy(has(err3, "typo3.lua: step 1 has an unknown key 'expcet' (did you mean 'expect'?)"), err3)
  end)

  it("a 0-d expectation takes shape = {} with a value; the hint shows expected and actual", function()
    R.write_file(dir .. "/zero.lua", [[
return { steps = { { task = "Set s to the sum of 1, 2, 3 as a tensor",
  expect = { { var = "s", shape = {}, values = 6 } } } } }]])
    local out = R.run({ "--lesson", dir .. "/zero.lua", "--repl-stdin" },
      "s = torch.tensor({1, 2, 4}):sum()\ns = torch.tensor({1, 2, 3}):sum()\n", { GSHELL_LESSON_STATE = dir .. "/state" })
    assert.truthy(has(out, "s does not hold the expected values: it is tensor(7), expected tensor(6)"), out)
    assert.truthy(has(out, "Lesson complete"), out)
  end)

  it("a lesson run by path: the restart hint gives the path", function()
    R.write_file(dir .. "/mini.lua", [[
return { steps = { { task = "Set a = 1", expect = { { var = "a", equals = 1 } } } } }]])
    local env = { GSHELL_LESSON_STATE = dir .. "/state" }
    local out = R.run({ "--lesson", dir .. "/mini.lua", "--repl-stdin" }, "a = 1\n", env)
    assert.truthy(has(out, "`gshell --lesson " .. dir .. "/mini.lua --restart` starts again"), out)
    local out2 = R.run({ "--lesson", dir .. "/mini.lua", "--repl-stdin" }, "", env)
    assert.truthy(has(out2, "`gshell --lesson " .. dir .. "/mini.lua --restart`"), out2)
  end)

  it("a step's setup that fails says so and the lesson goes on", function()
    R.write_file(dir .. "/bad_setup.lua", [[
return { steps = {
  { task = "Set a = 1", expect = { { var = "a", equals = 1 } } },
  { task = "Set b = a + 1", setup = { { "a", "nosuch.call()" } }, expect = { { var = "b", equals = 2 } } } } }]])
    local out = R.run({ "--lesson", dir .. "/bad_setup.lua", "--repl-stdin" }, "%lesson skip\nb = 2\n",
      { GSHELL_LESSON_STATE = dir .. "/state" })
    assert.truthy(has(out, "lesson: could not make a for this step"), out)
    assert.truthy(has(out, "Lesson complete"), out)
  end)
end)

describe("--notebook files", function()
  it("the header comment is not a cell; a raises-exception cell may fail", function()
    local dir = R.tmpdir()
    R.write_file(dir .. "/nb.lua", table.concat({
      "-- gshell: seed=0", "-- The title of this notebook", "", "-- %%", "x = torch.ones(2)", "x",
      '-- %% tags=["raises-exception"]', "x + nil", "-- %%", "print('third')" }, "\n") .. "\n")
    local out, err, code = R.run({ "--notebook", dir .. "/nb.lua", "--md", dir .. "/nb.md" })
    local md = R.read_file(dir .. "/nb.md")
    os.execute("rm -rf " .. R.quote(dir))
    assert.are.equal(0, code, err)
    assert.truthy(has(out, "In [1]: x = torch.ones(2)"), out)
    assert.truthy(has(out, "In [3]: print('third')"), out)
    assert.falsy(has(out, "The title"), out)
    assert.truthy(has(md, "\nThe title of this notebook\n"), md)
  end)
end)
