-- No silent loops (issue 34, item 2): iterating a DataLoader the Python
-- way raises at once naming the fix, a one-line Python block header is
-- reported at once at a terminal, and a module method called with a dot
-- names the colon form even inside pcall.
local R = require("gshell_run")

local function has(s, piece) return s:find(piece, 1, true) ~= nil end

local LOADER = "L = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.ones(10, 2), torch.arange(10)), " ..
  "{batch_size = 4})"

describe("a DataLoader looped over the Python way", function()
  it("`for X, y in loader do` raises at the first use of y, naming :enumerate()", function()
    local out, err = R.prompt({ LOADER, "for X, y in L do print(y) end", "print('after')" })
    assert.truthy(has(err, "`for X, y in loader do` gives X the whole batch {X, y} and y nothing"), err)
    assert.truthy(has(err, "for i, X, y in loader:enumerate() do"), err)
    assert.falsy(has(out, "nil"), out)
    assert.truthy(has(out, "after"), out)
  end)

  it("`ipairs(loader)` raises at once instead of running zero times", function()
    local out, err = R.prompt({ LOADER, "n = 0", "for X, y in ipairs(L) do n = n + 1 end", "print(n)" })
    assert.truthy(has(err, "a DataLoader is not a list (ipairs over it would run zero times)"), err)
    assert.truthy(has(err, "loader:enumerate()"), err)
    assert.truthy(has(out, "0"), out)
  end)

  it("a batch list answers .shape with the fix; the right loops still work", function()
    local out, err = R.prompt({ LOADER, "for b in L do print(b.shape) end",
      "for b in L do print(#b, b[1].shape, b[2]:numel()) end",
      "for i, X, y in L:enumerate() do print(i, X.shape) end" })
    assert.truthy(has(err, "a batch is a list {X, y}, not a tensor: it has no field 'shape'"), err)
    assert.truthy(has(out, "2\ttorch.Size([4, 2])\t4"), out)
    assert.truthy(has(out, "3\ttorch.Size([2, 2])"), out)
  end)

  it("the book's `for X, y in train_iter:` gets the enumerate spelling", function()
    local _, err = R.prompt({ LOADER, "for X, y in L:" })
    assert.truthy(has(err, "`for _, X, y in L:enumerate() do ... end`"), err)
  end)
end)

describe("a one-line Python block header", function()
  it("is reported at once at a terminal, and the next line runs", function()
    local out, ok = R.pty({
      { expect = "gshell> " },
      { send = "net = nn.Linear(2, 3)\r" },
      { expect = "gshell> " },
      { send = "for p in net.parameters(): print(p.shape)\r" },
      { expect = "for _, p in ipairs\\(net:parameters\\(\\)\\) do print\\(p.shape\\) end" },
      { expect = "gshell> " },
      { send = "print('next' .. 'line')\r" },
      { expect = "nextline" },
      { expect = "gshell> " },
      { send = "\4" },
    })
    assert.is_true(ok, out)
    assert.falsy(has(out, "...> "), out)
  end)
end)

describe("module methods called with a dot", function()
  it("name the colon form inside pcall and nested calls", function()
    local out = R.prompt({ "net = nn.Linear(2, 2)",
      "print(pcall(function() return net.parameters() end))",
      "print(pcall(function() return net.to(torch.device('cpu')) end))",
      "print(pcall(function() return optim.SGD(net.parameters(), {lr = 0.1}) end))" })
    assert.truthy(has(out, "parameters: expected a module before the colon, got nil; a method needs its module " ..
      "before a colon: write `net:parameters(...)`, not `net.parameters(...)`"), out)
    assert.truthy(has(out, "to: expected a module before the colon, got a torch.device (cpu)"), out)
    assert.truthy(has(out, "write `net:to(...)`"), out)
    assert.falsy(has(out, "table index is nil"), out)
    assert.falsy(has(out, "_apply"), out)
  end)

  it("at the prompt the hint with the real object replaces the clause", function()
    local _, err = R.prompt({ "net = nn.Linear(2, 2)", "net.parameters()" })
    assert.truthy(has(err, "hint: `net.parameters()` calls the method without its object; Lua needs a colon"), err)
    assert.falsy(has(err, "a method needs its module before a colon"), err)
  end)
end)
