//===- ddi_bind_points.h - A kernel program's bind points for the DDI -*- C++ -*-===//
//
// DDI 1.2's pfnGetProgramBindPointsCgc for drivers whose compiled MLIR
// programs are kernel programs (the CPU driver, the example gemm
// driver): the size query and the fill, one rule for both.
//
//===----------------------------------------------------------------------===//

#ifndef CGC_CPU_DDI_BIND_POINTS_H
#define CGC_CPU_DDI_BIND_POINTS_H

#include "cgc/d3d12ddi_mlir.h"
#include "cgc/kernel_program.h"

namespace cgc::cpu {

/// With `points` null, stores the number of bindings in `*count`; else
/// writes them (E_INVALIDARG if `*count` is not their number).
inline HRESULT describeBindPoints(const KernelProgram &program, UINT *count,
                                  D3D12DDI_PROGRAM_BIND_POINT_CGC *points) {
  const auto &bindings = program.bindings;
  if (!points) {
    *count = UINT(bindings.size());
    return S_OK;
  }
  if (*count != bindings.size())
    return E_INVALIDARG;
  for (size_t i = 0; i < bindings.size(); ++i)
    points[i] = {bindings[i].bytes, bindings[i].constant ? TRUE : FALSE,
                 UINT(bindings[i].dtype)};
  return S_OK;
}

} // namespace cgc::cpu

#endif // CGC_CPU_DDI_BIND_POINTS_H
