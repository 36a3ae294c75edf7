-- %timeit on a simulated GPU that models a real one (issue 29): loops and
-- runs are chosen by this machine's real time, the line reports the
-- modelled time per loop and, beside it, what computing it here took;
-- on "host", or for work the model does not change, one time as before.
local R = require("gshell_run")

local function has(s, piece) return s:find(piece, 1, true) ~= nil end

-- IPython's time format back to seconds
local function secs(n, unit)
  local scale = { s = 1, ms = 1e-3, ["µs"] = 1e-6, ns = 1e-9 }
  return tonumber(n) * assert(scale[unit], unit)
end

describe("%timeit on a modelled GPU", function()
  it("reports the modelled time per loop and the real one beside it", function()
    local out, err = R.prompt({ "a = torch.randn(1024, 1024, {device = 'cuda'})", "%timeit -n 2 -r 2 a:mm(a)" },
      { "--sim-gpus", "1", "--gpu-model", "v100" })
    assert.are.equal("", err)
    local m, mu, r, ru = out:match("([%d.]+) (%S+) ± %S+ %S+ per loop modelled on a Tesla V100%-SXM2%-16GB " ..
      "%(mean ± std%. dev%. of 2 runs, 2 loops each%); computing it here took ([%d.]+) (%S+) per loop")
    assert.truthy(m, out)
    -- a 1024^3 product is 2.1 GFLOP: about 0.15 ms at a V100's 15.7 TFLOP/s,
    -- far less than computing it on this machine's cores
    local modelled, real = secs(m, mu), secs(r, ru)
    assert.is_true(modelled > 0.1e-3 and modelled < 5e-3, out)
    assert.is_true(real > modelled, out)
  end)

  it("keeps one time on the host model, and for work the model leaves alone", function()
    local out, err = R.prompt({ "a = torch.randn(256, 256, {device = 'cuda'})", "%timeit -n 2 -r 2 a:mm(a)",
                                "x = torch.ones(100000)", "%timeit -n 5 -r 2 x:sum()" },
      { "--sim-gpus", "1", "--gpu-model", "host" })
    assert.are.equal("", err)
    local _, lines = out:gsub("per loop %(mean ± std%. dev%. of 2 runs, %d+ loops each%)\n", "")
    assert.are.equal(2, lines, out)
    assert.falsy(has(out, "modelled"), out)
    out, err = R.prompt({ "x = torch.ones(100000)", "%timeit -n 5 -r 2 x:sum()" }, { "--sim-gpus", "1" })
    assert.are.equal("", err)
    assert.falsy(has(out, "modelled"), out)
  end)

  it("-o gives the modelled times and the real mean beside them", function()
    local out, err = R.prompt({ "a = torch.randn(1024, 1024, {device = 'cuda'})",
                                "r = %timeit -q -o -n 1 -r 2 a:mm(a)",
                                "print(r.model, r.real > r.average, #r.all_runs)" },
      { "--sim-gpus", "1", "--gpu-model", "a100" })
    assert.are.equal("", err)
    assert.truthy(has(out, "a100\ttrue\t2"), out)
  end)

  it("%time adds the modelled time when the statement used a modelled GPU", function()
    local out, err = R.prompt({ "a = torch.randn(1024, 1024, {device = 'cuda'})", "%time b = a:mm(a)",
                                "%time s = 1 + 1" }, { "--sim-gpus", "1", "--gpu-model", "h100" })
    assert.are.equal("", err)
    local _, n = out:gsub("Modelled time on an NVIDIA H100 80GB HBM3: ", "")
    assert.are.equal(1, n, out)
    local _, walls = out:gsub("Wall time: ", "")
    assert.are.equal(2, walls, out)
  end)

  -- "an" before a vowel sound: the model's a_name (src/bind/lua_gpu_model.c),
  -- which d2l.timing_note says too
  it("says 'an NVIDIA A100' and 'a Tesla V100' in %timeit and %time", function()
    for _, c in ipairs({ { "a100", "an NVIDIA A100-SXM4-80GB" }, { "v100", "a Tesla V100-SXM2-16GB" } }) do
      local out, err = R.prompt({ "a = torch.ones(64, {device = 'cuda'})", "%timeit -n 1 -r 1 a:neg()",
                                  "%time b = a:neg()", "print(torch.cuda.gpu_model(0).a_name)" },
        { "--sim-gpus", "1", "--gpu-model", c[1] })
      assert.are.equal("", err)
      assert.truthy(has(out, " per loop modelled on " .. c[2] .. " (mean"), out)
      assert.truthy(has(out, "Modelled time on " .. c[2] .. ": "), out)
      assert.truthy(has(out, "\n" .. c[2] .. "\n"), out)
      assert.falsy(has(out, " a NVIDIA") or has(out, " an Tesla"), out)
    end
  end)
end)
