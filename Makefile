# Rfmalloc monorepo: setup, build, test, demo, bench.
# `make demo` and `make test` each install what is missing first.

# ISA=auto (default) runs every kernel at the best level this CPU has.
# ISA=portable|avx2|avx512 forces one path through the whole build and test:
# the core's run-time kernels (FM_ISA, fm_cpu.h), the GGML build that Rgguf
# and Rllm link (ggmlR with or without SIMD, tools/ggmlr-setup.sh) and the
# llama.cpp oracle's CPU variant (tools/llama-oracle/variant.sh), in a build
# tree of its own (build/isa-$(ISA)). tools/isa-report.sh says what is used.
ISA       ?= auto
ifeq ($(ISA),auto)
BUILD     := $(CURDIR)/build
else
BUILD     := $(CURDIR)/build/isa-$(ISA)
endif
RLIB      := $(BUILD)/rlib
ORACLE    := $(if $(filter auto avx512,$(ISA)),$(CURDIR)/tools/llama-oracle,$(BUILD)/llama-oracle)
FIXTURES  ?= $(abspath $(CURDIR)/../shared/fixtures)
# The path's environment for every test: the core's kernel limit, and the
# GGML build tools/ggmlr-setup.sh verified (read when a recipe runs, after
# setup), which the tests check is the one they link; and the fixtures (the
# core tests' relative default finds them only from build/core).
ISA_ENV    = FM_ISA=$(ISA) FM_GGML_ISA_EXPECTED=$(shell cat $(RLIB)/.ggmlr/isa 2>/dev/null) \
             FM_GGML_VULKAN_EXPECTED=$(shell cat $(RLIB)/.ggmlr/vulkan 2>/dev/null) \
             RFMALLOC_FIXTURES=$(FIXTURES)
RENV       = R_LIBS=$(RLIB) RLLM_ORACLE_DIR=$(ORACLE) $(ISA_ENV)
CMAKE_GGML := -DGGMLR_DIR=$(RLIB)/ggmlR
# The R packages in install (dependency) order: tools/packages, read by
# every script and test that goes over them.
PKGS      := $(addprefix packages/,$(shell cat tools/packages))
JOBS      ?= 2

.PHONY: all setup isa-report test-isa core core-test core-asan core-valgrind fuzz install r-test one-core check-install test demo bench check docs site clean vulkan test-vulkan

all: install

# SETUP_ORACLE=0: setup without the llama.cpp oracle (only tests use it)
SETUP_ORACLE ?= 1
setup:
	@ISA=$(ISA) BUILD=$(BUILD) ORACLE=$(SETUP_ORACLE) bash tools/setup.sh

core:
	@cmake -S core -B $(BUILD)/core -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_GGML) >/dev/null
	@cmake --build $(BUILD)/core -j$(JOBS)

core-test: core
	@bash tools/check-no-r-headers.sh
	@cd $(BUILD)/core && $(ISA_ENV) ctest --output-on-failure

core-asan:
	@cmake -S core -B $(BUILD)/core-asan -DFM_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug $(CMAKE_GGML) >/dev/null
	@cmake --build $(BUILD)/core-asan -j$(JOBS)
	@cd $(BUILD)/core-asan && $(ISA_ENV) ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure

# valgrind on every core test; the map tests that fork run natively and under
# ASan instead (valgrind and SIGKILLed children make a slow, noisy pair).
# Only definite leaks fail; "possibly lost" blocks (libgomp's thread pool in
# the GGML tests) are not shown. test_fault runs natively and under ASan
# only: it takes real SIGBUS faults on truncated mappings, whose delivery
# valgrind cannot emulate ("can't extend stack during signal delivery").
VALGRIND_MAP_TESTS := basic_roundtrip big_offsets free_and_reuse resize_blocks name_rules \
  unsynced_changes_lost directory_full corrupt_files seq_exhausted uid_lease_zero \
  empty_file_and_caps scratch_mode truncate_and_replace null_safety file_identity same_file
