-- Every "in Lua:" hint runs when pasted (issue 34, item 1). Each case is
-- a line of the book's Python typed at the prompt after some setup: the
-- spec takes the Lua the hint gives, pastes it into a fresh session after
-- the same setup, and checks that it runs and does what the Python does
-- (the expected values are PyTorch's, with its 0-based dims).
local R = require("gshell_run")

local function has(s, piece) return s:find(piece, 1, true) ~= nil end

local LOADER = "train_iter = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.ones(10, 2), " ..
  "torch.arange(10)), {batch_size = 4})"

-- { setup lines, the Python line, the hint's Lua (exactly), lines run after
-- the pasted hint, what they must print; body: the code put in place of
-- the hint's `...` }
local CORPUS = {
  { {}, "train_iter, test_iter = d2l.load_data_fashion_mnist(batch_size=256)",
    "train_iter, test_iter = d2l.load_data_fashion_mnist(256)", { "print(#train_iter, #test_iter)" }, "235\t40" },
  { {}, "net = nn.Sequential(nn.Conv2d(1, 6, kernel_size=5, padding=2), nn.Sigmoid(), " ..
      "nn.AvgPool2d(kernel_size=2, stride=2), nn.Conv2d(6, 16, kernel_size=5), nn.Sigmoid(), " ..
      "nn.AvgPool2d(kernel_size=2, stride=2), nn.Flatten(), nn.Linear(16 * 5 * 5, 120), nn.Sigmoid(), " ..
      "nn.Linear(120, 84), nn.Sigmoid(), nn.Linear(84, 10))",
    "net = nn.Sequential(nn.Conv2d(1, 6, 5, {padding = 2}), nn.Sigmoid(), nn.AvgPool2d(2, {stride = 2}), " ..
      "nn.Conv2d(6, 16, 5), nn.Sigmoid(), nn.AvgPool2d(2, {stride = 2}), nn.Flatten(), nn.Linear(16 * 5 * 5, 120), " ..
      "nn.Sigmoid(), nn.Linear(120, 84), nn.Sigmoid(), nn.Linear(84, 10))",
    { "print(net(torch.rand(2, 1, 28, 28)).shape)" }, "torch.Size([2, 10])" },
  { {}, "X = torch.rand(size=(1, 1, 28, 28), dtype=torch.float32)",
    "X = torch.rand({1, 1, 28, 28}, {dtype = torch.float32})", { "print(X.shape, X.dtype)" },
    "torch.Size([1, 1, 28, 28])\ttorch.float32" },
  -- PyTorch's dim=1 is the second dim: (1, 1, 2, 2) twice gives (1, 2, 2, 2)
  { { "X = torch.ones(1, 1, 2, 2)" }, "Y = torch.cat([X, X], dim=1)", "Y = torch.cat({X, X}, 2)",
    { "print(Y.shape)" }, "torch.Size([1, 2, 2, 2])" },
  { { "X = torch.arange(6):reshape(2, 3)" }, "s = X.sum(dim=0)", "s = X:sum(1)", { "print(s)" },
    "tensor([3, 5, 7])" },
  -- PyTorch: tensor([1, 0]) (0-based); gshell's indices are 1-based
  { { "X = torch.tensor({{1, 5, 2}, {7, 0, 3}})" }, "a = X.argmax(axis=1)", "a = X:argmax(2)", { "print(a)" },
    "tensor([2, 1])" },
  { { "net = nn.Linear(2, 3)" }, "trainer = torch.optim.SGD(net.parameters(), lr=0.9)",
    "trainer = torch.optim.SGD(net:parameters(), {lr = 0.9})", { "print(trainer.param_groups[1].lr)" }, "0.9" },
  { { "X = torch.ones(2)" }, "with torch.profiler.profile() as prof:",
    "prof = torch.profiler.profile(function() ... end)", { "print(Y, prof ~= nil)" }, "tensor([2., 2.])\ttrue",
    body = "Y = X + 1" },
  { { LOADER }, "for batch in train_iter:", "for batch in train_iter do ... end", { "print(n)" }, "3",
    body = "n = (n or 0) + 1" },
  { { LOADER }, "for X, y in train_iter:", "for _, X, y in train_iter:enumerate() do ... end", { "print(n)" }, "10",
    body = "n = (n or 0) + y:numel()" },
  { { LOADER }, "for i, (X, y) in enumerate(train_iter):", "for i, X, y in train_iter:enumerate() do ... end  -- (i from 1)",
    { "print(last)" }, "3", body = "last = i" },
  { { "net = nn.Linear(2, 3)" }, "for p in net.parameters():", "for _, p in ipairs(net:parameters()) do ... end",
    { "print(n)" }, "9", body = "n = (n or 0) + p:numel()" },
  { { "net = nn.Linear(2, 3)" }, "for p in net.parameters(): print(p.shape)",
    "for _, p in ipairs(net:parameters()) do print(p.shape) end", {}, "torch.Size([3, 2])\ntorch.Size([3])" },
  { {}, "device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')",
    "device = torch.device((torch.cuda.is_available() and 'cuda' or 'cpu'))", { "print(device)" }, "cpu" },
  { { LOADER }, "X, y = next(iter(train_iter))", "X, y = table.unpack(train_iter:iter()())",
    { "print(X.shape, y)" }, "torch.Size([4, 2])\ttensor([0, 1, 2, 3])" },
  { { "layer = nn.Linear(2, 2)" }, "print(layer.__class__.__name__)", "print(layer.__name)", {}, "Linear" },
  { { LOADER }, "n = len(train_iter)", "n = #train_iter", { "print(n)" }, "3" },
  { {}, "x = torch.ones(2, 3, device=try_gpu())", "x = torch.ones(2, 3, {device = try_gpu()})",
    { "print(x.shape)" }, "torch.Size([2, 3])" },
  { { "x = torch.arange(6):reshape(2, 3)" }, "col = x[:, 1]", "col = x[{{}, 2}]", { "print(col)" }, "tensor([1, 4])" },
  { { "X = torch.ones(2, 2)" }, "Y = X.reshape((4, 1))", "Y = X:reshape({4, 1})", { "print(Y.shape)" },
    "torch.Size([4, 1])" },
}

-- The Lua of the hint in err (between "in Lua: `" and the last backtick).
local function hinted(err)
  return err:match("in Lua: `(.*)`%s*$") or err:match("in Lua: `(.-)`\n")
end

describe("the pasted-hint corpus: the book's Python lines", function()
  for _, case in ipairs(CORPUS) do
    local setup, py, want, after, expect = case[1], case[2], case[3], case[4], case[5]
    it("`" .. py .. "` hints `" .. want .. "`, which runs", function()
      local lines = {}
      for _, l in ipairs(setup) do lines[#lines + 1] = l end
      lines[#lines + 1] = py
      local _, err = R.prompt(lines)
      local lua = hinted(err)
      assert.are.equal(want, lua, err)
      -- paste it, the block's body filled in where the hint has `...`
      if case.body then lua = lua:gsub(" %.%.%. ", " " .. case.body .. " ") end
      local run = {}
      for _, l in ipairs(setup) do run[#run + 1] = l end
      run[#run + 1] = lua
      for _, l in ipairs(after) do run[#run + 1] = l end
      local out, err2 = R.prompt(run)
      assert.are.equal("", err2, lua)
      assert.truthy(has(out, expect), out)
    end)
  end

  it("x.repeat(2) names x:tile and the bracket spelling of the keyword method", function()
    local _, err = R.prompt({ "x = torch.tensor({1, 2})", "y = x.repeat(2)" })
    assert.truthy(has(err, "`repeat` is a Lua keyword"), err)
    assert.truthy(has(err, "`y = x:tile(2)`"), err)
    assert.truthy(has(err, "x['repeat'](x, ...)"), err)
    -- both spellings run when pasted, with PyTorch's x.repeat(2): [1, 2, 1, 2]
    local out, err2 = R.prompt({ "x = torch.tensor({1, 2})", "y = x:tile(2)", "y:tolist()",
                                 "x['repeat'](x, 2):tolist()" })
    assert.are.equal("", err2)
    local _, n = out:gsub("{1, 2, 1, 2}", "")
    assert.are.equal(2, n, out)
  end)

  it("a keyword the hints cannot place states the rule rather than a line", function()
    local _, err = R.prompt({ "y = myfun(1, scale=2)" })
    assert.truthy(has(err, "Lua has none: a gshell function takes its parameters by position and its options in a " ..
      "table last"), err)
    assert.truthy(has(err, "`?myfun`"), err)
    assert.falsy(has(err, "in Lua:"), err)
  end)

  it("hints come only from the line that failed, never from Lua or a comment", function()
    -- a syntax error on line 2; line 1 is valid Lua with a function body
    local _, err = R.prompt({ 'check = function(...) end', '',
      'do check("a", function() local Y, s = 1, 2; return Y end)', 'x = = 1 end' })
    assert.falsy(has(err, "hint"), err)
    -- a runtime error on a line whose comment mentions len(...)
    local _, err2 = R.prompt({ "t = {1, 2} -- len(vocab) in Python", "print(t.x.y)" })
    assert.falsy(has(err2, "#vocab"), err2)
    assert.falsy(has(err2, "hint"), err2)
  end)

  it("quit(), exit(), exit and clear say how to leave or clear", function()
    local out, err = R.prompt({ "quit()", "exit()", "exit", "clear" })
    assert.truthy(has(err, "global 'quit'") and has(err, "Ctrl-D on an empty line leaves gshell"), err)
    assert.truthy(has(err, "global 'exit'"), err)
    assert.truthy(has(out, "Lua has no quit() or exit()"), out)
    assert.truthy(has(out, "in a lesson, `%lesson quit`"), out)
    assert.truthy(has(out, "`clear` is not a command here: Ctrl-L clears the terminal"), out)
  end)
end)

-- docs/shell.md's table of spellings is what the hints give: each typed
-- spelling of a row, translated, contains the row's Lua spelling at the
-- same position.
describe("docs/shell.md's table of Python spellings", function()
  -- the shell's modules from lua/, with the search path restored at once
  -- (busted runs every spec in one Lua: a lasting lua/ path would load
  -- lua/torch/*.lua in place of the built torch for the specs after this)
  local saved = package.path
  package.path = "lua/?.lua;" .. saved
  local pyhints = require("gshell.pyhints")
  require("gshell.pysigs")
  require("gshell.docs")  -- (pysigs looks methods up there, lazily)
  package.path = saved
  local doc = R.read_file("docs/shell.md")
  local tbl = doc:match("| typed | the hint's Lua |\n| %-%-%- | %-%-%- |\n(.-)\n\n")
  local function codes(cell)
    local t = {}
    for c in cell:gmatch("`([^`]+)`") do t[#t + 1] = c end
    return t
  end
  it("is found, with its rows", function()
    assert.truthy(tbl, "no table in docs/shell.md")
    assert.is_true(select(2, tbl:gsub("\n", "")) >= 20)
  end)
  for row in (tbl or ""):gmatch("[^\n]+") do
    local typed, lua = row:match("^| (.-) | (.-) |$")
    it(typed, function()
      local ins, outs = codes(typed), codes(lua)
      assert.is_true(#ins > 0 and #outs > 0, row)
      for i, py in ipairs(ins) do
        if outs[i] then
          local got = pyhints.translate(py)
          assert.truthy(got and has(got, outs[i]), py .. " -> " .. tostring(got) .. ", the table says " .. outs[i])
        end
      end
    end)
  end
end)
