#!/usr/bin/env bash
# The whole test suite (check-cgc: lit tests and gtest binaries) under
# AddressSanitizer + UndefinedBehaviorSanitizer, in build-asan/. Any report
# fails the test that made it: UBSan does not recover
# (-fno-sanitize-recover=undefined), ASan aborts on its first error and
# LeakSanitizer reports leaks at exit.
#
#   scripts/sanitize.sh                   # configure, build, run check-cgc
#   scripts/sanitize.sh test/runtime      # only the lit tests below a folder
#
# Environment: BUILD_DIR (default: build-asan), JOBS (default: 2).
#
# The build has libFuzzer's coverage instrumentation in every library too
# (CGC_FUZZ_COVERAGE), so the fuzz campaigns run from it:
# `BUILD_DIR=build-asan scripts/fuzz.sh ...` needs no second build.
#
# Left out, each for a reason a run of this script can show:
# - the Python package (CGC_ENABLE_PYTHON=OFF): /usr/bin/python3 is not
#   instrumented, and an ASan extension module needs libasan preloaded into
#   the interpreter, which then reports the interpreter's own allocations;
# - tests that limit the address space with `ulimit -v` (UNSUPPORTED: asan:
#   ASan reserves terabytes of shadow memory);
# - UBSan's vptr check (-fno-sanitize=vptr): it needs RTTI, which the
#   MLIR-based compiler code is built without.
# Suppressions, each with its reason, are in scripts/lsan.supp.
#
# allow_user_poisoning=0: LLVM's BumpPtrAllocator poisons a new slab and
# unpoisons each allocation only in code compiled with ASan. MLIR's
# StorageUniquer allocates types from one allocator both in cgc's code
# (instrumented: a cgc type's storage starts a slab and poisons it) and inside
# Debian's libMLIR.so (not instrumented: a builtin FunctionType placed in that
# slab is never unpoisoned), so reading such a type from cgc's code was
# reported as use-after-poison (test_gru_defaults through the compiler). The
# heap checks (redzones, use after free, leaks) are unaffected.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$ROOT/build-asan}"
JOBS="${JOBS:-2}"
if [[ ! -f "$BUILD_DIR/build.ninja" ]]; then
  cmake -G Ninja -S "$ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCGC_SANITIZE=address,undefined -DCGC_FUZZ_COVERAGE=ON -DCGC_ENABLE_PYTHON=OFF \
    "-DCMAKE_CXX_FLAGS=-fno-sanitize-recover=undefined -fno-sanitize=vptr" \
    "-DCMAKE_C_FLAGS=-fno-sanitize-recover=undefined" \
    -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
    -DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache \
    -DCMAKE_EXE_LINKER_FLAGS=-fuse-ld=lld -DCMAKE_SHARED_LINKER_FLAGS=-fuse-ld=lld \
    -DCMAKE_MODULE_LINKER_FLAGS=-fuse-ld=lld
fi
ninja -C "$BUILD_DIR" -j "$JOBS"
export ASAN_OPTIONS="abort_on_error=1:detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1:allow_user_poisoning=0:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}"
export LSAN_OPTIONS="suppressions=$ROOT/scripts/lsan.supp:print_suppressions=0:${LSAN_OPTIONS:-}"
export CGC_D3D12_DEBUG_QUIET=1
if [[ $# -gt 0 ]]; then
  args=()
  for path in "$@"; do
    args+=("$BUILD_DIR/${path#"$ROOT/"}")
  done
  exec /usr/lib/llvm-22/bin/lit -sv "${args[@]}"
fi
ninja -C "$BUILD_DIR" check-cgc
