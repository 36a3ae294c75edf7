-- gshell.docs: one-line help for the API (what help() and ?name show).
--
-- Keys are dotted names: "torch.ones", "Tensor.sum" (a tensor method, also
-- reached as x:sum, x.sum and torch.sum), "nn.Linear", "torch.cuda.synchronize".
-- Other modules may add entries with docs.add(name, text).
local M = {}

local entries = {}

-- Factories --------------------------------------------------------------------
local opts = "{device=, dtype=, requires_grad=}"
local D = {
  ["torch"] = "torch: tensors on the CPU and CUDA devices (real or simulated), PyTorch's API with 1-based dims",
  ["torch.tensor"] = "torch.tensor(data, " .. opts .. ") -> Tensor: from a number or nested table (integers: int64, floats: float32)",
  ["torch.ones"] = "torch.ones(size..., " .. opts .. ") -> Tensor filled with 1",
  ["torch.zeros"] = "torch.zeros(size..., " .. opts .. ") -> Tensor filled with 0",
  ["torch.empty"] = "torch.empty(size..., " .. opts .. ") -> uninitialised Tensor",
  ["torch.full"] = "torch.full(size, value, " .. opts .. ") -> Tensor filled with value",
  ["torch.rand"] = "torch.rand(size..., " .. opts .. ") -> uniform [0, 1) samples",
  ["torch.randn"] = "torch.randn(size..., " .. opts .. ") -> standard normal samples",
  ["torch.randint"] = "torch.randint(low, high, size, " .. opts .. ") -> integers in [low, high)",
  ["torch.arange"] = "torch.arange(n | a, b[, step], " .. opts .. ") -> 0..n-1, or a, a+step, ... below b",
  ["torch.linspace"] = "torch.linspace(a, b, n, " .. opts .. ") -> n evenly spaced values from a to b",
  ["torch.eye"] = "torch.eye(n, " .. opts .. ") -> n x n identity matrix",
  ["torch.ones_like"] = "torch.ones_like(x, " .. opts .. ") -> ones with x's shape, dtype, device",
  ["torch.zeros_like"] = "torch.zeros_like(x, " .. opts .. ") -> zeros with x's shape, dtype, device",
  ["torch.rand_like"] = "torch.rand_like(x, " .. opts .. ") -> uniform samples shaped like x",
  ["torch.randn_like"] = "torch.randn_like(x, " .. opts .. ") -> normal samples shaped like x",
  ["torch.full_like"] = "torch.full_like(x, value, " .. opts .. ") -> value, shaped like x",
  ["torch.empty_like"] = "torch.empty_like(x, " .. opts .. ") -> uninitialised, shaped like x",
  ["torch.Tensor"] = "torch.Tensor(size...) -> uninitialised float32 Tensor",
  ["torch.manual_seed"] = "torch.manual_seed(seed): same random numbers on every device for one seed",
  ["torch.cat"] = "torch.cat(list[, dim=1]) -> tensors joined along an existing dim",
  ["torch.stack"] = "torch.stack(list[, dim=1]) -> tensors joined along a new dim",
  ["torch.device"] = "torch.device('cpu' | 'cuda' | 'cuda:1' | type, index) -> device; fields .type, .index",
  ["torch.clock"] = "torch.clock() -> seconds of a monotonic wall clock, for timing",
  ["torch.save"] = "torch.save(obj, path): a tensor or table of tensors to a safetensors file (atomic write)",
  ["torch.load"] = "torch.load(path[, {map_location = dev}]) -> what torch.save wrote, on its saved devices",
  ["torch.no_grad"] = "torch.no_grad(fn) or `local g <close> = torch.no_grad()`: run without recording gradients",
  ["torch.enable_grad"] = "torch.enable_grad(fn) or `local g <close> = torch.enable_grad()`: record gradients again inside no_grad",
  ["torch.is_grad_enabled"] = "torch.is_grad_enabled() -> whether ops are being recorded for backward",
  ["torch.addmm"] = "torch.addmm(bias, a, b) -> bias + a @ b (nn.Linear's product; grad_fn AddmmBackward0)",
  ["torch.nll_loss"] = "torch.nll_loss(logp, target) -> mean of -logp[i, target[i]], target holding 1-based class indices",
  ["torch.set_default_device"] = "torch.set_default_device(dev): where factories put tensors when no device is given",
  ["torch.get_default_device"] = "torch.get_default_device() -> the device factories use by default",
  ["torch.with_device"] = "torch.with_device(dev, fn): run fn with dev as the default device, restored after",
  ["torch.device_scope"] = "local s <close> = torch.device_scope(dev): default device until s goes out of scope",
  ["torch.set_log_device_placement"] = "torch.set_log_device_placement(true): print the device each operation runs on",
  ["torch.try_gpu"] = "try_gpu([i=0]) -> cuda:i if it exists, else cpu",
  ["torch.try_all_gpus"] = "try_all_gpus() -> a list of all CUDA devices, or {cpu}",
  ["torch.is_tensor"] = "torch.is_tensor(v) -> true when v is a Tensor",
  ["torch.float32"] = "torch.float32 (torch.float): 32-bit float dtype, the default",
  ["torch.float64"] = "torch.float64 (torch.double): 64-bit float dtype",
  ["torch.int64"] = "torch.int64 (torch.long): 64-bit integer dtype (Lua integers)",

  -- torch.cuda
  ["torch.cuda"] = "torch.cuda: CUDA devices (real GPUs, or simulated with --sim-gpus N)",
  ["torch.cuda.is_available"] = "torch.cuda.is_available() -> true when a CUDA device (real or simulated) exists",
  ["torch.cuda.unavailable_reason"] = "torch.cuda.unavailable_reason() -> why no real GPU is usable (no driver, too old, built without CUDA), or nil",
  ["torch.cuda.libraries"] = "torch.cuda.libraries() -> the CUDA libraries loaded so far: {{name =, path =}, ...}, and lib[name] = path",
  ["torch.cuda.device_count"] = "torch.cuda.device_count() -> number of CUDA devices",
  ["torch.cuda.kernel"] = "torch.cuda.kernel(fn [, {name = 'add'}]) -> a kernel; k:launch(grid, block, ...) runs fn on a simulated GPU (tensor arguments are arrays indexed from 0) and returns counts and the modelled time (docs/kernel-lab.md)",
  ["torch.cuda.current_device"] = "torch.cuda.current_device() -> the ordinal 'cuda' means",
  ["torch.cuda.set_device"] = "torch.cuda.set_device(i): make 'cuda' mean cuda:i",
  ["torch.cuda.get_device_name"] = "torch.cuda.get_device_name(i) -> the device's name",
  ["torch.cuda.get_device_properties"] = "torch.cuda.get_device_properties(i) -> {name, total_memory, major, minor, multi_processor_count, simulated}",
  ["torch.cuda.synchronize"] = "torch.cuda.synchronize([dev]): wait for queued work on dev (all devices when omitted)",
  ["torch.cuda.memory_allocated"] = "torch.cuda.memory_allocated([dev]) -> bytes held by tensors on dev",
  ["torch.cuda.max_memory_allocated"] = "torch.cuda.max_memory_allocated([dev]) -> peak bytes since start or reset_peak_memory_stats",
  ["torch.cuda.memory_reserved"] = "torch.cuda.memory_reserved([dev]) -> bytes held by the caching allocator",
  ["torch.cuda.reset_peak_memory_stats"] = "torch.cuda.reset_peak_memory_stats([dev]): restart the peak count",
  ["torch.cuda.empty_cache"] = "torch.cuda.empty_cache(): give cached blocks back to the device",
  ["torch.cuda.mem_get_info"] = "torch.cuda.mem_get_info([dev]) -> free, total bytes",
  ["torch.cuda.transfers"] = "torch.cuda.transfers() -> {h2d = {count=, bytes=}, d2h = {...}, d2d = {...}} copies since start/reset",
  ["torch.cuda.reset_transfers"] = "torch.cuda.reset_transfers(): zero the copy counters",
  ["torch.profiler"] = "torch.profiler: profile(fn) records kernels and copies per device and stream (docs/profiling.md)",
  ["torch.profiler.profile"] = "torch.profiler.profile(fn[, {record_shapes = true}]) -> profile: print(p) for the table per op, p:export_chrome_trace(path), p:export_timeline(path)",
  ["torch.profiler.from_events"] = "torch.profiler.from_events(list[, t0, t1]) -> a profile of events given by hand ({name, kind, device, stream, t0, t1, bytes, flops})",
  ["torch.cuda.smi"] = "torch.cuda.smi(): an nvidia-smi-style table of every device",

  -- nn and optim
  ["nn"] = "nn: layers and losses; nn.Module:extend(name) for your own modules",
  ["nn.Module"] = "nn.Module:extend(name) -> class; define init(self, ...) and forward(self, x); call as model(x)",
  ["nn.Linear"] = "nn.Linear(in, out[, {bias = true}]) -> y = x W^T + b",
  ["nn.Sequential"] = "nn.Sequential(m1, m2, ...) -> modules applied in order; net[1] is the first, #net the count",
  ["nn.ReLU"] = "nn.ReLU() -> max(x, 0)",
  ["nn.Sigmoid"] = "nn.Sigmoid() -> 1 / (1 + exp(-x))",
  ["nn.Tanh"] = "nn.Tanh() -> tanh(x)",
  ["nn.Flatten"] = "nn.Flatten() -> all dims but the first flattened",
  ["nn.Dropout"] = "nn.Dropout(p) -> zeroes elements with probability p while training",
  ["nn.MSELoss"] = "nn.MSELoss() -> loss(pred, target): mean squared error",
  ["nn.CrossEntropyLoss"] = "nn.CrossEntropyLoss() -> loss(logits, classes): classes are 1-based int64",
  ["nn.MultiheadAttention"] = "nn.MultiheadAttention(embed_dim, num_heads[, {dropout =, bias =, batch_first =, kdim =, vdim =}]) -> out, weights = m(q, k, v[, {key_padding_mask =, attn_mask =, need_weights =, average_attn_weights =}]) (docs/attention.md)",
  ["nn.DataParallel"] = "nn.DataParallel(module[, {device_ids = {0, 1}, output_device = 0, dim = 1}]) -> splits batches over devices",
  ["nn.parallel.DistributedDataParallel"] = "nn.parallel.DistributedDataParallel(module[, {bucket_cap_mb = 25}]) -> averages gradients over the ranks during backward (docs/scaling.md)",
  ["torch.cuda.comm.broadcast"] = "torch.cuda.comm.broadcast(t, devices) -> {t on each device} (NCCL on real GPUs)",
  ["torch.cuda.comm.reduce_add"] = "torch.cuda.comm.reduce_add(tensors[, destination]) -> their sum on destination",
  ["torch.cuda.comm.scatter"] = "torch.cuda.comm.scatter(t, devices[, {dim =, chunk_sizes =}]) -> chunks, one per device",
  ["torch.cuda.comm.gather"] = "torch.cuda.comm.gather(tensors[, {dim =, destination =}]) -> concatenation on destination",
  ["torch.distributed.init_process_group"] = "torch.distributed.init_process_group([{backend = 'mpi' | 'nccl'}]): join the ranks of mpirun -np N gshell script.lua",
  ["torch.distributed.all_reduce"] = "torch.distributed.all_reduce(t[, {op = 'sum', async_op = false}]): in place over the ranks; ops sum avg product min max",
  ["torch.distributed.broadcast"] = "torch.distributed.broadcast(t, {src = r}): rank r's t to every rank",
  ["torch.distributed.all_gather"] = "torch.distributed.all_gather(list, t): list[i] = rank i-1's t",
  ["torch.distributed.reduce_scatter"] = "torch.distributed.reduce_scatter(out, list[, {op =}]): out = op over ranks of list[rank+1]",
  ["torch.distributed.get_rank"] = "torch.distributed.get_rank() -> this process's rank, 0-based",
  ["torch.distributed.get_world_size"] = "torch.distributed.get_world_size() -> the number of ranks",
  ["torch.utils.data.DistributedSampler"] = "DistributedSampler(ds[, {num_replicas =, rank =, shuffle = true, seed = 0}]) -> this rank's share; set_epoch(e)",
  ["optim"] = "optim: optimizers over a module's parameters()",
  ["optim.SGD"] = "optim.SGD(params, {lr=, momentum=, weight_decay=}) -> opt; opt:zero_grad(), opt:step()",
  ["optim.Adam"] = "optim.Adam(params, {lr=}) -> opt; opt:zero_grad(), opt:step()",
}
for k, v in pairs(D) do entries[k] = v end

