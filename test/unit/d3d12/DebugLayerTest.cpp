//===- DebugLayerTest.cpp - DispatchGraph validation by the debug layer ---===//
//
// On the TEST DOUBLE driver (test_driver.cpp), so that what is checked is the
// API layer: with the debug layer every mistake is reported naming the bind
// point by index and name, and Close() fails; without it the same calls do
// not crash and Close() still fails (the driver reports the error).
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include <array>

using namespace cgc;
using namespace cgc::test;

namespace {

class DebugLayer : public ::testing::TestWithParam<bool> {
protected:
  void SetUp() override {
    debug = GetParam();
    if (debug) {
      // The documented way: D3D12GetDebugInterface -> EnableDebugLayer.
      ComPtr<ID3D12Debug> debugInterface;
      ASSERT_EQ(D3D12GetDebugInterface(IID_PPV_ARGS(&debugInterface)), S_OK);
      debugInterface->EnableDebugLayer();
    }
    device = makeDevice(testDriverPath());
    ASSERT_TRUE(device);
    // Devices created later do not inherit it.
    CGCD3D12SetDeviceCreationFlags(0);

    auto bytes = partitionContainer({bindPoint("in", BindPointKind::Argument, 64),
                                     bindPoint("w1", BindPointKind::Constant, 36),
                                     bindPoint("out", BindPointKind::Output, 64)});
    D3D12_MLIR_PROGRAM_DESC p = {L"partition0", bytes.data(), bytes.size()};
    D3D12_STATE_SUBOBJECT sub = {D3D12_STATE_SUBOBJECT_TYPE_MLIR_PROGRAM, &p};
    D3D12_STATE_OBJECT_DESC desc = {D3D12_STATE_OBJECT_TYPE_EXECUTABLE, 1, &sub};
    ASSERT_EQ(device->CreateStateObject(&desc, IID_PPV_ARGS(&stateObject)), S_OK);
    ComPtr<ID3D12StateObjectProperties1> props;
    ASSERT_EQ(stateObject.As(&props), S_OK);
    programId = props->GetProgramIdentifier(L"partition0");
    for (auto &b : buffers)
      b = makeBuffer(device.Get(), 64);
    small = makeBuffer(device.Get(), 16);
    recorder = std::make_unique<Recorder>(device.Get());
  }

  void setProgram() {
    D3D12_SET_PROGRAM_DESC set = {};
    set.Type = D3D12_PROGRAM_TYPE_MLIR_PROGRAM;
    set.MlirProgram.ProgramIdentifier = programId;
    recorder->list->SetProgram(&set);
  }

  std::array<D3D12_MLIR_PROGRAM_BINDING, 3> goodBindings() {
    std::array<D3D12_MLIR_PROGRAM_BINDING, 3> b = {};
    for (UINT i = 0; i < 3; ++i) {
      b[i].BindPointIndex = i;
      b[i].Type = D3D12_MLIR_PROGRAM_BINDING_TYPE_GPU;
      b[i].GpuBinding = buffers[i]->GetGPUVirtualAddress();
    }
    return b;
  }

  void dispatch(const D3D12_MLIR_PROGRAM_BINDING *bindings, UINT count) {
    D3D12_DISPATCH_GRAPH_DESC d = {};
    d.Mode = D3D12_DISPATCH_MODE_MLIR_PROGRAM;
    d.MlirProgramBindings = {count, bindings};
    recorder->list->DispatchGraph(&d);
  }

  /// Close fails; with the debug layer a message names what is given.
  void expectCaught(const std::vector<std::string> &needles) {
    EXPECT_EQ(recorder->list->Close(), E_INVALIDARG);
    if (debug)
      EXPECT_TRUE(anyMessageContains(device.Get(), needles))
          << "no message with all of: " << ::testing::PrintToString(needles);
  }

