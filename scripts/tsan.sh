#!/usr/bin/env bash
# Builds the runtime (no MLIR) with ThreadSanitizer in build-tsan/ and runs the
# D3D12 tests, the concurrency test included, under it.
#
#   scripts/tsan.sh                 # all D3D12 tests
#   scripts/tsan.sh --gtest_filter=CpuDriver.ConcurrentUseOfOneDevice
#
# Environment: BUILD_DIR (default: build-tsan), JOBS (default: 2).
# oneDNN's OpenMP runtime (libgomp) is not instrumented: its internal
# synchronization is suppressed (scripts/tsan.supp), nothing of cgc is.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$ROOT/build-tsan}"
JOBS="${JOBS:-2}"
if [[ ! -f "$BUILD_DIR/build.ninja" ]]; then
  cmake -G Ninja -S "$ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCGC_ENABLE_COMPILER=OFF -DCGC_SANITIZE=thread \
    -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
    -DCMAKE_EXE_LINKER_FLAGS=-fuse-ld=lld -DCMAKE_SHARED_LINKER_FLAGS=-fuse-ld=lld \
    -DCMAKE_MODULE_LINKER_FLAGS=-fuse-ld=lld
fi
ninja -C "$BUILD_DIR" -j "$JOBS" D3D12ApiTests D3D12CpuDriverTests
export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$ROOT/scripts/tsan.supp ${TSAN_OPTIONS:-}"
export CGC_D3D12_DEBUG_QUIET=1
"$BUILD_DIR/test/unit/d3d12/D3D12ApiTests" "$@"
"$BUILD_DIR/test/unit/d3d12/D3D12CpuDriverTests" "$@"
