-- The reference lives in the repository (issue 22, item 8): docs/reference.md
-- is the complete user reference, the README links it, and every function,
-- module and method it names exists in gshell. The names are read from the
-- page itself, so a function added to the page and not to gshell (or
-- removed from gshell and not from the page) fails here.
local torch = require("torch")

local function read(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("a")
  f:close()
  return s
end

local page = read("docs/reference.md")

-- Only the code spans and code blocks: prose may say "torch." in passing.
local function code_of(text)
  local parts = {}
  for block in text:gmatch("```[%w ]*\n(.-)```") do parts[#parts + 1] = block end
  local without = text:gsub("```[%w ]*\n.-```", "")
  for span in without:gmatch("`([^`\n]+)`") do parts[#parts + 1] = span end
  return table.concat(parts, "\n")
end
local code = code_of(page)

-- Resolves a dotted name from the globals gshell has (torch, nn, optim).
local ROOTS = { torch = torch, nn = torch.nn, optim = torch.optim }
local function resolve(dotted)
  local parts = {}
  for p in dotted:gmatch("[^.]+") do parts[#parts + 1] = p end
  local v = ROOTS[parts[1]]
  for i = 2, #parts do
    if type(v) ~= "table" and type(v) ~= "userdata" then return nil end
    local ok, r = pcall(function() return v[parts[i]] end)
    if not ok then return nil end
    v = r
  end
  return v
end

-- The dotted names the page uses as values or calls, e.g. torch.cuda.Stream,
-- nn.Linear, optim.SGD. A trailing field of a value (x.shape) is not one.
local function dotted_names()
  local names, seen = {}, {}
  for name in code:gmatch("%f[%w_.]((torch%.[%a_][%w_%.]*))") do
    name = name:gsub("%.$", "")
    if not seen[name] then seen[name] = true; names[#names + 1] = name end
  end
  for root in ("nn optim"):gmatch("%S+") do
    for name in code:gmatch("%f[%w_.](" .. root .. "%.[%a_][%w_%.]*)") do
      name = name:gsub("%.$", "")
      if not seen[name] then seen[name] = true; names[#names + 1] = name end
    end
  end
  table.sort(names)
  return names
end

-- Names the page writes as outputs, not as gshell functions.
local NOT_NAMES = {
  ["torch.Size"] = true,  -- the repr of a shape, torch.Size([2, 3])
}

describe("docs/reference.md", function()
  it("exists, is linked from the README, and covers every area of the contract", function()
    local readme = read("README.md")
    assert.truthy(readme:find("(docs/reference.md)", 1, true), "README links docs/reference.md")
    assert.falsy(readme:find("../shared/API.md", 1, true), "README points outside the repository")
    for _, h in ipairs({ "## Conventions", "## Devices", "## Time", "## Tensors", "## Neural networks",
                         "## Convolutional networks", "## Data sets", "## More than one device", "## Files",
                         "## The shell" }) do
      assert.truthy(page:find("\n" .. h, 1, true), h)
    end
  end)

  it("names many functions (the check below is not vacuous)", function()
    assert.is_true(#dotted_names() >= 60, #dotted_names() .. " names")
  end)

  it("every torch./nn./optim. name it uses exists", function()
    local missing = {}
    for _, name in ipairs(dotted_names()) do
      if not NOT_NAMES[name] and resolve(name) == nil then
        missing[#missing + 1] = name
      end
    end
    assert.are.same({}, missing)
  end)

  it("every tensor method it calls as x:name(...) exists", function()
    local missing, n = {}, 0
    for name in code:gmatch("%f[%w_]x:([%a_][%w_]*)%s*%(") do
      n = n + 1
      if type(torch._methods[name]) ~= "function" then missing[#missing + 1] = name end
    end
    assert.is_true(n >= 10, n .. " method calls")
    assert.are.same({}, missing)
  end)

  it("every module method it calls as net:name(...) or model:name(...) exists", function()
    local net = torch.nn.Sequential(torch.nn.Linear(2, 1))
    local missing = {}
    for recv, name in code:gmatch("%f[%w_](%a+):([%a_][%w_]*)%s*%(") do
      if recv == "net" or recv == "model" then
        local ok, f = pcall(function() return net[name] end)
        if not ok or type(f) ~= "function" then missing[#missing + 1] = recv .. ":" .. name end
      end
    end
    assert.are.same({}, missing)
  end)

  it("the check finds a name that does not exist (it can fail)", function()
    assert.is_nil(resolve("torch.cuda.no_such_function"))
    assert.is_nil(resolve("nn.NoSuchLayer"))
  end)
end)
