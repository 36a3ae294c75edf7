-- torch/profiler.lua: torch.profiler.profile(fn[, {record_shapes = true}])
-- and what a profile shows: a table per op (p:table(), tostring(p)), a
-- Chrome trace (p:export_chrome_trace(path)) and an SVG timeline
-- (p:export_timeline(path), torch/profiler_svg.lua). All three are views of
-- one list of events recorded by the engine (src/core/gs_prof.h): kernels and
-- copies on each device stream, CPU ops and waits on the host lane.
-- docs/profiling.md is the guide.
local torch = require("torch")
local prof = torch._prof

local M = {}

local Profile = { __name = "torch.profiler.profile" }
Profile.__index = Profile

-- ---- recording ---------------------------------------------------------------

-- Waits for every device, so that kernels queued by fn are in the profile.
local function synchronize_all()
  local cuda = torch.cuda
  if cuda and cuda.synchronize and cuda.device_count() > 0 then cuda.synchronize() end
end

-- The lane an event belongs to: the host runs CPU ops and waits for
-- devices; a device's kernels and copies run on one of its streams. On a
-- device that models a GPU (issue 29) a copy over PCIe or NVLink runs on
-- a copy engine, beside the SMs: the engine of copies into the device
-- ("cuda:0/in") or out of it ("cuda:0/out").
local function lane_of(e)
  if e.kind == "sync" or e.device == "cpu" then return "host" end
  if e.modelled and e.bound == "copy" then return e.device .. (e.name == "copy_d2h" and "/out" or "/in") end
  return e.device .. "/" .. math.max(e.stream, 0)
end

-- A profile from raw events (ns since an arbitrary origin) between t0 and
-- t1: times become ns since t0, sorted by start.
local function new_profile(raw, t0, t1, record_shapes)
  local events = {}
  for i, e in ipairs(raw) do
    e.t0, e.t1 = e.t0 - t0, e.t1 - t0
    e.lane = lane_of(e)
    e.seq = i
    events[i] = e
  end
  table.sort(events, function(a, b)
    if a.t0 ~= b.t0 then return a.t0 < b.t0 end
    return a.seq < b.seq
  end)
  local last = t1 - t0
  for _, e in ipairs(events) do last = math.max(last, e.t1) end
  local p = setmetatable({ events = events, duration_ns = last, record_shapes = record_shapes or false }, Profile)
  p.models = M._models_of(events)
  return p
end

-- The GPU models of the devices whose events are modelled: {["cuda:0"] =
-- torch.cuda.gpu_model(0)}, or nil when no event is (host, the CPU).
function M._models_of(events)
  local models
  for _, e in ipairs(events) do
    if e.modelled and not (models and models[e.device]) then
      local i = tonumber(e.device:match("^cuda:(%d+)$"))
      local ok, m = pcall(function() return i and torch.cuda.gpu_model(i) end)
      if ok and m then
        models = models or {}
        models[e.device] = m
      end
    end
  end
  return models
end

-- A profile of events given by hand, each {name, kind = 'kernel' | 'copy'
-- | 'sync', device = 'cpu' | 'cuda:i', stream, t0, t1 (ns), bytes, flops}:
-- for specs and tools that make pictures of recorded runs.
function M.from_events(list, t0, t1)
  local copy = {}
  for i, e in ipairs(list) do
    copy[i] = { name = e.name, kind = e.kind or "kernel", device = e.device or "cpu", stream = e.stream or -1,
      t0 = e.t0, t1 = e.t1, bytes = math.tointeger(e.bytes or 0) or e.bytes, flops = math.tointeger(e.flops or 0) or e.flops,
      shapes = e.shapes, modelled = e.modelled, bound = e.bound, unit = e.unit }
  end
  return new_profile(copy, t0 or 0, t1 or 0, false)
end

local function check_fn(fn, where)
  local mt = getmetatable(fn)
  if type(fn) ~= "function" and not (type(mt) == "table" and mt.__call) then
    error(where .. ": expected a function to profile, got " .. type(fn), 3)
  end
end

