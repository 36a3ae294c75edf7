-- torch.nn: modules, layers, losses, DataParallel. See docs/nn.md.
local base = require("torch.nn.module")
local containers = require("torch.nn.containers")
local layers = require("torch.nn.layers")
local loss = require("torch.nn.loss")
local conv = require("torch.nn.conv")
local pooling = require("torch.nn.pooling")
local batchnorm = require("torch.nn.batchnorm")
local lazy = require("torch.nn.lazy")
local parallel = require("torch.nn.parallel")
local sequence = require("torch.nn.sequence") -- GELU, Embedding, LayerNorm; nn.utils
local attention = require("torch.nn.attention") -- MultiheadAttention

local nn = {}

nn.Module = base.Module
nn.Parameter = base.Parameter
nn.OrderedDict = base.OrderedDict
nn.is_module = base.is_module
nn.is_parameter = base.is_parameter
nn.init = require("torch.nn.initializers")

for _, mod in ipairs({ containers, layers, loss, conv, pooling, batchnorm, lazy, sequence, attention }) do
  for k, v in pairs(mod) do nn[k] = v end
end
-- nn.functional, the book's F (torch.nn.functional), after the merge above
-- (loss.lua's table of functional forms is reached through it).
nn.functional = require("torch.nn.functional")
nn.DataParallel = parallel.DataParallel
nn.parallel = {
  DataParallel = parallel.DataParallel,
  scatter = parallel.scatter,
  gather = parallel.gather,
  replicate = parallel.replicate,
  DistributedDataParallel = require("torch.nn.ddp"),
}

return nn
