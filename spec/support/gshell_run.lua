-- spec/support/gshell_run.lua: runs $GSHELL_BUILD/gshell as a child
-- process for the shell specs: with piped stdin (R.run, R.prompt) or on a
-- pseudo-terminal driven step by step (R.pty, through pty_drive.py).
local R = {}

local build = os.getenv("GSHELL_BUILD") or "build"
R.GSHELL = build .. "/gshell"

function R.quote(s)
  return "'" .. tostring(s):gsub("'", "'\\''") .. "'"
end

function R.read_file(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("a")
  f:close()
  return s
end

function R.write_file(path, s)
  local f = assert(io.open(path, "wb"))
  f:write(s)
  f:close()
end

-- A fresh empty directory.
function R.tmpdir()
  local p = os.tmpname()
  os.remove(p)
  assert(os.execute("mkdir -p " .. R.quote(p)))
  return p
end

local function env_prefix(env)
  local parts = { "GSHELL_HISTORY=", "GSHELL_SIM_GPUS=" }
  for k, v in pairs(env or {}) do parts[#parts + 1] = k .. "=" .. R.quote(v) end
  table.sort(parts)
  return "env " .. table.concat(parts, " ")
end

-- gshell with the argument list, stdin text and extra environment.
-- Returns stdout, stderr, exit code.
function R.run(args, stdin, env, cwd)
  local parts = {}
  for i, a in ipairs(args or {}) do parts[i] = R.quote(a) end
  local errf, inf = os.tmpname(), os.tmpname()
  R.write_file(inf, stdin or "")
  local exe = R.GSHELL:sub(1, 1) == "/" and R.GSHELL or (os.getenv("PWD") .. "/" .. R.GSHELL)
  local cmd = string.format("%s%s %s %s <%s 2>%s", cwd and ("cd " .. R.quote(cwd) .. " && ") or "",
    env_prefix(env), R.quote(exe), table.concat(parts, " "), inf, errf)
  local p = assert(io.popen(cmd, "r"))
  local out = p:read("a")
  local _, _, code = p:close()
  local err = R.read_file(errf)
  os.remove(errf)
  os.remove(inf)
  return out, err, code
end

-- Lines typed at the prompt without readline (--repl-stdin).
function R.prompt(lines, extra, env)
  local args = { "--repl-stdin" }
  for _, a in ipairs(extra or {}) do args[#args + 1] = a end
  return R.run(args, table.concat(lines, "\n") .. "\n", env)
end

local function json_string(s)
  return '"' .. s:gsub('[%c"\\]', function(c)
    return string.format("\\u%04x", c:byte())
  end) .. '"'
end

-- Runs gshell on a pseudo-terminal. steps: a list of {send = text},
-- {expect = python regex[, timeout = s]} and {sleep = s}. Returns the transcript and
-- true when every expect matched and gshell exited.
function R.pty(steps, args, env)
  local items = {}
  for i, st in ipairs(steps) do
    if st.send then
      items[i] = '{"send": ' .. json_string(st.send) .. "}"
    elseif st.sleep then
      items[i] = '{"sleep": ' .. st.sleep .. "}"
    else
      items[i] = '{"expect": ' .. json_string(st.expect) .. ', "timeout": ' .. (st.timeout or 20) .. "}"
    end
  end
  local stepf = os.tmpname()
  R.write_file(stepf, "[" .. table.concat(items, ",\n") .. "]")
  local parts = {}
  for i, a in ipairs(args or {}) do parts[i] = R.quote(a) end
  -- (without the sanitizer preload of a SANITIZE=1 run: python3 is not
  -- instrumented, and gshell there links the sanitizer itself)
  local cmd = string.format("%s TERM=dumb env -u LD_PRELOAD python3 spec/support/pty_drive.py %s -- %s %s 2>&1",
    env_prefix(env), stepf, R.GSHELL, table.concat(parts, " "))
  local p = assert(io.popen(cmd, "r"))
  local out = p:read("a")
  local ok = p:close()
  os.remove(stepf)
  return out, ok == true
end

return R
