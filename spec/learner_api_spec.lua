-- Small API pieces learners reach for in the chapter's exercises:
-- torch.load keeps a state dict's order, load_state_dict's result prints
-- like PyTorch's.
local torch = require("torch")
local nn = torch.nn

local function tmpfile()
  local p = os.tmpname()
  return p
end

describe("torch.save / torch.load of a state dict", function()
  it("gives the keys back in the saved order, as an OrderedDict", function()
    local net = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    net.z_last = nn.Linear(1, 1) -- sorts after the numbers, registered after them
    local sd = net:state_dict()
    local path = tmpfile()
    torch.save(sd, path)
    local back = torch.load(path)
    os.remove(path)
    local want, got = {}, {}
    for k in pairs(sd) do want[#want + 1] = k end
    for k in pairs(back) do got[#got + 1] = k end
    assert.are.same({ "1.weight", "1.bias", "3.weight", "3.bias", "z_last.weight", "z_last.bias" }, want)
    assert.are.same(want, got)
    assert.truthy(tostring(back):find("^OrderedDict%(%[%('1.weight'"), tostring(back))
    for k, v in pairs(sd) do assert.is_true(torch.equal(v, back[k])) end
    assert.are.equal("<All keys matched successfully>", tostring(net:load_state_dict(back)))
  end)

  it("a plain table still comes back as a plain table (sorted keys)", function()
    local path = tmpfile()
    torch.save({ b = torch.ones(1), a = torch.zeros(1) }, path)
    local back = torch.load(path)
    os.remove(path)
    assert.is_nil(getmetatable(back))
    assert.are.equal(1, back.b:item())
  end)
end)

describe("load_state_dict's result", function()
  it("lists what did not match, as PyTorch's _IncompatibleKeys", function()
    local net = nn.Linear(2, 1)
    local r = net:load_state_dict({ weight = net.weight, extra = torch.ones(1) }, { strict = false })
    assert.are.same({ "bias" }, r.missing_keys)
    assert.are.same({ "extra" }, r.unexpected_keys)
    assert.are.equal("_IncompatibleKeys(missing_keys=['bias'], unexpected_keys=['extra'])", tostring(r))
  end)
end)

describe("num_ooms", function()
  local saved_n, saved_cap
  setup(function() collectgarbage(); saved_n, saved_cap = torch._sim_configure(1, 64 * 1024 * 1024) end)
  teardown(function() collectgarbage(); torch._sim_configure(saved_n, saved_cap) end)

  it("counts one failed allocation once (the engine's retry is not a second OOM)", function()
    local before = torch.cuda.memory_stats(0)["num_ooms"]
    assert.is_false(pcall(torch.empty, 1 << 26, { device = "cuda:0" })) -- 256 MiB > 64 MiB
    assert.are.equal(before + 1, torch.cuda.memory_stats(0)["num_ooms"])
    assert.is_false(pcall(torch.empty, 1 << 26, { device = "cuda:0" }))
    assert.are.equal(before + 2, torch.cuda.memory_stats(0)["num_ooms"])
    local ok = pcall(torch.empty, 1024, { device = "cuda:0" })
    assert.is_true(ok)
    assert.are.equal(before + 2, torch.cuda.memory_stats(0)["num_ooms"])
  end)
end)
