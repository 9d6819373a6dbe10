//===- TestUtil.h - Helpers of the D3D12 API tests --------------*- C++ -*-===//

#ifndef CGC_TEST_D3D12_TESTUTIL_H
#define CGC_TEST_D3D12_TESTUTIL_H

// container.h names a parameter `interface`: include it before DirectX.
#include "cgc/bind_points.h"
#include "cgc/container.h"
#include "cgc/kernel_program.h"

#include "cgc/d3dx12_mlir.h"

#include "../cpu_target/TestUtil.h" // f32
#include "TestDriver.h"

#include <gtest/gtest.h>
#include <wrl/client.h>

#include <cstring>
#include <dlfcn.h>
#include <string>
#include <vector>

namespace cgc::test {

using Microsoft::WRL::ComPtr;

/// Paths given by CMake.
inline const char *testDriverPath() { return CGC_TEST_DRIVER_PATH; }
inline const char *badVersionDriverPath() { return CGC_TEST_BAD_DRIVER_PATH; }

/// The test double's counters and TEST-ONLY knobs (TestDriver.h); the double
/// must be loaded (a device was created on it).
inline void *testDriverSymbol(const char *name) {
  void *lib = dlopen(testDriverPath(), RTLD_NOW | RTLD_NOLOAD);
  EXPECT_NE(lib, nullptr) << "the test double is not loaded";
  return lib ? dlsym(lib, name) : nullptr;
}
inline CgcTestDriverCounters *testDriverCounters() {
  auto fn = reinterpret_cast<CgcTestDriverCounters *(*)()>(testDriverSymbol("cgcTestDriverCounters"));
  return fn ? fn() : nullptr;
}
inline CgcTestDriverKnobs *testDriverKnobs() {
  auto fn = reinterpret_cast<CgcTestDriverKnobs *(*)()>(testDriverSymbol("cgcTestDriverKnobs"));
  return fn ? fn() : nullptr;
}

/// Creates a device on `driver` (a path, or null for the default CPU
/// driver) with the given cgc creation flags.
inline ComPtr<ID3D12Device14> makeDevice(const char *driver, UINT flags = 0) {
  if (flags)
    CGCD3D12SetDeviceCreationFlags(flags);
  EXPECT_EQ(CGCD3D12SelectDriver(driver), S_OK) << CGCD3D12GetLastError();
  ComPtr<ID3D12Device14> device;
  HRESULT hr = D3D12CreateDevice(nullptr, D3D_FEATURE_LEVEL_12_0, IID_PPV_ARGS(&device));
  EXPECT_EQ(hr, S_OK) << CGCD3D12GetLastError();
  CGCD3D12SetDeviceCreationFlags(0);
  CGCD3D12SelectDriver(nullptr);
  return device;
}

inline BindPoint bindPoint(std::string name, BindPointKind kind, uint64_t bytes,
                           std::vector<int64_t> shape = {}) {
  BindPoint bp;
  bp.name = std::move(name);
  bp.kind = kind;
  bp.bytes = bytes;
  bp.alignment = 4;
  bp.dtype = CGC_DTYPE_FLOAT32;
  bp.shape = shape.empty() ? std::vector<int64_t>{int64_t(bytes / 4)} : shape;
  return bp;
}

/// A partition container: an 'MLIR' part tagged `iface` holding `bytecode`,
/// and a 'CGBP' part with the bind points.
inline std::vector<uint8_t> partitionContainer(const std::vector<BindPoint> &bindPoints,
                                               const Guid &iface = interfaces::kSubgraphPartition,
                                               std::string bytecode = "ML\xefR-test-bytes") {
  ContainerWriter writer;
  writer.addMLIRPart(iface, bytecode);
  writer.addPart(parts::kBindPoints, serializeBindPoints(bindPoints));
  return writer.finish();
}

inline std::vector<uint8_t> kernelProgramContainer(const KernelProgram &program) {
  ContainerWriter writer;
  writer.addPart(parts::kKernelProgram, serializeKernelProgram(program));
  return writer.finish();
}

/// A float32 operand of a kernel program: binding (or temporary) `index`
/// (the cpu-target tests' f32 with the storage last, defaulted).
inline KernelOperand operand(uint32_t index, std::vector<int64_t> shape,
                             KernelOperand::Storage storage = KernelOperand::Storage::Binding) {
  return f32(storage, index, std::move(shape));
}

/// out = a + b over n floats (bindings a, b, out).
inline KernelProgram addProgram(int64_t n) {
  KernelProgram p;
  p.bindings = {{"a", uint64_t(n) * 4}, {"b", uint64_t(n) * 4}, {"out", uint64_t(n) * 4}};
  KernelDesc add;
  add.op = "cgc_op.add";
  add.inputs = {operand(0, {n}), operand(1, {n})};
  add.outputs = {operand(2, {n})};
  p.kernels = {add};
  return p;
}

/// A committed buffer; by default one MLIR programs may bind (unordered
/// access, COMMON, a CPU-visible CUSTOM heap).
inline ComPtr<ID3D12Resource> makeBuffer(
    ID3D12Device *device, uint64_t bytes, D3D12_HEAP_TYPE type = D3D12_HEAP_TYPE_CUSTOM,
    D3D12_RESOURCE_FLAGS flags = D3D12_RESOURCE_FLAG_ALLOW_UNORDERED_ACCESS,
    D3D12_RESOURCE_STATES state = D3D12_RESOURCE_STATE_COMMON) {
  D3D12_HEAP_PROPERTIES props = {};
  props.Type = type;
  if (type == D3D12_HEAP_TYPE_CUSTOM) {
    props.CPUPageProperty = D3D12_CPU_PAGE_PROPERTY_WRITE_BACK;
    props.MemoryPoolPreference = D3D12_MEMORY_POOL_L0;
  }
  D3D12_RESOURCE_DESC desc = CD3DX12_RESOURCE_DESC::Buffer(bytes, flags);
  ComPtr<ID3D12Resource> buffer;
  EXPECT_EQ(device->CreateCommittedResource(&props, D3D12_HEAP_FLAG_NONE, &desc, state, nullptr,
                                            IID_PPV_ARGS(&buffer)),
            S_OK);
  return buffer;
}

template <class T> T *mapped(ID3D12Resource *buffer) {
  void *p = nullptr;
  EXPECT_EQ(buffer->Map(0, nullptr, &p), S_OK);
  return static_cast<T *>(p);
}

struct Queue {
  ComPtr<ID3D12CommandQueue> queue;
  ComPtr<ID3D12Fence> fence;
  uint64_t value = 0;

