-- The learner's shell: Python habits and slips get a hint naming the fix,
-- errors name the user's line, Ctrl-D drops an unfinished statement.
-- Runs $GSHELL_BUILD/gshell as a child process (spec/support/gshell_run.lua).
local R = require("gshell_run")

local function has(s, piece) return s:find(piece, 1, true) ~= nil end

describe("Ctrl-D", function()
  it("on a continuation line drops the statement; on an empty prompt leaves", function()
    local out, ok = R.pty({
      { expect = "gshell> " },
      { send = "for i = 1, 2 do\r" },
      { expect = "\\.\\.\\.> " },
      { send = "print('inside', i)\r" },
      { expect = "\\.\\.\\.> " },
      { send = "\4" },
      { expect = "abandoned" },
      { expect = "gshell> " },
      { send = "print('still' .. 'here')\r" },
      { expect = "stillhere" },
      { expect = "gshell> " },
      { send = "\4" },
    }, {})
    assert.is_true(ok, out)
    assert.falsy(has(out, "inside\t1"), out)
  end)

  it("at the end of piped input inside a statement says so and exits 0", function()
    local out, _, code = R.prompt({ "x = 1", "for i = 1, 2 do", "  print(i)" })
    assert.are.equal(0, code)
    assert.are.equal("(unfinished statement abandoned; Ctrl-D again to leave)\n", out)
  end)
end)
