-- inplace_autograd_spec.lua: in-place ops inside autograd as PyTorch
-- records them (version counters, CopySlices for a write into a view),
-- against PyTorch's gradients and refusals (spec/support/inplace_goldens.lua,
-- written by gen_inplace_goldens.py with Debian's python3-torch). Each case
-- below is the gshell translation of the function of the same name there;
-- they run in float64 on the CPU and on a simulated GPU.
local torch = require("torch")
local G = require("inplace_goldens")

local X = { 0.5, -1.25, 2.0, 0.75 }

local function assert_close(got, want, what)
  local vals = got:reshape(-1):double():cpu():tolist()
  assert.are.equal(#want, #vals, what .. ": element count")
  for i = 1, #want do
    if math.abs(vals[i] - want[i]) > 1e-12 * (1 + math.abs(want[i])) then
      error(("%s: element %d is %s, PyTorch gives %s"):format(what, i, vals[i], want[i]), 2)
    end
  end
end

-- each case gets x (requires grad), the loss weights w and a tensor
-- maker t(values) on the device, and returns the other tensors whose
-- gradients PyTorch gives (by name)
local CASES = {
  ["add_"] = function(x, w)
    local y = x * x
    y:add_(x) -- Y += X
    y:mul(w):sum():backward()
    return {}
  end,
  ["mul_ tensor"] = function(x, w, t)
    local v = t({ 2, 3, -1, 0.5 }):requires_grad_()
    local y = x * 1
    y:mul_(v)
    y:mul(w):sum():backward()
    return { v = v }
  end,
  ["exp_"] = function(x, w)
    local y = x * 2
    y:exp_()
    y:mul(w):sum():backward()
    return {}
  end,
  ["view mul_"] = function(x, w)
    local y = x * 2
    local v = y[{ { 2, 3 } }]
    v:mul_(3)
    y:mul(w):sum():backward()
    return {}
  end,
  ["masked_fill_"] = function(x, w, t, dev)
    local y = x * 2
    y:masked_fill_(torch.tensor({ true, false, true, false }, { device = dev }), -1)
    y:mul(w):sum():backward()
    return {}
  end,
  ["mask assign"] = function(x, w, t, dev)
    local y = x * 2
    y[torch.tensor({ false, true, true, false }, { device = dev })] = 5
    y:mul(w):sum():backward()
    return {}
  end,
  ["index assign"] = function(x, w, t, dev)
    local K = t({ { 1, 2 }, { 3, 4 } }):requires_grad_()
    local Xi = torch.arange(9, { dtype = torch.float64, device = dev }):reshape(3, 3) + x:detach()[1]
    local Y = torch.zeros(2, 2, { dtype = torch.float64, device = dev })
    for i = 1, 2 do
      for j = 1, 2 do
        Y[{ i, j }] = (Xi[{ { i, i + 1 }, { j, j + 1 } }] * K):sum()
      end
    end
    assert.are.equal("<CopySlices>", tostring(Y.grad_fn))
    Y:mul(t({ { 1, 2 }, { 3, 4 } })):add(x:sum()):sum():backward()
    return { K = K }
  end,
  ["stale view"] = function(x, w)
    local y = x * 2
    local v = y[{ { 2, 3 } }]
    y:mul_(3)
    v:mul(w[{ { 1, 2 } }]):sum():backward()
    return {}
  end,
  ["view of a base that joins the graph"] = function(x, w, t, dev)
    local Y = torch.zeros(4, { dtype = torch.float64, device = dev })
    local v = Y[{ { 1, 2 } }]
    Y[2] = x[1] * 5
    assert.is_true(v.requires_grad)
    v:mul(w[{ { 1, 2 } }]):add(x[4]):sum():backward()
    return {}
  end,
  ["a write PyTorch allows: nothing saved it"] = function(x, w)
    local h = x * 1
    local y = h:exp() + h * 2 + h / 4
    h:add_(1)
    y:mul(w):sum():backward()
    return {}
  end,
  ["copy into slice"] = function(x, w)
    local y = x * x
    y[{ { 2, 3 } }] = x[{ { 1, 2 } }] * 3
    y:mul(w):sum():backward()
    return {}
  end,
}

local REFUSALS = {
  ["saved result"] = function(dev)
    local x = torch.tensor({ 0.5, -1.25, 2.0 }, { device = dev, requires_grad = true })
    local y = x:exp()
    y:mul_(2)
    y:sum():backward()
  end,
  ["saved input"] = function(dev)
    local w = torch.ones(3, { device = dev })
    local x = torch.tensor({ 0.5, -1.25, 2.0 }, { device = dev, requires_grad = true })
    local y = x * w
    w:add_(1)
    y:sum():backward()
  end,
  ["saved, written through a view"] = function(dev)
    local x = torch.tensor(X, { dtype = torch.float64, device = dev, requires_grad = true })
    local y = x:exp()
    y[{ { 2, 3 } }]:mul_(3)
    y:sum():backward()
  end,
  ["saved input of log"] = function(dev)
    local x = torch.tensor(X, { dtype = torch.float64, device = dev, requires_grad = true })
    local h2 = (x * 1) * (x * 1)
    local y = h2:log()
    h2:add_(1)
    y:sum():backward()
  end,
  ["leaf"] = function(dev)
    torch.tensor(X, { device = dev, requires_grad = true }):add_(1)
  end,
  ["view of a leaf"] = function(dev)
    local x = torch.tensor(X, { device = dev, requires_grad = true })
    x[1] = 1
  end,
}

local saved_n, saved_cap

describe("in-place ops inside autograd (issue 31)", function()
  setup(function() saved_n, saved_cap = torch._sim_configure(2) end)
  teardown(function() collectgarbage(); collectgarbage(); torch._sim_configure(saved_n, saved_cap) end)

  for _, dev in ipairs({ "cpu", "cuda:0" }) do
    describe("as PyTorch (" .. dev .. ")", function()
      local function t(v) return torch.tensor(v, { dtype = torch.float64, device = dev }) end
      for name, f in pairs(CASES) do
        it(name .. " gives PyTorch's gradients", function()
          local x = t(X):requires_grad_()
          local others = f(x, t({ 1, -2, 3, 0.5 }), t, dev)
          assert_close(x.grad, G[name].x, name .. ": x.grad")
          for k, v in pairs(others) do assert_close(v.grad, G[name][k], name .. ": " .. k .. ".grad") end
        end)
      end
      for name, f in pairs(REFUSALS) do
        it("refuses as PyTorch: " .. name, function()
          local ok, err = pcall(f, dev)
          assert.is_false(ok)
          local want = G[name].message
          if dev ~= "cpu" then want = want:gsub("%[torch%.", "[torch.cuda.") end
          assert.is_truthy(tostring(err):find(want, 1, true), tostring(err))
        end)
      end
    end)
  end

  it("a write bumps the version that x._version reads; new tensors start at 0", function()
    local x = torch.zeros(3)
    assert.are.equal(0, x._version)
    x:add_(1)
    x[1] = 2
    assert.are.equal(2, x._version)
    assert.are.equal(0, torch.ones(2)._version)
  end)

  it("a view written in place carries its part of the base's gradient (AsStridedBackward0)", function()
    local x = torch.tensor({ 1.0, 2.0, 3.0 }, { dtype = torch.float64, requires_grad = true })
    local y = x * 1
    local v = y[{ { 1, 2 } }]
    v:mul_(x[{ { 2, 3 } }])
    assert.are.equal("<AsStridedBackward0>", tostring(v.grad_fn))
    assert.are.equal("<CopySlices>", tostring(y.grad_fn))
    v:sum():backward()
    -- v = [x1 * x2, x2 * x3]: d/dx = [x2, x1 + x3, x2]
    assert.are.same({ 2, 4, 2 }, x.grad:tolist())
  end)

  it("no reference cycles: x.grad = a view of x and recording into a .grad are refused, a view made a leaf drops its base", function()
    local x = torch.zeros(3)
    local ok, err = pcall(function() x.grad = x[{}] end)
    assert.is_false(ok)
    assert.matches("a view of the tensor itself or of a tensor in an autograd graph", tostring(err))
    x.grad = x[{}]:clone()
    local w = torch.ones(2, { requires_grad = true })
    w:sum():backward()
    ok, err = pcall(function() w.grad:add_(w) end) -- w.grad would hold w through its node
    assert.is_false(ok)
    assert.matches("a .grad must not be part of an autograd graph", tostring(err), 1, true)
    torch.no_grad(function() w.grad:add_(w) end)
    assert.are.same({ 2.0, 2.0 }, w.grad:tolist())
    local Y = torch.zeros(3)
    local v = Y[{ { 1, 1 } }]
    v.requires_grad = true
    Y[{ { 2, 2 } }] = v * 3
    Y:sum():backward()
    assert.are.same({ 3.0 }, v.grad:tolist())
  end)

  it("x:add_(y) with only y requiring grad puts x into the graph; no_grad writes are not recorded", function()
    local y = torch.tensor({ 1.0, 2.0 }, { requires_grad = true })
    local x = torch.zeros(2)
    x:add_(y * 2)
    assert.are.equal("<AddBackward0>", tostring(x.grad_fn))
    x:sum():backward()
    assert.are.same({ 2, 2 }, y.grad:tolist())
    local z = torch.zeros(2)
    torch.no_grad(function() z:add_(y) end)
    assert.is_nil(z.grad_fn)
    assert.is_false(z.requires_grad)
  end)
end)
