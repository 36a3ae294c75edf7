-- r:picture() (issue 30, docs/kernel-lab.md "A picture of a block"): the
-- launch's first block drawn at the terminal, one cell per thread with
-- the elements it read, wrote and changed with an atomic.
local torch = require("torch")

local function with_sim()
  collectgarbage()
  local old_n, old_cap = torch._sim_configure(1)
  finally(function()
    collectgarbage()
    torch._sim_configure(old_n, old_cap)
  end)
end

describe("kernel lab: r:picture()", function()
  it("a 1-d block of 4 threads: one cell per thread, what it read and wrote, from 0", function()
    with_sim()
    local map = torch.cuda.kernel(function(out, a)
      local i = threadIdx.x
      out[i] = a[i] + 10
    end, { name = "map" })
    local a, out = torch.arange(4, { dtype = torch.float32 }):cuda(), torch.zeros(4):cuda()
    local r = map:launch(1, 4, out, a)
    assert.are.equal(table.concat({
      "kernel:map: block (0,0,0) of 4x1x1 threads; r read, w wrote, a atomic (indices from 0)",
      "┌────────┬────────┬────────┬────────┐",
      "│t0      │t1      │t2      │t3      │",
      "│r a[0]  │r a[1]  │r a[2]  │r a[3]  │",
      "│w out[0]│w out[1]│w out[2]│w out[3]│",
      "└────────┴────────┴────────┴────────┘",
    }, "\n"), r:picture())
  end)

  it("a 2-d block: cells at (x,y); shared arrays, repeats and atomics; only the first block", function()
    with_sim()
    local k = torch.cuda.kernel(function(out, a, n)
      local s = shared(4)
      local t = threadIdx.y * blockDim.x + threadIdx.x
      local i = blockIdx.x * 4 + t
      s[t] = a[i]
      syncthreads()
      if t == 0 then atomic_add(out, 0, s[0] + s[1] + s[2] + s[3] + s[0]) end
    end, { name = "block_sum" })
    local a, out = torch.arange(8, { dtype = torch.float32 }):cuda(), torch.zeros(1):cuda()
    local r = k:launch(2, { 2, 2 }, out, a, 8)
    local pic = r:picture()
    assert.are.equal(table.concat({
      "kernel:block_sum: block (0,0,0) of 2x2x1 threads; r read, w wrote, a atomic (indices from 0)",
      "┌────────────────┬────────────────┐",
      "│(0,0)           │(1,0)           │",
      "│r a[0]          │r a[1]          │",
      "│w shared[0]     │w shared[1]     │",
      "│r shared[0..3]×5│                │",
      "│a out[0]        │                │",
      "├────────────────┼────────────────┤",
      "│(0,1)           │(1,1)           │",
      "│r a[2]          │r a[3]          │",
      "│w shared[2]     │w shared[3]     │",
      "└────────────────┴────────────────┘",
    }, "\n"), pic)
    assert.are.equal(6 + 26, out:item()) -- both blocks ran; the picture shows block 0 only
  end)

  it("folds indices: a run, a progression, a scatter; big blocks show their first rows", function()
    local P = require("torch.kernel_lab_picture")
    local function list(first, step, count)
      local t = { n = count }
      for k = 1, count do t[k] = first + step * (k - 1) end
      return t
    end
    assert.are.equal("[0..31]", P.indices(list(0, 1, 32)))
    assert.are.equal("[3,35..995]", P.indices(list(3, 32, 32)))
    assert.are.equal("[1,4,.. 3 elements]", P.indices({ n = 3, 9, 1, 4 }))
    assert.are.equal("[7]×3", P.indices({ n = 3, 7, 7, 7 }))
    with_sim()
    local copy = torch.cuda.kernel(function(out, a)
      local i = blockIdx.x * blockDim.x + threadIdx.x
      out[i] = a[i]
    end, { name = "copy" })
    local r = copy:launch(2, 256, torch.zeros(512):cuda(), torch.ones(512):cuda())
    local pic = r:picture()
    assert.truthy(pic:find("(threads 0..27 of 256 shown)", 1, true), pic)
    assert.truthy(pic:find("│t27       │", 1, true), pic)
    assert.falsy(pic:find("a[256]", 1, true), pic)
    for line in pic:gmatch("[^\n]+") do assert.is_true(utf8.len(line) <= 90, line) end
    assert.has_error(function() r:picture(1) end, "picture() takes no arguments: r:picture() draws the launch's first block")
  end)
end)
