-- A module tree cannot contain itself, and a forward that calls its own
-- module again stops with a clear error instead of recursing (or, as tail
-- calls, looping) forever (issue 14).
local torch = require("torch")
local nn = torch.nn
local H = require("helpers")

describe("module cycles", function()
  it("refuses a module as its own child, by every way of adding one", function()
    local s = nn.Sequential(nn.Linear(1, 1))
    H.errors(function() s:add(s) end, { "cannot add child module '2' to Sequential", "a module cannot contain itself" })
    H.errors(function() s:add_module("me", s) end, "cannot contain itself")
    H.errors(function() s.me = s end, "cannot contain itself")
    H.errors(function() s[1] = s end, "cannot contain itself")
    assert.are.equal(1, #s)
    assert.are.same({ "1.weight", "1.bias" }, (function()
      local keys = {}
      for k in pairs(s:state_dict()) do keys[#keys + 1] = k end
      table.sort(keys, function(a, b) return a > b end)
      return keys
    end)())
  end)

  it("refuses a child that contains the parent further down", function()
    local a, b, c = nn.Sequential(), nn.Sequential(), nn.Sequential()
    a:add(b)
    b:add(c)
    H.errors(function() c:add(a) end, { "cannot add child module", "already contains this module" })
    H.errors(function() c.x = b end, "already contains this module")
    local l = nn.ModuleList({ nn.Identity() })
    H.errors(function() l:append(l) end, "cannot contain itself")
    -- sharing a module in two places is not a cycle
    local shared = nn.Linear(2, 2)
    local net = nn.Sequential(shared, nn.ReLU(), shared)
    assert.are.equal(3, #net)
    assert.are.equal(2, #net:parameters())
  end)

  it("stops a forward that calls its own module", function()
    local Loop = nn.Module:extend("Loop")
    function Loop:forward(x) return self(x) end
    local t0 = os.clock()
    H.errors(function() Loop()(torch.ones(1)) end, { "maximum module call depth", "Loop" })
    assert.is_true(os.clock() - t0 < 10)
    -- the count is undone by the error: ordinary calls still work
    local lin = nn.Linear(2, 1)
    assert.are.same({ 1 }, H.shape(lin(torch.ones(2))))
  end)

  it("allows deep but finite nesting", function()
    local net = nn.Identity()
    for _ = 1, 150 do net = nn.Sequential(net) end
    assert.are.same({ 1.0, 2.0 }, net(torch.tensor({ 1.0, 2.0 })):tolist())
  end)
end)
