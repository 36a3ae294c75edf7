-- gshell.check: `gshell --check doc.md [--update]`.
--
-- Runs the ```lua blocks of a Markdown document in one session, in order,
-- each as if pasted at the prompt (so a block's last expression is shown),
-- and compares what it prints with the ```output block right after it:
--   * trailing spaces and trailing blank lines do not count;
--   * `...` inside an expected line matches any text, and a line that is
--     only `...` matches any number of lines (random values, addresses);
--   * a ```lua block with no ```output block after it runs unchecked, but
--     an error in it is a failure; ```lua skip (or norun) is not run.
-- A header comment `<!-- gshell: sim-gpus=2 seed=0 -->` in the first
-- lines sets up simulated GPUs and the seed (gshell.docheader).
-- Blocks are numbered like notebook cells: an error in the third ```lua
-- block reads "In[3]:2: ..." (its line 2), so a document written by
-- `gshell --notebook --md` checks cleanly. Each difference is reported with its line in the document, the expected
-- and the actual text; the exit status is 1 when any block differs.
-- --update writes the actual output into every expected block that differs
-- (atomically) instead of failing.
local Session = require "gshell.session"
local docheader = require "gshell.docheader"

local M = {}

local function split_lines(s)
  local lines = {}
  for line in (s .. "\n"):gmatch("(.-)\r?\n") do lines[#lines + 1] = line end
  return lines
end

-- Fenced blocks of a document: {info=, word=, open=, close=, body={...}}
-- with open/close the fence line numbers (close = nil when unterminated).
function M.parse(lines)
  local blocks = {}
  local i = 1
  while i <= #lines do
    local indent, fence, info = lines[i]:match("^( ? ? ?)(```+)%s*([^`]*)$")
    if not fence then
      indent, fence, info = lines[i]:match("^( ? ? ?)(~~~+)%s*(.*)$")
    end
    if fence then
      local b = { info = info:gsub("%s+$", ""), open = i, body = {} }
      b.word = (b.info:match("^{?%.?([%w_%-]+)") or ""):lower()
      b.flags = b.info:lower()
      local ch = fence:sub(1, 1)
      local j = i + 1
      while j <= #lines do
        local close = lines[j]:match("^ ? ? ?(" .. (ch == "`" and "`" or "~") .. "+)%s*$")
        if close and #close >= #fence then break end
        local l = lines[j]
        if #indent > 0 and l:sub(1, #indent) == indent then l = l:sub(#indent + 1) end
        b.body[#b.body + 1] = l
        j = j + 1
      end
      b.close = j <= #lines and j or nil
      blocks[#blocks + 1] = b
      i = j + 1
    else
      i = i + 1
    end
  end
  return blocks
end

local function normalize(lines)
  local out = {}
  for i, l in ipairs(lines) do out[i] = l:gsub("%s+$", "") end
  while #out > 0 and out[#out] == "" do out[#out] = nil end
  return out
end

-- Does one expected line match one actual line (`...` = any text)? The
-- literal pieces between the `...` are found left to right, each at its
-- first place after the previous one: with "any text" as the only
-- wildcard the leftmost place is always a safe choice, so this takes time
-- linear in the line (a Lua pattern with several `.-` backtracks
-- exponentially, and many of them make "pattern too complex").
function M.line_matches(exp, got)
  if exp == got then return true end
  if not exp:find("...", 1, true) then return false end
  local pieces, start = {}, 1
  while true do
    local a, b = exp:find("...", start, true)
    if not a then pieces[#pieces + 1] = exp:sub(start); break end
    pieces[#pieces + 1] = exp:sub(start, a - 1)
    start = b + 1
  end
  local first, last = pieces[1], pieces[#pieces]
  if #first + #last > #got or got:sub(1, #first) ~= first or got:sub(#got - #last + 1) ~= last then return false end
  local pos, limit = #first + 1, #got - #last -- the middle pieces lie in got[pos..limit]
  for i = 2, #pieces - 1 do
    local piece = pieces[i]
    if piece ~= "" then
      local a, b = got:find(piece, pos, true)
      if not a or b > limit then return false end
      pos = b + 1
    end
  end
  return true
end

-- Do the expected lines match the actual ones? A line that is only `...`
-- matches any number of lines.
function M.block_matches(exp, got)
  local memo = {}
  local function go(i, j)
    local key = i * 100003 + j
    if memo[key] ~= nil then return memo[key] end
    local r
    if i > #exp then
      r = j > #got
    elseif exp[i]:match("^%s*%.%.%.%s*$") then
      r = go(i + 1, j) or (j <= #got and go(i, j + 1))
    else
      r = j <= #got and M.line_matches(exp[i], got[j]) and go(i + 1, j + 1)
    end
    memo[key] = r and true or false
    return memo[key]
  end
  return go(1, 1)
end

-- The first expected line (index) that fails a plain line-by-line reading.
local function first_difference(exp, got)
  for i = 1, math.max(#exp, #got) do
    local e, g = exp[i], got[i]
    if e == nil or g == nil or not M.line_matches(e, g) then return i end
  end
  return 1
end

local function show(lines)
  if #lines == 0 then return "    (nothing)\n" end
  local out = {}
  for i, l in ipairs(lines) do out[i] = "    " .. l end
  return table.concat(out, "\n") .. "\n"
end

-- Checks (or with update, rewrites) a document; returns the exit status.
function M.run(path, update)
  local text = Session.read_input(path)
  if not text then return 1 end
  local lines = split_lines(text)
  if lines[#lines] == "" then lines[#lines] = nil end
  local blocks = M.parse(lines)
  -- a fence left open hides every block after it: the check would
  -- compare nothing there and pass
  for _, b in ipairs(blocks) do
    if not b.close then
      io.stderr:write(string.format("gshell: %s:%d: this fenced block is never closed (no closing fence before the "
        .. "end of the file), so the rest of the document would not be checked\n", path, b.open))
      return 1
    end
  end
  if not docheader.setup(path, lines) then return 1 end
  local session = Session.new({ trap_exit = true })
  local ran, compared, failed, updated = 0, 0, 0, 0
  local replace = {}
  for bi, b in ipairs(blocks) do
    local skip = b.flags:find("skip") or b.flags:find("norun")
    if b.word == "lua" and not skip then
      ran = ran + 1
      local r = session:run_captured(table.concat(b.body, "\n"), { chunkname = string.format("=In[%d]", ran) })
      if session.exit_code then
        io.stdout:write(string.format("%s: block %d called os.exit(%d): the check fails here\n", path, ran,
          session.exit_code))
        return 1
      end
      if r.error and r.error:find("interrupted!$") then
        io.stdout:write(path, ": interrupted\n")
        return 130
      end
      local got = normalize(split_lines((r.output or "") .. (r.result and (r.result .. "\n") or "")))
      local ob = blocks[bi + 1]
      if ob and ob.word == "output" then
        compared = compared + 1
        local exp = normalize(ob.body)
        if not M.block_matches(exp, got) then
          if update then
            -- the whole block, fences included: a longer fence when the new
            -- output holds a run of the fence's character as long as it
            local open = lines[ob.open]
            local indent, old, rest = open:match("^( ? ? ?)([`~]+)(.*)$")
            local fence = docheader.fence(got, old:sub(1, 1))
            if #fence < #old then fence = old end
            local new = { indent .. fence .. rest }
            for _, l in ipairs(got) do new[#new + 1] = l end
            new[#new + 1] = indent .. fence
            replace[#replace + 1] = { first = ob.open, last = ob.close or #lines, lines = new }
            updated = updated + 1
          else
            failed = failed + 1
            local k = first_difference(exp, got)
            io.stdout:write(string.format("%s:%d: lua block %d (line %d): output differs\n",
              path, ob.open + math.min(k, #exp + 1), ran, b.open))
            io.stdout:write("  expected:\n", show(exp), "  got:\n", show(got))
          end
        end
      elseif r.status == "error" then
        failed = failed + 1
        io.stdout:write(string.format("%s:%d: lua block %d failed: %s\n",
          path, b.open, ran, r.error or "error"))
      end
    end
  end
  if update and #replace > 0 then
    for i = #replace, 1, -1 do
      local rp = replace[i]
      for _ = rp.first, rp.last do table.remove(lines, rp.first) end
      for k = #rp.lines, 1, -1 do table.insert(lines, rp.first, rp.lines[k]) end
    end
    local ok, werr = Session.save_text(path, table.concat(lines, "\n") .. "\n")
    if not ok then
      io.stderr:write("gshell: ", tostring(werr), "\n")
      return 1
    end
  end
  local summary = string.format("%s: %d block%s run, %d compared, %d failed", path, ran,
    ran == 1 and "" or "s", compared, failed)
  if update then summary = summary .. string.format(", %d updated", updated) end
  io.stdout:write(summary, "\n")
  return failed > 0 and 1 or 0
end

return M
