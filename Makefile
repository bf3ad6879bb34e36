# onnxio: convenience targets around CMake.
#
#   make              build build/onnxio, build/libonnxio.a, build/libonnxio.so
#   make demo         bootstrap what the demo needs only (.venv-demo: onnx, numpy), build the
#                     command, round-trip a test model and GPT-2 (scripts/demo.sh); says at
#                     the end where its files are and how big
#   make check        the quick tier: the -Werror build of build/ (C tests on), ctest -j
#                     (CHECK_CTEST_JOBS), the tree's package into .venv, pytest -m
#                     "not slow" tests/python (the tests marked slow: GiB files, corpus
#                     sweeps, package builds and installs, multi-second concurrency and
#                     signal runs); bootstraps only when .venv is missing, and then only
#                     requirements/check.txt (the quick tests that need more skip); its
#                     times: BENCHMARKS.md, "Builds and the quick tier"
#   make test         everything, what CI runs (.ci/run): bootstrap; -Werror build
#                     + ctest; ASan/UBSan build + ctest; libFuzzer targets and the
#                     Python package's atheris target for FUZZ_SECONDS each; make
#                     test-windows (whose build-windows/onnxio.exe the Python tests
#                     compare with build/onnxio); pytest tests/python, the slow
#                     tests included
#   make bench        bootstrap, build, onnxio vs libprotobuf C++ vs onnx Python (bench/);
#                     rewrites the results in BENCHMARKS.md and docs/bench.png; then, with the
#                     tree's Python package installed, the benchmark from the user's side
#                     (bench/bench_user.py: float16 LLM-shaped models against onnx, onnx_ir,
#                     safetensors, read/cat/write+fsync, warm and cold; bench/out/bench_user.json,
#                     docs/bench_user.png), the per-message operations (bench/bench_messages.py)
#                     the external data checksum (bench/bench_checksum.py) and the
#                     structural check against onnx.checker (bench/bench_check.py)
#   make bench-python the onnxio package vs onnx, onnxruntime and onnx_ir (bench/bench_python.py);
#                     rewrites its section of BENCHMARKS.md and docs/bench_python.png
#   make models       the benchmark models in .cache/models (made once)
#   make bootstrap    install Debian packages and .venv, the full test and benchmark set
#                     (scripts/bootstrap.sh; `scripts/bootstrap.sh demo` is the demo's)
#   make python-install  pip install the onnxio package (this tree) into .venv
#   make wheel        dist/onnxio-*-manylinux_2_28_*.whl: built with zig cc for glibc 2.28
#                     (scripts/zigcc), libdeflate compiled in, tagged and checked by
#                     auditwheel; bootstraps its own .venv-wheel (requirements/wheel.txt)
#   make windows      build-windows/: onnxio.exe, libonnxio.dll (+ import library), libonnxio.a
#                     and the C tests, cross-compiled with mingw-w64 (scripts/windows.sh;
#                     installs gcc-mingw-w64-x86-64, wine64, libz-mingw-w64-dev when missing)
#   make test-windows make windows, then every C test built for Windows under Wine
#   make install      build, then install headers, libraries, onnxio.pc, the CMake package and
#                     the command under PREFIX (default /usr/local; cmake --install build --prefix)
#   make clean        remove build directories and bench/out (keeps .cache/models, .venv)
#   make distclean    clean, plus .cache, .venv, .venv-demo and .venv-wheel
#
# Variables: JOBS (parallel build jobs; default: cores), CTEST_JOBS (ctest's jobs in
# `make test`; default 1), CHECK_CTEST_JOBS (in `make check`; default JOBS),
# FUZZ_SECONDS (default 60), BENCH_ARGS (passed to bench/bench.py, e.g. --repeats 3
# or --no-write), BENCH_BUILD (the library build the harness links; default build),
# BENCH_USER_ARGS (passed to bench/bench_user.py; default: sizes 0.5 and 3.5 GiB, 3 repeats;
# the full run is BENCH_USER_ARGS="--sizes 0.5,3.5,16", ~80 GiB of disk in .cache/models/user),
# SHARED (default ../shared), CMAKE_ARGS (extra arguments for every configure).

SHELL := /bin/bash
.DEFAULT_GOAL := all

JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CTEST_JOBS ?= 1
CHECK_CTEST_JOBS ?= $(JOBS)
FUZZ_SECONDS ?= 60
CMAKE ?= cmake
CTEST ?= ctest
CMAKE_ARGS ?=
SHARED ?= ../shared
BENCH_ARGS ?=
BENCH_BUILD ?= build
BENCH_USER_ARGS ?=
PYTHON := .venv/bin/python
DEMO_PYTHON := .venv-demo/bin/python
# CMake's own make must not inherit this make's flags and level (it would
# print every directory it enters and fight over the job server).
CMAKE_BUILD = env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL $(CMAKE) --build
# zlib: tests/c/testutil.c, which the bench harness shares with the C tests,
# deflates .onnxz entries with it as the tests' reference.
BENCH_LIBS ?= -ldeflate -lz -lm -pthread

# Sanitizer settings for the ctest run in build-asan/.
ASAN_TEST_OPTIONS ?= detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1
UBSAN_TEST_OPTIONS ?= print_stacktrace=1:halt_on_error=1

have_c_tests = $(wildcard tests/c/test_*.c)
# What the C tests said in passing (ctest keeps the output of passing tests
# in its log), each line after its test's name: how many fault and crash
# points test_faults swept, and every skip (tu_skip's "skipped: ...", the
# data helpers' "skip checks on ..."), which scripts/test.sh sums up.
# In parentheses: after `ctest && `, a bare `|| true` would make a failed
# ctest pass the step.
CTEST_NOTES = (awk '/^[0-9]+\/[0-9]+ Testing: /{t = $$NF} /points in all|skipped: |skip checks on /{sub(/^ */, ""); print t ": " $$0}' \
                 Testing/Temporary/LastTest.log || true)
