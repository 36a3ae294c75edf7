-- examples/dataparallel_splits.lua: how nn.DataParallel splits a batch,
-- as in PyTorch's DataParallel tutorial: the model prints the size it gets
-- ("In Model"), the caller the size of the whole batch ("Outside").
--
--   build/gshell --sim-gpus 3 examples/dataparallel_splits.lua   30 -> 10/10/10, 10 -> 4/4/2
--   build/gshell --sim-gpus 2 examples/dataparallel_splits.lua   30 -> 15/15, 10 -> 5/5
--   build/gshell examples/dataparallel_splits.lua                no GPU: the model sees it all
--
-- The batch is cut in ceil(n / #devices) pieces along dim 1, the replicas
-- run at the same time on their devices, and the outputs are gathered on
-- output_device (the first GPU).
torch = torch or require("torch")
nn = nn or torch.nn
try_gpu = try_gpu or torch.try_gpu

torch.manual_seed(0)
local input_size, output_size = 5, 2

local Model = nn.Module:extend("Model")
function Model:init(inp, out)
  self.fc = nn.Linear(inp, out)
end
function Model:forward(input)
  local output = self.fc(input)
  print(string.format("\tIn Model: input size %s output size %s on %s", tostring(input.shape),
    tostring(output.shape), tostring(input.device)))
  return output
end

local n = torch.cuda.device_count()
print(string.format("Let's use %d GPUs!", n))
local model = nn.DataParallel(Model(input_size, output_size)):to(try_gpu())

for _, batch in ipairs({ 30, 10 }) do
  local input = torch.randn(batch, input_size, { device = try_gpu() })
  local output = model(input)
  print(string.format("Outside: input size %s output_size %s on %s", tostring(input.shape),
    tostring(output.shape), tostring(output.device)))
end
