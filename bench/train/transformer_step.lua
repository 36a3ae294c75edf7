-- bench/train/transformer_step.lua: the gshell side of
-- bench/train/transformer.sh (issue 31): sequences per second of full
-- training steps (forward, MSE loss, backward, SGD) of the book's
-- transformer encoder block (d2l.TransformerEncoderBlock: its own
-- multi-head attention with masked softmax, AddNorm, position-wise FFN;
-- dropout 0.1, training mode) at batch 32, 32 steps, 64 hidden, 128 FFN
-- hidden, 4 heads, valid lengths 1..32, on the cpu device. Prints
-- `name value unit` lines. Run with LUA_CPATH="build/?.so;;" lua5.4.
local torch = require("torch")
local nn = torch.nn
local d2l = require("d2l")
local clock = torch.clock

local B, T, D, F, H = 32, 32, 64, 128, 4

local function steps_per_sec(steps, rounds)
  torch.manual_seed(0)
  local blk = d2l.TransformerEncoderBlock(D, F, H, 0.1)
  local X = torch.randn(B, T, D)
  local target = torch.randn(B, T, D)
  local valid_lens = torch.arange(B) % T + 1
  blk(X, valid_lens) -- sizes the lazy layers
  local loss = nn.MSELoss()
  local opt = torch.optim.SGD(blk:parameters(), { lr = 0.01 })
  local function step()
    opt:zero_grad()
    local l = loss(blk(X, valid_lens), target)
    l:backward()
    opt:step()
  end
  step(); step()
  local best = math.huge
  for _ = 1, rounds do
    local t0 = clock()
    for _ = 1, steps do step() end
    best = math.min(best, clock() - t0)
  end
  return B * steps / best
end

-- with GSHELL_NUM_THREADS=1 (run.sh's second gshell line) the key says so
local key = os.getenv("GSHELL_NUM_THREADS") == "1" and "transformer_block_cpu_1t" or "transformer_block_cpu"
print(key, steps_per_sec(20, 3), "sequences/s")
