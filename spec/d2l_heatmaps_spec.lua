-- d2l_heatmaps_spec.lua: d2l.show_heatmaps (the attention chapters): the
-- terminal picture's shape (lines, widths, a shade or colour per entry by
-- value, titles and labels), the SVG (a rectangle per entry coloured by
-- value with the Reds map, titles, labels, a colour bar; a PNG for a
-- large matrix), the summary line, --notebook --md, and the messages.
local torch = require("torch")
local d2l = require("torch.d2l")
local display = require("torch.display")
local H = require("torch.d2l.heatmaps")
local R = require("gshell_run")

-- What show_heatmaps displays, recorded instead of drawn.
local function shown(...)
  local got
  local args = table.pack(...)
  local old = display.set_frontend({ display = function(obj) got = obj end, update = function(obj) got = obj end })
  local ok, e = pcall(d2l.show_heatmaps, table.unpack(args, 1, args.n))
  display.set_frontend(old)
  assert(ok, e)
  return got
end

local function err(f)
  local ok, e = pcall(f)
  assert.is_false(ok)
  return tostring(e)
end

local function lines_of(s)
  local t = {}
  for l in s:gmatch("([^\n]*)\n") do t[#t + 1] = l end
  return t
end

-- the book's picture: masked weights of two queries over ten keys
local function book_weights()
  return d2l.masked_softmax(torch.arange(20, { dtype = torch.float32 }):reshape(2, 1, 10) / 5, torch.tensor({ 2, 6 }))
end

describe("d2l.show_heatmaps (issue 31)", function()
  it("returns nothing and shows one picture, as the book's", function()
    local old = display.set_frontend({ display = function() end, update = function() end })
    local n = select("#", d2l.show_heatmaps(book_weights():reshape(1, 1, 2, 10), "Keys", "Queries"))
    display.set_frontend(old)
    assert.are.equal(0, n)
    local hm = shown(book_weights():reshape(1, 1, 2, 10), "Keys", "Queries")
    assert.are.equal("show_heatmaps: 1 x 1 matrices of 2 x 10 (Queries x Keys), values 0 to 0.55", hm:_repr_line_())
  end)

  it("draws at a terminal two characters an entry, shaded by value, with labels and a colour bar", function()
    local m = torch.tensor({ { 0, 1, 2, 3 }, { 4, 5, 6, 7 }, { 8, 9, 10, 11 } }, { dtype = torch.float32 })
    local hm = shown(m:reshape(1, 1, 3, 4), "Keys", "Queries")
    local l = lines_of(hm:_repr_term_({ color = false }))
    -- three rows, the x label, the colour bar
    assert.are.equal(5, #l)
    local margin = #"Queries" + 1
    assert.are.equal("Queries ", l[2]:sub(1, margin)) -- the y label beside the middle row
    assert.are.equal(8, utf8.len(l[1]) - margin)     -- 4 entries, 2 characters each
    -- larger values, denser shades in five steps: the lowest fifth of the
    -- range (0, 1, 2) blank, the top one (9, 10, 11) full
    assert.are.equal("      ░░", l[1]:sub(margin + 1))
    assert.are.equal("▓▓██████", l[3]:sub(margin + 1))
    assert.matches("^%s+Keys$", l[4])
    assert.are.equal(string.rep(" ", margin) .. "0   ░▒▒▓██ 11", l[5])
  end)

  it("puts titles over the columns, the x label under the last row, and averages blocks of a large matrix", function()
    local hm = shown(torch.rand(2, 3, 4, 5), "Key positions", "Query positions", { titles = { "Head 1", "Head 2", "Head 3" } })
    local l = lines_of(hm:_repr_term_({ color = false, columns = 200 }))
    -- titles, 2 x 4 rows, x labels, colour bar
    assert.are.equal(1 + 8 + 1 + 1, #l)
    local _, heads = l[1]:gsub("Head %d", "")
    assert.are.equal(3, heads)
    local _, xl = l[10]:gsub("Key positions", "")
    assert.are.equal(3, xl)
    local _, yl = table.concat(l, "\n"):gsub("Query positions", "")
    assert.are.equal(2, yl) -- once per grid row
    -- 100 x 100 in a terminal of 80 columns: at most 16 lines of blocks
    hm = shown(torch.rand(1, 1, 100, 100), "k", "q")
    l = lines_of(hm:_repr_term_({ color = false, columns = 80 }))
    assert.is_true(#l <= 16 + 2)
    for _, line in ipairs(l) do assert.is_true(utf8.len(line) <= 80, line) end
    assert.matches("blocks of entries averaged", l[#l])
  end)

  it("colours each entry with the Reds map over its matrix's range (24-bit or 256 colours)", function()
    local hm = shown(torch.tensor({ { 1.0, 3.0 } }):reshape(1, 1, 1, 2), "k", "q")
    local saved = os.getenv("COLORTERM")
    local text = hm:_repr_term_({ color = true })
    if saved == "truecolor" or saved == "24bit" then
      assert.truthy(text:find("\27[48;2;255;245;240m  \27[0m\27[48;2;103;0;13m  \27[0m", 1, true), text)
    else
      -- the 6x6x6 cube: #fff5f0 -> (5, 5, 5) = 231, #67000d -> (2, 0, 0) = 88
      assert.truthy(text:find("\27[48;5;231m  \27[0m\27[48;5;88m  \27[0m", 1, true), text)
    end
    assert.are.same({ 255, 245, 240 }, { H.colour("Reds", 0) })
    assert.are.same({ 103, 0, 13 }, { H.colour("Reds", 1) })
    assert.are.same({ 0xfb, 0x6a, 0x4a }, { H.colour("Reds", 0.5) })
    assert.are.same({ 8, 48, 107 }, { H.colour("Blues", 1) })
  end)

  it("is an SVG with a rectangle per entry coloured by value, titles, labels and a colour bar", function()
    local w = book_weights():reshape(1, 1, 2, 10)
    local hm = shown(w, "Keys", "Queries", { titles = { "Dot product" }, figsize = { 5, 2 } })
    local svg = hm:_repr_svg_()
    assert.matches('^<svg xmlns="http://www.w3.org/2000/svg" width="500" height="200"', svg)
    local cells = {}
    for fill, title in svg:gmatch('<rect [^>]*fill="(#%x+)"><title>([^<]*)</title></rect>') do
      cells[#cells + 1] = { fill, tonumber(title) }
    end
    assert.are.equal(20, #cells)
    local vals = w:reshape(-1):tolist()
    for i, c in ipairs(cells) do
      assert.is_true(math.abs(c[2] - vals[i]) < 1e-3, "entry " .. i)
      local r, g, b = H.colour("Reds", vals[i] / 0.55)
      -- within a step of the expected colour (the range's top is rounded)
      local R2, G2, B2 = tonumber(c[1]:sub(2, 3), 16), tonumber(c[1]:sub(4, 5), 16), tonumber(c[1]:sub(6, 7), 16)
      assert.is_true(math.abs(R2 - r) + math.abs(G2 - g) + math.abs(B2 - b) <= 6, "entry " .. i .. " " .. c[1])
    end
    assert.are.equal("#fff5f0", cells[3][1]) -- masked out: 0, the range's bottom
    assert.are.equal("#67000d", cells[2][1]) -- the largest
    assert.truthy(svg:find('<text class="title"[^>]*>Dot product</text>'))
    assert.truthy(svg:find('<text class="xlabel"[^>]*>Keys</text>'))
    assert.truthy(svg:find('<text class="ylabel"[^>]*rotate%(%-90[^>]*>Queries</text>'))
    local _, bar = svg:match('<g class="colorbar".-</g>'):gsub("<rect ", "")
    assert.are.equal(32, bar)
    -- a large matrix is one embedded PNG
    svg = shown(torch.rand(1, 1, 60, 60), "k", "q"):_repr_svg_()
    assert.falsy(svg:find("<title>", 1, true))
    assert.truthy(svg:find('href="data:image/png;base64,', 1, true))
    -- labels are text, not markup
    svg = shown(w, "<b>", "q&a"):_repr_svg_()
    assert.truthy(svg:find(">&lt;b&gt;</text>", 1, true) and svg:find(">q&amp;a</text>", 1, true))
  end)

  it("takes the book's arguments as options too, and says what was wrong", function()
    local w = torch.rand(1, 2, 3, 3)
    local hm = shown(w, { xlabel = "k", ylabel = "q", titles = { "a", "b" }, cmap = "Blues" })
    assert.are.equal("Blues", hm.cmap)
    hm = shown(w, "k", "q", { "a", "b" }, { 4, 2 })
    assert.are.same({ "a", "b" }, hm.titles)
    assert.are.same({ 4, 2 }, hm.figsize)
    assert.matches("matrices must be a 4%-d tensor .*m:reshape%(1, 1, h, w%)", err(function()
      d2l.show_heatmaps(torch.rand(2, 10), "k", "q") end))
    assert.matches("unknown cmap 'viridis'; gshell draws Blues, Greens, Greys, Oranges, Purples, Reds", err(function()
      d2l.show_heatmaps(w, "k", "q", { cmap = "viridis" }) end))
    assert.matches("figsize must be {width, height} in inches", err(function()
      d2l.show_heatmaps(w, "k", "q", { figsize = 3 }) end))
    assert.matches("unknown option 'title'", err(function() d2l.show_heatmaps(w, "k", "q", { title = "x" }) end))
  end)

  it("--notebook --md writes the SVG beside the Markdown", function()
    local dir = R.tmpdir()
    R.write_file(dir .. "/nb.lua", "-- %%\nd2l.show_heatmaps(torch.eye(3):reshape(1, 1, 3, 3), 'Keys', 'Queries')\n")
    local out, e, code = R.run({ "--notebook", dir .. "/nb.lua", "--md", dir .. "/nb.md" })
    assert.are.equal(0, code, e)
    assert.truthy(out:find("show_heatmaps: 1 x 1 matrices of 3 x 3 (Queries x Keys)", 1, true), out)
    assert.truthy(R.read_file(dir .. "/nb.md"):find("![nb-1-1.svg](nb-1-1.svg)", 1, true))
    local _, n = R.read_file(dir .. "/nb-1-1.svg"):gsub("<title>", "")
    assert.are.equal(9, n)
    os.execute("rm -rf " .. R.quote(dir))
  end)
end)
