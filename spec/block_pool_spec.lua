-- The caching allocator shared by real and simulated GPUs (src/core/gs_block_pool.c):
-- best fit with splitting and merging, as PyTorch's, driven through a small
-- C program (spec/support/c/pool_probe.c) that gives it malloc'ed segments.
-- The figures through simulated devices are in device_memory_spec.lua.
local MiB = 1 << 20

local tmp
local function sh(cmd) -- without the sanitizer preload, which would flag leaks in cc
  local p = assert(io.popen("unset LD_PRELOAD; " .. cmd .. " 2>&1", "r"))
  local out = p:read("a")
  local ok = p:close()
  return out, ok
end

-- Runs a script of probe commands; returns the output lines as a list.
local function run(lines)
  local f = assert(io.open(tmp .. "/in", "w"))
  f:write(table.concat(lines, "\n"), "\n")
  f:close()
  local out, ok = sh(tmp .. "/pool_probe < " .. tmp .. "/in")
  assert(ok, out)
  local r = {}
  for l in out:gmatch("[^\n]+") do
    assert(not l:find("^error"), l)
    r[#r + 1] = l
  end
  return r
end

-- "allocated A reserved R ..." -> {allocated = A, reserved = R, ...}
local function stats(line)
  local t = {}
  for k, v in line:gmatch("(%a+) (%d+)") do t[k] = tonumber(v) end
  return t
end

describe("the device caching allocator (gs_block_pool)", function()
  setup(function()
    tmp = sh("mktemp -d"):gsub("%s+$", "")
    local out, ok = sh("cc -std=gnu11 -Isrc -o " .. tmp .. "/pool_probe spec/support/c/pool_probe.c src/core/gs_block_pool.c -lpthread")
    assert(ok, out)
  end)
  teardown(function() if tmp then os.execute("rm -rf " .. tmp) end end)

  it("rounds every request up to 512 bytes and reuses a freed block for the same size", function()
    local r = run({ "alloc a 12", "alloc b 516", "stats", "free a", "alloc c 500", "stats" })
    assert.are.equal("a 0 512", r[1])
    assert.are.equal("b 0 1024", r[2])
    assert.are.same({ allocated = 1536, reserved = 1536, segments = 2, hits = 0, splits = 0, merges = 0,
                      flushes = 0, ooms = 0 }, stats(r[3]))
    assert.are.equal("c 0 512", r[4])
    local s = stats(r[5])
    assert.are.equal(1, s.hits)
    assert.are.equal(1536, s.reserved)
  end)

  it("takes the smallest free block that fits (best fit), not the first", function()
    local r = run({ "alloc big 8388608", "alloc mid 4194304", "alloc small 3145728",
                    "free big", "free mid", "free small",
                    "alloc x 3670016", "stats", "free_blocks" })
    -- 3.5 MiB goes in the 4 MiB block; the 0.5 MiB left is too small to split off a large block
    assert.are.equal("x 0 " .. 4 * MiB, r[4])
    local s = stats(r[5])
    assert.are.equal(4 * MiB, s.allocated)
    assert.are.equal(15 * MiB, s.reserved)
    assert.are.equal(0, s.splits)
    assert.are.equal("free " .. 8 * MiB .. " " .. 3 * MiB, r[6])
  end)

  it("splits a larger free block, and the rest serves the next request", function()
    local r = run({ "alloc a 8388608", "free a", "alloc b 2097152", "free_blocks", "alloc c 6291456", "stats" })
    assert.are.equal("b 0 " .. 2 * MiB, r[2])
    assert.are.equal("free " .. 6 * MiB, r[3])
    assert.are.equal("c " .. 2 * MiB .. " " .. 6 * MiB, r[4]) -- right after b, in the same segment
    local s = stats(r[5])
    assert.are.same({ 8 * MiB, 8 * MiB, 1, 2, 1 }, { s.allocated, s.reserved, s.segments, s.hits, s.splits })
  end)

  it("merges a freed block with its free neighbours, so the segment can be reused whole and released", function()
    local r = run({ "pytorch", "alloc a 100", "alloc b 100", "alloc c 100", "free a", "free c", "free_blocks",
                    "free b", "free_blocks", "alloc d 1048576", "stats", "free d", "release", "raw" })
    -- small requests are carved out of one 2 MiB segment, one after another
    assert.are.same({ "a 0 512", "b 512 512", "c 1024 512" }, { r[1], r[2], r[3] })
    assert.are.equal("free " .. (2 * MiB - 1024) .. " 512", r[4]) -- a alone; c merged with the rest
    assert.are.equal("free " .. 2 * MiB, r[5])                      -- b joins both: one block again
    assert.are.equal("d 0 " .. MiB, r[6])                           -- the largest small request fits again
    assert.are.same({ 1, 3 }, { stats(r[7]).segments, stats(r[7]).hits }) -- b, c and d came from the cache
    assert.are.equal("released " .. 2 * MiB, r[8])
    assert.are.equal("raw_live 0", r[9])
  end)

  it("follows PyTorch's segment sizes: 2 MiB small, 20 MiB below 10 MiB, then multiples of 2 MiB", function()
    local r = run({ "pytorch", "alloc s 1000", "alloc m 3000000", "stats", "alloc l 11000000", "stats" })
    assert.are.equal(22 * MiB, stats(r[3]).reserved)
    -- 11 MB fits in the 20 MiB segment's free rest (best fit), so no new segment
    assert.are.equal("l " .. (3000320) .. " 11000320", r[4])
    assert.are.equal(2, stats(r[5]).segments)
    r = run({ "pytorch", "alloc l 11000000", "stats" })
    assert.are.equal(12 * MiB, stats(r[2]).reserved)
    -- a 1 MiB request is small, one just above is large: the pools do not mix
    r = run({ "pytorch", "alloc a 3000000", "free a", "alloc b 1048576", "stats" })
    assert.are.equal(2, stats(r[3]).segments)
  end)

  it("keeps large leftovers of 1 MiB or less inside the block (no split), as PyTorch", function()
    local r = run({ "alloc a 3145728", "free a", "alloc b 2097152", "stats", "free b", "alloc c 2097664", "stats" })
    assert.are.equal("b 0 " .. 3 * MiB, r[2]) -- 1 MiB left over: not split, counted as allocated
    assert.are.equal(0, stats(r[3]).splits)
    assert.are.equal(3 * MiB, stats(r[3]).allocated)
    assert.are.equal("c 0 " .. 3 * MiB, r[4])
    assert.are.equal(3 * MiB, stats(r[5]).reserved)
  end)

  it("fragmentation: a request larger than every free piece gets a new segment; merging heals it", function()
    local r = run({ "pytorch", "alloc a 6291456", "alloc b 6291456", "alloc c 6291456", "free a", "free c",
                    "free_blocks", "alloc d 10485760", "stats", "free b", "free_blocks", "alloc e 16777216", "stats" })
    -- one 20 MiB segment: a, b, c of 6 MiB and 2 MiB left
    assert.are.same({ "a 0 " .. 6 * MiB, "b " .. 6 * MiB .. " " .. 6 * MiB, "c " .. 12 * MiB .. " " .. 6 * MiB },
      { r[1], r[2], r[3] })
    assert.are.equal("free " .. 8 * MiB .. " " .. 6 * MiB, r[4]) -- c merged with the 2 MiB tail
    assert.are.equal("d 0 " .. 10 * MiB, r[5])                    -- fits no piece: a new segment
    assert.are.equal(30 * MiB, stats(r[6]).reserved)
    assert.are.equal("free " .. 20 * MiB, r[7])                   -- b freed: the first segment is whole again
    assert.are.equal("e 0 " .. 16 * MiB, r[8])                    -- and serves a 16 MiB request
    assert.are.equal(30 * MiB, stats(r[9]).reserved)
  end)

  it("release gives back only wholly free segments", function()
    local r = run({ "alloc a 4194304", "free a", "alloc b 2097152", "alloc c 1000", "free c", "release", "stats" })
    assert.are.equal("released 1024", r[4]) -- c's segment; b's still holds a live block (and a free 2 MiB)
    local s = stats(r[5])
    assert.are.same({ 2 * MiB, 4 * MiB, 1 }, { s.allocated, s.reserved, s.segments })
  end)

  it("under a limit, releases the cache before failing, then fails cleanly", function()
    local r = run({ "limit 10485760", "alloc a 6291456", "free a", "alloc b 8388608", "stats",
                    "alloc c 4194304", "stats" })
    assert.are.equal("b 0 " .. 8 * MiB, r[2]) -- the cached 6 MiB were given back first
    local s = stats(r[3])
    assert.are.same({ 8 * MiB, 1, 0 }, { s.reserved, s.flushes, s.ooms })
    assert.are.equal("c failed", r[4])
    s = stats(r[5])
    assert.are.same({ 8 * MiB, 8 * MiB, 1 }, { s.allocated, s.reserved, s.ooms })
  end)
  it("among free blocks of the same size, takes the lowest address (PyTorch's set order)", function()
    -- 64 blocks of 512 bytes from one 2 MiB segment; every other one freed, in a scrambled order,
    -- so none merge; each request then takes the lowest free address left
    local cmds = { "pytorch" }
    for i = 0, 63 do cmds[#cmds + 1] = "alloc b" .. i .. " 512" end
    for _, i in ipairs({ 37, 5, 61, 13, 1, 29, 45, 9, 53, 21, 3, 57, 33, 17, 49, 25, 41, 7, 59, 11 }) do
      cmds[#cmds + 1] = "free b" .. i
    end
    for k = 1, 5 do cmds[#cmds + 1] = "alloc n" .. k .. " 512" end
    local r = run(cmds)
    assert.are.same({ "n1 512 512", "n2 1536 512", "n3 2560 512", "n4 3584 512", "n5 4608 512" },
      { r[65], r[66], r[67], r[68], r[69] })
  end)

  it("a stream's cached blocks serve that stream only, and the best fit is found within its own cache", function()
    local r = run({ "alloc_on 1 a 4096", "alloc_on 2 b 1024", "free a", "free b",
                    "alloc_on 2 c 1024", "alloc_on 1 d 1024", "alloc_on 3 e 1024", "stats" })
    assert.are.equal("c 0 1024", r[3])    -- stream 2 reuses its own block
    assert.are.equal("d 0 1024", r[4])    -- stream 1 splits its 4 KiB block (not stream 2's)
    assert.are.equal("e 0 1024", r[5])    -- stream 3 has no cache: a new segment
    local s = stats(r[6])
    assert.are.same({ 3, 2, 1 }, { s.segments, s.hits, s.splits })
  end)

  it("a retired block stops counting as allocated at once, and is reused only after its free", function()
    local r = run({ "alloc a 4096", "retire a", "stats", "alloc b 4096", "free a", "stats", "alloc c 4096", "stats" })
    local s = stats(r[2])
    assert.are.same({ 0, 4096 }, { s.allocated, s.reserved }) -- PyTorch's free(): allocated drops now
    assert.are.equal("b 0 4096", r[3])                         -- a new segment: a's block is not reusable yet
    s = stats(r[4])
    assert.are.same({ 4096, 8192 }, { s.allocated, s.reserved }) -- a's free did not count it twice
    assert.are.equal("c 0 4096", r[5])
    assert.are.same({ 8192, 8192, 1 }, { stats(r[6]).allocated, stats(r[6]).reserved, stats(r[6]).hits })
  end)

  it("stays consistent through thousands of random allocations and frees on several streams", function()
    -- every block is filled at its alloc and checked at its free (no two live blocks overlap), and
    -- the free blocks plus the allocated ones always make up exactly the reserved bytes
    local rng = 12345
    local function rand(n) rng = (rng * 1103515245 + 12345) % 2147483648; return rng % n end
    local cmds, live, nlive, checks = { "pytorch" }, {}, 0, 0
    local sizes = { 1, 512, 700, 4096, 30000, 300000, 1048576, 1048577, 3000000, 11000000 }
    for step = 1, 3000 do
      if nlive > 0 and (nlive > 200 or rand(5) < 2) then
        local k = rand(nlive) + 1
        local name = table.remove(live, k)
        nlive = nlive - 1
        cmds[#cmds + 1] = "free " .. name
      else
        local name = "x" .. step
        live[#live + 1] = name
        nlive = nlive + 1
        cmds[#cmds + 1] = string.format("alloc_on %d %s %d", rand(3), name, sizes[rand(#sizes) + 1])
      end
      if step % 250 == 0 then
        cmds[#cmds + 1] = "stats"
        cmds[#cmds + 1] = "free_total"
        checks = checks + 1
      end
    end
    for _, name in ipairs(live) do cmds[#cmds + 1] = "free " .. name end
    cmds[#cmds + 1] = "stats"
    cmds[#cmds + 1] = "free_total"
    cmds[#cmds + 1] = "release"
    cmds[#cmds + 1] = "raw"
    local r = run(cmds) -- fails on any "error: ..." line (an overlap)
    local seen = 0
    for i, l in ipairs(r) do
      if l:find("^free_total") then
        local s = stats(r[i - 1])
        local _, bytes = l:match("free_total (%d+) (%d+)")
        assert.are.equal(s.reserved, s.allocated + tonumber(bytes), l)
        seen = seen + 1
      end
    end
    assert.are.equal(checks + 1, seen)
    assert.are.equal("raw_live 0", r[#r]) -- everything merged back into whole segments and released
  end)
end)
