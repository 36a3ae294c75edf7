-- gshell.pysigs: the parameters of the calls the book's Python makes, so
-- the Python hints (gshell.pyhints) can turn `f(a, name=v)` into the call
-- gshell's binding expects: a parameter the binding takes by position
-- stays positional, the others go into the options table, and a dimension
-- moves to 1-based.
--
--   sigs.lookup(callee)   the signature of a call written `callee(...)`
--                         (`torch.cat`, `x:sum` once the colon is fixed),
--                         or nil when the hints do not know it
--   sigs.is_method(name)  true when `name` is a tensor's or a module's
--                         method (so `obj.name(...)` wants a colon)
--   sigs.NAMESPACES       the globals whose dotted calls are plain
--                         functions (`torch.ones(...)`, `nn.Linear(...)`)
--
-- A signature: pos = the positional parameters in order (as in `?name`
-- and in the binding's own argument checks), dims = those of them that
-- are dimensions, opts = true when the function takes an options table
-- last (a keyword that is not in pos goes there). A keyword for a
-- function without a signature, or one its signature does not know, makes
-- the hint state the rule instead of a line that might not run.
local M = {}

local FACTORY = { pos = { "size" }, opts = true }
local DIM_KEEP = { pos = { "dim", "keepdim" }, dims = { dim = true } }
local DIM = { pos = { "dim" }, dims = { dim = true } }
local JOIN = { pos = { "tensors", "dim" }, dims = { dim = true } }
local OPTS_ONLY = { pos = {}, opts = true }
local OPTIM = { pos = { "params" }, opts = true }

local FUNCTIONS = {
  ["torch.ones"] = FACTORY, ["torch.zeros"] = FACTORY, ["torch.empty"] = FACTORY,
  ["torch.rand"] = FACTORY, ["torch.randn"] = FACTORY,
  ["torch.tensor"] = { pos = { "data" }, opts = true },
  ["torch.full"] = { pos = { "size", "fill_value" }, opts = true },
  ["torch.randint"] = { pos = { "low", "high", "size" }, opts = true },
  ["torch.cat"] = JOIN, ["torch.stack"] = JOIN,
  ["torch.sum"] = { pos = { "input", "dim", "keepdim" }, dims = { dim = true } },
  ["torch.mean"] = { pos = { "input", "dim", "keepdim" }, dims = { dim = true } },
  ["torch.argmax"] = { pos = { "input", "dim", "keepdim" }, dims = { dim = true } },
  ["torch.device"] = { pos = { "type", "index" } },
  ["torch.manual_seed"] = { pos = { "seed" } },
  ["nn.Linear"] = { pos = { "in_features", "out_features" }, opts = true },
  ["nn.LazyLinear"] = { pos = { "out_features" }, opts = true },
  ["nn.Conv2d"] = { pos = { "in_channels", "out_channels", "kernel_size" }, opts = true },
  ["nn.LazyConv2d"] = { pos = { "out_channels", "kernel_size" }, opts = true },
  ["nn.MaxPool2d"] = { pos = { "kernel_size" }, opts = true },
  ["nn.AvgPool2d"] = { pos = { "kernel_size" }, opts = true },
  ["nn.BatchNorm1d"] = { pos = { "num_features" }, opts = true },
  ["nn.BatchNorm2d"] = { pos = { "num_features" }, opts = true },
  ["nn.Dropout"] = { pos = { "p" }, opts = true },
  ["nn.CrossEntropyLoss"] = OPTS_ONLY, ["nn.MSELoss"] = OPTS_ONLY,
  ["optim.SGD"] = OPTIM, ["optim.Adam"] = OPTIM,
  ["d2l.load_data_fashion_mnist"] = { pos = { "batch_size", "resize" } },
  ["d2l.train_ch6"] = { pos = { "net", "train_iter", "test_iter", "num_epochs", "lr", "device" } },
  ["d2l.evaluate_accuracy_gpu"] = { pos = { "net", "data_iter", "device" } },
  ["d2l.try_gpu"] = { pos = { "i" } }, ["try_gpu"] = { pos = { "i" } },
  ["torch.utils.data.DataLoader"] = { pos = { "dataset" }, opts = true },
}

local METHODS = {
  sum = DIM_KEEP, mean = DIM_KEEP, prod = DIM_KEEP, std = DIM_KEEP, var = DIM_KEEP,
  argmax = DIM_KEEP, argmin = DIM_KEEP, max = DIM_KEEP, min = DIM_KEEP,
  softmax = DIM, log_softmax = DIM, cumsum = DIM, unsqueeze = DIM, squeeze = DIM, size = DIM,
  to = { pos = { "device", "dtype" }, opts = true },
  cuda = { pos = { "device" } },
  parameters = { pos = {} }, named_parameters = { pos = {} }, cpu = { pos = {} }, item = { pos = {} },
}

M.NAMESPACES = { torch = true, nn = true, optim = true, d2l = true, F = true, math = true, string = true,
                 table = true, os = true, io = true, torchvision = true, coroutine = true, utf8 = true,
                 debug = true, package = true }

-- Methods of modules and optimizers the book calls that tensors lack.
local OTHER_METHODS = {
  parameters = true, named_parameters = true, children = true, modules = true, train = true, eval = true,
  zero_grad = true, step = true, state_dict = true, load_state_dict = true, apply = true, forward = true,
  add_module = true, enumerate = true, iter = true,
}

function M.lookup(callee)
  callee = callee:gsub("%s+", "")
  local m = callee:match(":([%a_][%w_]*)$")
  if m then return METHODS[m], true end
  return FUNCTIONS[callee] or FUNCTIONS[(callee:gsub("^torch%.", ""))], false
end

function M.is_method(name)
  if METHODS[name] or OTHER_METHODS[name] then return true end
  local ok, docs = pcall(require, "gshell.docs")
  -- a method's help reads "x:name(...)"; a field's (x.shape) does not
  local text = ok and docs.get("Tensor." .. name)
  return text ~= nil and text ~= false and text:find("^x:" .. name .. "%(") ~= nil
end

return M
