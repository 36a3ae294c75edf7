-- How gshell finds the CUDA libraries it opens at run time (src/core/gs_dlopen.c):
-- next to the binary, on the loader's path, and in pip's nvidia wheels under
-- python3's site-packages; and what torch.cuda.unavailable_reason() says on
-- a machine with no NVIDIA driver at all (this one).
--
-- The loader is driven through a small C program (spec/support/c/
-- dlopen_probe.c) compiled with src/core/gs_dlopen.c, against fake libraries
-- laid out as the wheels lay out theirs. The fake library depends on a
-- second one in the same directory, as libcublas depends on libcublasLt.
local torch = require("torch")

-- (the sanitizer build preloads its runtime, which would flag leaks in cc and mktemp)
local function sh(cmd)
  local p = assert(io.popen("unset LD_PRELOAD; " .. cmd .. " 2>&1", "r"))
  local out = p:read("a")
  local ok = p:close()
  return out, ok
end

local tmp
local function must(cmd)
  local out, ok = sh(cmd)
  assert(ok, cmd .. "\n" .. out)
  return out
end

-- Runs the probe with a clean loader environment (PATH given, no
-- LD_LIBRARY_PATH unless given, no sanitizer preload).
local function probe(args, path, ld, exe)
  local env = "env -u LD_PRELOAD -u LD_LIBRARY_PATH -u VIRTUAL_ENV -u CONDA_PREFIX HOME=" .. tmp .. "/home PATH='" .. path .. "'"
  if ld then env = env .. " LD_LIBRARY_PATH='" .. ld .. "'" end
  return sh(env .. " " .. (exe or tmp .. "/bin/probe") .. " " .. args)
end

-- Puts the fake library (and its dependency) in dir.
local function install(dir)
  must("mkdir -p " .. dir .. " && cp " .. tmp .. "/made/libgsfake.so.1 " .. tmp .. "/made/libgsdep.so.1 " .. dir)
end

-- A Python prefix with bin/python3 (a stub: it is only looked at, never run).
local function python_prefix(prefix)
  must("mkdir -p " .. prefix .. "/bin && printf '#!/bin/sh\\nexit 1\\n' > " .. prefix .. "/bin/python3 && chmod +x "
    .. prefix .. "/bin/python3")
end

local SYS = "/usr/bin:/bin"
local FAKE = "fake libgsfake.so.1 libgsdep.so.1 gsfake"

describe("finding CUDA libraries (gs_dlopen)", function()
  setup(function()
    tmp = must("mktemp -d"):gsub("%s+$", "")
    must("mkdir -p " .. tmp .. "/made " .. tmp .. "/bin " .. tmp .. "/home")
    must("printf 'int gs_fake_dep(void) { return 41; }\\n' > " .. tmp .. "/dep.c")
    must("printf 'int gs_fake_dep(void);\\nint gs_fake(void) { return gs_fake_dep() + 1; }\\n' > " .. tmp .. "/fake.c")
    must("cc -shared -fPIC -Wl,-soname,libgsdep.so.1 -o " .. tmp .. "/made/libgsdep.so.1 " .. tmp .. "/dep.c")
    must("cc -shared -fPIC -Wl,-soname,libgsfake.so.1 -o " .. tmp .. "/made/libgsfake.so.1 " .. tmp .. "/fake.c "
      .. tmp .. "/made/libgsdep.so.1")
    must("cc -std=gnu11 -Isrc -o " .. tmp .. "/bin/probe spec/support/c/dlopen_probe.c src/core/gs_dlopen.c -ldl")
  end)
  teardown(function() if tmp then os.execute("rm -rf " .. tmp) end end)

  -- Installs the library under a fake python3's prefix at sub and expects it found there.
  local function finds_in_wheel(name, sub)
    local prefix = tmp .. "/" .. name
    python_prefix(prefix)
    local dir = prefix .. sub
    install(dir)
    assert.are.equal("found fake " .. dir .. "/libgsfake.so.1\n", probe(FAKE, prefix .. "/bin:" .. SYS))
  end
  it("finds a library in nvidia/cu13/lib under python3's site-packages (CUDA 13 wheels)", function()
    finds_in_wheel("venv13", "/lib/python3.12/site-packages/nvidia/cu13/lib")
  end)
  it("finds a library in its own wheel directory nvidia/NAME/lib (CUDA 12 wheels), dist-packages too", function()
    finds_in_wheel("venv12", "/lib/python3.11/dist-packages/nvidia/gsfake/lib")
  end)

  it("opens the dependency from the same directory first (as libcublasLt for libcublas)", function()
    local prefix = tmp .. "/venvdep"
    python_prefix(prefix)
    install(prefix .. "/lib/python3.12/site-packages/nvidia/cu13/lib")
    local out = probe("fake libgsfake.so.1 - gsfake", prefix .. "/bin:" .. SYS)
    assert.truthy(out:find("^missing "), out)
    assert.truthy(out:find("libgsdep.so.1", 1, true), "the loader's reason names the missing dependency: " .. out)
  end)

  it("finds a library on LD_LIBRARY_PATH", function()
    local dir = tmp .. "/ldpath"
    install(dir)
    local out = probe(FAKE, SYS, dir)
    assert.are.equal("found fake " .. dir .. "/libgsfake.so.1\n", out)
  end)

  it("finds a library next to the binary, before anywhere else", function()
    local dir = tmp .. "/bundle"
    install(dir)
    must("cp " .. tmp .. "/bin/probe " .. dir .. "/probe")
    local other = tmp .. "/other"
    install(other)
    local out = probe(FAKE, SYS, other, dir .. "/probe")
    assert.are.equal("found fake " .. dir .. "/libgsfake.so.1\n", out)
  end)

  it("when nothing has it, says where it looked and how to fix it", function()
    local prefix = tmp .. "/empty"
    python_prefix(prefix)
    must("mkdir -p " .. prefix .. "/lib/python3.12/site-packages")
    local out = probe(FAKE, prefix .. "/bin:" .. SYS)
    assert.truthy(out:find("^missing libgsfake.so.1 could not be loaded"), out)
    for _, needle in ipairs({ prefix .. "/lib/python3.12/site-packages", "nvidia/cu13/lib", "nvidia/gsfake/lib",
                              "next to the gshell binary", "LD_LIBRARY_PATH" }) do
      assert.truthy(out:find(needle, 1, true), "message lacks " .. needle .. ": " .. out)
    end
  end)
end)

