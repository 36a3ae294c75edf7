-- What the build produces: torch.so's exported symbols, which embedded Lua
-- modules each binary carries, header dependencies, and `make CFLAGS=...`
-- adding to the build's flags. Reads $GSHELL_BUILD (the build under test).
local build = os.getenv("GSHELL_BUILD") or "build"

local function run(cmd)
  local p = assert(io.popen(cmd .. " 2>&1", "r"))
  local out = p:read("a")
  local _, _, code = p:close()
  return out, code
end

local H = require("helpers")
local read_file = H.read_file

describe("torch.so", function()
  -- luaopen_torchvision: build/torchvision.so links to torch.so, so that
  -- require("torchvision") works in stock Lua before require("torch")
  -- xerbla_: OpenBLAS's error handler, replaced so a refused call is an
  -- error in the engine (src/backend/cpu/cpu_gemm.c, issue 33)
  it("exports luaopen_torch, luaopen_torchvision, xerbla_ and nothing else", function()
    local out, code = run("nm -D --defined-only " .. build .. "/torch.so")
    assert.are.equal(0, code, out)
    local names = {}
    for name in out:gmatch("%x+ %a ([%w_@.]+)") do names[#names + 1] = name end
    table.sort(names)
    assert.are.same({ "luaopen_torch", "luaopen_torchvision", "xerbla_" }, names)
  end)

  it("carries the library but not the shell's modules", function()
    require("torch")
    assert.are.equal("table", type(require("torch.nn")))
    local ok, err = pcall(require, "gshell.session")
    assert.is_false(ok)
    assert.truthy(err:find("module 'gshell.session' not found", 1, true), err)
    assert.is_nil(package.loaded["torch.shell.session"])
  end)
end)

describe("gshell binary", function()
  it("carries the shell's modules and their C core", function()
    local out, code = run("GSHELL_SIM_GPUS= " .. build .. "/gshell -e " ..
      "'print(type(require(\"gshell.session\").new), type(require(\"gshell.core\").capture_begin), " ..
      "pcall(require, \"torch.shell.session\"))'")
    assert.are.equal(0, code, out)
    assert.truthy(out:find("^function\tfunction\tfalse\t"), out)
  end)
end)

describe("make", function()
  it("tracks each object's headers (-MMD)", function()
    local deps = read_file(build .. "/obj/core/gs_tensor.d")
    assert.truthy(deps:find("src/core/gs_tensor.h", 1, true), deps)
    assert.truthy(deps:find("src/core/gs_common.h", 1, true), deps)
  end)

  it("adds CFLAGS given on the command line after its own flags", function()
    -- (a clean environment: under `make test` the parent make passes its own
    -- variables down, command-line ones such as TSAN=1 through the environment)
    local out, code = run("env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -n -B CUDA=0 SANITIZE=0 TSAN=0 " ..
      "CFLAGS=-DGS_SPEC_EXTRA build/obj/core/gs_error.o")
    assert.are.equal(0, code, out)
    local line = out:match("[^\n]*src/core/gs_error%.c[^\n]*")
    assert.truthy(line, out)
    -- (-ffp-contract=off: no fused multiply-adds the source did not ask
    -- for, so the CPU's random numbers keep matching the GPU kernels')
    for _, want in ipairs({ "-Isrc", "-Wall", "-Wextra", "-fPIC", "-MMD", "-ffp-contract=off" }) do
      assert.truthy(line:find(want, 1, true), want .. " missing from: " .. line)
    end
    assert.truthy(line:find("-Isrc.*-DGS_SPEC_EXTRA"), line)
  end)
end)
