//===- cgc/compiler_module.h - The runtime's compiler module ----*- C++ -*-===//
//
// The runtime library (libcgc_runtime.so) needs no MLIR to run a compiled
// model. To compile an ONNX model for a device (cgc_model_compile_onnx, the
// spec's JIT-only DXCGC inside an application) it loads the compiler as a
// module of its own, libcgc_compiler.so, from its own directory, the first
// time it is needed (runtime/lib/compile.cpp): applications that only load
// compiled models never map libMLIR, libLLVM, libonnx or libprotobuf.
//
// This is the internal interface between the two, both built from this
// project by one compiler (C++ types cross it; no MLIR or D3D12 type does:
// the device is an ID3D12Device * as void *). It is versioned: the runtime
// refuses a module of another version.
//
//===----------------------------------------------------------------------===//

#ifndef CGC_COMPILER_MODULE_H
#define CGC_COMPILER_MODULE_H

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace cgc::compiler_module {

struct Request {
  /// The model: `onnxSize` bytes at `onnx`, labelled `path` (external data
  /// is read from `path`'s directory); or, with `onnx` null, the file at
  /// `path` (binary ONNX or ONNX/protobuf text).
  const void *onnx = nullptr;
  size_t onnxSize = 0;
  std::string path;
  std::vector<std::string> inputShapes;  // NAME=D0xD1...
  std::vector<std::string> freezeInputs; // NAME=FILE.pb
  /// `--target` values in priority order, after the device's target.
  std::vector<std::string> targets;
  /// An ID3D12Device *: its driver's declared patterns come first (the
  /// fallback target alone when it declares none). Null: `targets` only.
  void *d3d12Device = nullptr;
  /// How the device is named in messages ("device 'cpu'").
  std::string deviceLabel;
  /// Messages for the user: which device and target, what each target
  /// claimed, the stages ("importing", "lowering", "packaging").
  std::function<void(const std::string &)> message;
  std::function<void(const std::string &stage)> progress;
  /// When compiling fails: called once with the name of each ONNX node an
  /// error diagnostic points at (its location, or a location fused from
  /// it), so callers can tell which nodes stopped the compilation.
  std::function<void(const std::string &node)> errorNode;
  /// ImportOptions::dataDependentRows (cgc_compile_options_t's
  /// data_dependent_rows).
  bool dataDependentRows = false;
  /// ImportOptions::maxLoopIterations (0: its default).
  int64_t maxLoopIterations = 0;
};

/// What a device offers the compiler (its MLIR programs tier, the target its
/// declaration names and the patterns in it).
struct DeviceDescription {
  std::string tier; // "2.0", "1.0", "NOT_SUPPORTED"
  std::string target;
  std::vector<std::string> patterns;
  /// Why the compiler cannot use its patterns ("" when it can).
  std::string unavailable;
};

struct Interface {
  /// Compiles the model into compiled-model bytes; false with the
  /// compiler's diagnostics in `error`.
  bool (*compileOnnx)(const Request &request, std::vector<uint8_t> &model, std::string &error);
  /// Asks the device (an ID3D12Device *) what compileOnnx would; false with
  /// a message if its answers are malformed.
  bool (*describeDevice)(void *d3d12Device, DeviceDescription &description, std::string &error);
};

constexpr uint32_t kVersion = 5;
/// The module's one export: `const Interface *CgcCompilerModuleOpen(uint32_t
/// version)`, null if it does not serve `version`.
#define CGC_COMPILER_MODULE_OPEN_NAME "CgcCompilerModuleOpen"
using OpenFn = const Interface *(*)(uint32_t version);
constexpr const char kModuleFileName[] = "libcgc_compiler.so";

} // namespace cgc::compiler_module

#endif // CGC_COMPILER_MODULE_H
