-- spec/support/device_busy.lua: keeps a simulated GPU's current stream busy
-- for about a given time, so that what a spec queues behind it is still
-- queued when the host looks. A fixed number of products would take 20 ms
-- on one machine and 2 s on another; the cost of one product is measured
-- once per device configuration instead. The products are long and thin
-- ([128, 8192] @ [8192, 128]: 268 MFLOP into 64 KiB), so the work makes
-- little garbage and specs may stop the collector around it: a full
-- collection of the whole suite's heap under AddressSanitizer takes
-- longer than the work a spec can afford to queue.
--   local busy = require("device_busy")
--   busy("cuda:0", 150)   -- queues about 150 ms of work, returns at once
local torch = require("torch")

local M, K = 128, 8192
-- seconds per product, by number of devices (each has the same share of
-- the host, so the same work takes as long on any of them)
local per_product = {}

local function operands(dev)
  return torch.full({ M, K }, 1 / K, { device = dev, dtype = torch.float32 }), torch.full({ K, M }, 1.0, { device = dev, dtype = torch.float32 })
end

local function measure(dev)
  local a, b = operands(dev)
  torch.cuda.synchronize(dev)
  local best = math.huge
  for _ = 1, 3 do
    local t0 = torch.clock()
    for _ = 1, 4 do a:matmul(b) end
    torch.cuda.synchronize(dev)
    best = math.min(best, (torch.clock() - t0) / 4)
  end
  return best
end

return function(dev, ms)
  local key = torch.cuda.device_count()
  per_product[key] = per_product[key] or measure(dev)
  local n = math.max(1, math.ceil(ms / 1000 / per_product[key]))
  local a, b = operands(dev)
  local c
  for _ = 1, n do c = a:matmul(b) end
  return c
end
