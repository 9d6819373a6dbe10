//===- Compile.h - cgc-run's on-the-fly compilation of .onnx ----*- C++ -*-===//
//
// cgc-run is a runtime application: it does not link the compiler. To run
// an .onnx model it loads the compiler as a module of its own,
// libcgc_run_compiler.so (Compile.cpp: import, the cgc-compile pipeline,
// packaging in memory), installed in the library directory next to the
// runtime and found relative to the executable (CompileLoader.cpp). So
// running a compiled model (.cgc) never maps libMLIR, libLLVM, libonnx or
// libprotobuf. No MLIR type crosses this header.
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

/// The module's table.
struct CompilerInterface {
  /// Compiles `path` into compiled-model bytes; false with the compiler's
  /// diagnostics in `error`.
  bool (*compileOnnx)(const std::string &path, const CompileOptions &options,
                      std::vector<uint8_t> &model, std::string &error);
};

/// The module's one export: `const CompilerInterface *CgcRunCompilerOpen(
/// uint32_t version)`, null if it does not serve `version`.
constexpr uint32_t kCompilerInterfaceVersion = 1;
#define CGC_RUN_COMPILER_OPEN_NAME "CgcRunCompilerOpen"
using CompilerOpenFn = const CompilerInterface *(*)(uint32_t version);

/// Where cgc-run looks for the module: the directory of the cgc-run
/// executable, then ../<libdir>/libcgc_run_compiler.so.
std::string compilerModulePath();

/// Loads the module (once); null with a message naming the path when it is
/// missing (a build without the compiler, an incomplete installation) or
/// cannot be loaded.
const CompilerInterface *loadCompiler(std::string &error);

} // namespace cgc::run

#endif // CGC_TOOLS_CGC_RUN_COMPILE_H
