-- spec/serialize_spec.lua: torch.save / torch.load (safetensors files).
-- Round trips of every dtype and shape, views, state dicts and lists,
-- devices and map_location on simulated GPUs, atomic writes, hostile
-- files made byte by byte (each must be a clear error, never a crash),
-- and interoperability with the published format and Python's
-- safetensors (skipped with a message where it is not installed).
local torch = require("torch")

local dir = os.tmpname()
os.remove(dir)
assert(os.execute("mkdir -p '" .. dir .. "'"))
local n_files = 0
local function tmp(name)
  n_files = n_files + 1
  return ("%s/%s%d.safetensors"):format(dir, name or "f", n_files)
end
local function read_bytes(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("a")
  f:close()
  return s
end
local function write_bytes(path, s)
  local f = assert(io.open(path, "wb"))
  f:write(s)
  f:close()
end
local function listdir(d)
  local p = io.popen("ls -A '" .. d .. "'")
  local out = {}
  for l in p:lines() do out[#out + 1] = l end
  p:close()
  return out
end
-- A safetensors file from header JSON and data bytes.
local function st(json, data) return string.pack("<I8", #json) .. json .. (data or "") end

-- Deep equality of tolist() values, NaN equal to NaN.
local function same_values(a, b)
  if type(a) == "table" and type(b) == "table" then
    if #a ~= #b then return false end
    for i = 1, #a do if not same_values(a[i], b[i]) then return false end end
    return true
  end
  if a ~= a and b ~= b then return true end
  return a == b and math.type(a) == math.type(b)
end
local function assert_same(expected, got)
  assert.is_true(torch.is_tensor(got), "not a tensor")
  assert.are.equal(expected.dtype, got.dtype)
  assert.are.equal(tostring(expected:size()), tostring(got:size()))
  assert.are.equal(expected.device, got.device)
  assert.is_true(same_values(expected:cpu():tolist(), got:cpu():tolist()), tostring(expected) .. " vs " .. tostring(got))
end
local function roundtrip(obj, opts)
  local path = tmp()
  torch.save(obj, path)
  return torch.load(path, opts), path
end
local function load_error(bytes)
  local path = tmp("bad")
  write_bytes(path, bytes)
  local ok, err = pcall(torch.load, path)
  assert.is_false(ok, "a hostile file loaded")
  return tostring(err)
end
local function expect_error(bytes, pattern)
  local err = load_error(bytes)
  assert.is_truthy(err:find(pattern), "error '" .. err .. "' lacks '" .. pattern .. "'")
end

local DT = {
  { torch.float32, { 1.5, -2.25, 1 / 0, -1 / 0, 0 / 0, 3.4028234663852886e38 } },
  { torch.float64, { 1e308, 5e-324, -0.0, 0 / 0, math.pi } },
  { torch.float16, { 65504.0, -0.5, 5.9604644775390625e-08, 1 / 0 } },
  { torch.bfloat16, { 1.0, -2.5, 3.3895313892515355e38, 0 / 0 } },
  { torch.int64, { math.mininteger, math.maxinteger, 0, -1 } },
  { torch.int32, { -2147483648, 2147483647, 7 } },
  { torch.int16, { -32768, 32767, -3 } },
  { torch.int8, { -128, 127, 0 } },
  { torch.uint8, { 0, 255, 128 } },
  { torch.bool, { true, false, true } },
}

describe("torch.save / torch.load", function()
  teardown(function() os.execute("rm -rf '" .. dir .. "'") end)

  describe("round trips", function()
    for _, case in ipairs(DT) do
      local dt, vals = case[1], case[2]
      it("keeps every value of " .. tostring(dt) .. " in 0-d, 1-d, 2-d, 3-d and empty shapes", function()
        local v = torch.tensor(vals, { dtype = dt })
        local shapes = {
          torch.tensor(vals[1], { dtype = dt }),                   -- 0-d
          v,                                                       -- 1-d
          torch.zeros(0, { dtype = dt }),                          -- empty
          torch.zeros(2, 0, 3, { dtype = dt }),                    -- empty with dims
          v:expand(2, #vals):contiguous(),                         -- 2-d
          torch.arange(24):view(2, 3, 4):to(dt),                   -- 3-d
        }
        for _, x in ipairs(shapes) do assert_same(x, roundtrip(x)) end
      end)
    end

    it("saves views and non-contiguous tensors as their values, loads them contiguous", function()
      local y = torch.arange(12):view(3, 4):double()
      local views = { y:t(), y:narrow(2, 2, 2), y:select(1, 2), y:permute(2, 1), torch.ones(3):expand(2, 3),
                      y[2], y:t():narrow(1, 2, 2) }
      for _, v in ipairs(views) do
        local got = roundtrip(v)
        assert_same(v, got)
        assert.is_true(got:is_contiguous())
      end
      local sd = roundtrip({ a = y:t(), b = y }) -- a view and its base: both saved whole
      assert_same(y:t(), sd.a)
      assert_same(y, sd.b)
    end)

    it("round-trips a state dict with unusual names", function()
      local names = { "layer.0.weight", "b", "", "caf\u{e9} \u{1F600}", 'q"uo\\te', "new\nline\ttab", "__tensor__" }
      local sd = {}
      for i, n in ipairs(names) do sd[n] = torch.full({ i }, i * 0.5) end
      local got = roundtrip(sd)
      local count = 0
      for k, v in pairs(got) do
        count = count + 1
        assert_same(sd[k], v)
      end
      assert.are.equal(#names, count)
    end)

    it("round-trips a list and an empty table", function()
      local l = roundtrip({ torch.ones(2), torch.zeros(3, { dtype = torch.int32 }), torch.tensor(true) })
      assert.are.equal(3, #l)
      assert_same(torch.ones(2), l[1])
      assert_same(torch.zeros(3, { dtype = torch.int32 }), l[2])
      assert_same(torch.tensor(true), l[3])
      assert.are.same({}, roundtrip({}))
    end)

    it("a single tensor is stored under '__tensor__' and loads back as a tensor", function()
      local x = torch.tensor({ 1.0, 2.0 })
      local got, path = roundtrip(x)
      assert_same(x, got)
      local f <close> = torch._load(path)
      assert.are.same({ "__tensor__" }, f:keys())
      assert.are.equal("tensor", f:metadata()["gshell.kind"])
      assert.are.equal("cpu", f:metadata()["gshell.device.__tensor__"])
    end)

    it("keeps requires_grad and user metadata", function()
      local w = torch.ones(2)
      w.requires_grad = true
      local path = tmp()
      torch.save({ w = w, n = torch.ones(1) }, path, { metadata = { author = "me" } })
      local sd = torch.load(path)
      assert.is_true(sd.w.requires_grad)
      assert.is_false(sd.n.requires_grad)
      assert.are.same({ author = "me" }, torch.serialize.metadata(path))
    end)

    it("loads a big header (5000 tensors) correctly", function()
      local parts, data = {}, {}
      for i = 1, 5000 do
        parts[i] = ('"t%d":{"dtype":"I32","shape":[1],"data_offsets":[%d,%d]}'):format(i, 4 * (i - 1), 4 * i)
        data[i] = string.pack("<i4", i)
      end
      local path = tmp()
      write_bytes(path, st("{" .. table.concat(parts, ",") .. "}", table.concat(data)))
      local sd = torch.load(path)
      assert.are.equal(4999, sd.t4999:item())
      assert.are.equal(1, sd.t1:item())
    end)
  end)

  describe("devices", function()
    setup(function() torch._sim_configure(2) end)
    -- back to what the run started with (GSHELL_SIM_GPUS, or none)
    teardown(function() collectgarbage(); torch._sim_configure(tonumber(os.getenv("GSHELL_SIM_GPUS")) or 0) end)

    local function saved_on_gpus()
      local path = tmp("gpu")
      torch.save({ a = torch.ones(2, { device = "cuda:0" }), b = torch.arange(3):to("cuda:1"), c = torch.zeros(1) },
                 path)
      return path
    end

    it("restores each tensor's device", function()
      local sd = torch.load(saved_on_gpus())
      assert.are.equal(torch.device("cuda:0"), sd.a.device)
      assert.are.equal(torch.device("cuda:1"), sd.b.device)
      assert.are.equal(torch.device("cpu"), sd.c.device)
      assert_same(torch.arange(3):to("cuda:1"), sd.b)
    end)

    it("map_location as a device, a string, an ordinal, a table and a function", function()
      local path = saved_on_gpus()
      for _, m in ipairs({ "cpu", torch.device("cpu") }) do
        for _, v in pairs(torch.load(path, { map_location = m })) do assert.are.equal(torch.device("cpu"), v.device) end
      end
      for _, v in pairs(torch.load(path, { map_location = 1 })) do assert.are.equal(torch.device("cuda:1"), v.device) end
      local sd = torch.load(path, { map_location = { ["cuda:1"] = "cuda:0" } })
      assert.are.equal(torch.device("cuda:0"), sd.b.device)
      assert.are.equal(torch.device("cpu"), sd.c.device)
      sd = torch.load(path, { map_location = function(saved, name) return name == "c" and "cuda:1" or nil end })
      assert.are.equal(torch.device("cuda:1"), sd.c.device)
      assert.are.equal(torch.device("cuda:1"), sd.b.device)
      assert.are.equal(torch.device("cuda:0"), sd.a.device)
    end)

    it("loading onto a device that does not exist is a clear error", function()
      local path = saved_on_gpus()
      local ok, err = pcall(torch.load, path, { map_location = "cuda:5" })
      assert.is_false(ok)
      assert.is_truthy(tostring(err):find("mapped to cuda:5, but cuda:5 is not available", 1, true), err)
      collectgarbage()
      torch._sim_configure(1)
      ok, err = pcall(torch.load, path)
      assert.is_false(ok)
      assert.is_truthy(tostring(err):find("tensor 'b' was saved on cuda:1, but cuda:1 is not available", 1, true) or
                       tostring(err):find("tensor 'a' was saved on cuda:0, but cuda:0 is not available", 1, true), err)
      assert.is_truthy(tostring(err):find("map_location", 1, true), err)
      local sd = torch.load(path, { map_location = { ["cuda:1"] = "cuda:0" } })
      assert.are.equal(torch.device("cuda:0"), sd.b.device)
      sd = nil
      collectgarbage()
      torch._sim_configure(0)
      assert.are.equal(torch.device("cpu"), torch.load(path, { map_location = "cpu" }).a.device)
      ok, err = pcall(torch.load, path)
      assert.is_truthy(tostring(err):find("was saved on cuda:%d, but cuda:%d is not available"), err)
      torch._sim_configure(2)
    end)

    it("an invalid saved device is a clear error", function()
      expect_error(st('{"__metadata__":{"gshell.device.a":"gpu:7"},"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}',
                      "\1"), "invalid saved device 'gpu:7'")
    end)
  end)

  describe("atomic writes", function()
    local function intact_after(fails, pattern)
      local path = tmp("keep")
      torch.save({ good = torch.arange(4) }, path)
      local before = read_bytes(path)
      local ok, err = pcall(fails, path)
      assert.is_false(ok)
      if pattern then assert.is_truthy(tostring(err):find(pattern, 1, true), tostring(err)) end
      assert.are.equal(before, read_bytes(path))
      for _, name in ipairs(listdir(dir)) do assert.is_nil(name:find("%.tmp%-"), "temporary file left: " .. name) end
      return tostring(err)
    end

    it("an unsupported object leaves the old file", function()
      intact_after(function(p) torch.save({ a = "text" }, p) end, "value at key 'a' is a string")
      intact_after(function(p) torch.save(print, p) end, "can only save a tensor or a table of tensors")
      intact_after(function(p) torch.save({ [1.5] = torch.ones(1) }, p) end, "keys must be strings")
      intact_after(function(p) torch.save({ torch.ones(1), x = torch.ones(1) }, p) end, "not both")
      intact_after(function(p) torch.save({ __metadata__ = torch.ones(1) }, p) end, "'__metadata__' cannot be")
      intact_after(function(p) torch.save({ ["\xff"] = torch.ones(1) }, p) end, "not valid UTF-8")
    end)

    it("a write that fails midway (file size limit) leaves the old file and no temporary", function()
      local path = tmp("keep")
      torch.save({ good = torch.arange(4) }, path)
      local before = read_bytes(path)
      local build = os.getenv("GSHELL_BUILD") or "build"
      local script = ('local t = require("torch"); local ok, e = pcall(t.save, t.ones(100000), %q); ' ..
                      'io.write(ok and "saved" or e)'):format(path)
      local cmd = ("trap '' XFSZ; ulimit -f 16; LUA_CPATH='%s/?.so;;' lua5.4 -e '%s' 2>&1"):format(build, script)
      local p = io.popen("sh -c " .. ("%q"):format(cmd))
      local out = p:read("a")
      p:close()
      assert.is_truthy(out:find("cannot save to", 1, true), out)
      assert.is_truthy(out:find("File too large", 1, true), out)
      assert.is_truthy(out:find("left unchanged", 1, true), out)
      assert.are.equal(before, read_bytes(path))
      for _, name in ipairs(listdir(dir)) do assert.is_nil(name:find("%.tmp%-"), "temporary file left: " .. name) end
    end)

    it("an unwritable destination is a clear error", function()
      local ro = dir .. "/readonly"
      os.execute("mkdir -p '" .. ro .. "' && chmod 555 '" .. ro .. "'")
      local probe = io.open(ro .. "/probe", "w")
      if probe then -- root ignores permissions: use a directory that cannot exist instead
        probe:close()
        os.remove(ro .. "/probe")
        local ok, err = pcall(torch.save, torch.ones(1), dir .. "/no/such/dir/x.safetensors")
        assert.is_false(ok)
        assert.is_truthy(tostring(err):find("No such file or directory", 1, true), err)
      else
        local ok, err = pcall(torch.save, torch.ones(1), ro .. "/x.safetensors")
        assert.is_false(ok)
        assert.is_truthy(tostring(err):find("Permission denied", 1, true), err)
      end
      local file = tmp("plain")
      write_bytes(file, "x")
      local ok, err = pcall(torch.save, torch.ones(1), file .. "/x.safetensors")
      assert.is_false(ok)
      assert.is_truthy(tostring(err):find("Not a directory", 1, true), err)
      os.execute("chmod 755 '" .. ro .. "'")
    end)

    it("saving over a directory fails and removes the temporary", function()
      local d = dir .. "/adir"
      os.execute("mkdir -p '" .. d .. "'")
      local ok, err = pcall(torch.save, torch.ones(1), d)
      assert.is_false(ok)
      assert.is_truthy(tostring(err):find("it is a directory, not a regular file", 1, true), err)
      for _, name in ipairs(listdir(dir)) do assert.is_nil(name:find("%.tmp%-"), "temporary file left: " .. name) end
    end)

    it("the saved file gets ordinary permissions and overwrites the old one", function()
      local path = tmp()
      torch.save(torch.ones(1), path)
      torch.save(torch.zeros(2), path)
      assert_same(torch.zeros(2), torch.load(path))
      local p = io.popen("umask; stat -c %a '" .. path .. "'")
      local umask, mode = tonumber(p:read("l"), 8), tonumber(p:read("l"), 8)
      p:close()
      assert.are.equal(438 & ~umask, mode) -- 0666 & ~umask
    end)

    it("bad arguments are clear errors", function()
      assert.has_error(function() torch.save(torch.ones(1)) end, "torch.save: the path must be a string, got nil")
      assert.has_error(function() torch.load(42) end, "torch.load: the path must be a string, got number")
      assert.has_error(function() torch.load("x", { map = "cpu" }) end, "torch.load: unknown option 'map'; the only option is map_location")
      local ok, err = pcall(torch.load, dir .. "/missing.safetensors")
      assert.is_truthy(tostring(err):find("cannot open", 1, true), err)
      ok, err = pcall(torch.load, dir)
      assert.is_truthy(tostring(err):find("directory", 1, true), err)
    end)
  end)

  describe("hostile files are clear errors", function()
    local T = '"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}'
    local cases = {
      { "empty file", "", "fewer than the 8%-byte header length" },
      { "shorter than the length prefix", "abc", "fewer than the 8%-byte" },
      { "header length past the end", string.pack("<I8", 1000) .. "{}", "runs past the end of the file" },
      { "absurd header length", string.pack("<I8", 1 << 62) .. "{}", "is absurd" },
      { "header length 2^64-1", string.pack("<i8", -1) .. "{}", "is absurd" },
      { "zero header length", string.pack("<I8", 0), "must start with '{'" },
      { "header not an object", st("[]"), "must start with '{'" },
      { "leading space", st(" {}"), "must start with '{'" },
      { "missing closing brace", st("{" .. T, "0000"), "expected ',' or '}'" },
      { "missing colon", st('{"a" {}}'), "expected ':'" },
      { "trailing comma", st("{" .. T .. ",}", "0000"), "expected a string" },
      { "single quotes", st("{'a':1}"), "expected a string" },
      { "garbage after the object", st("{}x"), "expected the end of the header" },
      { "unterminated string", st('{"abc'), "unterminated string" },
      { "backslash at the very end", st('{"abc\\'), "unterminated string" },
      { "invalid escape", st('{"a\\q":1}'), "invalid escape" },
      { "short \\u escape", st('{"\\u12":1}'), "invalid \\u escape" },
      { "lone surrogate", st('{"\\ud800":1}'), "unpaired UTF%-16 surrogate" },
      { "NUL in a name", st('{"a\\u0000b":{}}'), "NUL character" },
      { "control character in a name", st('{"a\nb":{}}'), "control character" },
      { "invalid UTF-8 in a name", st('{"\xff":{}}'), "invalid UTF%-8" },
      { "overlong UTF-8", st('{"\xc0\xaf":{}}'), "invalid UTF%-8" },
      { "UTF-8 surrogate", st('{"\xed\xa0\x80":{}}'), "invalid UTF%-8" },
      { "leading zeros", st('{"a":{"dtype":"F32","shape":[01],"data_offsets":[0,4]}}', "0000"), "leading zeros" },
      { "fraction", st('{"a":{"dtype":"F32","shape":[1.0],"data_offsets":[0,4]}}', "0000"), "expected an integer" },
      { "exponent", st('{"a":{"dtype":"F32","shape":[1e0],"data_offsets":[0,4]}}', "0000"), "expected an integer" },
      { "negative offset", st('{"a":{"dtype":"F32","shape":[1],"data_offsets":[-4,0]}}', "0000"), "negative numbers" },
      { "integer too large", st('{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,184467440737095516160]}}', "0"),
        "integer too large" },
      { "dimension past int64", st('{"a":{"dtype":"U8","shape":[9223372036854775808],"data_offsets":[0,1]}}', "0"),
        "absurd dimension" },
      { "offsets outside the data", st('{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}', "0000"),
        "lie outside the data section %(4 bytes%)" },
      { "truncated data", st("{" .. T .. "}", "00"), "truncated or corrupt" },
      { "range ending before it begins", st('{"a":{"dtype":"F32","shape":[1],"data_offsets":[4,0]}}', "0000"),
        "end before they begin" },
      { "overlapping tensors", st('{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},' ..
        '"b":{"dtype":"F32","shape":[1],"data_offsets":[2,6]}}', "000000"), "'a' and 'b' overlap" },
      { "same range twice", st('{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},' ..
        '"b":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}', "0000"), "overlap" },
      { "gap before a tensor", st('{"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}', "00000000"), "unused bytes" },
      { "bytes after the last tensor", st("{" .. T .. "}", "00000000"), "the tensors cover 4" },
      { "unknown dtype", st('{"a":{"dtype":"F33","shape":[1],"data_offsets":[0,4]}}', "0000"), "dtype 'F33'" },
      { "unsupported dtype", st('{"a":{"dtype":"U16","shape":[2],"data_offsets":[0,4]}}', "0000"), "does not support" },
      { "dtype not a string", st('{"a":{"dtype":7,"shape":[1],"data_offsets":[0,4]}}', "0000"), "expected a string" },
      { "shape and bytes disagree", st('{"a":{"dtype":"F32","shape":[2,3],"data_offsets":[0,20]}}', string.rep("0", 20)),
        "24 bytes%) but its data_offsets %[0, 20%] hold 20 bytes" },
      { "element count overflow", st('{"a":{"dtype":"F64","shape":[4294967296,4294967296,4294967296],' ..
        '"data_offsets":[0,8]}}', "00000000"), "too many elements" },
      { "overflow hidden by a zero dim", st('{"a":{"dtype":"U8","shape":[0,1099511627776,1099511627776],' ..
        '"data_offsets":[0,0]}}'), "too many elements" },
      { "too many dimensions", st('{"a":{"dtype":"U8","shape":[' .. string.rep("1,", 16) .. '1],"data_offsets":[0,1]}}',
        "0"), "more than 16 dimensions" },
      { "three data offsets", st('{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1,1]}}', "0"), "exactly two" },
      { "one data offset", st('{"a":{"dtype":"U8","shape":[1],"data_offsets":[1]}}', "0"), "exactly two" },
      { "missing field", st('{"a":{"dtype":"U8","shape":[1]}}', "0"), "lacks \"data_offsets\"" },
      { "unknown field", st('{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"x":1}}', "0"), "unknown key 'x'" },
      { "repeated field", st('{"a":{"dtype":"U8","dtype":"U8","shape":[1],"data_offsets":[0,1]}}', "0"), "repeated key" },
      { "duplicate tensor name", st('{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},' ..
        '"a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}', "00"), "'a' appears twice" },
      { "duplicate metadata key", st('{"__metadata__":{"k":"1","k":"2"}}'), "key 'k' appears twice" },
      { "metadata twice", st('{"__metadata__":{},"__metadata__":{}}'), "__metadata__ appears twice" },
      { "metadata value not a string", st('{"__metadata__":{"k":1}}'), "values must be strings" },
      { "nested metadata", st('{"__metadata__":{"k":{"x":"y"}}}'), "values must be strings" },
      { "deeply nested arrays", st('{"a":' .. string.rep("[", 100000)), "expected a tensor entry" },
      { "deeply nested shape", st('{"a":{"dtype":"U8","shape":' .. string.rep("[", 100000)), "non%-negative integer" },
      { "deeply nested objects", st(string.rep('{"a":', 100000)), "unknown key 'a'" },
      { "tensor kind without its tensor", st('{"__metadata__":{"gshell.kind":"tensor"},' ..
        '"x":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}', "0"), "holds one tensor but has 1 named 'x'" },
    }
    for _, c in ipairs(cases) do
      it(c[1], function() expect_error(c[2], c[3]) end)
    end

    it("every truncation of a valid file is an error, never a crash", function()
      local path = tmp()
      torch.save({ a = torch.arange(6):view(2, 3), b = torch.ones(2, { dtype = torch.float16 }) }, path)
      local good = read_bytes(path)
      for n = 0, #good - 1 do load_error(good:sub(1, n)) end
    end)

    it("random byte flips are errors or valid tensors, never crashes", function()
      local path = tmp()
      torch.save({ a = torch.arange(6):view(2, 3), b = torch.tensor({ true, false }) }, path)
      local good = read_bytes(path)
      math.randomseed(7)
      for _ = 1, 300 do
        local i = math.random(1, #good)
        local bad = good:sub(1, i - 1) .. string.char(math.random(0, 255)) .. good:sub(i + 1)
        write_bytes(path, bad)
        pcall(torch.load, path)
      end
    end)

    it("bool bytes other than 0 and 1 load as true", function()
      local path = tmp()
      write_bytes(path, st('{"m":{"dtype":"BOOL","shape":[3],"data_offsets":[0,3]}}', "\0\2\255"))
      assert.are.same({ false, true, true }, torch.load(path).m:tolist())
      assert.are.equal(2, torch.load(path).m:sum():item())
    end)
  end)

  describe("interoperability", function()
    it("loads a file written byte for byte from the published format", function()
      local json = '{"__metadata__":{"format":"pt"},' ..
        '"w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]},' ..
        '"i":{"dtype":"I64","shape":[],"data_offsets":[16,24]},' ..
        '"h":{"dtype":"F16","shape":[2],"data_offsets":[24,28]},' ..
        '"bf":{"dtype":"BF16","shape":[2],"data_offsets":[28,32]},' ..
        '"e":{"dtype":"I32","shape":[0,3],"data_offsets":[32,32]},' ..
        '"s":{"dtype":"I16","shape":[1],"data_offsets":[32,34]}}'
      json = json .. string.rep(" ", (8 - (#json + 8) % 8) % 8) -- padded, as the reference writer does
      local data = string.pack("<ffff", 1.5, -2, 0.25, 8) .. string.pack("<i8", -42) ..
        string.pack("<I2I2", 0x3C00, 0xC000) .. string.pack("<I2I2", 0x3FC0, 0xC120) .. string.pack("<i2", -300)
      local path = tmp()
      write_bytes(path, st(json, data))
      local sd = torch.load(path)
      assert_same(torch.tensor({ { 1.5, -2.0 }, { 0.25, 8.0 } }), sd.w)
      assert_same(torch.tensor(-42), sd.i)
      assert_same(torch.tensor({ 1.0, -2.0 }, { dtype = torch.float16 }), sd.h)
      assert_same(torch.tensor({ 1.5, -10.0 }, { dtype = torch.bfloat16 }), sd.bf)
      assert_same(torch.zeros(0, 3, { dtype = torch.int32 }), sd.e)
      assert_same(torch.tensor({ -300 }, { dtype = torch.int16 }), sd.s)
    end)

    it("writes exactly the published layout", function()
      local path = tmp()
      torch.save(torch.tensor({ 1.0, -2.0 }), path)
      local bytes = read_bytes(path)
      local n = string.unpack("<I8", bytes)
      assert.are.equal(0, (8 + n) % 8)
      local json = bytes:sub(9, 8 + n):gsub(" +$", "")
      assert.are.equal('{"__metadata__":{"format":"pt","gshell.device.__tensor__":"cpu","gshell.kind":"tensor"},' ..
        '"__tensor__":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}', json)
      assert.are.equal(string.pack("<ff", 1, -2), bytes:sub(9 + n))
      -- larger elements first, so every tensor is aligned to its size
      torch.save({ a = torch.ones(1, { dtype = torch.uint8 }), b = torch.ones(1, { dtype = torch.float64 }) }, path)
      bytes = read_bytes(path)
      n = string.unpack("<I8", bytes)
      assert.is_truthy(bytes:find('"b":{"dtype":"F64","shape":[1],"data_offsets":[0,8]}', 1, true))
      assert.is_truthy(bytes:find('"a":{"dtype":"U8","shape":[1],"data_offsets":[8,9]}', 1, true))
    end)

    -- Python with safetensors and numpy, or nil.
    local python
    for _, exe in ipairs({ "python3", "/usr/bin/python3" }) do
      -- LD_PRELOAD is cleared: the sanitizer run preloads libasan, which Python must not inherit
      exe = "LD_PRELOAD= " .. exe
      if not python and os.execute(exe .. ' -c "import safetensors, numpy" >/dev/null 2>&1') then python = exe end
    end
    local function run_python(code)
      local f = tmp("py")
      write_bytes(f, code)
      local p = io.popen(python .. " '" .. f .. "' 2>&1")
      local out = p:read("a")
      p:close()
      return out
    end
    local NO_PY = "Python's safetensors is not installed (python3 -m pip install safetensors numpy): interop skipped"

    it("a file saved by gshell is read by Python's safetensors", function()
      if not python then return pending(NO_PY) end
      local path = tmp()
      local sd = {}
      for _, c in ipairs(DT) do sd[tostring(c[1]):sub(7)] = torch.tensor(c[2], { dtype = c[1] }) end
      sd.matrix = torch.arange(6):view(2, 3):t()
      torch.save(sd, path)
      local out = run_python(([==[
import numpy as np, safetensors
from safetensors import safe_open
with safe_open(%q, framework="np") as f:
    meta = f.metadata()
    for k in sorted(f.keys()):
        if k != "bfloat16":
            a = f.get_tensor(k)
            print(k, a.dtype, list(a.shape), a.tobytes().hex())
raw = dict(safetensors.deserialize(open(%q, "rb").read()))
print("bfloat16", raw["bfloat16"]["dtype"], raw["bfloat16"]["shape"], bytes(raw["bfloat16"]["data"]).hex())
print("kind", meta["gshell.kind"], meta["format"])
]==]):format(path, path))
      local function hex(s) return (s:gsub(".", function(c) return ("%02x"):format(c:byte()) end)) end
      local expect = {
        ("bool bool [3] %s"):format(hex("\1\0\1")),
        ("float16 float16 [4] %s"):format(hex(string.pack("<I2I2I2I2", 0x7BFF, 0xB800, 0x0001, 0x7C00))),
        ("float64 float64 [5] %s"):format(hex(string.pack("<ddddd", 1e308, 5e-324, -0.0, 0 / 0, math.pi))),
        ("int16 int16 [3] %s"):format(hex(string.pack("<i2i2i2", -32768, 32767, -3))),
        ("int32 int32 [3] %s"):format(hex(string.pack("<i4i4i4", -2147483648, 2147483647, 7))),
        ("int64 int64 [4] %s"):format(hex(string.pack("<i8i8i8i8", math.mininteger, math.maxinteger, 0, -1))),
        ("int8 int8 [3] %s"):format(hex(string.pack("<i1i1i1", -128, 127, 0))),
        ("matrix int64 [3, 2] %s"):format(hex(string.pack("<i8i8i8i8i8i8", 0, 3, 1, 4, 2, 5))),
        ("uint8 uint8 [3] %s"):format(hex("\0\255\128")),
        ("bfloat16 BF16 [4] %s"):format(hex(string.pack("<I2I2I2", 0x3F80, 0xC020, 0x7F7F))),
        "kind dict pt",
      }
      for _, line in ipairs(expect) do
        assert.is_truthy(out:find(line, 1, true), "missing '" .. line .. "' in:\n" .. out)
      end
      assert.is_truthy(out:find("float32 float32 [6] 0000c03f000010c00000807f000080ff", 1, true), out)
    end)

    it("a file saved by Python's safetensors is read by gshell", function()
      if not python then return pending(NO_PY) end
      local path = tmp()
      local out = run_python(([==[
import numpy as np
from safetensors.numpy import save_file
from safetensors import serialize_file, TensorSpec
t = {"f32": np.array([[1.5, -2.0], [0.25, 8.0]], np.float32), "f64": np.array([np.pi], np.float64),
     "f16": np.array([1.0, -2.0], np.float16), "i64": np.array(-42, np.int64), "i32": np.array([7], np.int32),
     "i16": np.array([-300], np.int16), "i8": np.array([-128], np.int8), "u8": np.array([255], np.uint8),
     "b": np.array([True, False]), "e": np.zeros((0, 3), np.float32)}
save_file(t, %q, metadata={"source": "python"})
bf = np.array([0x3FC0, 0xC120], np.uint16)
serialize_file({"bf": TensorSpec(dtype="bfloat16", shape=[2], data_ptr=bf.ctypes.data, data_len=4)}, %q)
print("ok")
]==]):format(path, path .. ".bf"))
      assert.is_truthy(out:find("ok", 1, true), out)
      local sd = torch.load(path)
      assert_same(torch.tensor({ { 1.5, -2.0 }, { 0.25, 8.0 } }), sd.f32)
      assert_same(torch.tensor({ math.pi }, { dtype = torch.float64 }), sd.f64)
      assert_same(torch.tensor({ 1.0, -2.0 }, { dtype = torch.float16 }), sd.f16)
      assert_same(torch.tensor(-42), sd.i64)
      assert_same(torch.tensor({ 7 }, { dtype = torch.int32 }), sd.i32)
      assert_same(torch.tensor({ -300 }, { dtype = torch.int16 }), sd.i16)
      assert_same(torch.tensor({ -128 }, { dtype = torch.int8 }), sd.i8)
      assert_same(torch.tensor({ 255 }, { dtype = torch.uint8 }), sd.u8)
      assert_same(torch.tensor({ true, false }), sd.b)
      assert_same(torch.zeros(0, 3), sd.e)
      assert.are.same({ source = "python" }, torch.serialize.metadata(path))
      assert_same(torch.tensor({ 1.5, -10.0 }, { dtype = torch.bfloat16 }), torch.load(path .. ".bf").bf)
    end)
  end)
end)
