#!/usr/bin/env bash
# Installs ONNX Runtime 1.30 (the peer cgc is compared with) from npm into
# third_party/npm (gitignored), without network access at run time:
#   onnxruntime-node@1.30.0          -> libonnxruntime.so.1 (linux x64)
#   com.github.asus4.onnxruntime@0.4.9 -> C headers (API 1.29)
# and links them under third_party/npm/ort/{include,lib} for CMake
# (tools/cgc-ort-run). Idempotent: does nothing when both are in place.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
NPM_DIR="$ROOT/third_party/npm"
ORT_DIR="$NPM_DIR/ort"
LIB="$NPM_DIR/node_modules/onnxruntime-node/bin/napi-v6/linux/x64/libonnxruntime.so.1"
HEADERS_PKG="$NPM_DIR/node_modules/com.github.asus4.onnxruntime"

find_headers() {
  # The package ships the same headers in several framework folders.
  find "$HEADERS_PKG" -name onnxruntime_c_api.h -path '*ios-arm64/*' 2>/dev/null | head -1
}

if [[ ! -f "$LIB" || -z "$(find_headers)" ]]; then
  command -v npm >/dev/null || { echo "setup_ort.sh: npm is missing (Debian package npm)" >&2; exit 1; }
  mkdir -p "$NPM_DIR"
  echo "==> Installing onnxruntime-node@1.30.0 and com.github.asus4.onnxruntime@0.4.9 into $NPM_DIR" >&2
  # ONNXRUNTIME_NODE_INSTALL=skip: no download of CUDA/TensorRT binaries.
  (cd "$NPM_DIR" && ONNXRUNTIME_NODE_INSTALL=skip npm install --no-audit --no-fund \
      --no-save onnxruntime-node@1.30.0 com.github.asus4.onnxruntime@0.4.9 >&2)
fi
[[ -f "$LIB" ]] || { echo "setup_ort.sh: $LIB is missing after npm install" >&2; exit 1; }
HEADER="$(find_headers)"
[[ -n "$HEADER" ]] || { echo "setup_ort.sh: onnxruntime_c_api.h is missing after npm install" >&2; exit 1; }

mkdir -p "$ORT_DIR/lib"
# Relative links: the npm folder may be shared (symlinked) between clones.
ln -sfn "$(realpath -s --relative-to="$ORT_DIR" "$(dirname "$HEADER")")" "$ORT_DIR/include"
ln -sfn "$(realpath -s --relative-to="$ORT_DIR/lib" "$LIB")" "$ORT_DIR/lib/libonnxruntime.so.1"
