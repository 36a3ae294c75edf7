-- docs_spec.lua: the guides' transcripts stay true. Every Markdown file
-- in docs/ with ```output blocks is run through `gshell --check`, on
-- simulated GPUs, and must report no difference.
local build = os.getenv("GSHELL_BUILD") or "build"

local function docs_with_transcripts()
  local found = {}
  local p = io.popen("ls docs/*.md")
  for path in p:lines() do
    local f = assert(io.open(path))
    local text = f:read("a")
    f:close()
    if text:find("```output", 1, true) then found[#found + 1] = path end
  end
  p:close()
  return found
end

describe("docs transcripts", function()
  local docs = docs_with_transcripts()

  it("exist (at least the tensor, nn and shell guides)", function()
    assert.is_true(#docs >= 3, "found " .. #docs)
  end)

  -- The transcripts check what the guides say; ThreadSanitizer adds
  -- nothing the device and stream specs do not already run under it, at
  -- about 160 of its seconds. They run plain and under ASan.
  local H = require("helpers")
  local doc_it = H.not_under_tsan_it(it, pending, "checks the guides' words; the engine paths run under TSAN in the device specs")
  for _, path in ipairs(docs) do
    doc_it(path .. " passes gshell --check", function()
      local p = io.popen(build .. "/gshell --sim-gpus 2 --check " .. path .. " 2>&1; echo \"exit=$?\"")
      local out = p:read("a")
      p:close()
      assert.matches("exit=0", out, nil, true)
      assert.matches(" 0 failed", out, nil, true)
    end)
  end
end)
