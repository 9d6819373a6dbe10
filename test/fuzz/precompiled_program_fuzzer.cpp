//===- precompiled_program_fuzzer.cpp - Precompiled-program blobs ---------===//
//
// readPrecompiledProgram (a cached blob a driver is handed: container, key
// JSON) and, for a blob that opens, the kernel program inside it, raw and
// re-digested.
//
//===----------------------------------------------------------------------===//

#include "FuzzSupport.h"

#include "cgc/kernel_program.h"
#include "cgc/precompiled_program.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  for (int pass = 0; pass < 2; ++pass) {
    std::vector<uint8_t> bytes = pass ? cgc::fuzz::redigested(data, size)
                                      : std::vector<uint8_t>(data, data + size);
    cgc::ContainerReader reader;
    cgc::PrecompiledKey key;
    std::string error;
    if (!cgc::readPrecompiledProgram(bytes.data(), bytes.size(), reader, key, error))
      continue;
    for (const cgc::ContainerReader::Part *part : reader.find(cgc::parts::kKernelProgram)) {
      cgc::KernelProgram program;
      (void)cgc::deserializeKernelProgram(part->data.str(), program, error);
    }
  }
  return 0;
}
