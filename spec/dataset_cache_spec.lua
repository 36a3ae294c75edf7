-- dataset_cache_spec.lua: the data sets' decompressed copies
-- (src/io/gs_idx_cache.c) and the IDX reader's limits (src/io/gs_idx.c),
-- issue 33: a copy is named after its source's real path (never $PWD),
-- records the source's identity and its own CRC and is used only while
-- both match, is read rather than mapped (a truncated cache file cannot
-- crash a session or change a loaded tensor); a gzip file may announce at
-- most torchvision.datasets.max_bytes; bytes after the gzip member, a
-- damaged trailer and a FIFO each get their own message.
local torch = require("torch")
local H = require("helpers")
local R = require("gshell_run")
local tv = require("torchvision")

local tmp = R.tmpdir()
local saved_cache_dir = tv.datasets.cache_dir
setup(function() tv.datasets.cache_dir = tmp .. "/cache" end)
teardown(function()
  tv.datasets.cache_dir = saved_cache_dir
  os.execute("rm -rf " .. R.quote(tmp))
end)

-- shell commands without a sanitizer run's LD_PRELOAD (datasets_spec.lua)
local function sh(cmd) return os.execute("env -u LD_PRELOAD sh -c " .. R.quote(cmd)) end

local function write(path, data)
  local f = assert(io.open(path, "wb"))
  f:write(data)
  f:close()
  return path
end
local function file_bytes(p)
  local f = io.open(p, "rb")
  if not f then return nil end
  local s = f:read("a")
  f:close()
  return s
end
local function gzip(path)
  assert(sh("gzip -c " .. R.quote(path) .. " > " .. R.quote(path .. ".gz")))
  return path .. ".gz"
