# zero - build, test, run.
#   make run        the main job: trains examples/train_mlp with ZeRO (every GPU, else 4 host ranks), then the estimator;
#                   builds only those programs, and its last line says what ran, the result and what to read next
#   make test       every host test (gcc, clang, C11, C++17, ASan+UBSan) and nvcc builds;
#                   T=name runs one test file alone (make test T=test_engine; tests/README.md)
#   make test-gpu   GPU tests (device machine); T=name likewise (make test-gpu T=gpu_engine). Without a
#                   visible GPU it prints "no GPU visible" and exits 77 (automake's "skipped")
#   make check-gpu  the GPU ledger's check (device machine, 6-7 minutes on one H100): build/gpt over stages 0-3 x
#                   fp32/bf16/fp16 x offload on one and on every GPU, GPT-2 XL, hybrid sharding, hf_check.sh, the quick
#                   GPU tests; one line per row, and with 0 failed a line appended to tests/gpu_ledger.tsv
#                   (tests/check_gpu.sh; --dry-run there lists the rows). Exits 77 without a visible GPU
#   make fuzz       libFuzzer on the JSON config parser (FUZZ_SECONDS, default 600)
#   make fuzz-ckpt  libFuzzer on the checkpoint metadata reader (FUZZ_SECONDS)
#   make fuzz-safetensors  libFuzzer on the safetensors reader (FUZZ_SECONDS)
#   make fuzz-layout  libFuzzer on the registration of program-owned buffers (FUZZ_SECONDS)
#   make bench      benchmarks (device machine): communication, overlap, optimizer vs PyTorch, then bench-cpu
#   make bench-cpu  CPU Adam (zero_offload.h) vs memory bandwidth and PyTorch's CPU AdamW (any machine)
#   make bench-offload  offload on one GPU: step time with and without it, the largest model per placement
#   make install PREFIX=... [DESTDIR=...]  the three headers, zero.pc (pkg-config), the CMake package (docs/install.md)
#   make uninstall PREFIX=... [DESTDIR=...]  removes them
# Variables: CUDA_HOME, NCCL_HOME, GPU_ARCH (sm_90), CC (gcc), CLANG (clang), PREFIX (/usr/local), CMAKE (cmake),
# RUN_ARGS (more options for make run's training, e.g. --steps 50), GPU_RUN (below).

CC        ?= gcc
ifeq ($(origin CC),default)
CC        := gcc
endif
CXX_GCC   ?= g++
CLANG     ?= clang
CLANGXX   ?= clang++
GPU_ARCH  ?= sm_90
PREFIX    ?= /usr/local
BUILD     ?= build

# CUDA: $CUDA_HOME, else the nvcc on PATH, else the usual places.
CUDA_HOME ?= $(or $(patsubst %/bin/nvcc,%,$(shell command -v nvcc 2>/dev/null)),\
                  $(firstword $(wildcard /usr/local/cuda /opt/cuda /usr/lib/cuda)))
NVCC      ?= $(if $(CUDA_HOME),$(CUDA_HOME)/bin/nvcc,nvcc)
# NCCL: $NCCL_HOME, else the first of the usual places that has include/nccl.h.
NCCL_HOME ?= $(patsubst %/include/nccl.h,%,$(firstword $(wildcard \
                  $(CUDA_HOME)/include/nccl.h /usr/local/include/nccl.h /usr/include/nccl.h \
                  /opt/nccl/include/nccl.h /usr/local/nccl/include/nccl.h)))

export CC CXX_GCC CLANG CLANGXX GPU_ARCH BUILD CUDA_HOME NVCC NCCL_HOME

.PHONY: all test test-gpu check-gpu run fuzz fuzz-ckpt fuzz-safetensors fuzz-layout bench bench-cpu bench-offload install uninstall clean info

HAVE_NVCC := $(shell command -v $(NVCC) >/dev/null 2>&1 && echo 1)
all: info $(BUILD)/zero_estimate $(BUILD)/zero_config $(BUILD)/zero_layout $(BUILD)/zero_ckpt $(BUILD)/zero_report $(BUILD)/train_mlp \
     $(BUILD)/minimal $(BUILD)/quickstart $(if $(HAVE_NVCC),$(BUILD)/minimal_cuda $(BUILD)/quickstart_cuda $(BUILD)/gpt)

