-- torch.cuda streams, events, stream scopes and the sync debug mode, over
-- torch._stream (src/bind/lua_stream.c). A stream is a (device, id) pair: id 0 is
-- the device's default stream, 1..32 a pool that torch.cuda.Stream() draws
-- from in turn, as PyTorch's stream pool does.
local torch = require("torch")
local S = torch._stream
local cuda = torch.cuda

-- A CUDA ordinal from a device argument (nil: the current device). A bad
-- one is an error naming torch.cuda.<fn>, raised at the line that called
-- it (level 3: past ordinal and fn).
local function ordinal(dev, fn)
  if type(dev) == "table" and getmetatable(dev) == cuda.Stream_mt then return dev._dev end
  local d, why = cuda._ordinal(dev)
  if not d then error(string.format("torch.cuda.%s: %s", fn, why), 3) end
  return d
end

local Stream = {}
Stream.__index = Stream
cuda.Stream_mt = Stream

local function stream_obj(dev, id)
  return setmetatable({ _dev = dev, _id = id, device = torch.device("cuda", dev) }, Stream)
end

local function check_stream(s, fn)
  if getmetatable(s) ~= Stream then
    error(string.format("%s: expected a torch.cuda.Stream, got %s", fn, type(s)), 3)
  end
  return s
end

function Stream:synchronize() S.sync(self._dev, self._id) end
function Stream:query() return S.query(self._dev, self._id) end
function Stream:wait_event(e)
  cuda.Event_check(e, "Stream:wait_event")
  S.event_wait(e._ev, self._dev, self._id)
end
function Stream:wait_stream(other)
  check_stream(other, "Stream:wait_stream")
  if other == self then return end
  local e = cuda.Event()
  e:record(other)
  self:wait_event(e)
end
function Stream:record_event(e)
  e = e or cuda.Event()
  e:record(self)
  return e
end
function Stream.__eq(a, b) return a._dev == b._dev and a._id == b._id end
function Stream.__tostring(s)
  return string.format("<torch.cuda.Stream device=cuda:%d cuda_stream=%d>", s._dev, s._id)
end

-- torch.cuda.Stream([device]): a stream of the pool of that device.
function cuda.Stream(dev)
  local d = ordinal(dev, "Stream")
  if not S.queued(d) then
    error(string.format("torch.cuda.Stream: streams other than the default one are available on simulated devices "
      .. "only in this build (cuda:%d is a real GPU)", d), 2)
  end
  return stream_obj(d, S.pool(d))
end
function cuda.current_stream(dev)
  local d = ordinal(dev, "current_stream")
  return stream_obj(d, S.current(d))
end
function cuda.default_stream(dev)
  return stream_obj(ordinal(dev, "default_stream"), 0)
end

-- Makes s its device's current stream and that device the current device,
-- as PyTorch's stream scopes and set_stream do, so that current_stream(),
-- 'cuda' and e:record() mean s. Returns what puts back the device and
-- that device's stream as they were.
local function enter(s)
  local prev_dev, prev_id = cuda.current_device(), S.current(s._dev)
  S.set_current(s._dev, s._id)
  if s._dev ~= prev_dev then cuda.set_device(s._dev) end
  return function()
    -- (a device gone by then, the simulated ones reconfigured inside the
    -- scope, has nothing to restore)
    local n = cuda.device_count()
    if s._dev < n then S.set_current(s._dev, prev_id) end
    if s._dev ~= prev_dev and prev_dev < n then cuda.set_device(prev_dev) end
  end
end

-- torch.cuda.set_stream(s): s becomes current, and its device the current
-- device, until changed again (nil: nothing changes, as in PyTorch).
function cuda.set_stream(s)
  if s == nil then return end
  check_stream(s, "torch.cuda.set_stream")
  enter(s)
end

local noop_scope = setmetatable({}, { __close = function() end })

-- local c <close> = torch.cuda.stream(s): s is current, and its device the
-- current device, until the block ends, however it ends; then both are
-- as before. (nil: a scope that changes nothing, as in PyTorch.)
function cuda.stream(s)
  if s == nil then return noop_scope end
  check_stream(s, "torch.cuda.stream")
  local restore = enter(s)
  return setmetatable({}, { __close = restore })
end

-- torch.cuda.with_stream(s, fn, ...): fn(...) inside such a scope; returns
-- its results or raises its error once the scope is restored.
function cuda.with_stream(s, fn, ...)
  check_stream(s, "torch.cuda.with_stream")
  if type(fn) ~= "function" then
    error("torch.cuda.with_stream: expected a function as the second argument, got " .. type(fn), 2)
  end
  local restore = enter(s)
  local res = table.pack(pcall(fn, ...))
  restore()
  if not res[1] then error(res[2], 0) end
  return table.unpack(res, 2, res.n)
end

-- Events.
local Event = {}
Event.__index = Event

function cuda.Event_check(e, fn)
  if getmetatable(e) ~= Event then
    error(string.format("%s: expected a torch.cuda.Event, got %s", fn, type(e)), 3)
  end
  return e
end

local event_keys = { enable_timing = true, blocking = true, interprocess = true }

function cuda.Event(opts)
  if opts ~= nil and type(opts) ~= "table" then
    error("torch.cuda.Event: expected an options table such as {enable_timing = true}, got " .. type(opts), 2)
  end
  opts = opts or {}
  for k in pairs(opts) do
    if not event_keys[k] then
      error(string.format("torch.cuda.Event: unknown option '%s' (expected enable_timing, blocking, interprocess)",
        tostring(k)), 2)
    end
  end
  return setmetatable({ _ev = S.event_new(opts.enable_timing == true), enable_timing = opts.enable_timing == true },
    Event)
end

function Event:record(s)
  s = s and check_stream(s, "Event:record") or cuda.current_stream()
  S.event_record(self._ev, s._dev, s._id)
end
function Event:synchronize() S.event_sync(self._ev) end
function Event:query() return S.event_query(self._ev) end
function Event:wait(s)
  s = s and check_stream(s, "Event:wait") or cuda.current_stream()
  S.event_wait(self._ev, s._dev, s._id)
end
function Event:elapsed_time(other)
  cuda.Event_check(other, "Event:elapsed_time")
  return S.event_elapsed(self._ev, other._ev)
end
function Event.__tostring(e)
  local d = S.event_device(e._ev)
  return d and string.format("<torch.cuda.Event on cuda:%d>", d) or "<torch.cuda.Event (not recorded)>"
end

-- The sync debug mode: 'default' (0), 'warn' (1), 'error' (2).
local modes = { default = 0, warn = 1, error = 2 }
function cuda.set_sync_debug_mode(m)
  local v = type(m) == "string" and modes[m] or (math.type(m) == "integer" and m) or nil
  if v == nil or v < 0 or v > 2 then
    error(string.format("torch.cuda.set_sync_debug_mode: expected 'default', 'warn' or 'error' (or 0, 1, 2), got %s",
      tostring(m)), 2)
  end
  S.set_sync_debug_mode(v)
end
function cuda.get_sync_debug_mode() return S.get_sync_debug_mode() end

-- GSHELL_SIM_CONTEXT_MS as the simulated devices use it (0: off), for the
-- banner and smi().
function cuda._sim_context_ms() return S.sim_context_ms() end

S.set_warn(function(msg) io.stderr:write("[sync debug] ", msg, "\n") end)

return {}
