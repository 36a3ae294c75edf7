-- torch.cuda streams, events, stream scopes and the sync debug mode, over
-- torch._stream (src/lua_stream.c). A stream is a (device, id) pair: id 0 is
-- the device's default stream, 1..32 a pool that torch.cuda.Stream() draws
-- from in turn, as PyTorch's stream pool does.
local torch = require("torch")
local S = torch._stream
local cuda = torch.cuda

-- A CUDA ordinal from a device argument (nil: the current device).
local function ordinal(dev, fn)
  if dev == nil then return cuda.current_device() end
  if type(dev) == "table" and getmetatable(dev) == cuda.Stream_mt then return dev._dev end
  local d = torch.device(dev)
  if d.type ~= "cuda" then
    error(string.format("torch.cuda.%s: expected a CUDA device, got %s", fn, tostring(dev)), 3)
  end
  return d.index or cuda.current_device()
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
  return stream_obj(d, S.pool(d))
end
function cuda.current_stream(dev)
  local d = ordinal(dev, "current_stream")
  return stream_obj(d, S.current(d))
end
function cuda.default_stream(dev)
  return stream_obj(ordinal(dev, "default_stream"), 0)
end
function cuda.set_stream(s)
  check_stream(s, "torch.cuda.set_stream")
  S.set_current(s._dev, s._id)
end

-- local c <close> = torch.cuda.stream(s): s is current on its device until
-- the block ends, however it ends.
function cuda.stream(s)
  if s == nil then return setmetatable({}, { __close = function() end }) end
  check_stream(s, "torch.cuda.stream")
  local prev = S.current(s._dev)
  S.set_current(s._dev, s._id)
  return setmetatable({}, { __close = function() S.set_current(s._dev, prev) end })
end

function cuda.with_stream(s, fn)
  check_stream(s, "torch.cuda.with_stream")
  if type(fn) ~= "function" then
    error("torch.cuda.with_stream: expected a function as the second argument, got " .. type(fn), 2)
  end
  local prev = S.current(s._dev)
  S.set_current(s._dev, s._id)
  local res = table.pack(pcall(fn))
  S.set_current(s._dev, prev)
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
