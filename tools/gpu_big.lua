-- gpu_big.lua: tensors past 2^31 elements and bytes on a CUDA device, each
-- result compared with the CPU's (32-bit index arithmetic would wrap there).
-- Needs about 28 GiB of GPU memory at its peak: the float16 check holds
-- 4 GiB of float16, 8 GiB of float32 and 16 GiB of float64 at once, and
-- the uint8 sums 18 GiB (2 GiB of uint8 and their int64 copy, the sum's
-- compute dtype); each line prints its check's peak (--small: the same
-- checks at 1/2048 of the size, in MiB). Host memory: about 10 GiB (the
-- index_select check's 8 GiB int32 matrix). Takes about a minute on a GPU
-- machine (the CPU side dominates).
--
--   gshell tools/gpu_big.lua [cuda:N]            the real sizes
--   gshell --sim-gpus 1 tools/gpu_big.lua --small  the same checks on 2^20 (the script itself)
--
-- Prints one PASS/FAIL line per check; exit status 1 on any failure.
local torch = rawget(_G, "torch") or require("torch")
local args = rawget(_G, "arg") or {}
local dev, small = "cuda:0", false
for _, a in ipairs(args) do
  if a == "--small" then small = true elseif a:match("^cuda") then dev = a end
end
if torch.cuda.device_count() == 0 then
  print("gpu_big: no CUDA device (" .. tostring(torch.cuda.unavailable_reason()) .. ")")
  os.exit(2)
end

local BIG = small and (1 << 20) + 1000 or (1 << 31) + 1000 -- elements
local failed = 0
local function check(name, fn)
  collectgarbage(); collectgarbage()
  torch.cuda.reset_peak_memory_stats(dev)
  local base = torch.cuda.memory_allocated(dev)
  local t0 = torch.clock()
  local ok, err = pcall(fn)
  torch.cuda.synchronize()
  local peak = (torch.cuda.max_memory_allocated(dev) - base) / (small and 2 ^ 20 or 2 ^ 30)
  print(("%s  %s (%.1f s, peak %.2f %s on the device)%s"):format(ok and "PASS" or "FAIL", name, torch.clock() - t0,
    peak, small and "MiB" or "GiB", ok and "" or ": " .. tostring(err):gsub("\n", " | ")))
  if not ok then failed = failed + 1 end
end
local function expect(c, msg) if not c then error(msg, 0) end end

check(("sum of %d uint8 ones (as int64)"):format(BIG), function()
  local g = torch.ones(BIG, {dtype = torch.uint8, device = dev})
  local s = g:sum():item()
  expect(s == BIG, ("sum %s, expected %d"):format(tostring(s), BIG))
end)

check("read and write one element past 2^31 (indexing)", function()
  local g = torch.zeros(BIG, {dtype = torch.uint8, device = dev})
  local i = BIG - 7 -- 1-based, past 2^31
  g[i] = 200
  expect(g[i]:item() == 200, "g[i] reads " .. tostring(g[i]:item()))
  expect(g[i - 1]:item() == 0 and g[i + 1]:item() == 0, "a neighbour was written")
  expect(g:sum():item() == 200, "the write landed elsewhere")
end)

check("max and argmax find an element past 2^31", function()
  local c = torch.zeros(BIG, {dtype = torch.uint8})
  c[BIG - 100] = 7
  local g = c:to(dev)
  expect(g:max():item() == 7, "max " .. tostring(g:max():item()))
  expect(g:argmax():item() == c:argmax():item(),
    ("argmax cuda %s, cpu %s"):format(tostring(g:argmax():item()), tostring(c:argmax():item())))
  local v, idx = g:float():max(1)
  expect(v:item() == 7 and idx:item() == c:argmax():item(), "max(dim) index " .. tostring(idx:item()))
end)

check("index_select of rows past 2^31 elements", function()
  local cols = 1024
  local rows = BIG // cols + 2
  local c = torch.arange(rows, {dtype = torch.int32}):reshape(rows, 1):expand(rows, cols):contiguous()
  local idx = torch.tensor({rows, 1, rows - 1, rows // 2})
  local want = c:index_select(1, idx)
  local got = c:to(dev):index_select(1, idx:to(dev)):cpu()
  expect(got:equal(want), "rows differ")
end)

check("float16 to float32 past 2^31 elements (and 2^32 bytes)", function()
  local g = torch.ones(BIG, {dtype = torch.float16, device = dev})
  g[BIG] = 2.5
  local f = g:float()
  expect(f[BIG]:item() == 2.5 and f[1]:item() == 1.0, "values " .. tostring(f[1]:item()) .. ", " .. tostring(f[BIG]:item()))
  local s = f:double():sum():item()
  expect(s == (BIG - 1) + 2.5, ("sum %.1f"):format(s))
end)

check("a float32 copy of more than 2^31 bytes round-trips through the host", function()
  local n = small and (1 << 19) + 3 or (1 << 29) + 3 -- 2 GiB + 12 bytes
  local c = torch.arange(n, {dtype = torch.float32}) % 1000
  local back = c:to(dev):cpu()
  expect(back:equal(c), "the copy differs")
end)

print(("gpu_big: %d failed"):format(failed))
os.exit(failed == 0 and 0 or 1)
