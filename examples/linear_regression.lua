-- examples/linear_regression.lua: the book's concise linear regression,
-- trained on try_gpu() (the first GPU, or the CPU when there is none).
--   gshell examples/linear_regression.lua
--   gshell --sim-gpus 2 examples/linear_regression.lua
--   LUA_CPATH="build/?.so;;" lua5.4 examples/linear_regression.lua
local torch = torch or require("torch")
local nn, optim = torch.nn, torch.optim
local data = torch.utils.data

torch.manual_seed(0)
local device = torch.try_gpu()
print("training on", device)

-- Synthetic data: y = X w + b + noise, with w = (2, -3.4), b = 4.2.
local true_w = torch.tensor({ 2, -3.4 })
local true_b = 4.2
local function synthetic_data(w, b, num_examples)
  local X = torch.randn(num_examples, #w)
  local y = X:matmul(w) + b
  y = y + torch.randn(y.shape) * 0.01
  return X, y:reshape(-1, 1)
end
local features, labels = synthetic_data(true_w, true_b, 1000)

local loader = data.DataLoader(data.TensorDataset(features, labels), { batch_size = 10, shuffle = true })

local net = nn.Sequential(nn.Linear(2, 1))
nn.init.normal_(net[1].weight, 0, 0.01)
nn.init.zeros_(net[1].bias)
net:to(device)

local loss = nn.MSELoss()
local trainer = optim.SGD(net:parameters(), { lr = 0.03 })

local all_X, all_y = features:to(device), labels:to(device)
local function full_loss()
  return torch.no_grad(function() return loss(net(all_X), all_y):item() end)
end
print(string.format("before training, loss %f", full_loss()))

local num_epochs = 3
for epoch = 1, num_epochs do
  for batch in loader do
    local X, y = batch[1]:to(device), batch[2]:to(device)
    local l = loss(net(X), y)
    trainer:zero_grad()
    l:backward()
    trainer:step()
  end
  print(string.format("epoch %d, loss %f", epoch, full_loss()))
end

local w = net[1].weight.data:cpu():reshape(true_w.shape)
local b = net[1].bias.data:cpu()
print("error in estimating w:", true_w - w)
print("error in estimating b:", true_b - b)
print("parameters live on", net[1].weight.data.device)
