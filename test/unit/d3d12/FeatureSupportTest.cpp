//===- FeatureSupportTest.cpp - Exchanges, interface support and tiers ----===//
//
// On the TEST DOUBLE driver (test_driver.cpp) and its TEST-ONLY knobs: what
// the API layer answers, whatever the driver does, as real D3D12 would.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include <algorithm>
#include <array>

using namespace cgc;
using namespace cgc::test;

namespace {

/// Sets the double's knobs for one test and restores them after.
class FeatureSupport : public ::testing::Test {
protected:
  void SetUp() override {
    device = makeDevice(testDriverPath());
    ASSERT_TRUE(device);
    knobs = testDriverKnobs();
    ASSERT_NE(knobs, nullptr);
  }
  void TearDown() override {
    if (!knobs)
      return;
    knobs->tier.store(D3D12_MLIR_PROGRAMS_TIER_2_0);
    knobs->sloppyExchange.store(false);
  }
  /// A device created while the double reports `tier`.
  ComPtr<ID3D12Device14> deviceWithTier(int tier, UINT flags = 0) {
    knobs->tier.store(tier);
    auto d = makeDevice(testDriverPath(), flags);
    knobs->tier.store(D3D12_MLIR_PROGRAMS_TIER_2_0);
    return d;
  }

  /// Calls MLIR_EXCHANGE(CGC_SUBGRAPH_DECLARATION_REQUEST) with `out`.
  HRESULT exchange(ID3D12Device *d, void *out, SIZE_T &size) {
    D3D12_FEATURE_DATA_MLIR_EXCHANGE ex = {CGC_SUBGRAPH_DECLARATION_REQUEST, nullptr, 0, out,
                                           &size};
    return d->CheckFeatureSupport(D3D12_FEATURE_MLIR_EXCHANGE, &ex, sizeof(ex));
  }

