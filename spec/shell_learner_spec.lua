-- The learner's shell: Python habits and slips get a hint naming the fix,
-- errors name the user's line, Ctrl-D drops an unfinished statement.
-- Runs $GSHELL_BUILD/gshell as a child process (spec/support/gshell_run.lua).
local R = require("gshell_run")

local function has(s, piece) return s:find(piece, 1, true) ~= nil end

describe("Ctrl-D", function()
  it("on a continuation line drops the statement; on an empty prompt leaves", function()
    local out, ok = R.pty({
      { expect = "gshell> " },
      { send = "for i = 1, 2 do\r" },
      { expect = "\\.\\.\\.> " },
      { send = "print('inside', i)\r" },
      { expect = "\\.\\.\\.> " },
      { send = "\4" },
      { expect = "abandoned" },
      { expect = "gshell> " },
      { send = "print('still' .. 'here')\r" },
      { expect = "stillhere" },
      { expect = "gshell> " },
      { send = "\4" },
    }, {})
    assert.is_true(ok, out)
    assert.falsy(has(out, "inside\t1"), out)
  end)

  it("at the end of piped input inside a statement says so and exits 0", function()
    local out, _, code = R.prompt({ "x = 1", "for i = 1, 2 do", "  print(i)" })
    assert.are.equal(0, code)
    assert.are.equal("(unfinished statement abandoned; Ctrl-D again to leave)\n", out)
  end)
end)

describe("Python habits", function()
  it("a method called with `.` gets the `:` form", function()
    local _, err = R.prompt({
      "net = nn.Sequential(nn.Linear(3, 1))",
      "net.parameters()",
      "x = torch.ones(2, 3)",
      "x.cuda(1)",
      "y = x.sum()",
      "opt = optim.SGD(net:parameters(), {lr = 0.1})",
      "opt.zero_grad()",
      "torch.ones(2)",  -- a function in a plain table: no hint, no error
    })
    assert.truthy(has(err, "hint: `net.parameters()` calls the method without its object; Lua needs a colon: `net:parameters()`"), err)
    assert.truthy(has(err, "`x:cuda(1)`"), err)
    assert.truthy(has(err, "`x:sum()`"), err)
    assert.truthy(has(err, "`opt:zero_grad()`"), err)
    assert.falsy(has(err, "torch:ones"), err)
    -- every error names the user's line, none a library file
    assert.falsy(has(err, "lua/torch/"), err)
    assert.truthy(has(err, "stdin:1: "), err)
  end)

  it("import torch is a note; other imports explain require", function()
    local out, err = R.prompt({ "import torch", "from torch import nn", "import numpy as np", "print(nn ~= nil)" })
    assert.truthy(has(out, "torch is already loaded in gshell"), out)
    assert.truthy(has(out, "true"), out)
    assert.truthy(has(err, "`import numpy as np` is Python; gshell speaks Lua"), err)
    assert.truthy(has(err, "require('numpy')"), err)
  end)

  it("!nvidia-smi without the program points to torch.cuda.smi() and %devices", function()
    local have = os.execute("command -v nvidia-smi >/dev/null 2>&1")
    local _, err = R.prompt({ "!nvidia-smi" })
    if not have then
      assert.truthy(has(err, "nvidia-smi is not installed here"), err)
      assert.truthy(has(err, "torch.cuda.smi()"), err)
      assert.truthy(has(err, "%devices"), err)
    end
  end)

  it("position 0 says positions are 1-based, naming the first", function()
    local _, err = R.prompt({ "net = nn.Sequential(nn.Linear(3, 1))", "net[0]", "x = torch.ones(2, 3)",
      "x.shape[0]", "x[0]" })
    assert.truthy(has(err, "stdin:1: Sequential index 0: positions are 1-based"), err)
    assert.truthy(has(err, "hint: positions are 1-based in Lua: the first is `net[1]`"), err)
    assert.truthy(has(err, "torch.Size index 0: positions are 1-based in gshell, the first size is shape[1]"), err)
    assert.truthy(has(err, "the first is `x.shape[1]`"), err)
    assert.truthy(has(err, "index 0 is out of range for dimension 1 of size 2: positions are 1-based in gshell"), err)
  end)

  it("torch.save(net, path) says modules are saved through net:state_dict()", function()
    local dir = R.tmpdir()
    local _, err = R.prompt({ "net = nn.Linear(2, 1)", "torch.save(net, '" .. dir .. "/n.st')" })
    assert.truthy(has(err, "stdin:1: torch.save: a module is saved through its state dict: " ..
      "torch.save(net:state_dict(), path)"), err)
    os.execute("rm -rf " .. R.quote(dir))
  end)
end)

