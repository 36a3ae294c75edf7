-- Extreme but legal Lua integers (math.maxinteger, math.mininteger, 2^53 + 1)
-- reach index, slice, chunk/split and randint arithmetic without undefined
-- behaviour (the sanitizer build fails the suite on a UBSan report), give
-- PyTorch's answers, and are named exactly in error messages. Also: index
-- tables whose metamethods change the tensor while they are read (issue
-- 14, item 5) and writes into expanded views (refused, as PyTorch does).
-- Each case is a reproducer from issues 13 and 14.
local torch = require("torch")
local H = require("helpers")

local MAX, MIN = math.maxinteger, math.mininteger

describe("slicing with extreme bounds and steps", function()
  local x = torch.arange(10) -- 0 .. 9 at positions 1 .. 10

  it("a step past the dim keeps only the first element (Python's x[a::huge])", function()
    H.check(x[{{-2, -1, MAX}}], "int64", {1}, {8})
    H.check(x[{{1, -1, MAX}}], "int64", {1}, {0})
    H.check(x[{{1, 10, MAX - 1}}], "int64", {1}, {0})
    H.check(x[{{3, 3, MAX}}], "int64", {1}, {2})
  end)

  it("an end at math.mininteger is an empty range, whatever the step", function()
    H.check(x[{{3, MIN, 4611686018427387904}}], "int64", {0}, {})
    H.check(x[{{1, MIN}}], "int64", {0}, {})
  end)

  it("a huge step on a 2-d view keeps the other dims and the backward is right", function()
    local w = torch.arange(12, {dtype = torch.float64}):view(3, 4):requires_grad_()
    local v = w[{{}, {2, 4, MAX}}]
    H.check(v, "float64", {3, 1}, {{1.0}, {5.0}, {9.0}})
    v:sum():backward()
    H.assert_list_equal(w.grad:tolist(), {{0.0, 1.0, 0.0, 0.0}, {0.0, 1.0, 0.0, 0.0}, {0.0, 1.0, 0.0, 0.0}})
  end)

  it("out-of-bounds ranges name the bounds the user gave, exactly", function()
    H.errors(function() return x[{{MIN, MAX}}] end,
      {"range {-9223372036854775808, 9223372036854775807}", "size 10"})
    H.errors(function() return x[{{MAX}}] end, {"range {9223372036854775807, 9223372036854775807}"})
    H.errors(function() return x[{{2, MAX, 2}}] end, {"{2, 9223372036854775807}", "dimension 1"})
  end)

  it("a zero or negative step is reported as such", function()
    H.errors(function() return x[{{1, 3, 0}}] end, "slice step must be positive, got 0")
    H.errors(function() return x[{{1, 3, MIN}}] end, "slice step must be positive, got -9223372036854775808")
  end)

  it("a non-integer bound is an error, not a silent 0", function()
    H.errors(function() return x[{{-2, 0.5, MAX}}] end, {"index entry 1", "must be an integer", "0.5"})
    H.errors(function() return x[{{1, "3"}}] end, {"index entry 1", "must be an integer", "string"})
    H.check(x[{{2.0, 4.0}}], "int64", {3}, {1, 2, 3}) -- integral floats read as integers
  end)

  it("a range with more than three values is an error", function()
    H.errors(function() return x[{{1, 2, 1, 4}}] end, {"index entry 1", "{a, b, step}", "4 values"})
  end)
end)

describe("integer indices at the extremes", function()
  local x = torch.arange(10):view(2, 5)

  it("x[math.maxinteger] and x[math.mininteger] name the index exactly", function()
    H.errors(function() return x[MAX] end, {"index 9223372036854775807", "dimension 1", "size 2"})
    H.errors(function() return x[MIN] end, {"index -9223372036854775808", "dimension 1", "size 2"})
    H.errors(function() return x[{1, MAX}] end, {"index 9223372036854775807", "dimension 2", "size 5"})
    H.errors(function() x[{2, MIN}] = 1 end, {"index -9223372036854775808", "dimension 2"})
  end)

  it("select, narrow and dims at the extremes name the number exactly", function()
    H.errors(function() return x:select(1, MAX) end, "index 9223372036854775807")
    H.errors(function() return x:narrow(1, MIN, 1) end, "narrow")
    H.errors(function() return x:sum(MAX) end, "but got 9223372036854775807")
  end)

  it("an index table longer than any tensor can be is refused before it is read", function()
    local reads = 0
    local idx = setmetatable({}, {__len = function() return MAX end, __index = function() reads = reads + 1; return 1 end})
    H.errors(function() return x[idx] end, "too many indices")
    assert.are.equal(0, reads)
  end)
end)

