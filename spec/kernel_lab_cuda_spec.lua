-- k:cuda_source() (issue 30, docs/kernel-lab.md "The kernel as CUDA C"):
-- the kernel's Lua text, read from its file or chunk, translated to CUDA
-- C, typed by use and by the last launch; what it cannot translate is
-- refused with the line and the list of what it can; the lesson's kernels
-- compile with `nvcc -ptx` (pending without nvcc).
local torch = require("torch")
local H = require("helpers")

local function with_sim()
  collectgarbage()
  local old_n, old_cap = torch._sim_configure(1)
  finally(function()
    collectgarbage()
    torch._sim_configure(old_n, old_cap)
  end)
end

local add = torch.cuda.kernel(function(out, a, b, n)
  local i = blockIdx.x * blockDim.x + threadIdx.x
  if i < n then out[i] = a[i] + b[i] end
end, { name = "add" })

local TILE = 16
local tiled = torch.cuda.kernel(function(c, a, b, n)
  local ta, tb = shared(TILE * TILE), shared(TILE * TILE)
  local tx, ty = threadIdx.x, threadIdx.y
  local row, col = blockIdx.y * TILE + ty, blockIdx.x * TILE + tx
  local acc = 0
  for t = 0, n // TILE - 1 do
    ta[ty * TILE + tx] = a[row * n + t * TILE + tx]
    tb[ty * TILE + tx] = b[(t * TILE + ty) * n + col]
    syncthreads()
    for k = 0, TILE - 1 do acc = acc + ta[ty * TILE + k] * tb[k * TILE + tx] end
    syncthreads()
  end
  c[row * n + col] = acc
end, { name = "matmul_tiled" })

local dot = torch.cuda.kernel(function(out, a, b, n)
  local s = shared(128)
  local t = threadIdx.x
  local i = blockIdx.x * blockDim.x + t
  s[t] = i < n and a[i] * b[i] or 0
  syncthreads()
  local h = blockDim.x // 2
  while h > 0 do
    if t < h then s[t] = s[t] + s[t + h] end
    syncthreads()
    h = h // 2
  end
  if t == 0 then atomic_add(out, 0, s[0]) end
end, { name = "dot" })

local scan = torch.cuda.kernel(function(out, a, n)
  local s = shared(64)
  local t = threadIdx.x
  s[t] = a[t]
  syncthreads()
  local d = 1
  while d < n do
    local v = s[t]
    if t >= d then v = v + s[t - d] end
    syncthreads()
    s[t] = v
    syncthreads()
    d = d * 2
  end
  out[t] = s[t]
end, { name = "scan" })

local NVCC
for _, p in ipairs({ "nvcc", "/usr/local/cuda/bin/nvcc" }) do
  if not NVCC and os.execute("command -v " .. p .. " >/dev/null 2>&1") then NVCC = p end
end

