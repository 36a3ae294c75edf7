-- Memory safety (issue 14): lists whose metamethods make tensors and run
-- the collector, deep autograd graphs and .grad chains freed without
-- recursion, joins of any number of tensors. Under the sanitizer build
-- (which bypasses the header and userdata pools) a use after free or a
-- stack overflow fails the run.
local torch = require("torch")
local H = require("helpers")

-- A list of n tensors that exists only through metamethods: each element
-- is made on access, after a full collection, so nothing else holds the
-- earlier ones.
local function proxy_list(n, make)
  return setmetatable({}, {
    __len = function() return n end,
    __index = function(_, k)
      collectgarbage()
      return make(k)
    end,
  })
end

describe("lists read through metamethods", function()
  it("torch.cat keeps every element alive while it joins them", function()
    local r = torch.cat(proxy_list(3, function(k) return torch.ones(4) * k end))
    H.assert_list_equal(r:tolist(), {1.0, 1.0, 1.0, 1.0, 2.0, 2.0, 2.0, 2.0, 3.0, 3.0, 3.0, 3.0})
  end)

  it("torch.stack keeps every element alive while it joins them", function()
    local r = torch.stack(proxy_list(3, function(k) return torch.ones(2) * k end))
    H.assert_list_equal(r:tolist(), {{1.0, 1.0}, {2.0, 2.0}, {3.0, 3.0}})
  end)

  it("an element that is not a tensor is named in the error", function()
    H.errors(function() torch.cat(proxy_list(3, function(k) return k == 2 and "x" or torch.ones(1) end)) end,
             {"cat", "element 2 is a string"})
  end)

  it("torch._save keeps names and tensors made by __index alive", function()
    local path = os.tmpname()
    local names = proxy_list(3, function(k) return "t" .. k .. string.rep("x", 40) end)
    local tensors = proxy_list(3, function(k) return torch.full({3}, k + 0.5) end)
    torch._save(path, names, tensors, {format = "pt"})
    local back = torch.load(path)
    os.remove(path)
    for k = 1, 3 do
      H.assert_list_equal(back["t" .. k .. string.rep("x", 40)]:tolist(), {k + 0.5, k + 0.5, k + 0.5})
    end
  end)
end)

-- (issue 14) A table whose __index raises at its k-th read, for every k a
-- call makes: whatever the call had allocated by then (a partly filled
-- tensor, views, joined pieces) must be freed. torch._host_memory()'s
-- bytes in use after a full collection are the measure.
-- CI time (issue 24): each case below runs in a fresh lua5.4 (H.run_lua,
-- with the sanitizer preload of a SANITIZE=1 run inherited): its hundreds
-- of full collections then walk a small heap, not the one busted has grown
-- over the spec files before this one (the torch.tensor case took over a
-- third of a whole plain run that way on the busy machine, 9 s alone).
-- They and the deep graphs further down are not run under TSAN: they are
-- single-threaded, nothing for a race detector.
local tsan_it = H.not_under_tsan_it(it, pending, "single-threaded leak/recursion checks, hundreds of full collections")

-- The checks, as Lua source for the child process.
local LEAK_LIB = [==[
local torch = require("torch")
local function gc() collectgarbage(); collectgarbage() end
-- data (nested tables too) behind metamethods; the k-th read raises
local function bomb(data, k)
  local reads = 0
  local function wrap(t)
    if type(t) ~= "table" then return t end
    return setmetatable({}, {
      __len = function() return #t end,
      __index = function(_, key)
        reads = reads + 1
        if reads == k then error("raised at read " .. k) end
        return wrap(t[key])
      end,
    })
  end
  return wrap(data), function() return reads end
end
-- every k from 1 to the number of reads a clean call makes (at most
-- `most` of them, spread evenly)
local function no_leak(name, call, data, most)
  local clean, count = bomb(data, 0)
  call(clean)
  local n = count()
  assert(n > 0, name .. ": the call read nothing")
  most = most or 120
  for i = 0, math.min(n, most) - 1 do
    local k = n <= most and i + 1 or 1 + (i * (n - 1)) // (most - 1)
    gc()
    local before = torch._host_memory()
    local ok, err = pcall(call, (bomb(data, k)))
    assert(not ok, name .. ": no error at read " .. k)
    assert(tostring(err):find("raised at read " .. k, 1, true), tostring(err))
    gc()
    local after = torch._host_memory()
    assert(before == after, name .. ": " .. (after - before) .. " bytes left in use after an error at read " .. k .. " of " .. n)
  end
end
local rows = {}
for i = 1, 32 do rows[i] = {} for j = 1, 32 do rows[i][j] = i * j end end
]==]

-- Runs LEAK_LIB and `body` in a fresh lua5.4; passes when it reached its
-- end and nothing (an assertion, a sanitizer) said otherwise.
local function in_child(body)
  local out = H.run_lua(LEAK_LIB .. body .. "\nio.write('leak checks done\\n')\n")
  assert.truthy(out:find("leak checks done\n", 1, true), out)
  assert.falsy(out:find("Sanitizer", 1, true) or out:find("runtime error:", 1, true), out)
end

