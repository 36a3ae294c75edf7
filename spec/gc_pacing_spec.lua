-- gc_pacing_spec.lua: the binding tells Lua's collector about tensor memory
-- (src/lua_core.c): a full collection runs once fresh tensor data has grown
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
