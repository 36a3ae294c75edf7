-- torch.nn.parallel.DistributedDataParallel: data-parallel training over
-- the ranks of torch.distributed's process group.
--
--   * At construction the wrapped module's parameters and buffers are
--     broadcast from rank 0, so every rank starts from the same model.
--   * Gradients are averaged over the ranks in buckets: parameters in
--     reverse registration order (the order backward produces their
--     gradients), a small first bucket (1 MiB, as PyTorch, or the cap when smaller) so
--     communication starts early, then buckets of bucket_cap_mb (25 MiB).
--     A bucket never mixes dtypes or devices.
--   * Each parameter has a post-accumulate-grad hook; when a bucket's
--     last gradient is ready its gradients are copied into one flat
--     tensor and an asynchronous all-reduce (op avg) starts on the
--     communication thread while backward goes on. Buckets start in
--     bucket order on every rank, so the ranks' reductions line up.
--   * Only a backward after a forward through DDP reduces anything;
--     inside ddp:no_sync(fn) gradients just accumulate locally.
--   * At the end of backward the remaining buckets start (a parameter
--     that got no gradient on this rank contributes zeros), every
--     reduction is waited for and the averages are copied into .grad.
--     Ctrl-C in that wait raises 'interrupted!' and leaves the rest in
--     flight: each is waited for before its bucket is used again.
-- With per-rank batches of b samples and a loss that averages over the
-- batch, N ranks train to the same parameters as one process on the N*b
-- samples (spec/distributed_spec.lua).
local torch = require("torch")
local fail = require("torch.utils.errors").fail
local base = require("torch.nn.module")

local Module = base.Module
local MIB = 1024 * 1024
local FIRST_BUCKET_BYTES = 1 * MIB

local DDP = Module:extend("DistributedDataParallel")

local check_options = require("torch.utils.errors").check_options

local function check_opts(opts)
  if opts == nil then return {} end
  if type(opts) ~= "table" then fail("DistributedDataParallel: options must be a table, got " .. type(opts)) end
  check_options(opts, "DistributedDataParallel", { "device_ids", "output_device", "broadcast_buffers",
    "bucket_cap_mb", "find_unused_parameters", "process_group" })
  if opts.process_group ~= nil then
    fail("DistributedDataParallel: only the default process group is supported (leave process_group out)")
  end
  return opts
end

local function nbytes(p) return p:numel() * p:element_size() end

