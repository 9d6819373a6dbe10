//===- SpecSampleTest.cpp - The spec's usage examples, as written ---------===//
//
// Runs the "Usage Examples" of the MLIR-programs spec against the API layer,
// on the TEST DOUBLE driver (test_driver.cpp), whose programs copy bind
// point 0 into the last bind point. The CPU driver runs the same code
// paths in CpuDriverTest.cpp once its JIT is linked.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include <algorithm>
#include <array>
#include <numeric>

using namespace cgc;
using namespace cgc::test;

namespace {

CgcTestDriverCounters *counters() { return testDriverCounters(); }

std::vector<BindPoint> fiveBindPoints() {
  return {bindPoint("in", BindPointKind::Argument, 64),
          bindPoint("w", BindPointKind::Constant, 36),
          bindPoint("b", BindPointKind::Constant, 4),
          bindPoint("scratch", BindPointKind::Scratch, 64),
          bindPoint("out", BindPointKind::Output, 64)};
}

class SpecSample : public ::testing::Test {
protected:
  void SetUp() override {
    device = makeDevice(testDriverPath());
    ASSERT_TRUE(device);
  }
  ComPtr<ID3D12Device14> device;
};

TEST_F(SpecSample, CheckingSupportForMlirPrograms) {
  D3D12_FEATURE_DATA_D3D12_OPTIONS_MLIR options = {};
  bool usable = false;
  if (SUCCEEDED(device->CheckFeatureSupport(D3D12_FEATURE_D3D12_OPTIONS_MLIR, &options,
                                            sizeof(options))) &&
      options.MlirProgramsTier > D3D12_MLIR_PROGRAMS_TIER_NOT_SUPPORTED) {
    usable = true;
  }
  EXPECT_TRUE(usable);
  EXPECT_EQ(options.MlirProgramsTier, D3D12_MLIR_PROGRAMS_TIER_2_0);
  // A wrong size is rejected.
  EXPECT_EQ(device->CheckFeatureSupport(D3D12_FEATURE_D3D12_OPTIONS_MLIR, &options, 1),
            E_INVALIDARG);
}

TEST_F(SpecSample, CheckingSupportForMlirInterfaces) {
  std::array<GUID, 5> mlirInterfacesRequested = {
      CGC_SUBGRAPH_PARTITION,
      CGC_SUBGRAPH_DECLARATION_REQUEST,
      CGC_SUBGRAPH_DECLARATION,
      CGC_SUBGRAPH_SPECIALIZATION_REQUEST,
      CGC_SUBGRAPH_SPECIALIZATION,
  };
  // The spec's listing uses std::array<bool>; the field is BOOL*.
  std::array<BOOL, mlirInterfacesRequested.size()> mlirInterfacesSupported = {};

  D3D12_FEATURE_DATA_MLIR_INTERFACE_SUPPORT support = {};
  support.NumMlirInterfaces = mlirInterfacesRequested.size();
  support.pMlirInterfacesRequested = mlirInterfacesRequested.data();
  support.pMlirInterfacesSupported = mlirInterfacesSupported.data();

  bool allSupported = false;
  if (SUCCEEDED(device->CheckFeatureSupport(D3D12_FEATURE_MLIR_INTERFACE_SUPPORT, &support,
                                            sizeof(support))) &&
      std::all_of(mlirInterfacesSupported.begin(), mlirInterfacesSupported.end(),
                  [](BOOL b) { return b; })) {
    allSupported = true;
  }
  // The double supports the partition and declaration interfaces only.
  EXPECT_FALSE(allSupported);
  EXPECT_EQ(std::vector<BOOL>(mlirInterfacesSupported.begin(), mlirInterfacesSupported.end()),
            (std::vector<BOOL>{TRUE, TRUE, TRUE, FALSE, FALSE}));
}

TEST_F(SpecSample, UnknownInterfaceStopsAtTheRuntime) {
  const GUID unknown = {0x12345678, 0x1234, 0x1234, {1, 2, 3, 4, 5, 6, 7, 8}};
  int before = counters()->exchanges.load();
  SIZE_T size = 0;
  D3D12_FEATURE_DATA_MLIR_EXCHANGE exchange = {unknown, nullptr, 0, nullptr, &size};
  EXPECT_EQ(device->CheckFeatureSupport(D3D12_FEATURE_MLIR_EXCHANGE, &exchange, sizeof(exchange)),
            E_INVALIDARG);
  EXPECT_EQ(counters()->exchanges.load(), before);
  EXPECT_TRUE(anyMessageContains(device.Get(), {"{12345678-1234-1234-0102-030405060708}"}));

  // Interface support is answered per interface: the unknown one is
  // unsupported without asking the driver (FeatureSupportTest.cpp mixes it
  // with known ones).
  int queries = counters()->interfaceQueries.load();
  BOOL supported = TRUE;
  D3D12_FEATURE_DATA_MLIR_INTERFACE_SUPPORT support = {1, &unknown, &supported};
  EXPECT_EQ(device->CheckFeatureSupport(D3D12_FEATURE_MLIR_INTERFACE_SUPPORT, &support,
                                        sizeof(support)),
            S_OK);
  EXPECT_FALSE(supported);
  EXPECT_EQ(counters()->interfaceQueries.load(), queries);
  supported = TRUE;

  // Developer mode passes it on: the driver answers.
  auto dev = makeDevice(testDriverPath(), CGC_D3D12_DEVICE_FLAG_DEVELOPER_MODE);
  EXPECT_EQ(dev->CheckFeatureSupport(D3D12_FEATURE_MLIR_EXCHANGE, &exchange, sizeof(exchange)),
            DXGI_ERROR_UNSUPPORTED);
  EXPECT_EQ(counters()->exchanges.load(), before + 1);
  EXPECT_EQ(dev->CheckFeatureSupport(D3D12_FEATURE_MLIR_INTERFACE_SUPPORT, &support,
                                     sizeof(support)),
            S_OK);
  EXPECT_FALSE(supported);
  EXPECT_EQ(counters()->interfaceQueries.load(), queries + 1);
}

TEST_F(SpecSample, QueryingSubgraphTransformations) {
  SIZE_T outputBufferSize = 0;

  D3D12_FEATURE_DATA_MLIR_EXCHANGE exchange = {
      .MlirInterface = CGC_SUBGRAPH_DECLARATION_REQUEST,
      .pInputData = nullptr,
      .InputDataSizeInBytes = 0,
      .pOutputData = nullptr,
      .OutputDataSizeInBytes = &outputBufferSize};

  // Determine size of output buffer.
  ASSERT_TRUE(SUCCEEDED(
      device->CheckFeatureSupport(D3D12_FEATURE_MLIR_EXCHANGE, &exchange, sizeof(exchange))));
  ASSERT_GT(outputBufferSize, kContainerHeaderSize);

  // Allocate space for output from driver.
  std::vector<std::byte> buffer(outputBufferSize);
  exchange.pOutputData = buffer.data();

  // Fetch output from driver.
  ASSERT_EQ(device->CheckFeatureSupport(D3D12_FEATURE_MLIR_EXCHANGE, &exchange, sizeof(exchange)),
            S_OK);
  ContainerReader reader;
  std::string error;
  ASSERT_TRUE(reader.open(buffer.data(), buffer.size(), error)) << error;
  ASSERT_EQ(reader.find(parts::kResponse).size(), 1u);
  EXPECT_EQ(reader.find(parts::kResponse)[0]->data.str(), "{\"input_bytes\": 0}");

  // A null size pointer is rejected by the runtime.
  exchange.OutputDataSizeInBytes = nullptr;
  EXPECT_EQ(device->CheckFeatureSupport(D3D12_FEATURE_MLIR_EXCHANGE, &exchange, sizeof(exchange)),
            E_INVALIDARG);
}

TEST_F(SpecSample, SpecializingASubgraphTransformationIsUnsupportedByTheDouble) {
  std::vector<uint8_t> subgraphMLIR = partitionContainer({}, interfaces::kSubgraphSpecializationRequest);
  SIZE_T outputBufferSize = 0;
  D3D12_FEATURE_DATA_MLIR_EXCHANGE exchange = {
      .MlirInterface = CGC_SUBGRAPH_SPECIALIZATION_REQUEST,
      .pInputData = subgraphMLIR.data(),
      .InputDataSizeInBytes = subgraphMLIR.size(),
      .pOutputData = nullptr,
      .OutputDataSizeInBytes = &outputBufferSize};
  EXPECT_EQ(device->CheckFeatureSupport(D3D12_FEATURE_MLIR_EXCHANGE, &exchange, sizeof(exchange)),
            DXGI_ERROR_UNSUPPORTED);
}

/// The spec's "Compiling an MLIR program" and "Executing an MLIR program".
TEST_F(SpecSample, CompilingAndExecutingAnMlirProgram) {
  // Get one partition from output of CGC compiler.
  std::vector<uint8_t> partitionBytecode = partitionContainer(fiveBindPoints());

  // Executable-type state object with a single MLIR program subobject.
  CD3DX12_STATE_OBJECT_DESC stateObjectDesc(D3D12_STATE_OBJECT_TYPE_EXECUTABLE);
  auto mlGraph = stateObjectDesc.CreateSubobject<CD3DX12_MLIR_PROGRAM_SUBOBJECT>();
  mlGraph->SetProgramName(L"partition0");
  mlGraph->SetBytecode(partitionBytecode.data(), partitionBytecode.size());

  // Driver compiles MLIR program partition on current thread.
  ComPtr<ID3D12StateObject> stateObject;
  ASSERT_EQ(device->CreateStateObject(&(*stateObjectDesc), IID_PPV_ARGS(&stateObject)), S_OK);
  // The runtime keeps no pointer into the bytecode: the client may free it.
  std::fill(partitionBytecode.begin(), partitionBytecode.end(), 0xCD);

  // Each bind point is bound to its own buffer resource in this example.
  std::array<ComPtr<ID3D12Resource>, 5> buffers;
  std::array<ID3D12Resource *, 5> resources;
  for (size_t i = 0; i < 5; ++i) {
    buffers[i] = makeBuffer(device.Get(), 256);
    resources[i] = buffers[i].Get();
  }
  float *in = mapped<float>(resources[0]);
  for (int i = 0; i < 16; ++i)
    in[i] = float(i) * 1.5f - 3.0f;

  Recorder recorder(device.Get());
  auto &commandList = recorder.list;

  // Get program identifier for the MLIR program in the state object.
  ComPtr<ID3D12StateObjectProperties1> stateObjectProperties;
  ASSERT_EQ(stateObject->QueryInterface(IID_PPV_ARGS(&stateObjectProperties)), S_OK);
  auto programId = stateObjectProperties->GetProgramIdentifier(L"partition0");
  EXPECT_NE(programId.OpaqueData[1], 0u);

  // Set active program to MLIR program.
  D3D12_SET_PROGRAM_DESC programDesc = {};
  programDesc.Type = D3D12_PROGRAM_TYPE_MLIR_PROGRAM;
  programDesc.MlirProgram.ProgramIdentifier = programId;
  programDesc.MlirProgram.Flags = D3D12_SET_MLIR_PROGRAM_FLAG_NONE;
  commandList->SetProgram(&programDesc);

  // Associate bind points with GPUVAs.
  std::array<D3D12_MLIR_PROGRAM_BINDING, 5> bindings = {};
  for (uint32_t i = 0; i < bindings.size(); i++) {
    bindings[i].BindPointIndex = i;
    bindings[i].Type = D3D12_MLIR_PROGRAM_BINDING_TYPE_GPU;
    bindings[i].GpuBinding = resources[i]->GetGPUVirtualAddress();
  }

  D3D12_DISPATCH_GRAPH_DESC dispatchDesc = {};
  dispatchDesc.Mode = D3D12_DISPATCH_MODE_MLIR_PROGRAM;
  dispatchDesc.MlirProgramBindings.NumBindings = bindings.size();
  dispatchDesc.MlirProgramBindings.pBindings = bindings.data();

  // Dispatch the MLIR program partition.
  commandList->DispatchGraph(&dispatchDesc);
  // The bindings array is not referenced after the call.
  std::fill(reinterpret_cast<uint8_t *>(bindings.data()),
            reinterpret_cast<uint8_t *>(bindings.data() + bindings.size()), 0xEE);
  ASSERT_EQ(commandList->Close(), S_OK);

  Queue queue(device.Get());
  queue.run({commandList.Get()});
  const float *out = mapped<float>(resources[4]);
  for (int i = 0; i < 16; ++i)
    EXPECT_EQ(out[i], in[i]) << i;
}

TEST_F(SpecSample, CpuBindingDataIsCopiedAtRecordTime) {
  auto so = [&] {
    auto bytes = partitionContainer({bindPoint("params", BindPointKind::Argument, 16),
                                     bindPoint("out", BindPointKind::Output, 16)});
    CD3DX12_STATE_OBJECT_DESC desc(D3D12_STATE_OBJECT_TYPE_EXECUTABLE);
    auto p = desc.CreateSubobject<CD3DX12_MLIR_PROGRAM_SUBOBJECT>();
    p->SetProgramName(L"p");
    p->SetBytecode(bytes.data(), bytes.size());
    ComPtr<ID3D12StateObject> object;
    EXPECT_EQ(device->CreateStateObject(desc, IID_PPV_ARGS(&object)), S_OK);
    return object;
  }();
  ComPtr<ID3D12StateObjectProperties1> props;
  ASSERT_EQ(so.As(&props), S_OK);
  auto out = makeBuffer(device.Get(), 16);
  Recorder r(device.Get());
  D3D12_SET_PROGRAM_DESC set = {};
  set.Type = D3D12_PROGRAM_TYPE_MLIR_PROGRAM;
  set.MlirProgram.ProgramIdentifier = props->GetProgramIdentifier(L"p");
  r.list->SetProgram(&set);
  uint32_t params[4] = {11, 22, 33, 44};
  D3D12_MLIR_PROGRAM_BINDING b[2] = {};
  b[0].BindPointIndex = 0;
  b[0].Type = D3D12_MLIR_PROGRAM_BINDING_TYPE_CPU;
  b[0].CpuBinding = {params, sizeof(params)};
  b[1].BindPointIndex = 1;
  b[1].GpuBinding = D3D12_GPU_VIRTUAL_ADDRESS_RANGE{out->GetGPUVirtualAddress(), 16};
  D3D12_DISPATCH_GRAPH_DESC d = {};
  d.Mode = D3D12_DISPATCH_MODE_MLIR_PROGRAM;
  d.MlirProgramBindings = {2, b};
  r.list->DispatchGraph(&d);
  params[0] = 99; // after recording: must not be seen
  ASSERT_EQ(r.list->Close(), S_OK);
  Queue q(device.Get());
  q.run({r.list.Get()});
  const uint32_t *o = mapped<uint32_t>(out.Get());
  EXPECT_EQ(o[0], 11u);
  EXPECT_EQ(o[3], 44u);
}

TEST_F(SpecSample, StateObjectValidation) {
  auto create = [&](const std::vector<uint8_t> &bytes, LPCWSTR name) {
    CD3DX12_STATE_OBJECT_DESC desc(D3D12_STATE_OBJECT_TYPE_EXECUTABLE);
    auto p = desc.CreateSubobject<CD3DX12_MLIR_PROGRAM_SUBOBJECT>();
    p->SetProgramName(name);
    p->SetBytecode(bytes.data(), bytes.size());
    ComPtr<ID3D12StateObject> object;
    return device->CreateStateObject(desc, IID_PPV_ARGS(&object));
  };
  auto good = partitionContainer(fiveBindPoints());
  EXPECT_EQ(create(good, L"ok"), S_OK);
  int before = counters()->stateObjects.load();
  // Malformed container: a flipped byte breaks the digest.
  auto corrupt = good;
  corrupt.back() ^= 0xFF;
  EXPECT_EQ(create(corrupt, L"x"), E_INVALIDARG);
  EXPECT_TRUE(anyMessageContains(device.Get(), {"'x'", "not a valid DX container"}));
  // Truncated.
  EXPECT_EQ(create(std::vector<uint8_t>(good.begin(), good.begin() + 20), L"t"), E_INVALIDARG);
  // Unknown interface GUID.
  Guid unknown = *Guid::parse("{00000000-1111-2222-3333-444444444444}");
  EXPECT_EQ(create(partitionContainer(fiveBindPoints(), unknown), L"u"), E_INVALIDARG);
  EXPECT_TRUE(anyMessageContains(device.Get(), {"{00000000-1111-2222-3333-444444444444}"}));
  // No bind-point part.
  ContainerWriter w;
  w.addMLIRPart(interfaces::kSubgraphPartition, "x");
  EXPECT_EQ(create(w.finish(), L"n"), E_INVALIDARG);
  EXPECT_TRUE(anyMessageContains(device.Get(), {"'CGBP'"}));
  // No name, null bytecode.
  EXPECT_EQ(create(good, L""), E_INVALIDARG);
  EXPECT_EQ(create({}, L"e"), E_INVALIDARG);
  // None of these reached the driver.
  EXPECT_EQ(counters()->stateObjects.load(), before);

  // Wrong state object types.
  D3D12_STATE_OBJECT_DESC collection = {D3D12_STATE_OBJECT_TYPE_COLLECTION, 0, nullptr};
  ComPtr<ID3D12StateObject> o;
  EXPECT_EQ(device->CreateStateObject(&collection, IID_PPV_ARGS(&o)), E_NOTIMPL);
  D3D12_STATE_OBJECT_DESC empty = {D3D12_STATE_OBJECT_TYPE_EXECUTABLE, 0, nullptr};
  EXPECT_EQ(device->CreateStateObject(&empty, IID_PPV_ARGS(&o)), E_INVALIDARG);
  EXPECT_EQ(device->CreateStateObject(nullptr, IID_PPV_ARGS(&o)), E_INVALIDARG);
  // Two programs with one name.
  D3D12_MLIR_PROGRAM_DESC p = {L"same", good.data(), good.size()};
  D3D12_STATE_SUBOBJECT subs[2] = {{D3D12_STATE_SUBOBJECT_TYPE_MLIR_PROGRAM, &p},
                                   {D3D12_STATE_SUBOBJECT_TYPE_MLIR_PROGRAM, &p}};
  D3D12_STATE_OBJECT_DESC twice = {D3D12_STATE_OBJECT_TYPE_EXECUTABLE, 2, subs};
  EXPECT_EQ(device->CreateStateObject(&twice, IID_PPV_ARGS(&o)), E_INVALIDARG);
  // Unknown name: a null identifier.
  D3D12_STATE_SUBOBJECT one = {D3D12_STATE_SUBOBJECT_TYPE_MLIR_PROGRAM, &p};
  D3D12_STATE_OBJECT_DESC single = {D3D12_STATE_OBJECT_TYPE_EXECUTABLE, 1, &one};
  ASSERT_EQ(device->CreateStateObject(&single, IID_PPV_ARGS(&o)), S_OK);
  ComPtr<ID3D12StateObjectProperties1> props;
  ASSERT_EQ(o.As(&props), S_OK);
  D3D12_PROGRAM_IDENTIFIER none = props->GetProgramIdentifier(L"nope");
  EXPECT_EQ(none.OpaqueData[0] | none.OpaqueData[1] | none.OpaqueData[2] | none.OpaqueData[3], 0u);
}

TEST_F(SpecSample, AddToStateObjectFollowsTheRules) {
  auto bytes = partitionContainer(fiveBindPoints());
  D3D12_STATE_OBJECT_CONFIG config = {D3D12_STATE_OBJECT_FLAG_ALLOW_STATE_OBJECT_ADDITIONS};
  auto desc = [&](LPCWSTR name, bool allow, D3D12_MLIR_PROGRAM_DESC &p,
                  std::array<D3D12_STATE_SUBOBJECT, 2> &subs) {
    p = {name, bytes.data(), bytes.size()};
    subs[0] = {D3D12_STATE_SUBOBJECT_TYPE_MLIR_PROGRAM, &p};
    subs[1] = {D3D12_STATE_SUBOBJECT_TYPE_STATE_OBJECT_CONFIG, &config};
    return D3D12_STATE_OBJECT_DESC{D3D12_STATE_OBJECT_TYPE_EXECUTABLE, allow ? 2u : 1u, subs.data()};
  };
  D3D12_MLIR_PROGRAM_DESC pa, pb, pc, pd;
  std::array<D3D12_STATE_SUBOBJECT, 2> sa, sb, sc, sd;
  auto da = desc(L"A", true, pa, sa);
  ComPtr<ID3D12StateObject> s0, s1, s2, closed;
  ASSERT_EQ(device->CreateStateObject(&da, IID_PPV_ARGS(&s0)), S_OK);
  ComPtr<ID3D12StateObjectProperties1> p0, p1;
  ASSERT_EQ(s0.As(&p0), S_OK);
  D3D12_PROGRAM_IDENTIFIER idA = p0->GetProgramIdentifier(L"A");

  // The addition must opt in too.
  auto dbNoOpt = desc(L"B", false, pb, sb);
  EXPECT_EQ(device->AddToStateObject(&dbNoOpt, s0.Get(), IID_PPV_ARGS(&s1)), E_INVALIDARG);
  // A name that exists already.
  auto dDup = desc(L"A", true, pc, sc);
  EXPECT_EQ(device->AddToStateObject(&dDup, s0.Get(), IID_PPV_ARGS(&s1)), E_INVALIDARG);
  // A valid addition: S1 = {A, B}, A's identifier unchanged.
  auto db = desc(L"B", true, pb, sb);
  ASSERT_EQ(device->AddToStateObject(&db, s0.Get(), IID_PPV_ARGS(&s1)), S_OK);
  ASSERT_EQ(s1.As(&p1), S_OK);
  D3D12_PROGRAM_IDENTIFIER idA1 = p1->GetProgramIdentifier(L"A");
  EXPECT_EQ(std::memcmp(&idA, &idA1, sizeof(idA)), 0);
  D3D12_PROGRAM_IDENTIFIER idB = p1->GetProgramIdentifier(L"B");
  EXPECT_NE(std::memcmp(&idA, &idB, sizeof(idA)), 0);
  // Linear history: S0 may not grow again.
  auto dc = desc(L"C", true, pc, sc);
  EXPECT_EQ(device->AddToStateObject(&dc, s0.Get(), IID_PPV_ARGS(&s2)), E_INVALIDARG);
  EXPECT_TRUE(anyMessageContains(device.Get(), {"most recent"}));
  EXPECT_EQ(device->AddToStateObject(&dc, s1.Get(), IID_PPV_ARGS(&s2)), S_OK);
  // A state object created without the flag cannot grow.
  auto dd = desc(L"D", false, pd, sd);
  ASSERT_EQ(device->CreateStateObject(&dd, IID_PPV_ARGS(&closed)), S_OK);
  EXPECT_EQ(device->AddToStateObject(&dc, closed.Get(), IID_PPV_ARGS(&s2)), E_INVALIDARG);
}

} // namespace
