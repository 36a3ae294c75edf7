-- No silent nil, no silent == (issue 22, item 5): a tensor has a fixed
-- set of fields and methods, so reading another name is an error naming
-- the closest one; `==` on two different tensors is an error pointing to
-- eq/equal, since Lua's == cannot give PyTorch's elementwise tensor.
-- Modules keep Lua's plain nil for absent fields.
local torch = require("torch")
local nn = torch.nn
local R = require("gshell_run")

local function err_of(f, ...)
  local ok, e = pcall(f, ...)
  assert.is_false(ok, "expected an error")
  return tostring(e)
end

describe("tensor fields", function()
  local x = torch.ones(2, 3)

  it("a misspelt field names the closest field", function()
    local e = err_of(function() return x.devcie end)
    assert.truthy(e:find("a tensor has no field or method 'devcie' (did you mean 'device'?)", 1, true), e)
    e = err_of(function() return x.shpe end)
    assert.truthy(e:find("(did you mean 'shape'?)", 1, true), e)
    e = err_of(function() return x.requires_grd end)
    assert.truthy(e:find("(did you mean 'requires_grad'?)", 1, true), e)
  end)

  it("a misspelt method names the method and the colon call", function()
    local e = err_of(function() return x.reshap end)
    assert.truthy(e:find("did you mean the method 'reshape'? call it as x:reshape(...)", 1, true), e)
    e = err_of(function() return x:mena() end)
    assert.truthy(e:find("'mean'", 1, true), e)
  end)

  it("a name close to nothing lists the fields", function()
    local e = err_of(function() return x.foo end)
    assert.truthy(e:find("a tensor has no field or method 'foo': its fields are device, dtype, shape", 1, true), e)
    assert.truthy(e:find("help(x) lists its methods", 1, true), e)
  end)

  it("every real field and method still reads; protocol probes (_name) stay nil", function()
    for _, k in ipairs({ "device", "dtype", "shape", "ndim", "is_cuda", "is_leaf", "requires_grad", "data", "T" }) do
      assert.is_not_nil(x[k], k)
    end
    assert.is_nil(x.grad)     -- a real field whose value is nil
    assert.is_nil(x.grad_fn)
    assert.are.equal("function", type(x.sum))
    assert.is_nil(x._repr_html_)
  end)

  it("numbers and index tables still index", function()
    assert.are.equal(1, x[1][2]:item())
    assert.are.equal(2, x[{ {}, 2 }].shape[1])
  end)
end)

describe("== on tensors", function()
  it("two different tensors: an error pointing to eq and equal", function()
    local e = err_of(function() return torch.ones(2) == torch.ones(2) end)
    assert.truthy(e:find("== on two tensors", 1, true), e)
    assert.truthy(e:find("x:eq(y)", 1, true), e)
    assert.truthy(e:find("x:equal(y)", 1, true), e)
    e = err_of(function() return torch.ones(2) ~= torch.zeros(2) end)
    assert.truthy(e:find("== on two tensors", 1, true), e)
  end)

  it("the same object is still == to itself; other types compare false", function()
    local x = torch.ones(2)
    local y = x
    assert.is_true(x == y)
    assert.is_false(x ~= y)
    assert.is_false(x == 1)
    assert.is_false(x == nil)
    assert.is_false(x == torch.device("cpu"))
    assert.is_true(rawequal(x, y))
    assert.is_false(rawequal(x, torch.ones(2)))
    -- eq and equal give the answers == cannot
    assert.is_true(torch.ones(2):equal(torch.ones(2)))
    assert.are.same({ true, true }, torch.ones(2):eq(torch.ones(2)):tolist())
  end)

  it("tensors as table keys and in ipairs still work (no == involved)", function()
    local a, b = torch.ones(1), torch.ones(1)
    local seen = { [a] = 1, [b] = 2 }
    assert.are.equal(1, seen[a])
    assert.are.equal(2, seen[b])
  end)
end)

describe("modules keep Lua's nil", function()
  it("an absent field of a module is nil (user code tests `if self.conv3 then`)", function()
    local net = nn.Sequential(nn.Linear(2, 1))
    assert.is_nil(net.conv3)
    local lin = nn.Linear(2, 1)
    assert.is_nil(lin.nosuch)
    assert.is_not_nil(lin.weight)
  end)
end)

describe("at the prompt", function()
  it("x.devcie and x == y are errors there too, with the user's line", function()
    local _, err = R.prompt({ "x = torch.ones(2)", "x.devcie", "x == torch.ones(2)", "print(x == x)" })
    assert.truthy(err:find("stdin:1: a tensor has no field or method 'devcie' (did you mean 'device'?)", 1, true), err)
    assert.truthy(err:find("stdin:1: == on two tensors", 1, true), err)
  end)
end)
