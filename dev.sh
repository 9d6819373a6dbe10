#!/usr/bin/env bash
# cgc developer entry point. Every command first sets the machine up
# (installs missing Debian packages, configures, builds), so each works on a
# fresh Debian 12 machine:
#
#   ./dev.sh example   set up, then run the main job on the bundled example
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

setup() {
  install_packages
  configure_and_build
}

cmd="${1:-}"
case "$cmd" in
  setup)
    setup
    ;;
  example)
    setup
    log "Parsing, verifying and printing the spec's example network (Output IR)"
    "$BUILD_DIR/bin/cgc-opt" "$ROOT/examples/spec/output-ir.mlir"
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
