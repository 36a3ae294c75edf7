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

-- The numbers as the text repr prints them (PyTorch's 4 digits, its
-- common format per tensor), in order, or nil when the repr is not one
-- number per element (a scale factor line, a summary with `...`).
local function repr_numbers(v, text)
  local body = text:match("^tensor%((.*)%)$")
  if not body then return nil end
  body = body:gsub(",%s*%a[%w_]*=.*$", "")   -- device=, dtype=, grad_fn=, requires_grad=
  if body:find("...", 1, true) or body:find("*", 1, true) then return nil end
  local nums = {}
  for tok in body:gmatch("[^%[%],%s]+") do nums[#nums + 1] = tok end
  if #nums ~= v:numel() then return nil end
  return nums
end

-- The HTML for a value, or nil.
function M.repr(v)
  if not is_tensor(v) then return nil end
  local ok, html = pcall(function()
    local nd = v.ndim
    if (nd ~= 1 and nd ~= 2) or v:numel() > M.max_elements or v:numel() == 0 then return nil end
    local rows = v:tolist()
    if nd == 1 then rows = { rows } end
    local text = tostring(v)
    local nums = repr_numbers(v, text)
    local d = v.device
    local where = d.index and (d.type .. ":" .. d.index) or d.type
    local extra = ""
    local gf = text:match("grad_fn=(<[%w_]+>)")
    if gf then extra = ", grad_fn=" .. gf
    elseif v.requires_grad then extra = ", requires_grad=True" end
    -- the caption stays on one line above the table, however narrow the table
    local out = { string.format("<table><caption style=\"caption-side: top; white-space: nowrap; text-align: left\">" ..
      "tensor of shape %s, %s, on %s%s</caption>", escape(tostring(v.shape)), escape(tostring(v.dtype)),
      escape(where), escape(extra)) }
    local k = 0
    for _, row in ipairs(rows) do
      local cells = {}
      for j, x in ipairs(row) do
        k = k + 1
        cells[j] = nums and ("<td>" .. escape(nums[k]) .. "</td>") or cell(x)
      end
      out[#out + 1] = "<tr>" .. table.concat(cells) .. "</tr>"
    end
    out[#out + 1] = "</table>"
    return table.concat(out, "\n")
  end)
  return ok and html or nil
end

return M