describe("torch.cuda without an NVIDIA driver", function()
  local reason = torch.cuda.unavailable_reason()
  local cuda_build = reason == nil or not reason:find("built without CUDA", 1, true)
  local has_driver = package.loadlib("libcuda.so.1", "*") ~= nil

  if cuda_build and not has_driver then
    it("unavailable_reason says there is no NVIDIA driver, not that the driver is too old", function()
      assert.truthy(reason:find("no NVIDIA driver", 1, true), reason)
      assert.falsy(reason:find("insufficient", 1, true), reason)
      assert.truthy(reason:find("libcuda.so.1", 1, true), reason)
    end)
  else
    pending("needs a CUDA build on a machine without libcuda.so.1")
  end

  it("libraries() lists what was loaded: nothing here (no driver, no product on a GPU)", function()
    local libs = torch.cuda.libraries()
    assert.are.equal("table", type(libs))
    if not has_driver then assert.are.same({}, libs) end
    for i, l in ipairs(libs) do
      assert.are.equal(l.path, libs[l.name], "entry " .. i)
    end
  end)
end)

-- torch.cuda.nccl.version() opens NCCL as a real GPU's first collective
-- would, so a one-GPU machine (no collective to run) can check that gshell
-- finds it. Driven here with a stand-in libnccl.so.2 on LD_LIBRARY_PATH
-- whose ncclGetVersion says 2.21.5.
describe("torch.cuda.nccl.version()", function()
  local R = require("gshell_run")
  local reason = torch.cuda.unavailable_reason()
  local cuda_build = reason == nil or not reason:find("built without CUDA", 1, true)

  if not cuda_build then
    it("says that a gshell built without CUDA never loads NCCL", function()
      local ok, err = pcall(torch.cuda.nccl.version)
      assert.is_false(ok)
      assert.truthy(tostring(err):find("built without CUDA", 1, true), tostring(err))
    end)
    return
  end

  it("loads NCCL, decodes its version code and lists it in torch.cuda.libraries()", function()
    local dir = sh("mktemp -d"):gsub("%s+$", "")
    local fns = { "ncclGetUniqueId", "ncclCommInitAll", "ncclCommInitRank", "ncclCommDestroy", "ncclGroupStart",
                  "ncclGroupEnd", "ncclBroadcast", "ncclReduce", "ncclAllReduce", "ncclAllGather", "ncclReduceScatter" }
    local src = { "const char *ncclGetErrorString(int r) { (void)r; return \"stand-in\"; }",
                  "int ncclGetVersion(int *v) { *v = 22105; return 0; }" }
    for _, f in ipairs(fns) do src[#src + 1] = "int " .. f .. "(void) { return 1; }" end
    R.write_file(dir .. "/nccl.c", table.concat(src, "\n") .. "\n")
    local out, ok = sh("cc -shared -fPIC -Wl,-soname,libnccl.so.2 -o " .. dir .. "/libnccl.so.2 " .. dir .. "/nccl.c")
    assert(ok, out)
    local script = [[
print("version", torch.cuda.nccl.version())
print("listed", torch.cuda.libraries().nccl)
]]
    local res, err, code = R.run({ "-e", script }, "", { LD_LIBRARY_PATH = dir })
    os.execute("rm -rf " .. R.quote(dir))
    assert.are.equal(0, code, err)
    assert.truthy(res:find("version\t2\t21\t5\n", 1, true), res)
    assert.truthy(res:find("listed\t" .. dir .. "/libnccl.so.2\n", 1, true), res)
  end)
end)