describe("errors raised by metamethods part-way through a call leak nothing", function()
  local it = tsan_it

  it("torch.tensor and new_tensor: the table read a second time to fill the tensor", function()
    in_child([[
      no_leak("torch.tensor", function(b) return torch.tensor(b) end, rows, 200)
      no_leak("torch.tensor float64", function(b) return torch.tensor(b, { dtype = torch.float64 }) end, rows, 60)
      local x = torch.ones(2)
      no_leak("new_tensor", function(b) return x:new_tensor(b) end, rows, 60)
    ]])
  end)

  it("torch.cat and torch.stack: the list of tensors", function()
    in_child([[
      local parts = { torch.ones(1000), torch.ones(1000), torch.ones(1000) }
      no_leak("cat", function(b) return torch.cat(b) end, parts)
      no_leak("stack", function(b) return torch.stack(b) end, parts)
    ]])
  end)

  it("indexing, index assignment and size tables", function()
    in_child([[
      local x = torch.ones(64, 64)
      no_leak("index", function(b) return x[b] end, { { 1, 32 }, { 2, 40, 2 } })
      no_leak("index assignment", function(b) x[b] = 2 end, { { 1, 32 }, { 2, 40, 2 } })
      no_leak("view", function(b) return x:view(b) end, { 16, 256 })
      no_leak("split", function(b) return x:split(b) end, { 10, 54 })
      no_leak("ones", function(b) return torch.ones(b) end, { 64, 64 })
      -- only the clean assignment wrote (rows 1-32, columns 2, 4, ..., 40); the failed ones wrote nothing
      assert(x:sum():item() == 64 * 64 + 32 * 20, "a failed assignment wrote")
    ]])
  end)
end)

describe("joins of many tensors (no fixed limit)", function()
  it("stacks 1000 tensors, with gradients to each", function()
    local xs = {}
    for i = 1, 1000 do xs[i] = torch.tensor({i, -i}, {dtype = torch.float64, requires_grad = true}) end
    local s = torch.stack(xs)
    assert.are.same({1000, 2}, H.shape(s))
    assert.are.equal("<StackBackward0>", s.grad_fn)
    H.assert_list_equal(s[500]:tolist(), {500.0, -500.0})
    -- d/dx_i of sum(w * s) with w[i] = {i, 2i} is {i, 2i}
    local w = torch.stack((function()
      local ws = {}
      for i = 1, 1000 do ws[i] = torch.tensor({i, 2 * i}, {dtype = torch.float64}) end
      return ws
    end)())
    local loss = (s * w):sum()
    loss:backward()
    for _, i in ipairs({1, 2, 3, 4, 333, 999, 1000}) do H.assert_list_equal(xs[i].grad:tolist(), {i + 0.0, 2.0 * i}) end
  end)

  it("stacks along the last dimension too", function()
    local xs = {}
    for i = 1, 7 do xs[i] = torch.tensor({i + 0.0, 10.0 * i}, {requires_grad = true}) end
    local s = torch.stack(xs, 2)
    assert.are.same({2, 7}, H.shape(s))
    local w = torch.arange(14):float():view(2, 7)
    local loss = (s * w):sum()
    loss:backward()
    for i = 1, 7 do H.assert_list_equal(xs[i].grad:tolist(), {i - 1.0, 7.0 + i - 1}) end
  end)

  it("concatenates 5000 tensors, with gradients to each, skipping empty ones", function()
    local xs = {}
    for i = 1, 5000 do
      xs[i] = i % 1000 == 0 and torch.tensor({}, {requires_grad = true})
              or torch.tensor({i}, {dtype = torch.float64, requires_grad = true})
    end
    local c = torch.cat(xs)
    assert.are.same({4995}, H.shape(c))
    assert.are.equal("<CatBackward0>", c.grad_fn)
    local loss = (c * c):sum()
    loss:backward()
    for _, i in ipairs({1, 2, 3, 999, 1001, 4999}) do H.assert_list_equal(xs[i].grad:tolist(), {2.0 * i}) end
    assert.is_nil(xs[1000].grad)
  end)

  it("joins of many tensors without autograd are plain copies", function()
    local xs = {}
    for i = 1, 3000 do xs[i] = torch.full({1, 2}, i, {dtype = torch.int64}) end
    local c = torch.cat(xs, 1)
    assert.are.same({3000, 2}, H.shape(c))
    assert.are.equal(2 * (3000 * 3001 // 2), c:sum():item())
    assert.is_nil(c.grad_fn)
  end)
end)

describe("deep graphs are released without recursion", function()
  local it = tsan_it
  local STEPS = 400000

  it("a loss accumulated over 400,000 steps backpropagates and is freed", function()
    local x = torch.tensor({2.0}, {requires_grad = true})
    local loss = torch.zeros(1)
    for _ = 1, STEPS do loss = loss + x end
    assert.are.equal("<AddBackward0>", loss.grad_fn)
    loss:sum():backward()
    assert.are.equal(STEPS + 0.0, x.grad:item())
    loss = nil
    collectgarbage()
    collectgarbage()
  end)

  it("a 400,000-step graph never backpropagated is freed", function()
    local x = torch.tensor({1.0}, {requires_grad = true})
    local y = x
    for _ = 1, STEPS do y = y * 1 end
    y = nil
    collectgarbage()
    collectgarbage()
    assert.is_true(x.requires_grad)
  end)

  it("a 400,000-long chain of .grad tensors is freed", function()
    local head = torch.zeros(1)
    local cur = head
    for _ = 1, STEPS do
      local nxt = torch.zeros(1)
      cur.grad = nxt
      cur = nxt
    end
    cur, head = nil, nil
    collectgarbage()
    collectgarbage()
  end)
end)