info:
	@echo "zero: CC=$(CC) CLANG=$(CLANG) GPU_ARCH=$(GPU_ARCH)"
	@echo "zero: CUDA_HOME=$(if $(CUDA_HOME),$(CUDA_HOME),(not found)) NVCC=$(NVCC)"
	@echo "zero: NCCL_HOME=$(if $(NCCL_HOME),$(NCCL_HOME),(not found: CUDA files build without NCCL checks))"

HEADERS := zero.h zero_offload.h zero_cuda.cuh

$(BUILD)/zero_estimate: examples/zero_estimate/zero_estimate.c examples/tool_args.h $(HEADERS)
	@mkdir -p $(BUILD)
	$(CC) -std=c11 -O2 -Wall -Wextra -Werror -I. -o $@ $< -lm -lpthread

$(BUILD)/zero_config: examples/zero_config/zero_config.c examples/tool_args.h $(HEADERS)
	@mkdir -p $(BUILD)
	$(CC) -std=c11 -O2 -Wall -Wextra -Werror -I. -o $@ $< -lm -lpthread

$(BUILD)/zero_ckpt: examples/zero_ckpt/zero_ckpt.c examples/tool_args.h $(HEADERS)
	@mkdir -p $(BUILD)
	$(CC) -std=c11 -O2 -Wall -Wextra -Werror -I. -o $@ $< -lm -lpthread

$(BUILD)/zero_layout: examples/zero_layout/zero_layout.c examples/tool_args.h $(HEADERS)
	@mkdir -p $(BUILD)
	$(CC) -std=c11 -O2 -Wall -Wextra -Werror -I. -o $@ $< -lm -lpthread

# The machine as zero sees it (docs/install.md): GPUs against GPU_ARCH, the driver, CUDA, NCCL, CPU, memory.
# It opens the CUDA libraries at run time (-ldl), so it builds and runs without them; the Makefile's
# CUDA_HOME and NCCL_HOME are where it looks when the loader does not find them.
$(BUILD)/zero_report: examples/zero_report/zero_report.c examples/tool_args.h $(HEADERS)
	@mkdir -p $(BUILD)
	$(CC) -std=c11 -O2 -Wall -Wextra -Werror -I. -DZERO_REPORT_GPU_ARCH='"$(GPU_ARCH)"' \
	    -DZERO_REPORT_CUDA_HOME='"$(CUDA_HOME)"' -DZERO_REPORT_NCCL_HOME='"$(NCCL_HOME)"' -o $@ $< -lm -lpthread -ldl

$(BUILD)/train_mlp: examples/train_mlp.c examples/train_mlp_common.h examples/tool_args.h $(HEADERS)
	@mkdir -p $(BUILD)
	$(CC) -std=c11 -O2 -Wall -Wextra -Werror -I. -o $@ $< -lm -lpthread

# The smallest complete program: train, save, load and check, on 2 host ranks (minimal_cuda: on GPUs).
$(BUILD)/minimal: examples/minimal.c $(HEADERS)
	@mkdir -p $(BUILD)
	$(CC) -std=c11 -O2 -Wall -Wextra -Werror -I. -o $@ $< -lm -lpthread

# The same example on GPUs: one process per GPU, the CUDA backend, cuBLAS.
NCCL_FLAGS = $(if $(NCCL_HOME),-I$(NCCL_HOME)/include -L$(NCCL_HOME)/lib -L$(NCCL_HOME)/lib64 \
             -Xlinker -rpath=$(NCCL_HOME)/lib -Xlinker -rpath=$(NCCL_HOME)/lib64)
$(BUILD)/train_mlp_cuda: examples/train_mlp.cu examples/train_mlp_common.h examples/tool_args.h examples/example_dtype.cuh $(HEADERS) $(wildcard zero_cuda*.cuh)
	@mkdir -p $(BUILD)
	$(NVCC) -std=c++17 -O2 -arch=$(GPU_ARCH) -I. $(NCCL_FLAGS) -Xcompiler -Wall,-Wextra -o $@ $< -lnccl -lcublas

