//===- json_formats_fuzzer.cpp - libFuzzer: the JSON parts' readers -------===//
//
// Bytes -> the readers of the JSON parts of a compiled model, each given the
// same text: the execution plan (CGPL), a kernel program (CGKP, what the
// CPU driver runs) and bind points (CGBP).
//
//===----------------------------------------------------------------------===//

#include "cgc/bind_points.h"
#include "cgc/compiled_model.h"
#include "cgc/kernel_program.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view text(reinterpret_cast<const char *>(data), size);
  std::string error;
  cgc::ExecutionPlan plan;
  (void)cgc::parseExecutionPlan(text, plan, error);
  cgc::KernelProgram program;
  (void)cgc::deserializeKernelProgram(text, program, error);
  std::vector<cgc::BindPoint> bindPoints;
  (void)cgc::deserializeBindPoints(text, bindPoints, error);
  return 0;
}
