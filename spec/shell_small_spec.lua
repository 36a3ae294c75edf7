-- Small things a newcomer meets (issue 22, item 7): a misspelt magic gets a
-- did-you-mean, completion hides the library's internals and offers fields
-- only after `.`, ?torch.cuda lists its members, help(x.device) says what a
-- device is. (--trace with a profiling script: spec/profiler_spec.lua.)
local R = require("gshell_run")

local function has(s, piece) return s:find(piece, 1, true) ~= nil end

describe("the shell's small things", function()
  it("%timit and %devcies name the magic meant", function()
    local _, err = R.prompt({ "%timit 1 + 1", "%devcies", "%zzzzzz" })
    assert.truthy(has(err, "unknown magic %timit (did you mean %timeit?)"), err)
    assert.truthy(has(err, "unknown magic %devcies (did you mean %devices?)"), err)
    assert.truthy(has(err, "unknown magic %zzzzzz (%magic lists them)"), err)
  end)

  it("completion hides Event_check and Stream_mt; x: offers methods only, x. fields too", function()
    local out = R.run({ "-e", [[
      local c = require("gshell.complete")
      local s = require("gshell.repl").start()
      _G.x = torch.ones(2)
      print("cuda", table.concat(c.complete(s, "torch.cuda.", ""), " "))
      print("colon", table.concat(c.complete(s, "x:d", ""), " "))
      print("dot", table.concat(c.complete(s, "x.d", ""), " "))
      print("typed", table.concat(c.complete(s, "torch.cuda.Stream_", ""), " "))]] })
    local cuda = out:match("cuda\t([^\n]*)")
    assert.falsy(has(cuda, "_check"), cuda)
    assert.falsy(has(cuda, "_mt"), cuda)
    assert.truthy(has(cuda, "torch.cuda.Stream"), cuda)
    local colon = out:match("colon\t([^\n]*)")
    assert.falsy(has(colon, "x:device"), colon)
    assert.falsy(has(colon, "x:dtype"), colon)
    assert.truthy(has(colon, "x:detach"), colon)
    local dot = out:match("dot\t([^\n]*)")
    assert.truthy(has(dot, "x.device") and has(dot, "x.dtype"), dot)
    -- typing the underscore asks for it
    assert.truthy(has(out:match("typed\t([^\n]*)"), "torch.cuda.Stream_mt"), out)
  end)

  it("?torch.cuda lists its members; help(x.device) describes a device", function()
    local out = R.prompt({ "?torch.cuda", "x = torch.ones(2, {device = 'cuda:1'})", "help(x.device)" },
      { "--sim-gpus", "2" })
    assert.truthy(has(out, "Members: Event, Stream, comm, current_device"), out)
    assert.falsy(has(out, "Event_check"), out)
    assert.truthy(has(out, "a device: cuda:1 (type 'cuda', index 1)"), out)
    assert.truthy(has(out, "simulated: host memory"), out)
  end)

  it("tracebacks stop at the user's code: library frames become one line", function()
    local out = R.prompt({ "net = nn.Linear(3, 1)", "net(torch.ones(2, 2))", "%tb" })
    assert.truthy(has(out, "mat1 and mat2 shapes cannot be multiplied"), out)
    assert.truthy(has(out, "inside gshell's library)"), out)
    assert.truthy(has(out, "stdin:1: in main chunk"), out)
    assert.falsy(has(out, "lua/torch/"), out)
  end)
end)

describe("the notebook's HTML tensor view", function()
  it("shows the repr's digits and its grad_fn; falls back when the repr has a scale or a summary", function()
    local out = R.run({ "-e", [[
      local H = require("gshell.html")
      local x = torch.tensor({{1.23456, -2}, {3, 4}}, {requires_grad = true})
      print(H.repr(x * 2))
      print(H.repr(torch.tensor({1.5, 2.25}, {requires_grad = true})))]] })
    assert.truthy(out:find("<td>2.4691</td><td>-4.0000</td>", 1, true), out)
    assert.truthy(out:find("grad_fn=&lt;MulBackward0&gt;</caption>", 1, true), out)
    assert.truthy(out:find("requires_grad=True</caption>", 1, true), out)
    assert.truthy(out:find("white-space: nowrap", 1, true), out)
  end)
end)

describe("examples/gpu_chapter.lua", function()
  it("prints every error one way: 'error: ' and the message, never its own file:line", function()
    local out, err, code = R.run({ "examples/gpu_chapter.lua" }, "", { GSHELL_SIM_GPUS = "1" })
    assert.are.equal(0, code, err)
    local n = 0
    for line in out:gmatch("[^\n]+") do
      if line:find("^error: ") then n = n + 1 end
      assert.falsy(line:find("gpu_chapter.lua:%d+:"), line)
      assert.falsy(line:find("fails with", 1, true), line)
    end
    assert.are.equal(3, n, out)  -- cuda:1 missing, X + Y, the sync debug mode
  end)
end)
