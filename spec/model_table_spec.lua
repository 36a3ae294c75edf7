-- tools/model_table.lua (issue 29): the GPU models' microbenchmarks, each
-- modelled value beside the published figure. The script runs (its quick
-- rows: those that depend on the model alone), every row it prints is in
-- docs/gpu-models.md's table as printed (so the doc is regenerated when the
-- model changes), and the key rows hold: a copy reaches close to the
-- memory bandwidth without passing it, a large product approaches the
-- peak without passing it, an empty kernel costs the model's launch.
local R = require("gshell_run")

describe("tools/model_table.lua", function()
  local out, err, code
  setup(function()
    out, err, code = R.run({ "tools/model_table.lua", "quick" }, "",
      { GSHELL_SIM_GPUS = "2", CUDA_VISIBLE_DEVICES = "", GSHELL_GPU_MODEL = "v100" })
  end)

  it("runs and prints a table for each model", function()
    assert.are.equal(0, code, out .. err)
    for _, key in ipairs({ "t4", "v100", "a100", "h100", "h200" }) do
      assert.truthy(out:find("(`" .. key .. "`)", 1, true), key .. " missing:\n" .. out)
    end
  end)

  it("prints what docs/gpu-models.md shows, row by row", function()
    local doc = R.read_file("docs/gpu-models.md")
    local n = 0
    for line in out:gmatch("[^\n]+") do
      if line:find("^#### ") or line:find("^| [^-]") then
        n = n + 1
        assert.truthy(doc:find(line, 1, true), "docs/gpu-models.md lacks the line\n" .. line ..
          "\n(regenerate the table: build/gshell --sim-gpus 2 tools/model_table.lua)")
      end
    end
    assert.is_true(n > 50, n .. " lines")
  end)

  -- the value of a row in the V100's table, and its published figure
  local function row(model, label)
    local part = out:match("%(`" .. model .. "`%)\n(.-)\n\n") or out:match("%(`" .. model .. "`%)\n(.*)$")
    local line = part:match("\n(| " .. label:gsub("%p", "%%%0") .. " |[^\n]*)")
    assert(line, model .. ": no row " .. label)
    local v, p = line:match("^|[^|]*| ([%d.]+)[^|]*| ([%d.]*)")
    return tonumber(v), tonumber(p)
  end

  it("key rows hold: bandwidth, a large SGEMM, the empty kernel", function()
    for _, key in ipairs({ "t4", "v100", "a100", "h100", "h200" }) do
      local bw, pub = row(key, "bandwidth: copy_ of 64 MiB")
      assert.truthy(bw and pub, key)
      -- both in GB/s or both in TB/s for these sizes (320 GB/s .. 4.8 TB/s)
      assert.is_true(bw <= pub and bw >= 0.65 * pub, key .. ": " .. bw .. " against " .. pub)
      local g, peak = row(key, "SGEMM 8192")
      assert.is_true(g <= peak and g >= 0.85 * peak, key .. ": SGEMM 8192 " .. g .. " of " .. peak)
      local e = row(key, "empty kernel on the device")
      assert.are.equal(2.0, e, key)
    end
  end)
end)
