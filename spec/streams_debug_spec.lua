-- streams_debug_spec.lua: what asynchronous simulated GPUs show a user who
-- is debugging (API.md, "Time: asynchrony, streams, events, profiling"):
-- an error found inside a kernel surfaces once, at the next synchronising
-- call, naming the op, and the device stays usable; the sync debug mode
-- names each synchronising call and the user's line ('warn') or raises
-- ('error'); Ctrl-C during a wait drops the queued work and leaves the
-- devices usable; GSHELL_SIM_CONTEXT_MS models the cold start of a device.
local torch = require("torch")
local H = require("helpers")
local busy = require("device_busy") -- busy(dev, ms): about ms of queued work
local R = require("gshell_run")
local cuda = torch.cuda

-- Known engine bugs (H.it_unless): delete an entry once it is fixed.
local KNOWN = {}
local it = H.it_unless(KNOWN, it, pending)

local saved_n, saved_cap
local function gc() collectgarbage(); collectgarbage() end


-- Runs a script with gshell on 2 simulated GPUs; returns stdout, stderr,
-- exit code and the script's path (as gshell names it in messages).
local function run_script(src, env)
  local dir = R.tmpdir()
  local path = dir .. "/sync.lua"
  R.write_file(path, src)
  local out, err, code = R.run({ "--sim-gpus", "2", path }, "", env)
  return out, err, code, path
end

