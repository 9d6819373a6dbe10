//===- cgc/compiled_model.h - The compiled model, without MLIR --*- C++ -*-===//
//
// A compiled model (`cgc-compile model.onnx -o model.cgc`) is one DX container
// (cgc/container.h):
//
//   'CGVN'  versions (JSON): {"ir_version": "1.0.0", "compiler": "0.1.0"}
//   'MLIR'  CGC_OUTPUT: the Output IR (bytecode)
//   per partition, in program order:
//   'MLIR'  CGC_SUBGRAPH_PARTITION: its isolated Partition IR (bytecode)
//   'CGBP'  its bind points (cgc/bind_points.h)
//   'CGKP'  for a partition the fallback target implements, its kernel
//           program (cgc/kernel_program.h): the "compute shader"
//   'CGPC'  for an MLIR program its target precompiled, the precompiled
//           program (cgc/precompiled_program.h): the spec's PSDB entry,
//           passed to CreateStateObject as a cached blob
//   'CGPL'  the execution plan (JSON, below)
//   'CGCN'  the constants, page-aligned in the file (mapped in place)
//
// This reader needs no MLIR: it validates the container (digest, bounds,
// known parts, versions), parses the plan and checks that it is consistent
// (every program's parts exist and agree with its bind points, every binding
// and barrier lies inside its buffer and is aligned as its bind point asks,
// every constant lies inside the constants blob). docs/architecture.md
// describes the plan's JSON schema.
//
//===----------------------------------------------------------------------===//

#ifndef CGC_COMPILED_MODEL_H
#define CGC_COMPILED_MODEL_H

