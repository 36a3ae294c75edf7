-- seq_ops_spec.lua: issue 31's first slice against PyTorch's numbers
-- (spec/support/seq_goldens.lua, written by gen_seq_goldens.py with
-- Debian's python3-torch): where, masked_fill, repeat, tile,
-- repeat_interleave, boolean-mask indexing and assignment, erf, gelu,
-- one_hot, layer_norm, embedding and clip_grad_norm_, forward and
-- gradients, in float64 and float32, on the CPU and on a simulated GPU;
-- then the modules, the error messages and the smaller items (normal,
-- the empty options table, init option tables, scatter/gather, d2l).
local torch = require("torch")
local nn = torch.nn
local F = nn.functional
local G = require("seq_goldens")

local function numel(shape)
  local n = 1
  for _, s in ipairs(shape) do n = n * s end
  return n
end

local function fx(shape, dtype, dev, step)
  local v = {}
  for i = 0, numel(shape) - 1 do v[i + 1] = (((i * 37 + (step or 0) * 11) % 101) - 50) / 16 end
  return torch.tensor(v, { dtype = dtype, device = dev }):view(table.unpack(shape))
end

local function fg(shape, dtype, dev)
  local v = {}
  for i = 0, numel(shape) - 1 do v[i + 1] = (((i * 13) % 29) - 14) / 8 end
  return torch.tensor(v, { dtype = dtype, device = dev }):view(table.unpack(shape))
end

local function fmask(shape, dev)
  local v = {}
  for i = 0, numel(shape) - 1 do v[i + 1] = i % 3 == 1 end
  return torch.tensor(v, { device = dev }):view(table.unpack(shape))
end

local function shape_of(t)
  local s = {}
  for i = 1, t:dim() do s[i] = t:size(i) end
  return s
end

local function assert_close(got, want, tol, what, shape)
  if shape then assert.are.same(shape, shape_of(got), what .. ": shape") end
  local vals = got:reshape(-1):double():cpu():tolist()
  assert.are.equal(#want, #vals, what .. ": element count")
  for i = 1, #want do
    local a, b = vals[i], want[i]
    local ok
    if b ~= b then ok = a ~= a
    elseif a == b then ok = true
    else ok = math.abs(a - b) <= tol * (1 + math.abs(b)) end
    if not ok then
      error(("%s: element %d is %s, PyTorch gives %s (tolerance %g)"):format(what, i, tostring(a), tostring(b), tol), 2)
    end
  end
end

-- One function per golden op: returns the output and the tensors whose
-- gradients the case lists (name -> tensor).
local RUN = {
  where = function(c, dt, dev)
    local x, y = fx(c.xshape, dt, dev):requires_grad_(), fx(c.yshape, dt, dev, 1):requires_grad_()
    return torch.where(fmask(c.xshape, dev), x, y), { gx = x, gy = y }
  end,
  masked_softmax = function(c, dt, dev)
    local x = fx(c.xshape, dt, dev):requires_grad_()
    return F.softmax(x:masked_fill(fmask(c.xshape, dev), -1e6), 2), { gx = x }
  end,
  masked_fill_inf = function(c, dt, dev)
    return fx(c.xshape, dt, dev):masked_fill(fmask(c.xshape, dev), -math.huge), {}
  end,
  ["repeat"] = function(c, dt, dev)
    local x = fx(c.xshape, dt, dev):requires_grad_()
    return x["repeat"](x, c.reps), { gx = x }
  end,
  tile = function(c, dt, dev)
    local x = fx(c.xshape, dt, dev):requires_grad_()
    return x:tile(table.unpack(c.reps)), { gx = x }
  end,
  ri_int = function(c, dt, dev)
    local x = fx(c.xshape, dt, dev):requires_grad_()
    return x:repeat_interleave(c.reps, c.dim), { gx = x }
  end,
  ri_tensor = function(c, dt, dev)
    local x = fx(c.xshape, dt, dev):requires_grad_()
    return x:repeat_interleave(torch.tensor(c.counts, { device = dev }), { dim = c.dim }), { gx = x }
  end,
  ri_flat = function(c, dt, dev)
    local x = fx(c.xshape, dt, dev):requires_grad_()
    return torch.repeat_interleave(x, c.reps), { gx = x }
  end,
  mask_index = function(c, dt, dev)
    local x = fx(c.xshape, dt, dev):requires_grad_()
    return x[fmask(c.mshape, dev)], { gx = x }
  end,
  mask_assign_num = function(c, dt, dev)
    local z = fx(c.xshape, dt, dev)
    z[fmask(c.mshape, dev)] = 0.5
    return z, {}
  end,
  mask_assign_row = function(c, dt, dev)
    local z = fx(c.xshape, dt, dev)
    z[fmask(c.mshape, dev)] = torch.tensor({ 9.0, 8.0, 7.0, 6.0 }, { dtype = dt, device = dev })
    return z, {}
  end,
  mask_assign_values = function(c, dt, dev)
    local z = fx(c.xshape, dt, dev)
    z[fmask(c.mshape, dev)] = torch.arange(4.0, { dtype = dt, device = dev })
    return z, {}
  end,
  erf = function(c, dt, dev)
    local x = fx(c.xshape, dt, dev):requires_grad_()
    return x:erf(), { gx = x }
  end,
  gelu = function(c, dt, dev)
    local x = fx(c.xshape, dt, dev):requires_grad_()
    return F.gelu(x, { approximate = c.approximate }), { gx = x }
  end,
  one_hot = function(c, dt, dev)
    return F.one_hot(torch.tensor(c.ids, { device = dev }), c.num_classes), {}
  end,
  layer_norm = function(c, dt, dev)
    local x = fx(c.xshape, dt, dev):requires_grad_()
    if not c.affine then return F.layer_norm(x, c.ns, { eps = c.eps }), { gx = x } end
    local w = (fx(c.ns, dt, dev, 2) / 4 + 1):requires_grad_()
    local b = (fx(c.ns, dt, dev, 3) / 8):requires_grad_()
    return F.layer_norm(x, c.ns, w, b, 1e-5), { gx = x, gw = w, gb = b }
  end,
  embedding = function(c, dt, dev)
    local w = fx(c.wshape, dt, dev):requires_grad_()
    return F.embedding(torch.tensor(c.ids, { device = dev }), w, { padding_idx = c.padding_idx }), { gw = w }
  end,
}

local CONFIGS = {
  { dtype = torch.float64, tol = 1e-12, dev = "cpu" },
  { dtype = torch.float32, tol = 2e-6, dev = "cpu" },
  { dtype = torch.float64, tol = 1e-12, dev = "cuda:0" },
  { dtype = torch.float32, tol = 2e-6, dev = "cuda:0" },
}

local saved_n, saved_cap

describe("sequence and attention ops (issue 31)", function()
  setup(function() saved_n, saved_cap = torch._sim_configure(2) end)
  teardown(function() collectgarbage(); collectgarbage(); torch._sim_configure(saved_n, saved_cap) end)

  for _, cfg in ipairs(CONFIGS) do
    local tag = (" (%s, %s)"):format(tostring(cfg.dtype):gsub("torch%.", ""), cfg.dev)
    describe("as PyTorch" .. tag, function()
      for _, c in ipairs(G) do
        it(c.name, function()
          if c.op == "clip" then
            local p1 = torch.zeros(2, 3, { dtype = cfg.dtype, device = cfg.dev, requires_grad = true })
            local p2 = torch.zeros(4, { dtype = cfg.dtype, device = cfg.dev, requires_grad = true })
            p1.grad = fg({ 2, 3 }, cfg.dtype, cfg.dev)
            p2.grad = fg({ 4 }, cfg.dtype, cfg.dev) * 2
            local total = nn.utils.clip_grad_norm_({ p1, p2 }, c.max_norm, c.norm_type)
            assert.are.equal(torch.device(cfg.dev), total.device)
            assert_close(total, { c.total }, cfg.tol, "total norm")
            assert_close(p1.grad, c.g1, cfg.tol, "first gradient")
            assert_close(p2.grad, c.g2, cfg.tol, "second gradient")
            return
          end
          local y, ins = RUN[c.op](c, cfg.dtype, cfg.dev)
          assert.are.equal(torch.device(cfg.dev), y.device)
          assert_close(y, c.out, cfg.tol, "output", c.out_shape)
          if next(ins) then
            y:backward(fg(shape_of(y), cfg.dtype, cfg.dev))
            for k, t in pairs(ins) do assert_close(t.grad, c[k], cfg.tol, k) end
          end
        end)
      end
    end)
  end

  describe("modules", function()
    it("nn.Embedding: 1-based ids, N(0, 1) weights, a zero padding row without gradient, PyTorch's names", function()
      torch.manual_seed(1)
      local e = nn.Embedding(10, 4, { padding_idx = -1 })
      assert.are.equal(10, e.padding_idx)
      assert.are.equal("Embedding(10, 4, padding_idx=10)", tostring(e))
      assert.are.same({ 0, 0, 0, 0 }, e.weight[10]:tolist())
      local sd = e:state_dict()
      assert.are.same({ 10, 4 }, shape_of(sd.weight))
      local y = e(torch.tensor({ { 1, 10 }, { 10, 3 } }))
      assert.are.same({ 2, 2, 4 }, shape_of(y))
      y:sum():backward()
      assert.are.same({ 0, 0, 0, 0 }, e.weight.grad[10]:tolist())
      assert.are.same({ 1, 1, 1, 1 }, e.weight.grad[3]:tolist())
      local sd_std = e.weight:detach():narrow(1, 1, 9):std():item()
      assert.is_true(sd_std > 0.5 and sd_std < 1.5)
    end)

    it("nn.LayerNorm: ones and zeros, PyTorch's repr and names, the functional numbers", function()
      local ln = nn.LayerNorm({ 3, 4 }, { eps = 1e-5 })
      assert.are.equal("LayerNorm((3, 4), eps=1e-05, elementwise_affine=True)", tostring(ln))
      local names = {}
      for _, kv in ipairs(ln:named_parameters()) do names[#names + 1] = kv[1] end
      assert.are.same({ "bias", "weight" }, (function() table.sort(names); return names end)())
      local x = fx({ 2, 3, 4 }, torch.float64, "cpu")
      assert.is_true(torch.allclose(ln:double()(x), F.layer_norm(x, { 3, 4 })))
      assert.is_nil(nn.LayerNorm(4, { elementwise_affine = false }).weight)
    end)

    it("nn.GELU, nn.Softmax", function()
      local x = fx({ 2, 5 }, torch.float64, "cpu")
      assert.is_true(torch.allclose(nn.GELU()(x), F.gelu(x)))
      assert.is_true(torch.allclose(nn.GELU("tanh")(x), F.gelu(x, "tanh")))
      assert.are.equal("GELU(approximate='tanh')", tostring(nn.GELU({ approximate = "tanh" })))
      assert.is_true(torch.allclose(nn.Softmax(2)(x), x:softmax(2)))
    end)
  end)

  describe("errors as PyTorch's", function()
    local x = torch.arange(6.0):reshape(2, 3)
    local cases = {
      { function() return torch.where(x, x, x) end, "where expected condition to be a boolean tensor, but got a tensor with dtype Float" },
      { function() return x:masked_fill(x:gt(2), torch.ones(2)) end, "masked_fill only supports a 0-dimensional value tensor, but got tensor with 1 dimension(s)." },
      { function() return x:masked_fill(x, 1) end, "masked_fill only supports boolean masks, but got mask with dtype float32" },
      { function() return x["repeat"](x, 2) end, "Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor" },
      { function() return x["repeat"](x, -1, 2) end, "Trying to create tensor with negative dimension -2: [-2, 6]" },
      { function() return x:repeat_interleave(torch.tensor({ 1, 2 }), 2) end, "repeats must have the same size as input along dim" },
      { function() return x:repeat_interleave(-1) end, "repeats can not be negative" },
      { function() return x[torch.tensor({ true, false, true })] end, "The shape of the mask [3] at index 0 does not match the shape of the indexed tensor [2, 3] at index 0" },
      { function() local z = x:clone(); z[x:gt(2)] = torch.ones(4) end, "shape mismatch: value tensor of shape [4] cannot be broadcast to indexing result of shape [3]" },
      { function() return F.one_hot(torch.tensor({ 1.0 })) end, "one_hot is only applicable to index tensor." },
      { function() return F.one_hot(torch.tensor({ 0, 1 })) end, "Class values must be at least 1 (gshell's labels are 1-based), got 0." },
      { function() return F.one_hot(torch.tensor({}, { dtype = torch.int64 })) end, "Can not infer total number of classes from empty tensor." },
      { function() return F.gelu(x, "foo") end, "approximate argument must be either none or tanh." },
      { function() return F.layer_norm(x, { 2 }) end, "Given normalized_shape=[2], expected input with shape [*, 2], but got input of size[2, 3]" },
      { function() return nn.Embedding(3, 2)(torch.tensor({ 1.0 })) end, "Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int; but got torch.FloatTensor instead (while checking arguments for embedding)" },
      { function() return nn.Embedding(3, 2, { padding_idx = 5 }) end, "padding_idx must be within num_embeddings" },
      { function() return nn.Embedding(3, 2)(torch.tensor({ 4 })) end, "index 4 is out of bounds for dimension 1 with size 3" },
      { function() return torch.normal(0, -1, { 2 }) end, "normal expects std >= 0.0, but found std -1" },
      { function() return torch.normal(torch.zeros(2), torch.tensor({ 1.0, -1.0 })) end, "normal expects all elements of std >= 0.0" },
      { function() return torch.normal(torch.zeros(2), {}) end, "expected numbers or tensors for mean and std, got a tensor (torch.FloatTensor of size 2) and a table" },
    }
    for i, c in ipairs(cases) do
      it("case " .. i .. ": " .. c[2]:sub(1, 60), function()
        local ok, err = pcall(c[1])
        assert.is_false(ok)
        assert.is_truthy(tostring(err):find(c[2], 1, true), "got: " .. tostring(err))
      end)
    end
  end)

  describe("the smaller items", function()
    it("torch.normal: numbers with a size and options, tensor mean and std", function()
      torch.manual_seed(3)
      local t = torch.normal(2.0, 0.5, { 4000 }, { dtype = torch.float64, device = "cuda:0" })
      assert.are.equal(torch.float64, t.dtype)
      assert.are.equal(torch.device("cuda:0"), t.device)
      assert.is_true(math.abs(t:mean():item() - 2.0) < 0.05 and math.abs(t:std():item() - 0.5) < 0.05)
      local m = torch.normal(torch.tensor({ 0.0, 100.0 }), 0.001)
      assert.is_true(math.abs(m[2]:item() - 100) < 0.1)
      assert.is_true(torch.normal(0, 1, { 2, 3 }, { requires_grad = true }).requires_grad)
    end)

    it("a trailing empty options table after sizes; {} alone stays a 0-d size", function()
      assert.are.same({ 2, 3 }, shape_of(torch.ones(2, 3, {})))
      assert.are.same({ 2, 3 }, shape_of(torch.zeros({ 2, 3 }, {})))
      assert.are.same({ 2 }, shape_of(torch.rand(2, {})))
      assert.are.equal(0, torch.zeros({}):dim())
      assert.are.equal(0, torch.randint(0, 10, {}):dim())
      assert.are.equal(0, torch.randint(10, {}):dim())
      assert.are.same({ 3 }, shape_of(torch.randint(0, 10, { 3 }, {})))
      assert.are.same({ 2 }, shape_of(torch.full({ 2 }, 1.5, {})))
    end)

    it("x:tile and x['repeat'] copy; torch.tile", function()
      local x = torch.tensor({ 1, 2 })
      local y = x:tile(1)
      y[1] = 9
      assert.are.same({ 1, 2 }, x:tolist())
      assert.are.same({ { 1, 2, 1, 2 }, { 1, 2, 1, 2 } }, torch.tile(x, { 2, 2 }):tolist())
    end)

    -- the API fuzzer's hang: a table whose __len says 2^63 was walked size
    -- by size; more sizes than a tensor has dims is refused at once
    it("x:tile and x['repeat'] refuse more than 16 sizes without walking them", function()
      local x = torch.tensor({ 1, 2 })
      local huge = setmetatable({}, { __len = function() return math.maxinteger end, __index = function() return 1 end })
      for _, f in ipairs({ x.tile, x["repeat"] }) do
        local ok, err = pcall(f, x, huge)
        assert.is_false(ok)
        assert.truthy(tostring(err):find("at most 16 sizes (a tensor has at most 16 dimensions)", 1, true), err)
      end
      local ok = pcall(x.tile, x, { 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1 })
      assert.is_false(ok)
      assert.are.same({ 1, 2 }, x:tile({ 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1 }):reshape(-1):tolist())
    end)

    it("masked_fill_ in place; torch.where with numbers keeps NaN and infinities", function()
      local x = torch.tensor({ 1.0, 2.0, 3.0 })
      x:masked_fill_(torch.tensor({ true, false, true }), 0)
      assert.are.same({ 0, 2, 0 }, x:tolist())
      local w = torch.where(torch.tensor({ true, false }), torch.tensor({ 0 / 0, 1.0 }), math.huge):tolist()
      assert.is_true(w[1] ~= w[1] and w[2] == math.huge)
    end)

    it("nn.init: option tables and positional numbers", function()
      local w = torch.empty(200, 50)
      nn.init.normal_(w, { std = 0.01 })
      assert.is_true(w:std():item() < 0.02)
      nn.init.normal_(w, 5, { std = 0.01 })
      assert.is_true(math.abs(w:mean():item() - 5) < 0.01)
      nn.init.uniform_(w, { a = -0.1, b = 0.1 })
      assert.is_true(w:abs():max():item() <= 0.1)
      nn.init.constant_(w, { val = 2 })
      assert.are.equal(2, w:max():item())
      nn.init.xavier_uniform_(w, { gain = 2 })
      local ok, err = pcall(nn.init.normal_, w, { sd = 1 })
      assert.is_false(ok)
      assert.is_truthy(tostring(err):find("sd", 1, true))
    end)

    it("nn.parallel.scatter and gather: PyTorch's public contracts", function()
      local x = torch.arange(10.0):reshape(5, 2)
      local parts = nn.parallel.scatter(x, { 0, 1 })
      assert.are.equal(2, #parts)
      assert.are.same({ 3, 2 }, shape_of(parts[1]))
      assert.are.equal(torch.device("cuda:1"), parts[2].device)
      local per = nn.parallel.scatter({ x, 7 }, { 0, "cuda:1" })
      assert.are.equal(7, per[2][2])
      assert.are.same({ 2, 2 }, shape_of(per[2][1]))
      assert.are.same({ 7, 7 }, nn.parallel.scatter(7, { 0, 1 }))
      local back = nn.parallel.gather(parts, -1)
      assert.are.equal(torch.device("cpu"), back.device)
      assert.are.same(x:tolist(), back:tolist())
      assert.are.equal(torch.device("cuda:1"), nn.parallel.gather(parts, 1).device)
    end)

    it("d2l.Animator with positional labels; d2l.corr2d as the book's", function()
      local d2l = require("d2l")
      local a = d2l.Animator("epoch", "test acc", { "train", "test" }, { 1, 10 }, nil, nil, nil, nil, nil, nil, nil,
        { width = 40 })
      assert.are.equal("epoch", a.chart.xlabel)
      assert.are.equal("test acc", a.chart.ylabel)
      local X = torch.tensor({ { 0.0, 1.0, 2.0 }, { 3.0, 4.0, 5.0 }, { 6.0, 7.0, 8.0 } })
      local K = torch.tensor({ { 0.0, 1.0 }, { 2.0, 3.0 } }, { requires_grad = true })
      local Y = d2l.corr2d(X, K)
      assert.are.same({ { 19, 25 }, { 37, 43 } }, Y:tolist())
      Y:sum():backward()
      assert.are.same({ { 8, 12 }, { 20, 24 } }, K.grad:tolist())
    end)
  end)
end)
