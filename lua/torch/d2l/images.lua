-- torch.d2l.images: d2l.show_images and its image grid, described once
-- (pixels, titles, rows and columns) and shown by torch.display as
--   a terminal:  Unicode half-blocks, two pixel rows per line, grey levels
--                in colour (24-bit or the 256-colour grey ramp) or shades
--   not one:     a summary line
--   Jupyter:     PNG through libpng (src/io/gs_png.c), and an SVG placing
--                each image's PNG under its title
local torch = require("torch")
local fail = require("torch.utils.errors").fail
local check_options = require("torch.utils.errors").check_options
local display = require("torch.display")

local M = {}

local Grid = {}
Grid.__index = Grid
Grid.__name = "d2l.ImageGrid"
M.Grid = Grid

local function describe(v) return require("torch.utils.errors").describe(v) end

-- One image as {h =, w =, c =, px = {0..255, row-major, c per pixel}}.
-- uint8 images keep their values; others are scaled from their own min..max
-- to 0..255, as matplotlib's imshow does.
local function image_of(t, k)
  if not torch.is_tensor(t) then
    fail(string.format("d2l.show_images: image %d is %s; expected a tensor", k, describe(t)))
  end
  t = t:detach():to("cpu")
  local shape = t.shape
  local nd = #shape
  if nd == 3 and shape[1] == 1 then t = t:reshape(shape[2], shape[3]); shape = t.shape; nd = 2 end
  if nd == 3 and shape[1] == 3 and shape[3] ~= 3 then t = t:permute(2, 3, 1):contiguous(); shape = t.shape end
  local h, w, c
  if nd == 2 then h, w, c = shape[1], shape[2], 1
  elseif nd == 3 and (shape[3] == 3 or shape[3] == 1) then h, w, c = shape[1], shape[2], shape[3]
  else
    fail(string.format("d2l.show_images: image %d has shape %s; expected HxW, 1xHxW, 3xHxW or HxWx3", k,
      tostring(shape)))
  end
  local vals = t:reshape(-1):to(torch.float64):tolist()
  local px = {}
  if t.dtype == torch.uint8 then
    for i, v in ipairs(vals) do px[i] = math.floor(v) end
  else
    -- the range of the finite values; as matplotlib, +inf shows at the
    -- top of it and -inf (and NaN) at the bottom. Halves keep a range
    -- wider than the largest double (-1e308..1e308) finite.
    local lo, hi = math.huge, -math.huge
    for _, v in ipairs(vals) do
      if v == v and v ~= math.huge and v ~= -math.huge then
        if v < lo then lo = v end
        if v > hi then hi = v end
      end
    end
    local span = hi / 2 - lo / 2
    for i, v in ipairs(vals) do
      if v == math.huge then px[i] = 255
      elseif v ~= v or v == -math.huge or not (span > 0) then px[i] = 0
      else px[i] = math.floor((v / 2 - lo / 2) / span * 255 + 0.5) end
    end
  end
  return { h = h, w = w, c = c, px = px }
end

local function image_list(imgs)
  local list = {}
  if torch.is_tensor(imgs) then
    if imgs:dim() < 3 then
      fail("d2l.show_images: expected a batch of images (N x H x W or N x C x H x W), got shape "
        .. tostring(imgs.shape))
    end
    for i = 1, imgs:size(1) do list[i] = imgs[i] end
  elseif type(imgs) == "table" then
    list = imgs
  else
    fail("d2l.show_images(imgs, num_rows, num_cols[, opts]): imgs must be a tensor or a list of tensors, got "
      .. describe(imgs))
  end
  return list
end

