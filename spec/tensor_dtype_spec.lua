-- The ten dtypes: storage, conversion, float16/bfloat16 rounding, PyTorch's
-- type promotion (tensor-tensor, tensor-scalar, 0-d tensors), integer
-- wrap-around and float -> integer conversion. The reference tables in
-- spec/support/dtype_tables.lua were produced by real PyTorch.
local torch = require("torch")
local H = require("helpers")
local T = require("dtype_tables")

local check = H.check

-- Known bugs in files this suite may not fix (name -> what is wrong);
-- each is pending until fixed. See the report of the spec author.
local KNOWN = {}
local it = H.it_unless(KNOWN, it, pending)

local function dt(name) return torch[name] end

-- values each dtype stores exactly, in the Lua type tolist() gives back
local EXACT = {
  float32 = {0.0, 1.0, -2.5, 0.15625, H.f32(3.0e38), H.f32(-1.0e-38), 0x1p-149, math.huge, -math.huge},
  float64 = {0.0, 1.0, -2.5, 0.1, 1 / 3, 1.7976931348623157e308, 5e-324, math.huge},
  float16 = {0.0, 1.0, -2.5, 0.099975585937500, 65504.0, -65504.0, 6.103515625e-05, 5.960464477539063e-08, math.huge},
  bfloat16 = {0.0, 1.0, -2.5, 0.10009765625, 3.3895313892515355e38, 9.183549615799121e-41, -math.huge},
  int64 = {0, 1, -1, math.maxinteger, math.mininteger, 1 << 53, (1 << 53) + 1},
  int32 = {0, 1, -1, 2147483647, -2147483648, 65536},
  int16 = {0, 1, -1, 32767, -32768, 256},
  int8 = {0, 1, -1, 127, -128},
  uint8 = {0, 1, 127, 128, 255},
  bool = {true, false, true},
}
local SIZE = {float32 = 4, float64 = 8, float16 = 2, bfloat16 = 2, int64 = 8, int32 = 4, int16 = 2, int8 = 1,
              uint8 = 1, bool = 1}

describe("dtype objects", function()
  it("all ten exist, with their names and aliases", function()
    for _, name in ipairs(T.dtypes) do
      assert.is_not_nil(torch[name], name)
      assert.are.equal("torch." .. name, tostring(torch[name]))
      assert.are.equal(name, torch[name].name)
    end
    assert.are.equal(torch.float32, torch.float)
    assert.are.equal(torch.float64, torch.double)
    assert.are.equal(torch.float16, torch.half)
    assert.are.equal(torch.int64, torch.long)
    assert.are.equal(torch.int32, torch.int)
    assert.are.equal(torch.int16, torch.short)
  end)
  it("are single objects: x.dtype == torch.<name> and rawequal", function()
    local x = torch.ones(2, {dtype = torch.int16})
    assert.is_true(x.dtype == torch.int16)
    assert.is_true(rawequal(x.dtype, torch.int16))
    assert.is_false(x.dtype == torch.int32)
  end)
  it("know whether they are floating point and their item size", function()
    for _, name in ipairs(T.dtypes) do
      local fp = name:find("float") ~= nil
      assert.are.equal(fp, torch[name].is_floating_point, name)
      assert.are.equal(SIZE[name], torch[name].itemsize, name)
    end
  end)
  it("the default dtype is float32", function()
    assert.are.equal(torch.float32, torch.ones(1).dtype)
    assert.are.equal(torch.float32, torch.tensor({0.5}).dtype)
  end)
end)

