-- spec/design_paths_spec.lua: every repository path docs/design.md names
-- exists, so the design document cannot drift from the tree unnoticed (a
-- moved file, a renamed folder). A path is a word with a folder of the
-- repository or of src/ in front (src/core/, spec/, core/gs_tensor.h,
-- backend/sim/), or a file name with a source extension (gs_tensor.c,
-- pool.cu, chart.lua); a folder-relative one may sit under src/, a bare
-- file name anywhere in the tree. Globs (kernel_*.c, gs_stream.[ch]) must
-- match a file. Build outputs (build/, build-san/, ...) are not in the
-- repository and are left out.

local TOP = {} -- the first folders a path may start with
for _, d in ipairs({ "src", "spec", "tools", "lua", "docs", "bench", "fuzz", "examples", "kernels" }) do TOP[d] = true end
for _, d in ipairs({ "core", "backend", "ops", "autograd", "io", "bind", "distributed", "dist", "shell", "jupyter" }) do
  TOP[d] = true -- folders of src/
end
local EXT = { c = true, h = true, cu = true, cuh = true, lua = true, sh = true, py = true, md = true, cpp = true }

local function lines_of(cmd)
  local p = assert(io.popen(cmd))
  local out = {}
  for l in p:lines() do out[#out + 1] = l end
  p:close()
  return out
end

-- The repository's files and folders (as "path" and "path/"), and its
-- file names.
local function tree()
  local paths, names = {}, {}
  for _, f in ipairs(lines_of("git ls-files")) do
    paths[f] = true
    names[f:match("[^/]+$")] = true
    local dir = f
    while true do
      dir = dir:match("^(.+)/[^/]+$")
      if not dir then break end
      paths[dir .. "/"] = true
    end
  end
  return paths, names
end

-- The paths a Markdown text names, in order, without repeats.
local function named_paths(text)
  local out, seen = {}, {}
  for tok in text:gmatch("[%w_%.%-%*%[%]/]+") do
    tok = tok:gsub("[%.]+$", "")
    local first = tok:match("^([%w_%-]+)/")
    local ext = tok:match("%.([%w]+)$")
    local want = (first and TOP[first]) or (not tok:find("/") and ext and EXT[ext] and tok:match("^[%w_%*%[%]%-]+%.[%w]+$"))
    if want and not seen[tok] then
      seen[tok] = true
      out[#out + 1] = tok
    end
  end
  return out
end

local function glob_pattern(g)
  local p = g:gsub("[%.%-%+%?%^%$%(%)%%]", "%%%0"):gsub("%*", "[^/]*")
  return "^" .. p .. "$"
end

-- Whether a named path exists: at the root, under src/, or (a bare file
-- name) anywhere; a glob must match something there.
local function exists(tok, paths, names)
  local globbed = tok:find("[%*%[]")
  local function at(p)
    if not globbed then return paths[p] or paths[p .. "/"] end
    local pat = glob_pattern(p)
    for q in pairs(paths) do
      if q:match(pat) or q:gsub("/$", ""):match(pat) then return true end
    end
    return false
  end
  if tok:find("/") then return at(tok) or at("src/" .. tok) end
  if not globbed then return names[tok] or false end
  local pat = glob_pattern(tok)
  for n in pairs(names) do if n:match(pat) then return true end end
  return false
end

describe("docs/design.md", function()
  it("names only paths that exist in the repository", function()
    local fh = assert(io.open("docs/design.md"))
    local text = fh:read("a")
    fh:close()
    local paths, names = tree()
    local named = named_paths(text)
    assert.is_true(#named > 50, "too few paths found: " .. #named)
    local missing = {}
    for _, p in ipairs(named) do
      if not exists(p, paths, names) then missing[#missing + 1] = p end
    end
    assert.are.same({}, missing)
  end)

  it("would catch a path that does not exist", function()
    local paths, names = tree()
    local named = named_paths("the queue (`core/gs_stream.c`, src/dist/, kernels/*.cu, gs_nothing.h) and src/main.c")
    local missing = {}
    for _, p in ipairs(named) do
      if not exists(p, paths, names) then missing[#missing + 1] = p end
    end
    assert.are.same({ "core/gs_stream.c", "src/dist/", "kernels/*.cu", "gs_nothing.h" }, missing)
  end)
end)
