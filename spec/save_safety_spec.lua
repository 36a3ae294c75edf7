-- Saving never damages what is at the path (issue 14): special files are
-- refused, symbolic links are written through to their target, a path
-- with a NUL byte is refused, temporary files of a killed save are
-- cleaned up by the next save, and loading a FIFO fails at once instead of
-- waiting for a writer. Everything runs in a fresh temporary directory;
-- nothing needs root (the FIFO stands for every non-regular file: the
-- same check refuses /dev/null, which a spec must never risk).
local torch = require("torch")
local H = require("helpers")

local function sh(cmd)
  local ok = os.execute(cmd)
  return ok == true or ok == 0
end

local function q(s) return "'" .. s:gsub("'", "'\\''") .. "'" end

local function ls(dir)
  local p = io.popen("ls -A " .. q(dir))
  local names = {}
  for l in p:lines() do names[#names + 1] = l end
  p:close()
  table.sort(names)
  return names
end

local dir
before_each(function()
  local p = io.popen("mktemp -d")
  dir = p:read("l")
  p:close()
end)
after_each(function() sh("rm -rf " .. q(dir)) end)

describe("torch.save destinations", function()
  it("refuses a FIFO and leaves it a FIFO", function()
    local fifo = dir .. "/pipe"
    assert.is_true(sh("mkfifo " .. q(fifo)))
    H.errors(function() torch.save(torch.ones(2), fifo) end, {"cannot save to '" .. fifo .. "'", "FIFO", "not a regular file"})
    assert.is_true(sh("test -p " .. q(fifo)))
    assert.are.same({"pipe"}, ls(dir))
  end)

  it("refuses a directory", function()
    H.errors(function() torch.save(torch.ones(2), dir) end, {"a directory", "not a regular file"})
  end)

  it("refuses a symbolic link to a FIFO, naming both", function()
    assert.is_true(sh("mkfifo " .. q(dir .. "/pipe") .. " && ln -s pipe " .. q(dir .. "/link")))
    H.errors(function() torch.save(torch.ones(2), dir .. "/link") end, {"links to", "FIFO"})
    assert.is_true(sh("test -L " .. q(dir .. "/link") .. " && test -p " .. q(dir .. "/pipe")))
  end)

  it("writes through a symbolic link to its target, keeping the link", function()
    local target, link = dir .. "/real.safetensors", dir .. "/link.safetensors"
    torch.save(torch.zeros(2), target)
    assert.is_true(sh("ln -s real.safetensors " .. q(link)))
    torch.save(torch.tensor({1.5, 2.5}), link)
    assert.is_true(sh("test -L " .. q(link)))
    H.assert_list_equal(torch.load(target):tolist(), {1.5, 2.5})
    H.assert_list_equal(torch.load(link):tolist(), {1.5, 2.5})
    assert.are.same({"link.safetensors", "real.safetensors"}, ls(dir))
  end)

  it("follows a chain of links, and creates the target of a dangling one", function()
    assert.is_true(sh("mkdir " .. q(dir .. "/sub") .. " && ln -s sub/final " .. q(dir .. "/a") .. " && ln -s a " .. q(dir .. "/b")))
    torch.save(torch.tensor({7.0}), dir .. "/b")
    assert.is_true(sh("test -L " .. q(dir .. "/a") .. " && test -L " .. q(dir .. "/b") .. " && test -f " .. q(dir .. "/sub/final")))
    H.assert_list_equal(torch.load(dir .. "/sub/final"):tolist(), {7.0})
  end)

  it("refuses a loop of links", function()
    assert.is_true(sh("ln -s x " .. q(dir .. "/y") .. " && ln -s y " .. q(dir .. "/x")))
    H.errors(function() torch.save(torch.ones(1), dir .. "/x") end, "too many levels of symbolic links")
  end)

  it("keeps the mode of the file it replaces", function()
    local path = dir .. "/m.safetensors"
    torch.save(torch.ones(1), path)
    assert.is_true(sh("chmod 640 " .. q(path)))
    torch.save(torch.ones(2), path)
    local p = io.popen("stat -c %a " .. q(path))
    assert.are.equal("640", p:read("l"))
    p:close()
  end)

  it("refuses a path with a NUL byte instead of cutting it short", function()
    H.errors(function() torch.save(torch.ones(1), dir .. "/a\0b") end, "NUL")
    assert.are.same({}, ls(dir))
    H.errors(function() torch.load(dir .. "/a\0b") end, "NUL")
  end)

  it("removes temporary files of a killed save, not those of a live one", function()
    local path = dir .. "/w.safetensors"
    -- a process that has exited: its pid names a save that can never finish
    local p = io.popen("sh -c 'echo $$'")
    local dead = p:read("l")
    p:close()
    local stale = dir .. "/w.safetensors.tmp-" .. dead .. "-AbC123"
    local live = dir .. "/w.safetensors.tmp-1-XyZ789" -- pid 1 always exists
    local other = dir .. "/other.tmp-" .. dead .. "-AbC123"
    for _, f in ipairs({stale, live, other}) do assert.is_true(sh("echo partial > " .. q(f))) end
    torch.save(torch.ones(3), path)
    assert.are.same({"other.tmp-" .. dead .. "-AbC123", "w.safetensors", "w.safetensors.tmp-1-XyZ789"}, ls(dir))
    H.assert_list_equal(torch.load(path):tolist(), {1.0, 1.0, 1.0})
  end)
end)

describe("torch.load of special files", function()
  it("fails at once on a FIFO with no writer", function()
    local fifo = dir .. "/pipe"
    assert.is_true(sh("mkfifo " .. q(fifo)))
    -- in a child under a time limit, so a regression fails instead of hanging the suite
    local code = ("local torch = require('torch'); local ok, e = pcall(torch.load, %q); print(ok, e)"):format(fifo)
    local script = dir .. "/load.lua"
    local f = assert(io.open(script, "w"))
    f:write(code)
    f:close()
    local p = io.popen(("LUA_CPATH=%s LUA_PATH=%s timeout 20 lua5.4 %s 2>&1; echo rc=$?"):format(
      q(package.cpath), q(package.path), q(script)))
    local out = p:read("a")
    p:close()
    assert.truthy(out:find("false", 1, true), out)
    assert.truthy(out:find("FIFO", 1, true), out)
    assert.truthy(out:find("rc=0", 1, true), out)
  end)
end)
