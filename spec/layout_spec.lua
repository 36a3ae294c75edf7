-- spec/layout_spec.lua: the folders of src/ are the architecture's layers
-- (docs/design.md). A file includes its own folder and the folders below
-- it, never one above, always folder-qualified ("core/gs_tensor.h"), and
-- no header includes itself back through others. Read from the sources
-- with the same rule a reviewer would apply by grep.
-- Layers from the bottom up. The simulated GPU may include the CPU
-- kernels' headers (it queues them); the CUDA backend's kernels live in
-- kernels/ and count as backend/cuda.
local RANK = {
  ["core"] = 0,
  ["backend/cpu"] = 1, ["backend/cuda"] = 1,
  ["backend/sim"] = 2,
  ["backend"] = 3,          -- registry.c: the one file naming the backends
  ["ops"] = 4, ["autograd"] = 5, ["io"] = 6, ["dist"] = 7, ["bind"] = 8,
  ["shell"] = 9, ["jupyter"] = 10, ["."] = 11, -- src/main.c
}
-- Backends are side by side: neither includes the other, except sim -> cpu.
local SIDEWAYS_OK = { ["backend/sim"] = { ["backend/cpu"] = true } }

local function folder_of(path)
  if path:match("^kernels/") then return "backend/cuda" end
  local dir = path:match("^src/(.+)/[^/]+$")
  return dir or "."
end

local function lines_of(cmd)
  local p = assert(io.popen(cmd))
  local out = {}
  for l in p:lines() do out[#out + 1] = l end
  p:close()
  return out
end

-- The violations in a list of {file, included} pairs (paths as written in
-- the #include, relative to src/ or kernels/).
local function violations(edges)
  local bad = {}
  for _, e in ipairs(edges) do
    local from = folder_of(e.file)
    local inc = e.inc
    local to
    if inc:match("%.cuh$") and not inc:find("/") then to = "backend/cuda" -- kernels/ beside each other
    elseif not inc:find("/") then bad[#bad + 1] = e.file .. ": " .. inc .. " is not folder-qualified"
    else to = inc:match("^(.+)/[^/]+$") end
    if to then
      local rf, rt = RANK[from], RANK[to]
      if not rf or not rt then
        bad[#bad + 1] = e.file .. ": " .. inc .. " is in no known layer"
      elseif from ~= to and rt >= rf and not (SIDEWAYS_OK[from] or {})[to] then
        bad[#bad + 1] = string.format("%s (%s) includes %s (%s, a layer above or beside it)", e.file, from, inc, to)
      end
    end
  end
  return bad
end

local function includes()
  local edges = {}
  for _, f in ipairs(lines_of("git ls-files 'src/*.c' 'src/*.h' 'kernels/*.cu' 'kernels/*.cuh'")) do
    local fh = assert(io.open(f))
    for l in fh:lines() do
      local inc = l:match('^%s*#%s*include%s+"([^"]+)"')
      if inc then edges[#edges + 1] = { file = f, inc = inc } end
    end
    fh:close()
  end
  return edges
end

describe("the layout of src/", function()
  it("has every source file in a layer's folder", function()
    for _, f in ipairs(lines_of("git ls-files 'src/*.c' 'src/*.h'")) do
      assert.truthy(RANK[folder_of(f)], f .. " is in no layer's folder")
    end
  end)

  it("includes only its own folder and the layers below it, folder-qualified", function()
    local edges = includes()
    assert.is_true(#edges > 200, "too few includes found: " .. #edges)
    local bad = violations(edges)
    assert.are.same({}, bad)
  end)

  it("would catch an upward include, a sideways one and an unqualified one", function()
    local bad = violations({
      { file = "src/core/gs_tensor.c", inc = "autograd/gs_autograd.h" },
      { file = "src/backend/cpu/cpu_copy.c", inc = "backend/cuda/cuda_kernels.h" },
      { file = "src/ops/gs_op_view.c", inc = "gs_ops.h" },
      { file = "src/backend/sim/backend_sim.c", inc = "backend/cpu/backend_cpu.h" }, -- allowed
      { file = "src/bind/lua_core.c", inc = "core/gs_tensor.h" },                   -- allowed
    })
    assert.are.equal(3, #bad, table.concat(bad, "\n"))
  end)

  it("has no circle among headers", function()
    local deps = {}
    for _, e in ipairs(includes()) do
      if e.file:match("%.h$") then
        local key = e.file:gsub("^src/", "")
        deps[key] = deps[key] or {}
        table.insert(deps[key], e.inc)
      end
    end
    local state = {}
    local function visit(h, path)
      if state[h] == "done" then return end
      assert(state[h] ~= "open", "include circle: " .. table.concat(path, " -> ") .. " -> " .. h)
      state[h] = "open"
      path[#path + 1] = h
      for _, d in ipairs(deps[h] or {}) do visit(d, path) end
      path[#path] = nil
      state[h] = "done"
    end
    for h in pairs(deps) do visit(h, {}) end
  end)
end)
