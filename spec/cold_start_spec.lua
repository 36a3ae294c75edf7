-- cold_start_spec.lua: GSHELL_SIM_CONTEXT_MS, the modelled cost of creating
-- a CUDA context at a simulated device's first use (the chapter's
-- cold-start puzzle). The banner and torch.cuda.smi() say when it is on;
-- each device pays it once per process, on the host, at its first use.
local R = require("gshell_run")

local function has(s, piece) return s:find(piece, 1, true) ~= nil end

local SHOW = [[
print(require("gshell.repl").banner())
print(torch.cuda.smi_text())
print("context_ms", torch.cuda._sim_context_ms())
]]

-- Seconds taken by the first and the second allocation on cuda:0, then
-- the first on cuda:1.
local TIMES = [[
local function t(fn) local t0 = torch.clock(); fn(); return torch.clock() - t0 end
local a = t(function() torch.ones(4, {device = "cuda:0"}) end)
local b = t(function() torch.ones(4, {device = "cuda:0"}) end)
local c = t(function() torch.ones(4, {device = "cuda:1"}) end)
print(string.format("times %.4f %.4f %.4f", a, b, c))
]]

describe("GSHELL_SIM_CONTEXT_MS", function()
  it("is named by the banner and smi() when on", function()
    local out, err, code = R.run({ "-e", SHOW }, "", { GSHELL_SIM_GPUS = "2", GSHELL_SIM_CONTEXT_MS = "250",
      CUDA_VISIBLE_DEVICES = "" })
    assert.are.equal(0, code, err)
    assert.truthy(has(out, "  cold start modelled: each device's first use waits 250 ms (GSHELL_SIM_CONTEXT_MS)"), out)
    assert.truthy(has(out, "Cold start modelled: the first use of each device in this process waits 250 ms"), out)
    assert.truthy(has(out, "(GSHELL_SIM_CONTEXT_MS=250)"), out)
    assert.truthy(has(out, "context_ms\t250"), out)
  end)

  it("is not mentioned when off (the default)", function()
    local out, err, code = R.run({ "-e", SHOW }, "", { GSHELL_SIM_GPUS = "2", CUDA_VISIBLE_DEVICES = "" })
    assert.are.equal(0, code, err)
    assert.falsy(out:lower():find("cold start", 1, true), out)
    assert.truthy(has(out, "context_ms\t0"), out)
  end)

  it("makes each device's first use wait, once", function()
    local out, err, code = R.run({ "-e", TIMES }, "", { GSHELL_SIM_GPUS = "2", GSHELL_SIM_CONTEXT_MS = "250",
      CUDA_VISIBLE_DEVICES = "" })
    assert.are.equal(0, code, err)
    local a, b, c = out:match("times ([%d.]+) ([%d.]+) ([%d.]+)")
    a, b, c = tonumber(a), tonumber(b), tonumber(c)
    assert.is_true(a >= 0.25, out)            -- the first use of cuda:0 paid
    assert.is_true(c >= 0.25, out)            -- so did cuda:1's
    assert.is_true(b < 0.25, out)             -- the second use of cuda:0 did not
  end)
end)
