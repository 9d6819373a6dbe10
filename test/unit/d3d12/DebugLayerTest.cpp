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

INSTANTIATE_TEST_SUITE_P(WithAndWithout, DebugLayer, ::testing::Values(true, false),
                         [](const auto &info) { return info.param ? "Debug" : "NoDebug"; });

} // namespace
