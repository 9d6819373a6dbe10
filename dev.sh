#!/usr/bin/env bash
# cgc developer entry point. Every command first sets the machine up
# (installs missing Debian packages, configures, builds), so each works on a
# fresh Debian 12 machine:
#
#   ./dev.sh example   set up, then compile and run MobileNetV2 (the main job)
#   ./dev.sh test      set up, then run the whole test suite
#   ./dev.sh setup     set up only
#
# Environment: BUILD_DIR (default: build), JOBS (default: 2 compile jobs;
# one MLIR-heavy file needs up to 1.3 GB of RAM).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
BUILD_DIR="${BUILD_DIR:-$ROOT/build}"
JOBS="${JOBS:-2}"

log() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }

install_packages() {
  local missing
  missing=$("$ROOT/scripts/missing-packages.sh")
  if [[ -z "$missing" ]]; then
    return
  fi
  log "Installing Debian packages: $missing"
  local sudo=""
  if [[ $(id -u) -ne 0 ]]; then
    command -v sudo >/dev/null || { echo "need root or sudo to install: $missing" >&2; exit 1; }
    sudo="sudo"
  fi
  # shellcheck disable=SC2086
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $missing ||
    { $sudo apt-get update && $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $missing; }
}

configure_and_build() {
  if [[ ! -f "$BUILD_DIR/build.ninja" ]]; then
    log "Configuring $BUILD_DIR"
    cmake -G Ninja -S "$ROOT" -B "$BUILD_DIR" \
      -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
      -DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache \
      -DCMAKE_EXE_LINKER_FLAGS=-fuse-ld=lld -DCMAKE_SHARED_LINKER_FLAGS=-fuse-ld=lld \
      -DCMAKE_MODULE_LINKER_FLAGS=-fuse-ld=lld
  fi
  log "Building ($JOBS jobs)"
  ninja -C "$BUILD_DIR" -j "$JOBS"
}

# ONNX Runtime 1.30 from npm (the peer of the model-zoo test and benchmarks)
# into third_party/npm (gitignored). npm comes with nodesource's nodejs or as
# Debian's npm package. Without the network this only warns: the main job and
# check-cgc do not need it.
install_npm_packages() {
  if ! command -v npm >/dev/null; then
    log "Installing Debian package: npm"
    local sudo=""
    [[ $(id -u) -ne 0 ]] && sudo="sudo"
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends npm ||
      { log "warning: npm is unavailable; ONNX Runtime is not installed"; return 0; }
  fi
  "$ROOT/scripts/setup_ort.sh" ||
    log "warning: ONNX Runtime could not be installed from npm (check-cgc-models needs it)"
  # A build configured before ONNX Runtime was there does not have cgc-ort-run.
  if [[ -f "$BUILD_DIR/CMakeCache.txt" && -f "$ROOT/third_party/npm/ort/include/onnxruntime_c_api.h" ]] &&
     grep -q '^CGC_HAVE_ORT:INTERNAL=OFF' "$BUILD_DIR/CMakeCache.txt"; then
    cmake "$BUILD_DIR" >/dev/null
  fi
}

setup() {
  install_packages
  install_npm_packages
  configure_and_build
}

# The main job: a real model (MobileNetV2 from torchvision, random weights,
# exported locally) compiled by cgc-compile and run by cgc-run on the
# CPU driver; with ONNX Runtime installed, its outputs are compared
# with ONNX Runtime's on the same input.
run_example() {
  local models="$BUILD_DIR/models" model="$BUILD_DIR/models/mobilenet_v2"
  log "Exporting MobileNetV2 (torchvision, random weights) to ONNX"
  /usr/bin/python3 "$ROOT/scripts/export_models.py" --out "$models" --only mobilenet_v2
  log "Compiling it for the device's patterns (MLIR_EXCHANGE): cgc-compile $model.onnx -o $model.cgc"
  "$BUILD_DIR/bin/cgc-compile" "$model.onnx" --input-shape input=1x3x224x224 -o "$model.cgc"
  /usr/bin/python3 -c "import numpy; numpy.save('$model.input.npy', numpy.random.default_rng(0).standard_normal((1, 3, 224, 224)).astype(numpy.float32))"
  local compare=()
  if [[ -x "$BUILD_DIR/bin/cgc-ort-run" ]]; then
    log "Running it with ONNX Runtime (the reference for the comparison)"
    "$BUILD_DIR/bin/cgc-ort-run" "$model.onnx" "input=$model.input.npy" --output-dir "$model.ort" -q
    # Random weights give logits of about 1e-9: an absolute floor far below them.
    compare=(--compare "logits=$model.ort/logits.npy" --rtol 1e-4 --atol 1e-13)
  fi
  log "Running it on the CPU driver: cgc-run $model.cgc"
  CGC_D3D12_DEBUG_QUIET=1 "$BUILD_DIR/bin/cgc-run" "$model.cgc" "input=$model.input.npy" \
    --benchmark --warmup 2 --runs 10 "${compare[@]}"
}

cmd="${1:-}"
case "$cmd" in
  setup)
    setup
    ;;
  example)
    setup
    run_example
    ;;
  test)
    setup
    log "Running the test suite"
    ninja -C "$BUILD_DIR" -j "$JOBS" check-cgc
    ;;
  *)
    sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
    ;;
esac
