# Kiln build.  `make help` lists the targets.
#
# Variant builds reuse this file with another BUILD directory and SAN mode:
#   build/        normal (-O2 -g)
#   build/asan/   AddressSanitizer + UndefinedBehaviorSanitizer
#   build/tsan/   ThreadSanitizer (clang)
#   build/cov/    gcov instrumentation
# Check, subunit and jansson are linked statically into the tools and tests,
# so build/kiln and the test binaries also run on the GPU machine, which has
# neither package.  CUDA is never linked: the cuda backend dlopen()s it.

CC       ?= cc
BUILD    ?= build
SAN      ?=
PREFIX   ?= /usr/local
DESTDIR  ?=
PYTHON   ?= python3
JOBS     ?= 2
# The Python frontend (python/) is tested under Debian's interpreter, the one
# python3-numpy from `make deps` serves; the python3 on PATH may be another.
PYTHON_SYS ?= $(if $(wildcard /usr/bin/python3),/usr/bin/python3,python3)

LIBDIR_SYS := /usr/lib/x86_64-linux-gnu
CFLAGS_BASE := -std=c11 -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes \
  -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -fvisibility=hidden \
  -ffp-contract=off -fno-fast-math -pthread -Iruntime/include -Iruntime
OPTFLAGS ?= -O2 -g

ifeq ($(SAN),asan)
  SANFLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all \
              -fno-omit-frame-pointer
  OPTFLAGS := -O1 -g
endif
ifeq ($(SAN),tsan)
  CC := clang
  SANFLAGS := -fsanitize=thread -fno-omit-frame-pointer
  OPTFLAGS := -O1 -g
endif
ifeq ($(SAN),cov)
  SANFLAGS := --coverage
  OPTFLAGS := -O0 -g
  # counters also from processes that leave through _exit() (tests/cov/gcov_exit.c)
  COV_OBJ  := $(BUILD)/obj/tests/cov/gcov_exit.o
  COV_LINK := $(COV_OBJ) -Wl,--wrap=_exit
endif

# The sanitizer and coverage builds are debug builds: -DKILN_DEBUG turns
# on the invariant checkers too slow for every call (KILN_ASSERT_SLOW).
DEBUGFLAGS := $(if $(SAN),-DKILN_DEBUG)
CFLAGS  := $(CFLAGS_BASE) $(OPTFLAGS) $(SANFLAGS) $(DEBUGFLAGS) $(EXTRA_CFLAGS)
LDFLAGS := $(SANFLAGS) -pthread
SYSLIBS := -ldl -lm -lpthread -lrt
# Static Check/subunit/jansson (see the header comment).
STATIC_DEPS := $(LIBDIR_SYS)/libcheck.a $(LIBDIR_SYS)/libsubunit.a \
               $(LIBDIR_SYS)/libjansson.a