-- Buckets of parameters in reverse order: the first closes at 1 MiB,
-- the others at cap bytes; a change of dtype or device closes one too.
local function make_buckets(params, cap)
  local buckets, cur, size = {}, nil, 0
  for i = #params, 1, -1 do
    local p = params[i]
    local limit = #buckets == 1 and math.min(FIRST_BUCKET_BYTES, cap) or cap
    if cur == nil or size >= limit or cur.dtype ~= p.dtype or cur.device ~= p.device then
      cur = { params = {}, offsets = {}, numel = 0, dtype = p.dtype, device = p.device }
      buckets[#buckets + 1] = cur
      size = 0
    end
    cur.params[#cur.params + 1] = p
    cur.offsets[#cur.offsets + 1] = cur.numel
    cur.numel = cur.numel + p:numel()
    size = size + nbytes(p)
  end
  for _, b in ipairs(buckets) do
    b.flat = torch.zeros({ b.numel }, { dtype = b.dtype, device = b.device })
  end
  return buckets
end

function DDP:init(module, opts)
  if not base.is_module(module) then
    fail("DistributedDataParallel: expected a module to wrap, got " .. type(module))
  end
  opts = check_opts(opts)
  local dist = torch.distributed
  if not dist.is_initialized() then
    fail("DistributedDataParallel: the default process group has not been initialized; call "
      .. "torch.distributed.init_process_group() first (launch with: mpirun -np N gshell script.lua)")
  end
  local cap = opts.bucket_cap_mb == nil and 25 or opts.bucket_cap_mb
  if type(cap) ~= "number" or cap <= 0 then
    fail("DistributedDataParallel: bucket_cap_mb must be a positive number, got " .. tostring(cap))
  end
  self.module = module
  self.broadcast_buffers = opts.broadcast_buffers ~= false
  self.device_ids = opts.device_ids
  local params = {}
  for _, p in ipairs(module:parameters()) do
    if p.requires_grad then params[#params + 1] = p end
  end
  if #params == 0 then fail("DistributedDataParallel: the module has no parameter that requires a gradient") end
  if opts.device_ids ~= nil then
    local want = torch.device(type(opts.device_ids) == "table" and opts.device_ids[1] or opts.device_ids)
    for _, p in ipairs(params) do
      if p.device ~= want then
        fail(string.format("DistributedDataParallel: device_ids says %s but a parameter is on %s (move the module "
          .. "there before wrapping it)", tostring(want), tostring(p.device)))
      end
    end
  end
  -- every rank starts from rank 0's parameters and buffers
  torch.no_grad(function()
    for _, p in ipairs(module:parameters()) do dist.broadcast(p, { src = 0 }) end
    for _, b in ipairs(module:buffers()) do dist.broadcast(b, { src = 0 }) end
  end)
  local buckets = make_buckets(params, cap * MIB)
  local where = {}
  for bi, b in ipairs(buckets) do
    for k, p in ipairs(b.params) do where[p] = { bi, k } end
  end
  -- state of the backward pass running now
  -- expect: the last forward went through DDP with sync on (hooks of a
  -- backward through the bare module, or under no_sync, do nothing)
  local state = { ready = {}, complete = {}, next = 1, active = false, expect = false, sync = true }
  self._buckets = buckets
  self._state = state
  self.stats = { buckets = #buckets, launched_during_backward = 0, launched_at_end = 0 }
  local stats = self.stats

  -- A bucket's previous reduction may still be in flight when a backward
  -- was interrupted while waiting for it: it ends before the flat
  -- tensor is refilled.
  local function launch(b, during)
    if b.work then
      local w = b.work
      w:wait()
      b.work = nil
    end
    for k, p in ipairs(b.params) do
      local seg = b.flat:narrow(1, b.offsets[k] + 1, p:numel())
      if p.grad ~= nil then seg:copy_(p.grad:reshape(p:numel())) else seg:zero_() end
    end
    b.work = dist.all_reduce(b.flat, { op = "avg", async_op = true })
    if during then stats.launched_during_backward = stats.launched_during_backward + 1
    else stats.launched_at_end = stats.launched_at_end + 1 end
  end

  -- Buckets start strictly in order: bucket i+1 waits for bucket i.
  local function launch_ready()
    while state.next <= #buckets and state.complete[state.next] do
      launch(buckets[state.next], true)
      state.next = state.next + 1
    end
  end

  -- The end of backward (an autograd callback, as PyTorch's): start what
  -- is left, wait for every bucket and copy the averages into .grad, so
  -- the optimizer's step reads reduced gradients. stats.last records the
  -- step's timeline (torch.clock() seconds) for bench/dist/ddp.lua:
  -- backward_end (when the last gradient was accumulated), each bucket's
  -- work:_timing(), done.
  local function finish(ok)
    state.active = false
    state.expect = false
    -- backward's computation ended with the last gradient: what runs
    -- after it (this callback's start included) may wait for a core
    local backward_end = state.last_grad or torch.clock()
    state.last_grad = nil
    local err
    if ok then
      for i = state.next, #buckets do
        local lok, e = pcall(launch, buckets[i], false)
        if not lok then err = e; break end
      end
    end
    local timeline = { backward_end = backward_end, buckets = {} }
    for i = 1, #buckets do
      local b = buckets[i]
      if b.work and not (err == "interrupted!") then
        local wok, e = pcall(b.work.wait, b.work)
        if wok or e ~= "interrupted!" then
          timeline.buckets[i] = b.work:_timing()
          b.work = nil
        end
        if not wok then err = err or e end
        if wok and ok then
          for k, p in ipairs(b.params) do
            local avg = b.flat:narrow(1, b.offsets[k] + 1, p:numel()):view(p.shape)
            if p.grad == nil then p.grad = avg:clone() else p.grad:copy_(avg) end
          end
        end
      end
    end
    timeline.done = torch.clock()
    stats.last = timeline
    state.ready, state.complete, state.next = {}, {}, 1
    if err then error(err, 0) end
  end

  local function on_grad(p)
    if not state.expect then return end
    state.last_grad = torch.clock()
    if not state.active then
      state.active = true
      torch._queue_backward_callback(finish)
    end
    local bi = where[p][1]
    state.ready[bi] = (state.ready[bi] or 0) + 1
    if state.ready[bi] == #buckets[bi].params then
      state.complete[bi] = true
      launch_ready()
    end
  end
  for _, p in ipairs(params) do p:register_post_accumulate_grad_hook(on_grad) end
end

function DDP:forward(...)
  self._state.expect = self._state.sync
  if self.broadcast_buffers and #self.module:buffers() > 0 then
    torch.no_grad(function()
      for _, b in ipairs(self.module:buffers()) do torch.distributed.broadcast(b, { src = 0 }) end
    end)
  end
  return self.module(...)
end

-- ddp:no_sync(fn, ...): runs fn (forwards and backwards) without
-- averaging: gradients accumulate locally, and the next synchronised
-- backward averages the sum (gradient accumulation over micro-batches).
function DDP:no_sync(fn, ...)
  if type(fn) ~= "function" then fail("DistributedDataParallel:no_sync: expected a function to run") end
  local state = self._state
  local prev = state.sync
  state.sync = false
  local r = table.pack(pcall(fn, ...))
  state.sync = prev
  if not r[1] then error(r[2], 0) end
  return table.unpack(r, 2, r.n)
end

function DDP:extra_repr() return "" end

return DDP
