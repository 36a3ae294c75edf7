-- random_philox_spec.lua: float32 uniforms, drawn eight Philox blocks at
-- a time with AVX2 where the CPU has it (cpu_random.c), are the scalar
-- stream's: the top 24 bits of a float64 uniform (drawn one counter at a
-- time, from the same counter's first two words) are the float32 one, for
-- every element, at odd lengths (the tail past a multiple of 8) and at
-- offsets left by earlier draws, on the cpu and a simulated GPU.
local torch = require("torch")

local saved_n, saved_cap

describe("Philox float32 uniforms (issue 31: dropout's masks)", function()
  setup(function() saved_n, saved_cap = torch._sim_configure(1) end)
  teardown(function() collectgarbage(); collectgarbage(); torch._sim_configure(saved_n, saved_cap) end)

  for _, dev in ipairs({ "cpu", "cuda:0" }) do
    it("are the top 24 bits of the float64 stream's (" .. dev .. ")", function()
      for _, n in ipairs({ 1, 7, 8, 9, 1000, 4099 }) do
        for _, seed in ipairs({ 0, 12345 }) do
          torch.manual_seed(seed)
          torch.rand(3, { device = dev }) -- an offset that is not a multiple of 8
          local f = torch.rand(n, { device = dev })
          torch.manual_seed(seed)
          torch.rand(3, { device = dev })
          local d = torch.rand(n, { dtype = torch.float64, device = dev })
          local want = (d * 16777216):floor() / 16777216
          assert.is_true(f:double():equal(want), ("n %d seed %d"):format(n, seed))
        end
      end
      -- a range: a + (b - a) * u, rounded once to float32
      torch.manual_seed(7)
      local f = torch.empty(33, { device = dev }):uniform_(-2, 3)
      torch.manual_seed(7)
      local u = (torch.rand(33, { dtype = torch.float64, device = dev }) * 16777216):floor() / 16777216
      assert.is_true(f:equal((u * 5 - 2):float()))
    end)
  end
end)
