-- gshell.html: the text/html that the Jupyter kernel sends beside
-- text/plain for a cell's value. Only small tensors get one: a table of
-- their values (1-D: one row; 2-D: rows and columns) under a caption with
-- shape, dtype and device. Everything else is text only (nil here).
local M = {}

M.max_elements = 400   -- larger tensors show as text only

local function escape(s)
  return (s:gsub("[&<>\"]", { ["&"] = "&amp;", ["<"] = "&lt;", [">"] = "&gt;", ['"'] = "&quot;" }))
end

local function cell(v)
  local s
  if math.type(v) == "float" then
    s = string.format("%.6g", v)
    if not s:find("[%.eEn]") then s = s .. "." end   -- 1.0 shows as "1.", as PyTorch prints it
  else
    s = tostring(v)
  end
  return "<td>" .. escape(s) .. "</td>"
end

local function is_tensor(v)
  local mt = getmetatable(v)
  return type(mt) == "table" and rawget(mt, "__name") == "torch.Tensor"
end

-- The HTML for a value, or nil.
function M.repr(v)
  if not is_tensor(v) then return nil end
  local ok, html = pcall(function()
    local nd = v.ndim
    if (nd ~= 1 and nd ~= 2) or v:numel() > M.max_elements or v:numel() == 0 then return nil end
    local rows = v:tolist()
    if nd == 1 then rows = { rows } end
    local d = v.device
    local where = d.index and (d.type .. ":" .. d.index) or d.type
    local out = { string.format("<table><caption>tensor of shape %s, %s, on %s</caption>",
      escape(tostring(v.shape)), escape(tostring(v.dtype)), escape(where)) }
    for _, row in ipairs(rows) do
      local cells = {}
      for j, x in ipairs(row) do cells[j] = cell(x) end
      out[#out + 1] = "<tr>" .. table.concat(cells) .. "</tr>"
    end
    out[#out + 1] = "</table>"
    return table.concat(out, "\n")
  end)
  return ok and html or nil
end

return M
