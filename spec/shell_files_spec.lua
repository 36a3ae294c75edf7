-- The shell's own files and inputs (issue 14): --md and --check --update
-- save as torch.save does (through symlinks, never over a FIFO); a
-- directory given as input says why it fails; os.exit inside a cell still
-- writes --md and fails a check; `...` matching takes linear time.
local torch = require("torch")
local build = os.getenv("GSHELL_BUILD") or "build"
local GSHELL = build .. "/gshell"

local function q(s) return "'" .. s:gsub("'", "'\\''") .. "'" end
local function sh(cmd) local ok = os.execute(cmd); return ok == true or ok == 0 end
local function write(path, s) local f = assert(io.open(path, "wb")); f:write(s); f:close() end
local function read(path) local f = assert(io.open(path, "rb")); local s = f:read("a"); f:close(); return s end

-- gshell args...: stdout, stderr, exit code
local function gshell(...)
  local parts = {}
  for i, a in ipairs({ ... }) do parts[i] = q(a) end
  local errf = os.tmpname()
  local p = assert(io.popen(("GSHELL_HISTORY= GSHELL_SIM_GPUS= timeout 60 %s %s </dev/null 2>%s"):format(
    GSHELL, table.concat(parts, " "), errf)))
  local out = p:read("a")
  local _, _, code = p:close()
  local err = read(errf)
  os.remove(errf)
  return out, err, code
end

local dir
before_each(function() local p = io.popen("mktemp -d"); dir = p:read("l"); p:close() end)
after_each(function() sh("rm -rf " .. q(dir)) end)

describe("the shell's saves", function()
  it("--md writes through a symlink and refuses a FIFO", function()
    write(dir .. "/nb.lua", "print(1 + 1)\n")
    assert.is_true(sh("ln -s real.md " .. q(dir .. "/link.md") .. " && mkfifo " .. q(dir .. "/pipe.md")))
    local _, err, code = gshell("--notebook", dir .. "/nb.lua", "--md", dir .. "/link.md")
    assert.are.equal(0, code, err)
    assert.is_true(sh("test -L " .. q(dir .. "/link.md")))
    assert.truthy(read(dir .. "/real.md"):find("```output\n2\n```", 1, true))
    _, err, code = gshell("--notebook", dir .. "/nb.lua", "--md", dir .. "/pipe.md")
    assert.are.equal(1, code)
    assert.truthy(err:find("FIFO", 1, true), err)
    assert.is_true(sh("test -p " .. q(dir .. "/pipe.md")))
  end)

  it("--check --update writes through a symlink", function()
    write(dir .. "/doc.md", "```lua\nprint(6 * 7)\n```\n\n```output\nold\n```\n")
    assert.is_true(sh("ln -s doc.md " .. q(dir .. "/link.md")))
    local _, err, code = gshell("--check", dir .. "/link.md", "--update")
    assert.are.equal(0, code, err)
    assert.is_true(sh("test -L " .. q(dir .. "/link.md")))
    assert.truthy(read(dir .. "/doc.md"):find("```output\n42\n```", 1, true))
  end)

  it("--check and --notebook of a directory say why they fail", function()
    for _, mode in ipairs({ "--check", "--notebook" }) do
      local _, err, code = gshell(mode, dir)
      assert.are.equal(1, code)
      assert.truthy(err:find("cannot read " .. dir .. ": it is a directory, not a regular file", 1, true), err)
    end
  end)
end)

describe("os.exit inside a cell", function()
  it("in a notebook still writes --md and exits with its status", function()
    write(dir .. "/nb.lua", "print('before')\n-- %%\nos.exit(3)\n-- %%\nprint('never')\n")
    local out, err, code = gshell("--notebook", dir .. "/nb.lua", "--md", dir .. "/out.md")
    assert.are.equal(3, code, err)
    local md = read(dir .. "/out.md")
    assert.truthy(md:find("before", 1, true), md)
    assert.truthy(md:find("os.exit(3)", 1, true), md)
    assert.is_nil(out:find("never", 1, true))
  end)

  it("in a checked document fails the check", function()
    write(dir .. "/doc.md", "```lua\nos.exit(0)\n```\n")
    local out, _, code = gshell("--check", dir .. "/doc.md")
    assert.are.equal(1, code)
    assert.truthy(out:find("block 1 called os.exit(0)", 1, true), out)
  end)
end)

