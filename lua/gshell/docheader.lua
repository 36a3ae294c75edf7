-- gshell.docheader: settings a teaching file declares at its top, so that
-- it runs the same everywhere, and timing lines that vary from run to run.
--
--   Markdown (--check):      <!-- gshell: sim-gpus=2 seed=0 -->
--   a notebook (--notebook): -- gshell: sim-gpus=2 seed=0
--
-- within the first 5 lines. sim-gpus=N makes N simulated CUDA devices
-- when the machine has no real one (a real GPU is never hidden); seed=N
-- calls torch.manual_seed(N) before the first block.
local M = {}

local KEYS = { ["sim-gpus"] = true, seed = true }

-- The settings in the first lines, {} when there are none, or nil and a
-- message for a malformed header.
function M.parse(lines)
  for i = 1, math.min(5, #lines) do
    local body = lines[i]:match("^%s*<!%-%-%s*gshell:%s*(.-)%s*%-%->%s*$") or lines[i]:match("^%-%-%s*gshell:%s*(.-)%s*$")
    if body then
      local s = {}
      for item in body:gmatch("%S+") do
        local k, v = item:match("^([%w%-]+)=(%d+)$")
        if not k then return nil, string.format("line %d: expected key=number in the gshell header, got '%s'", i, item) end
        if not KEYS[k] then
          return nil, string.format("line %d: unknown gshell header key '%s' (the keys are sim-gpus and seed)", i, k)
        end
        s[k] = tonumber(v)
      end
      return s
    end
  end
  return {}
end

-- Makes the declared simulated devices and seeds the generator.
function M.apply(s)
  local torch = package.loaded.torch or rawget(_G, "torch")
  if not torch then return end
  local n = s["sim-gpus"]
  if n then
    local real = false
    for i = 0, torch.cuda.device_count() - 1 do
      local ok, p = pcall(torch.cuda.get_device_properties, i)
      if ok and not p.simulated then real = true end
    end
    if not real and torch._sim_configure then torch._sim_configure(n) end
  end
  if s.seed then torch.manual_seed(s.seed) end
end

-- Reads and applies the header of the file at `path` (its lines); returns
-- the settings, or nil after printing "gshell: PATH: what is wrong".
function M.setup(path, lines)
  local s, err = M.parse(lines)
  if not s then
    io.stderr:write("gshell: ", path, ": ", err, "\n")
    return nil
  end
  M.apply(s)
  return s
end

-- The header line for a Markdown transcript of these settings, or nil.
function M.markdown_line(s)
  local parts = {}
  if s["sim-gpus"] then parts[#parts + 1] = "sim-gpus=" .. s["sim-gpus"] end
  if s.seed then parts[#parts + 1] = "seed=" .. s.seed end
  if #parts == 0 then return nil end
  return "<!-- gshell: " .. table.concat(parts, " ") .. " -->"
end

-- Output text with the numbers of timing lines (%time, %timeit and its
-- -o result) replaced by `...`, which --check matches against anything.
function M.mask_timing(text)
  local out = {}
  for line in (text .. "\n"):gmatch("(.-)\n") do
    if line:match("^.- ± .- per loop %(mean ± std%. dev%. of %d+ runs?, [%d,]+ loops? each%)$") then
      line = "... ± ... per loop (mean ± std. dev. of ... run..., ... loop... each)"
    elseif line:match("^<TimeitResult : .*>$") then
      line = "<TimeitResult : ...>"
    elseif line:match("^CPU time: ") then
      line = "CPU time: ..."
    elseif line:match("^Wall time: ") then
      line = "Wall time: ..."
    end
    out[#out + 1] = line
  end
  -- (text .. "\n") split on newlines gives back text when joined again
  return table.concat(out, "\n")
end


-- A code fence for a block holding `text` (a string or a list of lines):
-- `ch` (` or ~) repeated once more than its longest run in the text, and
-- at least 3 times, so no line of the text can close the block early (a
-- cell that prints "```" used to end its output block, and the next
-- --check ran the rest as code).
function M.fence(text, ch)
  ch = ch or "`"
  if type(text) == "table" then text = table.concat(text, "\n") end
  local longest = 0
  for run in text:gmatch(ch == "`" and "`+" or "~+") do
    if #run > longest then longest = #run end
  end
  return string.rep(ch, math.max(3, longest + 1))
end

return M