describe("error locations", function()
  it("name the user's line for errors from the C engine, the Lua library and plain error()", function()
    local _, err = R.prompt({
      "local a = 1",
      "torch.ones(2) + torch.ones(3)",
      "nn.Linear(2, 'x')",
      "nn.Sequential(nn.Linear(2, 1))(torch.ones(1, 3))",
      "if true then\n  error('boom')\nend",
    }, { "--sim-gpus", "1" })
    local lines = {}
    for l in err:gmatch("[^\n]+") do lines[#lines + 1] = l end
    assert.are.equal(4, #lines, err)
    for _, l in ipairs(lines) do assert.truthy(l:match("^stdin:%d+: "), l) end
    assert.truthy(lines[4]:match("^stdin:2: boom"), err)
  end)

  it("%tb shows the failing call down to the user's line, without the shell's frames", function()
    local out = R.prompt({ "function f() error('deep') end", "f()", "%tb" })
    assert.truthy(has(out, "stdin:1: deep\nstack traceback:"), out)
    assert.truthy(has(out, "in function 'f'"), out)
    assert.truthy(has(out, "stdin:1: in main chunk"), out)
    assert.falsy(has(out, "xpcall"), out)
    assert.falsy(has(out, "lua/torch/shell"), out)
  end)

  it("a script's errors from the library name the script's line", function()
    local dir = R.tmpdir()
    R.write_file(dir .. "/s.lua", "local x = 1\nlocal net = nn.Linear(2, 1, {bais = true})\n")
    local _, err, code = R.run({ dir .. "/s.lua" })
    assert.are.equal(1, code)
    assert.truthy(err:find(dir .. "/s.lua:2: nn.Linear: unknown option 'bais'", 1, true), err)
    -- an engine error raised inside the library's Lua (Linear's forward)
    R.write_file(dir .. "/c.lua", "local net = nn.Linear(3, 1)\n\nlocal y = net(torch.ones(2, 5))\n")
    local _, err2, code2 = R.run({ dir .. "/c.lua" })
    assert.are.equal(1, code2)
    assert.truthy(err2:find("gshell: " .. dir .. "/c.lua:3: mat1 and mat2 shapes cannot be multiplied (2x5 and 3x1)\n", 1, true), err2)
    local _, err3 = R.prompt({ "net = nn.Linear(3, 1)", "net(torch.ones(2, 5))" })
    assert.are.equal("stdin:1: mat1 and mat2 shapes cannot be multiplied (2x5 and 3x1)\n", err3)
    os.execute("rm -rf " .. R.quote(dir))
  end)
end)

describe("what the prompt prints", function()
  it("an optimiser as PyTorch prints it; load_state_dict's result; nothing for no values", function()
    local out = R.prompt({
      "net = nn.Linear(2, 1)",
      "opt = optim.SGD(net:parameters(), {lr = 0.1, momentum = 0.9})",
      "opt",
      "net:load_state_dict(net:state_dict())",
      "net:load_state_dict({weight = net.weight}, {strict = false})",
      "opt:step()",
      "optim.Adam(net:parameters())",
    })
    assert.are.equal(table.concat({
      "SGD (",
      "Parameter Group 0",
      "    dampening: 0",
      "    lr: 0.1",
      "    maximize: False",
      "    momentum: 0.9",
      "    nesterov: False",
      "    weight_decay: 0",
      ")",
      "<All keys matched successfully>",
      "_IncompatibleKeys(missing_keys=['bias'], unexpected_keys=[])",
      "Adam (",
      "Parameter Group 0",
      "    amsgrad: False",
      "    betas: (0.9, 0.999)",
      "    eps: 1e-08",
      "    lr: 0.001",
      "    maximize: False",
      "    weight_decay: 0",
      ")",
    }, "\n") .. "\n", out)
  end)
end)

describe("magics as IPython", function()
  it("r = %timeit -o stmt assigns IPython's TimeitResult; local works too", function()
    local out, err = R.prompt({
      "x = torch.ones(10)",
      "r = %timeit -o -q -n 5 -r 3 x + x",
      "r.loops, r['repeat'], #r.all_runs, r.best <= r.average and r.average <= r.worst",
      "local q = %timeit -o -q -n 2 -r 1 x:sum()",
      "q.loops",
      "tostring(q):match('^<TimeitResult : .+ per loop %(mean ± std%. dev%. of 1 run, 2 loops each%)>$') ~= nil",
      "n = %timeit -q -n 1 -r 1 x + x",
      "n",
    })
    assert.are.equal("", err)
    assert.are.equal("5\t3\t3\ttrue\n2\ntrue\nnil\n", out)
  end)

  it("%history lists the cells, %save writes them, %reset forgets, %run runs a file in the session", function()
    local dir = R.tmpdir()
    local out, err = R.prompt({
      "a = 6",
      "local b = 7",
      "for i = 1, 2 do\n  a = a + 0\nend",
      "%history -n",
      "%save " .. dir .. "/s 1-2",
      "%reset -f",
      "print(a, b)",
      "%who",
      "%run " .. dir .. "/s.lua",
      "a * b",
      "%run " .. dir .. "/missing.lua",
    })
    assert.are.equal(table.concat({
      "   1: a = 6",
      "   2: local b = 7",
      "   3: for i = 1, 2 do",
      "        a = a + 0",
      "      end",
      "   4: %history -n",
      "The following commands were written to file `" .. dir .. "/s.lua`:",
      "a = 6",
      "local b = 7",
      "nil\tnil",
      "Interactive namespace is empty.",
      "42",
    }, "\n") .. "\n", out)
    assert.are.equal("a = 6\nlocal b = 7\n", R.read_file(dir .. "/s.lua"))
    assert.truthy(has(err, "%run: cannot open " .. dir .. "/missing.lua"), err)
    os.execute("rm -rf " .. R.quote(dir))
  end)

  it("%run gives the script arg and its errors name the script's line", function()
    local dir = R.tmpdir()
    R.write_file(dir .. "/a.lua", "got = arg[1] .. '/' .. select('#', ...)\nlocal z = nil\nz.field = 1\n")
    local out, err = R.prompt({ "before = arg", "%run " .. dir .. "/a.lua one two", "got", "arg == before" })
    assert.are.equal("one/2\ntrue\n", out)
    assert.truthy(has(err, dir .. "/a.lua:3: attempt to index a nil value"), err)
    os.execute("rm -rf " .. R.quote(dir))
  end)
end)

describe("completion and help for modules, optimizers, magics and help itself", function()
  local function lua_in_gshell(code)
    local out, err, status = R.run({ "-e", code }, nil, { GSHELL_SIM_GPUS = "0" })
    assert.are.equal(0, status, err)
    return out
  end

  it("%<Tab> after a line's leading % offers magic names, and only there", function()
    local out = lua_in_gshell([[
      local C = require("gshell.complete")
      local s = require("gshell.repl").start()
      tiny = 1
      print(table.concat(C.complete(s, "ti", "%"), " "))
      print(table.concat(C.complete(s, "ti", "  %"), " "))
      print(table.concat(C.complete(s, "ti", "x = "), " "))
      print(table.concat(C.complete(s, "les", "%"), " "))
    ]])
    assert.are.equal("time timeit\ntime timeit\ntiny\nlesson\n", out)
  end)

  it("net.<Tab>, net:<Tab> and model.module.<Tab> offer children, parameters and methods", function()
    local out = lua_in_gshell([[
      local C = require("gshell.complete")
      local s = require("gshell.repl").start()
      net = nn.Sequential(nn.Linear(3, 1)); net.fc = nn.Linear(1, 1)
      model = nn.DataParallel(net)
      opt = optim.SGD(net:parameters(), {lr = 0.1})
      for _, w in ipairs({ "net.f", "net:par", "model.module.f", "model.mo", "net.fc.we", "opt:ste", "opt.param" }) do
        print(w, table.concat(C.complete(s, w), " "))
      end
    ]])
    assert.are.equal(table.concat({
      "net.f\tnet.fc net.float net.forward",
      "net:par\tnet:parameters",
      "model.module.f\tmodel.module.fc model.module.float model.module.forward",
      "model.mo\tmodel.module model.modules",
      "net.fc.we\tnet.fc.weight",
      "opt:ste\topt:step",
      "opt.param\topt.param_groups",
    }, "\n") .. "\n", out)
  end)

  it("?net, help(opt), ?%timeit, help, ?help", function()
    local out = R.prompt({
      "net = nn.Sequential(nn.Linear(3, 1))",
      "?net",
      "help(optim.SGD(net:parameters(), {lr = 0.5}))",
      "?%timeit",
      "help",
      "?help",
      "?%nosuch",
    })
    assert.truthy(has(out, "net: Sequential (an nn.Module; call it: net(input))\nSequential(\n  (1): Linear(in_features=3, out_features=1, bias=True)\n)\nChildren: 1\nParameters: 1.weight [1, 3] on cpu, 1.bias [1] on cpu\nMethods: add,"), out)
    assert.truthy(has(out, "SGD (an optimizer over 2 parameter tensors; opt:zero_grad(), loss:backward(), opt:step())\nSGD (\nParameter Group 0"), out)
    assert.truthy(has(out, "    lr: 0.5\n"), out)
    assert.truthy(has(out, "%timeit [-n N] [-r R] stmt: time stmt over many loops, as IPython\n  -n N loops per run"), out)
    local _, n = out:gsub("help: the help system%.", "")
    assert.are.equal(2, n, out)
    assert.truthy(has(out, "  ?%timeit               help on a magic (%magic lists them)"), out)
    assert.truthy(has(out, "no magic '%nosuch' (%magic lists them)"), out)
  end)
end)
