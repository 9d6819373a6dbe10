//===- compiled_model_fuzzer.cpp - libFuzzer: the compiled-model reader ---===//
//
// Bytes -> cgc::CompiledModel::open and every accessor the runtime calls on
// a model it loads (plan, partitions, bind points, kernel programs,
// precompiled programs). A mutated container almost never keeps its MD5
// digest, which the reader checks first; the digest (and the size field) are
// recomputed here so that the fuzzer reaches the parts, the plan and the
// cross-checks behind them. Built and run by scripts/fuzz.sh.
//
//===----------------------------------------------------------------------===//

#include "cgc/compiled_model.h"
#include "cgc/container.h"

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::vector<uint8_t> bytes(data, data + size);
  // 'DXBC', digest [4, 20), version [20, 24), total size [24, 28): keep the
  // size honest and the digest right, as a writer would.
  if (bytes.size() >= 32 && std::memcmp(bytes.data(), "DXBC", 4) == 0) {
    uint32_t total = uint32_t(bytes.size());
    std::memcpy(bytes.data() + 24, &total, 4);
    cgc::md5(bytes.data() + 20, bytes.size() - 20, bytes.data() + 4);
  }
  cgc::CompiledModel model;
  std::string error;
  if (!model.open(bytes.data(), bytes.size(), error))
    return 0;
  const cgc::ExecutionPlan &plan = model.getPlan();
  (void)model.getOutputIR();
  (void)model.getConstants();
  for (size_t i = 0; i < plan.programs.size(); ++i) {
    (void)model.getPartitionBytecode(i);
    (void)model.getBindPoints(i);
    if (plan.programs[i].kind == cgc::PlanProgram::Kind::Kernel)
      (void)model.getKernelProgram(i);
    else
      (void)model.buildProgramContainer(i), (void)model.getPrecompiledProgram(i);
  }
  return 0;
}
