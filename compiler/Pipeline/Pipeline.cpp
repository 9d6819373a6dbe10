//===- Pipeline.cpp - The registered pipelines ----------------------------===//

#include "compiler/Pipeline/Pipeline.h"

#include "compiler/Pipeline/Passes.h"

#include "mlir/Pass/PassRegistry.h"

using namespace mlir;

namespace cgc {

void buildLowerToOutputIRPipeline(OpPassManager &pm,
                                  const LowerToOutputIROptions &options) {
  llvm::SmallVector<std::string> targets(options.targets.begin(),
                                   options.targets.end());
  MatchSubgraphsOptions match;
  match.targets = targets;
  pm.addPass(createMatchSubgraphs(match));
  SpecializeSubgraphsOptions specialize;
  specialize.targets = targets;
  pm.addPass(createSpecializeSubgraphs(specialize));
  PartitionSubgraphsOptions partition;
  partition.granularity = options.granularity;
  partition.maxSubgraphs = options.maxSubgraphs;
  pm.addPass(createPartitionSubgraphs(partition));
  PlanMemoryOptions plan;
  plan.alignment = options.alignment;
  plan.inPlace = options.inPlace;
  plan.schedule = options.schedule;
  plan.report.assign(options.memoryReport.begin(), options.memoryReport.end());
  pm.addPass(createPlanMemory(plan));
  ScheduleBarriersOptions barriers;
  barriers.verify = options.verify;
  pm.addPass(createScheduleBarriers(barriers));
  pm.addPass(createBuildProgram());
}

void registerPipelines() {
  static bool registered = false;
  if (registered)
    return;
  registered = true;
  PassPipelineRegistration<LowerToOutputIROptions>(
      "cgc-lower-to-output-ir",
      "Lower CGC Input IR to Output IR: match target patterns, specialize, "
      "partition, plan memory, schedule barriers, build the program",
      buildLowerToOutputIRPipeline);
}

} // namespace cgc
