-- The gshell program: command line, scripts and exit status, the prompt's
-- behaviour (driven through --repl-stdin: the prompt without readline,
-- prompts or banner), magics, --notebook and --check. Runs
-- $GSHELL_BUILD/gshell as a child process.
local build = os.getenv("GSHELL_BUILD") or "build"
local GSHELL = build .. "/gshell"
local FIX = "spec/fixtures/"

local function shell_quote(s)
  return "'" .. s:gsub("'", "'\\''") .. "'"
end

local H = require("helpers")
local read_file = H.read_file

local function write_file(path, s)
  local f = assert(io.open(path, "wb"))
  f:write(s)
  f:close()
end

-- Runs gshell with the given argument list and optional stdin text.
-- Returns stdout, stderr, exit code.
local function gshell(args, stdin)
  local parts = {}
  for i, a in ipairs(args or {}) do parts[i] = shell_quote(a) end
  local errf = os.tmpname()
  local inf = os.tmpname()
  write_file(inf, stdin or "")
  local cmd = string.format("GSHELL_HISTORY= GSHELL_SIM_GPUS= %s %s <%s 2>%s",
    GSHELL, table.concat(parts, " "), inf, errf)
  local p = assert(io.popen(cmd, "r"))
  local out = p:read("a")
  local _, _, code = p:close()
  local err = read_file(errf)
  os.remove(errf)
  os.remove(inf)
  return out, err, code
end

