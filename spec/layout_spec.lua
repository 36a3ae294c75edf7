-- spec/layout_spec.lua: the folders of src/ are the architecture's layers
-- (docs/design.md). A file includes its own folder and the folders below
-- it, never one above, always folder-qualified ("core/gs_tensor.h") and
-- with quotes (<...> is for system headers), and no header includes
-- itself back through others (.h and .cuh alike). A function is declared
-- only by the headers of the folder that defines it: a file that wants
-- another layer's function includes that layer's header, so every arrow
-- between layers shows as an include. Read from the files on disk, tracked
-- by git or not yet, with the same rules a reviewer would apply by grep.
-- Layers from the bottom up. The simulated GPU may include the CPU
-- kernels' headers (it queues them). A sub-folder belongs to the nearest
-- folder above it that is a layer (backend/cuda/kernels: backend/cuda).
local RANK = {
  ["core"] = 0,
  ["backend/cpu"] = 1, ["backend/cuda"] = 1,
  ["backend/sim"] = 2,
  ["backend"] = 3,          -- registry.c: the one file naming the backends
  ["ops"] = 4, ["autograd"] = 5, ["io"] = 6, ["distributed"] = 7, ["bind"] = 8,
  ["shell"] = 9, ["jupyter"] = 10, ["."] = 11, -- src/main.c
}
-- Backends are side by side: neither includes the other, except sim -> cpu.
local SIDEWAYS_OK = { ["backend/sim"] = { ["backend/cpu"] = true } }

-- The layer of a folder under src/ ("." for src/ itself), or nil.
local function layer(dir)
  while dir do
    if RANK[dir] then return dir end
    dir = dir:match("^(.+)/[^/]+$")
  end
  return nil
end
local function folder_of(path)
  local dir = path:match("^src/(.+)/[^/]+$")
  return layer(dir or ".")
end