describe("storage of every dtype", function()
  for _, name in ipairs(T.dtypes) do
    it(name .. " stores and reads back its exact values", function()
      local t = torch.tensor(EXACT[name], {dtype = dt(name)})
      assert.are.equal(name, H.dtype(t))
      H.assert_list_equal(t:tolist(), EXACT[name])
    end)
    it(name .. " has its element size and is_floating_point", function()
      local t = torch.zeros(3, {dtype = dt(name)})
      assert.are.equal(SIZE[name], t:element_size())
      assert.are.equal(name:find("float") ~= nil, t:is_floating_point())
    end)
    it(name .. " item() gives the right Lua type", function()
      local v = torch.ones({}, {dtype = dt(name)}):item()
      if name == "bool" then assert.are.equal(true, v)
      elseif name:find("float") then assert.are.equal("float", math.type(v))
      else assert.are.equal("integer", math.type(v)) end
    end)
    it(name .. " survives a round trip through float64 and back", function()
      local vals = EXACT[name]
      if name == "int64" then vals = {0, 1, -1, 1 << 53, -(1 << 53), math.mininteger} end -- exact as doubles
      local t = torch.tensor(vals, {dtype = dt(name)})
      local back = t:double():to(dt(name))
      H.assert_list_equal(back:tolist(), vals)
    end)
  end
  it("int64 round-trips through int64 exactly beyond 2^53", function()
    local v = {(1 << 62) + 1, -(1 << 62) - 3}
    H.assert_list_equal(torch.tensor(v):clone():tolist(), v)
  end)
  it("NaN is kept by every float dtype", function()
    for _, name in ipairs({"float32", "float64", "float16", "bfloat16"}) do
      local v = torch.tensor({0 / 0}, {dtype = dt(name)}):item()
      assert.is_true(H.isnan(v), name)
    end
  end)
  it("negative zero keeps its sign in float dtypes", function()
    for _, name in ipairs({"float32", "float64", "float16", "bfloat16"}) do
      local v = torch.tensor({-0.0}, {dtype = dt(name)}):item()
      assert.are.equal(-math.huge, 1 / v, name)
    end
  end)
end)

