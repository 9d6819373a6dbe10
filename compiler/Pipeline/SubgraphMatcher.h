//===- SubgraphMatcher.h - Target patterns against Input IR -----*- C++ -*-===//
//
// The matching engine behind cgc-match-subgraphs and
// cgc-specialize-subgraphs: loads the targets' declared cgc_pattern patterns
// (through their exchange functions), finds every candidate match among the
// free layers of an entry point, selects a deterministic non-overlapping
// set, and outlines it into cgc.subgraph + cgc.call. docs/patterns.md gives
// the matching rules.
//
//===----------------------------------------------------------------------===//

#ifndef CGC_COMPILER_PIPELINE_SUBGRAPHMATCHER_H
#define CGC_COMPILER_PIPELINE_SUBGRAPHMATCHER_H

#include "cgc/IR/CGCOps.h"
#include "cgc_pattern/IR/CGCPatternOps.h"
#include "compiler/Targets/Target.h"

#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/StringRef.h"

#include <string>
#include <vector>

namespace cgc {

/// Attributes the pipeline's passes leave for the next ones.
constexpr llvm::StringLiteral kPatternAttr = "pattern";     // cgc.subgraph
constexpr llvm::StringLiteral kAlignmentAttr = "alignment"; // cgc.subgraph
constexpr llvm::StringLiteral kBaseNameAttr = "cgc.base_name";
constexpr llvm::StringLiteral kRejectedAttr = "cgc.rejected";
constexpr llvm::StringLiteral kRootAttr = "cgc.root"; // cgc.subgraph
constexpr llvm::StringLiteral kPartitionAttr = "cgc.partition";
constexpr llvm::StringLiteral kOffsetsAttr = "cgc.offsets";
constexpr llvm::StringLiteral kMemoryAttr = "cgc.memory";
constexpr llvm::StringLiteral kBarrierAttr = "cgc.barrier_before";
constexpr llvm::StringLiteral kScheduleAttr = "cgc.schedule";
constexpr llvm::StringLiteral kNameAttr = "cgc.name";
/// On an entry point's result (and the program's output argument): the name
/// of the output holding the number of valid rows of this one, whose
/// dimension 0 is an upper bound (data-dependent rows).
constexpr llvm::StringLiteral kRowsFromAttr = "cgc.rows_from";
/// Unit attribute on a partition argument whose value only that partition
/// reads and writes (an intermediate between its own invokes).
constexpr llvm::StringLiteral kInternalAttr = "cgc.internal";

class SubgraphMatcher {
public:
  /// Resolves `targetSpecs` (fallback appended) and asks each target for its
  /// patterns. `error` names the target that failed.
  mlir::LogicalResult initialize(mlir::MLIRContext *context,
                                 llvm::ArrayRef<std::string> targetSpecs,
                                 std::string &error);

  const std::vector<TargetHandle> &getTargets() const { return targets; }
  const TargetHandle *findTarget(llvm::StringRef name) const;

  /// Matches the patterns against every layer of `entry` that no cgc.call
  /// has claimed, skipping candidates recorded as rejected on their root
  /// (kRejectedAttr), and outlines the selected matches into subgraphs of
  /// `module`. Fails (with an error at the layer) if a layer stays unclaimed.
  mlir::LogicalResult matchAndOutline(ModuleOp module, EntryPointOp entry);

  /// "target/pattern", the key a rejection is recorded under.
  static std::string rejectionKey(llvm::StringRef target,
                                  llvm::StringRef pattern);

private:
  struct Pattern {
    unsigned target = 0;
    pattern::PatternOp op;
    std::string key;
    int64_t priority = 0;
    int64_t alignment = 1;
    bool nameByOps = false;
  };
  struct Candidate;
  class Search;

  std::vector<TargetHandle> targets;
  std::vector<mlir::OwningOpRef<ModuleOp>> declarations;
  std::vector<Pattern> patterns;
};

/// Removes unused layers and makes every returned value the result of a
/// layer (a returned input, constant or twice-returned value gets a
/// cgc_op.identity), so every model output is written by a dispatch.
void prepareEntryPoint(EntryPointOp entry);

/// Puts the layers of the subgraph `call` invokes back in its place.
llvm::SmallVector<mlir::Operation *> inlineCall(CallOp call);

/// Shares identical subgraphs between calls, removes unused subgraphs and
/// names new ones deterministically (in order of their first call).
void dedupAndRenameSubgraphs(ModuleOp module, EntryPointOp entry);

} // namespace cgc

#endif // CGC_COMPILER_PIPELINE_SUBGRAPHMATCHER_H