end
local function idx(dims, payload)
  local parts = { string.char(0, 0, 8, #dims) }
  for _, d in ipairs(dims) do parts[#parts + 1] = string.pack(">I4", d) end
  parts[#parts + 1] = payload
  return table.concat(parts)
end
local function bytes(n, f)
  local t = {}
  for i = 1, n do t[i] = string.char(f(i) % 256) end
  return table.concat(t)
end
local function mkdir(p) assert(sh("mkdir -p " .. R.quote(p))) return p end

describe("the decompressed cache", function()
  local cache = tmp .. "/cache"

  it("writes a copy on the first read, named after the real path, and reads it afterwards", function()
    local dir = mkdir(tmp .. "/first")
    local gz = gzip(write(dir .. "/imgs", idx({ 3, 5, 2 }, bytes(30, function(i) return i * 3 end))))
    local x, hit = torch._read_idx_cached(gz, cache)
    assert.is_false(hit)
    local p = torch._idx_cache_path(gz, cache)
    assert.truthy(p:match("^" .. cache:gsub("%p", "%%%0") .. "/datasets/imgs%-%x+$"), p)
    assert.is_string(file_bytes(p))
    local y, hit2 = torch._read_idx_cached(gz, cache)
    assert.is_true(hit2)
    assert.are.same(x:tolist(), y:tolist())
    -- the same file through a symbolic link or a path with ".." has the same copy
    assert(sh("ln -sfn " .. R.quote(dir) .. " " .. R.quote(tmp .. "/firstlink")))
    assert.are.equal(p, torch._idx_cache_path(tmp .. "/firstlink/../first/imgs.gz", cache))
    assert.are.equal(p, torch._idx_cache_path(tmp .. "/firstlink/imgs.gz", cache))
    -- data sets use it for gzipped files only
    assert.are.equal(p, tv.datasets.cache_path(gz))
    assert.is_nil(tv.datasets.cache_path(dir .. "/imgs"))
  end)

  it("keeps paths apart that flattening '/' would merge (a%b/x and a/b%x)", function()
    local p1 = gzip(write(mkdir(tmp .. "/a%b") .. "/x", idx({ 2 }, "\1\2")))
    local p2 = gzip(write(mkdir(tmp .. "/a") .. "/b%x", idx({ 2 }, "\5\6")))
    assert.are_not.equal(torch._idx_cache_path(p1, cache), torch._idx_cache_path(p2, cache))
    assert.are.same({ 1, 2 }, torch._read_idx_cached(p1, cache):tolist())
    assert.are.same({ 5, 6 }, torch._read_idx_cached(p2, cache):tolist())
    assert.are.same({ 1, 2 }, torch._read_idx_cached(p1, cache):tolist())
  end)

  it("rebuilds a copy whose source was replaced by an older file (cp -p, tar x, rsync -t)", function()
    local dir = mkdir(tmp .. "/older")
    local gz = gzip(write(dir .. "/f", idx({ 4 }, "\1\2\3\4")))
    assert.are.same({ 1, 2, 3, 4 }, torch._read_idx_cached(gz, cache):tolist())
    -- a new file with the same size and a modification time in the past
    local other = gzip(write(dir .. "/g", idx({ 4 }, "\9\8\7\6")))
    assert(sh("touch -d '2001-01-01' " .. R.quote(other) .. " && cp -p " .. R.quote(other) .. " " .. R.quote(gz)))
    local x, hit = torch._read_idx_cached(gz, cache)
    assert.is_false(hit)
    assert.are.same({ 9, 8, 7, 6 }, x:tolist())
    local y, hit2 = torch._read_idx_cached(gz, cache)
    assert.is_true(hit2)
    assert.are.same({ 9, 8, 7, 6 }, y:tolist())
  end)

  it("rebuilds a copy whose own bytes were changed, truncated or are of the old format", function()
    local dir = mkdir(tmp .. "/damaged")
    local plain = idx({ 4, 3 }, bytes(12, function(i) return 200 + i end))
    local gz = gzip(write(dir .. "/d", plain))
    torch._read_idx_cached(gz, cache)
    local p = torch._idx_cache_path(gz, cache)
    local good = file_bytes(p)
    -- one byte of the data changed, same size and (touch) a newer time
    write(p, good:sub(1, -2) .. string.char((good:byte(-1) + 1) % 256))
    local x, hit = torch._read_idx_cached(gz, cache)
    assert.is_false(hit)
    assert.are.equal(212 % 256, x[4][3]:item())
    assert.are.equal(good, file_bytes(p))
    write(p, good:sub(1, -3))
    x, hit = torch._read_idx_cached(gz, cache)
    assert.is_false(hit)
    assert.are.equal(212 % 256, x[4][3]:item())
    -- the old format (a plain IDX file) is not trusted either
    write(p, plain)
    x, hit = torch._read_idx_cached(gz, cache)
    assert.is_false(hit)
    assert.are.equal(good, file_bytes(p))
  end)

  it("reads on when no copy can be written, and reports a broken source", function()
    local dir = mkdir(tmp .. "/nowrite")
    local gz = gzip(write(dir .. "/n", idx({ 2 }, "\7\8")))
    write(tmp .. "/afile", "x")
    local w, hit = torch._read_idx_cached(gz, tmp .. "/afile/cannot/be")
    assert.is_false(hit)
    assert.are.same({ 7, 8 }, w:tolist())
    local bad = write(dir .. "/bad.gz", "\x1f\x8b garbage")
    H.errors(function() torch._read_idx_cached(bad, cache) end, { bad })
  end)

  it("is a copy in memory: truncating or rewriting the cache file changes no loaded tensor", function()
    local dir = mkdir(tmp .. "/trunc")
    local gz = gzip(write(dir .. "/t", idx({ 64, 64 }, bytes(4096, function(i) return i % 251 end))))
    torch._read_idx_cached(gz, cache)
    local x, hit = torch._read_idx_cached(gz, cache)
    assert.is_true(hit)
    local p = torch._idx_cache_path(gz, cache)
    -- a cache cleaner's `: > file` (with a mapping, reading x was SIGBUS)
    assert(sh(": > " .. R.quote(p)))
    assert.are.equal(4096 % 251, x[64][64]:item())
    local sum = 0
    for _, v in ipairs(x:reshape(-1):tolist()) do sum = sum + v end
    local want = 0
    for i = 1, 4096 do want = want + i % 251 end
    assert.are.equal(want, sum)
    -- rebuilt, then rewritten in place with other bytes of the same size
    torch._read_idx_cached(gz, cache)
    local y = torch._read_idx_cached(gz, cache)
    local f = assert(io.open(p, "r+b"))
    f:seek("end", -4096)
    f:write(string.rep("\0", 4096))
    f:close()
    assert.are.equal(4096 % 251, y[64][64]:item())
    -- writing into the tensor changes neither the file nor a later load
    y[1][1] = 99
    assert.are.equal(1, torch._read_idx_cached(gz, cache)[1][1]:item())
  end)
end)

describe("the data sets and their copies", function()
  -- a data set's four files, gzipped, with images of one value v
  local function fill_root(dir, v, n)
    mkdir(dir)
    for _, split in ipairs({ { "train", n }, { "t10k", n } }) do
      gzip(write(dir .. "/" .. split[1] .. "-images-idx3-ubyte", idx({ split[2], 2, 2 }, string.rep(string.char(v), 4 * split[2]))))
      gzip(write(dir .. "/" .. split[1] .. "-labels-idx1-ubyte", idx({ split[2] }, string.rep(string.char(v % 10), split[2]))))
    end
    for _, f in ipairs({ "train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte",
      "t10k-labels-idx1-ubyte" }) do os.remove(dir .. "/" .. f) end
    return dir
  end

  it("a relative root is resolved by the process's own directory, not an inherited $PWD", function()
    fill_root(tmp .. "/setA", 1, 3)
    fill_root(tmp .. "/setB", 2, 3)
    local env = { GSHELL_CACHE = tmp .. "/cache_pwd" }
    local code = "local ds = torchvision.datasets.FashionMNIST({root = '.'}); print(ds.data[1][1][1]:item(), ds.targets[1]:item())"
    -- a parent in setA starts gshell in setB: PWD still says setA
    env.PWD = tmp .. "/setA"
    local out = R.run({ "-e", code }, nil, env, tmp .. "/setA")
    assert.truthy(out:find("1\t2", 1, true), out)
    out = R.run({ "-e", code }, nil, env, tmp .. "/setB")
    assert.truthy(out:find("2\t3", 1, true), out)
    -- and with PWD unset
    env.PWD = ""
    out = R.run({ "-e", code }, nil, env, tmp .. "/setA")
    assert.truthy(out:find("1\t2", 1, true), out)
  end)

  it("images and labels replaced together: a rebuilt images copy never meets stale labels", function()
    local dir = fill_root(tmp .. "/pair", 1, 4)
    local ds = tv.datasets.FashionMNIST({ root = dir })
    assert.are.same({ 1, 2 }, { ds.data[1][1][1]:item(), ds.targets[1]:item() })
    -- both files replaced by older ones (as tar x leaves them), the images' copy removed
    local new = fill_root(tmp .. "/pair_new", 5, 4)
    assert(sh("touch -d '2001-01-01' " .. R.quote(new) .. "/*.gz && cp -p " .. R.quote(new) .. "/*.gz " .. R.quote(dir)))
    os.remove(tv.datasets.cache_path(dir .. "/train-images-idx3-ubyte.gz"))
    ds = tv.datasets.FashionMNIST({ root = dir })
    assert.are.same({ 5, 6 }, { ds.data[1][1][1]:item(), ds.targets[1]:item() })
  end)

  it("a FIFO in place of a file is named at once, not waited on (nor called 'not found')", function()
    local dir = fill_root(tmp .. "/fifo", 1, 2)
    os.remove(dir .. "/train-images-idx3-ubyte.gz")
    assert(sh("mkfifo " .. R.quote(dir .. "/train-images-idx3-ubyte.gz")))
    H.errors(function() tv.datasets.FashionMNIST({ root = dir }) end,
      { dir .. "/train-images-idx3-ubyte.gz is a FIFO (named pipe), expected an IDX file" })
    H.errors(function() torch._read_idx(dir .. "/train-images-idx3-ubyte.gz") end, { "not a regular file but a FIFO" })
  end)
end)

describe("the IDX reader's limits", function()
  it("caps the bytes a file may announce at torchvision.datasets.max_bytes (1 GiB), with a message naming it", function()
    assert.are.equal(1 << 30, tv.datasets.max_bytes)
    local dir = mkdir(tmp .. "/cap")
    write(dir .. "/train-labels-idx1-ubyte", idx({ 3 }, "\1\2\3"))
    for _, gz in ipairs({ false, true }) do
      local p = write(dir .. "/train-images-idx3-ubyte", idx({ 3, 4, 10 }, string.rep("\1", 120)))
      if gz then p = gzip(p); os.remove(dir .. "/train-images-idx3-ubyte") end
      tv.datasets.max_bytes = 100
      local ok, err = pcall(tv.datasets.FashionMNIST, { root = dir })
      tv.datasets.max_bytes = 1 << 30
      assert.is_false(ok)
      assert.truthy(tostring(err):find("announces 120 bytes of data, more than gshell's cap of 100 bytes "
        .. "(torchvision.datasets.max_bytes; raise it to read a bigger file)", 1, true), err)
      os.remove(p)
    end
    write(dir .. "/train-images-idx3-ubyte", idx({ 3, 4, 10 }, string.rep("\1", 120)))
    H.errors(function()
      tv.datasets.max_bytes = "lots"
      local ok, e = pcall(tv.datasets.FashionMNIST, { root = dir })
      tv.datasets.max_bytes = 1 << 30
      if not ok then error(e) end
    end, { "torchvision.datasets.max_bytes must be a positive integer" })
  end)

  it("refuses bytes after the gzip member, as it refuses a second member", function()
    local dir = mkdir(tmp .. "/after")
    local gz = gzip(write(dir .. "/a", idx({ 2, 2 }, "\1\2\3\4")))
    local z = file_bytes(gz)
    local junk = write(dir .. "/junk.gz", z .. "not gzip")
    H.errors(function() torch._read_idx(junk) end, { junk, "bytes after the gzip data" })
    local two = write(dir .. "/two.gz", z .. z)
    H.errors(function() torch._read_idx(two) end, { two, "trailing bytes" })
    assert.are.same({ { 1, 2 }, { 3, 4 } }, torch._read_idx(gz):tolist())
  end)

  it("names a damaged gzip trailer (CRC-32 or length) as such, not as corrupt data in the header", function()
    local dir = mkdir(tmp .. "/trailer")
    local z = file_bytes(gzip(write(dir .. "/t", idx({ 2, 2 }, "\1\2\3\4"))))
    local crc = write(dir .. "/crc.gz", z:sub(1, -9) .. string.char((z:byte(-8) + 1) % 256) .. z:sub(-7))
    H.errors(function() torch._read_idx(crc) end, { crc, "damaged gzip file: the CRC-32 in its trailer does not match" })
    local len = write(dir .. "/len.gz", z:sub(1, -5) .. string.char((z:byte(-4) + 1) % 256) .. z:sub(-3))
    H.errors(function() torch._read_idx(len) end, { len, "damaged gzip file: the length in its trailer does not match" })
  end)
end)