  explicit Queue(ID3D12Device *device) {
    D3D12_COMMAND_QUEUE_DESC desc = {};
    desc.Type = D3D12_COMMAND_LIST_TYPE_COMPUTE;
    EXPECT_EQ(device->CreateCommandQueue(&desc, IID_PPV_ARGS(&queue)), S_OK);
    EXPECT_EQ(device->CreateFence(0, D3D12_FENCE_FLAG_NONE, IID_PPV_ARGS(&fence)), S_OK);
  }
  /// Executes the lists and blocks until they are done.
  void run(std::vector<ID3D12CommandList *> lists) {
    queue->ExecuteCommandLists(UINT(lists.size()), lists.data());
    EXPECT_EQ(queue->Signal(fence.Get(), ++value), S_OK);
    EXPECT_EQ(fence->SetEventOnCompletion(value, nullptr), S_OK);
  }
};

struct Recorder {
  ComPtr<ID3D12CommandAllocator> allocator;
  ComPtr<ID3D12GraphicsCommandList10> list;
  explicit Recorder(ID3D12Device *device) {
    EXPECT_EQ(device->CreateCommandAllocator(D3D12_COMMAND_LIST_TYPE_COMPUTE,
                                             IID_PPV_ARGS(&allocator)),
              S_OK);
    EXPECT_EQ(device->CreateCommandList(0, D3D12_COMMAND_LIST_TYPE_COMPUTE, allocator.Get(),
                                        nullptr, IID_PPV_ARGS(&list)),
              S_OK);
  }
};

/// Messages stored in the device's info queue.
inline std::vector<std::string> messages(ID3D12Device *device) {
  std::vector<std::string> out;
  ComPtr<ID3D12InfoQueue> queue;
  if (FAILED(device->QueryInterface(IID_PPV_ARGS(&queue))))
    return out;
  for (UINT64 i = 0; i < queue->GetNumStoredMessages(); ++i) {
    SIZE_T size = 0;
    queue->GetMessage(i, nullptr, &size);
    std::vector<uint8_t> bytes(size);
    auto *m = reinterpret_cast<D3D12_MESSAGE *>(bytes.data());
    if (queue->GetMessage(i, m, &size) == S_OK)
      out.push_back(m->pDescription);
  }
  return out;
}

inline bool anyMessageContains(ID3D12Device *device, const std::vector<std::string> &needles) {
  for (const std::string &m : messages(device)) {
    bool all = true;
    for (const std::string &n : needles)
      all = all && m.find(n) != std::string::npos;
    if (all)
      return true;
  }
  return false;
}

} // namespace cgc::test

#endif // CGC_TEST_D3D12_TESTUTIL_H
