-- Python spellings get their Lua spelling (issue 22, item 3), and hints
-- reach scripts, notebooks and lessons (item 4): at the prompt, in
-- `gshell file.lua`, in `--notebook` cells and in the gpu lesson. Each
-- spelling of the issue has its own case; the hint must give the Lua line.
local R = require("gshell_run")

local function has(s, piece) return s:find(piece, 1, true) ~= nil end

-- { what the learner types, the Lua spelling the hint must contain }
local SPELLINGS = {
  { "X = torch.ones(2, 3, device=try_gpu())", "`X = torch.ones(2, 3, {device = try_gpu()})`" },
  { "x = torch.tensor([1, 2, 3])", "`x = torch.tensor({1, 2, 3})`" },
  { "y = x @ x.T", "`y = x:matmul(x.T)`" },
  { "col = x[:, 1]", "`col = x[{{}, 2}]`" },
  { "z = torch.ones((2, 3))", "`z = torch.ones({2, 3})`" },
  { "with torch.cuda.stream(s):", "`do local ctx <close> = torch.cuda.stream(s); ... end`" },
  { "same = Z:cuda(1) is Z", "`same = rawequal(Z:cuda(1), Z)`" },
  { "n = len(x)", "`n = #x`" },
  { 'print(f"{x}")', "`print(tostring(x))`" },
  { "for i in range(3): print(i)", "`for i = 0, 2 do print(i) end`" },
  { "def f(x):", "`function f(x) ... end`" },
  { "torch.tensor([[1, 2], [3, 4]])", "`torch.tensor({{1, 2}, {3, 4}})`" },
  { "if x is not None:", "`if x ~= nil then ... end`" },
}

describe("Python spellings at the prompt", function()
  for _, case in ipairs(SPELLINGS) do
    it("`" .. case[1] .. "` gets " .. case[2], function()
      local _, err = R.prompt({ "x = torch.ones(2, 2)", case[1], "print('after')" })
      assert.truthy(has(err, "hint: this looks like Python"), err)
      assert.truthy(has(err, case[2]), err)
    end)
  end

  it("a Python block header is an error with its hint, not a continuation prompt", function()
    local out, err = R.prompt({ "for i in range(3):", "print('next line runs')" })
    assert.truthy(has(err, "`for i = 0, 2 do ... end`"), err)
    assert.truthy(has(out, "next line runs"), out)
  end)

  it("True, False and None read as unset globals get a hint; set ones do not", function()
    local out = R.prompt({ "flag = True", "y = None", "False" })
    assert.truthy(has(out, "hint: `True` is Python; Lua spells it `true`"), out)
    assert.truthy(has(out, "hint: `None` is Python; Lua spells it `nil`"), out)
    assert.truthy(has(out, "hint: `False` is Python; Lua spells it `false`"), out)
    local out2 = R.prompt({ "True = 1", "print(True)" })
    assert.falsy(has(out2, "hint:"), out2)
    -- in a string or as a field it is not the global
    local out3 = R.prompt({ "print('True or None')", "t = {None = 1}", "print(t.None)" })
    assert.falsy(has(out3, "hint:"), out3)
  end)

  it("Lua that only looks like it gets no Python hint", function()
    local out, err = R.prompt({ "t = {[1] = 2, x = 3}", "print(#t, t[1], t.x)", "s = [[a [1, 2] b]]",
      "print(s)", "print(f)" })
    assert.falsy(has(err, "hint"), err)
    assert.falsy(has(out, "hint"), out)
    assert.truthy(has(out, "1\t2\t3"), out)
  end)
end)

describe("Python spellings in a script", function()
  for _, case in ipairs(SPELLINGS) do
    it("`" .. case[1] .. "` gets " .. case[2], function()
      local dir = R.tmpdir()
      R.write_file(dir .. "/slip.lua", "x = torch.ones(2, 2)\n" .. case[1] .. "\nprint(x)\n")
      local _, err, code = R.run({ dir .. "/slip.lua" })
      os.execute("rm -rf " .. R.quote(dir))
      assert.are.equal(1, code)
      assert.truthy(has(err, "slip.lua:"), err)
      assert.truthy(has(err, case[2]), err)
    end)
  end

  it("ordinary errors get no Python hint", function()
    local dir = R.tmpdir()
    R.write_file(dir .. "/ok.lua", "local t = {[1] = 2}\nerror('plain failure')\n")
    local _, err, code = R.run({ dir .. "/ok.lua" })
    os.execute("rm -rf " .. R.quote(dir))
    assert.are.equal(1, code)
    assert.truthy(has(err, "plain failure"), err)
    assert.falsy(has(err, "hint"), err)
  end)
end)