describe("float16 and bfloat16 rounding matches PyTorch", function()
  it("float16: round to nearest even, overflow to inf, subnormals", function()
    for _, c in ipairs(T.f16) do
      local got = torch.tensor(c[1], {dtype = torch.float16}):item()
      assert.are.equal(c[2], got, string.format("float16(%a)", c[1]))
    end
  end)
  it("bfloat16: round to nearest even, overflow to inf, subnormals", function()
    for _, c in ipairs(T.bf16) do
      local got = torch.tensor(c[1], {dtype = torch.bfloat16}):item()
      assert.are.equal(c[2], got, string.format("bfloat16(%a)", c[1]))
    end
  end)
  it("float32 -> float16 and bfloat16 conversions round the same way", function()
    -- inputs that are exact in float32 are rounded once, as from a double
    for _, pair in ipairs({{T.f16, torch.float16, "half"}, {T.bf16, torch.bfloat16, "bfloat16"}}) do
      local ins, outs = {}, {}
      for _, c in ipairs(pair[1]) do
        if H.f32(c[1]) == c[1] then ins[#ins + 1] = c[1]; outs[#outs + 1] = c[2] end
      end
      local x = torch.tensor(ins, {dtype = torch.float64})
      H.assert_list_equal(x:float():to(pair[2]):tolist(), outs)
      H.assert_list_equal(x:float()[pair[3]](x:float()):tolist(), outs)
      H.assert_list_equal(x:to(pair[2]):tolist(), outs)
    end
  end)
  it("float16 NaN stays NaN and infinities stay infinite through conversions", function()
    local x = torch.tensor({0 / 0, math.huge, -math.huge}, {dtype = torch.float16})
    local v = x:float():tolist()
    assert.is_true(H.isnan(v[1]))
    assert.are.equal(math.huge, v[2])
    assert.are.equal(-math.huge, v[3])
    local b = x:to(torch.bfloat16):tolist()
    assert.is_true(H.isnan(b[1]))
    assert.are.equal(math.huge, b[2])
  end)
  for _, name in ipairs({"float16", "bfloat16"}) do
    it(name .. " arithmetic is computed in float32 and rounded once, as PyTorch does", function()
      local R = T.arith[name]
      local a = torch.tensor(R.a, {dtype = dt(name)})
      local b = torch.tensor(R.b, {dtype = dt(name)})
      H.assert_list_equal(a:tolist(), R.a)
      check(a + b, name, {4}, R.add)
      check(a * b, name, {4}, R.mul)
      check(a / b, name, {4}, R.div)
      check(a * 3, name, {4}, R.mul3)
      check(a / 3, name, {4}, R.div3)
      check(a - 0.05, name, {4}, R.sub005)
      check(a:sum(), name, {}, R.sum)
    end)
  end
end)

describe("conversions between all dtypes match PyTorch", function()
  for _, src in ipairs(T.dtypes) do
    for _, dst in ipairs(T.dtypes) do
      it(src .. " -> " .. dst, function()
        local c = T.conv[src][dst]
        local x = torch.tensor(c[1], {dtype = dt(src)})
        local y = x:to(dt(dst))
        assert.are.equal(dst, H.dtype(y))
        H.assert_list_equal(y:tolist(), c[2])
        -- the source is untouched
        H.assert_list_equal(x:tolist(), c[1])
      end)
    end
  end
end)

describe("integer -> float conversion", function()
  -- 2^60 + 2^36 + 1 lies just above halfway between two float32 values;
  -- rounded once (C's int64 -> float, PyTorch's static_cast) it goes up to
  -- 2^60 + 2^37. Through double first it would lose the +1, land exactly
  -- halfway and round to even: 2^60.
  local v, up = (1 << 60) + (1 << 36) + 1, (1 << 60) + (1 << 37)
  it("rounds once, the same in a copy, fill_, full and a tensor element assignment", function()
    assert.are.equal(up, torch.tensor({v}):to(torch.float32):item())
    assert.are.equal(up, torch.tensor({v}):t():to(torch.float32):item())
    assert.are.equal(up, torch.zeros(1):fill_(v):item())
    assert.are.equal(up, torch.full({1}, v, {dtype = torch.float32}):item())
    local x = torch.zeros(2)
    x[2] = v
    assert.are.equal(up, x[2]:item())
  end)
end)

describe("float -> integer conversion", function()
  it("truncates toward zero", function()
    local x = torch.tensor({2.7, -2.7, 0.5, -0.5, 3.0, -3.0})
    H.assert_list_equal(x:long():tolist(), {2, -2, 0, 0, 3, -3})
    H.assert_list_equal(x:int():tolist(), {2, -2, 0, 0, 3, -3})
    H.assert_list_equal(x:short():tolist(), {2, -2, 0, 0, 3, -3})
    H.assert_list_equal(x:char():tolist(), {2, -2, 0, 0, 3, -3})
  end)
  it("to int64: NaN and infinities become the smallest int64 (as x86 PyTorch)", function()
    H.assert_list_equal(torch.tensor({0 / 0, math.huge, -math.huge, 1e30}, {dtype = torch.float64}):long():tolist(),
                        {math.mininteger, math.mininteger, math.mininteger, math.mininteger})
  end)
  it("to bool: any non-zero, NaN included, is true; -0.0 is false", function()
    H.assert_list_equal(torch.tensor({0.0, -0.0, 0.1, -3.0, 0 / 0, math.huge}):bool():tolist(),
                        {false, false, true, true, true, true})
  end)
  it("torch.tensor(float values, {dtype = int}) truncates too", function()
    H.assert_list_equal(torch.tensor({1.9, -1.9}, {dtype = torch.int64}):tolist(), {1, -1})
    H.assert_list_equal(torch.tensor({200.7}, {dtype = torch.uint8}):tolist(), {200})
  end)
end)

describe("conversion methods", function()
  local x = torch.tensor({1.5, -2.5})
  local cases = {
    {"double", "float64"}, {"float", "float32"}, {"half", "float16"}, {"bfloat16", "bfloat16"},
    {"long", "int64"}, {"int", "int32"}, {"short", "int16"}, {"char", "int8"}, {"byte", "uint8"},
    {"bool", "bool"},
  }
  for _, c in ipairs(cases) do
    it(":" .. c[1] .. "() makes " .. c[2], function()
      assert.are.equal(c[2], H.dtype(x[c[1]](x)))
    end)
  end
  it("a conversion to the same dtype returns the very same object", function()
    assert.is_true(rawequal(x:float(), x))
    assert.is_true(rawequal(x:to(torch.float32), x))
    local l = torch.tensor({1})
    assert.is_true(rawequal(l:long(), l))
  end)
  it("a conversion makes a copy that does not share storage", function()
    local y = torch.tensor({1.0, 2.0})
    local z = y:double()
    z:fill_(7)
    H.assert_list_equal(y:tolist(), {1.0, 2.0})
  end)
  it(":to accepts dtype objects, names and an options table", function()
    assert.are.equal("float64", H.dtype(x:to(torch.float64)))
    assert.are.equal("int16", H.dtype(x:to("int16")))
    assert.are.equal("int8", H.dtype(x:to({dtype = torch.int8})))
    assert.are.equal("float64", H.dtype(x:to("cpu", torch.float64)))
    assert.are.equal("int32", H.dtype(x:to(torch.ones(1, {dtype = torch.int32}))))
  end)
  it(":type() names the tensor type, :type(dt) converts", function()
    assert.are.equal("torch.FloatTensor", x:type())
    assert.are.equal("torch.LongTensor", torch.tensor({1}):type())
    assert.are.equal("torch.BoolTensor", torch.tensor({true}):type())
    assert.are.equal("torch.DoubleTensor", x:double():type())
    assert.are.equal("torch.HalfTensor", x:half():type())
    assert.are.equal("torch.ByteTensor", x:byte():type())
    assert.are.equal("float64", H.dtype(x:type(torch.float64)))
  end)
  -- (issue 14) PyTorch's tensor-type strings convert as its dtypes do
  it(":type('torch.DoubleTensor') and the other tensor-type names convert, keeping the values", function()
    local v = torch.tensor({-2.5, 0, 1.5, 3})
    local want = {
      ["torch.FloatTensor"] = { "float32", { -2.5, 0.0, 1.5, 3.0 } },
      ["torch.DoubleTensor"] = { "float64", { -2.5, 0.0, 1.5, 3.0 } },
      ["torch.HalfTensor"] = { "float16", { -2.5, 0.0, 1.5, 3.0 } },
      ["torch.LongTensor"] = { "int64", { -2, 0, 1, 3 } },
      ["torch.IntTensor"] = { "int32", { -2, 0, 1, 3 } },
      ["torch.ByteTensor"] = { "uint8", { 254, 0, 1, 3 } },
      ["torch.BoolTensor"] = { "bool", { true, false, true, true } },
    }
    for name, w in pairs(want) do
      local r = v:type(name)
      assert.are.equal(w[1], H.dtype(r), name)
      assert.are.equal(name, r:type())
      assert.are.equal("cpu", r.device.type)
      H.assert_list_equal(r:tolist(), w[2])
    end
    assert.is_true(rawequal(v, v:type("torch.FloatTensor"))) -- already that type: the tensor itself, as PyTorch
    assert.are.equal("float64", H.dtype(v:type("torch.float64"))) -- dtype names still work
    H.errors(function() return v:type("torch.FooTensor") end,
      "type(): unknown tensor type 'torch.FooTensor': expected a dtype (torch.float64) or a tensor type such as torch.FloatTensor")
  end)
  it(":type('torch.cuda.*') moves to a GPU (the tensor's own, else the current one); the plain names to the cpu", function()
    if not H.gpus(2) then return pending("needs 2 CUDA devices") end
    local v = torch.tensor({1.5, 2.5})
    local c = v:type("torch.cuda.DoubleTensor")
    assert.are.equal("torch.cuda.DoubleTensor", c:type())
    assert.are.equal(torch.device("cuda:0"), c.device)
    H.assert_list_equal(c:tolist(), {1.5, 2.5})
    local on1 = v:to("cuda:1"):type("torch.cuda.LongTensor")
    assert.are.equal(torch.device("cuda:1"), on1.device)
    assert.are.equal("int64", H.dtype(on1))
    local back = on1:type("torch.FloatTensor")
    assert.are.equal("cpu", back.device.type)
    H.assert_list_equal(back:tolist(), {1.0, 2.0})
    torch.cuda.set_device(1)
    assert.are.equal(torch.device("cuda:1"), v:type("torch.cuda.BoolTensor").device)
    torch.cuda.set_device(0)
    -- gradients flow through the conversion, as through :to
    local w = torch.tensor({1.0, 2.0}, {requires_grad = true})
    w:type("torch.cuda.DoubleTensor"):mul(3):sum():backward()
    H.assert_list_equal(w.grad:tolist(), {3.0, 3.0})
    c, on1 = nil, nil
    H.release_gpus()
  end)
  it("converting a non-contiguous view converts the viewed elements", function()
    local m = torch.tensor({{1.5, 2.5}, {3.5, 4.5}})
    H.assert_list_equal(m:t():long():tolist(), {{1, 3}, {2, 4}})
    H.assert_list_equal(m[{{}, 2}]:double():tolist(), {2.5, 4.5})
  end)
end)

describe("type promotion", function()
  it("tensor op tensor follows torch.promote_types for all 100 pairs", function()
    for _, a in ipairs(T.dtypes) do
      for _, b in ipairs(T.dtypes) do
        local x, y = torch.ones(2, {dtype = dt(a)}), torch.ones(2, {dtype = dt(b)})
        local want = T.promote[a][b]
        assert.are.equal(want, H.dtype(x + y), a .. " + " .. b)
        assert.are.equal(want, H.dtype(x * y), a .. " * " .. b)
        assert.are.equal(want, H.dtype(x:maximum(y)), a .. " maximum " .. b)
      end
    end
  end)
  it("dimensioned tensor op 0-d tensor: the 0-d tensor only matters across categories", function()
    for _, a in ipairs(T.dtypes) do
      for _, b in ipairs(T.dtypes) do
        local x, z = torch.ones(2, {dtype = dt(a)}), torch.ones({}, {dtype = dt(b)})
        local want = T.dim0[a][b]
        assert.are.equal(want, H.dtype(x + z), a .. " + 0-d " .. b)
        assert.are.equal(want, H.dtype(z + x), "0-d " .. b .. " + " .. a)
        assert.are.equal(want, H.dtype(x * z), a .. " * 0-d " .. b)
      end
    end
  end)
  it("0-d op 0-d follows torch.promote_types", function()
    for _, a in ipairs(T.dtypes) do
      for _, b in ipairs(T.dtypes) do
        local x, y = torch.ones({}, {dtype = dt(a)}), torch.ones({}, {dtype = dt(b)})
        local r = x + y
        assert.are.equal(T.promote[a][b], H.dtype(r), "0-d " .. a .. " + 0-d " .. b)
        assert.are.same({}, H.shape(r))
      end
    end
  end)
  it("tensor op Lua integer / Lua float (wrapped numbers)", function()
    for _, a in ipairs(T.dtypes) do
      local x = torch.ones(2, {dtype = dt(a)})
      local S = T.scalar[a]
      assert.are.equal(S.int, H.dtype(x + 2), a .. " + 2")
      assert.are.equal(S.int, H.dtype(2 * x), "2 * " .. a)
      assert.are.equal(S.float, H.dtype(x + 2.5), a .. " + 2.5")
      assert.are.equal(S.float, H.dtype(2.5 * x), "2.5 * " .. a)
      local z = torch.ones({}, {dtype = dt(a)})
      assert.are.equal(S.zd_int, H.dtype(z + 2), "0-d " .. a .. " + 2")
      assert.are.equal(S.zd_float, H.dtype(z + 2.5), "0-d " .. a .. " + 2.5")
    end
  end)
  it("tensor op Lua boolean", function()
    for _, a in ipairs(T.dtypes) do
      if a ~= "bool" then
        local x = torch.ones(2, {dtype = dt(a)})
        assert.are.equal(T.scalar[a].bool, H.dtype(x * true), a .. " * true")
      end
    end
  end)
  it("a bool tensor with a Lua boolean stays bool", function()
    local b = torch.tensor({true, false})
    assert.are.equal(T.scalar.bool.bool, H.dtype(b + true))
    b:add_(true) -- PyTorch: tensor([True, True])
    H.assert_list_equal(b:tolist(), {true, true})
  end)
  it("in-place ops compute in the promoted type and store in the target's dtype", function()
    -- values from PyTorch 1.13
    local h = torch.tensor({1.0}, {dtype = torch.float16})
    h:add_(torch.tensor({1e-4}, {dtype = torch.float64}))
    check(h, "float16", {1}, {1.0})
    local i = torch.tensor({1}, {dtype = torch.int32})
    i:add_(torch.tensor({1 << 40}))
    check(i, "int32", {1}, {1})
    local u = torch.tensor({250}, {dtype = torch.uint8})
    u:add_(torch.tensor({-100}, {dtype = torch.int8}))
    check(u, "uint8", {1}, {150})
    u = torch.tensor({5}, {dtype = torch.uint8})
    u:sub_(torch.tensor({10}, {dtype = torch.int8}))
    check(u, "uint8", {1}, {251})
    local f = torch.tensor({1.0})
    f:mul_(torch.tensor(3.0, {dtype = torch.float64}))
    check(f, "float32", {1}, {3.0})
    local b = torch.tensor({true, false})
    b:mul_(torch.tensor({true, true}))
    check(b, "bool", {2}, {true, false})
  end)
  it("an in-place op whose result type cannot be cast back is refused (PyTorch's canCast)", function()
    local b = torch.tensor({true})
    H.errors(function() b:add_(1) end, "result type Long can't be cast to the desired output type Bool")
    H.errors(function() b:add_(torch.tensor({1.5})) end, "can't be cast")
    local i = torch.tensor({1}, {dtype = torch.int16})
    H.errors(function() i:mul_(torch.tensor({1.0}, {dtype = torch.float16})) end, "result type Half can't be cast")
    H.assert_list_equal(b:tolist(), {true})
    H.assert_list_equal(i:tolist(), {1})
  end)
  it("promotion computes in the promoted type (values)", function()
    local u = torch.tensor({200, 100}, {dtype = torch.uint8})
    local s = torch.tensor({-100, 100}, {dtype = torch.int8})
    check(u + s, "int16", {2}, {100, 200})
    check(torch.tensor({1, 2}) * 0.5, "float32", {2}, {0.5, 1.0})
    check(torch.tensor({1.5}, {dtype = torch.float64}) + torch.tensor({1}), "float64", {1}, {2.5})
    -- an int32 tensor with a large Lua integer stays int32 and wraps
    check(torch.tensor({1}, {dtype = torch.int32}) + 4294967296, "int32", {1}, {1})
    -- a float16 tensor with a 0-d float64 tensor stays float16
    check(torch.tensor({1.0}, {dtype = torch.float16}) + torch.tensor(0.25, {dtype = torch.float64}), "float16", {1}, {1.25})
  end)
  it("operands are converted to the common dtype before the op (values from PyTorch 1.13)", function()
    local u = torch.tensor({1, 2, 254}, {dtype = torch.uint8})
    -- -3 becomes uint8 253
    check(u:lt(-3), "bool", {3}, {true, true, false})
    check(u // -3, "uint8", {3}, {0, 0, 1})
    check(u % -3, "uint8", {3}, {1, 2, 1})
    check(torch.tensor({5}, {dtype = torch.uint8}):maximum(torch.tensor(-3, {dtype = torch.int8})), "uint8", {1}, {253})
    -- a 0-d int16 -5 with a uint8 tensor: 251
    check(torch.tensor(-5, {dtype = torch.int16}):gt(torch.tensor({3}, {dtype = torch.uint8})), "bool", {1}, {true})
    -- 257 and 300 wrap to the tensor's int8 / uint8
    check(torch.tensor({1}, {dtype = torch.int8}):eq(torch.tensor(257)), "bool", {1}, {true})
    check(torch.tensor({100}, {dtype = torch.int8}):lt(300), "bool", {1}, {false})
    check(torch.tensor({44}, {dtype = torch.uint8}):eq(300), "bool", {1}, {true})
    -- true division does not wrap: it converts to float32
    check(torch.tensor({2}, {dtype = torch.uint8}) / 300, "float32", {1}, {H.f32(2 / 300)})
    check(torch.tensor({1}, {dtype = torch.int8}) / torch.tensor(300), "float32", {1}, {H.f32(1 / 300)})
    -- a Lua float with a float16 tensor is rounded to float16 first
    local h = torch.tensor({68.88437030500961}, {dtype = torch.float16})
    assert.are.equal(68.875, h:item())
    check(h * 5.159088058806049, "float16", {1}, {355.5})
    check(h:eq(68.88437030500961), "bool", {1}, {true})
    check(torch.tensor({0.1}, {dtype = torch.float16}):eq(0.1), "bool", {1}, {true})
    check(torch.tensor({0.1}, {dtype = torch.bfloat16}):eq(0.1), "bool", {1}, {true})
  end)
  it("a float32 tensor with a Lua float uses float32 (the double is rounded)", function()
    local x = torch.tensor({1.0})
    check(x + 1e-8, "float32", {1}, {1.0})
    check(torch.tensor({1.0}, {dtype = torch.float64}) + 1e-8, "float64", {1}, {1.0 + 1e-8})
  end)
  it("comparisons give bool for every dtype and compare in the promoted type", function()
    for _, a in ipairs(T.dtypes) do
      local x = torch.ones(2, {dtype = dt(a)})
      assert.are.equal("bool", H.dtype(x:eq(x)), a)
      assert.are.equal("bool", H.dtype(x:lt(2)), a)
      assert.are.equal("bool", H.dtype(x:ge(0.5)), a)
    end
    -- 1 (int64) < 1.5 must compare as floats
    check(torch.tensor({1, 2}):lt(1.5), "bool", {2}, {true, false})
    -- uint8 255 vs int8 -1: promoted to int16, so not equal
    check(torch.tensor({255}, {dtype = torch.uint8}):eq(torch.tensor({-1}, {dtype = torch.int8})), "bool", {1}, {false})
  end)
  it("true division of integers gives float32", function()
    check(torch.tensor({1, 2, 3}) / 2, "float32", {3}, {0.5, 1.0, 1.5})
    check(torch.tensor({1, 2}) / torch.tensor({4, 8}), "float32", {2}, {0.25, 0.25})
    check(torch.tensor({3}, {dtype = torch.uint8}) / torch.tensor({2}, {dtype = torch.int8}), "float32", {1}, {1.5})
    check(7 / torch.tensor({2}), "float32", {1}, {3.5})
    check(torch.tensor({true}) / 2, "float32", {1}, {0.5})
  end)
  it("division of float16 stays float16; int by float64 0-d gives float64", function()
    assert.are.equal("float16", H.dtype(torch.ones(2, {dtype = torch.float16}) / 3))
    assert.are.equal("float64", H.dtype(torch.ones(2, {dtype = torch.int32}) / torch.tensor(2.0, {dtype = torch.float64})))
  end)
end)

describe("integer wrap-around (two's complement, as PyTorch)", function()
  it("int64 addition, subtraction, multiplication and negation wrap", function()
    local big = torch.tensor({math.maxinteger})
    local small = torch.tensor({math.mininteger})
    check(big + 1, "int64", {1}, {math.mininteger})
    check(small - 1, "int64", {1}, {math.maxinteger})
    check(big * 2, "int64", {1}, {-2})
    check(-small, "int64", {1}, {math.mininteger})
    check(small:abs(), "int64", {1}, {math.mininteger})
    check(big + big, "int64", {1}, {-2})
  end)
  it("narrow integer types wrap in their own width", function()
    check(torch.tensor({2147483647}, {dtype = torch.int32}) + 1, "int32", {1}, {-2147483648})
    check(torch.tensor({32767}, {dtype = torch.int16}) + 1, "int16", {1}, {-32768})
    check(torch.tensor({127}, {dtype = torch.int8}) + 1, "int8", {1}, {-128})
    check(torch.tensor({-128}, {dtype = torch.int8}) - 1, "int8", {1}, {127})
    check(torch.tensor({0}, {dtype = torch.uint8}) - 1, "uint8", {1}, {255})
    check(torch.tensor({200}, {dtype = torch.uint8}) * 2, "uint8", {1}, {144})
    check(torch.tensor({16}, {dtype = torch.uint8}) * torch.tensor({16}, {dtype = torch.uint8}), "uint8", {1}, {0})
    check(-torch.tensor({-128}, {dtype = torch.int8}), "int8", {1}, {-128})
  end)
  it("in-place integer arithmetic wraps", function()
    local x = torch.tensor({250, 5}, {dtype = torch.uint8})
    x:add_(10)
    H.assert_list_equal(x:tolist(), {4, 15})
    local y = torch.tensor({math.maxinteger})
    y:mul_(3)
    H.assert_list_equal(y:tolist(), {math.maxinteger * 3})
  end)
  it("integer sums wrap in int64 and are int64 for every integer dtype", function()
    check(torch.tensor({math.maxinteger, 1}):sum(), "int64", {}, math.mininteger)
    check(torch.tensor({100, 100, 100}, {dtype = torch.int8}):sum(), "int64", {}, 300)
    check(torch.tensor({255, 255}, {dtype = torch.uint8}):sum(), "int64", {}, 510)
    check(torch.tensor({true, true, true}):sum(), "int64", {}, 3)
  end)
  it("integer pow wraps", function()
    check(torch.tensor({2}) ^ 64, "int64", {1}, {0})
    local r = 1
    for _ = 1, 41 do r = r * 3 end -- Lua integers wrap the same way
    check(torch.tensor({3}) ^ 41, "int64", {1}, {r})
  end)
end)
