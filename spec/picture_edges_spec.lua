-- picture_edges_spec.lua: pictures of awkward data and text (issue 33):
-- inf pixels and ranges near the ends of the doubles draw instead of
-- raising Lua's internal errors, control characters in titles, labels
-- and legends never reach a terminal or the SVG, and --notebook --md
-- writes its Markdown when a picture of one cell fails.
local torch = require("torch")
local d2l = require("d2l")
local display = require("torch.display")
local R = require("gshell_run")

-- the picture object each helper hands to torch.display
local shown
setup(function()
  display.set_frontend({ display = function(o) shown = o end, update = function(o) shown = o end })
end)
teardown(function() display.set_frontend(nil) end)

local function tick_labels(chart, key)
  local _, _, ticks = chart:axis(key)
  local l = {}
  for _, t in ipairs(ticks) do l[#l + 1] = t.label end
  return l
end

-- every view of a picture, drawn (raises if one cannot be)
local function draw(p)
  return p:_repr_svg_() .. p:_repr_term_({ columns = 60, lines = 20 }) .. p:_repr_line_()
end

describe("pictures of extreme values", function()
  it("show_images puts +inf at the top of the range and -inf, NaN at the bottom (matplotlib's clamp)", function()
    d2l.show_images(torch.tensor({ { { 1 / 0, 0 }, { -1 / 0, 1 } }, { { 0 / 0, 2 }, { 4, 3 } } }), 1, 2)
    draw(shown)
    assert.is_string(shown:_repr_png_())
    assert.are.same({ 255, 0, 0, 255 }, shown.images[1].px)
    assert.are.same({ 0, 0, 255, 128 }, shown.images[2].px)
  end)

  it("show_images of a range wider than the largest double stays finite", function()
    d2l.show_images(torch.tensor({ { { -1e308, 1e308 } } }, { dtype = torch.float64 }), 1, 1)
    draw(shown)
    assert.are.same({ 0, 255 }, shown.images[1].px)
  end)

  it("a tiny, a huge and an overflowing y range all get tick labels", function()
    d2l.plot({ 1, 2 }, { 1e-200, 2e-200 })
    draw(shown)
    assert.are.same({ "1e-200", "1.2e-200", "1.4e-200", "1.6e-200", "1.8e-200", "2e-200" }, tick_labels(shown, "y"))
    d2l.plot({ 1, 2 }, { -1e308, 1e308 })
    draw(shown)
    assert.are.same({ "-8e+307", "-4e+307", "0", "4e+307", "8e+307" }, tick_labels(shown, "y"))
    d2l.plot({ 1, 2 }, { 1e200, 3e200 })
    draw(shown)
    assert.are.same({ "1e+200", "1.5e+200", "2e+200", "2.5e+200", "3e+200" }, tick_labels(shown, "y"))
    -- ticks close together on a large value keep the digits that tell them apart
    d2l.plot({ 1, 2 }, { 1, 1 + 1e-13 })
    draw(shown)
    local l = tick_labels(shown, "y")
    assert.are.equal("1.00000000000002", l[2])
    -- the ordinary case is unchanged
    d2l.plot({ 1, 2 }, { 0, 1 })
    assert.are.same({ "0.0", "0.2", "0.4", "0.6", "0.8", "1.0" }, tick_labels(shown, "y"))
  end)
end)

describe("control characters in a picture's text", function()
  local bad = "X\27]0;PWNED\7\27[2J\1\127"
  local function clean(s)
    -- colours are the renderer's own escapes; nothing else may be a control
    local plain = s:gsub("\27%[[%d;]*m", "")
    return not plain:find("[%z\1-\9\11-\31\127]")
  end
  it("never reach the terminal, the summary line or the SVG (a chart)", function()
    d2l.plot({ 1, 2 }, { 3, 4 }, { title = bad, xlabel = bad, ylabel = bad, legend = { bad } })
    assert.is_true(clean(draw(shown)))
    assert.truthy(shown:_repr_svg_():find("X\u{FFFD}]0;PWNED\u{FFFD}\u{FFFD}[2J\u{FFFD}\u{FFFD}", 1, true))
    local a = d2l.Animator({ legend = { bad }, xlabel = bad })
    a:add(1, 2)
    assert.is_true(clean(draw(shown)))
  end)
  it("never reach the terminal or the SVG (image titles); line breaks become spaces", function()
    d2l.show_images(torch.zeros(2, 2, 2), 1, 2, { titles = { bad, "a\nb" } })
    assert.is_true(clean(draw(shown)))
    assert.are.equal("a b", shown.titles[2])
  end)
end)

describe("--notebook --md when a picture fails", function()
  it("writes every cell's output; the failing picture is its cell's error", function()
    local dir = R.tmpdir()
    -- a picture whose SVG view raises stands for any failure to draw
    R.write_file(dir .. "/nb.lua", "-- %%\nprint('first')\n-- %%\n"
      .. "require('torch.display').display(setmetatable({}, {__index = {_repr_line_ = function() return 'bad picture' end,"
      .. " _repr_svg_ = function() error('cannot draw this') end}}))\n-- %%\nprint('last')\n")
    local out, err, code = R.run({ "--notebook", dir .. "/nb.lua", "--md", dir .. "/nb.md" })
    assert.are.equal(1, code, err)
    assert.truthy(out:find("last", 1, true), out)
    assert.truthy(err:find("picture 1 of cell 2: ", 1, true) and err:find("cannot draw this", 1, true), err)
    assert.truthy(err:find("1 of 3 cells failed", 1, true), err)
    local md = R.read_file(dir .. "/nb.md")
    assert.truthy(md and md:find("```output\nfirst\n```", 1, true), md)
    assert.truthy(md:find("```output\nlast\n```", 1, true), md)
    assert.truthy(md:find("cannot draw this", 1, true), md)
    os.execute("rm -rf " .. R.quote(dir))
  end)
end)
