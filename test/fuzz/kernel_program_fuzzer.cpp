//===- kernel_program_fuzzer.cpp - The kernel-program JSON reader ---------===//
//
// deserializeKernelProgram ('CGKP', what a driver's compute path executes)
// on any text; a program that is accepted must serialize and read back to
// the same program.
//
//===----------------------------------------------------------------------===//

#include "cgc/kernel_program.h"

#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  cgc::KernelProgram program;
  std::string error;
  if (!cgc::deserializeKernelProgram(
          std::string_view(reinterpret_cast<const char *>(data), size), program, error))
    return 0;
  cgc::KernelProgram again;
  if (!cgc::deserializeKernelProgram(cgc::serializeKernelProgram(program), again, error) ||
      !(again == program))
    std::abort(); // an accepted program must round-trip
  return 0;
}