-- d2l, the book's helpers (lua/torch/d2l, docs/d2l.md) -----------------------------
local D2L = {
  ["d2l"] = "d2l: the helpers of the book's d2l package (train_ch6, Animator, show_images, ...); docs/d2l.md",
  ["d2l.try_gpu"] = "d2l.try_gpu([i = 0]) -> cuda:i if it exists, else the CPU",
  ["d2l.try_all_gpus"] = "d2l.try_all_gpus() -> every GPU, or {cpu}",
  ["d2l.Timer"] = "d2l.Timer() -> timer (started); timer:start(), :stop() -> seconds, :sum(), :avg(), :cumsum()",
  ["d2l.Benchmark"] = "d2l.Benchmark([description]): `local _ <close> = d2l.Benchmark('x')` or :run(fn); prints 'x: 0.1234 sec'",
  ["d2l.Accumulator"] = "d2l.Accumulator(n) -> n running sums; acc:add(v1, ..., vn), acc[i], acc:reset()",
  ["d2l.accuracy"] = "d2l.accuracy(y_hat, y) -> number of rows whose argmax (1-based) equals the label",
  ["d2l.evaluate_accuracy_gpu"] = "d2l.evaluate_accuracy_gpu(net, data_iter[, device]) -> share correct (eval mode, no grad)",
  ["d2l.load_data_fashion_mnist"] = "d2l.load_data_fashion_mnist(batch_size[, resize]) -> train_iter, test_iter",
  ["d2l.get_fashion_mnist_labels"] = "d2l.get_fashion_mnist_labels(labels) -> their names (labels 1..10)",
  ["d2l.show_images"] = "d2l.show_images(imgs, num_rows, num_cols[, {titles =, scale =}]): a grid of images",
  ["d2l.Animator"] = "d2l.Animator({xlabel =, ylabel =, legend =, xlim =, ylim =, xscale =, yscale =, fmts =}); animator:add(x, ys)",
  ["d2l.plot"] = "d2l.plot(X, Y[, {xlabel =, ylabel =, legend =, xlim =, ylim =, xscale =, yscale =, fmts =}]): a chart",
  ["d2l.train_ch6"] = "d2l.train_ch6(net, train_iter, test_iter, num_epochs, lr, device): the book's LeNet training loop",
  ["d2l.sgd"] = "d2l.sgd(params, lr, batch_size): p = p - lr * grad / batch_size, grads zeroed",
  ["d2l.split_batch"] = "d2l.split_batch(X, y, devices) -> Xs, ys: one slice per device",
  ["d2l.allreduce"] = "d2l.allreduce(data): every tensor of the list becomes their sum",
  ["d2l.show_heatmaps"] = "d2l.show_heatmaps(matrices, xlabel, ylabel[, {titles =, figsize =, cmap = 'Reds'}]): matrices [rows, cols, h, w] as heatmaps",
  ["d2l.DotProductAttention"] = "d2l.DotProductAttention(dropout) -> attention(queries, keys, values[, valid_lens]); weights in attention.attention_weights",
  ["d2l.AdditiveAttention"] = "d2l.AdditiveAttention(num_hiddens, dropout) -> attention(queries, keys, values, valid_lens); attention.attention_weights",
  ["d2l.MultiHeadAttention"] = "d2l.MultiHeadAttention(num_hiddens, num_heads, dropout[, bias]) -> the book's multi-head attention (transpose_qkv)",
  ["d2l.PositionalEncoding"] = "d2l.PositionalEncoding(num_hiddens, dropout[, max_len = 1000]) -> X + P[:steps], then dropout",
  ["d2l.TransformerEncoderBlock"] = "d2l.TransformerEncoderBlock(num_hiddens, ffn_num_hiddens, num_heads, dropout[, use_bias]) -> blk(X, valid_lens)",
  ["d2l.TransformerEncoder"] = "d2l.TransformerEncoder(vocab_size, num_hiddens, ffn_num_hiddens, num_heads, num_blks, dropout[, use_bias]) -> enc(ids, valid_lens)",
  ["d2l.EncoderDecoder"] = "d2l.EncoderDecoder(encoder, decoder) -> model(enc_X, dec_X, ...): the decoder's output (d2l.Encoder, d2l.Decoder to extend)",
  ["d2l.resnet18"] = "d2l.resnet18(num_classes[, in_channels = 1]) -> the multi-GPU chapter's ResNet-18",
}
for k, v in pairs(D2L) do entries[k] = v end

