-- Teaching files: documents and notebooks declare simulated GPUs and a
-- seed in a header, notebook cells may be marked as expected to fail,
-- --md writes timings as `...` so its transcript checks itself later, and
-- every guide in docs/ passes --check without touching the current
-- directory.
local R = require("gshell_run")

local function has(s, piece) return s:find(piece, 1, true) ~= nil end
local NO_GPU = { GSHELL_SIM_GPUS = "0", CUDA_VISIBLE_DEVICES = "" }

describe("--check headers", function()
  it("sim-gpus and seed in the first lines set up the session", function()
    local dir = R.tmpdir()
    -- the seeded value, computed in a plain run
    local want = R.run({ "-e", "torch.manual_seed(5) print(torch.rand(1):item())" }, "", NO_GPU)
    R.write_file(dir .. "/d.md", table.concat({
      "<!-- gshell: sim-gpus=3 seed=5 -->",
      "# A page",
      "```lua", "torch.cuda.device_count()", "```", "```output", "3", "```",
      "```lua", "print(torch.rand(1):item())", "```", "```output", (want:gsub("\n$", "")), "```",
    }, "\n") .. "\n")
    local out, _, code = R.run({ "--check", dir .. "/d.md" }, "", NO_GPU)
    assert.are.equal(0, code, out)
    assert.truthy(has(out, "2 blocks run, 2 compared, 0 failed"), out)
    R.write_file(dir .. "/bad.md", "<!-- gshell: sim-gpu=3 -->\n```lua\n1\n```\n")
    local _, err, code2 = R.run({ "--check", dir .. "/bad.md" }, "", NO_GPU)
    assert.are.equal(1, code2)
    assert.truthy(has(err, "unknown gshell header key 'sim-gpu' (the keys are sim-gpus and seed)"), err)
    os.execute("rm -rf " .. R.quote(dir))
  end)
end)

describe("every guide in docs/", function()
  local p = io.popen("ls docs/*.md")
  local docs = {}
  for path in p:lines() do docs[#docs + 1] = path end
  p:close()
  for _, path in ipairs(docs) do
    it(path .. " passes --check on a machine without a GPU, writing nothing into the current directory", function()
      local cwd = R.tmpdir()
      local out, err, code = R.run({ "--check", os.getenv("PWD") .. "/" .. path }, "", NO_GPU, cwd)
      assert.are.equal(0, code, out .. err)
      assert.truthy(has(out, " 0 failed"), out)
      local ls = io.popen("ls -A " .. R.quote(cwd)):read("a")
      assert.are.equal("", ls, path .. " wrote into the current directory: " .. ls)
      os.execute("rm -rf " .. R.quote(cwd))
    end)
  end
end)

describe("--notebook teaching cells", function()
  local function notebook(dir, body)
    R.write_file(dir .. "/nb.lua", body)
    return R.run({ "--notebook", dir .. "/nb.lua", "--md", dir .. "/nb.md" }, "", NO_GPU)
  end

  it("a cell tagged raises-exception may fail without failing the run; it must fail", function()
    local dir = R.tmpdir()
    local out, err, code = notebook(dir, table.concat({
      "-- gshell: sim-gpus=2 seed=1",
      "-- %%",
      "X = torch.ones(2, {device = 'cuda:0'})",
      "-- %% tags=[\"raises-exception\"]",
      "X + torch.ones(2, {device = 'cuda:1'})",
      "-- %%",
      "X:sum()",
    }, "\n") .. "\n")
    assert.are.equal(0, code, out .. err)
    assert.truthy(has(out, "Expected all tensors to be on the same device"), out)
    local md = R.read_file(dir .. "/nb.md")
    assert.truthy(md:find("^<!%-%- gshell: sim%-gpus=2 seed=1 %-%->\n"), md)
    -- the transcript checks itself (the error is its expected output)
    local cout, _, ccode = R.run({ "--check", dir .. "/nb.md" }, "", NO_GPU)
    assert.are.equal(0, ccode, cout)
    -- an unmarked failing cell fails the run; a marked cell that passes too
    local _, err2, code2 = notebook(dir, "-- %%\nerror('boom')\n")
    assert.are.equal(1, code2)
    assert.truthy(has(err2, "1 of 1 cells failed"), err2)
    local _, err3, code3 = notebook(dir, "-- %% tags=[\"raises-exception\"]\nx = 1\n")
    assert.are.equal(1, code3)
    assert.truthy(has(err3, "cell 1 is marked raises-exception but ran without an error"), err3)
    os.execute("rm -rf " .. R.quote(dir))
  end)

  it("--md writes timing lines as ... so the transcript checks itself later", function()
    local dir = R.tmpdir()
    local out, err, code = notebook(dir, table.concat({
      "-- %%", "x = torch.ones(50)",
      "-- %%", "%timeit -n 3 -r 2 x + x",
      "-- %%", "%time x:sum()",
      "-- %%", "r = %timeit -o -q -n 2 -r 1 x + x",
      "-- %%", "r",
    }, "\n") .. "\n")
    assert.are.equal(0, code, out .. err)
    local md = R.read_file(dir .. "/nb.md")
    assert.truthy(has(md, "```output\n... ± ... per loop (mean ± std. dev. of ... run..., ... loop... each)\n```"), md)
    assert.truthy(has(md, "CPU time: ...\nWall time: ...\ntensor(50.)\n"), md)
    assert.truthy(has(md, "<TimeitResult : ...>"), md)
    local cout, _, ccode = R.run({ "--check", dir .. "/nb.md" }, "", NO_GPU)
    assert.are.equal(0, ccode, cout)
    assert.truthy(has(cout, "0 failed"), cout)
    os.execute("rm -rf " .. R.quote(dir))
  end)
end)
