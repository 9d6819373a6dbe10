//===- compiled_model_fuzzer.cpp - The compiled-model reader --------------===//
//
// CompiledModel::open (container, versions, the plan and its consistency
// with the parts) on any bytes, raw and re-digested; for a model that opens,
// every program's container is built as the runtime would pass it to
// CreateStateObject. Never crashes, never hangs.
//
//===----------------------------------------------------------------------===//

#include "FuzzSupport.h"

#include "cgc/compiled_model.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  for (int pass = 0; pass < 2; ++pass) {
    std::vector<uint8_t> bytes = pass ? cgc::fuzz::redigested(data, size)
                                      : std::vector<uint8_t>(data, data + size);
    cgc::CompiledModel model;
    std::string error;
    if (!model.open(bytes.data(), bytes.size(), error))
      continue;
    for (size_t i = 0; i < model.getPlan().programs.size(); ++i)
      (void)model.buildProgramContainer(i);
  }
  return 0;
}
