-- torch.distributed: a process group over MPI (Open MPI, opened at run
-- time) for cpu and simulated-device tensors, and NCCL for real GPU
-- tensors. Launch with `mpirun -np N gshell script.lua`: rank and world
-- size come from the launcher. Ranks are 0-based, as in MPI and PyTorch.
-- Every collective first checks that all ranks made the same call (kind,
-- op, dtype, shape, root); when they did not, every rank gets the same
-- error instead of a hang. See docs/scaling.md for what cannot be checked.
local torch = require("torch")
local fail = require("torch.utils.errors").fail
local raw = torch._dist

-- Whether the running collective reached the engine (which then did the
-- ranks' agreement exchange itself): see `in_step` below.
local reached = false
local ENGINE_CALLS = { all_reduce = true, broadcast = true, all_gather_into = true, reduce_scatter_from = true,
  barrier = true }

-- The engine's errors, raised at the user's line rather than this file's.
local C = setmetatable({}, { __index = function(t, name)
  local f = raw[name]
  local engine = ENGINE_CALLS[name]
  local function call(...)
    if engine then reached = true end
    local r = table.pack(pcall(f, ...))
    if not r[1] then fail((tostring(r[2]):gsub("^lua/torch/[%w_/]+%.lua:%d+: ", ""))) end
    return table.unpack(r, 2, r.n)
  end
  rawset(t, name, call)
  return call
end })

local D = {}

D.ReduceOp = { SUM = "sum", AVG = "avg", PRODUCT = "product", MIN = "min", MAX = "max" }
local OPS = { sum = true, avg = true, product = true, min = true, max = true }

local check_options = require("torch.utils.errors").check_options

local function check_keys(fn, opts, allowed)
  if opts == nil then return {} end
  if type(opts) ~= "table" or getmetatable(opts) ~= nil then
    fail(string.format("torch.distributed.%s: options must be a table, got %s", fn, type(opts)))
  end
  check_options(opts, "torch.distributed." .. fn, allowed)
  return opts
end

local function check_tensor(fn, t, what)
  if not torch.is_tensor(t) then
    fail(string.format("torch.distributed.%s: %s must be a tensor, got %s", fn, what or "the argument", type(t)))
  end
end

local function op_of(fn, op)
  op = op or "sum"
  if type(op) ~= "string" or not OPS[op] then
    fail(string.format("torch.distributed.%s: op must be 'sum', 'avg', 'product', 'min' or 'max', got %s", fn,
      tostring(op)))
  end
  return op
end

local function need_group(fn)
  if not C.is_initialized() then
    fail("torch.distributed." .. fn .. ": the default process group has not been initialized; call "
      .. "torch.distributed.init_process_group() first (launch with: mpirun -np N gshell script.lua)")
  end
end

-- True when a process group can be made here (Open MPI can be loaded);
-- the second value says why not.
function D.is_available() return C.is_available() end
function D.is_mpi_available() return (C.is_available()) end
function D.is_nccl_available()
  return (C.is_available()) and torch.cuda.is_available() and not torch.cuda.is_simulated()
end
function D.is_initialized() return C.is_initialized() end

-- init_process_group([{backend = 'mpi' | 'nccl', rank =, world_size =}]):
-- rank and world_size, when given, must be what the launcher says.
function D.init_process_group(opts)
  if type(opts) == "string" then opts = { backend = opts } end
  opts = check_keys("init_process_group", opts, { "backend", "rank", "world_size", "init_method" })
  local ok, why = C.is_available()
  if not ok then fail("torch.distributed is not available: " .. tostring(why)) end
  local backend = opts.backend or "mpi"
  if backend ~= "mpi" and backend ~= "nccl" then
    fail(string.format("torch.distributed.init_process_group: backend must be 'mpi' or 'nccl', got %s", tostring(backend)))
  end
  if opts.init_method ~= nil and opts.init_method ~= "env://" then
    fail("torch.distributed.init_process_group: only the launcher's environment is supported (init_method = 'env://'); "
      .. "start the ranks with mpirun -np N gshell script.lua")
  end
  local device = 0
  if backend == "nccl" then
    if not D.is_nccl_available() then
      fail("torch.distributed.init_process_group: the nccl backend needs real CUDA GPUs (use backend = 'mpi' on the "
        .. "cpu and on simulated devices)")
    end
    device = C.local_rank() % torch.cuda.device_count()
    torch.cuda.set_device(device)
  end
  C.init(backend, device)
  for _, k in ipairs({ "rank", "world_size" }) do
    local actual = k == "rank" and C.rank() or C.world_size()
    if opts[k] ~= nil and opts[k] ~= actual then
      C.destroy()
      fail(string.format("torch.distributed.init_process_group: %s = %s was given but the launcher says %d", k,
        tostring(opts[k]), actual))
    end
  end
end

function D.get_rank() need_group("get_rank"); return C.rank() end
function D.get_world_size() need_group("get_world_size"); return C.world_size() end
function D.get_backend() need_group("get_backend"); return C.backend() end
function D.destroy_process_group() C.destroy() end
-- Every collective takes async_op (as PyTorch): false (the default) waits
-- and returns nothing; true returns a Work at once, the collective going
-- on in the background (on the process group's communication thread):
--   work:wait()          blocks until it is done and returns true; an error
--                        of the collective (ranks that disagree) is raised
--                        here; Ctrl-C raises 'interrupted!' and leaves it in
--                        flight (wait() again to finish it)
--   work:is_completed()  true once it is done, without blocking
-- The tensors of the call must be left alone until wait() returns: a
-- write into them in between is reported by wait() as an error. The Work
-- keeps them alive; a Work dropped without wait() still completes.
local function async_of(fn, opts)
  local a = opts.async_op
  if a ~= nil and type(a) ~= "boolean" then
    fail(string.format("torch.distributed.%s: async_op must be true or false, got %s", fn, type(a)))
  end
  return a == true
end

-- barrier([{async_op =}])
function D.barrier(opts)
  opts = check_keys("barrier", opts, { "async_op" })
  need_group("barrier")
  return C.barrier(async_of("barrier", opts))
end

-- all_reduce(t[, {op = 'sum', async_op = false}]): in place on every rank.
function D.all_reduce(t, opts)
  check_tensor("all_reduce", t, "the tensor")
  opts = check_keys("all_reduce", opts, { "op", "async_op" })
  need_group("all_reduce")
  return C.all_reduce(t, op_of("all_reduce", opts.op), async_of("all_reduce", opts))
end

-- broadcast(t, {src = r[, async_op =]}) (or broadcast(t, r)): rank r's t
-- to every rank.
function D.broadcast(t, opts)
  check_tensor("broadcast", t, "the tensor")
  if math.type(opts) == "integer" then opts = { src = opts } end
  opts = check_keys("broadcast", opts, { "src", "async_op" })
  if math.type(opts.src) ~= "integer" then
    fail("torch.distributed.broadcast: src (the 0-based rank that sends) must be given as an integer")
  end
  need_group("broadcast")
  return C.broadcast(t, opts.src, async_of("broadcast", opts))
end

local function check_list(fn, list, t, what)
  local n = C.world_size()
  if type(list) ~= "table" or getmetatable(list) ~= nil or #list ~= n then
    fail(string.format("torch.distributed.%s: %s must be a list of world_size (%d) tensors, got %s", fn, what, n,
      type(list) == "table" and (#list .. " entries") or type(list)))
  end
  for i, x in ipairs(list) do
    check_tensor(fn, x, what .. "[" .. i .. "]")
    if x.dtype ~= t.dtype or x.device ~= t.device or x:numel() ~= t:numel() or tostring(x.shape) ~= tostring(t.shape) then
      fail(string.format("torch.distributed.%s: %s[%d] is %s %s on %s but the tensor is %s %s on %s (they must match)",
        fn, what, i, tostring(x.dtype), tostring(x.shape), tostring(x.device), tostring(t.dtype), tostring(t.shape),
        tostring(t.device)))
    end
  end
end

-- all_gather(list, t[, {async_op =}]): list[i] receives rank i-1's t.
function D.all_gather(list, t, opts)
  check_tensor("all_gather", t, "the tensor")
  opts = check_keys("all_gather", opts, { "async_op" })
  need_group("all_gather")
  check_list("all_gather", list, t, "the output list")
  local flat = torch.empty({ C.world_size() * t:numel() }, { dtype = t.dtype, device = t.device })
  local n = t:numel()
  local function unpack()
    for i, x in ipairs(list) do x:copy_(flat:narrow(1, (i - 1) * n + 1, n):view(t.shape)) end
  end
  if not async_of("all_gather", opts) then
    C.all_gather_into(flat, t, false)
    unpack()
    return
  end
  local work = C.all_gather_into(flat, t, true)
  C.work_after(work, unpack) -- the list is filled when wait() returns
  return work
end

-- all_gather_into_tensor(out, t[, {async_op =}]): out holds every rank's
-- t, in rank order.
function D.all_gather_into_tensor(out, t, opts)
  check_tensor("all_gather_into_tensor", out, "the output")
  check_tensor("all_gather_into_tensor", t, "the tensor")
  opts = check_keys("all_gather_into_tensor", opts, { "async_op" })
  need_group("all_gather_into_tensor")
  return C.all_gather_into(out, t, async_of("all_gather_into_tensor", opts))
end

-- reduce_scatter(out, list[, {op =, async_op =}]): out = op over ranks of
-- list[rank+1].
function D.reduce_scatter(out, list, opts)
  check_tensor("reduce_scatter", out, "the output")
  opts = check_keys("reduce_scatter", opts, { "op", "async_op" })
  need_group("reduce_scatter")
  check_list("reduce_scatter", list, out, "the input list")
  local op = op_of("reduce_scatter", opts.op)
  local n = out:numel()
  local flat = torch.empty({ C.world_size() * n }, { dtype = out.dtype, device = out.device })
  for i, x in ipairs(list) do flat:narrow(1, (i - 1) * n + 1, n):copy_(x:reshape(n)) end
  return C.reduce_scatter_from(out, flat, op, async_of("reduce_scatter", opts))
end

-- reduce_scatter_tensor(out, input[, {op =, async_op =}]): input holds
-- world_size slices of out's size; out = op over ranks of slice rank+1.
function D.reduce_scatter_tensor(out, input, opts)
  check_tensor("reduce_scatter_tensor", out, "the output")
  check_tensor("reduce_scatter_tensor", input, "the input")
  opts = check_keys("reduce_scatter_tensor", opts, { "op", "async_op" })
  need_group("reduce_scatter_tensor")
  return C.reduce_scatter_from(out, input, op_of("reduce_scatter_tensor", opts.op),
    async_of("reduce_scatter_tensor", opts))
end

-- A call refused here, before the engine (a bad list, option or op), on
-- one rank only, used to leave that rank one collective behind: the other
-- ranks' call paired with its next one (silent wrong sums, then a hang).
-- A refused call still takes part in the agreement exchange, as a
-- refusal, so every rank fails it together (issue 23).
local function in_step(name, f)
  return function(...)
    reached = false
    local r = table.pack(pcall(f, ...))
    if r[1] then return table.unpack(r, 2, r.n) end
    -- (an interrupt is not a refusal: the user stopped this rank)
    local interrupted = tostring(r[2]):find("interrupted!$") ~= nil
    if not reached and not interrupted and raw.is_initialized() then pcall(raw.refuse, name) end
    error(r[2], 0)
  end
end
for _, name in ipairs({ "all_reduce", "broadcast", "all_gather", "all_gather_into_tensor", "reduce_scatter",
                        "reduce_scatter_tensor", "barrier" }) do
  if D[name] then D[name] = in_step(name, D[name]) end
end

return D