VALGRIND := valgrind -q --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite --show-possibly-lost=no
# valgrind (3.19) cannot execute AVX-512: it stops with SIGILL. The core's
# own kernels choose their path at run time, and CPUID under valgrind shows
# no AVX-512, so they take the AVX2 one; but a GGML built with -mavx512*
# uses it anywhere, static initializers included. So where the project's
# GGML is the avx512 build, the tests run under valgrind in a tree of their
# own linking the AVX2 GGML of the avx2 path (build/isa-avx2/rlib, built by
# tools/ggmlr-setup.sh when absent, as `make test ISA=avx2` builds it).
VG_RLIB = $(if $(filter avx512,$(shell cat $(RLIB)/.ggmlr/isa 2>/dev/null)),$(CURDIR)/build/isa-avx2/rlib,$(RLIB))
VG_TREE = $(if $(filter $(RLIB),$(VG_RLIB)),$(BUILD)/core,$(BUILD)/core-valgrind)

core-valgrind: core
	@if [ "$(VG_TREE)" != "$(BUILD)/core" ]; then bash tools/ggmlr-setup.sh $(VG_RLIB) avx2 && \
	  cmake -S core -B $(VG_TREE) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGGMLR_DIR=$(VG_RLIB)/ggmlR >/dev/null && \
	  cmake --build $(VG_TREE) -j$(JOBS) >/dev/null; fi
	@cd $(VG_TREE) && export $(ISA_ENV) FM_GGML_ISA_EXPECTED=$$(cat $(VG_RLIB)/.ggmlr/isa) && for t in test_*; do \
	  [ $$t = test_fault ] && { echo "valgrind: $$t skipped (runs natively and under ASan)"; continue; }; \
	  args=""; [ $$t = test_map ] && args="$(VALGRIND_MAP_TESTS)"; \
	  $(VALGRIND) ./$$t $$args >/dev/null || { echo "valgrind: $$t failed"; exit 1; }; \
	  echo "valgrind: $$t clean"; done

# libFuzzer targets of the core parsers (core/fuzz/), FUZZ_RUNS executions each.
FUZZ_RUNS ?= 100000
fuzz:
	@dpkg -s clang-14 libclang-rt-14-dev >/dev/null 2>&1 || { apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq clang-14 libclang-rt-14-dev >/dev/null; }
	@CC=clang-14 bash tools/fuzz.sh $(FUZZ_RUNS)

# Each package installs from its folder as a user's R CMD INSTALL would: the
# core is compiled once, into Rfmalloc (its GGML subsystem into Rgguf), and
# the other packages reach it through their function tables. --preclean
# rebuilds the glue each time (a few seconds), so that it follows a changed
# core header; the core's objects follow theirs through configure's lists.
install:
	@mkdir -p $(RLIB)
	@for p in $(PKGS); do $(RENV) R CMD INSTALL --preclean --no-test-load -l $(RLIB) $$p >$(BUILD)/install-$$(basename $$p).log 2>&1 \
	  || { cat $(BUILD)/install-$$(basename $$p).log; exit 1; }; echo "installed $$p"; done

# Each package's tests, then the cross-package ones (tests/testthat).
r-test: install
	@$(RENV) Rscript tools/run-r-tests.R $(PKGS) tests

# One compiled core per process: each core function is exported by exactly
# one package's shared object.
one-core: core install
	@bash tools/check-one-core.sh $(RLIB) $(BUILD)/core

# Installable as users install: R CMD INSTALL packages/<Pkg>, and R CMD
# build + INSTALL of the tarball alone, from a copy of the repository's files.
check-install: setup
	@bash tools/check-install.sh $(RLIB)

test: setup isa-report core-test core-asan core-valgrind r-test one-core check-install

