-- gshell.notebook: `gshell --notebook file.lua [--md out.md]`.
--
-- The file is split into cells at lines beginning `-- %%` (jupytext's
-- "percent" format for Lua; `-- %% [markdown]` starts a Markdown cell whose
-- lines are Lua comments). Code cells run in order in one session, each as
-- if pasted at the prompt, and print as Jupyter does:
--
--   In [1]: x = torch.ones(2)
--      ...: x
--   Out[1]: tensor([1., 1.])
--
-- With --md the session is also written as Markdown: Markdown cells as they
-- are, code in ```lua blocks, what each cell printed (its Out value
-- included) in the ```output block after it. That file can be checked
-- later with `gshell --check`. Errors are shown (positions read
-- "In[3]:2:", line 2 of cell 3, as --check also numbers them) and the run
-- goes on; the exit status is 1 when any cell failed, except cells marked
-- as expected to fail (a teaching error): `-- %% tags=["raises-exception"]`
-- as jupytext writes Jupyter's tag. A first-lines comment
-- `-- gshell: sim-gpus=2 seed=0` sets up simulated GPUs and the seed, and
-- is carried into the Markdown; timing lines are written there as `...`.
local Session = require "gshell.session"
local docheader = require "gshell.docheader"

local M = {}

local function trim_blank_lines(lines)
  while #lines > 0 and lines[1]:match("^%s*$") do table.remove(lines, 1) end
  while #lines > 0 and lines[#lines]:match("^%s*$") do table.remove(lines) end
  return lines
end

