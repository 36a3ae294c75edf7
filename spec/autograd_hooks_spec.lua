-- autograd_hooks_spec.lua: x:register_post_accumulate_grad_hook(fn) (what
-- DistributedDataParallel starts its bucket reductions from) and
-- torch._queue_backward_callback(fn) (how it finishes them).
local torch = require("torch")
local H = require("helpers")

describe("post-accumulate-grad hooks", function()
  it("run once per backward, after every contribution to the leaf is in .grad", function()
    local w = torch.ones(3, { requires_grad = true })
    local seen = {}
    w:register_post_accumulate_grad_hook(function(t)
      assert.is_true(rawequal(t, w))
      seen[#seen + 1] = t.grad:tolist()
    end)
    -- w feeds two nodes: d/dw (2w + w^2) = 2 + 2w = 4
    local y = (w * 2):sum() + (w * w):sum()
    y:backward()
    assert.are.same({ { 4.0, 4.0, 4.0 } }, seen)
    -- accumulation across passes: the hook sees the running sum
    y = (w * 3):sum()
    y:backward()
    assert.are.same({ 7.0, 7.0, 7.0 }, seen[2])
    assert.are.equal(2, #seen)
  end)

  it("run in the order backward finishes the leaves (last layer first)", function()
    local a = torch.tensor({ 2.0 }, { requires_grad = true })
    local b = torch.tensor({ 3.0 }, { requires_grad = true })
    local order = {}
    a:register_post_accumulate_grad_hook(function() order[#order + 1] = "a" end)
    b:register_post_accumulate_grad_hook(function() order[#order + 1] = "b" end)
    local h = torch.exp(a * 5) -- a is used early in the graph
    local y = (h * b):sum()
    y:backward()
    assert.are.same({ "b", "a" }, order)
  end)

  it("can be removed, and an error in a hook stops backward with its message", function()
    local w = torch.ones(2, { requires_grad = true })
    local calls = 0
    local handle = w:register_post_accumulate_grad_hook(function() calls = calls + 1 end)
    handle:remove()
    w:sum():backward()
    assert.are.equal(0, calls)
    w:register_post_accumulate_grad_hook(function() error("hook says no") end)
    H.errors(function() (w * 2):sum():backward() end, { "post-accumulate-grad hook", "hook says no" })
  end)

  it("go away with their tensor, and what they hold with them", function()
    local probe = setmetatable({}, { __mode = "v" })
    do
      local w = torch.ones(2, { requires_grad = true })
      local held = {}
      probe[1] = held
      w:register_post_accumulate_grad_hook(function() return held end)
    end
    collectgarbage()
    collectgarbage()
    assert.is_nil(probe[1])
  end)

  it("refuse tensors that are not leaves requiring grad", function()
    local w = torch.ones(2, { requires_grad = true })
    H.errors(function() (w * 2):register_post_accumulate_grad_hook(function() end) end, "non-leaf")
    H.errors(function() torch.ones(2):register_post_accumulate_grad_hook(function() end) end, "do not require grad")
  end)
end)

describe("torch._queue_backward_callback", function()
  it("runs once at the end of the pass, after the hooks, with ok = true", function()
    local w = torch.ones(2, { requires_grad = true })
    local log = {}
    w:register_post_accumulate_grad_hook(function()
      log[#log + 1] = "hook"
      torch._queue_backward_callback(function(ok) log[#log + 1] = "end " .. tostring(ok) end)
    end)
    local y = (w * w):sum()
    y:backward()
    assert.are.same({ "hook", "end true" }, log)
  end)
end)