describe("chunk and split with huge sizes", function()
  local x = torch.arange(10)

  it("chunk(math.maxinteger) gives one piece per element, as PyTorch", function()
    local parts = x:chunk(MAX)
    assert.are.equal(10, #parts)
    for i = 1, 10 do H.check(parts[i], "int64", {1}, {i - 1}) end
  end)

  it("split(math.maxinteger) gives the whole dim as one piece", function()
    local parts = x:split(MAX)
    assert.are.equal(1, #parts)
    H.check(parts[1], "int64", {10}, H.range(0, 9))
  end)

  it("sizes whose sum overflows int64 are refused with the expected sum", function()
    H.errors(function() return x:split({MAX, 3}) end, {"sum exactly to 10", "more than 9223372036854775807"})
    H.errors(function() return x:split({MAX, MAX, 12}) end, "more than 9223372036854775807")
    H.errors(function() return x:split({MAX, MIN + 11}) end, "non-negative")
    H.errors(function() return x:split({-1, 11}) end, {"non-negative", "-1 at position 1"})
  end)

  it("chunk and split counts and sizes at the edges", function()
    H.errors(function() return x:chunk(0) end, "greater than 0, got: 0")
    H.errors(function() return x:chunk(MIN) end, "got: -9223372036854775808")
    H.errors(function() return x:split(MIN) end, "split_size=-9223372036854775808")
    H.errors(function() return torch.tensor(3):chunk(2) end, "at least a 1-dimensional tensor")
    local parts = x:chunk(3) -- ceil(10 / 3) = 4: 4, 4, 2
    assert.are.same({4, 4, 2}, {parts[1]:numel(), parts[2]:numel(), parts[3]:numel()})
  end)

  it("a sizes table whose __index changes the tensor is checked against the tensor as it is after", function()
    local y = torch.arange(10)
    local sizes = setmetatable({}, {__len = function() return 2 end, __index = function(_, k)
      if k == 2 then y.data = torch.arange(3) end
      return k == 1 and 5 or 5
    end})
    H.errors(function() return y:split(sizes) end, {"sum exactly to 3", "summing to 10"})
    local ok_sizes = setmetatable({}, {__len = function() return 2 end, __index = function(_, k)
      if k == 2 then y.data = torch.arange(4) end
      return 2
    end})
    local parts = y:split(ok_sizes)
    H.check(parts[1], "int64", {2}, {0, 1})
    H.check(parts[2], "int64", {2}, {2, 3})
  end)
end)

describe("index tables whose metamethods change the tensor (issue 14, item 5)", function()
  it("a shape shrunk while the table is read is checked as it is after", function()
    local x = torch.zeros(10, 10)
    local idx = setmetatable({}, {__len = function() return 2 end, __index = function(_, k)
      if k == 2 then x.data = torch.zeros(2, 2) end
      return k == 1 and 10 or {1, 10}
    end})
    H.errors(function() return x[idx] end, {"index 10", "dimension 1", "size 2"})
    H.errors(function() x[idx] = 1 end, {"index 10", "size 2"})
  end)

  it("a dim dropped while the table is read gives 'too many indices'", function()
    local x = torch.zeros(4, 4)
    local idx = setmetatable({}, {__len = function() return 2 end, __index = function(_, k)
      if k == 2 then x.data = torch.zeros(4) end
      return k == 1 and 1 or {1, 4}
    end})
    H.errors(function() return x[idx] end, "too many indices for tensor of dimension 1")
  end)

  it("a range table whose __index changes the tensor", function()
    local x = torch.arange(100)
    local range = setmetatable({}, {__len = function() return 2 end, __index = function(_, k)
      if k == 2 then x.data = torch.arange(3) end
      return k == 1 and 1 or 100
    end})
    H.errors(function() return x[{range}] end, {"range {1, 100}", "size 3"})
    local fine = setmetatable({}, {__len = function() return 2 end, __index = function(_, k)
      if k == 2 then x.data = torch.arange(5) end
      return k == 1 and 2 or 4
    end})
    H.check(x[{fine}], "int64", {3}, {1, 2, 3})
  end)
end)

describe("torch.randint over any int64 range", function()
  it("the full int64 range draws without a crash (no division by zero)", function()
    torch.manual_seed(1)
    local r = torch.randint(MIN, MAX, {64})
    H.check(r, "int64", {64})
    local distinct, seen = 0, {}
    for _, v in ipairs(r:tolist()) do
      assert.is_true(math.type(v) == "integer" and v < MAX)
      if not seen[v] then seen[v] = true; distinct = distinct + 1 end
    end
    assert.is_true(distinct > 60) -- 64 draws from 2^64 values
  end)

  it("a range above 2^53 gives values inside [low, high) exactly", function()
    local lo, hi = 9007199254740993, 9007199254740995 -- 2^53 + 1, 2^53 + 3: not doubles
    torch.manual_seed(7)
    local seen = {}
    for _, v in ipairs(torch.randint(lo, hi, {200}):tolist()) do
      assert.is_true(v == lo or v == lo + 1, "value " .. v .. " outside [2^53 + 1, 2^53 + 3)")
      seen[v] = true
    end
    assert.is_true(seen[lo] and seen[lo + 1])
  end)

  it("ranges whose width overflows int64 stay inside their bounds", function()
    torch.manual_seed(3)
    for _, v in ipairs(torch.randint(4, MAX, {100}):tolist()) do assert.is_true(v >= 4 and v < MAX) end
    for _, v in ipairs(torch.randint(MIN, -4, {100}):tolist()) do assert.is_true(v >= MIN and v < -4) end
    for _, v in ipairs(torch.randint(MIN, MIN + 2, {50}):tolist()) do assert.is_true(v == MIN or v == MIN + 1) end
    for _, v in ipairs(torch.randint(MAX - 1, MAX, {20}):tolist()) do assert.are.equal(MAX - 1, v) end
  end)

  it("small ranges keep their old sequence (the rule did not change there)", function()
    -- values from the rule lo + u64 mod width with Philox(seed 5): the
    -- same numbers before and after the int64 rewrite
    torch.manual_seed(5)
    local a = torch.randint(0, 10, {8}):tolist()
    torch.manual_seed(5)
    local b = torch.randint(100, 110, {8}):tolist()
    for i = 1, 8 do assert.are.equal(a[i] + 100, b[i]) end
  end)

  it("an empty range and bounds outside the dtype are errors", function()
    H.errors(function() return torch.randint(MAX, MAX, {1}) end, "from=9223372036854775807 >= to=9223372036854775807")
    H.errors(function() return torch.randint(5, MIN, {1}) end, "to=-9223372036854775808")
    H.errors(function() return torch.randint(0, 1000, {3}, {dtype = torch.int8}) end,
      {"to - 1 = 999", "int8", "-128 to 127"})
    H.errors(function() return torch.randint(-1, 5, {3}, {dtype = torch.uint8}) end, {"from=-1", "uint8"})
    H.errors(function() return torch.randint(0, 3, {3}, {dtype = torch.bool}) end, "bool")
    H.errors(function() return torch.randint(0, 70000, {3}, {dtype = torch.float16}) end, "float16")
    H.check(torch.randint(-128, 128, {4}, {dtype = torch.int8}), "int8", {4})
    H.check(torch.randint(MIN, MAX, {2}, {dtype = torch.float64}), "float64", {2})
  end)

  it("a simulated GPU draws the same integers as the CPU for a seed", function()
    local saved_n, saved_cap = torch._sim_configure(1)
    finally(function() collectgarbage(); torch._sim_configure(saved_n, saved_cap) end)
    for _, r in ipairs({{MIN, MAX}, {9007199254740993, 9007199254740999}, {-3, 4}}) do
      torch.manual_seed(11)
      local c = torch.randint(r[1], r[2], {16}):tolist()
      torch.manual_seed(11)
      local g = torch.randint(r[1], r[2], {16}, {device = "cuda:0"}):cpu():tolist()
      H.assert_list_equal(g, c)
    end
  end)
end)

describe("writes into expanded views are refused (as PyTorch)", function()
  local MSG = "more than one element of the written-to tensor refers to a single memory location"

  it("in-place ops, fill_, copy_, zero_, random fills and assignment", function()
    local base = torch.zeros(3)
    local e = base:expand(2, 3)
    local snap = H.snapshot(base)
    H.errors(function() e:add_(1) end, MSG)
    H.errors(function() e:fill_(2) end, MSG)
    H.errors(function() e:zero_() end, MSG)
    H.errors(function() e:copy_(torch.ones(2, 3)) end, MSG)
    H.errors(function() e:uniform_() end, MSG)
    H.errors(function() e:neg_() end, MSG)
    H.errors(function() e[{{}, 1}] = 5 end, MSG)
    H.errors(function() e[{{1, 2}}] = torch.ones(2, 3) end, MSG)
    H.assert_unchanged(base, snap)
  end)

  it("a write through a single element of an expanded view is allowed, as in PyTorch", function()
    local base = torch.zeros(3)
    local e = base:expand(2, 3)
    e[{1, 2}] = 5
    H.assert_list_equal(base:tolist(), {0.0, 5.0, 0.0})
    H.assert_list_equal(e:tolist(), {{0.0, 5.0, 0.0}, {0.0, 5.0, 0.0}})
  end)

  it("size-1 and empty dims with stride 0 are not shared memory", function()
    local one = torch.zeros(1):expand(1, 1)
    one:add_(2)
    H.assert_list_equal(one:tolist(), {{2.0}})
    local empty = torch.zeros(1):expand(0, 4)
    empty:fill_(1)
    H.check(empty, "float32", {0, 4})
  end)
end)
