-- Every timing a learner sees says whether it is modelled (issue 29): on a
-- simulated GPU that models a real one, d2l's printed times (train_ch6's
-- examples/sec, Benchmark, a Timer) carry d2l.timing_note's words, the
-- same as %timeit's ("modelled on a Tesla V100-SXM2-16GB"); on the CPU and
-- with `host` (this machine's own time) they carry nothing.
local torch = require("torch")
local H = require("helpers")
local d2l = require("d2l")
local nn = torch.nn

-- n simulated devices with model `spec` for the test, restored after
local function with_model(spec, n) H.with_model(finally, spec, n or 2) end

-- what print() writes while fn runs, one string per call
local function printed(fn)
  local lines, saved = {}, _G.print
  _G.print = function(...)
    local t = table.pack(...)
    for i = 1, t.n do t[i] = tostring(t[i]) end
    lines[#lines + 1] = table.concat(t, "\t", 1, t.n)
  end
  local ok, err = pcall(fn)
  _G.print = saved
  assert(ok, err)
  return lines
end

local V100 = " (modelled on a Tesla V100-SXM2-16GB)"

describe("d2l.timing_note", function()
  it("names the modelled GPU of a device, a list of devices or the current one, as %timeit does", function()
    with_model("v100")
    assert.equal(V100, d2l.timing_note("cuda:0"))
    assert.equal(V100, d2l.timing_note(torch.device("cuda:1")))
    assert.equal(V100, d2l.timing_note({ "cuda:0", "cuda:1" }))
    assert.equal(V100, d2l.timing_note())
  end)

  it("names both models when the devices model different GPUs ('an' before NVIDIA)", function()
    with_model("v100,a100")
    assert.equal(" (modelled on a Tesla V100-SXM2-16GB and an NVIDIA A100-SXM4-80GB)",
      d2l.timing_note({ torch.device("cuda:0"), torch.device("cuda:1") }))
    assert.equal(" (modelled on an NVIDIA A100-SXM4-80GB)", d2l.timing_note("cuda:1"))
  end)

  it("says nothing for the CPU, for host (this machine's time) and for a list of cpus", function()
    with_model("host")
    assert.equal("", d2l.timing_note("cpu"))
    assert.equal("", d2l.timing_note({ "cpu", "cpu" }))
    assert.equal("", d2l.timing_note("cuda:0"))
    assert.equal("", d2l.timing_note())
  end)
end)

describe("d2l.Benchmark and d2l.Timer on a modelled GPU", function()
  it("a scope that ran work on the modelled GPU says so; one that ran only CPU work does not", function()
    with_model("v100")
    local x = torch.ones(64, 64, { device = "cuda:0" })
    local lines = printed(function()
      do
        local _ <close> = d2l.Benchmark("cpu")
        torch.ones(8, 8):mm(torch.ones(8, 8))
      end
      d2l.Benchmark("gpu"):run(function()
        x:mm(x)
        torch.cuda.synchronize()
      end)
    end)
    assert.matches("^cpu: %d+%.%d%d%d%d sec$", lines[1])
    assert.matches("^gpu: %d+%.%d%d%d%d sec" .. V100:gsub("%p", "%%%0") .. "$", lines[2])
  end)

  it("a Timer that timed modelled work says so when printed; on host it does not", function()
    with_model("v100")
    local x = torch.ones(64, 64, { device = "cuda:0" })
    local t = d2l.Timer()
    x:mm(x)
    torch.cuda.synchronize()
    t:stop()
    assert.matches("^d2l%.Timer%(1 times, %d+%.%d+ sec in all, modelled on a Tesla V100%-SXM2%-16GB%)$", tostring(t))
    torch.cuda._set_gpu_model("host")
    local h = d2l.Timer()
    x:mm(x)
    torch.cuda.synchronize()
    h:stop()
    assert.matches("^d2l%.Timer%(1 times, %d+%.%d+ sec in all%)$", tostring(h))
  end)
end)

describe("d2l.train_ch6's closing line", function()
  local function closing(device)
    torch.manual_seed(1)
    local data = { { torch.randn(4, 6), torch.tensor({ 1, 2, 3, 4 }) } }
    local net = nn.Sequential(nn.Linear(6, 4))
    local lines = printed(function() d2l.train_ch6(net, data, data, 1, 0.1, device) end)
    return lines[#lines]
  end

  it("says the rate is modelled on the V100 on a modelled cuda:0", function()
    with_model("v100")
    assert.matches("^%d+%.%d examples/sec on cuda:0" .. V100:gsub("%p", "%%%0") .. "$", closing("cuda:0"))
  end)

  it("is the book's line on the CPU and on host", function()
    with_model("host")
    assert.matches("^%d+%.%d examples/sec on cpu$", closing("cpu"))
    assert.matches("^%d+%.%d examples/sec on cuda:0$", closing("cuda:0"))
  end)
end)
