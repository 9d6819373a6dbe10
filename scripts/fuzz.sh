#!/usr/bin/env bash
# Builds cgc's MLIR-free readers as libFuzzer targets (clang-22's libFuzzer,
# with AddressSanitizer and UndefinedBehaviorSanitizer) in build-fuzz/, writes
# seed corpora from ONNX's node tests (compiled by the build's cgc-compile),
# and runs each target for a number of executions or seconds.
#
#   scripts/fuzz.sh                       # every target, RUNS executions each
#   scripts/fuzz.sh compiled_model        # one target
#   RUNS=100000 TIME=60 scripts/fuzz.sh   # at most 100000 runs or 60 s each
#
# Targets (test/fuzz/*_fuzzer.cpp):
#   compiled_model  cgc::CompiledModel::open and its accessors (the container,
#                   the plan and every cross-check; the digest is fixed up)
#   json_formats    the plan, kernel-program and bind-point JSON readers
#   tensor_file     cgc-run's .npy and ONNX TensorProto (.pb) readers
# Environment: BUILD (the cgc build whose cgc-compile writes seeds; default
# build/), FUZZ_DIR (default build-fuzz/), RUNS (default 1000000), TIME
# (seconds per target, default 1800), JOBS (parallel fuzzing jobs, default 1).
# A crash leaves its input in FUZZ_DIR/<target>/ (crash-*, leak-*,
# timeout-*) and fails the script; once fixed, the input goes to
# test/fuzz/regressions/<target>/, which every run replays first.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${BUILD:-$ROOT/build}"
FUZZ_DIR="${FUZZ_DIR:-$ROOT/build-fuzz}"
RUNS="${RUNS:-1000000}"
TIME="${TIME:-1800}"
JOBS="${JOBS:-1}"
CXX="${CXX:-clang++-22}"
TARGETS=("$@")
[[ ${#TARGETS[@]} -eq 0 ]] && TARGETS=(compiled_model json_formats tensor_file)

mkdir -p "$FUZZ_DIR"
FLAGS=(-std=c++17 -O1 -g -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined
       -fno-sanitize-recover=undefined -I"$ROOT/runtime/include" -I"$ROOT/tools/cgc-run")
COMMON=("$ROOT"/runtime/common/{container,kernel_program,compiled_model,precompiled_program}.cpp)

build() {
  local target=$1 sources=()
  case $target in
    compiled_model|json_formats) sources=("${COMMON[@]}") ;;
    tensor_file) sources=("$ROOT/tools/cgc-run/Tensors.cpp" "$ROOT/tools/cgc-run/ToolSupport.cpp") ;;
    *) echo "fuzz.sh: unknown target '$target'" >&2; exit 2 ;;
  esac
  local out="$FUZZ_DIR/${target}_fuzzer" newest
  newest=$(ls -t "$ROOT/test/fuzz/${target}_fuzzer.cpp" "${sources[@]}" "$ROOT"/runtime/include/cgc/*.h | head -1)
  if [[ ! -x $out || $newest -nt $out ]]; then
    echo "fuzz.sh: building $out"
    "$CXX" "${FLAGS[@]}" "$ROOT/test/fuzz/${target}_fuzzer.cpp" "${sources[@]}" -o "$out"
  fi
}

# Seeds: compiled models of a few node tests (kernel and MLIR programs,
# constants, precompiled programs), their JSON parts, and tensor files.
seed() {
  local target=$1 corpus="$FUZZ_DIR/$target/corpus"
  [[ -d $corpus && -n "$(ls -A "$corpus")" ]] && return 0
  mkdir -p "$corpus"
  local node=/usr/share/libonnx-testdata/data/node
  local tests=(test_add test_conv_with_strides_padding test_gather_0 test_matmul_2d test_relu
               test_scatter_elements_with_axis test_softmax_axis_0)
  case $target in
    compiled_model|json_formats)
      [[ -x $BUILD/bin/cgc-compile ]] || { echo "fuzz.sh: no $BUILD/bin/cgc-compile for seeds" >&2; exit 2; }
      local tmp; tmp=$(mktemp -d)
      for t in "${tests[@]}"; do
        [[ -f $node/$t/model.onnx ]] || continue
        "$BUILD/bin/cgc-compile" "$node/$t/model.onnx" --target reference -o "$tmp/$t.cgc" 2>/dev/null || continue
        "$BUILD/bin/cgc-compile" "$node/$t/model.onnx" -o "$tmp/$t.fallback.cgc" 2>/dev/null || true
      done
      if [[ $target == compiled_model ]]; then
        cp "$tmp"/*.cgc "$corpus/"
      else
        # The JSON parts (CGPL, CGKP, CGBP) of those containers.
        /usr/bin/python3 - "$tmp" "$corpus" <<'EOF'
import glob, os, struct, sys
for path in glob.glob(os.path.join(sys.argv[1], "*.cgc")):
    data = open(path, "rb").read()
    count = struct.unpack_from("<I", data, 28)[0]
    offsets = struct.unpack_from("<%dI" % count, data, 32)
    for i, offset in enumerate(offsets):
        fourcc, size = data[offset:offset + 4], struct.unpack_from("<I", data, offset + 4)[0]
        if fourcc in (b"CGPL", b"CGKP", b"CGBP"):
            name = "%s.%d.%s.json" % (os.path.basename(path), i, fourcc.decode())
            open(os.path.join(sys.argv[2], name), "wb").write(data[offset + 8:offset + 8 + size])
EOF
      fi
      rm -rf "$tmp"
      ;;
    tensor_file)
      for t in "${tests[@]}"; do
        for f in "$node/$t"/test_data_set_0/*.pb; do
          [[ -f $f ]] && cp "$f" "$corpus/$t.$(basename "$f")"
        done
      done
      /usr/bin/python3 -c "
import numpy as np, sys
d = sys.argv[1]
np.save(d + '/f32.npy', np.arange(12, dtype=np.float32).reshape(3, 4))
np.save(d + '/i64.npy', np.arange(5, dtype=np.int64))
np.save(d + '/f16.npy', np.ones((2, 2), np.float16))
np.save(d + '/bool.npy', np.array([True, False]))
np.save(d + '/scalar.npy', np.float64(3.5))" "$corpus"
      ;;
  esac
}

status=0
for target in "${TARGETS[@]}"; do
  build "$target"
  seed "$target"
  dir="$FUZZ_DIR/$target"
  # Inputs that crashed a reader once (test/fuzz/regressions/<target>/) run
  # first, each once.
  regressions=("$ROOT/test/fuzz/regressions/$target"/*)
  if [[ -e ${regressions[0]} ]]; then
    if ! "$FUZZ_DIR/${target}_fuzzer" "${regressions[@]}" > "$dir/regressions.log" 2>&1; then
      echo "fuzz.sh: $target: a regression input fails again (see $dir/regressions.log)" >&2
      status=1
      continue
    fi
    echo "fuzz.sh: $target: ${#regressions[@]} regression inputs pass"
  fi
  echo "fuzz.sh: $target: up to $RUNS runs or $TIME s on $(ls "$dir/corpus" | wc -l) seeds"
  # The corpus grows in place; findings go to $dir.
  parallel=()
  [[ $JOBS -gt 1 ]] && parallel=(-jobs="$JOBS" -workers="$JOBS")
  (cd "$dir" && "$FUZZ_DIR/${target}_fuzzer" corpus -runs="$RUNS" -max_total_time="$TIME" \
     -timeout=10 -rss_limit_mb=4096 -malloc_limit_mb=4096 -print_final_stats=1 "${parallel[@]}" \
     > "$dir/last-run.log" 2>&1) || true
  grep -E "^(#[0-9]+ +DONE|stat::number_of_executed_units|stat::peak_rss_mb|==[0-9]+==ERROR|SUMMARY)" \
    "$dir/last-run.log" || true
  if compgen -G "$dir/crash-*" >/dev/null || compgen -G "$dir/leak-*" >/dev/null ||
     compgen -G "$dir/timeout-*" >/dev/null || compgen -G "$dir/oom-*" >/dev/null; then
    echo "fuzz.sh: $target: findings in $dir (see $dir/last-run.log)" >&2
    status=1
  fi
done
exit $status