local function lines(s)
  local t = {}
  for l in s:gmatch("[^\n]+") do t[#t + 1] = l end
  return t
end

describe("streams: errors found inside kernels", function()
  setup(function() gc(); saved_n, saved_cap = torch._sim_configure(2) end)
  teardown(function() gc(); torch._sim_configure(saved_n, saved_cap) end)

  local function bad_select(dev)
    local x = torch.arange(1, 11, { dtype = torch.float64, device = dev })
    local idx = torch.tensor({ 1, 50 }, { dtype = torch.int64, device = dev })
    return x:index_select(1, idx) -- validated on the host, checked in the kernel
  end

  -- the call that queued the bad kernel returns; the next synchronising
  -- call (each of `syncs`) reports it once, naming index_select and the
  -- index; the device then computes as before
  local syncs = {
    ["item()"] = function(dev) return torch.ones(3, { device = dev }):sum():item() end,
    ["print (tostring)"] = function(dev) return tostring(torch.ones(3, { device = dev })) end,
    ["tolist()"] = function(dev) return torch.ones(3, { device = dev }):tolist() end,
    ["torch.cuda.synchronize()"] = function(dev) return cuda.synchronize(dev) end,
    ["Stream:synchronize()"] = function(dev) return cuda.current_stream(dev):synchronize() end,
  }
  for name, sync in pairs(syncs) do
    it("an index out of range in index_select surfaces at the next " .. name .. ", once", function()
      local y = bad_select("cuda:0")
      assert.are.equal(2, y:size(1))
      local msg = H.errors(function() return sync("cuda:0") end, { "index_select", "50" })
      assert.matches("out of bounds", msg, nil, true)
      assert.matches("cuda:0", msg, nil, true)
      -- only once: the next call is clean, and the device computes right
      assert.has_no.errors(function() return sync("cuda:0") end)
      assert.are.equal(42, (torch.full({ 6 }, 7, { dtype = torch.float64, device = "cuda:0" })):sum():item())
    end)
  end

  it("an error on one device is reported by that device's synchronisation, not the other's", function()
    local y = bad_select("cuda:1")
    busy("cuda:0", 50)
    assert.has_no.errors(function() cuda.synchronize(0) end)
    assert.are.equal(3, torch.ones(3, { device = "cuda:0" }):sum():item())
    H.errors(function() cuda.synchronize(1) end, { "index_select", "cuda:1" })
    assert.are.equal(3, torch.ones(3, { device = "cuda:1" }):sum():item())
    assert.are.equal(2, y:numel())
  end)

  it("the error waits behind long queued work and still names the op", function()
    busy("cuda:0", 80)
    local _ = bad_select("cuda:0")
    for _ = 1, 100 do busy("cuda:0", 1) end
    H.errors(function() return torch.zeros(2, { device = "cuda:0" }):tolist() end, "index_select")
    assert.are.same({ 0, 0 }, torch.zeros(2, { device = "cuda:0" }):tolist())
  end)
end)

describe("streams: sync debug mode", function()
  setup(function() gc(); saved_n, saved_cap = torch._sim_configure(2) end)
  teardown(function()
    cuda.set_sync_debug_mode("default")
    gc()
    torch._sim_configure(saved_n, saved_cap)
  end)
  after_each(function() cuda.set_sync_debug_mode(0) end)

  it("get_sync_debug_mode reports the mode as PyTorch's numbers", function()
    assert.are.equal(0, cuda.get_sync_debug_mode())
    for m, v in pairs({ default = 0, warn = 1, error = 2 }) do
      cuda.set_sync_debug_mode(m)
      assert.are.equal(v, cuda.get_sync_debug_mode())
    end
    for v = 0, 2 do
      cuda.set_sync_debug_mode(v)
      assert.are.equal(v, cuda.get_sync_debug_mode())
    end
  end)

  it("bad modes are rejected with the allowed values, and the mode stays as it was", function()
    cuda.set_sync_debug_mode("warn")
    for _, bad in ipairs({ "loud", 3, -1, 1.5, true }) do
      local msg = H.errors(function() cuda.set_sync_debug_mode(bad) end, { "'default', 'warn' or 'error'" })
      assert.matches(tostring(bad), msg, nil, true)
      assert.are.equal(1, cuda.get_sync_debug_mode())
    end
    H.errors(function() cuda.set_sync_debug_mode() end, "got nil")
  end)

  it("'error' raises at each synchronising call, naming the call and the user's line", function()
    local x = torch.ones(3, { device = "cuda:1" }) * 2
    local src = debug.getinfo(1, "S").short_src
    cuda.set_sync_debug_mode("error")
    local cases = {
      { "item()", function() return x:sum():item() end },
      { "tolist()", function() return x:tolist() end },
      { "cpu()", function() return x:cpu() end },
      { "synchronize", function() return cuda.synchronize() end },
    }
    for _, c in ipairs(cases) do
      local msg = H.errors(c[2], { c[1], "'error'" })
      assert.matches(src .. ":%d+:", msg)
    end
    -- work that does not make the host wait is allowed: kernels, copies
    -- between devices, a non_blocking copy from pinned memory
    local p = torch.ones(3):pin_memory()
    local q = p:cuda(1, { non_blocking = true })
    local y = (x + q):cuda(0) * 3
    cuda.set_sync_debug_mode("default")
    assert.are.same({ 9, 9, 9 }, y:tolist())
  end)

  it("'warn' prints exactly one line per synchronising call, naming the line and the call", function()
    local _, err, code, path = run_script(table.concat({
      'local x = torch.ones(3, {device = "cuda:1"}) * 2',   -- 1
      'torch.cuda.set_sync_debug_mode("warn")',            -- 2
      'local v = x:sum():item()',                          -- 3
      'local l = x:tolist()',                              -- 4
      'print(x)',                                          -- 5
      'local c = x:cpu()',                                 -- 6
      'torch.cuda.synchronize()',                          -- 7
      'local y = (x + 1):cuda(0) * 2',                     -- 8: no wait
      'torch.cuda.current_stream(1):synchronize()',        -- 9
      'torch.cuda.set_sync_debug_mode("default")',         -- 10
      'local w = y:sum():item()',                          -- 11: silent
    }, "\n") .. "\n")
    assert.are.equal(0, code)
    local want = {
      { 3, "item()" }, { 4, "tolist()" }, { 5, "print" }, { 6, "cpu()" }, { 7, "synchronize()" },
      { 9, "synchronize()" },
    }
    local got = lines(err)
    assert.are.equal(#want, #got, "stderr was:\n" .. err)
    for k, w in ipairs(want) do
      local l = got[k]
      assert.is_truthy(l:find(path .. ":" .. w[1] .. ":", 1, true), "line " .. k .. ": " .. l)
      assert.is_truthy(l:find(w[2], 1, true), "line " .. k .. " should name " .. w[2] .. ": " .. l)
    end
  end)

  it("'warn' names each synchronising call of a script on its own line", function()
    -- the parts of the warning that work today: one line each for item,
    -- tolist and cpu, naming the script's line
    local _, err, code, path = run_script(table.concat({
      'local x = torch.ones(3, {device = "cuda:0"}) * 2',
      'torch.cuda.set_sync_debug_mode("warn")',
      'local v = x:sum():item()',
      'local l = x:tolist()',
      'local c = x:cpu()',
      'local z = x:cuda(1) + x:cuda(1)',
    }, "\n") .. "\n")
    assert.are.equal(0, code)
    local got = lines(err)
    assert.are.equal(3, #got, "stderr was:\n" .. err)
    for k, w in ipairs({ { 3, "item()" }, { 4, "tolist()" }, { 5, "cpu()" } }) do
      assert.is_truthy(got[k]:find(path .. ":" .. w[1] .. ":", 1, true), got[k])
      assert.is_truthy(got[k]:find(w[2], 1, true), got[k])
      assert.is_truthy(got[k]:find("set_sync_debug_mode", 1, true), got[k])
    end
  end)

  it("'default' is silent", function()
    local out, err, code = run_script(table.concat({
      'local x = torch.ones(3, {device = "cuda:1"}) * 2',
      'local v = x:sum():item()',
      'print(x:tolist()[1])',
      'torch.cuda.synchronize()',
    }, "\n") .. "\n")
    assert.are.equal(0, code)
    assert.are.equal("", err)
    assert.are.equal("2.0\n", out)
  end)
end)

describe("streams: Ctrl-C during a wait", function()
  setup(function() gc(); saved_n, saved_cap = torch._sim_configure(2) end)
  teardown(function() gc(); torch._sim_configure(saved_n, saved_cap) end)

  it("returns 'interrupted!', drops the rest of the queue, and the devices work afterwards", function()
    local x = torch.zeros(1 << 12, { dtype = torch.float64, device = "cuda:0" })
    busy("cuda:0", 1) -- (measures the device once, before the clock matters)
    busy("cuda:1", 1)
    cuda.synchronize()
    local start, stop = cuda.Event({ enable_timing = true }), cuda.Event({ enable_timing = true })
    start:record()
    -- seconds of queued work on both devices
    for _ = 1, 100 do
      busy("cuda:0", 15)
      x:add_(1)
    end
    busy("cuda:1", 1500)
    stop:record()
    local t0 = torch.clock()
    torch._interrupt_in(0.05)
    H.errors(function() return x:sum():item() end, "interrupted!")
    local waited = torch.clock() - t0
    assert.is_false(torch._interrupt_pending()) -- consumed
    -- the queues are empty at once: the rest was dropped, not run
    assert.is_true(cuda.current_stream(0):query())
    assert.is_true(cuda.current_stream(1):query())
    assert.is_true(waited < 2, ("the interrupted wait took %.2f s"):format(waited))
    -- every increment ran whole or not at all
    local v = x:cpu()
    local lo, hi = v:min():item(), v:max():item()
    assert.are.equal(lo, hi)
    assert.is_true(lo < 100, "nothing was dropped")
    -- an event whose marker was dropped cannot time anything
    H.errors(function() return start:elapsed_time(stop) end, "interrupt")
    -- new work gives right answers on both devices
    for d = 0, 1 do
      local dev = "cuda:" .. d
      local a = torch.arange(1, 101, { dtype = torch.float64, device = dev })
      assert.are.equal(5050 * 2, (a * 2):sum():item())
    end
    x:add_(1)
    assert.are.equal((lo + 1) * (1 << 12), x:sum():item())
  end)

  -- products long enough (268 MFLOP each) that the device falls behind the
  -- host; far more of them than a stream's queue holds, so the host waits
  -- for room
  local function long_products(dev)
    return torch.full({ 128, 8192 }, 1 / 8192, { device = dev }), torch.full({ 8192, 128 }, 1.0, { device = dev })
  end

  it("stops a loop that waits for room in a full queue", function()
    local a, b = long_products("cuda:0")
    cuda.synchronize()
    local k0 = cuda.memory_stats(0).num_kernels
    local queued = 0
    local t0 = torch.clock()
    torch._interrupt_in(0.2)
    H.errors(function()
      for i = 1, 20000 do
        a:matmul(b)
        queued = i
      end
    end, "interrupted!")
    local took = torch.clock() - t0
    assert.is_true(took < 2, ("the loop stopped after %.2f s"):format(took))
    assert.is_false(torch._interrupt_pending())
    assert.is_true(cuda.current_stream(0):query())
    local ran = cuda.memory_stats(0).num_kernels - k0
    assert.is_true(ran < queued, ("%d of %d products ran: nothing was dropped"):format(ran, queued))
    assert.are.equal(6, (torch.ones(3, { device = "cuda:0" }) * 2):sum():item())
  end)

  it("stops an in-place op that waits for room in a full queue, leaving its tensor as it was", function()
    local a, b = long_products("cuda:0")
    local x = torch.zeros(16, { dtype = torch.float64, device = "cuda:0" })
    cuda.synchronize()
    local done = 0
    local t0 = torch.clock()
    torch._interrupt_in(0.2)
    local ok, err = pcall(function()
      for _ = 1, 1000 do a:matmul(b) end -- the queue is full behind these
      for i = 1, 3000 do
        x:add_(1)
        done = i
      end
    end)
    local took = torch.clock() - t0
    local left = torch._interrupt_pending()
    if left then pcall(function() return torch.ones(1 << 22) + 1 end) end -- consumed, not left to the next case
    assert.is_false(ok, ("the loop ran to its end (%.2f s)%s"):format(took, left and ", the flag left set" or ""))
    assert.matches("interrupted!", err)
    assert.is_true(took < 2, ("the loop stopped after %.2f s"):format(took))
    -- every add_ queued before the interrupt ran whole or was dropped whole
    local v = x:cpu()
    assert.are.equal(v:min():item(), v:max():item())
    assert.is_true(v[1]:item() <= done)
  end)

  it("interrupts Event:synchronize and torch.cuda.synchronize the same way", function()
    for _, wait in ipairs({
      function(e) e:synchronize() end,
      function() cuda.synchronize() end,
    }) do
      busy("cuda:1", 1500)
      local e = cuda.Event()
      e:record(cuda.current_stream(1))
      torch._interrupt_in(0.03)
      H.errors(function() wait(e) end, "interrupted!")
      assert.is_true(e:query())
      assert.is_false(torch._interrupt_pending())
      assert.are.equal(6, torch.full({ 3 }, 2, { dtype = torch.float64, device = "cuda:1" }):sum():item())
    end
  end)
end)

describe("streams: Ctrl-C in the shell", function()
  it("at the prompt, during a wait for a long queue: 'interrupted!', the rest dropped, the device usable", function()
    local out, ok = R.pty({
      { expect = "gshell> " },
      { send = "m = torch.full({512, 512}, 1/512, {device = 'cuda:1'})\r" },
      { expect = "gshell> " },
      -- 1000 products (seconds of work) queued, then a wait for them; the
      -- Ctrl-C comes while the shell waits (a Ctrl-C that lands in Lua code
      -- between ops stops the Lua code, and the queued work goes on)
      { send = "for i = 1, 1000 do m:matmul(m) end; print('wai' .. 'ting'); torch.cuda.synchronize(); " ..
               "print('ran to' .. ' the end')\r" },
      { expect = "waiting" },
      { sleep = 0.2 },
      { send = "\3" },
      { expect = "interrupted!" },
      { expect = "gshell> " },
      { send = "print(torch.cuda.current_stream(1):query(), torch.cuda.memory_stats(1).num_kernels < 900, " ..
               "(m * 0 + 2):sum():item())\r" },
      { expect = "true\ttrue\t524288" },
      { expect = "gshell> " },
      { send = "\4" },
    }, { "--sim-gpus", "2" })
    assert.is_true(ok, out)
    assert.is_nil(out:find("ran to the end", 1, true), out)
  end)

  it("a real SIGINT during torch.cuda.synchronize stops the cell (even inside pcall); the next cell works", function()
    -- one cell per line (--repl-stdin); an interrupt escapes pcall and
    -- stops at the top level of its cell, as interrupt_spec.lua specifies
    local out, err, code = R.prompt({
      'pid = assert(io.open("/proc/self/stat")):read("n")',
      'm = torch.full({512, 512}, 1/512, {device = "cuda:1"}); for _ = 1, 1000 do m:matmul(m) end',
      'os.execute("(sleep 0.3; kill -INT " .. pid .. ") &"); ok = pcall(torch.cuda.synchronize); print("not reached", ok)',
      'print("idle", torch.cuda.current_stream(1):query(), torch.cuda.memory_stats(1).num_kernels < 900)',
      'print("after", (torch.ones(3, {device = "cuda:1"}) + 1):sum():item())',
    }, { "--sim-gpus", "2" })
    assert.are.equal(0, code, out .. err)
    assert.is_nil(out:find("not reached", 1, true), out)
    assert.matches("interrupted!", err)
    assert.matches("idle\ttrue\ttrue\n", out)
    assert.matches("after\t6%.0\n", out)
  end)
end)

describe("streams: leaving with work queued", function()
  it("a script that ends with work still queued on three devices exits cleanly", function()
    -- nn.DataParallel's pattern: small products on each device, copies
    -- between them, and the script ends without synchronising
    local dir = R.tmpdir()
    local path = dir .. "/leave.lua"
    R.write_file(path, table.concat({
      'local w = {}',
      'for d = 0, 2 do w[d] = torch.rand(16, 16, {device = "cuda:" .. d}) end',
      'for _ = 1, 100 do',
      '  for d = 0, 2 do w[d] = w[d]:matmul(w[d]):cuda((d + 1) % 3) end',
      'end',
    }, "\n") .. "\n")
    local crashes = 0
    for _ = 1, 20 do
      local _, _, code = R.run({ "--sim-gpus", "3", path }, "")
      if code ~= 0 then crashes = crashes + 1 end
    end
    local _, _, code = R.run({ "--sim-gpus", "3", "examples/dataparallel_splits.lua" }, "")
    if code ~= 0 then crashes = crashes + 1 end
    assert.are.equal(0, crashes)
  end)
end)

describe("streams: the cold-start model", function()
  local script = table.concat({
    'local function first(dev)',
    '  local t0 = torch.clock()',
    '  local x = torch.ones(4, {device = dev})',
    '  return torch.clock() - t0',
    'end',
    'local a, b, c = first("cuda:0"), first("cuda:0"), first("cuda:1")',
    'print(string.format("%.4f %.4f %.4f", a, b, c))',
  }, "\n") .. "\n"

  local function timings(env)
    local out, err, code = run_script(script, env)
    assert.are.equal(0, code, err)
    local a, b, c = out:match("^(%S+) (%S+) (%S+)")
    return tonumber(a), tonumber(b), tonumber(c)
  end

  it("GSHELL_SIM_CONTEXT_MS makes the first use of each device take that long", function()
    local out = run_script("print(torch.cuda._sim_context_ms())\n", { GSHELL_SIM_CONTEXT_MS = "250" })
    assert.are.equal("250\n", out)
    local a, b, c = timings({ GSHELL_SIM_CONTEXT_MS = "250" })
    assert.is_true(a >= 0.25, "first use of cuda:0 took " .. a)
    assert.is_true(b < 0.1, "second use of cuda:0 took " .. b)
    assert.is_true(c >= 0.25, "first use of cuda:1 took " .. c)
  end)

  it("is off by default", function()
    local a, _, c = timings({})
    assert.is_true(a < 0.1 and c < 0.1, ("first uses took %.4f and %.4f s"):format(a, c))
    assert.are.equal(0, cuda._sim_context_ms())
  end)

  it("smi() says when the cold-start model is on", function()
    local out, err, code = run_script('print(torch.cuda.smi_text())\n', { GSHELL_SIM_CONTEXT_MS = "100" })
    assert.are.equal(0, code, err)
    assert.is_truthy(out:find("context", 1, true) or out:find("GSHELL_SIM_CONTEXT_MS", 1, true), out)
  end)
end)
