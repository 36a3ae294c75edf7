-- The roofline picture of torch.cuda.explain (lua/torch/roofline.lua,
-- issue 29): at the terminal a memory-bound add lands left of the ridge
-- and a compute-bound big product right of it, under the roofs; the SVG
-- has the roofs, the ridge point and one labelled point per op; the TF32
-- tensor-core roof appears only when allow_tf32 is on; --notebook --md
-- writes the SVG beside the Markdown.
local torch = require("torch")
local H = require("helpers")
local R = require("gshell_run")

local function with_model(spec, n) H.with_model(finally, spec, n or 1) end

-- explain an add of two 1M-element vectors (1 FLOP per 12 bytes) and a
-- 1024^3 product (171 FLOP/byte): either side of the V100's 17.4 ridge
local function add_and_mm()
  local x = torch.ones(1 << 20, { device = "cuda:0" })
  local A = torch.ones(1024, 1024, { device = "cuda:0" })
  return torch.cuda.explain(function() local _ = x + x; _ = A:mm(A) end)
end

-- the column (in characters) of a letter on the plot's lines
local function find_cell(lines, ch)
  for y, l in ipairs(lines) do
    local body = l:match("^.-[│┤](.*)$")
    if body then
      local x = 0
      for _, c in utf8.codes(body) do
        x = x + 1
        if utf8.char(c) == ch then return x, y end
      end
    end
  end
end