$(BUILD)/minimal_cuda: examples/minimal.cu $(HEADERS)
	@mkdir -p $(BUILD)
	$(NVCC) -std=c++17 -O2 -arch=$(GPU_ARCH) -I. $(NCCL_FLAGS) -Xcompiler -Wall,-Wextra,-Werror -o $@ $< -lnccl

# docs/getting-started.md's programs (the docs show them whole; tests/docs_check.sh keeps both the same).
$(BUILD)/quickstart: examples/quickstart/quickstart.c $(HEADERS)
	@mkdir -p $(BUILD)
	$(CC) -std=c11 -O2 -Wall -Wextra -Werror -I. -o $@ $< -lm -lpthread

$(BUILD)/quickstart_cuda: examples/quickstart/quickstart.cu $(HEADERS)
	@mkdir -p $(BUILD)
	$(NVCC) -std=c++17 -O2 -arch=$(GPU_ARCH) -I. $(NCCL_FLAGS) -Xcompiler -Wall,-Wextra,-Werror -o $@ $< -lnccl

# examples/gpt: GPT-2 on GPUs (docs/gpt.md), built whenever nvcc is there.
GPT_SRC := examples/gpt/gpt.cu examples/tool_args.h examples/gpt/gpt_cuda.cuh examples/gpt/gpt_attn.cuh examples/gpt/gpt_model.h \
           examples/gpt/gpt_wire.h examples/example_hash.h \
           examples/example_dtype.cuh
$(BUILD)/gpt: $(GPT_SRC) $(HEADERS)
	@mkdir -p $(BUILD)
	$(NVCC) -std=c++17 -O3 -arch=$(GPU_ARCH) -I. $(NCCL_FLAGS) -Xcompiler -Wall,-Wextra,-Werror -o $@ $< -lnccl -lcublasLt -lcublas

# The main job: a character-level MLP language model (examples/train_mlp.c,
# trained on README.md and docs/) with ZeRO stage 2 on 4 host ranks (threads of
# one process, the host backend), then the same run under stages 0-3 side by
# side (memory per rank by category, final losses), then the memory plan of
# GPT-2 XL (1.56e9 parameters: 48 layers of width 1600, GPT-2's 50257 tokens,
# the head tied to the embedding) on one node of 8 GPUs and the largest model
# each ZeRO option fits on 8 x 80 GB GPUs with 1 TB of host memory and 4 TB of
# NVMe (docs/estimator.md shows this output). With a GPU (nvidia-smi lists one
# and nvcc is there) the training runs on every visible GPU instead, one
# process each (examples/train_mlp.cu; pick them with CUDA_VISIBLE_DEVICES);
# GPU_RUN= forces the host ranks. It builds only the programs it runs (not
# `all`, whose examples/gpt takes nvcc some 20 s), and its last line says
# what ran (host ranks or GPUs, from the program's own header), the result
# (each stage's final loss, and whether they agree) and what to read next.
ifeq ($(origin GPU_RUN),undefined)
GPU_RUN := $(shell nvidia-smi -L 2>/dev/null | grep -q '^GPU' && command -v $(NVCC) >/dev/null 2>&1 && echo 1)
endif
RUN_ARGS  ?=
RUN_TRAIN := $(if $(GPU_RUN),$(BUILD)/train_mlp_cuda,$(BUILD)/train_mlp --world 4)$(if $(RUN_ARGS), $(RUN_ARGS))
RUN_LOG   := $(BUILD)/run_stages.txt
run: info $(if $(GPU_RUN),$(BUILD)/train_mlp_cuda,$(BUILD)/train_mlp) $(BUILD)/zero_estimate
	$(RUN_TRAIN)
	@echo "$(RUN_TRAIN) --compare-stages"
	@{ $(RUN_TRAIN) --compare-stages; echo $$? > $(RUN_LOG).rc; } | tee $(RUN_LOG); exit "$$(cat $(RUN_LOG).rc)"
	$(BUILD)/zero_estimate --params 1.5576e9 --largest-layer 8.04e7 --gpus 8
	$(BUILD)/zero_estimate --fit --gpus 8 --gpu-mem 80GB --cpu-mem 1TB --nvme 4TB
	@awk '/, ZeRO stages 0 to 3 in turn,/ { w = $$0; sub(/^[^:]*: /, "", w); sub(/, ZeRO stages 0 to 3 in turn,.*/, "", w) } \
	     /^final loss / { l = $$3; same = 1; for (i = 4; i <= NF; i++) { l = l ", " $$i; if ($$i != $$3) same = 0 } \
	                      if (same) l = $$3 " at every stage" } \
	     /^check: final losses agree:/ { agree = ($$NF == "ok") ? "the stages agree" : "the stages DISAGREE" } \
	     END { printf "zero: make run done: trained the MLP language model on %s (stage 2, then stages 0-3: " \
	                  "final loss %s, %s) and planned the memory of GPT-2 XL on 8 GPUs; next: docs/getting-started.md\n", \
	                  w, l, agree }' $(RUN_LOG)

