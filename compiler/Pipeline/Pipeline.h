//===- Pipeline.h - The registered pipelines --------------------*- C++ -*-===//
//
// `cgc-lower-to-output-ir`: Input IR -> Output IR. cgc-compile builds it with
// the same function, so `cgc-opt --cgc-lower-to-output-ir='...'` replays
// exactly what `cgc-compile` does.
//
//===----------------------------------------------------------------------===//

#ifndef CGC_COMPILER_PIPELINE_PIPELINE_H
#define CGC_COMPILER_PIPELINE_PIPELINE_H

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

#include <string>

namespace cgc {

struct LowerToOutputIROptions
    : public mlir::PassPipelineOptions<LowerToOutputIROptions> {
  ListOption<std::string> targets{
      *this, "targets",
      llvm::cl::desc("Targets in priority order (fallback is appended)")};
  Option<std::string> granularity{
      *this, "granularity", llvm::cl::desc("Partitions: subgraph or target"),
      llvm::cl::init("target")};
  Option<unsigned> maxSubgraphs{
      *this, "max-subgraphs",
      llvm::cl::desc("Most subgraph calls per partition (0: no bound)"),
      llvm::cl::init(0)};
  Option<uint64_t> alignment{
      *this, "alignment", llvm::cl::desc("Byte alignment of scratch offsets"),
      llvm::cl::init(64)};
  Option<bool> inPlace{
      *this, "in-place",
      llvm::cl::desc("Let elementwise dispatches write over a dying input"),
      llvm::cl::init(true)};
  Option<std::string> schedule{
      *this, "schedule",
      llvm::cl::desc("min-memory or max-concurrency"),
      llvm::cl::init("min-memory")};
  ListOption<std::string> memoryReport{
      *this, "memory-report",
      llvm::cl::desc("Write the memory plan to these files (.txt, .svg, "
                     ".html; - for stdout)")};
  Option<bool> verify{
      *this, "verify",
      llvm::cl::desc("Check the barrier schedule against every hazard "
                     "(quadratic)"),
      llvm::cl::init(false)};
};

/// Match, specialize, partition, plan memory, schedule barriers, build the
/// program.
void buildLowerToOutputIRPipeline(mlir::OpPassManager &pm,
                                  const LowerToOutputIROptions &options);

/// Registers `cgc-lower-to-output-ir`.
void registerPipelines();

} // namespace cgc

#endif // CGC_COMPILER_PIPELINE_PIPELINE_H
