-- torch.d2l.attention: the book's masking helpers for the attention and
-- sequence-to-sequence chapters (Dive into Deep Learning 9.7 and 11.3),
-- translated line by line. Valid lengths are counts (how many leading
-- positions of a row are real), so nothing shifts for 1-based indexing;
-- labels are 1-based class indices, as everywhere in gshell.
local torch = require("torch")
local E = require("torch.utils.errors")
local fail, describe = E.fail, E.describe

local M = {}

-- sequence_mask(X, valid_len[, value = 0]): X's entries at positions
-- valid_len[i] and beyond along dim 2 of row i set to value, in place (the
-- book's X[~mask] = value); returns X. The write is recorded when X is
-- part of an autograd graph (a CopySlices when X is a view).
function M.sequence_mask(X, valid_len, value)
  local who = "d2l.sequence_mask(X, valid_len, value)"
  if not torch.is_tensor(X) or X:dim() < 2 then
    fail(("%s: X must be a tensor of at least 2 dimensions (batch, steps, ...), got %s"):format(who, describe(X)))
  end
  if not torch.is_tensor(valid_len) or valid_len:dim() ~= 1 or valid_len:size(1) ~= X:size(1) then
    fail(("%s: valid_len must be a 1-d tensor of %d lengths (one per row of X), got %s"):format(who, X:size(1),
      describe(valid_len)))
  end
  value = value or 0
  if type(value) ~= "number" and type(value) ~= "boolean" then
    fail(("%s: value must be a number, got %s"):format(who, describe(value)))
  end
  local maxlen = X:size(2)
  local mask = torch.arange(maxlen, { dtype = torch.float32, device = X.device }):unsqueeze(1)
               :lt(valid_len:unsqueeze(2))
  X[mask:logical_not()] = value
  return X
end

-- masked_softmax(X, valid_lens): softmax over the last dim with the
-- positions past each valid length masked out (-1e6 before the softmax,
-- so they get 0). valid_lens: nil (a plain softmax), one length per batch
-- entry (1-d, shared by its rows) or one per row (2-d, X's first two dims).
-- As in the book, X itself is masked when its reshape is a view.
function M.masked_softmax(X, valid_lens)
  if valid_lens == nil then return X:softmax(-1) end
  local who = "d2l.masked_softmax(X, valid_lens)"
  if not torch.is_tensor(X) or X:dim() < 2 then
    fail(("%s: X must be a tensor of at least 2 dimensions, got %s"):format(who, describe(X)))
  end
  if not torch.is_tensor(valid_lens) then
    fail(("%s: valid_lens must be nil or a tensor of lengths, got %s"):format(who, describe(valid_lens)))
  end
  local shape = X.shape
  if valid_lens:dim() == 1 then
    valid_lens = torch.repeat_interleave(valid_lens, shape[2])
  else
    valid_lens = valid_lens:reshape(-1)
  end
  X = M.sequence_mask(X:reshape(-1, shape[#shape]), valid_lens, -1e6)
  return X:reshape(shape):softmax(-1)
end

-- MaskedSoftmaxCELoss(): the cross-entropy of pred [batch, steps, vocab]
-- against label [batch, steps] (1-based classes), each step weighted 1
-- inside its sequence's valid length and 0 after it, averaged over the
-- steps: one loss per sequence. The book permutes pred to [batch, vocab,
-- steps] for PyTorch's K-dimensional cross-entropy; here the steps are
-- flattened into rows instead, which gives the same losses.
function M.MaskedSoftmaxCELoss(...)
  local nn = torch.nn
  local cls = M._MaskedSoftmaxCELoss
  if not cls then
    cls = nn.CrossEntropyLoss:extend("MaskedSoftmaxCELoss")
    function cls:forward(pred, label, valid_len)
      local who = "MaskedSoftmaxCELoss(pred, label, valid_len)"
      if not torch.is_tensor(pred) or pred:dim() ~= 3 then
        fail(("%s: pred must be a tensor of shape [batch, steps, vocab], got %s"):format(who, describe(pred)))
      end
      if not torch.is_tensor(label) or label:dim() ~= 2 or label:size(1) ~= pred:size(1)
         or label:size(2) ~= pred:size(2) then
        fail(("%s: label must be a tensor of shape [%d, %d] (batch, steps), got %s"):format(who, pred:size(1),
          pred:size(2), describe(label)))
      end
      local weights = torch.ones_like(label)
      weights = M.sequence_mask(weights, valid_len)
      self.reduction = "none"
      local b, steps, vocab = pred:size(1), pred:size(2), pred:size(3)
      local unweighted_loss = nn.CrossEntropyLoss.forward(self, pred:reshape(b * steps, vocab), label:reshape(-1))
      local weighted_loss = (unweighted_loss:reshape(b, steps) * weights):mean(2)
      return weighted_loss
    end
    M._MaskedSoftmaxCELoss = cls
  end
  return cls(...)
end

return M