#include "cgc/bind_points.h"
#include "cgc/container.h"
#include "cgc/dtype.h"
#include "cgc/kernel_program.h"

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cgc {

//===----------------------------------------------------------------------===//
// The execution plan ('CGPL')
//===----------------------------------------------------------------------===//

/// The buffers a plan refers to. Inputs and outputs are numbered; there is
/// one scratch buffer and one constants buffer.
enum class PlanBuffer { Input, Output, Scratch, Constants };
/// "input", "output", "scratch", "constants".
const char *planBufferName(PlanBuffer buffer);

struct PlanRange {
  PlanBuffer buffer = PlanBuffer::Scratch;
  uint32_t index = 0; // input/output number; 0 otherwise
  uint64_t offset = 0;
  uint64_t bytes = 0;
  bool operator==(const PlanRange &other) const;
};

/// A model input or output.
struct PlanTensor {
  std::string name;
  cgc_dtype_t dtype = CGC_DTYPE_INVALID;
  std::vector<int64_t> shape;
  uint64_t bytes = 0;
  /// Outputs only: the index of the output (one int64) holding how many
  /// rows of this one a run wrote; dimension 0 of `shape` is then an upper
  /// bound (data-dependent rows, JSON "rows_from"). -1: all rows.
  int64_t rowsFrom = -1;
  bool operator==(const PlanTensor &other) const;
};

struct PlanConstant {
  std::string name;
  uint64_t offset = 0; // in the constants buffer
  uint64_t bytes = 0;
  cgc_dtype_t dtype = CGC_DTYPE_INVALID;
  std::vector<int64_t> shape;
  bool operator==(const PlanConstant &other) const;
};

/// A unit the runtime creates once and dispatches.
struct PlanProgram {
  enum class Kind {
    Mlir,   // CreateStateObject (MLIR_PROGRAM) + SetProgram/DispatchGraph
    Kernel, // CreateComputePipelineState from the kernel program + Dispatch
  };
  std::string name;   // the partition's symbol ("partition0")
  std::string target; // the target implementing it (subgraph origin)
  Kind kind = Kind::Mlir;
  uint32_t part = 0;           // 'MLIR' part of its Partition IR
  uint32_t bindPointsPart = 0; // 'CGBP' part
  uint32_t kernelPart = 0;     // 'CGKP' part (Kind::Kernel only)
  /// 'CGPC' part of its precompiled program (Kind::Mlir only; JSON field
  /// "precompiled_part", absent when the target precompiled nothing).
  std::optional<uint32_t> precompiledPart;
  bool operator==(const PlanProgram &other) const;
};

/// One step of the command list, in order: a dispatch of a program with one
/// binding per bind point, or a barrier on byte ranges. Dispatches between
/// two barriers may run concurrently.
struct PlanCommand {
  enum class Kind { Dispatch, Barrier };
  Kind kind = Kind::Dispatch;
  uint32_t program = 0;          // Dispatch
  std::vector<PlanRange> ranges; // Dispatch: bindings; Barrier: ranges
  bool operator==(const PlanCommand &other) const;
};

struct ExecutionPlan {
  static constexpr uint32_t kVersion = 1;
  uint32_t version = kVersion;
  std::vector<PlanTensor> inputs, outputs;
  uint64_t scratchBytes = 0, scratchAlignment = 1;
  uint64_t constantsBytes = 0, constantsAlignment = 1;
  uint32_t constantsPart = 0; // the 'CGCN' part
  std::vector<PlanConstant> constants;
  std::vector<PlanProgram> programs;
  std::vector<PlanCommand> commands;
  /// The memory plan's figures: scratch footprint, the lower bound (most
  /// bytes live at once) and the naive sum of all intermediates.
  uint64_t footprint = 0, lowerBound = 0, naive = 0;
  uint32_t dispatchCount = 0, barrierCount = 0;
  bool operator==(const ExecutionPlan &other) const;
};

std::string serializeExecutionPlan(const ExecutionPlan &plan);
/// Parses what serializeExecutionPlan wrote; false with a message naming the
/// malformed field. Checks the plan on its own (ranges inside the buffers it
/// declares, programs and commands well formed), not against a container.
bool parseExecutionPlan(std::string_view text, ExecutionPlan &plan,
                        std::string &error);

//===----------------------------------------------------------------------===//
// The compiled model
//===----------------------------------------------------------------------===//

/// The content digest of constants bytes [offset, offset + bytes) of a
/// compiled model with digest `model` (CompiledModel::getDigest): what the
/// runtime declares for a constant binding at load
/// (CGCD3D12PrepareMlirProgramConstantsWithDigests) and what `cgc-soc
/// prepare` prepares for. MD5 of "cgc constants 1", the model digest, the
/// offset and the size (little-endian).
std::array<uint8_t, 16> constantDigest(const std::array<uint8_t, 16> &model, uint64_t offset,
                                       uint64_t bytes);

class CompiledModel {
public:
  CompiledModel();
  ~CompiledModel();
  CompiledModel(CompiledModel &&) noexcept;
  CompiledModel &operator=(CompiledModel &&) noexcept;

  /// Opens a compiled model in memory that outlives this object.
  bool open(const void *data, size_t size, std::string &error);
  /// Maps the file read-only and opens it; the mapping lives as long as this
  /// object. Errors name the file.
  bool openFile(const std::string &path, std::string &error);

  const ExecutionPlan &getPlan() const;
  /// The Output IR bytecode (CGC_OUTPUT).
  ByteView getOutputIR() const;
  /// The constants buffer, at an address aligned as the plan says.
  ByteView getConstants() const;
  /// Program `index`'s Partition IR bytecode and bind points.
  ByteView getPartitionBytecode(size_t index) const;
  const std::vector<BindPoint> &getBindPoints(size_t index) const;
  /// The kernel program of a Kind::Kernel program.
  const KernelProgram &getKernelProgram(size_t index) const;
  /// What CreateStateObject takes for a Kind::Mlir program: a DX container
  /// with its 'MLIR' (CGC_SUBGRAPH_PARTITION) and 'CGBP' parts.
  std::vector<uint8_t> buildProgramContainer(size_t index) const;
  /// The precompiled program of a Kind::Mlir program (its cached blob for
  /// CreateStateObject), empty if it has none. Its container and key were
  /// checked when the model was opened; whether it matches a driver is the
  /// driver's decision.
  ByteView getPrecompiledProgram(size_t index) const;
  /// The versions part: "1.0.0" and "0.1.0".
  const std::string &getIRVersion() const;
  const std::string &getCompilerVersion() const;
  /// The container's digest (MD5, checked when the file was opened): the
  /// content identity of everything in it.
  std::array<uint8_t, 16> getDigest() const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl;
};

} // namespace cgc

#endif // CGC_COMPILED_MODEL_H
