-- spec/support/device_busy.lua: keeps a simulated GPU's current stream busy
-- for about a given time, so that what a spec queues behind it is still
-- queued when the host looks. A fixed number of products would take 20 ms
-- on one machine and 2 s on another; the cost of one product is measured
-- once per device configuration instead.
--   local busy = require("device_busy")
--   busy("cuda:0", 150)   -- queues about 150 ms of work, returns at once
local torch = require("torch")

local SIZE = 512
-- seconds per product, by number of devices (each has the same share of
-- the host, so the same work takes as long on any of them)
local per_product = {}

local function measure(dev)
  local m = torch.full({ SIZE, SIZE }, 1 / SIZE, { device = dev })
  torch.cuda.synchronize(dev)
  local best = math.huge
  for _ = 1, 3 do
    local t0 = torch.clock()
    for _ = 1, 4 do m:matmul(m) end
    torch.cuda.synchronize(dev)
    best = math.min(best, (torch.clock() - t0) / 4)
  end
  return best
end

return function(dev, ms)
  local key = torch.cuda.device_count()
  per_product[key] = per_product[key] or measure(dev)
  local n = math.max(1, math.ceil(ms / 1000 / per_product[key]))
  local m = torch.full({ SIZE, SIZE }, 1 / SIZE, { device = dev })
  for _ = 1, n do m = m:matmul(m) end
  return m
end
