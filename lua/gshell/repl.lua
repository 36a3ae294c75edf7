-- gshell.repl: what the C prompt loop (src/shell/repl.c) calls.
--
--   repl.start()           creates the session (once) and returns it
--   repl.feed(text)        runs what was typed so far: "more" when the
--                          statement is unfinished, else "done"
--   repl.complete(word)    completions for readline
--   repl.word_breaks       the characters that end a word, for readline
--   repl.banner()          the greeting shown on a terminal
--   repl.run_script(path, chunk_args) and repl.run_string(code, name):
--                          for `gshell -i`, run inside the session so the
--                          script's top-level locals stay visible afterwards
local Session = require "gshell.session"

local M = {}
local session

function M.start()
  if not session then session = Session.new() end
  return session
end

function M.session()
  return M.start()
end

function M.feed(text)
  local s = M.start()
  local status = s:run_cell(text, { chunkname = "=stdin", allow_incomplete = true })
  io.stdout:flush()
  if status == "incomplete" then return "more" end
  return "done"
end

-- readline's word break characters (the completer's own).
M.word_breaks = require("gshell.complete").word_breaks

function M.complete(word, before)
  local ok, list = pcall(require("gshell.complete").complete, M.start(), word, before)
  if ok then return list end
  return {}
end

-- Runs a script file in the session (as a script: no auto-print, no shell
-- lines, but top-level locals become session locals). Errors propagate.
function M.run_script(path, ...)
  local s = M.start()
  local src
  if path == "-" then
    src = io.stdin:read("a")
  else
    local f, err = io.open(path, "rb")
    if not f then error("cannot open " .. path .. ": " .. tostring(err), 0) end
    src = f:read("a")
    f:close()
  end
  src = src:gsub("^#![^\n]*", "")        -- a shebang line, as lua.c skips it
  local fn, err = s:compile(src, { chunkname = "@" .. (path == "-" and "stdin" or path), script = true })
  if not fn then error(err, 0) end
  return fn(...)
end

function M.run_string(code, name)
  local s = M.start()
  local fn, err = s:compile(code, { chunkname = name or "=(command line)", script = true })
  if not fn then error(err, 0) end
  return fn()
end

-- gshell --lesson [NAME] [--restart]: lists the lessons (no name) or
-- starts one in the session. Returns an exit status.
function M.lesson(name, restart)
  local lesson = require "gshell.lesson"
  if name == nil then
    io.stdout:write(lesson.list_text(), "\n")
    return 0
  end
  local ok, err = lesson.start(M.start(), name, { restart = restart == "restart" })
  io.stdout:flush()
  if not ok then
    io.stderr:write("gshell: ", err, "\n")
    return 1
  end
  return 0
end

-- The greeting: version, Lua, and the devices, saying plainly whether the
-- CUDA devices are real or simulated. kernel: the Jupyter kernel's, which
-- names no command-line flag (a kernel takes none: its kernelspec's env
-- does the same) and says when it simulates GPUs on its own.
function M.banner(kernel)
  local core = require "gshell.core"
  local magics = require "gshell.magics"
  local devs = magics.cuda_devices()
  local lines = {}
  local head = string.format("gshell %s (%s)", core.version, core.lua_release)
  if #devs == 0 then
    lines[1] = head .. ": CPU only, no CUDA device" .. (kernel
      and " (GSHELL_SIM_GPUS=2 in the kernelspec's env, or `GSHELL_SIM_GPUS=2 gshell --install-kernel`, simulates two)"
      or " (`gshell --sim-gpus 2` simulates two)")
  else
    local nsim = 0
    for _, d in ipairs(devs) do if d.simulated then nsim = nsim + 1 end end
    local kind
    if nsim == #devs then
      kind = string.format("%d SIMULATED CUDA device%s (host memory, not a GPU)", #devs, #devs == 1 and "" or "s")
    elseif nsim == 0 then
      kind = string.format("%d CUDA GPU%s", #devs, #devs == 1 and "" or "s")
    else
      kind = string.format("%d CUDA devices (%d simulated)", #devs, nsim)
    end
    lines[1] = head .. ": CPU + " .. kind
    for _, d in ipairs(devs) do
      -- a modelled device's name ends in "(simulated)": [simulated] says it once
      local name = tostring(d.name or "?"):gsub(" %(simulated%)$", "")
      lines[#lines + 1] = string.format("  cuda:%d  %s%s%s", d.index, name,
        d.total and ("  " .. magics.fmt_bytes(d.total)) or "", d.simulated and "  [simulated]" or "")
    end
    local auto = kernel and os.getenv("GSHELL_KERNEL_SIM_AUTO")
    if auto then
      lines[#lines + 1] = string.format("  (no CUDA GPU on this machine, so this kernel simulates %s; " ..
        "GSHELL_SIM_GPUS=0 in the kernelspec's env gives none)", auto)
    end
    local cold = magics.sim_context_ms()
    if cold > 0 then
      lines[#lines + 1] = string.format("  cold start modelled: each device's first use waits %d ms (GSHELL_SIM_CONTEXT_MS)", cold)
    end
  end
  lines[#lines + 1] = "help() for help, %devices for devices, Ctrl-D to quit"
  return table.concat(lines, "\n")
end

return M
