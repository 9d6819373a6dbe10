//===- cgc/d3dx12_mlir.h - d3dx12 helpers for MLIR programs -----*- C++ -*-===//
//
// <directx/d3dx12.h> plus CD3DX12_MLIR_PROGRAM_SUBOBJECT, so the spec's
// "Compiling an MLIR program" example compiles as written:
//
//   CD3DX12_STATE_OBJECT_DESC stateObjectDesc(D3D12_STATE_OBJECT_TYPE_EXECUTABLE);
//   auto mlGraph = stateObjectDesc.CreateSubobject<CD3DX12_MLIR_PROGRAM_SUBOBJECT>();
//   mlGraph->SetProgramName(L"partition0");
//   mlGraph->SetBytecode(bytecode.data(), bytecode.size());
//
//===----------------------------------------------------------------------===//

#ifndef CGC_D3DX12_MLIR_H
#define CGC_D3DX12_MLIR_H

#include "cgc/d3d12_mlir.h"

#include <directx/d3dx12.h>

#include <string>
#include <type_traits>

namespace cgc_d3dx12_detail {
// DirectX-Headers 1.606 keeps CD3DX12_STATE_OBJECT_DESC::SUBOBJECT_HELPER_BASE
// private with a fixed friend list (it predates the MLIR subobject). An
// explicit instantiation may name private members ([temp.spec.general]/6), so
// this names the class once and exposes it as HelperBase.
struct HelperBaseTag {
  friend auto helperBasePointer(HelperBaseTag);
};
template <typename T, typename Tag> struct ExposeType {
  friend auto helperBasePointer(Tag) { return static_cast<T *>(nullptr); }
};
template struct ExposeType<CD3DX12_STATE_OBJECT_DESC::SUBOBJECT_HELPER_BASE, HelperBaseTag>;
using HelperBase =
    std::remove_pointer_t<decltype(helperBasePointer(HelperBaseTag{}))>;
} // namespace cgc_d3dx12_detail

class CD3DX12_MLIR_PROGRAM_SUBOBJECT : public cgc_d3dx12_detail::HelperBase {
public:
  CD3DX12_MLIR_PROGRAM_SUBOBJECT() noexcept { Init(); }
  CD3DX12_MLIR_PROGRAM_SUBOBJECT(CD3DX12_STATE_OBJECT_DESC &ContainingStateObject) {
    Init();
    AddToStateObject(ContainingStateObject);
  }
  void SetProgramName(LPCWSTR ProgramName) {
    m_Name = ProgramName ? ProgramName : L"";
    m_Desc.ProgramName = ProgramName ? m_Name.c_str() : nullptr;
  }
  /// The bytes are not copied: they must stay valid until CreateStateObject
  /// returns (the runtime and driver do not keep the pointer after that).
  void SetBytecode(const void *pBytecode, SIZE_T BytecodeSizeInBytes) noexcept {
    m_Desc.pBytecode = pBytecode;
    m_Desc.BytecodeSizeInBytes = BytecodeSizeInBytes;
  }
  D3D12_STATE_SUBOBJECT_TYPE Type() const noexcept override {
    return D3D12_STATE_SUBOBJECT_TYPE_MLIR_PROGRAM;
  }
  operator const D3D12_STATE_SUBOBJECT &() const noexcept { return *m_pSubobject; }
  operator const D3D12_MLIR_PROGRAM_DESC &() const noexcept { return m_Desc; }

private:
  void Init() noexcept {
    cgc_d3dx12_detail::HelperBase::Init();
    m_Desc = {};
    m_Name.clear();
  }
  void *Data() noexcept override { return &m_Desc; }
  D3D12_MLIR_PROGRAM_DESC m_Desc;
  std::wstring m_Name;
};

#endif // CGC_D3DX12_MLIR_H