# GGML's Vulkan backend (issue 17), opt-in and not part of `make test`:
# `make vulkan` installs the Debian packages it needs (libvulkan-dev, glslc,
# mesa-vulkan-drivers), rebuilds ggmlR --with-vulkan (same SIMD and repack
# flags, checked with nm) and Rgguf and Rllm against it, into a library of
# its own, $(VK_RLIB): the project's library keeps the CPU build, which
# `make test` needs without a Vulkan loader (tools/ggmlr-vulkan.sh says why).
# Runs put $(VK_RLIB) first in R_LIBS; every other package comes from
# $(RLIB). `make test-vulkan` runs Rllm's model tests (the comparisons with
# llama.cpp among them) with the models on device "vulkan"
# (RLLM_TEST_DEVICE, tests/testthat/helper-device.R). Without a GPU it
# runs on Mesa's lavapipe (one GGML accepts: tools/ggmlr-vulkan.sh step 4;
# its env file points the loader at it, VK_LAVAPIPE=0 leaves the machine's
# drivers): GGML skips CPU Vulkan drivers unless GGML_VK_VISIBLE_DEVICES
# names them, so VK_TEST_DEVICES (default 0: the first device the loader
# lists, lavapipe when it is the only driver) is passed as that;
# VK_TEST_DEVICES= (empty) leaves GGML's own choice (its GPUs).
# The first run compiles GGML's shaders with LLVM (about 8 min for the F32
# model's on 2 cores); Mesa keeps them in ~/.cache/mesa_shader_cache_db.
VK_RLIB := $(CURDIR)/build/vulkan/rlib
VK_LAVAPIPE ?= 1
VK_TEST_DEVICES ?= 0
VK_TEST_FILES ?= test-device.R test-model.R test-generate.R test-arch.R
vulkan: setup install
	@bash tools/ggmlr-vulkan.sh $(VK_RLIB) $(RLIB) $(ISA)

test-vulkan: vulkan
	@cd packages/Rllm/tests/testthat && R_LIBS=$(VK_RLIB):$(RLIB) RFMALLOC_FIXTURES=$(FIXTURES) \
	  RLLM_ORACLE_DIR=$(ORACLE) RLLM_TEST_DEVICE=vulkan FM_GGML_VULKAN_EXPECTED=yes \
	  $(if $(filter 1,$(VK_LAVAPIPE)),$(shell cat $(CURDIR)/build/vulkan/lavapipe/env 2>/dev/null)) \
	  $(if $(VK_TEST_DEVICES),GGML_VK_VISIBLE_DEVICES=$(VK_TEST_DEVICES)) \
	  Rscript $(CURDIR)/tools/run-vulkan-tests.R $(VK_TEST_FILES)

# Every path this CPU can force, each a whole make test in its own tree.
test-isa:
	@for isa in $$(bash tools/cpu.sh levels); do \
	  echo "== make test ISA=$$isa"; $(MAKE) --no-print-directory test ISA=$$isa || exit 1; done

# The CPU and the path of every kernel with several (what a failure is read against).
isa-report: core
	@$(RENV) BUILD=$(BUILD) bash tools/isa-report.sh

# the demo needs no oracle (node-llama-cpp from npm): its setup skips it
demo: SETUP_ORACLE := 0
demo: setup install
	@$(RENV) Rscript tools/demo.R
	@$(RENV) Rscript tools/demo_llm.R