-- Tensor methods: name -> "(args) -> result: meaning" -----------------------------
local T = {
  size = "([d]) -> torch.Size, or the length of dim d",
  dim = "() -> number of dims",
  numel = "() -> number of elements",
  item = "() -> the Lua number of a one-element tensor",
  tolist = "() -> nested Lua tables",
  clone = "() -> a copy",
  contiguous = "() -> self if contiguous, else a contiguous copy",
  is_contiguous = "() -> boolean",
  view = "(size...) -> same data, new shape (-1 infers one dim)",
  reshape = "(size...) -> new shape, a view when possible",
  t = "() -> 2-D transpose",
  transpose = "(a, b) -> dims a and b swapped",
  permute = "(dims...) -> dims reordered",
  unsqueeze = "(d) -> a new dim of size 1 at d",
  squeeze = "([d]) -> dims of size 1 removed",
  expand = "(size...) -> broadcast view",
  flatten = "() -> 1-D view or copy",
  narrow = "(d, start, len) -> a slice of dim d",
  select = "(d, i) -> index i of dim d, one dim fewer",
  chunk = "(n[, d=1]) -> list of n pieces",
  split = "(size[, d=1]) -> list of pieces of the given size",
  sum = "([d[, keepdim]]) -> sum of all elements, or along dim d",
  mean = "([d[, keepdim]]) -> mean of all elements, or along dim d",
  prod = "([d[, keepdim]]) -> product",
  max = "([d[, keepdim]]) -> max, or values and indices along d",
  min = "([d[, keepdim]]) -> min, or values and indices along d",
  argmax = "([d[, keepdim]]) -> 1-based index of the max",
  argmin = "([d[, keepdim]]) -> 1-based index of the min",
  std = "([d[, keepdim]]) -> standard deviation",
  var = "([d[, keepdim]]) -> variance",
  norm = "([p=2]) -> p-norm (Frobenius for matrices)",
  abs = "() -> |x|", neg = "() -> -x", exp = "() -> e^x", log = "() -> ln x", sqrt = "() -> square root",
  pow = "(e) -> x^e", clamp = "(min, max) -> x limited to [min, max]", relu = "() -> max(x, 0)",
  sigmoid = "() -> 1 / (1 + e^-x)", tanh = "() -> tanh x",
  softmax = "(d) -> softmax along d", log_softmax = "(d) -> log softmax along d",
  matmul = "(y) -> matrix product with broadcasting", mm = "(y) -> 2-D matrix product",
  bmm = "(y) -> batched matrix product",
  add = "(y) -> x + y", sub = "(y) -> x - y", mul = "(y) -> x * y", div = "(y) -> x / y",
  add_ = "(y) -> x += y, in place", sub_ = "(y) -> x -= y, in place",
  mul_ = "(y) -> x *= y, in place", div_ = "(y) -> x /= y, in place",
  fill_ = "(v) -> every element set to v", zero_ = "() -> every element set to 0",
  copy_ = "(src) -> src copied in (across devices too)",
  uniform_ = "([a, b]) -> uniform samples in place", normal_ = "([mean, std]) -> normal samples in place",
  eq = "(y) -> bool tensor x == y", ne = "(y) -> bool tensor x ~= y", lt = "(y) -> bool tensor x < y",
  le = "(y) -> bool tensor x <= y", gt = "(y) -> bool tensor x > y", ge = "(y) -> bool tensor x >= y",
  all = "() -> true when every element is nonzero", any = "() -> true when some element is nonzero",
  equal = "(y) -> same shape and values", allclose = "(y[, rtol, atol]) -> values close",
  detach = "() -> same data, no gradient", requires_grad_ = "([b=true]) -> sets requires_grad",
  backward = "([grad]) -> accumulate gradients into .grad of the leaves",
  to = "(dev | dtype | dev, dtype | {device=, dtype=}) -> moved/converted (self when nothing changes)",
  cuda = "([i]) -> on cuda:i (self when already there)", cpu = "() -> on the CPU",
  double = "() -> float64", float = "() -> float32", half = "() -> float16",
  long = "() -> int64", int = "() -> int32", bool = "() -> bool",
}
for name, sig in pairs(T) do entries["Tensor." .. name] = "x:" .. name .. sig end
local fields = {
  shape = "x.shape: the sizes, a torch.Size (x:size() too)",
  dtype = "x.dtype: the element type, e.g. torch.float32",
  device = "x.device: where the data lives, e.g. device(type='cuda', index=0)",
  ndim = "x.ndim: number of dims", is_cuda = "x.is_cuda: true on a CUDA device (real or simulated)",
  requires_grad = "x.requires_grad: whether operations on x are recorded for backward()",
  grad = "x.grad: the gradient accumulated by backward(), or nil",
  grad_fn = "x.grad_fn: the operation that made x (for autograd), or nil",
  data = "x.data: the same data, detached from autograd", T = "x.T: x with its dims reversed",
}
for name, text in pairs(fields) do entries["Tensor." .. name] = text end
entries["Tensor"] = "Tensor: fields shape, dtype, device, ndim, is_cuda, requires_grad, grad, grad_fn, data, T; x[i], x[{i, j}]"

-- Text for a name, or nil. torch.f falls back to Tensor.f (every tensor
-- method is also a torch function taking the tensor first).
function M.get(name)
  if type(name) ~= "string" then return nil end
  local e = entries[name]
  if e then return e end
  local m = name:match("^torch%.([%w_]+)$")
  if m and T[m] then
    local args = T[m]:match("^%((.-)%)") or ""
    return "torch." .. m .. "(x" .. (args ~= "" and (", " .. args) or "") .. ")" .. T[m]:gsub("^%(.-%)", "")
  end
  return nil
end

function M.add(name, text)
  entries[name] = text
end

return M
