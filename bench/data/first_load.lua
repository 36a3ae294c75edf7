-- bench/data/first_load.lua: the time of a fresh process's first call of
-- d2l.load_data_fashion_mnist(256), with the decompressed cache on disk
-- (issue 21: under 100 ms). bench/data/run.sh runs it in several fresh
-- processes: within one process only the first call pays for reading
-- the files (later calls reuse the loaded data set).
-- Prints `fmnist_first_call SECONDS s`.
local torch = require("torch")
local d2l = require("d2l")
local t0 = torch.clock()
local train_iter, test_iter = d2l.load_data_fashion_mnist(256)
local dt = torch.clock() - t0
assert(train_iter and test_iter, "load_data_fashion_mnist returned no iterators")
print(string.format("fmnist_first_call %.4f s", dt))