  ComPtr<ID3D12Device14> device;
  CgcTestDriverKnobs *knobs = nullptr;
};

std::vector<uint8_t> twoBindPointContainer() {
  return partitionContainer({bindPoint("in", BindPointKind::Argument, 16),
                             bindPoint("out", BindPointKind::Output, 16)});
}

HRESULT createProgram(ID3D12Device14 *device, const std::vector<uint8_t> &bytes,
                      ComPtr<ID3D12StateObject> &so) {
  D3D12_MLIR_PROGRAM_DESC p = {L"partition0", bytes.data(), bytes.size()};
  D3D12_STATE_SUBOBJECT sub = {D3D12_STATE_SUBOBJECT_TYPE_MLIR_PROGRAM, &p};
  D3D12_STATE_OBJECT_DESC desc = {D3D12_STATE_OBJECT_TYPE_EXECUTABLE, 1, &sub};
  return device->CreateStateObject(&desc, IID_PPV_ARGS(&so));
}

TEST_F(FeatureSupport, ExchangeIntoATooSmallBufferIsNotSufficientBuffer) {
  // The size query (null pOutputData), as the spec's sample does it.
  SIZE_T size = 0;
  ASSERT_EQ(exchange(device.Get(), nullptr, size), S_OK);
  ASSERT_GT(size, kContainerHeaderSize);
  const SIZE_T needed = size;
  // One byte short: the size, E_NOT_SUFFICIENT_BUFFER, nothing written.
  std::vector<uint8_t> small(needed - 1, 0xAB);
  size = small.size();
  EXPECT_EQ(exchange(device.Get(), small.data(), size), E_NOT_SUFFICIENT_BUFFER);
  EXPECT_EQ(E_NOT_SUFFICIENT_BUFFER, HRESULT(0x8007007A));
  EXPECT_EQ(size, needed);
  EXPECT_TRUE(std::all_of(small.begin(), small.end(), [](uint8_t b) { return b == 0xAB; }));
  // Large enough (larger too): the answer and its size.
  std::vector<uint8_t> big(needed + 8);
  size = big.size();
  EXPECT_EQ(exchange(device.Get(), big.data(), size), S_OK);
  EXPECT_EQ(size, needed);
  ContainerReader reader;
  std::string error;
  EXPECT_TRUE(reader.open(big.data(), size, error)) << error;
}

TEST_F(FeatureSupport, ASloppyDriverCannotTurnATooSmallBufferIntoSuccess) {
  // The double answers a short buffer with S_OK and the size: the runtime
  // still reports it.
  knobs->sloppyExchange.store(true);
  SIZE_T size = 0;
  ASSERT_EQ(exchange(device.Get(), nullptr, size), S_OK);
  const SIZE_T needed = size;
  std::vector<uint8_t> small(needed / 2);
  size = small.size();
  EXPECT_EQ(exchange(device.Get(), small.data(), size), E_NOT_SUFFICIENT_BUFFER);
  EXPECT_EQ(size, needed);
  EXPECT_TRUE(anyMessageContains(device.Get(), {"E_NOT_SUFFICIENT_BUFFER", "needs"}));
}

TEST_F(FeatureSupport, InterfaceSupportIsAnsweredPerInterface) {
  const GUID unknown = {0x12345678, 0x1234, 0x1234, {1, 2, 3, 4, 5, 6, 7, 8}};
  std::array<GUID, 4> requested = {CGC_SUBGRAPH_PARTITION, unknown, CGC_SUBGRAPH_DECLARATION,
                                   CGC_SUBGRAPH_SPECIALIZATION};
  std::array<BOOL, 4> supported = {FALSE, TRUE, FALSE, TRUE};
  D3D12_FEATURE_DATA_MLIR_INTERFACE_SUPPORT support = {UINT(requested.size()), requested.data(),
                                                       supported.data()};
  int queries = testDriverCounters()->interfaceQueries.load();
  ASSERT_EQ(device->CheckFeatureSupport(D3D12_FEATURE_MLIR_INTERFACE_SUPPORT, &support,
                                        sizeof(support)),
            S_OK);
  // The unknown GUID is FALSE in its slot; the known ones are the driver's
  // answers (the double supports the partition and declaration interfaces).
  EXPECT_EQ(std::vector<BOOL>(supported.begin(), supported.end()),
            (std::vector<BOOL>{TRUE, FALSE, TRUE, FALSE}));
  EXPECT_EQ(testDriverCounters()->interfaceQueries.load(), queries + 1);
}

TEST_F(FeatureSupport, TierOneRunsGpuBindingsAndRefusesCpuBindings) {
  for (bool debug : {true, false}) {
    SCOPED_TRACE(debug ? "debug layer" : "no debug layer");
    auto d = deviceWithTier(D3D12_MLIR_PROGRAMS_TIER_1_0,
                            debug ? CGC_D3D12_DEVICE_FLAG_DEBUG : 0);
    D3D12_FEATURE_DATA_D3D12_OPTIONS_MLIR options = {};
    ASSERT_EQ(d->CheckFeatureSupport(D3D12_FEATURE_D3D12_OPTIONS_MLIR, &options, sizeof(options)),
              S_OK);
    EXPECT_EQ(options.MlirProgramsTier, D3D12_MLIR_PROGRAMS_TIER_1_0);
    ComPtr<ID3D12StateObject> so;
    ASSERT_EQ(createProgram(d.Get(), twoBindPointContainer(), so), S_OK);
    ComPtr<ID3D12StateObjectProperties1> props;
    ASSERT_EQ(so.As(&props), S_OK);
    D3D12_SET_PROGRAM_DESC set = {};
    set.Type = D3D12_PROGRAM_TYPE_MLIR_PROGRAM;
    set.MlirProgram.ProgramIdentifier = props->GetProgramIdentifier(L"partition0");
    auto in = makeBuffer(d.Get(), 16), out = makeBuffer(d.Get(), 16);
    mapped<uint32_t>(in.Get())[3] = 0xFEED;
    std::array<D3D12_MLIR_PROGRAM_BINDING, 2> b = {};
    for (UINT i = 0; i < 2; ++i) {
      b[i].BindPointIndex = i;
      b[i].Type = D3D12_MLIR_PROGRAM_BINDING_TYPE_GPU;
      b[i].GpuBinding = (i ? out : in)->GetGPUVirtualAddress();
    }
    D3D12_DISPATCH_GRAPH_DESC dispatch = {};
    dispatch.Mode = D3D12_DISPATCH_MODE_MLIR_PROGRAM;
    dispatch.MlirProgramBindings = {2, b.data()};

    // GPU bindings: recorded and run (the double copies bind point 0 to 1).
    Recorder r(d.Get());
    r.list->SetProgram(&set);
    r.list->DispatchGraph(&dispatch);
    ASSERT_EQ(r.list->Close(), S_OK);
    Queue q(d.Get());
    q.run({r.list.Get()});
    EXPECT_EQ(mapped<uint32_t>(out.Get())[3], 0xFEEDu);

    // A CPU binding: refused, naming the binding and the tier.
    uint8_t data[16] = {};
    b[0].Type = D3D12_MLIR_PROGRAM_BINDING_TYPE_CPU;
    b[0].CpuBinding = {data, sizeof(data)};
    int before = testDriverCounters()->dispatchGraphs.load();
    ASSERT_EQ(r.list->Reset(r.allocator.Get(), nullptr), S_OK);
    r.list->SetProgram(&set);
    r.list->DispatchGraph(&dispatch);
    EXPECT_EQ(r.list->Close(), E_INVALIDARG);
    EXPECT_EQ(testDriverCounters()->dispatchGraphs.load(), before);
    EXPECT_TRUE(anyMessageContains(d.Get(), {"binding #0 (bind point 0)", "CPU binding",
                                             "D3D12_MLIR_PROGRAMS_TIER_2_0", "tier 1.0"}))
        << ::testing::PrintToString(messages(d.Get()));
  }
}

TEST_F(FeatureSupport, ADeviceWithoutMlirProgramsCreatesNone) {
  auto d = deviceWithTier(D3D12_MLIR_PROGRAMS_TIER_NOT_SUPPORTED);
  D3D12_FEATURE_DATA_D3D12_OPTIONS_MLIR options = {};
  ASSERT_EQ(d->CheckFeatureSupport(D3D12_FEATURE_D3D12_OPTIONS_MLIR, &options, sizeof(options)),
            S_OK);
  EXPECT_EQ(options.MlirProgramsTier, D3D12_MLIR_PROGRAMS_TIER_NOT_SUPPORTED);

  // No state object with an MLIR program, before the driver is asked.
  int stateObjects = testDriverCounters()->stateObjects.load();
  ComPtr<ID3D12StateObject> so;
  EXPECT_EQ(createProgram(d.Get(), twoBindPointContainer(), so), DXGI_ERROR_UNSUPPORTED);
  EXPECT_EQ(so, nullptr);
  EXPECT_EQ(testDriverCounters()->stateObjects.load(), stateObjects);
  EXPECT_TRUE(anyMessageContains(d.Get(), {"CreateStateObject", "'partition0'",
                                           "D3D12_MLIR_PROGRAMS_TIER_NOT_SUPPORTED"}));
  EXPECT_NE(std::string(CGCD3D12GetLastError()).find("TIER_NOT_SUPPORTED"), std::string::npos);

  // Exchanges are unsupported; every interface is unsupported.
  int exchanges = testDriverCounters()->exchanges.load();
  SIZE_T size = 0;
  EXPECT_EQ(exchange(d.Get(), nullptr, size), DXGI_ERROR_UNSUPPORTED);
  EXPECT_EQ(testDriverCounters()->exchanges.load(), exchanges);
  std::array<GUID, 2> requested = {CGC_SUBGRAPH_PARTITION, CGC_SUBGRAPH_DECLARATION};
  std::array<BOOL, 2> supported = {TRUE, TRUE};
  D3D12_FEATURE_DATA_MLIR_INTERFACE_SUPPORT support = {2, requested.data(), supported.data()};
  EXPECT_EQ(d->CheckFeatureSupport(D3D12_FEATURE_MLIR_INTERFACE_SUPPORT, &support,
                                   sizeof(support)),
            S_OK);
  EXPECT_FALSE(supported[0]);
  EXPECT_FALSE(supported[1]);

  // SetProgram has nothing to set.
  Recorder r(d.Get());
  D3D12_SET_PROGRAM_DESC set = {};
  set.Type = D3D12_PROGRAM_TYPE_MLIR_PROGRAM;
  r.list->SetProgram(&set);
  EXPECT_EQ(r.list->Close(), DXGI_ERROR_UNSUPPORTED);

  // The fixture's device, made before the knob changed, still has tier 2.0.
  EXPECT_EQ(createProgram(device.Get(), twoBindPointContainer(), so), S_OK);
}

} // namespace
