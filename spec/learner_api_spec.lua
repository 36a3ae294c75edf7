-- Small API pieces learners reach for in the chapter's exercises:
-- torch.load keeps a state dict's order, load_state_dict's result prints
-- like PyTorch's.
local torch = require("torch")
local nn = torch.nn

local function tmpfile()
  local p = os.tmpname()
  return p
end

describe("torch.save / torch.load of a state dict", function()
  it("gives the keys back in the saved order, as an OrderedDict", function()
    local net = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    net.z_last = nn.Linear(1, 1) -- sorts after the numbers, registered after them
    local sd = net:state_dict()
    local path = tmpfile()
    torch.save(sd, path)
    local back = torch.load(path)
    os.remove(path)
    local want, got = {}, {}
    for k in pairs(sd) do want[#want + 1] = k end
    for k in pairs(back) do got[#got + 1] = k end
    assert.are.same({ "1.weight", "1.bias", "3.weight", "3.bias", "z_last.weight", "z_last.bias" }, want)
    assert.are.same(want, got)
    assert.truthy(tostring(back):find("^OrderedDict%(%[%('1.weight'"), tostring(back))
    for k, v in pairs(sd) do assert.is_true(torch.equal(v, back[k])) end
    assert.are.equal("<All keys matched successfully>", tostring(net:load_state_dict(back)))
  end)

  it("a plain table still comes back as a plain table (sorted keys)", function()
    local path = tmpfile()
    torch.save({ b = torch.ones(1), a = torch.zeros(1) }, path)
    local back = torch.load(path)
    os.remove(path)
    assert.is_nil(getmetatable(back))
    assert.are.equal(1, back.b:item())
  end)
end)

describe("load_state_dict's result", function()
  it("lists what did not match, as PyTorch's _IncompatibleKeys", function()
    local net = nn.Linear(2, 1)
    local r = net:load_state_dict({ weight = net.weight, extra = torch.ones(1) }, { strict = false })
    assert.are.same({ "bias" }, r.missing_keys)
    assert.are.same({ "extra" }, r.unexpected_keys)
    assert.are.equal("_IncompatibleKeys(missing_keys=['bias'], unexpected_keys=['extra'])", tostring(r))
  end)
end)

describe("num_ooms", function()
  local saved_n, saved_cap
  setup(function() collectgarbage(); saved_n, saved_cap = torch._sim_configure(1, 64 * 1024 * 1024) end)
  teardown(function() collectgarbage(); torch._sim_configure(saved_n, saved_cap) end)

  it("counts one failed allocation once (the engine's retry is not a second OOM)", function()
    local before = torch.cuda.memory_stats(0)["num_ooms"]
    assert.is_false(pcall(torch.empty, 1 << 26, { device = "cuda:0" })) -- 256 MiB > 64 MiB
    assert.are.equal(before + 1, torch.cuda.memory_stats(0)["num_ooms"])
    assert.is_false(pcall(torch.empty, 1 << 26, { device = "cuda:0" }))
    assert.are.equal(before + 2, torch.cuda.memory_stats(0)["num_ooms"])
    local ok = pcall(torch.empty, 1024, { device = "cuda:0" })
    assert.is_true(ok)
    assert.are.equal(before + 2, torch.cuda.memory_stats(0)["num_ooms"])
  end)
end)

-- ---------------------------------------------------------------- norms

-- float64 references in plain Lua, from PyTorch's documented definitions
local function ref_vector(vals, ord)
  local acc
  if ord == math.huge then acc = -math.huge elseif ord == -math.huge then acc = math.huge else acc = 0 end
  for _, v in ipairs(vals) do
    local a = math.abs(v)
    if ord == math.huge then acc = math.max(acc, a)
    elseif ord == -math.huge then acc = math.min(acc, a)
    elseif ord == 0 then acc = acc + (v ~= 0 and 1 or 0)
    else acc = acc + a ^ ord end
  end
  if ord == 0 or ord == math.huge or ord == -math.huge then return acc end
  return acc ^ (1 / ord)
end

local function ref_matrix(m, ord)
  local rows, cols = #m, #m[1]
  if ord == "fro" then
    local all = {}
    for i = 1, rows do for j = 1, cols do all[#all + 1] = m[i][j] end end
    return ref_vector(all, 2)
  end
  local best = (ord > 0) and -math.huge or math.huge
  local pick = ord > 0 and math.max or math.min
  if ord == 1 or ord == -1 then
    for j = 1, cols do
      local s = 0
      for i = 1, rows do s = s + math.abs(m[i][j]) end
      best = pick(best, s)
    end
  else
    for i = 1, rows do
      local s = 0
      for j = 1, cols do s = s + math.abs(m[i][j]) end
      best = pick(best, s)
    end
  end
  return best
end

local function close(want, got, tol)
  assert.is_true(math.abs(want - got) <= (tol or 1e-12) * math.max(1, math.abs(want)),
    string.format("want %.17g got %.17g", want, got))
end

describe("torch.linalg norms", function()
  local linalg = torch.linalg
  torch.manual_seed(7)
  local A = torch.randn(4, 5, { dtype = torch.float64 })
  A[{ 2, 3 }] = 0
  local m = A:tolist()
  local flat = {}
  for i = 1, 4 do for j = 1, 5 do flat[#flat + 1] = m[i][j] end end

  it("vector_norm over all elements matches float64 references for every ord", function()
    for _, ord in ipairs({ 2, 1, 3, 0.5, 0, math.huge, -math.huge, -1 }) do
      close(ref_vector(flat, ord), linalg.vector_norm(A, ord):item())
    end
    close(ref_vector(flat, 2), linalg.vector_norm(A):item())
    close(ref_vector(flat, 2), linalg.norm(A):item())
  end)

  it("vector_norm over a dim, with keepdim; dims are 1-based and may be lists", function()
    local r = linalg.vector_norm(A, 3, { dim = 2 })
    assert.are.same({ 4 }, { r.shape[1] })
    for i = 1, 4 do close(ref_vector(m[i], 3), r[i]:item()) end
    local k = linalg.vector_norm(A, 2, { dim = -1, keepdim = true })
    assert.are.equal(4, k.shape[1]); assert.are.equal(1, k.shape[2])
    local both = linalg.vector_norm(A, 1, { dim = { 1, 2 } })
    assert.are.equal(0, both:dim())
    close(ref_vector(flat, 1), both:item())
    -- positional form: (x, ord, dim, keepdim)
    close(ref_vector(m[2], math.huge), linalg.vector_norm(A, math.huge, 2)[2]:item())
    assert.are.equal(2, linalg.vector_norm(A, 2, nil, true):dim())
  end)

  it("matrix_norm: 'fro', 1, -1, inf, -inf as PyTorch defines them", function()
    for _, ord in ipairs({ "fro", 1, -1, math.huge, -math.huge }) do
      close(ref_matrix(m, ord), linalg.matrix_norm(A, ord):item())
      close(ref_matrix(m, ord), linalg.norm(A, ord):item())
    end
    close(ref_matrix(m, "fro"), linalg.norm(A, nil, { 1, 2 }):item())
  end)

  it("matrix_norm over a batch and over dims given in another order", function()
    local B = torch.randn(3, 4, 5, { dtype = torch.float64 })
    local r = linalg.matrix_norm(B, 1)
    assert.are.equal(3, r.shape[1])
    for b = 1, 3 do close(ref_matrix(B[b]:tolist(), 1), r[b]:item()) end
    -- dim = {3, 2}: rows are dim 3, so the 1-norm is the largest sum over dim 3
    local t = linalg.matrix_norm(B, 1, { 3, 2 })
    for b = 1, 3 do close(ref_matrix(B[b]:t():tolist(), 1), t[b]:item()) end
    local kd = linalg.matrix_norm(B, "fro", { -2, -1 }, true)
    assert.are.equal(3, kd:dim()); assert.are.equal(1, kd.shape[2]); assert.are.equal(1, kd.shape[3])
  end)

  it("float32 inputs give float32 results close to the float64 reference", function()
    local F = A:float()
    local r = linalg.vector_norm(F)
    assert.are.equal(torch.float32, r.dtype)
    close(ref_vector(flat, 2), r:item(), 1e-6)
  end)

  it("carries gradients: d||x||/dx = x/||x||", function()
    local x = torch.tensor({ 3.0, -4.0 }, { requires_grad = true })
    linalg.vector_norm(x):backward()
    close(0.6, x.grad[1]:item(), 1e-6)
    close(-0.8, x.grad[2]:item(), 1e-6)
  end)

  it("bad input is a clear error", function()
    assert.has_error(function() linalg.vector_norm(torch.tensor({ 1, 2 })) end,
      "linalg.vector_norm: Expected a floating point tensor as input. Got torch.int64")
    local ok, e = pcall(linalg.matrix_norm, A, "nuc")
    assert.is_false(ok)
    assert.truthy(tostring(e):find("needs singular values", 1, true), e)
    ok, e = pcall(linalg.matrix_norm, torch.ones(3), "fro")
    assert.truthy(tostring(e):find("at least 2 dimensions", 1, true), e)
    ok, e = pcall(linalg.norm, torch.ones(2, 2, 2), 1)
    assert.truthy(tostring(e):find("must be 1D or 2D", 1, true), e)
    ok, e = pcall(linalg.vector_norm, A, 2, { dim = 3 })
    assert.truthy(tostring(e):find("Dimension out of range", 1, true), e)
    ok, e = pcall(linalg.vector_norm, A, { ordd = 2 })
    assert.truthy(tostring(e):find("did you mean 'ord'", 1, true), e)
  end)
end)

describe("x:get_device() and x:new_*", function()
  local saved_n, saved_cap
  setup(function() collectgarbage(); saved_n, saved_cap = torch._sim_configure(2) end)
  teardown(function() collectgarbage(); torch._sim_configure(saved_n, saved_cap) end)

  it("get_device is -1 on the CPU and the ordinal on CUDA", function()
    assert.are.equal(-1, torch.ones(1):get_device())
    assert.are.equal(1, torch.ones(1, { device = "cuda:1" }):get_device())
    assert.are.equal(0, torch.ones(1, { device = "cuda:0" }):get_device())
  end)

  it("new_ones/new_zeros/new_empty/new_full/new_tensor take x's dtype and device unless told", function()
    local x = torch.ones(2, { device = "cuda:1", dtype = torch.float64 })
    local o = x:new_ones(2, 3)
    assert.are.equal(torch.float64, o.dtype)
    assert.are.equal("cuda:1", tostring(o.device))
    assert.are.equal(6, o:sum():item())
    local z = x:new_zeros({ 4 }, { dtype = torch.int32, device = "cpu" })
    assert.are.equal(torch.int32, z.dtype)
    assert.are.equal("cpu", tostring(z.device))
    assert.are.equal(0, z:sum():item())
    assert.are.equal(3, x:new_empty(3).shape[1])
    local f = x:new_full({ 2, 2 }, 7)
    assert.are.equal(28, f:sum():item())
    assert.are.equal(torch.float64, f.dtype)
    local t = x:new_tensor({ 1, 2, 3 })
    assert.are.equal(torch.float64, t.dtype)
    assert.are.equal("cuda:1", tostring(t.device))
    local src = torch.tensor({ 5.0 })
    local c = x:new_tensor(src)
    c[1] = 9
    assert.are.equal(5, src[1]:item()) -- a copy
    assert.is_true(x:new_ones(1, { requires_grad = true }).requires_grad)
    local ok, e = pcall(x.new_ones, x, 2, { devcie = "cpu" })
    assert.truthy(tostring(e):find("new_ones: unknown option 'devcie' (did you mean 'device'?)", 1, true), e)
  end)
end)