describe("kernel lab: k:cuda_source()", function()
  it("vector add: CUDA C with its arrays (const when only read) and its scalar", function()
    assert.are.equal(table.concat({
      'extern "C" __global__ void add(float *out, const float *a, const float *b, int n) {',
      "  int i = ((blockIdx.x * blockDim.x) + threadIdx.x);",
      "  if (i < n) {",
      "    out[i] = (a[i] + b[i]);",
      "  }",
      "}",
      "",
    }, "\n"), add:cuda_source())
  end)

  it("shared arrays with upvalue sizes, loops, barriers, c and x or y, atomics; locals typed by use", function()
    local src = tiled:cuda_source()
    assert.truthy(src:find("  const int TILE = 16;\n  __shared__ float ta[256];\n  __shared__ float tb[256];", 1, true), src)
    assert.truthy(src:find("float acc = 0;", 1, true), src)
    assert.truthy(src:find("for (int t = 0; t <= ((n / TILE) - 1); t += 1) {", 1, true), src)
    assert.are.equal(2, select(2, src:gsub("__syncthreads%(%);", "")))
    local d = dot:cuda_source()
    assert.truthy(d:find("s[t] = ((i < n) ? (a[i] * b[i]) : 0);", 1, true), d)
    assert.truthy(d:find("int h = (blockDim.x / 2);", 1, true), d)
    assert.truthy(d:find("atomicAdd(&out[0], s[0]);", 1, true), d)
    assert.truthy(d:find("void dot(float *out, const float *a", 1, true), d)
  end)

  it("the last launch types the arrays and scalars; math maps to CUDA's functions", function()
    with_sim()
    local k = torch.cuda.kernel(function(out, x, scale)
      local i = threadIdx.x
      out[i] = math.floor(math.sqrt(x[i]) * scale) + i / 2
    end, { name = "sq" })
    assert.truthy(k:cuda_source():find("void sq(float *out, const float *x, int scale)", 1, true))
    k:launch(1, 4, torch.zeros(4, { dtype = torch.int32 }):cuda(), torch.ones(4):cuda(), 0.5)
    local src = k:cuda_source()
    assert.truthy(src:find("void sq(int *out, const float *x, float scale)", 1, true), src)
    assert.truthy(src:find("out[i] = ((int)floorf((sqrtf(x[i]) * scale)) + ((float)i / 2));", 1, true), src)
  end)

  it("refuses what it cannot translate, naming the line and listing what it can", function()
    local k = torch.cuda.kernel(function(out)
      local t = { 1, 2 }
      out[0] = t[1]
    end)
    local ok, err = pcall(k.cuda_source, k)
    assert.is_false(ok)
    assert.matches("^cuda_source: line %d+: a table is not supported by the CUDA translation %(supported: local " ..
      "variables, assignments, if/elseif/else, numeric for, while", err)
    local gen = torch.cuda.kernel(function(out) for _, v in ipairs({}) do out[0] = v end end)
    assert.matches("a generic for %(for ... in ...%) is not supported", select(2, pcall(gen.cuda_source, gen)))
    local cond = torch.cuda.kernel(function(out, n) if n then out[0] = 1 end end)
    assert.matches("a condition that is a number %(in Lua 0 is true", select(2, pcall(cond.cuda_source, cond)))
    assert.has_error(function() add:cuda_source(1) end, "cuda_source() takes no arguments")
  end)

  it("a kernel typed at the prompt has no source text: it says so; one loaded from text translates", function()
    local typed = torch.cuda.kernel(load("return function(out) out[threadIdx.x] = 1 end", "=stdin")())
    local ok, err = pcall(typed.cuda_source, typed)
    assert.is_false(ok)
    assert.matches("cuda_source: the kernel's source text is unavailable: it was typed at the prompt", err, 1, true)
    local loaded = torch.cuda.kernel(load("return function(out)\n  out[threadIdx.x] = 1\nend")(), { name = "ones" })
    assert.are.equal('extern "C" __global__ void ones(float *out) {\n  out[threadIdx.x] = 1;\n}\n', loaded:cuda_source())
  end)

  local nvcc_it = NVCC and H.plain_it(it, pending, "runs nvcc: the sanitizers add nothing") or
    function(name) pending(name .. " (no nvcc on PATH or at /usr/local/cuda/bin)") end
  nvcc_it("the lesson's vector add, dot product, prefix sum and tiled matmul compile with nvcc -ptx", function()
    local dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir -p " .. dir))
    finally(function() os.execute("rm -rf " .. dir) end)
    local f = io.open(dir .. "/lab.cu", "w")
    for _, k in ipairs({ add, dot, scan, tiled }) do f:write(k:cuda_source(), "\n") end
    f:close()
    local p = io.popen(NVCC .. " -ptx " .. dir .. "/lab.cu -o " .. dir .. "/lab.ptx 2>&1; echo rc=$?")
    local out = p:read("a")
    p:close()
    assert.truthy(out:find("rc=0", 1, true), out)
    local ptx = io.open(dir .. "/lab.ptx"):read("a")
    for _, name in ipairs({ "add", "dot", "scan", "matmul_tiled" }) do
      assert.truthy(ptx:find(".entry " .. name .. "(", 1, true), name)
    end
  end)
end)
