-- gc_pacing_spec.lua: the binding tells Lua's collector about tensor memory
-- (src/bind/lua_core.c): a full collection runs once fresh tensor data has grown
-- by as much as is live, and "live" counts device memory too. With only
-- host memory counted, a GPU workload holding gigabytes on its devices ran
-- a full collection every 64 MB of new tensors.
local torch = require("torch")
local cuda = torch.cuda
local MiB = 1 << 20

local saved_n, saved_cap
local function gc() collectgarbage(); collectgarbage() end

describe("collector pacing with device memory", function()
  setup(function() saved_n, saved_cap = torch._sim_configure(1) end)
  teardown(function() gc(); torch._sim_configure(saved_n, saved_cap) end)

  it("runs full collections in proportion to the live device memory, not every 64 MB", function()
    gc()
    torch._sim_configure(1, 1024 * MiB)
    -- 256 MiB live on the device (never touched: the simulator's pages stay unmapped)
    local live = torch.empty(64 * MiB, { device = "cuda:0" })
    -- garbage until the binding runs a full collection, which sets the next limit from what is live
    local fc0 = torch._gc_pacing().full_collections
    for _ = 1, 200 do
      local _ = torch.empty(4 * MiB, { device = "cuda:0" }) -- 16 MiB of garbage each
      if torch._gc_pacing().full_collections > fc0 then break end
    end
    assert.is_true(torch._gc_pacing().full_collections > fc0)
    assert.is_true(torch._gc_pacing().limit >= 256 * MiB, "the limit follows live device memory")
    local before = torch._gc_pacing().full_collections
    for _ = 1, 64 do -- 1 GiB of garbage, 16 MiB at a time
      local _ = torch.empty(4 * MiB, { device = "cuda:0" })
    end
    local full = torch._gc_pacing().full_collections - before
    -- about 1 GiB / 256 MiB = 4; counting host memory only, 1 GiB / 64 MiB = 16
    assert.is_true(full <= 5, "full collections: " .. full)
    -- and the garbage was reclaimed on the way: under the 1 GiB cap, no out-of-memory
    assert.is_true(cuda.max_memory_allocated(0) <= 768 * MiB, "peak " .. cuda.max_memory_allocated(0))
    live = nil
    gc()
    assert.are.equal(0, cuda.memory_allocated(0))
  end)
end)

-- The collector's device query (gs_device_bytes_allocated) reads the caching
-- pools only: no driver call, and devices never used are skipped. Asking
-- each backend's mem_stats instead made a CPU-only session on a GPU machine
-- count the GPUs (loading the driver) and create a CUDA context on every one
-- at its first full collection.
describe("the collector's device query", function()
  local R = require("gshell_run")
  -- CPU garbage until the binding has run a few full collections
  local CPU_WORK = [[
local fc0 = torch._gc_pacing().full_collections
for _ = 1, 200 do local _ = torch.empty(4 * 1024 * 1024) end
print("full collections", torch._gc_pacing().full_collections - fc0)
]]

  local function sh(cmd)
    local p = assert(io.popen("unset LD_PRELOAD; " .. cmd .. " 2>&1", "r"))
    local out = p:read("a")
    local ok = p:close()
    assert(ok, cmd .. "\n" .. out)
  end

  it("does not load the NVIDIA driver in a CPU-only session", function()
    local reason = torch.cuda.unavailable_reason()
    if reason and reason:find("built without CUDA", 1, true) then
      return pending("needs a gshell built with CUDA (the CUDA runtime loads libcuda.so.1)")
    end
    -- a stand-in libcuda.so.1 that only notes it was loaded (the CUDA
    -- runtime then finds none of the driver's functions in it: no device)
    local dir = os.tmpname()
    os.remove(dir)
    sh("mkdir -p " .. dir)
    R.write_file(dir .. "/fake.c", [[
#include <stdio.h>
#include <stdlib.h>
__attribute__((constructor)) static void loaded(void) {
  FILE *f = fopen(getenv("GS_FAKE_CUDA_MARK"), "a");
  if (f) { fputs("loaded\n", f); fclose(f); }
}
]])
    sh("cc -shared -fPIC -Wl,-soname,libcuda.so.1 -o " .. dir .. "/libcuda.so.1 " .. dir .. "/fake.c")
    local mark = dir .. "/mark"
    local script = CPU_WORK .. [[
print("driver loaded by the collector", io.open(os.getenv("GS_FAKE_CUDA_MARK")) ~= nil)
torch.cuda.device_count()
print("driver loaded by device_count", io.open(os.getenv("GS_FAKE_CUDA_MARK")) ~= nil)
]]
    local out, err, code = R.run({ "-e", script }, "", { LD_LIBRARY_PATH = dir, GS_FAKE_CUDA_MARK = mark })
    os.execute("rm -rf " .. R.quote(dir))
    assert.are.equal(0, code, err)
    local n = tonumber(out:match("full collections\t(%d+)"))
    assert.is_true(n ~= nil and n >= 2, out)
    assert.truthy(out:find("driver loaded by the collector\tfalse", 1, true), out)
    -- the stand-in is the one the runtime would load: counting devices does
    assert.truthy(out:find("driver loaded by device_count\ttrue", 1, true), out)
  end)

  it("does not start a simulated device: its first use still pays the modelled context cost", function()
    local script = CPU_WORK .. [[
local t0 = torch.clock()
torch.ones(4, {device = "cuda:1"})
print(string.format("first use %.3f", torch.clock() - t0))
]]
    local out, err, code = R.run({ "-e", script }, "", { GSHELL_SIM_GPUS = "2", GSHELL_SIM_CONTEXT_MS = "300",
      CUDA_VISIBLE_DEVICES = "" })
    assert.are.equal(0, code, err)
    local n = tonumber(out:match("full collections\t(%d+)"))
    assert.is_true(n ~= nil and n >= 2, out)
    local first = tonumber(out:match("first use ([%d.]+)"))
    assert.is_true(first ~= nil and first >= 0.3, out)
  end)
end)