test: info
	@T="$(T)" sh tests/run.sh

# GPU tests (device machine): tests/compile_cuda.cu and every tests/gpu_*.cu
# (and examples/minimal.cu) built with nvcc and run, plainly and under
# compute-sanitizer (tests/gpu.sh). Without a visible GPU, tests/gpu.sh says
# "no GPU visible" once and exits 77, the status automake's harness reads as
# "skipped", so that a caller can tell it from a failure (make reports Error 77).
SANITIZER ?= $(firstword $(wildcard $(CUDA_HOME)/bin/compute-sanitizer) compute-sanitizer)
test-gpu: info
	@T="$(T)" BUILD=$(BUILD) SANITIZER=$(SANITIZER) sh tests/gpu.sh

# The check a change to zero*.h, zero_cuda.cuh, examples/gpt/ or tests/gpu_*
# lands with (docs/cuda.md, "make check-gpu"): the main job's matrix on every
# visible GPU, its rows' logs in $(BUILD)/check_gpu/ (CHECK_GPU_DIR), and on
# success one line in tests/gpu_ledger.tsv for the commit that ran.
# CHECK_GPU_COMMIT names the commit where the tree has no git metadata (a copy).
check-gpu: info
	@BUILD=$(BUILD) CHECK_GPU_COMMIT="$(CHECK_GPU_COMMIT)" sh tests/check_gpu.sh