have_py_tests = $(wildcard tests/python/test_*.py tests/python/*_test.py)

PREFIX ?= /usr/local

.PHONY: windows test-windows
windows:
	@JOBS=$(JOBS) scripts/windows.sh build

test-windows:
	@JOBS=$(JOBS) CTEST_JOBS=$(CTEST_JOBS) scripts/windows.sh test

.PHONY: install all bootstrap demo check test test-layers test-build test-asan test-fuzz test-python python-install wheel \
        bench bench-python bench-build models clean distclean

all:
	@if [ ! -f build/CMakeCache.txt ] || [ -n "$(CMAKE_ARGS)" ]; then \
	   echo "$(CMAKE) -S . -B build $(CMAKE_ARGS)"; $(CMAKE) -S . -B build $(CMAKE_ARGS); fi
	$(CMAKE_BUILD) build -j$(JOBS)

bootstrap:
	@scripts/bootstrap.sh

install: all
	$(CMAKE) --install build --prefix "$(PREFIX)"

# The demo needs the command only (not the C tests) and onnx + numpy only
# (not the tests' torch, onnxruntime, ...): its own .venv-demo.
demo:
	@scripts/bootstrap.sh demo
	@if [ ! -f build/CMakeCache.txt ]; then echo "$(CMAKE) -S . -B build $(CMAKE_ARGS)"; $(CMAKE) -S . -B build $(CMAKE_ARGS); fi
	$(CMAKE_BUILD) build -j$(JOBS) --target onnxio_cli
	@$(MAKE) --no-print-directory .cache/models/gpt2.onnx PYTHON=$(DEMO_PYTHON)
	DEMO_PYTHON=$(DEMO_PYTHON) scripts/demo.sh

# ---- tests ------------------------------------------------------------------

# Each step is its own target too (make test-asan, ...). `make test`
# (scripts/test.sh) runs all of them, in order, even after one fails, with
# each step's time, and ends with a summary of what ran and what was
# skipped; it fails if any step did.
TEST_STEPS := test-layers test-build test-asan test-fuzz test-windows test-python

test: bootstrap
	@scripts/test.sh $(TEST_STEPS)

# The library's layers against docs/design.md's table (scripts/check_layers.py).
test-layers:
	@echo "==> layers of src/"
	$(PYTHON) scripts/check_layers.py

# The build of test-build and check: build/, -Werror, with the Python
# extension and its stubs.
# ONNXIO_TESTS=ON: a build/ configured without the C tests (the README's
# C block) gets them back; ctest's --no-tests=error fails a run that
# finds none instead of passing it.
define build_werror
	@echo "==> build/ with -Werror (the Python extension and its stubs too)"
	$(CMAKE) -S . -B build -DONNXIO_WERROR=ON -DONNXIO_TESTS=ON -DONNXIO_PYTHON=ON -DPython_EXECUTABLE=$(CURDIR)/$(PYTHON) $(CMAKE_ARGS)
	$(CMAKE_BUILD) build -j$(JOBS)
endef

test-build:
	$(build_werror)
	@echo "==> ctest in build/"
	@if [ -z "$(have_c_tests)" ]; then echo "ctest: no tests/c/test_*.c, skipped"; \
	 else cd build && $(CTEST) --output-on-failure --no-tests=error -j$(CTEST_JOBS) && $(CTEST_NOTES); fi

test-asan:
	@echo "==> build-asan/ with ASan and UBSan"
	$(CMAKE) -S . -B build-asan -DONNXIO_SANITIZE=ON -DONNXIO_WERROR=ON $(CMAKE_ARGS)
	$(CMAKE_BUILD) build-asan -j$(JOBS)
	@echo "==> ctest in build-asan/"
	@if [ -z "$(have_c_tests)" ]; then echo "ctest: no tests/c/test_*.c, skipped"; \
	 else cd build-asan && ASAN_OPTIONS=$(ASAN_TEST_OPTIONS) UBSAN_OPTIONS=$(UBSAN_TEST_OPTIONS) \
	   $(CTEST) --output-on-failure --no-tests=error -j$(CTEST_JOBS) && $(CTEST_NOTES); fi

# fuzz_python.py fuzzes the onnxio package installed in .venv, so this step
# installs the tree's package first (test-python, which comes after it in
# `make test`, installs it again: pip's build in build/python is incremental,
# the second install takes a second or two).
test-fuzz: python-install
	@env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL \
	  FUZZ_SECONDS=$(FUZZ_SECONDS) JOBS=$(JOBS) SHARED=$(SHARED) CMAKE=$(CMAKE) scripts/fuzz.sh

# The tests import the onnxio package from .venv's site-packages, installed
# here from this tree (non-editable, so nothing in python/ is imported and no
# earlier install can be stale); --no-build-isolation builds with .venv's
# pinned scikit-build-core (CMakeLists.txt builds the extension, its stubs
# and the command), without reaching PyPI. Only a failed test's tmp_path
# is kept (pytest keeps every test's of the last three runs by default:
# 3.9 GB a run here).
# $(call run_pytest,ARGS): pytest ARGS tests/python, the way test-python and
# check run it.
define run_pytest
	@if [ -z "$(have_py_tests)" ]; then echo "pytest: no tests in tests/python, skipped"; \
	 else test -f build/libonnxio.so || $(MAKE) --no-print-directory all; \
	   rm -f .cache/pytest-current; mkdir -p .cache; \
	   ONNXIO_LIB=$(CURDIR)/build/libonnxio.so ONNXIO_CLI=$(CURDIR)/build/onnxio \
	   ONNXIO_PYTEST_CURRENT=$(CURDIR)/.cache/pytest-current \
	   $(PYTHON) -m pytest -q -rs -o tmp_path_retention_policy=failed $(1) tests/python; rc=$$?; \
	   if [ $$rc -gt 128 ]; then echo "pytest died (signal $$((rc - 128))) in: $$(cat .cache/pytest-current 2>/dev/null)" >&2; fi; \
	   exit $$rc; fi
endef

test-python: python-install
	@echo "==> pytest tests/python"
	$(call run_pytest,)

# ---- the quick check --------------------------------------------------------

# `make check`: the C tests in parallel and the Python tests but those
# marked slow (pytest -m "not slow"; pyproject.toml says what slow means),
# in about two minutes on 2 cores once build/ and the package's build are
# there. It stops at the first step that fails. `make test` runs every
# test, the slow ones, the ASan build and the fuzzers too.
check: | $(PYTHON)
	$(PYTHON) scripts/check_layers.py
	$(build_werror)
	@echo "==> ctest -j$(CHECK_CTEST_JOBS) in build/"
	@if [ -z "$(have_c_tests)" ]; then echo "ctest: no tests/c/test_*.c, skipped"; \
	 else cd build && $(CTEST) --output-on-failure --no-tests=error -j$(CHECK_CTEST_JOBS) && $(CTEST_NOTES); fi
	@$(MAKE) --no-print-directory python-install
	@echo "==> pytest -m 'not slow' tests/python"
	$(call run_pytest,-m "not slow")

# .venv, made by the bootstrap when it is missing, with the quick tier's
# packages only (requirements/check.txt; make check does not bootstrap
# otherwise: `make bootstrap` or `make test` installs the whole set).
$(PYTHON):
	@scripts/bootstrap.sh check

python-install:
	@echo "==> pip install . into .venv"
	$(PYTHON) -m pip install --disable-pip-version-check --no-build-isolation --no-deps --force-reinstall -q .
	@cd / && $(CURDIR)/$(PYTHON) -c 'import onnxio, os, sys; d = os.path.dirname(onnxio.__file__); \
	  sys.exit(0 if "site-packages" in d else "onnxio imported from %s, not site-packages" % d)'

# The wheel for PyPI: the extension and the command compiled for glibc 2.28
# (the manylinux_2_28 floor) by zig cc, with the copy of libdeflate
# (pyproject.toml's ONNXIO_BUNDLED=ON), in a build directory of
# its own; auditwheel then tags it manylinux_2_28 after checking that it
# needs nothing beyond that policy, and prints what it found. Its tools
# (requirements/wheel.txt) are in .venv-wheel, not in the tests' .venv:
# Python with its headers and make are all a machine needs.
#
# `make wheel PYTHON=/path/to/python3.X` builds the wheel of that CPython
# (3.9 or later), its tools in .venv-wheel-3.X. pip's long option names
# (--config-settings) serve every pip from 22.1 on (Debian 12's is 23.0.1);
# -idirafter the parent of Python's include directory finds Debian's
# multiarch pyconfig.h (<x86_64-linux-gnu/python3.11/pyconfig.h>), after
# zig's own glibc 2.28 headers.
WHEEL_PLAT ?= manylinux_2_28_$(shell uname -m)
WHEEL_DIR ?= dist
WHEEL_BASE := $(if $(filter command line,$(origin PYTHON)),$(PYTHON))
WHEEL_VENV := $(if $(WHEEL_BASE),.venv-wheel-$(shell $(WHEEL_BASE) -c 'import sys; print("%d.%d" % sys.version_info[:2])'),.venv-wheel)
WHEEL_PYTHON := $(WHEEL_VENV)/bin/python
wheel:
	@ONNXIO_PYTHON_BASE=$(WHEEL_BASE) scripts/bootstrap.sh wheel
	@echo "==> $(WHEEL_DIR)/: a $(WHEEL_PLAT) wheel for $$($(WHEEL_PYTHON) -c 'import sys; print(sys.version.split()[0])')"
	rm -rf build/wheel .whl
	PATH=$(CURDIR)/$(WHEEL_VENV)/bin:$$PATH CC=$(CURDIR)/scripts/zigcc ONNXIO_PYTHON=$(CURDIR)/$(WHEEL_PYTHON) \
	  CFLAGS="-idirafter $$(dirname $$($(WHEEL_PYTHON) -c 'import sysconfig; print(sysconfig.get_paths()["include"])'))" \
	  $(WHEEL_PYTHON) -m pip wheel --disable-pip-version-check --no-build-isolation --no-deps -q -w .whl \
	  --config-settings build-dir=build/wheel .
	rm -f $(WHEEL_DIR)/onnxio-*-$$(ls .whl | sed 's/^onnxio-[^-]*-\([^-]*-[^-]*\)-.*/\1/')-*.whl
	PATH=$(CURDIR)/$(WHEEL_VENV)/bin:$$PATH $(WHEEL_PYTHON) -m auditwheel repair --plat $(WHEEL_PLAT) -w $(WHEEL_DIR) \
	  .whl/onnxio-*.whl
	PATH=$(CURDIR)/$(WHEEL_VENV)/bin:$$PATH $(WHEEL_PYTHON) -m auditwheel show $$(ls $(WHEEL_DIR)/onnxio-*-$(WHEEL_PLAT).whl | \
	  grep -- "-$$(ls .whl | sed 's/^onnxio-[^-]*-\([^-]*-[^-]*\)-.*/\1/')-")
	rm -rf .whl

# ---- benchmarks -------------------------------------------------------------

bench: bootstrap
	@$(MAKE) --no-print-directory all
	@$(MAKE) --no-print-directory bench-build models
	$(PYTHON) bench/bench.py $(BENCH_ARGS)
	@$(MAKE) --no-print-directory python-install
	$(PYTHON) bench/bench_user.py $(BENCH_USER_ARGS)
	$(PYTHON) bench/bench_crc.py
	$(PYTHON) bench/bench_messages.py
	$(PYTHON) bench/bench_checksum.py
	$(PYTHON) bench/bench_check.py .cache/models/many_nodes.onnx

# The Python package against onnx (and onnxruntime, onnx_ir), with its targets.
bench-python: bootstrap python-install
	@$(MAKE) --no-print-directory models
	$(PYTHON) bench/bench_python.py $(BENCH_PY_ARGS)

bench-build: bench/out/pb_bench bench/out/onnxio_bench

# The libprotobuf baseline: C++ classes generated by Debian's protoc from the
# published schema (../shared/spec), or from the onnx package's copy when
# ../shared is absent. Both say `package onnx;`; nothing else is linked in.
bench/out/pb/onnx-ml.pb.cc: $(wildcard $(SHARED)/spec/onnx-ml.proto)
	@mkdir -p bench/out/pb
	@proto="$(SHARED)/spec/onnx-ml.proto"; \
	 if [ ! -f "$$proto" ]; then \
	   proto="$$($(PYTHON) -c 'import onnx, os; print(os.path.join(os.path.dirname(onnx.__file__), "onnx-ml.proto"))')"; \
	 fi; \
	 echo "protoc --cpp_out bench/out/pb $$proto"; \
	 cp "$$proto" bench/out/pb/onnx-ml.proto
	cd bench/out/pb && protoc --cpp_out=. onnx-ml.proto

bench/out/pb_bench: bench/pb_bench.cc bench/out/pb/onnx-ml.pb.cc
	$(CXX) -O2 -std=c++17 -Ibench/out/pb -o $@ bench/pb_bench.cc bench/out/pb/onnx-ml.pb.cc \
	  -lprotobuf -pthread

bench/out/onnxio_bench: bench/onnxio_bench.c tests/c/testutil.c $(BENCH_BUILD)/libonnxio.a
	@mkdir -p bench/out
	$(CC) -O2 -std=c11 -D_GNU_SOURCE -Wall -Wextra -Wpedantic -Iinclude -I$(BENCH_BUILD)/include -Itests/c -o $@ $< \
	  tests/c/testutil.c $(BENCH_BUILD)/libonnxio.a $(BENCH_LIBS)

models: .cache/models/gpt2.onnx .cache/models/gpt2_external/gpt2.onnx .cache/models/many_nodes.onnx \
	.cache/models/many_attributes.onnx

.cache/models/gpt2.onnx: scripts/make_gpt2.py
	scripts/ticker.sh make_gpt2 $(PYTHON) scripts/make_gpt2.py --force --out $@

# The external-data twin of gpt2.onnx, written by onnx (gpt2.onnx.data beside it).
.cache/models/gpt2_external/gpt2.onnx: .cache/models/gpt2.onnx scripts/make_gpt2_external.py
	$(PYTHON) scripts/make_gpt2_external.py --force --src $< --out $@

.cache/models/many_nodes.onnx: scripts/make_many_nodes.py
	$(PYTHON) scripts/make_many_nodes.py --force --out $@

.cache/models/many_attributes.onnx: scripts/make_many_nodes.py
	$(PYTHON) scripts/make_many_nodes.py --attributes --force --out $@

# ---- cleaning ---------------------------------------------------------------

clean:
	rm -rf build build-asan build-windows build-fuzz bench/out .cache/demo .cache/fuzz

distclean: clean
	rm -rf .cache .venv .venv-demo .venv-wheel .venv-wheel-*
