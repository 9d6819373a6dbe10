//===- Compile.h - cgc-run's on-the-fly compilation of .onnx ----*- C++ -*-===//
//
// Only in builds with the compiler (CGC_RUN_WITH_COMPILER): imports an ONNX
// model, runs the same pipeline as `cgc-compile` and packages the compiled
// model in memory. No MLIR type crosses this header, so the rest of cgc-run
// is a plain runtime application.
//
//===----------------------------------------------------------------------===//

#ifndef CGC_TOOLS_CGC_RUN_COMPILE_H
#define CGC_TOOLS_CGC_RUN_COMPILE_H

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace cgc::run {

struct CompileOptions {
  std::vector<std::string> inputShapes;  // NAME=D0xD1...
  std::vector<std::string> freezeInputs; // NAME=FILE.pb
  std::vector<std::string> targets;      // in priority order
  /// Called when a stage starts ("importing", "lowering", "packaging").
  std::function<void(const std::string &stage)> progress;
};

/// True if this cgc-run can compile .onnx files.
bool haveCompiler();

/// Compiles `path` into compiled-model bytes; false with the compiler's
/// diagnostics in `error`.
bool compileOnnx(const std::string &path, const CompileOptions &options,
                 std::vector<uint8_t> &model, std::string &error);

} // namespace cgc::run

#endif // CGC_TOOLS_CGC_RUN_COMPILE_H