-- Profiles nest (a script's own profile under `gshell --trace`, a %prof
-- around code that profiles): the engine records one list at a time, so
-- a recording that starts inside another stops the engine, keeps what the
-- outer one had so far, and records afresh; when it ends, its events are
-- handed to the outer one too and the engine records on for it. Each
-- level: {chunks = {event lists kept so far}, shapes = record_shapes}.
local levels = {}

local function copy_events(list)
  local out = {}
  for i, e in ipairs(list) do
    local c = {}
    for k, v in pairs(e) do c[k] = v end
    out[i] = c
  end
  return out
end

local function begin_recording(shapes)
  if #levels > 0 then
    prof.stop()
    local top = levels[#levels]
    top.chunks[#top.chunks + 1] = prof.events()
  end
  levels[#levels + 1] = { chunks = {}, shapes = shapes or false }
  prof.start(shapes)
end

-- Stops the innermost recording; returns all its events.
local function end_recording()
  prof.stop()
  local dropped, limit = prof.dropped() -- (before an outer level starts again)
  local lvl = table.remove(levels)
  local all = {}
  for _, chunk in ipairs(lvl.chunks) do
    for _, e in ipairs(chunk) do all[#all + 1] = e end
  end
  for _, e in ipairs(prof.events()) do all[#all + 1] = e end
  if #levels > 0 then
    local top = levels[#levels]
    top.chunks[#top.chunks + 1] = copy_events(all)
    prof.start(top.shapes)
  end
  return all, dropped, limit
end

-- profile(fn[, opts]): runs fn (devices synchronised after it, so its
-- queued work is measured too) and returns the profile, then fn's results.
function M.profile(fn, opts)
  check_fn(fn, "torch.profiler.profile")
  if opts ~= nil and type(opts) ~= "table" then
    error("torch.profiler.profile: options must be a table, got " .. type(opts), 2)
  end
  local msg = opts and torch._options_error(opts, "torch.profiler.profile", { "record_shapes" })
  if msg then error(msg, 2) end
  local shapes = opts and opts.record_shapes
  if shapes ~= nil and type(shapes) ~= "boolean" then
    error("torch.profiler.profile: record_shapes must be true or false, got " .. type(shapes), 2)
  end
  if prof.recording() and #levels == 0 then
    error("torch.profiler.profile: a profile is already recording (profiles do not nest)", 2)
  end
  synchronize_all()              -- earlier work is not this profile's
  begin_recording(shapes)
  local t0 = prof.now()
  local res = table.pack(pcall(fn))
  local fn_end = prof.now()
  local synced, why = pcall(synchronize_all)
  local t1 = prof.now()
  local raw, dropped, limit = end_recording()
  if not res[1] then error(res[2], 0) end
  if not synced then error(why, 0) end
  -- the waits of the final synchronisation are the profiler's, not fn's
  local kept = {}
  for _, e in ipairs(raw) do
    if not (e.kind == "sync" and e.t0 >= fn_end) then kept[#kept + 1] = e end
  end
  local p = new_profile(kept, t0, t1, shapes)
  p.dropped, p.max_events = dropped, limit
  return p, table.unpack(res, 2, res.n)
end

-- For `gshell --trace`: start recording now, finish (and write) later.
local trace_t0
function M._trace_start()
  if prof.recording() then return end
  begin_recording(false)
  trace_t0 = prof.now()
end

-- Stops the run's recording and writes it to path: an SVG timeline for a
-- name ending in .svg, else a Chrome trace. Says where on stderr.
function M._trace_write(path)
  if not trace_t0 then error("no trace is recording", 0) end
  pcall(synchronize_all)
  local t1 = prof.now()
  -- a profile the script left unfinished (an error inside it) ends here
  while #levels > 1 do end_recording() end
  local events, dropped, limit = end_recording()
  local p = new_profile(events, trace_t0, t1, false)
  p.dropped, p.max_events = dropped, limit
  trace_t0 = nil
  local script = type(arg) == "table" and type(arg[0]) == "string" and arg[0] or nil
  if path:lower():match("%.svg$") then
    p:export_timeline(path, { title = "gshell --trace" .. (script and (" " .. script) or "") })
  else
    p:export_chrome_trace(path)
  end
  io.stdout:flush()
  io.stderr:write(string.format("gshell: trace of %d events (%s) written to %s\n", #p.events,
    M.format_time(p.duration_ns), path))
end

-- ---- the table ---------------------------------------------------------------

-- "1.234 ms", "56.7 us" (the table's time format, as PyTorch's).
local function fmt_time(ns)
  if ns >= 1e9 then return string.format("%.3fs", ns / 1e9) end
  if ns >= 1e6 then return string.format("%.3fms", ns / 1e6) end
  return string.format("%.3fus", ns / 1e3)
end
M.format_time = fmt_time

-- "65.54 M" (a count with an SI prefix: FLOPs)
function M.format_count(n)
  local units = { "", " K", " M", " G", " T", " P" }
  local i = 1
  while n >= 1000 and i < #units do n = n / 1000; i = i + 1 end
  return i == 1 and string.format("%d", n) or string.format("%.2f%s", n, units[i])
end

-- "15.7 TFLOP/s", "900 GB/s"
function M.format_rate(x, unit)
  local prefixes = { "", "K", "M", "G", "T", "P" }
  local i = 1
  while x >= 1000 and i < #prefixes do x = x / 1000; i = i + 1 end
  return string.format("%.3g %s%s", x, prefixes[i], unit)
end

local function fmt_bytes(n)
  if n == 0 then return "0 B" end
  local units = { "B", "KB", "MB", "GB", "TB" }
  local i = 1
  while n >= 1000 and i < #units do n = n / 1000; i = i + 1 end
  return i == 1 and string.format("%d B", n) or string.format("%.2f %s", n, units[i])
end

-- Rows: one per (name, device, kind[, shapes]), with calls, total and
-- self times in ns, bytes and flops summed over the calls.
function Profile:key_averages(opts)
  opts = opts or {}
  local by_shape = opts.group_by_input_shape
  if by_shape == nil then by_shape = self.record_shapes end
  local rows, index = {}, {}
  for _, e in ipairs(self.events) do
    local key = e.name .. "\0" .. e.device .. "\0" .. e.kind .. "\0" .. (by_shape and (e.shapes or "") or "")
    local r = index[key]
    if not r then
      r = { name = e.name, device = e.device, kind = e.kind, shapes = by_shape and e.shapes or nil,
            calls = 0, total_ns = 0, bytes = 0, flops = 0, first = #rows + 1 }
      index[key] = r
      rows[#rows + 1] = r
    end
    r.calls = r.calls + 1
    r.total_ns = r.total_ns + (e.t1 - e.t0)
    r.bytes = r.bytes + e.bytes
    r.flops = r.flops + e.flops
    if e.bound then
      r.bound_ns = r.bound_ns or {}
      r.bound_ns[e.bound] = (r.bound_ns[e.bound] or 0) + (e.t1 - e.t0)
      r.unit = r.unit or e.unit
    end
    if e.modelled then r.modelled = true end
  end
  for _, r in ipairs(rows) do
    r.mean_ns = r.total_ns / r.calls
    r.gbps = r.total_ns > 0 and r.bytes / r.total_ns or 0           -- bytes/ns = GB/s
    r.gflops = r.total_ns > 0 and r.flops / r.total_ns or 0
    M._explain_row(r, self.models and self.models[r.device])
  end
  return rows
end

-- On a modelled profile, a row's bound (the one that bound most of its
-- time; "host" for the host's rows) and its share of the model's peak:
-- the roof that bound it (compute: FLOP/s of the unit's peak; memory and
-- launch: the larger of the FLOP/s and bandwidth shares; copy: B/s of the
-- link's pinned rate). torch.cuda.explain uses the same.
function M._explain_row(r, model)
  if r.bound_ns then
    local best, most = nil, -1
    for b, ns in pairs(r.bound_ns) do
      if ns > most or (ns == most and b < best) then best, most = b, ns end
    end
    r.bound = best
  end
  if not (model and r.modelled and r.total_ns > 0) or r.kind == "sync" then return end
  local s = r.total_ns * 1e-9
  local peak = r.unit and model.peak[r.unit] or 0
  local fshare = peak > 0 and r.flops / s / peak or 0
  local bshare = r.bytes / s / model.bandwidth
  if r.bound == "compute" then r.peak_share = fshare
  elseif r.bound == "copy" then r.peak_share = r.name ~= "copy_d2d" and r.bytes / s / model.pcie_pinned or nil
  else r.peak_share = math.max(fshare, bshare) end
end

-- Real GPUs for the table's estimate column: published peak memory
-- bandwidth (GB/s) and FP32 throughput (GFLOP/s, without tensor cores).
M.gpus = {
  T4 = { name = "T4", gbps = 320, gflops = 8100 },
  V100 = { name = "V100", gbps = 900, gflops = 15700 },
  A100 = { name = "A100", gbps = 1555, gflops = 19500 },
  H100 = { name = "H100", gbps = 3350, gflops = 67000 },
}

-- estimate = 'A100' (a name of M.gpus) or {name =, gbps =, gflops =}.
function M.gpu_model(e)
  if type(e) == "string" then
    local g = M.gpus[e]
    if g then return g end
    local names = {}
    for k in pairs(M.gpus) do names[#names + 1] = k end
    table.sort(names)
    error(string.format("profile:table: estimate must be one of %s or {name =, gbps =, gflops =}, got %s",
      table.concat(names, ", "), e), 3)
  end
  if type(e) ~= "table" or type(e.name) ~= "string" or type(e.gbps) ~= "number" or type(e.gflops) ~= "number"
      or not (e.gbps > 0 and e.gflops > 0) then
    error("profile:table: estimate must be a GPU's name or {name = 'X', gbps = > 0, gflops = > 0}", 3)
  end
  return e
end

-- A roofline: the longer of moving the row's bytes at peak bandwidth and
-- doing its FLOPs at peak rate, in ns (bytes / (GB/s) is ns).
function M.roofline_ns(r, gpu)
  return math.max(r.bytes / gpu.gbps, r.flops / gpu.gflops)
end

-- sort_by keys: PyTorch's names where they mean something here.
local sorters = {
  total = function(r) return r.total_ns end,
  self_time_total = function(r) return r.total_ns end,
  cpu_time_total = function(r) return r.device == "cpu" and r.total_ns or -1 / (1 + r.total_ns) end,
  cuda_time_total = function(r) return r.device ~= "cpu" and r.total_ns or -1 / (1 + r.total_ns) end,
  self_cpu_time_total = function(r) return r.device == "cpu" and r.total_ns or -1 / (1 + r.total_ns) end,
  self_cuda_time_total = function(r) return r.device ~= "cpu" and r.total_ns or -1 / (1 + r.total_ns) end,
  mean = function(r) return r.mean_ns end,
  count = function(r) return r.calls end,
  calls = function(r) return r.calls end,
  bytes = function(r) return r.bytes end,
  flops = function(r) return r.flops end,
}
local sort_names = {}
for k in pairs(sorters) do sort_names[#sort_names + 1] = k end
table.sort(sort_names)
M.sort_keys = sort_names

-- The time covered by a list of events sorted by start (their union).
local function covered(spans, keep)
  local total, upto = 0, -math.huge
  for _, e in ipairs(spans) do
    if not keep or keep(e) then
      local a, b = math.max(e.t0, upto), e.t1
      if b > a then total = total + (b - a) end
      upto = math.max(upto, e.t1)
    end
  end
  return total
end

local function is_wait(e) return e.kind == "sync" end

-- The busy time of each lane (the union of its events) as
-- {lane, busy_ns, wait_ns}, host first, then devices and streams in
-- order; wait_ns: the part spent waiting for a device (the host's lane).
function Profile:lanes()
  local per = {}
  for _, e in ipairs(self.events) do
    local l = per[e.lane]
    if not l then l = { lane = e.lane, spans = {} }; per[e.lane] = l end
    l.spans[#l.spans + 1] = e
  end
  local list = {}
  for _, l in pairs(per) do            -- events are sorted by start
    list[#list + 1] = { lane = l.lane, busy_ns = covered(l.spans), wait_ns = covered(l.spans, is_wait),
      events = #l.spans }
  end
  local function order(name)
    if name == "host" then return "" end
    local d, s = name:match("^cuda:(%d+)/(%d+)$")
    if d then return string.format("cuda:%06d/%06d", tonumber(d), tonumber(s)) end
    d, s = name:match("^cuda:(%d+)/(%a+)$")  -- the copy engines after the streams
    if d then return string.format("cuda:%06d/z%s", tonumber(d), s == "in" and "1" or "2") end
    return name
  end
  table.sort(list, function(a, b) return order(a.lane) < order(b.lane) end)
  return list
end

-- A lane's name for people: "host", "cuda:0 stream 0".
function M.lane_label(lane)
  if lane == "host" then return "host (cpu)" end
  local d, s = lane:match("^(.-)/(%d+)$")
  if d then return d .. " stream " .. s end
  d, s = lane:match("^(.-)/(%a+)$")
  return d .. (s == "in" and " copies in" or " copies out")
end

local function pad(s, w, right)
  local len = utf8.len(s) or #s
  if len >= w then return s end
  return right and (string.rep(" ", w - len) .. s) or (s .. string.rep(" ", w - len))
end

-- table([{sort_by = 'total', row_limit = 100}]): PyTorch's
-- key_averages().table(), one row per op and device.
function Profile:table(opts)
  if opts ~= nil and type(opts) ~= "table" then error("profile:table: options must be a table", 2) end
  opts = opts or {}
  local msg = torch._options_error(opts, "profile:table", { "sort_by", "row_limit", "group_by_input_shape", "estimate" })
  if msg then error(msg, 2) end
  local key = opts.sort_by or "total"
  local sorter = sorters[key]
  if not sorter then
    error(string.format("profile:table: sort_by must be one of %s, got %s", table.concat(sort_names, ", "),
      tostring(key)), 2)
  end
  local limit = opts.row_limit or 100
  if math.type(limit) ~= "integer" or limit < 1 then
    error("profile:table: row_limit must be a positive integer, got " .. tostring(limit), 2)
  end
  local gpu = opts.estimate ~= nil and M.gpu_model(opts.estimate) or nil
  local rows = self:key_averages({ group_by_input_shape = opts.group_by_input_shape })
  table.sort(rows, function(a, b)
    local ka, kb = sorter(a), sorter(b)
    if ka ~= kb then return ka > kb end
    return a.first < b.first
  end)
  local shapes = false
  for _, r in ipairs(rows) do if r.shapes then shapes = true end end
  local head = { "Name", "Device", "Kind", "Calls", "Total", "Mean", "Bytes", "GB/s", "GFLOP/s" }
  local right = { false, false, false, true, true, true, true, true, true }
  if gpu then head[#head + 1] = gpu.name .. " est.*"; right[#right + 1] = true end
  -- a modelled profile (issue 29): FLOPs, share of the model's peak and
  -- what bound each op
  local modelled = self.models ~= nil
  if modelled then
    for _, h in ipairs({ "FLOPs", "Peak%", "Bound" }) do head[#head + 1] = h; right[#right + 1] = h ~= "Bound" end
  end
  if shapes then head[#head + 1] = "Input Shapes"; right[#right + 1] = false end
  local cells = {}
  for i = 1, math.min(limit, #rows) do
    local r = rows[i]
    local c = { r.name, r.device, r.kind, tostring(r.calls), fmt_time(r.total_ns), fmt_time(r.mean_ns),
      fmt_bytes(r.bytes), r.bytes > 0 and r.total_ns > 0 and string.format("%.2f", r.gbps) or "-",
      r.flops > 0 and r.total_ns > 0 and string.format("%.2f", r.gflops) or "-" }
    if gpu then c[#c + 1] = r.kind == "kernel" and fmt_time(M.roofline_ns(r, gpu)) or "-" end
    if modelled then
      c[#c + 1] = r.flops > 0 and M.format_count(r.flops) or "-"
      c[#c + 1] = r.peak_share and string.format("%.1f%%", 100 * r.peak_share) or "-"
      c[#c + 1] = r.bound or (r.device == "cpu" and "host" or "-")
    end
    if shapes then c[#c + 1] = r.shapes or "" end
    cells[#cells + 1] = c
  end
  local w = {}
  for j, h in ipairs(head) do w[j] = #h end
  for _, c in ipairs(cells) do
    for j, s in ipairs(c) do w[j] = math.max(w[j], utf8.len(s) or #s) end
  end
  local rule = {}
  for j = 1, #head do rule[j] = string.rep("-", w[j]) end
  rule = table.concat(rule, "  ")
  local out = { rule }
  local line = {}
  for j, h in ipairs(head) do line[j] = pad(h, w[j], right[j]) end
  out[#out + 1] = (table.concat(line, "  "):gsub("%s+$", ""))
  out[#out + 1] = rule
  for _, c in ipairs(cells) do
    for j, s in ipairs(c) do line[j] = pad(s, w[j], right[j]) end
    out[#out + 1] = (table.concat(line, "  "):gsub("%s+$", ""))
  end
  out[#out + 1] = rule
  if #rows > #cells then out[#out + 1] = string.format("(%d more rows: row_limit = %d)", #rows - #cells, limit) end
  if #rows == 0 then out[#out + 1] = "(no events: nothing ran on a device or the CPU)" end
  if (self.dropped or 0) > 0 then
    out[#out + 1] = string.format("(%d more events were not recorded: a profile keeps its first %d; profile fewer "
      .. "iterations)", self.dropped, self.max_events)
  end
  if gpu then
    out[#out + 1] = string.format("* an estimate, not a measurement: the time one %s would need at its peak rates, " ..
      "max(bytes / %g GB/s, FLOPs / %g GFLOP/s) per kernel (roofline; launch costs and caches ignored)",
      gpu.name, gpu.gbps, gpu.gflops)
  end
  if modelled then
    local devs = {}
    for d in pairs(self.models) do devs[#devs + 1] = d end
    table.sort(devs)
    for _, d in ipairs(devs) do
      local m = self.models[d]
      out[#out + 1] = string.format("%s: modelled on %s (%s): its times are the model's, not this machine's; "
        .. "Peak%%: of the roof that bound the op (%s FP32, %s memory)", d, m.a_name, m.key,
        M.format_rate(m.peak.fp32, "FLOP/s"), M.format_rate(m.bandwidth, "B/s"))
    end
    out[#out + 1] = "host (cpu): this machine's own time, plus the driver's costs the model adds (docs/time-model.md)"
  end
  out[#out + 1] = "Wall time: " .. fmt_time(self.duration_ns)
  local function share(ns) return self.duration_ns > 0 and 100 * ns / self.duration_ns or 0 end
  for _, l in ipairs(self:lanes()) do
    local line = string.format("%s busy: %s (%.0f%%)", M.lane_label(l.lane), fmt_time(l.busy_ns), share(l.busy_ns))
    if l.wait_ns > 0 then
      -- a hidden synchronisation is time the host did nothing else: it is
      -- part of the busy time, so the line splits that time in two
      local work = math.max(0, l.busy_ns - l.wait_ns)
      line = line .. string.format(": %s (%.0f%%) of it waiting for devices, %s (%.0f%%) running code and queuing work",
        fmt_time(l.wait_ns), share(l.wait_ns), fmt_time(work), share(work))
    end
    out[#out + 1] = line
  end
  return table.concat(out, "\n")
end

Profile.__tostring = function(p) return p:table() end

-- ---- Chrome trace ------------------------------------------------------------

-- pid 0 is the host; cuda:i is pid i + 1; a stream's id is its tid.
local function pid_tid(lane)
  if lane == "host" then return 0, 0 end
  local d, s = lane:match("^cuda:(%d+)/(%d+)$")
  if d then return tonumber(d) + 1, tonumber(s) end
  d, s = lane:match("^cuda:(%d+)/(%a+)$")   -- a copy engine: a thread of its own
  if d then return tonumber(d) + 1, s == "in" and 1000 or 1001 end
  return 0, 0
end

-- The Chrome trace-event format (the "JSON Object Format" that Perfetto
-- and chrome://tracing load): process and thread names as metadata
-- events ("ph": "M"), every kernel, copy and wait as a complete event
-- ("ph": "X") with ts and dur in microseconds since the profile began.
function Profile:chrome_trace()
  local ev = {}
  local named = {}
  for _, l in ipairs(self:lanes()) do
    local pid, tid = pid_tid(l.lane)
    if not named[pid] then
      named[pid] = true
      local pname = pid == 0 and "host (cpu)" or ("cuda:" .. (pid - 1))
      ev[#ev + 1] = { name = "process_name", ph = "M", pid = pid, tid = 0, args = { name = pname } }
      ev[#ev + 1] = { name = "process_sort_index", ph = "M", pid = pid, tid = 0, args = { sort_index = pid } }
    end
    local tname = pid == 0 and "host" or tid >= 1000 and (tid == 1000 and "copy engine: copies in" or "copy engine: copies out")
      or ("stream " .. tid .. (tid == 0 and " (default)" or ""))
    ev[#ev + 1] = { name = "thread_name", ph = "M", pid = pid, tid = tid, args = { name = tname } }
  end
  for _, e in ipairs(self.events) do
    local pid, tid = pid_tid(e.lane)
    local args = { device = e.device, stream = e.stream, bytes = e.bytes, flops = e.flops }
    if e.shapes then args["Input Shapes"] = e.shapes end
    if e.modelled then args.modelled, args.bound, args.unit = true, e.bound, e.unit end
    ev[#ev + 1] = { name = e.name, cat = e.kind, ph = "X", pid = pid, tid = tid,
      ts = e.t0 / 1e3, dur = (e.t1 - e.t0) / 1e3, args = args }
  end
  return { traceEvents = ev, displayTimeUnit = "ms",
    otherData = { producer = "gshell " .. tostring(torch.__version__), duration_us = self.duration_ns / 1e3,
      dropped_events = self.dropped or 0 } }
end

local function write_file(path, text, what)
  if type(path) ~= "string" or path == "" then
    error(what .. ": expected a file path (a string), got " .. type(path), 3)
  end
  -- as torch.save writes (src/core/gs_file.h): a temporary file renamed
  -- into place, so a full disk never leaves a truncated file in place of a
  -- good one, and a device or FIFO at the path is refused
  local ok, why = torch._save_text(path, text)
  if not ok then error(what .. ": " .. tostring(why), 3) end
  return path
end

function Profile:export_chrome_trace(path)
  return write_file(path, prof.json(self:chrome_trace()) .. "\n", "export_chrome_trace")
end

-- ---- SVG timeline ------------------------------------------------------------

-- opts: {title = 'text above the axis'} (default "gshell profile").
function Profile:timeline_svg(opts)
  if opts ~= nil and type(opts) ~= "table" then error("timeline: options must be a table, got " .. type(opts), 3) end
  local msg = opts and torch._options_error(opts, "timeline", { "title" })
  if msg then error(msg, 3) end
  if opts and opts.title ~= nil and type(opts.title) ~= "string" then
    error("timeline: title must be a string, got " .. type(opts.title), 3)
  end
  return require("torch.profiler_svg").render(self, opts)
end

function Profile:export_timeline(path, opts)
  return write_file(path, self:timeline_svg(opts), "export_timeline")
end

-- Jupyter shows a profile as its timeline (gshell.kernel asks for this).
-- It scales to the notebook's width (never beyond its own), rather than
-- being cut off or scrolled.
function Profile:_repr_svg_()
  local svg = self:timeline_svg()
  return (svg:gsub('^(<svg[^>]-) width="(%d+)" height="%d+"', '%1 width="100%%" style="max-width: %2px; height: auto"', 1))
end

M.Profile = Profile
return M