describe("torch.cuda.explain's roofline", function()
  it("at the terminal: the add left of the ridge, the product right of it, within 80 columns", function()
    with_model("v100")
    torch.backends.cuda.matmul.allow_tf32 = false
    local ex = add_and_mm()
    local text = ex:picture()
    local lines = {}
    for l in (text .. "\n"):gmatch("(.-)\n") do lines[#lines + 1] = l end
    for _, l in ipairs(lines) do assert.is_true(utf8.len(l) <= 80, l) end
    local mm, add = ex.rows[1], ex.rows[2]
    assert.are.same({ "mm", "add" }, { mm.name, add.name })
    local rx, ry = find_cell(lines, "◆")
    local ax, ay = find_cell(lines, "a")   -- mm: the longest, first
    local bx, by = find_cell(lines, "b")
    assert.truthy(rx and ax and bx, text)
    assert.is_true(bx < rx and ax > rx, text)
    -- the product is near the FP32 roof (the ridge's row), the add far below it
    assert.is_true(math.abs(ay - ry) <= 1 and by > ry + 2, text)
    assert.truthy(text:find("a mm: 171 FLOP/byte, [%d.]+ TFLOP/s, compute%-bound"), text)
    assert.truthy(text:find("b add: 0.0833 FLOP/byte, [%d.]+ GFLOP/s, memory%-bound"), text)
    assert.truthy(text:find("roofs: FP32 15.7 TFLOP/s; the slope: 900 GB/s", 1, true), text)
    assert.truthy(text:find("◆ the ridge: 17.4 FLOP/byte (FP32)", 1, true), text)
    assert.falsy(text:find("TF32", 1, true), text)
    -- the explanation's text ends with it
    assert.truthy(tostring(ex):find(text, 1, true))
    -- a narrower terminal gets a narrower plot
    for l in ex:roofline():_repr_term_({ columns = 50 }):gmatch("([^\n]*)\n") do
      local axis = l:find("│", 1, true) or l:find("┤", 1, true) or l:find("└", 1, true)
      if axis then assert.is_true(utf8.len(l) <= 50, l) end
    end
  end)

  it("as SVG: the roofs, the ridge point, a labelled point per op", function()
    with_model("a100")
    torch.backends.cuda.matmul.allow_tf32 = false
    local svg = add_and_mm():_repr_svg_()
    assert.truthy(svg:match("^<svg [^>]*class=\"roofline\""), svg)
    local roofs = {}
    for unit, peak in svg:gmatch('<polyline class="roof" data%-unit="(%w+)" data%-peak="([^"]+)"') do
      roofs[#roofs + 1] = unit .. "=" .. peak
    end
    assert.are.same({ "fp32=1.95e+13" }, roofs)
    assert.truthy(svg:find(">FP32 roof 19.5 TFLOP/s</text>", 1, true), svg)
    assert.truthy(svg:find(">2.04 TB/s</text>", 1, true), svg)
    local ridge = svg:match('<circle class="ridge" data%-intensity="([^"]+)"')
    assert.are.equal(string.format("%.6g", 19.5e12 / 2039e9), ridge)
    assert.truthy(svg:find(">ridge 9.56 FLOP/byte</text>", 1, true), svg)
    local ops = {}
    for name, i in svg:gmatch('<circle class="op" data%-name="(%w+)" data%-intensity="([^"]+)"') do
      ops[#ops + 1] = name .. "@" .. i
    end
    assert.are.same({ "mm@170.667", "add@0.0833333" }, ops)
    assert.truthy(svg:find('class="op%-label"[^>]*>a mm</text>'), svg)
    assert.truthy(svg:find('class="op%-label"[^>]*>b add</text>'), svg)
    assert.truthy(svg:find("b add: 0.0833 FLOP/byte", 1, true), svg)
    assert.truthy(svg:match("</svg>\n$"))
  end)

  it("draws the TF32 tensor-core roof when allow_tf32 is on", function()
    with_model("a100")
    torch.backends.cuda.matmul.allow_tf32 = true
    local ex = add_and_mm()
    assert.are.equal("tf32_tc", ex.rows[1].unit)
    local svg = ex:_repr_svg_()
    assert.truthy(svg:find('data-unit="tf32_tc" data-peak="1.56e+14"', 1, true), svg)
    assert.truthy(svg:find('data-unit="fp32"', 1, true), svg)
    assert.truthy(ex:picture():find("roofs: FP32 19.5 TFLOP/s, TF32 TC 156 TFLOP/s", 1, true), ex:picture())
  end)

  it("draws one device's ops at a time, each on its own model's roofs", function()
    with_model("v100,a100", 2)
    local x0, x1 = torch.ones(1 << 20, { device = "cuda:0" }), torch.ones(1 << 20, { device = "cuda:1" })
    local ex = torch.cuda.explain(function() local _ = x0 + x0; _ = x1:neg() end)
    local p0, p1 = ex:picture(), ex:roofline("cuda:1"):_repr_term_()
    assert.truthy(p0:find("roofline of cuda:0 (Tesla V100-SXM2-16GB)", 1, true), p0)
    assert.truthy(p0:find("\n  a add: ", 1, true) and not p0:find(" neg: ", 1, true), p0)
    assert.truthy(p0:find("(cuda:0's ops; ex:roofline('cuda:1') draws cuda:1's)", 1, true), p0)
    assert.truthy(p1:find("roofs: FP32 19.5 TFLOP/s; the slope: 2.04 TB/s", 1, true), p1)
    assert.truthy(p1:find("\n  a neg: ", 1, true), p1)
    assert.truthy(p1:find("(cuda:1's ops; ex:roofline('cuda:0') draws cuda:0's)", 1, true), p1)
    assert.is_nil(ex:roofline("cuda:5"))
    assert.are.equal("<roofline of cuda:1 on an NVIDIA A100-SXM4-80GB: 1 op (neg), ridge at 9.56 FLOP/byte>",
      tostring(ex:roofline("cuda:1")))
  end)

  it("has nothing to draw with nothing modelled, and wants a device name", function()
    with_model("host")
    local g = torch.ones(100, { device = "cuda:0" })
    local ex = torch.cuda.explain(function() local _ = g + 1 end)
    assert.is_nil(ex:roofline())
    assert.is_nil(ex:_repr_svg_())
    assert.is_nil(ex:picture())
    assert.has_error(function() ex:roofline(0) end,
      "explanation:roofline: expected a device name such as 'cuda:0', got number")
  end)

  it("--notebook --md writes an explanation's roofline (and a profile's timeline) beside the Markdown", function()
    local dir = R.tmpdir()
    R.write_file(dir .. "/nb.lua", "-- %%\nx = torch.ones(1 << 20, {device = 'cuda:0'})\n"
      .. "torch.cuda.explain(function() local _ = x + x end)\n-- %%\n%prof local _ = x + x\n-- %%\n"
      .. "torch.cuda.explain(function() local _ = torch.ones(3) + 1 end)\n")
    local out, err, code = R.run({ "--sim-gpus", "1", "--notebook", dir .. "/nb.lua", "--md", dir .. "/nb.md" })
    assert.are.equal(0, code, out .. err)
    assert.truthy(R.read_file(dir .. "/nb.md"):find("![nb-1-1.svg](nb-1-1.svg)", 1, true))
    assert.truthy(R.read_file(dir .. "/nb-1-1.svg"):find('<circle class="op" data-name="add"', 1, true))
    -- a profile's timeline too, as the kernel shows it; an explanation with nothing modelled draws nothing
    assert.truthy(R.read_file(dir .. "/nb-2-1.svg"):find("<svg", 1, true))
    assert.is_nil(io.open(dir .. "/nb-3-1.svg"))
    os.execute("rm -rf " .. R.quote(dir))
  end)
end)