-- Splits source text into cells: {kind = "code"|"markdown", text =, line =}
-- where line is the file line of the cell's first line.
function M.split_cells(src)
  local cells = {}
  local cur = { kind = "code", lines = {}, line = 1 }
  local n = 0
  local function flush()
    local first = cur.line
    -- the first kept line's number, after leading blank lines go
    for _, l in ipairs(cur.lines) do
      if l:match("^%s*$") then first = first + 1 else break end
    end
    local lines = trim_blank_lines(cur.lines)
    if #lines > 0 then
      if cur.kind == "markdown" then
        for i, l in ipairs(lines) do lines[i] = l:gsub("^%-%- ?", "") end
      end
      cells[#cells + 1] = { kind = cur.kind, text = table.concat(lines, "\n"), line = first, raises = cur.raises }
    end
  end
  for line in (src .. "\n"):gmatch("(.-)\r?\n") do
    n = n + 1
    if line:match("^%-%- ?%%%%") then
      flush()
      local kind = line:match("%[markdown%]") and "markdown" or "code"
      cur = { kind = kind, lines = {}, line = n + 1, raises = line:find("raises-exception", 1, true) ~= nil }
    else
      cur.lines[#cur.lines + 1] = line
    end
  end
  flush()
  -- The comment block a file starts with, before its first `-- %%` (a
  -- title, the `-- gshell:` header line), is the notebook's header, not a
  -- cell: it is not run or numbered; --md keeps its text as Markdown.
  local c1 = cells[1]
  if c1 and c1.kind == "code" and n > 0 and c1.line <= 2 and src:find("\n%-%- ?%%%%") then
    local only_comments = true
    for l in (c1.text .. "\n"):gmatch("(.-)\n") do
      if not (l:match("^%s*$") or (l:match("^%s*%-%-") and not l:match("^%s*%-%-%[=*%["))) then only_comments = false end
    end
    if only_comments and not src:match("^[^\n]*%-%- ?%%%%") then
      local text = {}
      for l in (c1.text .. "\n"):gmatch("(.-)\n") do
        if not l:match("^%-%-%s*gshell:") then text[#text + 1] = (l:gsub("^%s*%-%- ?", "")) end
      end
      c1.kind, c1.text = "header", table.concat(trim_blank_lines(text), "\n")
    end
  end
  return cells
end

local function prefixed_input(n, text)
  local out = {}
  local first = true
  for line in (text .. "\n"):gmatch("(.-)\n") do
    out[#out + 1] = (first and string.format("In [%d]: ", n) or string.rep(" ", #tostring(n) + 2) .. "...: ") .. line
    first = false
  end
  return table.concat(out, "\n")
end

-- With --md, pictures (torch.display: an Animator, d2l.plot, show_images)
-- print their summary line as the cell runs, and each one's final state is
-- written as an SVG file beside the Markdown (out.md -> out-3-1.svg for
-- the first picture of cell 3), linked from the cell's output.
local function picture_recorder()
  local rec = { order = {}, last = {} }
  local function show(obj, id)
    if not rec.last[id] then rec.order[#rec.order + 1] = id end
    rec.last[id] = obj
    io.stdout:write(obj._repr_line_ and obj:_repr_line_() or tostring(obj), "\n")
  end
  rec.frontend = { display = show, update = show }
  -- a cell's value: its SVG file, without the summary line (the value's
  -- text is the cell's output)
  function rec.frontend.value(obj)
    local id = {}
    rec.order[#rec.order + 1] = id
    rec.last[id] = obj
  end
  -- Writes this cell's pictures; returns the Markdown lines linking them,
  -- and the messages of the pictures that could not be drawn (the cell's
  -- errors: one bad picture must not lose the other cells' output).
  function rec.flush(md_path, n)
    local links, errors = {}, {}
    local dir, stem = md_path:match("^(.-)([^/]*)$")
    stem = stem:gsub("%.[^.]*$", "")
    for k, id in ipairs(rec.order) do
      local obj = rec.last[id]
      if obj._repr_svg_ then
        local name = string.format("%s-%d-%d.svg", stem, n, k)
        local drawn, svg = pcall(obj._repr_svg_, obj)
        if not drawn then
          errors[#errors + 1] = string.format("picture %d of cell %d: %s", k, n, tostring(svg))
        elseif svg ~= nil then -- nil: nothing to draw (an explanation where nothing was modelled)
          local ok, err = Session.save_text(dir .. name, svg)
          if ok then links[#links + 1] = string.format("![%s](%s)\n", name, name)
          else io.stderr:write("gshell: ", tostring(err), "\n") end
        end
      end
    end
    rec.order, rec.last = {}, {}
    return links, errors
  end
  return rec
end

-- Runs the notebook; returns the exit status.
function M.run(path, md_path)
  local text = Session.read_input(path)
  if not text then return 1 end
  local src = text:gsub("^#![^\n]*", "")
  local lines = {}
  for l in (src .. "\n"):gmatch("(.-)\r?\n") do lines[#lines + 1] = l end
  local settings = docheader.setup(path, lines)
  if not settings then return 1 end
  local session = Session.new({ trap_exit = true })
  local pictures
  if md_path then
    pictures = picture_recorder()
    require("torch.display").set_frontend(pictures.frontend)
    -- a cell's value that draws itself (an explanation's roofline, a
    -- profile's timeline: its _repr_svg_) is written beside the Markdown
    -- too, as the Jupyter kernel shows it
    local show_text = getmetatable(session).__index.show_text
    session.show_text = function(self, results)
      local v = results and results.n == 1 and results[1]
      local ok, f = pcall(function() return type(v) == "table" and v._repr_svg_ end)
      if ok and type(f) == "function" then pictures.frontend.value(v) end
      return show_text(self, results)
    end
  end
  local md = { docheader.markdown_line(settings) and (docheader.markdown_line(settings) .. "\n") or nil }
  local failed = 0
  local n = 0
  for _, cell in ipairs(M.split_cells(src)) do
    if cell.kind == "header" then
      if cell.text ~= "" then md[#md + 1] = cell.text .. "\n" end
    elseif cell.kind == "markdown" then
      md[#md + 1] = cell.text .. "\n"
    else
      n = n + 1
      io.stdout:write(prefixed_input(n, cell.text), "\n")
      io.stdout:flush()
      local r = session:run_captured(cell.text, { chunkname = string.format("=In[%d]", n) }, md_path == nil)
      if r.output then io.stdout:write(r.output) end
      if r.result then
        local sep = r.result:find("\n", 1, true) and "\n" or " "
        io.stdout:write(string.format("Out[%d]:%s%s\n", n, sep, r.result))
      end
      io.stdout:write("\n")
      io.stdout:flush()
      if r.status == "error" then
        if r.error and r.error:find("interrupted!$") then return 130 end
        if not cell.raises then failed = failed + 1 end
      elseif cell.raises then
        io.stderr:write(string.format("gshell: cell %d is marked raises-exception but ran without an error\n", n))
        failed = failed + 1
      end
      local code_fence = docheader.fence(cell.text)
      md[#md + 1] = code_fence .. "lua\n" .. cell.text .. "\n" .. code_fence .. "\n"
      local shown = docheader.mask_timing((r.output or "") .. (r.result and (r.result .. "\n") or ""))
      local out_fence = docheader.fence(shown)
      if shown ~= "" then md[#md + 1] = out_fence .. "output\n" .. shown .. out_fence .. "\n" end
      if pictures then
        local links, errors = pictures.flush(md_path, n)
        for _, link in ipairs(links) do md[#md + 1] = link end
        for _, e in ipairs(errors) do
          io.stderr:write("gshell: ", e, "\n")
          md[#md + 1] = "```output\n" .. e .. "\n```\n"
        end
        if #errors > 0 and r.status ~= "error" and not cell.raises then failed = failed + 1 end
      end
      if session.exit_code then break end -- os.exit: the notebook ends here, --md is still written
    end
  end
  if md_path then
    local ok, werr = Session.save_text(md_path, table.concat(md, "\n"))
    if not ok then
      io.stderr:write("gshell: ", tostring(werr), "\n")
      return 1
    end
  end
  if session.exit_code then return session.exit_code end
  if failed > 0 then
    io.stderr:write(string.format("gshell: %d of %d cells failed\n", failed, n))
    return 1
  end
  return 0
end

return M
