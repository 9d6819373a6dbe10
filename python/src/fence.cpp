//===- fence.cpp - Shared D3D12 fences for the Python package -------------===//

#include "fence.h"

#include "cgc/d3d12_mlir.h"

#include <wrl/client.h>

namespace cgc::python {

int createSharedFence(void *d3d12Device, uint64_t initial, std::string &error) {
  auto *device = static_cast<ID3D12Device *>(d3d12Device);
  Microsoft::WRL::ComPtr<ID3D12Fence> fence;
  HRESULT hr = device->CreateFence(initial, D3D12_FENCE_FLAG_SHARED, IID_PPV_ARGS(&fence));
  if (FAILED(hr)) {
    error = std::string("CreateFence(D3D12_FENCE_FLAG_SHARED) failed: ") + CGCD3D12GetLastError();
    return -1;
  }
  SECURITY_ATTRIBUTES attributes = {};
  attributes.nLength = sizeof(attributes);
  HANDLE handle = nullptr;
  hr = device->CreateSharedHandle(fence.Get(), &attributes, GENERIC_ALL, nullptr, &handle);
  if (FAILED(hr)) {
    error = std::string("CreateSharedHandle(fence) failed: ") + CGCD3D12GetLastError();
    return -1;
  }
  return CGCFdFromHandle(handle);
}

void *handleFromFd(int fd) { return CGCHandleFromFd(fd); }

} // namespace cgc::python