# Benchmarks (device machine; docs/PERF.md has the figures): every
# examples/bench/*.cu built like tests/gpu.sh builds its programs, then run:
# the collectives through the engine vs raw NCCL and the overlap of a synthetic
# backward (one process per visible GPU, needs 2+), the optimizer step on the
# first GPU, then PyTorch's on the same GPU (python3 with torch) and the ratios.
BENCH_BINS := $(patsubst examples/bench/%.cu,$(BUILD)/bench/%,$(wildcard examples/bench/*.cu))
PYTHON    ?= python3
BENCH_COMM_ARGS    ?= -b 1M -e 1G
BENCH_OPTIM_ARGS   ?= --params 1e9 --tensors 50
BENCH_OVERLAP_ARGS ?= --layers 24 --numel 16777216 --compute-us 200

# bench_vmm times the driver's virtual memory calls alone, so it links libcuda: at build time the copy the toolkit
# ships for linking (lib64/stubs), at run time the driver's own
$(BUILD)/bench/bench_vmm: examples/bench/bench_vmm.cu
	@mkdir -p $(BUILD)/bench
	$(NVCC) -std=c++17 -O2 -arch=$(GPU_ARCH) -Xcompiler -Wall,-Wextra,-Werror -o $@ $< -L$(CUDA_HOME)/lib64/stubs -lcuda

# bench_beside times NCCL's collectives beside cuBLAS GEMMs: it links cuBLAS
$(BUILD)/bench/bench_beside: examples/bench/bench_beside.cu examples/tool_args.h
	@mkdir -p $(BUILD)/bench
	$(NVCC) -std=c++17 -O2 -arch=$(GPU_ARCH) -I. $(NCCL_FLAGS) -Xcompiler -Wall,-Wextra,-Werror -o $@ $< -lnccl -lcublas

$(BUILD)/bench/%: examples/bench/%.cu examples/bench/bench.cuh examples/tool_args.h $(HEADERS)
	@mkdir -p $(BUILD)/bench
	$(NVCC) -std=c++17 -O2 -lineinfo -arch=$(GPU_ARCH) -I. $(NCCL_FLAGS) -o $@ $< -lnccl

bench: info $(BENCH_BINS)
	@nvidia-smi -L 2>/dev/null | sed 's/^/gpu: /'; true
	@export NCCL_NVLS_ENABLE=$${NCCL_NVLS_ENABLE:-0}; rc=0; \
	echo "== $(BUILD)/bench/bench_comm $(BENCH_COMM_ARGS)"; $(BUILD)/bench/bench_comm $(BENCH_COMM_ARGS) || rc=1; \
	echo "== $(BUILD)/bench/bench_overlap $(BENCH_OVERLAP_ARGS)"; $(BUILD)/bench/bench_overlap $(BENCH_OVERLAP_ARGS) || rc=1; \
	echo "== BENCH_GRAD_WRITE=1 $(BUILD)/bench/bench_overlap $(BENCH_OVERLAP_ARGS)"; \
	BENCH_GRAD_WRITE=1 $(BUILD)/bench/bench_overlap $(BENCH_OVERLAP_ARGS) || rc=1; \
	echo "== $(BUILD)/bench/bench_optim $(BENCH_OPTIM_ARGS)"; \
	if $(BUILD)/bench/bench_optim $(BENCH_OPTIM_ARGS) --out $(BUILD)/bench/optim_zero.txt; then \
	    echo "== $(PYTHON) examples/bench/bench_torch_adam.py --zero $(BUILD)/bench/optim_zero.txt"; \
	    PYTHONUNBUFFERED=1 $(PYTHON) examples/bench/bench_torch_adam.py --zero $(BUILD)/bench/optim_zero.txt || rc=1; \
	else rc=1; fi; \
	$(MAKE) --no-print-directory bench-cpu || rc=1; \
	exit $$rc

# CPU Adam: zero_cpu_adam in params/s and GB/s against a
# STREAM-style copy/triad measured in the same run with the same pool, then
# PyTorch's CPU AdamW(fused=True) and its offload sequence (python3 with torch)
# on the same parameter counts, and the ratios. Built without -march: the SIMD
# path is chosen at run time. Needs about 20 GB of free memory for 1B (skipped
# with a message where it does not fit). bench runs it last (after the GPU
# programs, never beside their builds).
BENCH_CPU_ARGS ?= --params 64M,1B

$(BUILD)/bench/cpu_adam: examples/bench/cpu_adam.c examples/tool_args.h $(HEADERS)
	@mkdir -p $(BUILD)/bench
	$(CC) -std=c11 -O2 -Wall -Wextra -Werror -I. -o $@ $< -lm -lpthread

bench-cpu: info $(BUILD)/bench/cpu_adam
	@rc=0; \
	echo "== $(BUILD)/bench/cpu_adam $(BENCH_CPU_ARGS)"; \
	if $(BUILD)/bench/cpu_adam $(BENCH_CPU_ARGS) --out $(BUILD)/bench/cpu_adam.txt; then \
	    echo "== $(PYTHON) examples/bench/cpu_adam_torch.py --zero $(BUILD)/bench/cpu_adam.txt"; \
	    PYTHONUNBUFFERED=1 $(PYTHON) examples/bench/cpu_adam_torch.py --zero $(BUILD)/bench/cpu_adam.txt || rc=1; \
	else rc=1; fi; \
	exit $$rc

# Offload on one GPU (docs/PERF.md "Offload on one GPU"):
# --speed times full steps (cuBLAS forward and backward, zero_step) of a model
# that fits without offload, with optimizer offload and with delayed parameter
# update, beside the pinned copy bandwidth; --capacity trains the largest model
# the memory plan allows per placement (none, cpu, cpu+param, nvme), each trial
# in a process of its own. Needs cuBLAS; several minutes and most of the host's
# memory, so make bench does not run it.
BENCH_OFFLOAD_ARGS ?= --speed --capacity

$(BUILD)/bench/bench_offload: examples/bench/bench_offload.cu examples/bench/bench.cuh $(HEADERS)
	@mkdir -p $(BUILD)/bench
	$(NVCC) -std=c++17 -O2 -lineinfo -arch=$(GPU_ARCH) -I. $(NCCL_FLAGS) -o $@ $< -lnccl -lcublas

bench-offload: info $(BUILD)/bench/bench_offload
	@nvidia-smi -L 2>/dev/null | sed 's/^/gpu: /'; true
	@echo "== $(BUILD)/bench/bench_offload $(BENCH_OFFLOAD_ARGS)"; $(BUILD)/bench/bench_offload $(BENCH_OFFLOAD_ARGS)

# Fused causal attention alone (examples/gpt/gpt_attn.cuh): the reference and
# tuned kernels checked against a CPU reference, then timed side by side
# (forward, backward; GPT-2 XL's heads at T = 1024). make bench builds it
# (examples/bench/*.cu) but does not run it:
#   build/bench/bench_attn [--reps N] [--check-only]
#   python3 examples/bench/bench_attn_torch.py   PyTorch's SDPA on the same shapes
$(BUILD)/bench/bench_attn: examples/bench/bench_attn.cu examples/bench/bench.cuh examples/gpt/gpt_cuda.cuh \
		examples/gpt/gpt_attn.cuh examples/gpt/gpt_model.h examples/gpt/gpt_wire.h examples/example_dtype.cuh $(HEADERS)
	@mkdir -p $(BUILD)/bench
	$(NVCC) -std=c++17 -O3 -lineinfo -arch=$(GPU_ARCH) -I. $(NCCL_FLAGS) -Xcompiler -Wall,-Wextra,-Werror -o $@ $< -lnccl -lcublasLt -lcublas

FUZZ_SECONDS ?= 600
fuzz:
	@mkdir -p $(BUILD)/fuzz_corpus
	$(CLANG) -std=c11 -g -O1 -fsanitize=fuzzer,address,undefined -DZERO_FUZZ_CONFIG -I. -o $(BUILD)/fuzz_json tests/fuzz_json.c -lm
	$(BUILD)/fuzz_json -max_total_time=$(FUZZ_SECONDS) -max_len=4096 -timeout=10 \
	    -dict=tests/fuzz_json.dict -print_final_stats=1 $(BUILD)/fuzz_corpus tests/fuzz_corpus tests/configs

fuzz-ckpt:
	@mkdir -p $(BUILD)/fuzz_ckpt_corpus
	$(CLANG) -std=c11 -g -O1 -fsanitize=fuzzer,address,undefined -I. -o $(BUILD)/fuzz_ckpt tests/fuzz_ckpt.c -lm -lpthread
	$(BUILD)/fuzz_ckpt -max_total_time=$(FUZZ_SECONDS) -max_len=8192 -timeout=10 -print_final_stats=1 \
	    $(BUILD)/fuzz_ckpt_corpus tests/fuzz_ckpt_corpus

fuzz-safetensors:
	@mkdir -p $(BUILD)/fuzz_safetensors_corpus
	$(CLANG) -std=c11 -g -O1 -fsanitize=fuzzer,address,undefined -I. -o $(BUILD)/fuzz_safetensors tests/fuzz_safetensors.c -lm -lpthread
	$(BUILD)/fuzz_safetensors -max_total_time=$(FUZZ_SECONDS) -max_len=8192 -timeout=10 -print_final_stats=1 \
	    $(BUILD)/fuzz_safetensors_corpus tests/fuzz_safetensors_corpus

# tensor tables with program-owned data and gradients (overlaps, aliases, misalignment, zero sizes, shapes)
# against a plain checker; a finding is written to $(BUILD)/fuzz_layout-crash-*
fuzz-layout:
	@mkdir -p $(BUILD)/fuzz_layout_corpus
	$(CLANG) -std=c11 -g -O1 -fsanitize=fuzzer,address,undefined -I. -o $(BUILD)/fuzz_layout tests/fuzz_layout.c -lm -lpthread
	$(BUILD)/fuzz_layout -max_total_time=$(FUZZ_SECONDS) -max_len=80 -timeout=10 -print_final_stats=1 \
	    -artifact_prefix=$(BUILD)/fuzz_layout- $(BUILD)/fuzz_layout_corpus tests/fuzz_layout_corpus

# make install (docs/install.md): the headers into $(PREFIX)/include; zero.pc into
# $(PREFIX)/lib/pkgconfig with the flags of the CUDA and NCCL found above (host flags only
# without CUDA; -DZERO_NO_NCCL with CUDA but without NCCL); the CMake package (CMakeLists.txt,
# configured in a temporary directory) into $(PREFIX)/lib/cmake/zero when cmake is there.
# Nothing is written into the tree, so `sudo make install` leaves no root-owned files.
# DESTDIR stages the files; the paths inside them name PREFIX.
CMAKE ?= cmake
INSTALL_ROOT = $(DESTDIR)$(PREFIX)
# The version is zero.h's, read when installing: ZERO_VERSION_MAJOR.MINOR.PATCH.
zero_version_part = $(shell sed -n 's/^.define ZERO_VERSION_$(1)  *\([0-9][0-9]*\).*/\1/p' zero.h)
ZERO_VERSION = $(call zero_version_part,MAJOR).$(call zero_version_part,MINOR).$(call zero_version_part,PATCH)
# Where library $(1) is: its directory among $(2), "default" when the compiler finds it
# without -L (Debian's multiarch directories), else empty (not found).
zero_libdir = $(or $(patsubst %/$(1),%,$(firstword $(wildcard $(addsuffix /$(1),$(2))))),$\
                   $(if $(filter /%,$(shell $(CC) -print-file-name=$(1) 2>/dev/null)),default))
PC_CUDA_INC    = $(if $(CUDA_HOME),$(if $(wildcard $(CUDA_HOME)/include/cuda_runtime_api.h),$(CUDA_HOME)/include))
PC_CUDA_LIBDIR = $(if $(PC_CUDA_INC),$(call zero_libdir,libcudart.so,$(CUDA_HOME)/lib64 $(CUDA_HOME)/lib $(wildcard $(CUDA_HOME)/targets/*/lib)))
PC_NCCL_LIBDIR = $(if $(PC_CUDA_LIBDIR),$(if $(NCCL_HOME),$(call zero_libdir,libnccl.so,$(NCCL_HOME)/lib64 $(NCCL_HOME)/lib)))
PC_NCCL_INC    = $(if $(PC_NCCL_LIBDIR),$(filter-out $(PC_CUDA_INC),$(NCCL_HOME)/include))
# -L and one rpath (pkgconf drops a repeated -Xlinker, so the directories join with ':';
# nvcc takes -Xlinker where it refuses -Wl,), each directory once
PC_LIBDIRS     = $(filter-out default,$(PC_NCCL_LIBDIR) $(filter-out $(PC_NCCL_LIBDIR),$(PC_CUDA_LIBDIR)))
pc_empty :=
pc_space := $(pc_empty) $(pc_empty)
comma    := ,
PC_CFLAGS = -I$${includedir}$(if $(PC_CUDA_LIBDIR), -I$(PC_CUDA_INC)$(if $(PC_NCCL_INC), -I$(PC_NCCL_INC))$(if $(PC_NCCL_LIBDIR),, -DZERO_NO_NCCL))
PC_LIBS   = $(addprefix -L,$(PC_LIBDIRS))$(if $(PC_LIBDIRS), -Xlinker -rpath=$(subst $(pc_space),:,$(PC_LIBDIRS)))$\
            $(if $(PC_NCCL_LIBDIR), -lnccl)$(if $(PC_CUDA_LIBDIR), -lcudart) -lm -lpthread
PC_NOTE   = $(if $(PC_CUDA_LIBDIR),$(if $(PC_NCCL_LIBDIR),\
              CUDA (CUDA_HOME=$(CUDA_HOME)) and NCCL (NCCL_HOME=$(NCCL_HOME)) found: the flags of zero_cuda.cuh included,\
              CUDA (CUDA_HOME=$(CUDA_HOME)) found$(comma) NCCL not (NCCL_HOME=$(NCCL_HOME)): -DZERO_NO_NCCL$(comma) zero_cuda.cuh builds for one GPU),\
              CUDA not found (CUDA_HOME=$(CUDA_HOME)): host flags only$(comma) for zero.h and zero_offload.h; zero_cuda.cuh needs nvcc and CUDA and NCCL flags)

install:
	@case "$(ZERO_VERSION)" in [0-9]*.[0-9]*.[0-9]*) ;; \
	    *) echo "zero: no ZERO_VERSION_MAJOR / MINOR / PATCH in zero.h (read: '$(ZERO_VERSION)')"; exit 1;; esac
	install -d $(INSTALL_ROOT)/include $(INSTALL_ROOT)/lib/pkgconfig
	install -m 644 $(HEADERS) $(INSTALL_ROOT)/include/
	@echo "zero: writing $(INSTALL_ROOT)/lib/pkgconfig/zero.pc: $(strip $(PC_NOTE))"
	@{ echo '# zero.pc - zero $(ZERO_VERSION), header-only; written by `make install` (docs/install.md).'; \
	   echo '# $(strip $(PC_NOTE))'; \
	   echo 'prefix=$(PREFIX)'; \
	   echo 'includedir=$${prefix}/include'; \
	   echo 'cuda_home=$(if $(PC_CUDA_LIBDIR),$(CUDA_HOME))'; \
	   echo 'nccl_home=$(if $(PC_NCCL_LIBDIR),$(NCCL_HOME))'; \
	   echo ''; \
	   echo 'Name: zero'; \
	   echo 'Description: ZeRO (the Zero Redundancy Optimizer of DeepSpeed) for C and CUDA training code'; \
	   echo 'Version: $(ZERO_VERSION)'; \
	   echo 'Cflags: $(PC_CFLAGS)'; \
	   echo 'Libs: $(strip $(PC_LIBS))'; \
	 } > $(INSTALL_ROOT)/lib/pkgconfig/zero.pc
	@chmod 644 $(INSTALL_ROOT)/lib/pkgconfig/zero.pc
	@if command -v $(CMAKE) >/dev/null 2>&1; then \
	    d=$$(mktemp -d) || exit 1; \
	    echo "zero: the CMake package, configured in $$d"; \
	    if $(CMAKE) -S "$(CURDIR)" -B "$$d" -DCMAKE_INSTALL_PREFIX="$(PREFIX)" -DCMAKE_INSTALL_INCLUDEDIR=include \
	           -DCMAKE_INSTALL_LIBDIR=lib $(if $(CUDA_HOME),-DCUDAToolkit_ROOT="$(CUDA_HOME)") \
	           -DNCCL_HOME="$(NCCL_HOME)" >"$$d/configure.log" 2>&1; then \
	        DESTDIR="$(DESTDIR)" $(CMAKE) --install "$$d"; rc=$$?; \
	    else cat "$$d/configure.log"; rc=1; fi; \
	    rm -rf "$$d"; exit $$rc; \
	else \
	    echo "zero: no $(CMAKE) here: the CMake package is not installed (install cmake and run make install again)"; \
	fi

# Removes what make install wrote (same PREFIX and DESTDIR), then the directories that this
# leaves empty, up to PREFIX itself.
uninstall:
	rm -f $(addprefix $(INSTALL_ROOT)/include/,$(HEADERS)) $(INSTALL_ROOT)/lib/pkgconfig/zero.pc
	rm -rf $(INSTALL_ROOT)/lib/cmake/zero
	@for d in include lib/pkgconfig lib/cmake lib ""; do \
	    [ -d "$(INSTALL_ROOT)/$$d" ] && rmdir "$(INSTALL_ROOT)$${d:+/$$d}" 2>/dev/null; true; done

clean:
	rm -rf $(BUILD)
