# gshell build. `make` builds build/gshell and build/torch.so; `make test`
# runs every spec and ends with "N passed, N failed". Missing Debian
# packages are installed first (tools/install-deps.sh).
#   make CUDA=0        CPU-only build even when nvcc is present
#   make SANITIZE=1    AddressSanitizer + UBSan build in build-san/
#   make TSAN=1        ThreadSanitizer build in build-tsan/ (`make test TSAN=1`
#                      fails on any data race or lock-order report)
#   make WERROR=1      warnings are errors (CI)
#   make fuzz          builds and runs the safetensors fuzzer (fuzz/run.sh;
#                      FUZZ_SECONDS=60 FUZZ_JOBS=1; FUZZ_TARGET=idx fuzzes
#                      the data sets' IDX reader instead)
#   make fuzz-smoke    both fuzzers' targets replayed over their seeds with
#                      this build's objects (seconds; CI runs it)
# CFLAGS, CPPFLAGS and LDFLAGS given on the command line are added after
# the build's own flags (so `make CFLAGS=-O0` lowers the optimisation but
# keeps the includes and warnings).

CC      ?= cc
CUDA_HOME ?= /usr/local/cuda
NVCC    ?= $(shell command -v nvcc 2>/dev/null || ls $(CUDA_HOME)/bin/nvcc 2>/dev/null)
CUDA    ?= $(if $(NVCC),1,0)
SANITIZE ?= 0
TSAN    ?= 0
WERROR  ?= 0

ifeq ($(SANITIZE)$(TSAN),11)
  $(error SANITIZE=1 and TSAN=1 cannot be combined: AddressSanitizer and ThreadSanitizer exclude each other)
endif
BUILD   := $(if $(filter 1,$(SANITIZE)),build-san,$(if $(filter 1,$(TSAN)),build-tsan,build))
# The first `make` on a fresh machine reads this before tools/install-deps.sh
# has installed liblua5.4-dev (and pkg-config's data for it): then the
# fallback is used, later pkg-config's answer, the same flag with a trailing
# space. The flag stamp below hashes the flags with their spacing collapsed
# ($(strip)), so both give the same stamp and `make test` after `make`
# recompiles nothing. PKG_CONFIG=false simulates the missing package.
PKG_CONFIG ?= pkg-config
LUA_INC := $(strip $(shell $(PKG_CONFIG) --cflags lua5.4 2>/dev/null || echo -I/usr/include/lua5.4))

# The flags the build needs; the user's CFLAGS come after them.
GS_CFLAGS := -std=gnu11 -O3 -g -fPIC -fno-trapping-math -Wall -Wextra -Wno-unused-parameter \
             -Wshadow -Wstrict-prototypes -Wmissing-prototypes $(LUA_INC) -Isrc
# No fused multiply-adds the source did not ask for: on CPUs with FMA
# (arm64, x86 with -march) contraction would change the random numbers'
# float arithmetic, which must match the GPU kernels' step-by-step rounding.
GS_CFLAGS += -ffp-contract=off
# jansson: JSON for the profiler's Chrome traces (torch.so) and the Jupyter kernel
LDLIBS  := -lopenblas -ljansson -lm -lpthread
# zlib: the IDX data set reader (src/io/gs_idx.c) reads gzipped files
LDLIBS  += -lz
# libpng: the PNG pictures of d2l.show_images (src/io/gs_png.c)
LDLIBS  += -lpng
ifeq ($(WERROR),1)
  GS_CFLAGS += -Werror
endif
ifeq ($(SANITIZE),1)
  GS_CFLAGS += -O1 -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
  LDLIBS += -fsanitize=address,undefined
  CUDA := 0
