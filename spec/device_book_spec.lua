-- device_book_spec.lua: the "GPU" chapter of Dive into Deep Learning, as
-- learners ran it (/work/shared/seeds/000_*.txt, 001_*.txt, and the notes
-- of 002-004), step by step in gshell's Lua (API.md), on 0, 1, 2 and 3
-- simulated GPUs. With fewer GPUs than a step needs, try_gpu(i) gives the
-- cpu and the step does what PyTorch does on such a machine.
local torch = require("torch")
local nn = torch.nn
local try_gpu, try_all_gpus = torch.try_gpu, torch.try_all_gpus

local saved_n, saved_cap
local function gc() collectgarbage(); collectgarbage() end

local function err(f, ...)
  local ok, e = pcall(f, ...)
  assert(not ok, "expected an error")
  return (tostring(e):gsub("^[^\n]-:%d+: ", ""))
end

-- ", device='cuda:0'" for a CUDA device, "" for the cpu: how repr ends.
local function suffix(dev)
  return dev.type == "cuda" and string.format(", device='cuda:%d'", dev.index) or ""
end

describe("the book's GPU chapter", function()
  setup(function() gc(); saved_n, saved_cap = torch._sim_configure(0) end)
  teardown(function() torch.set_default_device(nil); gc(); torch._sim_configure(saved_n, saved_cap) end)

  for _, n in ipairs({ 0, 1, 2, 3 }) do
    describe("on " .. n .. " simulated GPUs", function()
      before_each(function()
        torch.set_default_device(nil)
        gc()
        torch._sim_configure(n)
      end)

      it("!nvidia-smi: torch.cuda.smi() lists the devices and says they are simulated", function()
        local text = torch.cuda.smi_text()
        if n == 0 then
          assert.matches("No devices were found", text, nil, true)
        else
          assert.matches("Simulated GPUs: " .. n, text, nil, true)
          local rows = 0
          for _ in text:gmatch("Tesla V100%-SXM2%-16GB  ") do rows = rows + 1 end
          assert.are.equal(n, rows)
        end
      end)

      it("computing devices: torch.device('cpu'), torch.device('cuda'), torch.device('cuda:1')", function()
        assert.are.equal("cpu", tostring(torch.device("cpu")))
        assert.are.equal("cuda", tostring(torch.device("cuda")))
        assert.are.equal("cuda:1", tostring(torch.device("cuda:1")))
        assert.matches("^<torch.cuda.device at 0x%x+>$", tostring(torch.cuda.device("cuda:1")))
        assert.are.equal(n, torch.cuda.device_count())
        assert.are.equal(n > 0, torch.cuda.is_available())
      end)

      it("try_gpu(), try_gpu(10), try_all_gpus()", function()
        assert.are.equal(n >= 1 and "cuda:0" or "cpu", tostring(try_gpu()))
        assert.are.equal("cpu", tostring(try_gpu(10)))
        local all = try_all_gpus()
        local want = {}
        for i = 0, n - 1 do want[#want + 1] = string.format("cuda:%d", i) end
        if n == 0 then want = { "cpu" } end
        local got = {}
        for i, d in ipairs(all) do got[i] = tostring(d) end
        assert.are.same(want, got)
      end)

      it("tensors and GPUs: the whole session in order", function()
        -- X = torch.tensor([1, 2, 3]); X.device
        local X = torch.tensor({ 1, 2, 3 })
        assert.are.equal("cpu", tostring(X.device))

        -- X = torch.ones(2, 3, device=try_gpu()); X
        X = torch.ones(2, 3, { device = try_gpu() })
        assert.are.equal(try_gpu(), X.device)
        assert.are.equal("tensor([[1., 1., 1.],\n        [1., 1., 1.]]" .. suffix(X.device) .. ")", tostring(X))

        -- Y = torch.rand(2, 3, device=try_gpu(1)); Y
        torch.manual_seed(0)
        local Y = torch.rand(2, 3, { device = try_gpu(1) })
        assert.are.equal(try_gpu(1), Y.device)
        torch.manual_seed(0)
        local Yc = torch.rand(2, 3) -- the same numbers on the cpu
        assert.are.same(Yc:tolist(), Y:tolist())
        local tail = suffix(Y.device) .. ")"
        assert.are.equal(tail, tostring(Y):sub(-#tail))

        -- Z = X.cuda(1); print(X); print(Z)
        if n < 2 then
          local e = err(function() return X:cuda(1) end)
          assert.matches("^cuda:1 is not available: ", e)
          if n == 1 then
            -- X + Y cannot mix cuda:0 and the cpu
            assert.are.equal("Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!",
              err(function() return X + Y end))
            local Z = Y:cuda(0) -- what one GPU can do: move Y to X's device
            assert.are.same((Yc + 1):tolist(), (X + Z):cpu():tolist())
          else
            assert.are.same((Yc + 1):tolist(), (X + Y):tolist()) -- everything on the cpu
          end
          return
        end
        local Z = X:cuda(1)
        assert.are.equal("tensor([[1., 1., 1.],\n        [1., 1., 1.]], device='cuda:0')", tostring(X))
        assert.are.equal("tensor([[1., 1., 1.],\n        [1., 1., 1.]], device='cuda:1')", tostring(Z))

        -- X + Y: an error, they are on different GPUs
        assert.are.equal("Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cuda:1!",
          err(function() return X + Y end))

        -- Y + Z
        local S = Y + Z
        assert.are.equal(torch.device("cuda:1"), S.device)
        assert.are.same((Yc + 1):tolist(), S:cpu():tolist())
        assert.matches("device='cuda:1'%)$", tostring(S))

        -- Z.cuda(1) is Z
        assert.is_true(rawequal(Z:cuda(1), Z))
        assert.is_false(rawequal(Z:cuda(0), Z))
      end)

      it("copies are counted: the chapter's warning about transfers", function()
        torch.cuda.reset_transfers()
        local X = torch.ones(2, 3, { device = try_gpu() })
        local _ = tostring(X)
        local t = torch.cuda.transfers()
        assert.are.equal(n >= 1 and 1 or 0, t.d2h.count) -- printing a GPU tensor copies it to the host
        if n >= 2 then
          local Z = X:cuda(1)
          assert.are.equal(1, torch.cuda.transfers().d2d.count)
          Z:cuda(1)
          assert.are.equal(1, torch.cuda.transfers().d2d.count) -- no copy for Z:cuda(1)
        end
      end)

      it("neural networks and GPUs: net:to(try_gpu()); net(X); net[1].weight.data.device", function()
        assert(nn, "torch.nn must be loaded")
        local X = torch.ones(2, 3, { device = try_gpu() })
        local net = nn.Sequential(nn.Linear(3, 1))
        net = net:to(try_gpu())
        local out = net(X)
        assert.are.equal(try_gpu(), out.device)
        assert.are.same({ 2, 1 }, { out:size(1), out:size(2) })
        assert.are.equal(out[{ 1, 1 }]:item(), out[{ 2, 1 }]:item()) -- equal rows, as in the book
        assert.matches("grad_fn=<AddmmBackward0>%)$", tostring(out))
        assert.matches(suffix(try_gpu()), tostring(out), nil, true)
        assert.are.equal(n >= 1 and "cuda:0" or "cpu",
          tostring(net[1].weight.data.device))
        -- the same result as the same net on the cpu
        local w, b = net[1].weight.data:cpu(), net[1].bias.data:cpu()
        local ref = torch.ones(2, 3):matmul(w:t()) + b
        assert.is_true(ref:allclose(out:detach():cpu()))
        -- a module on one device and input on another is an error
        if n >= 2 then
          assert.matches("Expected all tensors to be on the same device",
            err(function() return net(X:cuda(1)) end), nil, true)
        end
      end)

      it("moving tensors (004): ones_like(x, device=), x.to(device), x.to('cpu', double)", function()
        local x = torch.Tensor(2, 3)
        assert.are.equal(torch.float32, x.dtype)
        if torch.cuda.is_available() then
          local device = torch.device("cuda")
          local y = torch.ones_like(x, { device = device })
          assert.are.equal("tensor([[1., 1., 1.],\n        [1., 1., 1.]], device='cuda:0')", tostring(y))
          x = x:to(device)
          assert.are.equal(torch.device("cuda:0"), x.device)
          x = x:to("cpu", torch.double)
          assert.are.equal(torch.device("cpu"), x.device)
          assert.are.equal(torch.float64, x.dtype)
          assert.matches("dtype=torch.float64%)$", tostring(x))
        else
          assert.is_false(torch.cuda.is_available())
        end
      end)

      it("device scopes (002, TensorFlow's `with try_gpu():`)", function()
        local X
        do
          local s <close> = torch.device_scope(try_gpu())
          X = torch.ones(2, 3)
        end
        assert.are.equal(try_gpu(), X.device)
        local Y = torch.with_device(try_gpu(2), function() return torch.rand(2, 3) end)
        assert.are.equal(try_gpu(2), Y.device)
        assert.are.equal(torch.device("cpu"), torch.ones(1).device) -- the default is back
        -- with try_gpu(1): Z2 = Z  ->  Z2 is Z
        local Z = X
        local Z2 = torch.with_device(try_gpu(1), function() return Z end)
        assert.is_true(rawequal(Z2, Z))
      end)

      it("exercise: CPU vs GPU matrix products, timed with synchronize", function()
        local function run(dev)
          local C
          for _ = 1, 3 do
            local A = torch.ones(64, 64, { device = dev })
            local B = torch.ones(64, 64, { device = dev })
            C = torch.matmul(A, B)
          end
          torch.cuda.synchronize()
          return C
        end
        local t0 = torch.clock()
        local c1 = run("cpu")
        local t1 = torch.clock()
        local c2 = run(try_gpu())
        local t2 = torch.clock()
        assert.is_true(t1 >= t0 and t2 >= t1)
        assert.are.equal(64 * 64 * 64.0, c2:sum():item())
        assert.is_true(c1:equal(c2:cpu()))
        if n > 0 then torch.cuda.synchronize(0) end
      end)

      it("exercise: log Frobenius norms on the GPU and move them once", function()
        torch.manual_seed(1)
        local dev = try_gpu()
        local A = torch.rand(20, 20, { device = dev }) / 10
        -- one result at a time: one device-to-host copy per step
        torch.cuda.reset_transfers()
        local each = {}
        for i = 1, 30 do each[i] = A:matmul(A):norm():item() end
        local per_step = torch.cuda.transfers().d2h.count
        -- logged on the device, moved once
        torch.cuda.reset_transfers()
        local log = torch.zeros(30, { device = dev })
        for i = 1, 30 do log[i] = A:matmul(A):norm() end
        local once = log:tolist()
        local at_end = torch.cuda.transfers().d2h.count
        assert.are.same(each, once)
        assert.are.equal(n >= 1 and 30 or 0, per_step)
        assert.are.equal(n >= 1 and 1 or 0, at_end)
      end)

      it("exercise: two matrix products on two GPUs give what one GPU gives", function()
        torch.manual_seed(3)
        local A = torch.rand(32, 32)
        local on0 = A:to(try_gpu(0))
        local on1 = A:to(try_gpu(1))
        local r0 = on0:matmul(on0)
        local r1 = on1:matmul(on1)
        assert.are.equal(try_gpu(0), r0.device)
        assert.are.equal(try_gpu(1), r1.device)
        assert.is_true(r0:cpu():equal(r1:cpu()))
      end)

      it("exercise: parameters saved from a GPU load back onto it", function()
        assert(nn and torch.save and torch.load, "torch.nn, torch.save and torch.load must exist")
        local net = nn.Sequential(nn.Linear(3, 1)):to(try_gpu())
        local path = os.tmpname()
        torch.save(net:state_dict(), path)
        local sd = torch.load(path)
        os.remove(path)
        for k, v in pairs(sd) do
          assert.are.equal(try_gpu(), v.device, k)
        end
        local net2 = nn.Sequential(nn.Linear(3, 1)):to(try_gpu())
        net2:load_state_dict(sd)
        local X = torch.ones(2, 3, { device = try_gpu() })
        assert.is_true(net(X):detach():equal(net2(X):detach()))
      end)
    end)
  end
end)
