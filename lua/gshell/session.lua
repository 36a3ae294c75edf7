-- gshell.session: one interactive namespace and how code runs in it.
--
-- Everything typed at the prompt, a notebook cell or a ```lua block of a
-- checked document is a "cell", compiled here with the environment `env`:
--
--   * `x = 1` (no `local`) assigns a real global, visible everywhere.
--   * A top-level `local` declaration is rewritten into an assignment to a
--     session local (table `vals`, consulted before the globals), so it
--     stays visible to later cells but never clobbers `_G`:
--       local a, b <const> = f()    ->  a, b = __gshell_decl({"a", "b"}, f())
--       local function g() end      ->  ;__gshell_decl({"g"});function g() end
--     __gshell_decl marks the names as session locals *after* the values are
--     computed (so `local print = print` works) and returns them unchanged.
--     Declarations with a <close> attribute, or of _ENV, stay real locals.
--     Rewriting keeps every newline, so line numbers in errors are right.
--   * As in lua.c, a cell is first tried as `return <cell>`; otherwise, when
--     its last statement is an expression, that one is returned (as Jupyter
--     shows a cell's last expression); whatever the cell returns is shown.
--   * A trailing `;` runs the cell but shows nothing.
--   * Lines starting with `%`, `!` or `?` (or ending in `?`) are shell
--     commands: they become calls __gshell_magic("<line>") (see magics.lua).
local lexer = require "gshell.lexer"
local pretty = require "gshell.pretty"
local core = require "gshell.core"
local hints = require "gshell.hints"

local M = {}
local Session = {}
Session.__index = Session

local function is_closer(t)
  local v = t.value
  if t.type == "keyword" then return v == "end" or v == "until" end
  return t.type == "op" and (v == ")" or v == "]" or v == "}")
end

-- ---- rewriting top-level locals -------------------------------------------

-- Index of the last token of the expression list starting at token k: the
-- list ends before the first top-level token that follows a complete
-- operand and cannot continue it (nor is a comma), or at a `;`.
local function explist_end(toks, k)
  local prev
  for m = k, #toks do
    local t = toks[m]
    if t.depth == 0 and not is_closer(t) then
      if t.type == "op" and t.value == ";" then return m - 1 end
      if prev and lexer.ends_operand(prev) and not lexer.continues(t) and t.value ~= "," then
        return m - 1
      end
    end
    prev = t
  end
  return #toks
end

local function decl_call(names)
  local q = {}
  for i, n in ipairs(names) do q[i] = '"' .. n .. '"' end
  return "__gshell_decl({" .. table.concat(q, ", ") .. "}"
end

-- Replaces src:sub(s, e) by `text`, keeping the newlines it spanned.
local function edit(s, e, text, src)
  local _, nl = src:sub(s, e):gsub("\n", "")
  return { s = s, e = e, text = text .. string.rep("\n", nl) }
end

local function apply_edits(src, edits)
  table.sort(edits, function(a, b) return a.s < b.s end)
  local out, pos = {}, 1
  for _, ed in ipairs(edits) do
    out[#out + 1] = src:sub(pos, ed.s - 1)
    out[#out + 1] = ed.text
    pos = ed.e + 1
  end
  out[#out + 1] = src:sub(pos)
  return table.concat(out)
end

-- Rewrites the top-level `local` declarations of a chunk (see the top of
-- this file). Returns src unchanged when it has none.
function M.rewrite_locals(src)
  if not src:find("local", 1, true) then return src end
  local toks = lexer.annotate_depth((lexer.code_tokens(src)))
  local edits = {}
  local i = 1
  while i <= #toks do
    local t = toks[i]
    if t.depth == 0 and t.type == "keyword" and t.value == "local" then
      local n1 = toks[i + 1]
      if n1 and n1.type == "keyword" and n1.value == "function" then
        local nm = toks[i + 2]
        if nm and nm.type == "name" and nm.value ~= "_ENV" then
          edits[#edits + 1] = edit(t.s, t.e, ";" .. decl_call({ nm.value }) .. ");", src)
        end
        i = i + 2
      else
        local names, j, keep = {}, i + 1, false
        while true do
          local nt = toks[j]
          if not nt or nt.type ~= "name" then keep = true; break end
          names[#names + 1] = nt.value
          if nt.value == "_ENV" then keep = true end
          j = j + 1
          if toks[j] and toks[j].value == "<" then
            if toks[j + 1] and toks[j + 1].value ~= "const" then keep = true end
            j = j + 3
          end
          if toks[j] and toks[j].value == "," then j = j + 1 else break end
        end
        if not keep then
          local list = table.concat(names, ", ")
          local eq = toks[j]
          if eq and eq.type == "op" and eq.value == "=" then
            local k = explist_end(toks, j + 1)
            if k > j then
              edits[#edits + 1] = edit(t.s, eq.e, list .. " = " .. decl_call(names) .. ", ", src)
              edits[#edits + 1] = { s = toks[k].e + 1, e = toks[k].e, text = ")" }
              i = k
            end
          else
            edits[#edits + 1] = edit(t.s, toks[j - 1].e, list .. " = " .. decl_call(names) .. ")", src)
            i = j - 1
          end
        end
      end
    end
    i = i + 1
  end
  if #edits == 0 then return src end
  return apply_edits(src, edits)
end

-- ---- the last statement of a cell ------------------------------------------

-- Tokens that can start an expression right after a complete statement
-- (others, like `(` or `-`, would continue the previous one).
local starts_expr = { ["not"] = true, ["function"] = true, ["nil"] = true,
  ["true"] = true, ["false"] = true, ["#"] = true, ["..."] = true }

-- `return <explist>` without a tail call (see __gshell_pass in M.new).
-- The `)` goes on the same line (Lua gives an expression the line where
-- it ends, which errors report), after a newline only when a trailing
-- comment would swallow it.
function M.returned(explist)
  local one = "return __gshell_pass(" .. explist .. ")"
  if load(one, "=returned", "t", {}) then return one end
  return "return __gshell_pass(" .. explist .. "\n)"
end

-- `src` with `return ` put before its last statement, or nil when the last
-- statement cannot be an expression or is the whole chunk. pass: return
-- it through __gshell_pass (inside a session), keeping the cell's frame.
function M.return_last(src, pass)
  local toks = lexer.annotate_depth((lexer.code_tokens(src)))
  local start
  for m = 2, #toks do
    local t, p = toks[m], toks[m - 1]
    if t.depth == 0 and not is_closer(t)
       and (t.type == "name" or t.type == "number" or starts_expr[t.value])
       and ((p.type == "op" and p.value == ";") or
            (lexer.ends_operand(p) and not lexer.continues(t)) or
            (p.type == "keyword" and p.value == "break")) then
      start = t
    end
  end
  if not start then return nil end
  if pass then return src:sub(1, start.s - 1) .. M.returned(src:sub(start.s)) end
  return src:sub(1, start.s - 1) .. "return " .. src:sub(start.s)
end

-- ---- shell lines inside cells ------------------------------------------------

local function long_quote(s)
  local eq = ""
  while s:find("]" .. eq .. "]", 1, true) or s:sub(-1 - #eq) == "]" .. eq do eq = eq .. "=" end
  return "[" .. eq .. "[" .. s .. "]" .. eq .. "]"
end

-- Is this line a shell command rather than Lua? `first`: the cell's first line.
-- `r = %timeit -o stmt`, `local r = %time f()`: a magic whose value is
-- assigned. Returns the part before the magic and the magic, or nil.
function M.assigned_magic(line)
  local lhs, cmd = line:match("^(%s*local%s+[%a_][%w_]*%s*=%s*)(%%[%a_].*)$")
  if not lhs then lhs, cmd = line:match("^(%s*[%a_][%w_%.]*%s*=%s*)(%%[%a_].*)$") end
  return lhs, cmd
end

function M.is_shell_line(line, first, magic_names)
  if line:match("^%s*[!?]") then return true end
  if M.assigned_magic(line) then return true end
  if hints.is_python_import(line) then return true end
  if line:match("^%s*[%a_][%w_%.:]*%?%s*$") then return true end
  local name = line:match("^%s*%%%%?([%a_][%w_]*)")
  if name then return first or (magic_names and magic_names[name] ~= nil) end
  return false
end

-- Turns shell lines into __gshell_magic calls; lines inside a long string
-- or comment are left alone. Returns src unchanged when there are none.
function M.preprocess(src, magic_names)
  if not (src:find("^%s*[%%!?]") or src:find("\n%s*[%%!?]") or src:find("%?%s*\n")
          or src:find("%?%s*$") or src:find("import", 1, true) or src:find("=%s*%%")) then
    return src
  end
  local lines, out = {}, {}
  for line in (src .. "\n"):gmatch("(.-)\n") do lines[#lines + 1] = line end
  local changed = false
  for i, line in ipairs(lines) do
    if M.is_shell_line(line, i == 1, magic_names) then
      local before = table.concat(out, "\n", 1, i - 1)
      local _, unfinished = lexer.tokenize(before)
      if i == 1 or not unfinished then
        local lhs, cmd = M.assigned_magic(line)
        out[i] = (lhs or "") .. "__gshell_magic(" .. long_quote(((cmd or line):gsub("^%s+", ""):gsub("%s+$", ""))) .. ")"
        changed = true
      else
        out[i] = line
      end
    else
      out[i] = line
    end
  end
  return changed and table.concat(out, "\n") or src
end

-- A final `;` token: show nothing. Returns src without it, and true.
local function strip_semicolon(src)
  if not src:find(";", 1, true) then return src, false end
  local toks = lexer.code_tokens(src)
  local last = toks[#toks]
  if last and last.type == "op" and last.value == ";" then
    return src:sub(1, last.s - 1) .. src:sub(last.e + 1), true
  end
  return src, false
end

-- ---- the session -------------------------------------------------------------

-- Creates a session. opts.err(msg): where error messages go (default
-- stderr); opts.magics: the magics table (default gshell.magics).
-- The whole text of a file the shell was asked to run, or nil after
-- printing "gshell: cannot open PATH: why" (--check and --notebook).
function M.read_input(path)
  -- a regular file only (a FIFO would block, /dev/zero never end), and
  -- text: a binary file used to check as 0 blocks, successfully
  local text, err = require("torch")._read_text(path)
  if not text then
    io.stderr:write("gshell: ", tostring(err), "\n")
    return nil
  end
  if text:find("\0", 1, true) then
    io.stderr:write("gshell: cannot read ", path, ": it is not a text file (it holds NUL bytes)\n")
    return nil
  end
  return text
end

-- Saves a file the shell writes (--md, --check --update) as torch.save
-- saves one (src/core/gs_file.h): through symbolic links, never over a device
-- or FIFO, atomically. Returns true, or nil and the message.
function M.save_text(path, text)
  return require("torch")._save_text(path, text)
end

-- os.exit inside a notebook cell or a checked block would end the process
-- before the notebook's --md is written or the check is reported: with
-- trap_exit the session's os.exit records the status and raises instead.
local function exit_trap(self)
  local fake = setmetatable({}, { __index = os })
  fake.exit = function(code)
    if code == nil or code == true then code = 0 elseif code == false then code = 1 end
    self.exit_code = math.tointeger(code) or 1
    error(string.format("os.exit(%s) called", tostring(code)), 2)
  end
  return fake
end

function M.new(opts)
  opts = opts or {}
  local G = _G
  local vals = setmetatable({}, { __index = G })
  local declared = {}
  local env = setmetatable({}, {
    __index = vals,
    __newindex = function(_, k, v)
      if declared[k] then rawset(vals, k, v) else G[k] = v end
    end,
    -- pairs(_ENV) at the prompt: session locals, then unshadowed globals
    __pairs = function()
      local in_vals, key = true, nil
      return function()
        while true do
          local v
          if in_vals then
            key, v = next(vals, key)
            if key == nil then in_vals = false end
          end
          if not in_vals then
            key, v = next(G, key)
            if key == nil then return nil end
            if rawget(vals, key) == nil then return key, v end
          elseif type(key) ~= "string" or key:sub(1, 8) ~= "__gshell" then
            return key, v
          end
        end
      end
    end,
  })
  local self = setmetatable({
    vals = vals, declared = declared, env = env, G = G,
    err = opts.err or function(msg) io.stderr:write(msg, "\n") end,
    start_globals = {},
    last_traceback = nil,
    history = {},          -- the cells run, in order (%history, %save)
  }, Session)
  for k in next, G do self.start_globals[k] = true end
  rawset(vals, "__gshell_decl", function(names, ...)
    for i = 1, #names do declared[names[i]] = true end
    return ...
  end)
  rawset(vals, "__gshell_magic", function(line) return self:magic(line) end)
  -- The trap is the shell's, not the user's: %who and %reset pass over it.
  self.hidden = {}
  if opts.trap_exit then rawset(vals, "os", exit_trap(self)); self.hidden.os = true end
  -- Errors name the user's line (a library file's location is replaced),
  -- and %tb shows the call stack down to the user's cell, not the shell's.
  self.handler = function(e)
    local msg = hints.locate(M.error_text(e), 2)
    self.last_traceback = hints.user_traceback(debug.traceback(msg, 2))
    self.tb_serial = (self.tb_serial or 0) + 1   -- (the kernel asks whether a cell made one)
    return msg
  end
  -- `return f(x)` would be a tail call, which drops the cell's frame from
  -- the stack (and with it the user's line in errors): cells return their
  -- values through this function instead.
  rawset(vals, "__gshell_pass", function(...) return ... end)
  core.protect_handler(self.handler)
  self.magics = opts.magics or require("gshell.magics")
  return self
end

-- An error value as text.
function M.error_text(e)
  if type(e) == "string" then return e end
  local mt = getmetatable(e)
  if mt and mt.__tostring then
    local ok, s = pcall(tostring, e)
    if ok then return s end
  end
  return string.format("(error object is a %s value)", type(e))
end

-- Forgets the user's variables (%reset): session locals and the globals
-- made since the session started. Returns how many.
function Session:reset()
  local n = 0
  for _, name in ipairs(self:user_names()) do
    if rawget(self.vals, name) ~= nil then rawset(self.vals, name, nil) else self.G[name] = nil end
    self.declared[name] = nil
    n = n + 1
  end
  rawset(self.vals, "_", nil)
  self.declared["_"] = nil
  return n
end

-- Runs a Lua file in the session as a script (%run): its top-level locals
-- and globals stay visible afterwards; `arg` is {[0] = path, args...}
-- while it runs. Errors propagate.
function Session:run_file(path, args)
  local f, why = io.open(path, "rb")
  if not f then error("%run: cannot open " .. tostring(why), 0) end
  local src = f:read("a"):gsub("^#![^\n]*", "")
  f:close()
  local fn, err = self:compile(src, { chunkname = "@" .. path, script = true })
  if not fn then error(err, 0) end
  local saved = rawget(self.G, "arg")
  local restore <close> = setmetatable({}, { __close = function() self.G.arg = saved end })
  local a = { [0] = path }
  for i, v in ipairs(args or {}) do a[i] = v end
  self.G.arg = a
  fn(table.unpack(a))
end

-- Sets a session local (declared, so later `name = v` updates it).
function Session:set_local(name, value)
  self.declared[name] = true
  rawset(self.vals, name, value)
end

-- The user's variables: session locals and globals made since the start.
function Session:user_names()
  local names = {}
  for k in next, self.vals do
    if type(k) == "string" and k:sub(1, 8) ~= "__gshell" and k ~= "_" and not self.hidden[k] then
      names[#names + 1] = k
    end
  end
  for k in next, self.G do
    if type(k) == "string" and not self.start_globals[k] and rawget(self.vals, k) == nil then
      names[#names + 1] = k
    end
  end
  table.sort(names)
  return names
end

-- Looks a name up as code at the prompt would see it.
function Session:lookup(name)
  return self.env[name]
end

-- Compiles a cell. Returns the function and `silent`, or nil and
-- "incomplete" (when allow_incomplete and the text is unfinished), or nil
-- and the syntax error. opts: chunkname, allow_incomplete, first_line
-- (line number of the cell's first line in its file), script (run as a
-- script: no shell lines, no `return` tries).
function Session:compile(src, opts)
  opts = opts or {}
  local name = opts.chunkname or "=stdin"
  local pad = string.rep("\n", (opts.first_line or 1) - 1)
  local silent = false
  if not opts.script then
    src = M.preprocess(src, self.magics.names)
    src, silent = strip_semicolon(src)
    local f = load(pad .. "return " .. src, name, "t", self.env)
    if f then return load(pad .. M.returned(src), name, "t", self.env) or f, silent end
  end
  -- Is the cell valid Lua as it is, or with its last statement returned?
  local f, err = load(pad .. src, name, "t", self.env)
  local flast
  if not opts.script then
    local last = M.return_last(src)
    flast = last and load(pad .. last, name, "t", self.env)
  end
  if not f and not flast then
    if opts.allow_incomplete and err:sub(-5) == "<eof>" and not require("gshell.pyhints").is_python_block(src) then
      return nil, "incomplete"
    end
    return nil, err
  end
  -- It is: run the version with top-level locals rewritten (falling back
  -- to the plain one should the rewrite ever not compile).
  local code = M.rewrite_locals(src)
  if not opts.script then
    local last = M.return_last(code, true)
    local g = last and (load(pad .. last, name, "t", self.env)
                        or load(pad .. M.return_last(code), name, "t", self.env))
    if g then return g, silent end
  end
  local g = load(pad .. code, name, "t", self.env)
  return g or flast or f, silent
end

-- Runs a compiled cell with the session's error handler. Returns true and
-- the results packed, or false and the error message (already recorded as
-- last_traceback).
function Session:call(fn, ...)
  local r = table.pack(xpcall(fn, self.handler, ...))
  if not r[1] then return false, r[2] end
  return true, table.pack(table.unpack(r, 2, r.n))
end
-- Ctrl-C escapes every pcall inside a cell and stops here (src/shell/repl_core.c).
core.top_level(Session.call)

-- Text for a results pack, or nil when there is nothing to show. Updates
-- `_` with the first value.
function Session:show_text(results)
  if not results or results.n == 0 then return nil end
  if results[1] ~= nil then self:set_local("_", results[1]) end
  return pretty.repr_values(results.n, table.unpack(results, 1, results.n))
end

-- Compiles and runs one cell; prints its results (unless silent) with
-- `show(text)` and errors with self.err. Returns "ok", "error" or
-- "incomplete". opts as for compile, plus show (default: print to stdout).
function Session:run_cell(src, opts)
  opts = opts or {}
  local fn, silent = self:compile(src, opts)
  if silent ~= "incomplete" and not opts.script then self.history[#self.history + 1] = src end
  if not fn then
    if silent == "incomplete" then return "incomplete" end
    self.err(silent)
    local hs = require("gshell.pyhints").after_syntax_error(src, silent, opts.first_line, self.env)
    for _, h in ipairs(hs) do self.err(h) end
    self:after_cell(src, opts, { status = "error", err = silent, hints = hs })
    return "error"
  end
  local ok, res = self:call(fn, table.unpack(opts.args or {}))
  if not ok then
    local hs = hints.after_error(self.env, src, res)
    res = hints.drop_colon_clause(res, hs)
    self.err(res)
    for _, h in ipairs(hs) do self.err(h) end
    self:after_cell(src, opts, { status = "error", err = res, hints = hs })
    return "error"
  end
  if not opts.script then
    -- a cell that ran is no error: its hints go with its output
    for _, h in ipairs(require("gshell.pyhints").python_constants(src, self.env)) do io.stdout:write(h, "\n") end
  end
  if not silent and not opts.script then
    -- showing a value may wait for a device: an error it finds there (a
    -- device error) is the cell's error, as if the cell had printed it
    local shown, out = self:call(self.show_text, self, res)
    if not shown then
      self.err(out)
      self:after_cell(src, opts, { status = "error", err = out })
      return "error"
    end
    local text = out[1]
    if text then
      if opts.show then opts.show(text) else io.stdout:write(text, "\n") end
    end
  end
  self:after_cell(src, opts, { status = "ok", results = res })
  return "ok"
end

-- Tells the session's on_cell hook (a running lesson) what a cell did.
function Session:after_cell(src, opts, ctx)
  if not self.on_cell or opts.script then return end
  ctx.src, ctx.env = src, self.env
  io.stdout:flush()
  local ok, err = pcall(self.on_cell, self, ctx)
  if not ok then self.err("lesson: " .. tostring(err)) end
end

-- Runs a cell with everything it writes to stdout captured (C code and
-- child processes too). Returns a table:
-- output (what the cell printed, errors included, as the prompt shows
-- them), result (the shown value's text or nil), status ("ok"/"error"),
-- error (the message or nil). `live`: print as it runs instead, capturing
-- nothing (output is then nil).
function Session:run_captured(src, opts, live)
  local r = {}
  local saved = self.err
  local o = {}
  for k, v in pairs(opts or {}) do o[k] = v end
  o.show = function(text) r.result = text end
  self.err = function(msg)
    r.error = msg
    io.stdout:write(msg, "\n")
  end
  local capturing = not live
  if capturing then core.capture_begin() end
  local ok, status = pcall(self.run_cell, self, src, o)
  self.err = saved
  if capturing then
    r.output = core.capture_end()
    if r.output ~= "" and r.output:sub(-1) ~= "\n" then r.output = r.output .. "\n" end
  end
  if not ok then
    r.error = M.error_text(status)
    r.status = "error"
    if r.output then r.output = r.output .. r.error .. "\n" else io.stdout:write(r.error, "\n") end
  else
    r.status = status
  end
  return r
end

-- Runs a shell line (`%magic args`, `!cmd`, `?name`, `name?`).
function Session:magic(line)
  return self.magics.run(self, line)
end

return M