LIB_SRC  := $(sort $(wildcard runtime/*.c runtime/backends/*.c))
CLI_SRC  := $(sort $(wildcard runtime/cli/*.c runtime/tool/*.c conformance/*.c))
UNIT_SRC := $(sort $(wildcard tests/unit/*.c))

LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/obj/%.o)
CLI_OBJ  := $(CLI_SRC:%.c=$(BUILD)/obj/%.o)
UNIT_OBJ := $(UNIT_SRC:%.c=$(BUILD)/obj/%.o)

.PHONY: all lib cli unit test test-unit check-layers conform-fuzz test-asan test-tsan deps install fuzz-kf fuzz-trigger \
        test-verdict check-vectors \
        check-cuda-headers test-cli fuzz-npy fuzz-vectors test-python fuzz-kdb \
        uninstall clean help fuzz coverage coverage-check conform bench gpu-bundle \
        docs-check testgen testgen-check spec-coverage mutants nvrtc-check valgrind examples

all: lib cli

lib: $(BUILD)/libkiln.a $(BUILD)/libkiln.so
cli: $(BUILD)/kiln
unit: $(BUILD)/unit_tests

$(BUILD)/obj/%.o: %.c $(wildcard runtime/*.h runtime/include/*.h runtime/backends/*.h runtime/cli/*.h runtime/tool/*.h conformance/*.h tests/unit/*.h) | check-cuda-headers
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -fPIC -c $< -o $@

# The CUDA backend's files use the toolkit's headers (cuda.h, nvrtc.h,
# cublas_api.h) for types and names only: CUDA is never linked (dlopen).
# They are required to build (README, "Dependencies"); check-cuda-headers
# says which are missing before anything compiles.
CUDA_INC ?= /usr/local/cuda/include
check-cuda-headers:
	@CUDA_INC='$(CUDA_INC)' bash scripts/deps.sh --cuda-headers
$(BUILD)/obj/runtime/backends/cuda%.o $(BUILD)/obj/runtime/backends/nvrtc.o: CFLAGS += -I$(CUDA_INC)
$(BUILD)/obj/runtime/backends/cuda.o $(BUILD)/obj/runtime/cli/bench_gpu.o \
  $(BUILD)/obj/tests/unit/test_cuda.o $(BUILD)/obj/tests/unit/test_stream.o: CFLAGS += -I$(CUDA_INC)

# The CUDA preamble every generated kernel starts with is a real CUDA file,
# runtime/backends/cuda_preamble.cuh, embedded in cuda_codegen.o as a byte
# array: od (coreutils, so no extra dependency) writes its bytes, sed turns
# them into C.
$(BUILD)/gen/cuda_preamble.inc: runtime/backends/cuda_preamble.cuh
	@mkdir -p $(dir $@)
	od -An -v -tx1 $< | sed 's/\([0-9a-f][0-9a-f]\)/0x\1,/g' > $@.tmp && mv $@.tmp $@
$(BUILD)/obj/runtime/backends/cuda_codegen.o: $(BUILD)/gen/cuda_preamble.inc
$(BUILD)/obj/runtime/backends/cuda_codegen.o: CFLAGS += -I$(BUILD)/gen

$(BUILD)/libkiln.a: $(LIB_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(BUILD)/libkiln.so: $(LIB_OBJ)
	$(CC) -shared -Wl,-soname,libkiln.so.0 -o $@ $^ $(LDFLAGS) $(SYSLIBS)

$(BUILD)/kiln: $(CLI_OBJ) $(BUILD)/libkiln.a $(COV_OBJ)
	$(CC) -o $@ $(CLI_OBJ) $(BUILD)/libkiln.a $(LDFLAGS) $(STATIC_DEPS) $(COV_LINK) $(SYSLIBS)

# The git revision the runner stamps into results files (conformance/
# results.c): rewritten only when it changes, so an unchanged tree
# rebuilds nothing; "unknown" outside a git checkout.
.PHONY: FORCE
$(BUILD)/gen/kiln_git_rev.h: FORCE
	@mkdir -p $(dir $@)
	@rev=$$(git rev-parse HEAD 2>/dev/null || echo unknown); \
	 if [ "$$rev" != unknown ] && ! git diff --quiet HEAD -- 2>/dev/null; then \
	   rev="$$rev-dirty"; fi; \
	 echo "#define KILN_GIT_REVISION \"$$rev\"" > $@.tmp; \
	 cmp -s $@.tmp $@ 2>/dev/null && rm -f $@.tmp || mv $@.tmp $@
$(BUILD)/obj/conformance/results.o: $(BUILD)/gen/kiln_git_rev.h
$(BUILD)/obj/conformance/results.o: CFLAGS += -I$(BUILD)/gen

# Every tests/unit/*.c file defines `Suite *NAME_suite(void)`; this list is
# generated so a new file needs no registration.
$(BUILD)/gen/suites.inc: $(UNIT_SRC)
	@mkdir -p $(dir $@)
	grep -ho '^Suite \*[a-z0-9_]*_suite(void)' $(UNIT_SRC) | \
	  sed 's/^Suite \*\([a-z0-9_]*\)(void)/KILN_SUITE(\1)/' > $@.tmp && mv $@.tmp $@

$(BUILD)/obj/tests/unit/main.o: $(BUILD)/gen/suites.inc
$(BUILD)/obj/tests/unit/%.o: CFLAGS += -I$(BUILD)/gen -Itests/unit

# The conformance runner's loader and checkers (tests/unit/
# test_conform_check.c) and the .npy reader (test_npy.c) are unit-tested
# directly, so their objects join the unit binary.
UNIT_CONF_OBJ := $(patsubst %.c,$(BUILD)/obj/%.o,conformance/vectors.c \
                   conformance/check_numeric.c conformance/differential.c \
                   conformance/sweep.c conformance/crmath.c \
                   conformance/sha256.c conformance/expectations.c \
                   conformance/verdict.c conformance/report.c conformance/cases.c \
                   conformance/outputs.c conformance/fuzz.c \
                   runtime/tool/npy.c runtime/tool/outfile.c \
                   runtime/tool/args.c)
$(BUILD)/unit_tests: $(UNIT_OBJ) $(UNIT_CONF_OBJ) $(BUILD)/libkiln.a \
                     $(BUILD)/plugins/libkiln_test_plugin.so $(BUILD)/plugins/libkiln_data_entry.so $(COV_OBJ)
	$(CC) -o $@ $(UNIT_OBJ) $(UNIT_CONF_OBJ) $(BUILD)/libkiln.a $(LDFLAGS) $(STATIC_DEPS) $(COV_LINK) $(SYSLIBS)

# Plugins: tests/plugins/NAME.c -> $(BUILD)/plugins/libNAME.so.
PLUGIN_SRC := $(wildcard tests/plugins/*.c)
# A plugin links libkiln.a's objects privately (all hidden) and exports only
# its entry symbol.
$(BUILD)/plugins/lib%.so: tests/plugins/%.c $(BUILD)/libkiln.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -fPIC -shared -o $@ $< $(BUILD)/libkiln.a -Wl,--exclude-libs,ALL $(LDFLAGS) $(SYSLIBS)
plugins: $(PLUGIN_SRC:tests/plugins/%.c=$(BUILD)/plugins/lib%.so)

# Conformance mutants: conformance/mutants/NAME.patch -> $(BUILD)/mutants/
# NAME.so (Kind: backend) or $(BUILD)/mutants/NAME/kiln (Kind: runtime),
# by scripts/build_mutant.sh from this build's objects; only the patched
# files recompile (conformance/mutants/README.md).  A patch that no longer
# applies fails the build.
MUTANT_PATCHES := $(sort $(wildcard conformance/mutants/*.patch))
MUTANT_NAMES   := $(MUTANT_PATCHES:conformance/mutants/%.patch=%)
$(BUILD)/mutants/%/stamp: conformance/mutants/%.patch conformance/mutants/entry.c \
                          scripts/build_mutant.sh $(LIB_OBJ) $(CLI_OBJ) $(COV_OBJ)
	@BUILD='$(BUILD)' CC='$(CC)' CFLAGS='$(CFLAGS) -I$(CUDA_INC) -I$(BUILD)/gen' \
	  LDFLAGS='$(LDFLAGS)' SYSLIBS='$(SYSLIBS)' STATIC_DEPS='$(STATIC_DEPS) $(COV_LINK)' \
	  LIB_SRC='$(LIB_SRC)' CLI_SRC='$(CLI_SRC)' JOBS='$(JOBS)' \
	  bash scripts/build_mutant.sh $<
	@touch $@
mutants-build: $(MUTANT_NAMES:%=$(BUILD)/mutants/%/stamp)

# ------------------------------------------------------------------ tests

# `make test` is what CI runs (through .ci/run): every check, no weaker.
test:
	$(MAKE) -j$(JOBS) all unit
	$(MAKE) check-layers
	$(MAKE) docs-check
	$(MAKE) ci-check
	$(MAKE) testgen-check
	$(MAKE) spec-coverage
	$(MAKE) coverage-check
	$(MAKE) test-python
	$(MAKE) check-vectors
	$(MAKE) test-asan
	$(MAKE) test-tsan
	$(MAKE) valgrind
	$(MAKE) examples
	@echo "make test: all stages passed"

# The folders' include directions (docs/runtime.md, "Source layout"): no
# folder cycle between runtime/cli/, runtime/tool/ and conformance/, and no
# backend header in the generic runtime.  The self-test proves each rule
# can fail.
check-layers:
	bash scripts/check_layers.sh --self-test
	bash scripts/check_layers.sh

# The kernel database's fault tests tally wrong kernels and crashes into
# $(BUILD)/kdb-tally.txt; the totals must be 0 (tests/unit/test_kernel_db.c).
test-unit: $(BUILD)/unit_tests
	rm -f $(BUILD)/kdb-tally.txt
	KILN_TEST_ENV_REQUIRED=1 \
	  KILN_TEST_PLUGIN=$(abspath $(BUILD)/plugins/libkiln_test_plugin.so) \
	  KILN_KDB_TALLY=$(abspath $(BUILD)/kdb-tally.txt) \
	  KILN_BIN=$(abspath $(BUILD)/kiln) $(BUILD)/unit_tests
	@awk '{t += $$(NF-3); w += $$(NF-2); c += $$(NF-1); s += $$NF} END { \
	  printf "kernel_db fault tests: %d cases, %d trials, %d wrong kernels, %d crashes, %d skipped\n", \
	    NR, t, w, c, s; exit (NR == 0 || w + c > 0) }' $(BUILD)/kdb-tally.txt

# The Python frontend's unittest suite (python/tests), on build/libkiln.so.
test-python: all
	@echo "test-python: $(PYTHON_SYS), Python $$($(PYTHON_SYS) -c 'import sys; print(sys.version.split()[0])'), NumPy $$($(PYTHON_SYS) -c 'import numpy; print(numpy.__version__)')"
	KILN_LIBRARY=$(abspath $(BUILD)/libkiln.so) KILN_BIN=$(abspath $(BUILD)/kiln) \
	  PYTHONPATH=$(abspath python) $(PYTHON_SYS) -m unittest discover -s python/tests -p 'test_*.py'

# intercept_tls_get_addr=0: LeakSanitizer (GCC 12's libsanitizer) can
# crash in ScanRangeForPointers ("Tracer caught signal 11") on the dynamic
# TLS blocks of the dlopen'ed NVRTC, depending on the heap layout; without
# the interceptor it does not scan dynamic TLS at all.  That can only add
# reports (a block held only by a dlopen'ed library's TLS), never hide one:
# Kiln's own thread-local data is static TLS, still scanned.
ASAN_ENV := ASAN_OPTIONS=detect_leaks=1:intercept_tls_get_addr=0 \
  UBSAN_OPTIONS=print_stacktrace=1
test-asan:
	$(MAKE) -j$(JOBS) BUILD=$(BUILD)/asan SAN=asan all unit
	$(ASAN_ENV) KILN_TEST_ENV_REQUIRED=1 \
	  KILN_TEST_PLUGIN=$(abspath $(BUILD)/asan/plugins/libkiln_test_plugin.so) \
	  KILN_BIN=$(abspath $(BUILD)/asan/kiln) $(BUILD)/asan/unit_tests
	$(ASAN_ENV) \
	  $(PYTHON) tests/cli/test_cli.py $(BUILD)/asan/kiln $(BUILD)/asan/plugins/libkiln_test_plugin.so
	$(ASAN_ENV) $(PYTHON) tests/cli/test_kdb_cli.py $(BUILD)/asan/kiln
	$(ASAN_ENV) $(PYTHON) tests/cli/test_wrong_expectations.py $(BUILD)/asan/kiln \
	  $(BUILD)/asan/plugins/libkiln_test_plugin.so

# The command line end to end (tests/cli/test_cli.py): reports parsed with
# a real XML parser, hostile vector strings, atomic and concurrent report
# writes, output-path checks, option syntax of every subcommand, --help.
test-cli: all plugins
	$(PYTHON) tests/cli/test_cli.py $(BUILD)/kiln $(BUILD)/plugins/libkiln_test_plugin.so
	$(PYTHON) tests/cli/test_kdb_cli.py $(BUILD)/kiln
	$(PYTHON) tests/cli/test_invalid_vectors.py $(BUILD)/kiln
	$(PYTHON) tests/cli/test_results_file.py $(BUILD)/kiln
	$(PYTHON) tests/cli/test_wrong_expectations.py $(BUILD)/kiln $(BUILD)/plugins/libkiln_test_plugin.so
	$(PYTHON) tests/cli/test_conform_options.py $(BUILD)/kiln

# The verdict of `kiln conform` end to end (tests/cli/test_verdict.py): a
# mistyped backend, an unavailable one, an empty plugin, the five-op
# example's native counts, a stale expectations file, a results file that
# checks and one that was tampered with, where the vectors come from,
# `make install` building what it installs.
test-verdict: all plugins
	$(PYTHON) tests/cli/test_verdict.py $(BUILD)

# The reference reader testgen/check_vectors.py: its check kinds, and our
# exact reference through every numerics and cache.isolation vector (all
# must pass).  NumPy through the numerics vectors is the worked example in
# docs/conformance.md, which `make docs-check` runs (Debian's
# python3-numpy under /usr/bin/python3, installed by `make deps`).
check-vectors:
	$(PYTHON) testgen/check_vectors.py --self-test
	$(PYTHON) testgen/check_vectors.py --impl exact -q --category numerics \
	  --category cache.isolation

# ThreadSanitizer: the suites whose names start with "threads".
test-tsan:
	$(MAKE) -j$(JOBS) BUILD=$(BUILD)/tsan SAN=tsan unit
	TSAN_OPTIONS=halt_on_error=1 KILN_TEST_FILTER=threads KILN_TEST_ENV_REQUIRED=1 \
	  KILN_TEST_PLUGIN=$(abspath $(BUILD)/tsan/plugins/libkiln_test_plugin.so) \
	  $(BUILD)/tsan/unit_tests

valgrind: all
	@if [ -f scripts/valgrind.sh ]; then bash scripts/valgrind.sh $(BUILD); \
	 else echo "valgrind: scripts/valgrind.sh not present yet"; fi

nvrtc-check: all
	@if [ -f scripts/nvrtc_check.sh ]; then bash scripts/nvrtc_check.sh $(BUILD); \
	 else echo "nvrtc-check: not present yet"; fi

conform-ref: all
	@if [ -d conformance/vectors ] && ls conformance/vectors/*.json >/dev/null 2>&1; then \
	  $(BUILD)/kiln conform --backend ref --strict --junit $(BUILD)/conform-ref.xml; \
	 else echo "conform-ref: no vectors yet"; fi

# The fuzz category (docs/conformance.md, "The fuzz category"): random
# fusions with fixed seeds on the test plugin (ref's code behind the plugin
# ABI, against the built-in ref) and on ref itself (strided views against
# contiguous inputs).  FUZZ_COUNT fusions each.
FUZZ_COUNT ?= 1000
conform-fuzz: all plugins
	$(BUILD)/kiln conform --backend $(abspath $(BUILD)/plugins/libkiln_test_plugin.so) \
	  --category fuzz --seed 1 --count $(FUZZ_COUNT)
	$(BUILD)/kiln conform --backend ref --category fuzz --seed 1000001 \
	  --count $(FUZZ_COUNT)

# Builds what it can (-k), so that the table shows every mutant; one that
# does not build (its patch no longer applies, say) is NOT BUILT there and
# fails the check.
mutants: all
	-@$(MAKE) -k --no-print-directory mutants-build
	bash scripts/mutants.sh $(BUILD)

examples: all
	@if [ -f conformance/examples/Makefile ]; then bash scripts/examples.sh $(BUILD); \
	 else echo "examples: not present yet"; fi

docs-check: all
	$(PYTHON) scripts/docs_check.py $(BUILD)/kiln --python $(PYTHON_SYS)
	$(PYTHON) testgen/check_catalogue.py $(BUILD)/kiln
	$(PYTHON) testgen/check_tables.py $(BUILD)/kiln

# The comment-trigger grammar, the gate, the workflow lint and their tests,
# the fuzz corpus through the fuzz target's checks, and shellcheck on the
# CI scripts (docs/ci.md).  Debian's python3, for python3-yaml (make deps).
CI_PYTHON ?= /usr/bin/python3
ci-check:
	$(CI_PYTHON) ci/test_trigger.py
	$(CI_PYTHON) ci/test_gate.py
	$(CI_PYTHON) ci/test_lint.py
	$(CI_PYTHON) ci/lint_workflows.py .github/workflows/*.yml
	$(CI_PYTHON) ci/fuzz_trigger.py --check ci/fuzz_corpus
	$(CI_PYTHON) ci/test_coverage.py
	shellcheck .ci/run ci/*.sh

# Atheris (PyPI, into build/fuzz/venv) on the comment grammar
# (FUZZ_SECONDS=60).  Not part of `make test`, which never needs Atheris.
fuzz-trigger:
	@mkdir -p build/fuzz/trigger_corpus
	test -x build/fuzz/venv/bin/python || $(PYTHON) -m venv build/fuzz/venv
	build/fuzz/venv/bin/python -c 'import atheris' 2>/dev/null || \
	  build/fuzz/venv/bin/pip install -q atheris==3.0.0
	cp -n ci/fuzz_corpus/* build/fuzz/trigger_corpus/
	build/fuzz/venv/bin/python ci/fuzz_trigger.py -max_total_time=$${FUZZ_SECONDS:-60} \
	  -dict=ci/trigger.dict build/fuzz/trigger_corpus

testgen:
	@if [ -f testgen/generate.py ]; then $(PYTHON) testgen/generate.py --out conformance/vectors; \
	 else echo "testgen: not present yet"; fi

# Every rule id of the contract docs has a test that can fail; prints the
# rule x test matrix (docs/conformance.md, "Rule ids").
spec-coverage:
	$(PYTHON) testgen/spec_coverage.py

testgen-check:
	@if [ -f testgen/generate.py ]; then $(PYTHON) testgen/generate.py --check conformance/vectors; \
	 else echo "testgen-check: not present yet"; fi
	$(PYTHON) testgen/validate_schema.py tests/conformance_fixtures/basic/*.json
	$(PYTHON) testgen/validate_schema.py --expect-invalid tests/conformance_fixtures/malformed/*.json

# The suite on the default backend (the README's main command).
conform: all
	$(BUILD)/kiln conform --report $(BUILD)/conform-report.md \
	  --junit $(BUILD)/conform.xml --tap $(BUILD)/conform.tap

bench: all
	$(BUILD)/kiln bench all

# libFuzzer builds: ASan + UBSan, any UB report is fatal.  CORE_SRC: what
# every runtime file needs (status and last error, allocation, hashing,
# text buffers, names).
CORE_SRC := runtime/status.c runtime/alloc.c runtime/hash.c runtime/strbuf.c \
  runtime/names.c
FUZZ_CC := clang -std=c11 -g -O1 -fsanitize=fuzzer,address,undefined \
  -fno-sanitize-recover=all -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE \
  -Iruntime/include -Iruntime

fuzz:
	@mkdir -p build/fuzz
	$(FUZZ_CC) \
	  tests/fuzz/fuzz_options.c $(CORE_SRC) runtime/options.c \
	  -ldl -lm -lpthread -o build/fuzz/fuzz_options
	@mkdir -p build/fuzz/corpus
	cp -n tests/fuzz/corpus/* build/fuzz/corpus/ 2>/dev/null || true
	build/fuzz/fuzz_options -max_total_time=$${FUZZ_SECONDS:-60} \
	  -dict=tests/fuzz/options.dict build/fuzz/corpus

# libFuzzer on the .kf parser/printer round trip (FUZZ_SECONDS=60).
fuzz-kf:
	@mkdir -p build/fuzz/kf_corpus
	$(FUZZ_CC) \
	  tests/fuzz/fuzz_fusion_text.c $(CORE_SRC) runtime/fusion.c runtime/fusion_text.c \
	  -ldl -lm -lpthread -o build/fuzz/fuzz_fusion_text
	cp -n tests/fuzz/kf_corpus/* build/fuzz/kf_corpus/ 2>/dev/null || true
	build/fuzz/fuzz_fusion_text -max_total_time=$${FUZZ_SECONDS:-60} build/fuzz/kf_corpus

# libFuzzer on the .npy reader of `kiln run` (FUZZ_SECONDS=60).
fuzz-npy:
	@mkdir -p build/fuzz/npy_corpus
	$(FUZZ_CC) \
	  tests/fuzz/fuzz_npy.c runtime/tool/npy.c runtime/tool/outfile.c runtime/tool/args.c \
	  $(CORE_SRC) \
	  -ldl -lm -lpthread -o build/fuzz/fuzz_npy
	cp -n tests/fuzz/npy_corpus/* build/fuzz/npy_corpus/ 2>/dev/null || true
	build/fuzz/fuzz_npy -max_total_time=$${FUZZ_SECONDS:-60} build/fuzz/npy_corpus

# libFuzzer on the conformance runner's input: vector-file loading and the
# per-test field validation, without a backend (FUZZ_SECONDS=60).  The
# element budget is built at 2^16 so that runs explore the checks instead
# of filling memory (tests/fuzz/fuzz_vectors.c says why).
fuzz-vectors:
	@mkdir -p build/fuzz/vectors_corpus
	$(FUZZ_CC) \
	  '-DCF_BUDGET_ELEMENTS=((int64_t)1 << 16)' \
	  tests/fuzz/fuzz_vectors.c conformance/vectors.c conformance/check_numeric.c \
	  conformance/differential.c conformance/sweep.c conformance/crmath.c \
	  conformance/sha256.c $(CORE_SRC) \
	  $(LIBDIR_SYS)/libjansson.a \
	  -ldl -lm -lpthread -o build/fuzz/fuzz_vectors
	cp -n tests/fuzz/vectors_corpus/* build/fuzz/vectors_corpus/ 2>/dev/null || true
	build/fuzz/fuzz_vectors -max_total_time=$${FUZZ_SECONDS:-60} \
	  -dict=tests/fuzz/vectors.dict build/fuzz/vectors_corpus

# libFuzzer on .kf parse -> plan -> CUDA codegen, the planner and the code
# generator coverage-instrumented (FUZZ_SECONDS=60; -max_len fits fusions
# of a few hundred inputs).
.PHONY: fuzz-codegen
fuzz-codegen: $(BUILD)/gen/cuda_preamble.inc
	@mkdir -p build/fuzz/codegen_corpus
	clang -std=c11 -g -O1 -fsanitize=fuzzer,address,undefined \
	  -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -Iruntime/include -Iruntime -I$(BUILD)/gen \
	  tests/fuzz/fuzz_codegen.c $(CORE_SRC) runtime/options.c runtime/fusion.c \
	  runtime/fusion_text.c runtime/plan.c runtime/ir_simplify.c runtime/backends/cuda_codegen.c runtime/backends/cuda_emit.c \
	  -fno-sanitize-recover=all -ldl -lm -lpthread -o build/fuzz/fuzz_codegen
	cp -n tests/fuzz/codegen_corpus/* build/fuzz/codegen_corpus/ 2>/dev/null || true
	build/fuzz/fuzz_codegen -max_len=16384 -dict=tests/fuzz/kf.dict \
	  -max_total_time=$${FUZZ_SECONDS:-60} build/fuzz/codegen_corpus
# libFuzzer on the kernel database's entry reader (FUZZ_SECONDS=60):
# parse, the whole load path on an in-memory file, the payload IR decoder.
fuzz-kdb:
	@mkdir -p build/fuzz/kdb_corpus
	clang -std=c11 -g -O1 -fsanitize=fuzzer,address,undefined \
	  -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -Iruntime/include -Iruntime \
	  tests/fuzz/fuzz_kdb.c $(CORE_SRC) runtime/kernel_db.c runtime/kernel_db_format.c \
	  -fno-sanitize-recover=all -ldl -lm -lpthread -o build/fuzz/fuzz_kdb
	cp -n tests/fuzz/kdb_corpus/* build/fuzz/kdb_corpus/ 2>/dev/null || true
	build/fuzz/fuzz_kdb -max_total_time=$${FUZZ_SECONDS:-60} build/fuzz/kdb_corpus

# One instrumented build (build/cov: gcc --coverage, -O0, -DKILN_DEBUG) runs
# the stages that exercise runtime/ and conformance/: the unit tests, the
# command line and verdict tests, the NVRTC sweep and --serde suite, the
# suite on ref, the plugins and the mutants (their unpatched objects).  `make
# test` runs these stages only here, not a second time on build/, so the
# figures cost one -O0 build.  ci/coverage.py reads the counters with gcov's
# JSON output (no lcov/gcovr), prints the figures per directory, writes
# build/coverage-html/, and for coverage-check fails below lines >= 90 %,
# functions >= 95 %, branches >= 75 % per directory.  Only code that needs
# a real GPU driver is left out, each function named with its reason in
# ci/coverage_gpu_only.txt (docs/ci.md, "Coverage").
COV_BUILD  := build/cov
COV_STAGES := test-unit test-cli test-verdict nvrtc-check conform-ref conform-fuzz mutants
coverage:
	$(MAKE) -j$(JOBS) BUILD=$(COV_BUILD) SAN=cov all unit plugins
	$(PYTHON) ci/coverage.py zero $(COV_BUILD)
	$(MAKE) BUILD=$(COV_BUILD) SAN=cov $(COV_STAGES)
	$(PYTHON) ci/coverage.py report $(COV_BUILD) --html build/coverage-html

coverage-check: coverage
	$(PYTHON) ci/coverage.py report $(COV_BUILD) --check >/dev/null

# Everything the GPU machine needs, under carry/ (ignored by git): the
# binaries (Check and jansson linked statically), the vectors, the bench
# script.  Run on the device with: bash carry/gpu_run.sh
gpu-bundle: all unit plugins mutants-build
	rm -rf carry && mkdir -p carry/build
	cp -r $(addprefix $(BUILD)/,kiln libkiln.a libkiln.so unit_tests plugins) carry/build/
	mkdir -p carry/build/mutants
	@for m in $(MUTANT_NAMES); do \
	  if [ -f $(BUILD)/mutants/$$m.so ]; then cp $(BUILD)/mutants/$$m.so carry/build/mutants/; fi; \
	  if [ -f $(BUILD)/mutants/$$m/kiln ]; then mkdir -p carry/build/mutants/$$m && \
	    cp $(BUILD)/mutants/$$m/kiln carry/build/mutants/$$m/; fi; \
	done
	@echo "gpu-bundle: carry/ ready ($$(du -sh carry | cut -f1))"

deps:
	CUDA_INC='$(CUDA_INC)' bash scripts/deps.sh

# -------------------------------------------------------------- install

# Builds what it installs: the library, the headers, kiln.pc, bin/kiln, and
# the suite (the vectors and their schema) under PREFIX/share/kiln, where
# the installed kiln finds them (docs/conformance.md, "Where the vectors
# come from").  Vectors of an older install are replaced, not merged.
install: all
	install -d $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/include \
	  $(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(PREFIX)/bin \
	  $(DESTDIR)$(PREFIX)/share/kiln/vectors
	install -m 644 $(BUILD)/libkiln.a $(DESTDIR)$(PREFIX)/lib/
	install -m 755 $(BUILD)/libkiln.so $(DESTDIR)$(PREFIX)/lib/libkiln.so.0
	ln -sf libkiln.so.0 $(DESTDIR)$(PREFIX)/lib/libkiln.so
	install -m 644 runtime/include/kiln.h runtime/include/kiln_backend.h $(DESTDIR)$(PREFIX)/include/
	install -m 755 $(BUILD)/kiln $(DESTDIR)$(PREFIX)/bin/
	rm -f $(DESTDIR)$(PREFIX)/share/kiln/vectors/*.json
	install -m 644 conformance/vectors/*.json $(DESTDIR)$(PREFIX)/share/kiln/vectors/
	install -m 644 conformance/schema.json $(DESTDIR)$(PREFIX)/share/kiln/
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@VERSION@|$(shell sed -n 's/^#define KILN_VERSION_STRING "\(.*\)"/\1/p' runtime/include/kiln.h)|' \
	  kiln.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/kiln.pc

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/lib/libkiln.a $(DESTDIR)$(PREFIX)/lib/libkiln.so \
	  $(DESTDIR)$(PREFIX)/lib/libkiln.so.0 $(DESTDIR)$(PREFIX)/include/kiln.h \
	  $(DESTDIR)$(PREFIX)/include/kiln_backend.h $(DESTDIR)$(PREFIX)/bin/kiln \
	  $(DESTDIR)$(PREFIX)/lib/pkgconfig/kiln.pc
	rm -rf $(DESTDIR)$(PREFIX)/share/kiln

clean:
	rm -rf build carry

help:
	@echo "make            build/libkiln.a, build/libkiln.so, build/kiln"
	@echo "make deps       install missing Debian packages (idempotent, needs root)"
	@echo "make test       every check CI runs (unit, Python, ASan+UBSan, TSan,"
	@echo "                valgrind, vector freshness, NVRTC compile check,"
	@echo "                conformance, mutants)"
	@echo "make test-python  the Python frontend's tests (PYTHON_SYS=$(PYTHON_SYS))"
	@echo "make conform    the conformance suite on the default backend"
	@echo "make testgen    regenerate conformance/vectors"
	@echo "make spec-coverage  every contract rule id has a test that can fail (rule x test matrix)"
	@echo "make fuzz       libFuzzer on the option parser (FUZZ_SECONDS=60)"
	@echo "make fuzz-kf    libFuzzer on the .kf parser/printer round trip"
	@echo "make fuzz-kdb   libFuzzer on the kernel database's entry reader"
	@echo "make fuzz-trigger  Atheris on the CI comment grammar (ci/trigger.py)"
	@echo "make fuzz-npy   libFuzzer on the .npy reader of kiln run"
	@echo "make fuzz-vectors libFuzzer on vector-file loading and validation"
	@echo "make fuzz-codegen  libFuzzer on .kf parse -> plan -> CUDA codegen"
	@echo "make coverage   instrumented stages; figures + HTML in build/coverage-html"
	@echo "make coverage-check  the same, failing below the thresholds (in make test)"
	@echo "make bench      benchmarks (kiln bench all)"
	@echo "make gpu-bundle binaries for the GPU machine under carry/"
	@echo "make install    PREFIX=/usr/local DESTDIR= (library, headers, kiln.pc,"
	@echo "                bin/kiln, the suite in share/kiln)"
