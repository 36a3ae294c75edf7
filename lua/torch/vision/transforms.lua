-- torchvision.transforms: ToTensor, Resize, Normalize, Compose.
--
-- A transform is a callable object: t(image) transforms one image. Each
-- also has t:batch(images), the same transform applied to a whole batch
-- (a leading batch dim) with the same few tensor operations, so a
-- DataLoader over a data set builds a batch without one tensor per image
-- (torchvision.datasets' get_batch uses it). A plain Lua function is a
-- transform too, but only per image.
local torch = require("torch")
local E = require("torch.utils.errors")
local fail = E.fail

local T = {}

local function transform_class(name)
  local cls = { __name = name }
  cls.__index = cls
  cls.__call = function(self, x) return self:apply(x) end
  return cls
end

local function check_image(x, who)
  if not torch.is_tensor(x) then fail(who .. ": expected an image tensor, got " .. E.describe(x)) end
end

-- Whether every transform in list can work on a whole batch.
function T.batchable(t)
  return type(t) == "table" and type(t.batch) == "function" and (t.can_batch == nil or t:can_batch())
end

-- ------------------------------------------------------------ ToTensor

-- ToTensor(): a uint8 image HxW (gray) or HxWxC becomes float32 CxHxW with
-- values in [0, 1] (divided by 255); an image of another dtype keeps its
-- values (as torchvision leaves non-byte arrays unscaled).
local ToTensor = transform_class("ToTensor")
T.ToTensor = function() return setmetatable({}, ToTensor) end

local function to_tensor(x, batch_dims)
  local nd = x:dim() - batch_dims
  if nd == 2 then x = x:unsqueeze(batch_dims + 1)
  elseif nd == 3 then
    if batch_dims == 0 then x = x:permute(3, 1, 2) else x = x:permute(1, 4, 2, 3) end
  else
    fail(string.format("ToTensor: expected an image HxW or HxWxC%s, got %s", batch_dims > 0 and " (with a batch dim)" or "",
      E.describe(x)))
  end
  -- :to makes a new tensor (uint8 -> float32), so dividing it in place is safe
  if x.dtype == torch.uint8 then return x:to(torch.float32):div_(255) end
  return x:contiguous()
end

function ToTensor:apply(x)
  check_image(x, "ToTensor")
  return to_tensor(x, 0)
end
function ToTensor:batch(x) return to_tensor(x, 1) end
function ToTensor:__tostring() return "ToTensor()" end

-- -------------------------------------------------------------- Resize

-- Resize(size): bilinear, as torchvision's Resize on tensors (PyTorch's
-- interpolate, align_corners=False). An integer size is the new length of
-- the shorter side (the other keeps the aspect ratio, truncated); {h, w}
-- is the exact output size. Works on (..., H, W): uint8 images stay uint8
-- (rounded), float images stay float. CPU tensors only.
local Resize = transform_class("Resize")

local function positive(v)
  return math.type(v) == "integer" and v >= 1
end

T.Resize = function(size)
  if type(size) == "table" and not torch.is_tensor(size) then
    if #size == 1 then size = size[1] end
  end
  if type(size) == "table" then
    if #size ~= 2 or not positive(size[1]) or not positive(size[2]) then
      fail("Resize: size must be a positive integer (the shorter side) or {h, w} of positive integers, got "
        .. E.describe(size))
    end
    size = { size[1], size[2] }
  elseif not positive(size) then
    fail("Resize: size must be a positive integer (the shorter side) or {h, w} of positive integers, got "
      .. E.describe(size))
  end
  return setmetatable({ size = size }, Resize)
end