-- show_images(imgs, num_rows, num_cols[, {titles =, scale = 1.5}]): shows
-- the first num_rows * num_cols images in a grid. Returns nothing: the
-- picture is shown, not printed again as the cell's value.
function M.show_images(imgs, num_rows, num_cols, opts)
  opts = opts or {}
  if type(opts) ~= "table" then fail("d2l.show_images: opts must be a table {titles =, scale =}") end
  check_options(opts, "d2l.show_images", { "titles", "scale" })
  for _, v in ipairs({ num_rows, num_cols }) do
    if math.type(v) ~= "integer" or v < 1 then
      fail("d2l.show_images(imgs, num_rows, num_cols): rows and columns must be positive integers, got "
        .. describe(v))
    end
  end
  local scale = opts.scale or 1.5
  if type(scale) ~= "number" or scale <= 0 then fail("d2l.show_images: scale must be a positive number") end
  local titles = opts.titles
  if titles ~= nil and type(titles) ~= "table" then fail("d2l.show_images: titles must be a list of strings") end
  local list = image_list(imgs)
  local grid = setmetatable({ images = {}, titles = {}, rows = num_rows, cols = num_cols, scale = scale }, Grid)
  for k = 1, math.min(#list, num_rows * num_cols) do
    grid.images[k] = image_of(list[k], k)
    grid.titles[k] = titles and titles[k] and require("torch.d2l.chart").clean_text(tostring(titles[k])) or nil
  end
  display.display(grid)
end

-- ---- views -----------------------------------------------------------------------

local function grey(img, i)   -- pixel i (0-based) as one grey level
  local c = img.c
  if c == 1 then return img.px[i + 1] end
  local b = i * c
  return math.floor(0.299 * img.px[b + 1] + 0.587 * img.px[b + 2] + 0.114 * img.px[b + 3] + 0.5)
end

local function rgb(img, i)
  if img.c == 1 then local v = img.px[i + 1]; return v, v, v end
  local b = i * img.c
  return img.px[b + 1], img.px[b + 2], img.px[b + 3]
end

local SHADES = { " ", "░", "▒", "▓", "█" }

local function utf8_sub(s, n)
  local len = utf8.len(s) or #s
  if len <= n then return s .. string.rep(" ", n - len) end
  local stop = utf8.offset(s, n + 1)
  return s:sub(1, stop - 1)
end

-- Text for a terminal: per grid row, a line of titles then the images side
-- by side, each character two pixels (top: foreground, bottom: background).
function Grid:_repr_term_(opts)
  local color = opts and opts.color
  local truecolor = color and (os.getenv("COLORTERM") == "truecolor" or os.getenv("COLORTERM") == "24bit")
  local function cell(img, top, bottom)   -- pixel indices (bottom may be nil)
    if not color then
      local v = grey(img, top)
      if bottom then v = (v + grey(img, bottom)) / 2 end
      return SHADES[math.min(5, math.floor(v / 256 * 5) + 1)]
    end
    if truecolor then
      local r, g, b = rgb(img, top)
      local s = string.format("\27[38;2;%d;%d;%dm", r, g, b)
      if bottom then
        local r2, g2, b2 = rgb(img, bottom)
        s = s .. string.format("\27[48;2;%d;%d;%dm", r2, g2, b2)
      end
      return s .. "▀\27[0m"
    end
    -- the 24 greys of the 256-colour palette (232 darkest .. 255 lightest)
    local function ramp(v) return 232 + math.floor(v / 255 * 23 + 0.5) end
    local s = string.format("\27[38;5;%dm", ramp(grey(img, top)))
    if bottom then s = s .. string.format("\27[48;5;%dm", ramp(grey(img, bottom))) end
    return s .. "▀\27[0m"
  end
  -- as many images a line as the terminal has room for (the grid's
  -- columns at most): a wide grid flows onto more lines instead of wrapping
  local per_line = self.cols
  local first = self.images[1]
  if opts and opts.columns and first then
    per_line = math.max(1, math.min(self.cols, (opts.columns + 1) // (first.w + 1)))
  end
  local lines = {}
  for r = 0, math.huge do
    local row = {}
    for c = 0, per_line - 1 do
      local k = r * per_line + c + 1
      if self.images[k] then row[#row + 1] = k end
    end
    if #row == 0 then break end
    local h = 0
    for _, k in ipairs(row) do h = math.max(h, self.images[k].h) end
    if next(self.titles) then
      local t = {}
      for j, k in ipairs(row) do t[j] = utf8_sub(self.titles[k] or "", self.images[k].w) end
      lines[#lines + 1] = (table.concat(t, " "):gsub("%s+$", ""))
    end
    for y = 0, h - 1, 2 do
      local parts = {}
      for j, k in ipairs(row) do
        local img = self.images[k]
        local cells = {}
        for x = 0, img.w - 1 do
          if y < img.h then
            cells[#cells + 1] = cell(img, y * img.w + x, (y + 1 < img.h) and ((y + 1) * img.w + x) or nil)
          else
            cells[#cells + 1] = " "
          end
        end
        parts[j] = table.concat(cells)
      end
      lines[#lines + 1] = table.concat(parts, " ")
    end
  end
  return table.concat(lines, "\n") .. "\n"
end

function Grid:_repr_line_()
  local n = #self.images
  local first = self.images[1]
  local s = string.format("show_images: %d image%s%s in %d x %d", n, n == 1 and "" or "s",
    first and string.format(" of %dx%d", first.h, first.w) or "", self.rows, self.cols)
  if next(self.titles) then
    local t = {}
    for k = 1, n do t[k] = self.titles[k] or "" end
    s = s .. ": " .. table.concat(t, ", ")
  end
  return s
end

function Grid:__tostring() return self:_repr_line_() end

-- Pixels per image pixel in the PNG: the book's scale (inches per image)
-- over a 28-pixel image at about 56 dpi, at least 1.
function Grid:zoom()
  return math.max(1, math.floor(self.scale * 2 + 0.5))
end

-- One image alone as PNG bytes, zoomed.
local function png_of(img, z)
  local c = img.c == 1 and 1 or 3
  local W, H = img.w * z, img.h * z
  local rows = {}
  for y = 0, H - 1 do
    local sy = y // z
    local row = {}
    for x = 0, img.w - 1 do
      local i = sy * img.w + x
      local px
      if c == 1 then px = string.char(img.px[i + 1])
      else px = string.char(rgb(img, i)) end
      row[#row + 1] = string.rep(px, z)
    end
    rows[#rows + 1] = table.concat(row)
  end
  return torch._png_encode(table.concat(rows), W, H, c)
end

-- The whole grid as one PNG: images zoomed, 4 white pixels between them.
function Grid:_repr_png_()
  local z, gap = self:zoom(), 4
  local cw, ch, c = 0, 0, 1
  for _, img in pairs(self.images) do
    cw, ch = math.max(cw, img.w * z), math.max(ch, img.h * z)
    if img.c ~= 1 then c = 3 end
  end
  local nrows = math.max(1, math.ceil(#self.images / self.cols))
  local ncols = math.min(self.cols, math.max(1, #self.images))
  local W, H = ncols * cw + (ncols - 1) * gap, nrows * ch + (nrows - 1) * gap
  local white = string.rep("\255", c)
  local out = {}
  for y = 0, H - 1 do
    local gr, iy = y // (ch + gap), y % (ch + gap)
    local row = {}
    for gc = 0, ncols - 1 do
      local img = self.images[gr * self.cols + gc + 1]
      for x = 0, cw - 1 do
        if img and iy < img.h * z and x < img.w * z then
          local i = (iy // z) * img.w + x // z
          if c == 1 then row[#row + 1] = string.char(img.px[i + 1])
          else row[#row + 1] = string.char(rgb(img, i)) end
        else
          row[#row + 1] = white
        end
      end
      if gc < ncols - 1 then row[#row + 1] = string.rep(white, gap) end
    end
    out[#out + 1] = table.concat(row)
  end
  return torch._png_encode(table.concat(out), W, H, c)
end

-- An SVG grid: each image's PNG (a data URI) under its title.
function Grid:_repr_svg_()
  local esc = require("torch.d2l.chart_svg").escape
  local z, gap = self:zoom(), 8
  local title_h = next(self.titles) and 16 or 0
  local cw, ch = 0, 0
  for _, img in pairs(self.images) do cw, ch = math.max(cw, img.w * z), math.max(ch, img.h * z) end
  local nrows = math.max(1, math.ceil(#self.images / self.cols))
  local ncols = math.min(self.cols, math.max(1, #self.images))
  local W = ncols * cw + (ncols + 1) * gap
  local H = nrows * (ch + title_h) + (nrows + 1) * gap
  local o = { string.format('<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" '
    .. 'font-family="DejaVu Sans, Arial, sans-serif" font-size="10">', W, H, W, H),
    string.format('<rect width="%d" height="%d" fill="white"/>', W, H) }
  for k, img in ipairs(self.images) do
    local r, c = (k - 1) // self.cols, (k - 1) % self.cols
    local x = gap + c * (cw + gap)
    local y = gap + r * (ch + title_h + gap)
    if self.titles[k] then
      o[#o + 1] = string.format('<text x="%d" y="%d" text-anchor="middle">%s</text>', x + cw // 2, y + 11,
        esc(self.titles[k]))
    end
    o[#o + 1] = string.format('<image x="%d" y="%d" width="%d" height="%d" style="image-rendering:pixelated" '
      .. 'href="data:image/png;base64,%s"/>', x, y + title_h, img.w * z, img.h * z, display.base64(png_of(img, 1)))
  end
  o[#o + 1] = "</svg>"
  return table.concat(o, "\n") .. "\n"
end

return M
