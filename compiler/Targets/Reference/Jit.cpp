//===- Jit.cpp - The reference driver's MLIR JIT ---------------------------===//
//
// getJitInterface() of runtime/drivers/reference/jit.h: what the reference
// driver calls at CreateStateObject (compilePartition: the partition compiler
// of PartitionCompiler.h, which the offline precompiler shares) and for
// MLIR_EXCHANGE (exchange). The driver reaches it through the module
// libcgc_driver_reference_jit.so (JitModule.cpp); tests and tools link it.
//
//===----------------------------------------------------------------------===//

#include "compiler/Targets/Reference/PartitionCompiler.h"
#include "compiler/Targets/Reference/ReferenceTarget.h"
#include "jit.h"

namespace cgc {
namespace {

int32_t exchange(const Guid &interface, const void *in, size_t inSize,
                 void *out, size_t *outSize) {
  return referenceDriverExchange(interface, in, inSize, out, outSize);
}

} // namespace

namespace ref {
const JitInterface *getJitInterface() {
  static const JitInterface jit = {&reference::compilePartition, &exchange};
  return &jit;
}
} // namespace ref

} // namespace cgc