-- The output size for an h x w image (torchvision's rule).
function Resize:output_size(h, w)
  local s = self.size
  if type(s) == "table" then return s[1], s[2] end
  if h <= w then return s, math.floor(s * w / h) end
  return math.floor(s * h / w), s
end

-- channels: of each image, so the C code rounds as PyTorch does for one
-- channel or several (an image is HxW or CxHxW; a batch BxHxW of gray
-- images or BxCxHxW).
local function resize(self, x, batch)
  check_image(x, "Resize")
  if x:dim() < 2 then fail("Resize: expected an image (..., H, W), got " .. E.describe(x)) end
  local ih, iw = x:size(x:dim() - 1), x:size(x:dim())
  if ih < 1 or iw < 1 then fail(string.format("Resize: the input image is empty (%d x %d)", ih, iw)) end
  local h, w = self:output_size(ih, iw)
  local channels = x:dim() >= (batch and 4 or 3) and x:size(x:dim() - 2) or 1
  return torch._resize_bilinear(x, h, w, channels)
end
function Resize:apply(x) return resize(self, x, false) end
function Resize:batch(x) return resize(self, x, true) end
function Resize:__tostring()
  local s = self.size
  return "Resize(size=" .. (type(s) == "table" and ("{" .. s[1] .. ", " .. s[2] .. "}") or tostring(s)) .. ", bilinear)"
end

-- ----------------------------------------------------------- Normalize

-- Normalize(mean, std): (x - mean[c]) / std[c] for each channel c of a
-- float image CxHxW (or a batch BxCxHxW); mean and std are numbers or
-- lists with one value per channel (or one for all).
local Normalize = transform_class("Normalize")

local function number_list(v, what)
  if type(v) == "number" then return { v } end
  if type(v) ~= "table" or #v == 0 then
    fail("Normalize: " .. what .. " must be a number or a list of numbers (one per channel), got " .. E.describe(v))
  end
  local r = {}
  for i, x in ipairs(v) do
    if type(x) ~= "number" then
      fail(string.format("Normalize: %s[%d] must be a number, got %s", what, i, E.describe(x)))
    end
    r[i] = x
  end
  return r
end

T.Normalize = function(mean, std)
  local m, s = number_list(mean, "mean"), number_list(std, "std")
  if #m ~= #s and #m ~= 1 and #s ~= 1 then
    fail(string.format("Normalize: mean has %d values and std %d: give one per channel (or one for all)", #m, #s))
  end
  for i, v in ipairs(s) do
    if v == 0 then fail(string.format("Normalize: std[%d] is 0, which would divide by zero", i)) end
  end
  return setmetatable({ mean = m, std = s }, Normalize)
end

local function normalize(self, x, batch_dims)
  check_image(x, "Normalize")
  if not x:is_floating_point() then
    fail("Normalize: expected a float image (apply ToTensor first), got " .. E.describe(x))
  end
  if x:dim() - batch_dims < 3 then
    fail(string.format("Normalize: expected an image CxHxW%s, got %s", batch_dims > 0 and " with a batch dim" or "",
      E.describe(x)))
  end
  local c = x:size(batch_dims + 1)
  for _, list in ipairs({ self.mean, self.std }) do
    if #list ~= 1 and #list ~= c then
      fail(string.format("Normalize: the image has %d channels, mean and std have %d values", c, #list))
    end
  end
  local opts = { dtype = x.dtype, device = x.device }
  local m = torch.tensor(self.mean, opts):view(-1, 1, 1)
  local s = torch.tensor(self.std, opts):view(-1, 1, 1)
  return x:sub(m):div(s)
end

function Normalize:apply(x) return normalize(self, x, 0) end
function Normalize:batch(x) return normalize(self, x, 1) end
function Normalize:__tostring()
  local function fmt(l)
    local r = {}
    for i, v in ipairs(l) do r[i] = tostring(v) end
    return "{" .. table.concat(r, ", ") .. "}"
  end
  return "Normalize(mean=" .. fmt(self.mean) .. ", std=" .. fmt(self.std) .. ")"
end

-- ------------------------------------------------------------- Compose

-- Compose({t1, t2, ...}): t1, then t2, ...
local Compose = transform_class("Compose")

T.Compose = function(list)
  if type(list) ~= "table" or getmetatable(list) ~= nil then
    fail("Compose: expected a list of transforms, got " .. E.describe(list))
  end
  for i, t in ipairs(list) do
    if type(t) ~= "function" and not (type(t) == "table" and getmetatable(t) and getmetatable(t).__call) then
      fail(string.format("Compose: item %d is not a transform (a callable), got %s", i, E.describe(t)))
    end
  end
  return setmetatable({ transforms = table.move(list, 1, #list, 1, {}) }, Compose)
end

function Compose:apply(x)
  for _, t in ipairs(self.transforms) do x = t(x) end
  return x
end
function Compose:can_batch()
  for _, t in ipairs(self.transforms) do
    if not T.batchable(t) then return false end
  end
  return true
end
function Compose:batch(x)
  for _, t in ipairs(self.transforms) do x = t:batch(x) end
  return x
end
function Compose:__tostring()
  local r = {}
  for i, t in ipairs(self.transforms) do r[i] = "    " .. tostring(t) end
  return "Compose(\n" .. table.concat(r, "\n") .. "\n)"
end

return T