  bool debug = false;
  ComPtr<ID3D12Device14> device;
  ComPtr<ID3D12StateObject> stateObject;
  D3D12_PROGRAM_IDENTIFIER programId = {};
  std::array<ComPtr<ID3D12Resource>, 3> buffers;
  ComPtr<ID3D12Resource> small;
  std::unique_ptr<Recorder> recorder;
};

TEST_P(DebugLayer, CorrectBindingsPass) {
  setProgram();
  auto b = goodBindings();
  dispatch(b.data(), 3);
  EXPECT_EQ(recorder->list->Close(), S_OK);
}

TEST_P(DebugLayer, NullBinding) {
  setProgram();
  auto b = goodBindings();
  b[1].GpuBinding = D3D12_GPU_VIRTUAL_ADDRESS(0);
  dispatch(b.data(), 3);
  expectCaught({"bind point 1 'w1'", "null"});
}

TEST_P(DebugLayer, NullCpuBinding) {
  setProgram();
  auto b = goodBindings();
  b[0].Type = D3D12_MLIR_PROGRAM_BINDING_TYPE_CPU;
  b[0].CpuBinding = {nullptr, 64};
  dispatch(b.data(), 3);
  expectCaught({"bind point 0 'in'", "null CPU data"});
}

TEST_P(DebugLayer, TooSmallBuffer) {
  if (!debug)
    GTEST_SKIP() << "only the debug layer knows resource sizes (the double reads out of "
                    "bounds without it, as a real driver would)";
  setProgram();
  auto b = goodBindings();
  b[2].GpuBinding = small->GetGPUVirtualAddress();
  dispatch(b.data(), 3);
  expectCaught({"bind point 2 'out'", "smaller than the bind point's 64 bytes"});
}

TEST_P(DebugLayer, RangeOutsideAnyResource) {
  if (!debug)
    GTEST_SKIP() << "only the debug layer tracks live resources";
  setProgram();
  auto b = goodBindings();
  b[0].GpuBinding = D3D12_GPU_VIRTUAL_ADDRESS_RANGE{buffers[0]->GetGPUVirtualAddress() + 32, 64};
  dispatch(b.data(), 3);
  expectCaught({"bind point 0 'in'", "runs past the end"});
}

TEST_P(DebugLayer, MissingProgram) {
  auto b = goodBindings();
  dispatch(b.data(), 3);
  expectCaught({"no MLIR program is set"});
}

TEST_P(DebugLayer, WrongCount) {
  setProgram();
  auto b = goodBindings();
  dispatch(b.data(), 2);
  expectCaught({"NumBindings is 2", "3 bind points"});
  if (debug)
    EXPECT_TRUE(anyMessageContains(device.Get(), {"bind point 2 'out'", "not bound"}));
}

TEST_P(DebugLayer, DuplicateAndOutOfRangeIndex) {
  setProgram();
  auto b = goodBindings();
  b[2].BindPointIndex = 0;
  dispatch(b.data(), 3);
  expectCaught({"bind point 0 'in'", "bound twice"});
  ASSERT_EQ(recorder->list->Reset(recorder->allocator.Get(), nullptr), S_OK);
  setProgram();
  b = goodBindings();
  b[2].BindPointIndex = 7;
  dispatch(b.data(), 3);
  expectCaught({"BindPointIndex 7"});
}

TEST_P(DebugLayer, NullBindingArray) {
  setProgram();
  dispatch(nullptr, 3);
  EXPECT_EQ(recorder->list->Close(), E_INVALIDARG);
}

TEST_P(DebugLayer, UnknownProgramIdentifier) {
  D3D12_SET_PROGRAM_DESC set = {};
  set.Type = D3D12_PROGRAM_TYPE_MLIR_PROGRAM;
  set.MlirProgram.ProgramIdentifier = {{1, 2, 3, 4}};
  recorder->list->SetProgram(&set);
  expectCaught({"identifier"});
}

TEST_P(DebugLayer, NullDescriptions) {
  recorder->list->SetProgram(nullptr);
  EXPECT_EQ(recorder->list->Close(), E_INVALIDARG);
  ASSERT_EQ(recorder->list->Reset(recorder->allocator.Get(), nullptr), S_OK);
  recorder->list->DispatchGraph(nullptr);
  EXPECT_EQ(recorder->list->Close(), E_INVALIDARG);
}

TEST_P(DebugLayer, CallbackReceivesMessages) {
  ComPtr<ID3D12InfoQueue1> queue;
  ASSERT_EQ(device.As(&queue), S_OK);
  struct Seen {
    int count = 0;
    std::string last;
  } seen;
  DWORD cookie = 0;
  ASSERT_EQ(queue->RegisterMessageCallback(
                [](D3D12_MESSAGE_CATEGORY, D3D12_MESSAGE_SEVERITY, D3D12_MESSAGE_ID,
                   LPCSTR text, void *ctx) {
                  auto *s = static_cast<Seen *>(ctx);
                  ++s->count;
                  s->last = text;
                },
                D3D12_MESSAGE_CALLBACK_FLAG_NONE, &seen, &cookie),
            S_OK);
  setProgram();
  auto b = goodBindings();
  b[1].GpuBinding = D3D12_GPU_VIRTUAL_ADDRESS(0);
  dispatch(b.data(), 3);
  recorder->list->Close();
  EXPECT_GT(seen.count, 0);
  EXPECT_NE(seen.last.find("Close"), std::string::npos);
  EXPECT_EQ(queue->UnregisterMessageCallback(cookie), S_OK);
}

TEST_P(DebugLayer, BufferWithoutUnorderedAccess) {
  if (!debug)
    GTEST_SKIP() << "resource flags are the debug layer's to check";
  auto plain = makeBuffer(device.Get(), 64, D3D12_HEAP_TYPE_CUSTOM, D3D12_RESOURCE_FLAG_NONE);
  setProgram();
  auto b = goodBindings();
  b[1].GpuBinding = plain->GetGPUVirtualAddress();
  dispatch(b.data(), 3);
  expectCaught({"bind point 1 'w1'", "without D3D12_RESOURCE_FLAG_ALLOW_UNORDERED_ACCESS"});
}

TEST_P(DebugLayer, BufferInAnUploadOrReadbackHeap) {
  if (!debug)
    GTEST_SKIP() << "heap types are the debug layer's to check";
  // UPLOAD and READBACK heaps allow no unordered access on D3D12, so no bind
  // point (read or written) may use them.
  auto upload = makeBuffer(device.Get(), 64, D3D12_HEAP_TYPE_UPLOAD,
                           D3D12_RESOURCE_FLAG_ALLOW_UNORDERED_ACCESS,
                           D3D12_RESOURCE_STATE_GENERIC_READ);
  auto readback = makeBuffer(device.Get(), 64, D3D12_HEAP_TYPE_READBACK,
                             D3D12_RESOURCE_FLAG_ALLOW_UNORDERED_ACCESS,
                             D3D12_RESOURCE_STATE_COPY_DEST);
  setProgram();
  auto b = goodBindings();
  b[0].GpuBinding = upload->GetGPUVirtualAddress();
  b[2].GpuBinding = readback->GetGPUVirtualAddress();
  dispatch(b.data(), 3);
  expectCaught({"bind point 0 'in'", "UPLOAD heap"});
  EXPECT_TRUE(anyMessageContains(device.Get(), {"bind point 2 'out'", "READBACK heap"}));
}

TEST_P(DebugLayer, BoundBuffersMustBeCommonOrUnorderedAccess) {
  if (!debug)
    GTEST_SKIP() << "resource states are tracked by the debug layer";
  auto transition = [](ID3D12Resource *r, D3D12_RESOURCE_STATES before,
                       D3D12_RESOURCE_STATES after) {
    D3D12_RESOURCE_BARRIER t = {};
    t.Type = D3D12_RESOURCE_BARRIER_TYPE_TRANSITION;
    t.Transition = {r, D3D12_RESOURCE_BARRIER_ALL_SUBRESOURCES, before, after};
    return t;
  };
  // Moved to COPY_DEST in this list: refused.
  auto toCopy = transition(buffers[2].Get(), D3D12_RESOURCE_STATE_COMMON,
                           D3D12_RESOURCE_STATE_COPY_DEST);
  recorder->list->ResourceBarrier(1, &toCopy);
  setProgram();
  auto b = goodBindings();
  dispatch(b.data(), 3);
  expectCaught({"bind point 2 'out'", "state COPY_DEST", "UNORDERED_ACCESS"});

  // To UNORDERED_ACCESS: bound fine, and the state stays with the buffer
  // once the list is closed.
  ASSERT_EQ(recorder->list->Reset(recorder->allocator.Get(), nullptr), S_OK);
  auto toUav = transition(buffers[2].Get(), D3D12_RESOURCE_STATE_COMMON,
                          D3D12_RESOURCE_STATE_UNORDERED_ACCESS);
  recorder->list->ResourceBarrier(1, &toUav);
  setProgram();
  dispatch(b.data(), 3);
  ASSERT_EQ(recorder->list->Close(), S_OK) << ::testing::PrintToString(messages(device.Get()));

  // A transition from a state it is not in is refused.
  ASSERT_EQ(recorder->list->Reset(recorder->allocator.Get(), nullptr), S_OK);
  recorder->list->ResourceBarrier(1, &toCopy); // StateBefore COMMON, it is UNORDERED_ACCESS
  EXPECT_EQ(recorder->list->Close(), E_INVALIDARG);
  EXPECT_TRUE(anyMessageContains(device.Get(), {"ResourceBarrier", "StateBefore 0x0",
                                                "differs from its state 0x8"}))
      << ::testing::PrintToString(messages(device.Get()));

  // Created in COPY_DEST: refused until transitioned.
  auto copyDest = makeBuffer(device.Get(), 64, D3D12_HEAP_TYPE_CUSTOM,
                             D3D12_RESOURCE_FLAG_ALLOW_UNORDERED_ACCESS,
                             D3D12_RESOURCE_STATE_COPY_DEST);
  ASSERT_EQ(recorder->list->Reset(recorder->allocator.Get(), nullptr), S_OK);
  setProgram();
  b[0].GpuBinding = copyDest->GetGPUVirtualAddress();
  b[2].GpuBinding = buffers[0]->GetGPUVirtualAddress();
  dispatch(b.data(), 3);
  expectCaught({"bind point 0 'in'", "state COPY_DEST"});
}

TEST_P(DebugLayer, AliasingPlacedBuffersAreLookedThrough) {
  // Placed buffers over one heap alias (the DXCGC runtime places one over
  // each barriered scratch range): a binding is checked against a buffer
  // that holds all of it, not the smallest one holding its address.
  D3D12_HEAP_DESC hd = {};
  hd.SizeInBytes = 2 << 16;
  hd.Properties.Type = D3D12_HEAP_TYPE_CUSTOM;
  hd.Properties.CPUPageProperty = D3D12_CPU_PAGE_PROPERTY_WRITE_BACK;
  hd.Properties.MemoryPoolPreference = D3D12_MEMORY_POOL_L0;
  ComPtr<ID3D12Heap> heap;
  ASSERT_EQ(device->CreateHeap(&hd, IID_PPV_ARGS(&heap)), S_OK);
  auto place = [&](uint64_t offset, uint64_t width) {
    D3D12_RESOURCE_DESC desc =
        CD3DX12_RESOURCE_DESC::Buffer(width, D3D12_RESOURCE_FLAG_ALLOW_UNORDERED_ACCESS);
    ComPtr<ID3D12Resource> r;
    EXPECT_EQ(device->CreatePlacedResource(heap.Get(), offset, &desc,
                                           D3D12_RESOURCE_STATE_COMMON, nullptr,
                                           IID_PPV_ARGS(&r)),
              S_OK);
    return r;
  };
  auto whole = place(0, 2 << 16), view = place(1 << 16, 16);
  setProgram();
  auto b = goodBindings();
  b[2].GpuBinding = view->GetGPUVirtualAddress(); // 64 bytes from there: in `whole`
  dispatch(b.data(), 3);
  EXPECT_EQ(recorder->list->Close(), S_OK) << ::testing::PrintToString(messages(device.Get()));
}

TEST_P(DebugLayer, EnhancedBarriersMustLeaveUnorderedAccess) {
  if (!debug)
    GTEST_SKIP() << "barrier accesses are tracked by the debug layer";
  D3D12_BUFFER_BARRIER bb = {D3D12_BARRIER_SYNC_COMPUTE_SHADING, D3D12_BARRIER_SYNC_COPY,
                             D3D12_BARRIER_ACCESS_UNORDERED_ACCESS,
                             D3D12_BARRIER_ACCESS_COPY_SOURCE, buffers[2].Get(), 0, UINT64_MAX};
  D3D12_BARRIER_GROUP group = {D3D12_BARRIER_TYPE_BUFFER, 1, {}};
  group.pBufferBarriers = &bb;
  recorder->list->Barrier(1, &group);
  setProgram();
  auto b = goodBindings();
  dispatch(b.data(), 3);
  expectCaught({"bind point 2 'out'", "AccessAfter 0x800",
                "D3D12_BARRIER_ACCESS_COMMON or UNORDERED_ACCESS"});
  // Back to unordered access: bound fine; a new list starts from COMMON.
  for (bool again : {true, false}) {
    ASSERT_EQ(recorder->list->Reset(recorder->allocator.Get(), nullptr), S_OK);
    if (again) {
      recorder->list->Barrier(1, &group);
      bb.AccessBefore = D3D12_BARRIER_ACCESS_COPY_SOURCE;
      bb.AccessAfter = D3D12_BARRIER_ACCESS_UNORDERED_ACCESS;
      recorder->list->Barrier(1, &group);
    }
    setProgram();
    dispatch(b.data(), 3);
    EXPECT_EQ(recorder->list->Close(), S_OK) << ::testing::PrintToString(messages(device.Get()));
  }
}

TEST_P(DebugLayer, CopyListsRunNoPrograms) {
  // As on D3D12, a COPY list cannot run compute work: refused with or
  // without the debug layer, before the driver sees it.
  ComPtr<ID3D12CommandAllocator> allocator;
  ComPtr<ID3D12GraphicsCommandList10> list;
  ASSERT_EQ(device->CreateCommandAllocator(D3D12_COMMAND_LIST_TYPE_COPY, IID_PPV_ARGS(&allocator)),
            S_OK);
  ASSERT_EQ(device->CreateCommandList(0, D3D12_COMMAND_LIST_TYPE_COPY, allocator.Get(), nullptr,
                                      IID_PPV_ARGS(&list)),
            S_OK);
  int before = testDriverCounters()->dispatchGraphs.load();
  D3D12_SET_PROGRAM_DESC set = {};
  set.Type = D3D12_PROGRAM_TYPE_MLIR_PROGRAM;
  set.MlirProgram.ProgramIdentifier = programId;
  list->SetProgram(&set);
  EXPECT_EQ(list->Close(), E_INVALIDARG);
  EXPECT_TRUE(anyMessageContains(device.Get(), {"SetProgram", "COPY command list",
                                                "DIRECT and COMPUTE"}));
  ASSERT_EQ(list->Reset(allocator.Get(), nullptr), S_OK);
  auto b = goodBindings();
  D3D12_DISPATCH_GRAPH_DESC d = {};
  d.Mode = D3D12_DISPATCH_MODE_MLIR_PROGRAM;
  d.MlirProgramBindings = {3, b.data()};
  list->DispatchGraph(&d);
  EXPECT_EQ(list->Close(), E_INVALIDARG);
  EXPECT_TRUE(anyMessageContains(device.Get(), {"DispatchGraph", "COPY command list"}));
  EXPECT_EQ(testDriverCounters()->dispatchGraphs.load(), before);
  // Copies are what a COPY list is for.
  ASSERT_EQ(list->Reset(allocator.Get(), nullptr), S_OK);
  list->CopyBufferRegion(buffers[1].Get(), 0, buffers[0].Get(), 0, 64);
  EXPECT_EQ(list->Close(), S_OK);
}

TEST_P(DebugLayer, BufferBarriersCoverWholeBuffers) {
  D3D12_BUFFER_BARRIER bb = {D3D12_BARRIER_SYNC_COMPUTE_SHADING,
                             D3D12_BARRIER_SYNC_COMPUTE_SHADING,
                             D3D12_BARRIER_ACCESS_UNORDERED_ACCESS,
                             D3D12_BARRIER_ACCESS_UNORDERED_ACCESS,
                             buffers[0].Get(), 16, 32};
  D3D12_BARRIER_GROUP group = {D3D12_BARRIER_TYPE_BUFFER, 1, {}};
  group.pBufferBarriers = &bb;
  recorder->list->Barrier(1, &group);
  if (debug) {
    // D3D12: Offset must be 0 and Size UINT64_MAX (or the width).
    expectCaught({"Barrier: buffer barrier #0 of group #0", "[16, +32)",
                  "covers the whole buffer"});
  } else {
    // Without the debug layer it orders the whole buffer.
    EXPECT_EQ(recorder->list->Close(), S_OK);
  }
  for (uint64_t size : {UINT64_MAX, uint64_t(64)}) {
    ASSERT_EQ(recorder->list->Reset(recorder->allocator.Get(), nullptr), S_OK);
    bb.Offset = 0;
    bb.Size = size;
    recorder->list->Barrier(1, &group);
    EXPECT_EQ(recorder->list->Close(), S_OK);
  }
}

INSTANTIATE_TEST_SUITE_P(WithAndWithout, DebugLayer, ::testing::Values(true, false),
                         [](const auto &info) { return info.param ? "Debug" : "NoDebug"; });

} // namespace