endif
# ThreadSanitizer. GCC defines __SANITIZE_THREAD__, which turns off the
# header free lists. (The kernels' per-ISA copies stay on: they are picked
# by a switch, src/backend/cpu/cpu_isa.h, not by target_clones, whose ifunc
# resolvers ran before TSAN's runtime and crashed it at start-up.) No CUDA: the simulated devices are what run threads here.
# tools/sanitizer_env.sh sets TSAN_OPTIONS for the specs. Every spec file
# runs; two things are left out under TSAN, each saying so where it is:
# the VmRSS bounds of spec/tensor_memory_spec.lua (TSAN's shadow memory
# counts in VmRSS) and the deliberate write into a tensor a collective is
# sending in spec/fixtures/dist/async.lua (a data race on purpose).
ifeq ($(TSAN),1)
  GS_CFLAGS += -O1 -fsanitize=thread -fno-omit-frame-pointer
  LDLIBS += -fsanitize=thread
  CUDA := 0
endif

# One folder per layer (docs/design.md): the engine and its bindings are
# everything but the shell, the Jupyter kernel and main.c on top.
SRC_DIRS    := core ops autograd io backend backend/cpu backend/sim backend/cuda distributed bind
ENGINE_SRCS := $(foreach d,$(SRC_DIRS),$(wildcard src/$(d)/*.c))
SHELL_SRCS  := $(wildcard src/shell/*.c src/jupyter/*.c) src/main.c
# the Jupyter kernel's libraries: gshell links them, torch.so does not
KERNEL_LIBS := -lzmq -lcrypto
# lua/torch/ is the library (torch.so and gshell); lua/gshell/ the shell (gshell only).
TORCH_LUA   := $(shell find lua/torch -name '*.lua' | sort)
SHELL_LUA   := $(shell find lua/gshell -name '*.lua' | sort)
ENGINE_OBJS := $(ENGINE_SRCS:src/%.c=$(BUILD)/obj/%.o) $(BUILD)/obj/gen/lua_torch_modules.o
SHELL_OBJS  := $(SHELL_SRCS:src/%.c=$(BUILD)/obj/%.o) $(BUILD)/obj/gen/lua_shell_modules.o

ifeq ($(CUDA),1)
  CU_SRCS   := $(wildcard src/backend/cuda/kernels/*.cu)
  CU_OBJS   := $(CU_SRCS:src/%.cu=$(BUILD)/obj/%.o)
  GS_CFLAGS += -DGS_HAVE_CUDA -I$(CUDA_HOME)/include
  # A fat binary: the machine that builds may have no GPU (no -arch=native).
  # CUDA 13 dropped sm_70 (Volta): its oldest target is sm_75.
  NVCC_MAJOR := $(shell $(NVCC) --version | sed -n 's/.*release \([0-9]*\)\..*/\1/p')
  NV_OLDEST := $(if $(filter 9 10 11 12,$(NVCC_MAJOR)),70,75)
  NVFLAGS   := -O3 -std=c++17 -Isrc -Xcompiler -fPIC,-Wall \
               -gencode arch=compute_$(NV_OLDEST),code=sm_$(NV_OLDEST) -gencode arch=compute_80,code=sm_80 \
               -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90
  ifeq ($(WERROR),1)
    NVFLAGS += -Werror all-warnings
  endif
  # cudart is linked statically (it finds the driver at run time, so the
  # binary starts on machines without one); cuBLAS is opened lazily.
  LDLIBS    += -L$(CUDA_HOME)/lib64 -lcudart_static -ldl -lrt -lpthread -lstdc++
  ENGINE_OBJS += $(CU_OBJS)
endif

.PHONY: all deps test bench clean gpu-bundle fuzz fuzz-build fuzz-api fuzz-smoke
all: deps $(BUILD)/gshell $(BUILD)/torch.so $(BUILD)/torchvision.so $(if $(filter 1,$(TSAN)),$(BUILD)/bin/lua5.4)

deps:
	@sh tools/install-deps.sh

ALL_CFLAGS := $(GS_CFLAGS) $(CPPFLAGS) $(CFLAGS)

$(BUILD)/gshell: $(ENGINE_OBJS) $(SHELL_OBJS)
	$(CC) $(LDFLAGS) -o $@ $^ -llua5.4 -lreadline $(KERNEL_LIBS) $(LDLIBS) -Wl,-E

# The specs' torch.so: the same engine plus test-only bindings that the
# product leaves out (spec/support/c/lua_workers.c; luaopen_torch calls
# them when they are linked). tools/run_specs.sh puts it first on LUA_CPATH.
SPEC_TORCH := $(BUILD)/spec/torch.so
$(BUILD)/obj/spec/%.o: spec/support/c/%.c $(FLAGS_STAMP) | deps
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -MMD -MP -c -o $@ $<
$(SPEC_TORCH): $(ENGINE_OBJS) $(BUILD)/obj/spec/lua_workers.o tools/torch.map
	@mkdir -p $(@D)
	$(CC) -shared $(LDFLAGS) -Wl,--version-script=tools/torch.map -o $@ $(ENGINE_OBJS) $(BUILD)/obj/spec/lua_workers.o $(LDLIBS)

# The module for stock lua5.4: the host interpreter provides Lua's symbols.
# It exports luaopen_torch and nothing else (tools/torch.map).
$(BUILD)/torch.so: $(ENGINE_OBJS) tools/torch.map
	$(CC) -shared $(LDFLAGS) -Wl,--version-script=tools/torch.map -o $@ $(ENGINE_OBJS) $(LDLIBS)

# require("torchvision") in stock lua5.4 finds this link to torch.so
# (luaopen_torchvision; the data sets, issue 21); the specs' torch.so gets
# its own, so both names load the same library there too.
$(BUILD)/torchvision.so: $(BUILD)/torch.so
	ln -sf torch.so $@
$(BUILD)/spec/torchvision.so: $(SPEC_TORCH)
	ln -sf torch.so $@

# Objects are rebuilt when the flags change (CUDA on/off, WERROR, ...).
FLAGS_STAMP := $(BUILD)/gen/flags-$(shell echo '$(strip $(ALL_CFLAGS) $(NVFLAGS))' | md5sum | cut -c1-10)
$(FLAGS_STAMP): | $(BUILD)/gen
	rm -f $(BUILD)/gen/flags-*; touch $@

# Objects wait for deps (the packages' headers) even under -j.
# -MMD -MP: each object lists the headers it included in a .d file beside it.
$(BUILD)/obj/%.o: src/%.c $(FLAGS_STAMP) | deps
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -MMD -MP -c -o $@ $<

# The kernels' objects sit beside the C objects of their folder (before issue
# 28 they were in $(BUILD)/cu/, whose dependency files name kernels/*.cu:
# no longer read).
$(BUILD)/obj/%.o: src/%.cu $(FLAGS_STAMP) | deps
	@mkdir -p $(@D)
	$(NVCC) $(NVFLAGS) -MMD -MP -c -o $@ $<

# The Lua sources are compiled into the binaries: no files needed beside them.
$(BUILD)/gen/lua_torch_modules.c: $(TORCH_LUA) tools/embed_lua.sh | $(BUILD)/gen
	sh tools/embed_lua.sh $@ gs_torch_modules $(TORCH_LUA)
$(BUILD)/gen/lua_shell_modules.c: $(SHELL_LUA) tools/embed_lua.sh | $(BUILD)/gen
	sh tools/embed_lua.sh $@ gs_shell_modules $(SHELL_LUA)
$(BUILD)/obj/gen/lua_%_modules.o: $(BUILD)/gen/lua_%_modules.c $(FLAGS_STAMP)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -MMD -MP -c -o $@ $<

# The TSAN spec run's lua5.4 (why: tools/tsan_lua.c).
$(BUILD)/bin/lua5.4: tools/tsan_lua.c $(FLAGS_STAMP) | $(BUILD)/bin
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $< -llua5.4 $(LDLIBS)

$(BUILD)/gen $(BUILD)/bin:
	mkdir -p $@

-include $(wildcard $(BUILD)/obj/*/*.d $(BUILD)/obj/*/*/*.d $(BUILD)/obj/*/*/*/*.d $(BUILD)/obj/*.d)

test: all $(SPEC_TORCH) $(BUILD)/spec/torchvision.so
	@sh tools/install-deps.sh --test
	@sh tools/run_specs.sh $(BUILD)

bench: all
	@sh tools/install-deps.sh python3-torch python3-torchvision
	@sh bench/run.sh $(BUILD)
	@sh bench/async/run.sh $(BUILD)
	@sh bench/data/run.sh $(BUILD)
	@sh bench/train/run.sh $(BUILD)
	@sh bench/train/transformer.sh $(BUILD)

# `make fuzz-api SECONDS=N [SEED=S] [CASE=C]`: the random-call API fuzzer
# (fuzz/api.lua) under AddressSanitizer + UBSan; a failure prints the
# SEED and CASE that replay it. FUZZ_TRACE=1 prints every call.
fuzz-api:
	$(MAKE) SANITIZE=1 WERROR=$(WERROR) all
	@sh fuzz/api.sh build-san $(or $(SECONDS),60) $(SEED) $(CASE)

clean:
	rm -rf build build-san build-tsan build-fuzz

# `make fuzz`: the safetensors loader under libFuzzer + ASan + UBSan (clang),
# built in build-fuzz/ from the engine sources (no Lua bindings, no shell,
# no CUDA) by `make fuzz-build`, which fuzz/run.sh calls before running it
# (the script says where crashes go).
FUZZ_CC      ?= clang
FUZZ_SECONDS ?= 60
FUZZ_JOBS    ?= 1
FUZZ_TARGET  ?= safetensors
FUZZ_DIR     := build-fuzz
FUZZ_CFLAGS  := -g -O1 -std=gnu11 -fno-omit-frame-pointer -fsanitize=address,undefined \
                -fno-sanitize-recover=undefined -Isrc $(LUA_INC) $(CPPFLAGS) $(CFLAGS)
FUZZ_OBJS    := $(patsubst src/%.c,$(FUZZ_DIR)/obj/%.o,$(filter-out src/bind/%.c,$(ENGINE_SRCS)))
# the engine's libraries without Lua: the fuzzers and `make fuzz-smoke` link these
FUZZ_LIBS    := -lopenblas -lz -lpng -lm -lpthread

fuzz:
	sh fuzz/run.sh $(FUZZ_SECONDS) $(FUZZ_JOBS) $(FUZZ_TARGET)
fuzz-build:
	@sh tools/install-deps.sh clang libclang-rt-dev
	@$(MAKE) --no-print-directory $(FUZZ_DIR)/safetensors_fuzz $(FUZZ_DIR)/idx_fuzz
# one fuzzer per loader: fuzz/NAME_fuzz.c (the IDX one: data sets, issue 21)
$(FUZZ_DIR)/safetensors_fuzz $(FUZZ_DIR)/idx_fuzz: $(FUZZ_DIR)/%_fuzz: fuzz/%_fuzz.c $(FUZZ_OBJS)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer $(LDFLAGS) -o $@ $^ $(FUZZ_LIBS)
# `make fuzz-smoke`: each fuzz target with fuzz/replay.c's main instead of
# libFuzzer, linked from this build's engine objects and FUZZ_LIBS, run
# over its seed corpus: seconds, in CI (.ci/run), so a fuzzer that no
# longer builds, links or runs is noticed without the clang build
FUZZ_SMOKE_OBJS := $(patsubst src/%.c,$(BUILD)/obj/%.o,$(filter-out src/bind/%.c,$(ENGINE_SRCS))) $(CU_OBJS)
FUZZ_SMOKE_LIBS := $(FUZZ_LIBS) $(if $(filter 1,$(CUDA)),-L$(CUDA_HOME)/lib64 -lcudart_static -ldl -lrt -lstdc++)
fuzz-smoke: $(BUILD)/fuzz-smoke/safetensors $(BUILD)/fuzz-smoke/idx
	$(BUILD)/fuzz-smoke/safetensors fuzz/corpus
	$(BUILD)/fuzz-smoke/idx fuzz/corpus_idx
$(BUILD)/fuzz-smoke/%: fuzz/%_fuzz.c fuzz/replay.c $(FUZZ_SMOKE_OBJS) | deps
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(GS_CFLAGS) $(CFLAGS) -Wno-missing-prototypes $(LDFLAGS) -o $@ fuzz/$*_fuzz.c fuzz/replay.c \
	  $(FUZZ_SMOKE_OBJS) $(FUZZ_SMOKE_LIBS)
$(FUZZ_DIR)/obj/%.o: src/%.c
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -MMD -MP -c -o $@ $<
-include $(wildcard $(FUZZ_DIR)/obj/*/*.d $(FUZZ_DIR)/obj/*/*/*.d)

# `make gpu-bundle`: a self-contained gshell for a GPU machine that may
# lack this one's packages, with the CUDA check script, in
# $(BUILD)/gpu-bundle.tar.gz. Lua, readline (with terminfo), OpenBLAS
# (with its Fortran runtime) and the C++ runtime are linked statically,
# cudart is static already; glibc stays dynamic (cuBLAS is dlopen'ed on
# the target machine: next to gshell, on the loader's path, in the CUDA
# toolkit or in pip's nvidia wheels; see src/core/gs_dlopen.h). Run there as
#   tar xzf gpu-bundle.tar.gz && gpu-bundle/gshell gpu-bundle/gpu_check.lua
BUNDLE_DIR  := $(BUILD)/gpu-bundle
STATIC_LIBS := /usr/lib/x86_64-linux-gnu/liblua5.4.a /usr/lib/x86_64-linux-gnu/libreadline.a \
               /usr/lib/x86_64-linux-gnu/libtinfo.a /usr/lib/x86_64-linux-gnu/libopenblas.a \
               /usr/lib/x86_64-linux-gnu/libjansson.a /usr/lib/x86_64-linux-gnu/libpng16.a /usr/lib/x86_64-linux-gnu/libz.a \
               -l:libgfortran.a -l:libquadmath.a -l:libstdc++.a -static-libgcc
gpu-bundle: deps $(ENGINE_OBJS) $(SHELL_OBJS)
	@test "$(CUDA)" = 1 || { echo "gpu-bundle: nvcc not found (CUDA=0): the bundle would have no CUDA backend"; exit 1; }
	rm -rf $(BUNDLE_DIR) $(BUILD)/gpu-bundle.tar.gz
	mkdir -p $(BUNDLE_DIR)
	$(CC) -o $(BUNDLE_DIR)/gshell $(ENGINE_OBJS) $(filter-out $(BUILD)/obj/jupyter/%,$(SHELL_OBJS)) $(STATIC_LIBS) \
	  -L$(CUDA_HOME)/lib64 -lcudart_static -lm -ldl -lrt -lpthread -Wl,-E
	cp tools/gpu_check.lua tools/gpu_big.lua tools/gpu_run.sh tools/gpu_calib.lua tools/fit_gpu_model.lua $(BUNDLE_DIR)/
	# gpu_run.sh (issue 24): the benchmark against PyTorch rides in the bundle too
	mkdir -p $(BUNDLE_DIR)/bench
	cp bench/gpu/ops.lua bench/gpu/ops.py bench/gpu/compare.sh $(BUNDLE_DIR)/bench/
	chmod +x $(BUNDLE_DIR)/gpu_run.sh
	printf '%s\n' '#!/bin/sh' '# Runs the CUDA check next to this script: ./run_gpu_check.sh [cuda:N] [-v]' \
	  'cd "$$(dirname "$$0")" && exec ./gshell gpu_check.lua "$$@"' > $(BUNDLE_DIR)/run_gpu_check.sh
	chmod +x $(BUNDLE_DIR)/run_gpu_check.sh
	tar -C $(BUILD) -czf $(BUILD)/gpu-bundle.tar.gz gpu-bundle
	@echo "$(BUILD)/gpu-bundle.tar.gz: gshell, gpu_check.lua, gpu_big.lua, gpu_run.sh, gpu_calib.lua, fit_gpu_model.lua, run_gpu_check.sh, bench/"