-- Lines typed at the prompt (without readline): stdout, stderr, code.
local function prompt(lines, extra)
  local args = { "--repl-stdin" }
  for _, a in ipairs(extra or {}) do args[#args + 1] = a end
  return gshell(args, table.concat(lines, "\n") .. "\n")
end

describe("gshell command line", function()
  it("--version prints the version", function()
    local out, _, code = gshell({ "--version" })
    assert.are.equal(0, code)
    assert.truthy(out:match("^gshell %d+%.%d+%.%d+ %(Lua 5%.4"))
  end)

  it("--help lists the options", function()
    local out, _, code = gshell({ "--help" })
    assert.are.equal(0, code)
    for _, opt in ipairs({ "-e", "-i", "--sim-gpus", "--notebook", "--md", "--check", "--update", "--repl-stdin" }) do
      assert.truthy(out:find(opt, 1, true), opt)
    end
  end)

  it("an unknown option is an error with status 1", function()
    local out, err, code = gshell({ "--bogus" })
    assert.are.equal(1, code)
    assert.are.equal("", out)
    assert.truthy(err:find("unrecognized option --bogus", 1, true))
  end)

  it("-e runs code, several in order", function()
    local out, _, code = gshell({ "-e", "x = 20", "-e", "print(x + 1)" })
    assert.are.equal(0, code)
    assert.are.equal("21\n", out)
  end)

  it("-e sees torch, nn and the helpers as globals", function()
    local out = gshell({ "-e", "print(type(torch), type(try_gpu), type(try_all_gpus), tostring(try_gpu()))" })
    assert.are.equal("table\tfunction\tfunction\tcpu\n", out)
  end)

  it("a failing -e exits 1 with the message on stderr", function()
    local out, err, code = gshell({ "-e", "error('bad')" })
    assert.are.equal(1, code)
    assert.are.equal("", out)
    assert.truthy(err:find("gshell: (command line):1: bad", 1, true))
  end)

  it("a script gets arg and ... as lua.c gives them", function()
    local out, _, code = gshell({ "--sim-gpus", "1", FIX .. "shell_args.lua", "a", "b c" })
    assert.are.equal(0, code)
    assert.truthy(out:find("arg0\t" .. FIX .. "shell_args.lua\n", 1, true))
    assert.truthy(out:find("args\ta,b c\n", 1, true))
    assert.truthy(out:find("dots\t2\ta\tb c\n", 1, true))
    assert.truthy(out:find("neg\t1\t--sim-gpus\n", 1, true))
  end)

  it("a failing script exits 1 with the error and a traceback on stderr", function()
    local out, err, code = gshell({ FIX .. "shell_fail.lua" })
    assert.are.equal(1, code)
    assert.are.equal("before\n", out)
    assert.truthy(err:find("gshell: " .. FIX .. "shell_fail.lua:3: boom from inner", 1, true))
    assert.truthy(err:find("stack traceback:", 1, true))
    assert.truthy(err:find("in local 'outer'", 1, true) or err:find("outer", 1, true))
  end)

  it("a missing script exits 1", function()
    local _, err, code = gshell({ "no/such/file.lua" })
    assert.are.equal(1, code)
    assert.truthy(err:find("cannot open no/such/file.lua", 1, true))
  end)

  it("--check and --notebook of a missing file exit 1, naming the file once", function()
    for _, mode in ipairs({ "--check", "--notebook" }) do
      local _, err, code = gshell({ mode, "no/such/doc.md" })
      assert.are.equal(1, code)
      assert.truthy(err:find("gshell: cannot open no/such/doc.md: No such file or directory", 1, true), err)
      assert.is_nil(err:find("no/such/doc.md.*no/such/doc.md"), err)
    end
  end)

  it("stdin that is not a terminal runs as a script, nothing auto-printed", function()
    local out, _, code = gshell({}, "local x = 2\nx = x + 1\nprint(x)\n")
    assert.are.equal(0, code)
    assert.are.equal("3\n", out)
  end)

  it("'-' runs stdin as a script with arguments, and its errors exit 1", function()
    local out, _, code = gshell({ "-", "q" }, "print(..., arg[1])\n")
    assert.are.equal(0, code)
    assert.are.equal("q\tq\n", out)
    local _, err, code2 = gshell({ "-" }, "error('from stdin')\n")
    assert.are.equal(1, code2)
    assert.truthy(err:find("stdin:1: from stdin", 1, true))
  end)

  it("--sim-gpus N makes N simulated CUDA devices", function()
    local out, _, code = gshell({ "--sim-gpus", "2", "-e",
      "print(torch.cuda.device_count(), torch.cuda.is_available(), torch.cuda.get_device_properties(1).simulated)" })
    assert.are.equal(0, code)
    assert.are.equal("2\ttrue\ttrue\n", out)
  end)

  it("--sim-gpus rejects a bad count", function()
    local _, err, code = gshell({ "--sim-gpus", "two", "-e", "" })
    assert.are.equal(1, code)
    assert.truthy(err:find("--sim-gpus", 1, true))
  end)
end)

describe("gshell prompt", function()
  it("prints expression values; several values separated by tabs", function()
    local out = prompt({ "1 + 2", "'s', 2, nil, true", "print('p')" })
    assert.are.equal("3\ns\t2\tnil\ttrue\np\n", out)
  end)

  it("pretty-prints tables, nested, strings quoted inside", function()
    local out = prompt({ "{1, 2, 'x', a = {b = 'c'}, ['two words'] = 1}" })
    assert.are.equal('{1, 2, "x", a = {b = "c"}, ["two words"] = 1}\n', out)
  end)

  it("splits long tables over lines and marks cycles", function()
    local out = prompt({ "t = {}; for i = 1, 30 do t[i] = i * 1000 end", "t",
      "c = {name = 'c'}; c.self = c", "c" })
    assert.truthy(out:find("^{\n  1000,\n  2000,\n"))
    assert.truthy(out:find('{name = "c", self = <cycle>}\n', 1, true))
  end)

  it("shows tensors, devices and sizes with tostring", function()
    local out = prompt({ "torch.ones(2, 2)", "torch.device('cpu')", "torch.ones(2, 3).shape" })
    assert.are.equal("tensor([[1., 1.],\n        [1., 1.]])\ndevice(type='cpu')\ntorch.Size([2, 3])\n", out)
  end)

  it("keeps locals between lines without making them globals", function()
    local out = prompt({
      "local a, b = 1, 2",
      "local function fact(n) if n < 2 then return 1 end return n * fact(n - 1) end",
      "local print = print",
      "local c <const> = a + b",
      "a, b, fact(5), c",
      "rawget(_G, 'a'), rawget(_G, 'fact')",
    })
    assert.are.equal("1\t2\t120\t3\nnil\tnil\n", out)
  end)

  it("functions see later changes of prompt locals", function()
    local out = prompt({ "local k = 1", "function getk() return k end", "k = 5", "getk()" })
    assert.are.equal("5\n", out)
  end)

  it("_ holds the last printed value; a trailing ; prints nothing", function()
    local out = prompt({ "40 + 2", "_ + 1", "99;", "_", "local z = 7;", "z" })
    assert.are.equal("42\n43\n43\n7\n", out)
  end)

  it("an error is printed and the session goes on", function()
    local out, err, code = prompt({ "x = 1", "error('oops')", "nosuch()", "x + 1" })
    assert.are.equal(0, code)
    assert.are.equal("2\n", out)
    assert.truthy(err:find("stdin:1: oops", 1, true))
    assert.truthy(err:find("attempt to call a nil value (global 'nosuch')", 1, true))
  end)

  it("syntax errors are reported, unfinished statements continue", function()
    local out, err = prompt({ "x = = 1", "for i = 1, 3 do", "  io.write(i, ' ')", "end", "print()",
      "s = [[a", "b]]", "s" })
    assert.are.equal("1 2 3 \na\nb\n", out)
    assert.truthy(err:find("unexpected symbol near '='", 1, true))
  end)

  it("a multi-line input shows its last expression", function()
    local out = prompt({ "do local q = 1 end; local w = 3", "w * 2" })
    assert.are.equal("6\n", out)
  end)

  it("%who lists user variables", function()
    local out = prompt({ "%who", "local alpha = 1", "beta = 2", "%who" })
    assert.are.equal("Interactive namespace is empty.\nalpha\tbeta\n", out)
  end)

  it("%time prints the times and the value", function()
    local out = prompt({ "%time 6 * 7" })
    assert.truthy(out:match("^CPU time: [%d%.]+ %S?%S?s\nWall time: [%d%.]+ %S?%S?s\n42\n$"), out)
  end)

  it("%timeit prints IPython's summary line", function()
    local out = prompt({ "x = torch.ones(10)", "%timeit -n 20 -r 3 x + x", "%timeit local y = 1" })
    local lines = {}
    for l in out:gmatch("[^\n]+") do lines[#lines + 1] = l end
    assert.truthy(lines[1]:match("^[%d%.]+ %S?%S?s ± [%d%.]+ %S?%S?s per loop %(mean ± std%. dev%. of 3 runs, 20 loops each%)$"), lines[1])
    assert.truthy(lines[2]:match("^[%d%.]+ %S?%S?s ± [%d%.]+ %S?%S?s per loop %(mean ± std%. dev%. of %d runs?, [%d,]+ loops? each%)$"), lines[2])
  end)

  -- (issue 23, Low) -n 0 and -r 0 printed nan, -n 1e99 ran once
  it("%timeit refuses a loop or run count that is not a whole number from 1 to 1e9", function()
    local printed, out = prompt({ "%timeit -n 0 local a = 1", "%timeit -r 0 local a = 1",
      "%timeit -n 1e99 local a = 1", "%timeit -n 2x local a = 1", "%timeit -r -3 local a = 1",
      "%timeit -n 2000000000 local a = 1", "print('next')" })
    assert.are.equal("next\n", printed)
    assert.is_nil(out:find("nan", 1, true), out)
    assert.is_nil(out:find("per loop", 1, true), out)
    for _, bad in ipairs({ "n wants a whole number of loops from 1 to 1000000000, not '0'",
                           "r wants a whole number of runs from 1 to 1000000000, not '0'",
                           "n wants a whole number of loops from 1 to 1000000000, not '1e99'",
                           "n wants a whole number of loops from 1 to 1000000000, not '2x'",
                           "r wants a whole number of runs from 1 to 1000000000, not '-3'",
                           "n wants a whole number of loops from 1 to 1000000000, not '2000000000'" }) do
      assert.truthy(out:find("%timeit: -" .. bad, 1, true), out)
    end
  end)

  it("%devices lists the CPU and simulated devices", function()
    local out = prompt({ "%devices" }, { "--sim-gpus", "2" })
    assert.truthy(out:find("cpu", 1, true))
    assert.truthy(out:find("cuda:0", 1, true))
    assert.truthy(out:find("cuda:1", 1, true))
    assert.truthy(out:find("simulated", 1, true))
  end)

  it("help: ?name, name?, help(obj), and unknown names", function()
    local out = prompt({ "?torch.ones", "torch.cuda.synchronize?", "help(torch.zeros)", "x = torch.ones(2)",
      "?x:sum", "?nosuch.thing" })
    assert.truthy(out:find("torch.ones(size...", 1, true))
    assert.truthy(out:find("torch.cuda.synchronize([dev])", 1, true))
    assert.truthy(out:find("torch.zeros(size...", 1, true))
    assert.truthy(out:find("x:sum(", 1, true))
    assert.truthy(out:find("no help for 'nosuch.thing'", 1, true))
  end)

  it("!cmd runs a shell command; unknown magics are errors", function()
    local out, err = prompt({ "!echo from-the-shell", "%nosuchmagic" })
    assert.are.equal("from-the-shell\n", out)
    assert.truthy(err:find("unknown magic %nosuchmagic", 1, true))
  end)

  it("runs a script first (-i) and keeps its locals", function()
    local out = prompt({ "answer, twice(answer)" }, { FIX .. "shell_locals.lua" })
    assert.are.equal("42\t84\n", out)
  end)

  it("os.exit leaves with its status", function()
    local _, _, code = prompt({ "os.exit(3)" })
    assert.are.equal(3, code)
  end)
end)

describe("gshell cell rewriting", function()
  -- Runs Lua code inside gshell (where the shell's modules load) and
  -- returns what it printed.
  local function inside(code)
    local out, err, code_ = gshell({ "-e", code })
    assert.are.equal(0, code_, err)
    return out
  end

  it("rewrites only top-level locals, keeping newlines, and the result compiles", function()
    local out = inside([=[
      local S = require "gshell.session"
      local cases = {
        "local a = {f = function() local b = 1 return b end}",
        "local s = [[local z = 1]] local w = 'local'",
        "local t = f \"str\" local u = f{1}",
        "local x = 1 -- comment\nlocal y = x",
        "local function f() end local g = f",
        "local a, b",
        "local x = a.b:c(d)[e] x = 2",
        "local x = 1 +\n 2\nprint(x)",
        "if true then local q = 1 end",
        "local c <close> = nil",
      }
      for _, c in ipairs(cases) do
        local r = S.rewrite_locals(c)
        local _, n1 = c:gsub("\n", "")
        local _, n2 = r:gsub("\n", "")
        print(n1 == n2, load(r) ~= nil, (r:gsub("\n", "|")))
      end]=])
    local expected = {
      'true\ttrue\ta = __gshell_decl({"a"},  {f = function() local b = 1 return b end})',
      "true\ttrue\ts = __gshell_decl({\"s\"},  [[local z = 1]]) w = __gshell_decl({\"w\"},  'local')",
      'true\ttrue\tt = __gshell_decl({"t"},  f "str") u = __gshell_decl({"u"},  f{1})',
      'true\ttrue\tx = __gshell_decl({"x"},  1) -- comment|y = __gshell_decl({"y"},  x)',
      'true\ttrue\t;__gshell_decl({"f"}); function f() end g = __gshell_decl({"g"},  f)',
      'true\ttrue\ta, b = __gshell_decl({"a", "b"})',
      'true\ttrue\tx = __gshell_decl({"x"},  a.b:c(d)[e]) x = 2',
      'true\ttrue\tx = __gshell_decl({"x"},  1 +| 2)|print(x)',
      'true\ttrue\tif true then local q = 1 end',
      'true\ttrue\tlocal c <close> = nil',
    }
    assert.are.equal(table.concat(expected, "\n") .. "\n", out)
  end)

  it("returns the last statement only when it starts a new expression", function()
    local out = inside([[
      local S = require "gshell.session"
      print(S.return_last("x = 1\ny"))
      print(S.return_last("x = a\n-b"))
      print(S.return_last("f(a,\n  b)"))
      print(S.return_last("x = 1; x"))
      print(S.return_last("for i = 1, 2 do end"))]])
    assert.are.equal("x = 1\nreturn y\nnil\nnil\nx = 1; return x\nnil\n", out)
  end)
end)

describe("gshell --notebook", function()
  it("prints In [n] / Out[n] like Jupyter and exits 1 when a cell fails", function()
    local out, err, code = gshell({ "--notebook", FIX .. "shell_notebook.lua" })
    assert.are.equal(1, code)
    assert.truthy(out:find("In [1]: local x = torch.ones(2, 3)\n   ...: local n = 0\n", 1, true))
    assert.truthy(out:find("Out[1]: 10\n", 1, true))
    assert.truthy(out:find("In [2]: print(\"printed first\")\n   ...: x:sum()\nprinted first\nOut[2]: tensor(6.)\n", 1, true))
    assert.falsy(out:find("Out[3]", 1, true))
    assert.truthy(out:find("In[4]:1: attempt to call a nil value (global 'nosuch')", 1, true))
    assert.truthy(err:find("1 of 4 cells failed", 1, true))
  end)

  it("--md writes Markdown that --check accepts", function()
    local md = os.tmpname()
    gshell({ "--notebook", FIX .. "shell_notebook.lua", "--md", md })
    local text = read_file(md)
    assert.truthy(text:find("# A notebook\nCells start at `-- %%` lines.\n", 1, true))
    assert.truthy(text:find("```lua\nprint(\"printed first\")\nx:sum()\n```\n\n```output\nprinted first\ntensor(6.)\n```\n", 1, true))
    local out, _, code = gshell({ "--check", md })
    os.remove(md)
    assert.are.equal(0, code, out)
    assert.truthy(out:find("4 blocks run, 3 compared, 0 failed", 1, true))
  end)
end)

describe("gshell --check", function()
  it("passes a document whose outputs match (wildcards, errors, skipped blocks)", function()
    local out, _, code = gshell({ "--check", FIX .. "shell_doc_ok.md" })
    assert.are.equal(0, code, out)
    assert.truthy(out:find("6 blocks run, 5 compared, 0 failed", 1, true))
  end)

  it("reports each difference with its line, expected and got; exit 1", function()
    local out, _, code = gshell({ "--check", FIX .. "shell_doc_bad.md" })
    assert.are.equal(1, code)
    assert.truthy(out:find(FIX .. "shell_doc_bad.md:17: lua block 2 (line 12): output differs\n  expected:\n    21\n  got:\n    20\n", 1, true))
    assert.truthy(out:find("lua block 3 failed: In[3]:1: attempt to call a nil value", 1, true))
    assert.truthy(out:find("3 blocks run, 2 compared, 2 failed", 1, true))
  end)

  it("--update rewrites the blocks that differ, then the check passes", function()
    local doc = os.tmpname()
    write_file(doc, read_file(FIX .. "shell_doc_bad.md"):gsub("nosuch_function%(%)", "print('fixed')"))
    local _, _, code = gshell({ "--check", doc, "--update" })
    assert.are.equal(0, code)
    local text = read_file(doc)
    assert.truthy(text:find("```lua\na * 10\n```\n\n```output\n20\n```\n", 1, true))
    local out, _, code2 = gshell({ "--check", doc })
    os.remove(doc)
    assert.are.equal(0, code2, out)
  end)
end)