describe("`...` matching in --check", function()
  local function check_doc(printed, expected)
    write(dir .. "/doc.md", "```lua\nprint(" .. string.format("%q", printed) .. ")\n```\n\n```output\n" .. expected .. "\n```\n")
    local out, _, code = gshell("--check", dir .. "/doc.md")
    return code, out
  end

  it("keeps its meaning", function()
    assert.are.equal(0, (check_doc("abc", "a...c")))
    assert.are.equal(0, (check_doc("ac", "a...c")))
    assert.are.equal(0, (check_doc("x = 1.5 ms (7 runs)", "x = ... ms (... runs)")))
    assert.are.equal(0, (check_doc("a__b__b__c", "a...b...c")))
    assert.are.equal(0, (check_doc("50% of [x]", "50% of ...")))
    assert.are.equal(1, (check_doc("abd", "a...c")))
    assert.are.equal(1, (check_doc("aba", "ab...ba"))) -- prefix and suffix may not overlap
    assert.are.equal(1, (check_doc("a__c__b", "a...b...c")))
  end)

  it("takes linear time on lines that made the pattern matcher exponential", function()
    local t0 = torch.clock()
    assert.are.equal(1, (check_doc(string.rep("a", 200), "a...a...a...a...a...b")))
    assert.are.equal(1, (check_doc(string.rep("a", 10000), string.rep("a...", 300) .. "b")))
    local code, out = check_doc(string.rep("a", 10000), string.rep("a...", 300) .. "a")
    assert.are.equal(0, code, out)
    assert.is_true(torch.clock() - t0 < 20, "took " .. (torch.clock() - t0) .. " s")
  end)
end)

-- issue 23 Medium 8: a cell whose output holds a code fence ended its
-- output block early, and the next --check ran the printed text as code
describe("code fences inside cells and their output", function()
  it("--notebook --md picks fences longer than any run inside; --check of the file then passes", function()
    write(dir .. "/nb.lua", 'print("```lua"); print("os.exit(3)"); print("```")\n-- %%\n' ..
      'print("~~~~"); print("````")\n-- %%\nlocal s = "```"; print(#s)\n')
    local _, err, code = gshell("--notebook", dir .. "/nb.lua", "--md", dir .. "/nb.md")
    assert.are.equal(0, code, err)
    local md = read(dir .. "/nb.md")
    assert.truthy(md:find("````output\n```lua\nos.exit(3)\n```\n````\n", 1, true), md)
    assert.truthy(md:find("`````output\n~~~~\n````\n`````\n", 1, true), md)
    assert.truthy(md:find("````lua\nlocal s = \"```\"; print(#s)\n````\n", 1, true), md)
    local out
    out, err, code = gshell("--check", dir .. "/nb.md")
    assert.are.equal(0, code, out .. err)
    assert.truthy(out:find("3 blocks run, 3 compared, 0 failed", 1, true), out)
  end)

  it("--check --update writes a longer fence around new output that holds one; the next --check passes", function()
    write(dir .. "/doc.md", '```lua\nprint("```"); print("os.exit(4)")\n```\n\n```output\nold\n```\n\ntext after\n')
    local out, err, code = gshell("--check", dir .. "/doc.md", "--update")
    assert.are.equal(0, code, out .. err)
    assert.are.equal('```lua\nprint("```"); print("os.exit(4)")\n```\n\n````output\n```\nos.exit(4)\n````\n\ntext after\n',
      read(dir .. "/doc.md"))
    out, err, code = gshell("--check", dir .. "/doc.md")
    assert.are.equal(0, code, out .. err)
    assert.truthy(out:find("1 block run, 1 compared, 0 failed", 1, true), out)
    -- output without a fence inside keeps the document's fence
    write(dir .. "/plain.md", "```lua\nprint(6 * 7)\n```\n\n~~~output\nold\n~~~\n")
    _, err, code = gshell("--check", dir .. "/plain.md", "--update")
    assert.are.equal(0, code, err)
    assert.are.equal("```lua\nprint(6 * 7)\n```\n\n~~~output\n42\n~~~\n", read(dir .. "/plain.md"))
  end)
end)

-- (issue 23, Low) --check of a binary file or /dev/null passed with 0
-- blocks, an unterminated fence compared nothing, and --check/--notebook
-- blocked on a FIFO and read /dev/zero forever
describe("inputs that --check and --notebook refuse", function()
  it("devices and FIFOs are refused at once, naming what they are", function()
    assert.is_true(sh("mkfifo " .. q(dir .. "/fifo")))
    for _, mode in ipairs({ "--check", "--notebook" }) do
      for path, kind in pairs({ ["/dev/null"] = "a character device", ["/dev/zero"] = "a character device",
                                [dir .. "/fifo"] = "a FIFO (named pipe)" }) do
        local _, err, code = gshell(mode, path)
        assert.are.equal(1, code, mode .. " " .. path)
        assert.truthy(err:find("cannot read " .. path .. ": it is " .. kind .. ", not a regular file", 1, true), err)
      end
    end
  end)

  it("a binary file is not a document; a document with a fence left open fails", function()
    write(dir .. "/bin.md", "```lua\nprint(1)\n```\n\0\1\2")
    local _, err, code = gshell("--check", dir .. "/bin.md")
    assert.are.equal(1, code)
    assert.truthy(err:find("it is not a text file (it holds NUL bytes)", 1, true), err)
    write(dir .. "/open.md", "```lua\nprint(1)\n```\n\n```output\n2\n")
    _, err, code = gshell("--check", dir .. "/open.md")
    assert.are.equal(1, code)
    assert.truthy(err:find("open.md:5: this fenced block is never closed", 1, true), err)
    -- a good document still checks
    write(dir .. "/good.md", "```lua\nprint(1)\n```\n\n```output\n1\n```\n")
    local out
    out, err, code = gshell("--check", dir .. "/good.md")
    assert.are.equal(0, code, out .. err)
  end)
end)