local function lines_of(cmd)
  local p = assert(io.popen(cmd))
  local out = {}
  for l in p:lines() do out[#out + 1] = l end
  p:close()
  return out
end

-- Every source file under src/ on disk (a file not yet added to git too).
local function sources()
  return lines_of("find src -type f \\( -name '*.c' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' \\) | sort")
end

local function read(f)
  local fh = assert(io.open(f))
  local s = fh:read("a")
  fh:close()
  return s
end

-- The violations in a list of {file, inc, angle} edges (paths as written
-- in the #include; angle: written with <...>). `exists(path)` says whether
-- src/path is a project file.
local function violations(edges, exists)
  local bad = {}
  for _, e in ipairs(edges) do
    local from = folder_of(e.file)
    local inc = e.inc
    if e.angle then
      if exists(inc) or exists(inc:match("[^/]+$")) then
        bad[#bad + 1] = e.file .. ": <" .. inc .. "> is a project header (write it with quotes)"
      end
    elseif not inc:find("/") then
      bad[#bad + 1] = e.file .. ": " .. inc .. " is not folder-qualified"
    else
      local to = layer(inc:match("^(.+)/[^/]+$"))
      local rf, rt = RANK[from or ""], RANK[to or ""]
      if not rf or not rt then
        bad[#bad + 1] = e.file .. ": " .. inc .. " is in no known layer"
      elseif from ~= to and rt >= rf and not (SIDEWAYS_OK[from] or {})[to] then
        bad[#bad + 1] = string.format("%s (%s) includes %s (%s, a layer above or beside it)", e.file, from, inc, to)
      end
    end
  end
  return bad
end

local function includes(files)
  local edges = {}
  for _, f in ipairs(files) do
    for l in read(f):gmatch("[^\n]+") do
      local inc = l:match('^%s*#%s*include%s+"([^"]+)"')
      if inc then edges[#edges + 1] = { file = f, inc = inc } end
      inc = l:match("^%s*#%s*include%s+<([^>]+)>")
      if inc then edges[#edges + 1] = { file = f, inc = inc, angle = true } end
    end
  end
  return edges
end

local function project_file(set)
  local base = {}
  for f in pairs(set) do base[f:match("[^/]+$")] = true end
  return function(p) return p and (set[p] or (not p:find("/") and base[p])) or false end
end

local function file_set(files)
  local set = {}
  for _, f in ipairs(files) do set[f:gsub("^src/", "")] = true end
  return set
end

-- An include circle among headers (.h and .cuh), as "a -> b -> a", or nil.
local function header_circle(edges)
  local deps = {}
  for _, e in ipairs(edges) do
    if not e.angle and (e.file:match("%.h$") or e.file:match("%.cuh$")) then
      local key = e.file:gsub("^src/", "")
      deps[key] = deps[key] or {}
      table.insert(deps[key], e.inc)
    end
  end
  local state, found = {}, nil
  local function visit(h, path)
    if found or state[h] == "done" then return end
    if state[h] == "open" then found = table.concat(path, " -> ") .. " -> " .. h; return end
    state[h] = "open"
    path[#path + 1] = h
    for _, d in ipairs(deps[h] or {}) do visit(d, path) end
    path[#path] = nil
    state[h] = "done"
  end
  local keys = {}
  for h in pairs(deps) do keys[#keys + 1] = h end
  table.sort(keys)
  for _, h in ipairs(keys) do visit(h, {}) end
  return found
end

-- Top-level function declarations and definitions of one file's text:
-- returns two lists of names, (declared without a body, defined with one);
-- static functions are left out (nothing outside the file sees them).
local function functions(text)
  -- comments out, string and character literals emptied (one scan, so a
  -- "//" inside a string or a quote inside a comment is no trouble)
  local out, k, len = {}, 1, #text
  while k <= len do
    local two = text:sub(k, k + 1)
    local ch = text:sub(k, k)
    if two == "/*" then
      local e = text:find("*/", k + 2, true) or len
      out[#out + 1] = " "
      k = e + 2
    elseif two == "//" then
      local e = text:find("\n", k, true) or len + 1
      k = e
    elseif ch == '"' or ch == "'" then
      local j = k + 1
      while j <= len and text:sub(j, j) ~= ch do j = j + (text:sub(j, j) == "\\" and 2 or 1) end
      out[#out + 1] = ch .. ch
      k = j + 1
    else
      out[#out + 1] = ch
      k = k + 1
    end
  end
  text = table.concat(out):gsub("\\\n", " ")
  local lines = {}
  for l in (text .. "\n"):gmatch("([^\n]*)\n") do
    if not l:match("^%s*#") then lines[#lines + 1] = l end
  end
  text = table.concat(lines, "\n")
  local decl, def = {}, {}
  local depth, externc, start = 0, 0, 1
  local i, n = 1, #text
  local function chunk(j, ends)
    local c = text:sub(start, j - 1)
    start = j + 1
    if c:match("^%s*static[%s]") or c:match("[%s;]static%s") or c:match("typedef") then return end
    c = c:gsub("__attribute__%s*%b()", "")
    local name = c:match("([%a_][%w_]*)%s*%(")
    if not name or c:find("=", 1, true) then return end
    if c:match("%(%s*%*") and c:match("^[^(]*%(%s*%*") then return end -- a function pointer variable
    if name == "if" or name == "while" or name == "for" or name == "switch" or name == "return" then return end
    if ends == ";" then decl[#decl + 1] = name else def[#def + 1] = name end
  end
  while i <= n do
    local ch = text:sub(i, i)
    if ch == "{" then
      if depth == 0 then
        if text:sub(start, i - 1):match('extern%s*"C"%s*$') then externc = externc + 1; start = i + 1
        else
          local c = text:sub(start, i - 1)
          if c:match("%)%s*$") or c:match("%)%s*const%s*$") then chunk(i, "{") end
          depth = 1
        end
      else depth = depth + 1 end
    elseif ch == "}" then
      if depth == 0 and externc > 0 then externc = externc - 1; start = i + 1
      elseif depth > 0 then depth = depth - 1; if depth == 0 then start = i + 1 end end
    elseif ch == ";" and depth == 0 then
      chunk(i, ";")
    end
    i = i + 1
  end
  return decl, def
end

-- Functions declared outside the folder that defines them: a list of
-- messages. files: {path = text}.
local function foreign_declarations(files)
  local home = {} -- name -> folder that defines it
  local decls = {}
  for f, text in pairs(files) do
    local d, df = functions(text)
    for _, name in ipairs(df) do home[name] = folder_of(f) end
    decls[f] = d
  end
  local bad = {}
  for f, names in pairs(decls) do
    for _, name in ipairs(names) do
      local h = home[name]
      if h and h ~= folder_of(f) then
        bad[#bad + 1] = string.format("%s declares %s, which %s defines: include that folder's header instead", f,
          name, h)
      end
    end
  end
  table.sort(bad)
  return bad
end

local function real_files()
  local t = {}
  for _, f in ipairs(sources()) do t[f] = read(f) end
  return t
end

describe("the layout of src/", function()
  it("has every source file in a layer's folder, tracked by git or not", function()
    local files = sources()
    assert.is_true(#files > 150, "too few source files found: " .. #files)
    for _, f in ipairs(files) do
      assert.truthy(folder_of(f), f .. " is in no layer's folder")
    end
  end)

  it("includes only its own folder and the layers below it, folder-qualified, project headers with quotes", function()
    local files = sources()
    local edges = includes(files)
    assert.is_true(#edges > 200, "too few includes found: " .. #edges)
    assert.are.same({}, violations(edges, project_file(file_set(files))))
  end)

  it("would catch an upward include, a sideways one, an unqualified one and a project header in <...>", function()
    local exists = project_file({ ["core/gs_tensor.h"] = true, ["ops/gs_ops.h"] = true })
    local bad = violations({
      { file = "src/core/gs_tensor.c", inc = "autograd/gs_autograd.h" },
      { file = "src/backend/cpu/cpu_copy.c", inc = "backend/cuda/cuda_kernels.h" },
      { file = "src/ops/gs_op_view.c", inc = "gs_ops.h" },
      { file = "src/ops/gs_op_view.c", inc = "core/gs_tensor.h", angle = true },
      { file = "src/ops/gs_op_view.c", inc = "gs_tensor.h", angle = true },
      { file = "src/backend/cuda/kernels/pool.cu", inc = "ops/gs_ops.h" },
      { file = "src/backend/sim/backend_sim.c", inc = "backend/cpu/backend_cpu.h" }, -- allowed
      { file = "src/bind/lua_core.c", inc = "core/gs_tensor.h" },                   -- allowed
      { file = "src/bind/lua_core.c", inc = "stdio.h", angle = true },              -- allowed
      { file = "src/backend/cuda/kernels/copy.cu", inc = "backend/cuda/kernels/common.cuh" }, -- allowed
    }, exists)
    assert.are.equal(6, #bad, table.concat(bad, "\n"))
  end)

  it("has no circle among headers, .h or .cuh", function()
    local circle = header_circle(includes(sources()))
    assert.is_nil(circle, "include circle: " .. tostring(circle))
  end)

  it("would catch a circle among .cuh headers", function()
    local circle = header_circle({
      { file = "src/backend/cuda/kernels/a.cuh", inc = "backend/cuda/kernels/b.cuh" },
      { file = "src/backend/cuda/kernels/b.cuh", inc = "backend/cuda/kernels/a.cuh" },
    })
    assert.truthy(circle and circle:find("a.cuh -> backend/cuda/kernels/b.cuh", 1, true), tostring(circle))
  end)

  it("declares a function only in the folder that defines it (no arrow without an include)", function()
    assert.are.same({}, foreign_declarations(real_files()))
  end)

  it("would catch another layer's function declared instead of included", function()
    local bad = foreign_declarations({
      ["src/core/gs_common.h"] = "uint64_t gs_queue_newest_qid(void);\nstatic inline int f(void) { return 1; }\n",
      ["src/backend/sim/sim_queue.c"] = "uint64_t gs_queue_newest_qid(void) { return 0; }\n",
      ["src/main.c"] = "int gsK_run(lua_State *L, const char *c) __attribute__((weak));\nint main(void) { return 0; }\n",
      ["src/jupyter/kernel_main.c"] = "int gsK_run(lua_State *L, const char *c) {\n  return 0;\n}\n",
      ["src/jupyter/kernel.h"] = "int gsK_run(lua_State *L, const char *c);\n", -- its own folder: fine
    })
    assert.are.equal(2, #bad, table.concat(bad, "\n"))
    assert.truthy(bad[1]:find("gs_common.h declares gs_queue_newest_qid", 1, true), bad[1])
    assert.truthy(bad[2]:find("main.c declares gsK_run", 1, true), bad[2])
  end)
end)
