#!/usr/bin/env bash
# Fuzz campaigns: builds the fuzz targets (test/fuzz) in build-fuzz/ with
# coverage instrumentation in every library (CGC_FUZZ_COVERAGE) and ASan +
# UBSan, makes the seed corpora (scripts/fuzz_corpus.py) and runs each target
# for a time or a number of executions. A crash, a leak or a timeout stops
# that target with its reproducer in $OUT/<target>/ (libFuzzer's artifacts);
# the script exits non-zero if any target failed. Inputs that once crashed a
# target (test/fuzz/regressions/<target>/) are replayed first.
#
#   scripts/fuzz.sh                               # every target, 60 s each
#   scripts/fuzz.sh --time 1800 onnx-import       # one target, 30 minutes
#   scripts/fuzz.sh --runs 1000000                # every target, 10^6 executions
#
# BUILD_DIR=build-asan uses scripts/sanitize.sh's build (the same
# instrumentation) instead of a build of its own.
#
# Environment: BUILD_DIR (default: build-fuzz), SEED_BUILD (the build whose
# cgc-compile makes the seeds; default: build), OUT (default:
# $BUILD_DIR/fuzz-out), JOBS (default: 2).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$ROOT/build-fuzz}"
SEED_BUILD="${SEED_BUILD:-$ROOT/build}"
OUT="${OUT:-$BUILD_DIR/fuzz-out}"
JOBS="${JOBS:-2}"
limit=(-max_total_time=60)
targets=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --time) limit=(-max_total_time="$2"); shift 2 ;;
    --runs) limit=(-runs="$2"); shift 2 ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    *) targets+=("$1"); shift ;;
  esac
done
all=(onnx-import compiled-model precompiled kernel-program json-formats bytecode tensor-file)
[[ ${#targets[@]} -eq 0 ]] && targets=("${all[@]}")

if [[ ! -f "$BUILD_DIR/build.ninja" ]]; then
  cmake -G Ninja -S "$ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCGC_SANITIZE=address,undefined -DCGC_FUZZ_COVERAGE=ON -DCGC_ENABLE_PYTHON=OFF \
    -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
    -DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache \
    -DCMAKE_EXE_LINKER_FLAGS=-fuse-ld=lld -DCMAKE_SHARED_LINKER_FLAGS=-fuse-ld=lld \
    -DCMAKE_MODULE_LINKER_FLAGS=-fuse-ld=lld
fi
ninja -C "$BUILD_DIR" -j "$JOBS" $(printf 'cgc-fuzz-%s ' "${targets[@]}")
if [[ ! -x "$SEED_BUILD/bin/cgc-compile" ]]; then
  echo "fuzz.sh: $SEED_BUILD/bin/cgc-compile is missing: build the project first (./dev.sh setup)" >&2
  exit 2
fi
/usr/bin/python3 "$ROOT/scripts/fuzz_corpus.py" --build "$SEED_BUILD" --out "$OUT/corpus"
# allow_user_poisoning=0: see scripts/sanitize.sh (BumpPtrAllocator slabs
# shared between instrumented cgc code and the uninstrumented libMLIR.so).
export ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=1:allow_user_poisoning=0 ${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1 ${UBSAN_OPTIONS:-}"
failed=0
for t in "${targets[@]}"; do
  mkdir -p "$OUT/$t"
  echo "==> cgc-fuzz-$t ${limit[*]}" >&2
  regressions=()
  [[ -d "$ROOT/test/fuzz/regressions/$t" ]] && regressions=("$ROOT/test/fuzz/regressions/$t")
  if ! "$BUILD_DIR/bin/cgc-fuzz-$t" "$OUT/corpus/$t" "${regressions[@]}" "${limit[@]}" -timeout=20 \
      -rss_limit_mb=4096 -print_final_stats=1 -artifact_prefix="$OUT/$t/" \
      > "$OUT/$t.log" 2>&1; then
    echo "cgc-fuzz-$t FAILED: $(grep -m1 -E 'ERROR|==ERROR|runtime error' "$OUT/$t.log" || tail -1 "$OUT/$t.log")" >&2
    failed=1
  fi
  grep -E '^Done|stat::number_of_executed_units' "$OUT/$t.log" | sed "s/^/cgc-fuzz-$t: /"
done
exit $failed