# bench/run.R (foundation), bench/readers.R (readers against plink2),
# issue 5: bench/p1_pca.R (PCA vs plink2 approx/exact and pcaone),
# bench/p2_freq.R (allele frequencies and variances vs plink2 --freq),
# bench/p3_prodmat.R (X %*% B vs bigsnpr big_prodMat), bench/p6_crossprod.R
# (BLAS on a mapped matrix vs the heap); bench/llm.R, bench/llm_long.R,
# bench/llm_profile.R (perf profiles of us and llama.cpp, and GGML's
# one-row products from L2 and from memory: bench/ggml_gemv.c),
# bench/alp.R (ALP compression and fused products vs dense f64),
# issue 15: bench/gwas_accuracy.R (the largest differences from plink2 --glm
# on the fixture), bench/gwas.R (statgen_gwas vs plink2 --glm and bigstatsr's
# big_univLinReg/big_univLogReg; with BENCH_RSS=1 also its peak RSS on the
# 5,000 x 2,000,000 .bed); issue 16: bench/ld.R (statgen_ld within 1000 kb
# vs bigsnpr snp_cor, peak RSS, band product), bench/ldpred2.R
# (statgen_ldpred2_auto/inf vs bigsnpr on that band) and bench/coloc.R
# (statgen_coloc_signals on 500 x 500 signal pairs over 2,000 SNPs vs
# coloc.bf_bf per pair); issue 19: bench/scale.R (PCA and a linear GWAS in
# one process with 1 and 2 threads against 1 and 2 mirai daemons: speedup,
# the driver's peak RSS, the overhead per block).
# P1-P3 share bench/lib.R and the .bed that bench/gen_bed.R writes once under
# build/bench (5,000 x 200,000, 250 MB; P3 uses a copy without missing
# calls); P1's pcaone peer needs 8 GB of RAM, else it runs on a subset.
# tools/bench-setup.sh installs bigsnpr (P3, gwas) and logistf (the Firth
# oracle test) into build/rlib once.
# BENCH_THREADS (default 2), BENCH_REPS, BENCH_N and BENCH_M size the runs.
# BENCH_RSS=1 adds bench/readers_rss.R (peak RSS reading 1 GB inputs; it
# generates about 2.3 GB under build/bench/rss once) and bench/pca_rss.R
# (peak RSS of fmalloc_pca on a generated 5,000 x 2,000,000 .bed, 2.5 GB
# generated once under build/bench).
bench: setup install
	@$(RENV) bash tools/bench-setup.sh
	@$(RENV) Rscript bench/run.R
	@$(RENV) Rscript bench/readers.R
	@$(RENV) Rscript bench/p1_pca.R
	@$(RENV) Rscript bench/p2_freq.R
	@$(RENV) Rscript bench/p3_prodmat.R
	@$(RENV) Rscript bench/p6_crossprod.R
	@$(RENV) Rscript bench/llm.R
	@$(RENV) Rscript bench/llm_long.R
	@$(RENV) Rscript bench/llm_profile.R
	@$(RENV) Rscript bench/splice.R
	@$(RENV) Rscript bench/alp.R
	@$(RENV) Rscript bench/gwas_accuracy.R
	@$(RENV) Rscript bench/gwas.R
	@$(RENV) Rscript bench/ld.R
	@$(RENV) Rscript bench/ldpred2.R
	@$(RENV) Rscript bench/coloc.R
	@$(RENV) Rscript bench/scale.R
	@if [ "$(BENCH_RSS)" = 1 ]; then $(RENV) Rscript bench/readers_rss.R; fi
	@if [ "$(BENCH_RSS)" = 1 ]; then $(RENV) Rscript bench/pca_rss.R; fi

# R CMD check --as-cran of each package in PKGS order (tools/check.sh; Rpgen
# needs Rfmalloc installed); logs in build/check.
check: setup install
	@$(RENV) bash tools/check.sh $(CURDIR)/build/check $(addprefix $(CURDIR)/,$(PKGS))

# man/*.Rd and NAMESPACE from the roxygen comments (tools/docs.sh; roxygen2
# goes into build/rlib-docs once). Commit what it writes.
docs: install
	@bash tools/docs.sh

# The documentation site in build/site (tools/site.sh): one pkgdown site per
# package, from the packages installed in build/rlib (reference pages run
# their examples, vignettes become articles), and a home page from README.md.
site: install
	@$(RENV) bash tools/site.sh $(BUILD)/site

# Objects of in-place installs land beside the core's sources (src/core is
# a link to core/src in the repository).
clean:
	rm -rf build
	find core/src packages -name '*.o' -o -name '*.so' | xargs rm -f