describe("Python spellings in gshell -e", function()
  it("the code given with -e gets the same hints", function()
    local _, err, code = R.run({ "-e", "x = torch.ones(2, device='cpu')" })
    assert.are.equal(1, code)
    assert.truthy(has(err, "`x = torch.ones(2, {device = 'cpu'})`"), err)
    local _, err2 = R.run({ "-e", "print(len(torch.ones(3)))" })
    assert.truthy(has(err2, "`print(#torch.ones(3))`"), err2)
    local _, err3 = R.run({ "-e", "error('plain')" })
    assert.falsy(has(err3, "hint"), err3)
  end)
end)

describe("Python spellings in notebook cells", function()
  it("every spelling's cell shows its Lua spelling; the cells after it run", function()
    local dir = R.tmpdir()
    local cells = { "-- %%\nx = torch.ones(2, 2)" }
    for _, case in ipairs(SPELLINGS) do cells[#cells + 1] = "-- %%\n" .. case[1] end
    cells[#cells + 1] = "-- %%\nprint('last cell ran')"
    R.write_file(dir .. "/nb.lua", table.concat(cells, "\n") .. "\n")
    local out, err, code = R.run({ "--notebook", dir .. "/nb.lua" })
    os.execute("rm -rf " .. R.quote(dir))
    assert.are.equal(1, code)
    for _, case in ipairs(SPELLINGS) do assert.truthy(has(out, case[2]), case[1] .. "\n" .. out .. err) end
    assert.truthy(has(out, "last cell ran"), out)
  end)
end)

describe("Python spellings in the gpu lesson", function()
  it("the step that teaches torch.tensor({1, 2, 3}) translates torch.tensor([1, 2, 3])", function()
    local dir = R.tmpdir()
    local out, err = R.run({ "--lesson", "gpu", "--repl-stdin" }, table.concat({
      "cpu, gpu, gpu1 = torch.device('cpu'), torch.device('cuda'), torch.device('cuda:1')",
      "n = torch.cuda.device_count()",
      "g, g10, all = try_gpu(), try_gpu(10), try_all_gpus()",
      "x = torch.tensor([1, 2, 3])",
      "x = torch.tensor({1, 2, 3})",
    }, "\n") .. "\n", { GSHELL_LESSON_STATE = dir .. "/state" })
    os.execute("rm -rf " .. R.quote(dir))
    local all = out .. err
    assert.truthy(has(all, "Tensors start on the CPU"), all)
    assert.truthy(has(all, "`x = torch.tensor({1, 2, 3})`"), all)
    assert.truthy(has(all, "Storage on the GPU"), all)  -- the right spelling passed the step
  end)
end)

describe("hints reach scripts and chained calls", function()
  it("X.cuda(1) in a script names the colon form in the error itself", function()
    local dir = R.tmpdir()
    R.write_file(dir .. "/slip.lua", "local X = torch.ones(2)\nZ = X.cuda(1)\n")
    local _, err, code = R.run({ dir .. "/slip.lua" })
    os.execute("rm -rf " .. R.quote(dir))
    assert.are.equal(1, code)
    assert.truthy(has(err, "slip.lua:2: bad argument #1 to 'cuda': expected a tensor, got number; " ..
      "a method needs its tensor before a colon: write `x:cuda(...)`, not `x.cuda(...)`"), err)
  end)

  it("the colon form survives pcall and chained calls", function()
    local out = R.run({ "-e", [[
      print(select(2, pcall(function() return torch.arange(6).reshape(2, 3) end)))
      print(select(2, pcall(function() return torch.ones(2):float().mean() end)))
      print(select(2, pcall(torch.exp, 'a')))]] })
    assert.truthy(has(out, "bad argument #1 to 'reshape': expected a tensor, got number; a method needs its tensor " ..
      "before a colon: write `x:reshape(...)`"), out)
    assert.truthy(has(out, "write `x:mean(...)`"), out)
    -- a plain call (no field access) gets the plain message
    assert.truthy(has(out, "bad argument #1: expected a tensor, got string\n"), out)
  end)

  it("at the prompt the specific hint replaces the generic clause (said once)", function()
    local _, err = R.prompt({ "x = torch.ones(2, 3)", "x.cuda(1)" })
    assert.truthy(has(err, "hint: `x.cuda(1)` calls the method without its object; Lua needs a colon: `x:cuda(1)`"), err)
    assert.falsy(has(err, "x:cuda(...)"), err)
  end)

  it("net[0] with net undefined says net is not defined; with net defined, positions are 1-based", function()
    local _, err = R.prompt({ "net[0]", "net = nn.Sequential(nn.Linear(2, 1))", "print(net[0].weight)" })
    assert.truthy(has(err, "hint: `net` is not defined (nil)"), err)
    assert.truthy(has(err, "hint: positions are 1-based in Lua: the first is `net[1]`"), err)
    local first = err:find("not defined", 1, true)
    assert.falsy(err:sub(1, first):find("1-based", 1, true), err)
  end)
end)
