//===- PrecompiledProgramTest.cpp - Cached blobs of MLIR programs ---------===//
//
// The CPU driver behind the D3D12 layer, given precompiled programs
// (D3D12_CACHED_MLIR_PROGRAM_CGC subobjects; cgc/precompiled_program.h):
//
// - a blob whose key matches is used and nothing is compiled: the program is
//   created from bytes that are not even valid MLIR, runs, and neither the
//   JIT module nor libMLIR is mapped into this process (a runtime-only test
//   binary: it links no compiler);
// - without a JIT module, the tier says so and only matching blobs work;
// - a blob for another compiler, other bytecode or another key format is a
//   reported miss: the bytecode is compiled;
// - a malformed blob, or one that matches but is corrupt, fails the creation
//   with a message naming the problem;
// - the API's rules for the subobject.
//
// The first test's checks run in a process of their own (a gtest death
// test), so they hold in any test order.
//
//===----------------------------------------------------------------------===//

#include "cgc/precompiled_program.h"

#include "TestUtil.h"
#include "cpu_compiler_identity.h"

#include <cstdlib>
#include <fstream>
#include <iterator>

using namespace cgc;
using namespace cgc::test;

namespace {

#define REQUIRE_KERNELS()                                                                        \
  if (!CGC_CPU_HAVE_KERNELS)                                                                   \
  GTEST_SKIP() << "the kernel library had no kernels when this was built"

/// Whether a mapping of this process's address space names `needle`.
bool isMapped(const std::string &needle) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line))
    if (line.find(needle) != std::string::npos)
      return true;
  return false;
}

constexpr int64_t kN = 64;
/// Not MLIR bytecode: whatever compiles it fails.
const std::string kJunkBytecode = "ML\xefR not a partition";

std::vector<BindPoint> addBindPoints() {
  return {bindPoint("a", BindPointKind::Argument, kN * 4),
          bindPoint("b", BindPointKind::Argument, kN * 4),
          bindPoint("out", BindPointKind::Output, kN * 4)};
}

Md5Digest digestOf(const std::string &bytecode) {
  return digestBytecode({reinterpret_cast<const uint8_t *>(bytecode.data()), bytecode.size()});
}

PrecompiledKey keyFor(const std::string &bytecode) {
  PrecompiledKey key;
  key.compiler = CGC_CPU_COMPILER_IDENTITY;
  key.partitionDigest = digestOf(bytecode);
  return key;
}

std::vector<uint8_t> blobOf(const PrecompiledKey &key, const std::string &kernelProgramJson) {
  return writePrecompiledProgram(key, {{parts::kKernelProgram, kernelProgramJson}});
}

/// A state object with one MLIR program (and its cached blob, if any).
struct Creation {
  HRESULT hr = E_FAIL;
  ComPtr<ID3D12StateObject> so;
  CGC_D3D12_CACHED_MLIR_PROGRAM_STATUS status = CGC_D3D12_CACHED_MLIR_PROGRAM_STATUS_NONE;
};

Creation create(ID3D12Device14 *device, const std::vector<uint8_t> &container,
                const std::vector<uint8_t> *blob) {
  D3D12_MLIR_PROGRAM_DESC program = {L"partition0", container.data(), container.size()};
  D3D12_CACHED_MLIR_PROGRAM_CGC cached = {L"partition0", {nullptr, 0}};
  if (blob)
    cached.CachedBlob = {blob->data(), blob->size()};
  D3D12_STATE_SUBOBJECT subs[] = {{D3D12_STATE_SUBOBJECT_TYPE_MLIR_PROGRAM, &program},
                                  {D3D12_STATE_SUBOBJECT_TYPE_CACHED_MLIR_PROGRAM_CGC, &cached}};
  D3D12_STATE_OBJECT_DESC desc = {D3D12_STATE_OBJECT_TYPE_EXECUTABLE, blob ? 2u : 1u, subs};
  Creation c;
  c.hr = device->CreateStateObject(&desc, IID_PPV_ARGS(&c.so));
  if (SUCCEEDED(c.hr))
    EXPECT_EQ(CGCD3D12GetCachedMlirProgramStatus(c.so.Get(), L"partition0", &c.status), S_OK)
        << CGCD3D12GetLastError();
  return c;
}

/// Runs the add program of `so` on random inputs and checks out = a + b.
void runAdd(ID3D12Device14 *device, ID3D12StateObject *so) {
  ComPtr<ID3D12StateObjectProperties1> properties;
  ASSERT_EQ(so->QueryInterface(IID_PPV_ARGS(&properties)), S_OK);
  auto a = makeBuffer(device, kN * 4), b = makeBuffer(device, kN * 4),
       out = makeBuffer(device, kN * 4);
  float *pa = mapped<float>(a.Get()), *pb = mapped<float>(b.Get());
  for (int64_t i = 0; i < kN; ++i) {
    pa[i] = float(i) * 0.5f;
    pb[i] = 3.0f - float(i);
  }
  Recorder r(device);
  D3D12_SET_PROGRAM_DESC set = {};
  set.Type = D3D12_PROGRAM_TYPE_MLIR_PROGRAM;
  set.MlirProgram.ProgramIdentifier = properties->GetProgramIdentifier(L"partition0");
  r.list->SetProgram(&set);
  D3D12_MLIR_PROGRAM_BINDING bindings[3] = {};
  ID3D12Resource *buffers[3] = {a.Get(), b.Get(), out.Get()};
  for (UINT i = 0; i < 3; ++i) {
    bindings[i].BindPointIndex = i;
    bindings[i].Type = D3D12_MLIR_PROGRAM_BINDING_TYPE_GPU;
    bindings[i].GpuBinding = buffers[i]->GetGPUVirtualAddress();
  }
  D3D12_DISPATCH_GRAPH_DESC dispatch = {};
  dispatch.Mode = D3D12_DISPATCH_MODE_MLIR_PROGRAM;
  dispatch.MlirProgramBindings = {3, bindings};
  r.list->DispatchGraph(&dispatch);
  ASSERT_EQ(r.list->Close(), S_OK) << ::testing::PrintToString(messages(device));
  Queue q(device);
  q.run({r.list.Get()});
  const float *po = mapped<float>(out.Get());
  for (int64_t i = 0; i < kN; ++i)
    ASSERT_EQ(po[i], pa[i] + pb[i]) << i;
}

/// The spec's Partition IR listing as bytecode (cgc-opt), or "" without it.
std::string specPartitionBytecode() {
  std::string opt = CGC_OPT_PATH;
  if (opt.empty())
    return "";
  std::string bc = ::testing::TempDir() + "/precompiled-partition.mlirbc";
  std::string cmd =
      opt + " " CGC_SOURCE_DIR "/examples/spec/partition-ir.mlir -emit-bytecode -o " + bc;
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::ifstream file(bc, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
}

std::vector<uint8_t> specContainer(const std::string &bytecode) {
  return partitionContainer({bindPoint("in", BindPointKind::Argument, 64, {1, 1, 4, 4}),
                             bindPoint("w1", BindPointKind::Constant, 36, {1, 1, 3, 3}),
                             bindPoint("b1", BindPointKind::Constant, 4, {1}),
                             bindPoint("w2", BindPointKind::Constant, 36, {1, 1, 3, 3}),
                             bindPoint("b2", BindPointKind::Constant, 4, {1}),
                             bindPoint("output", BindPointKind::Output, 64, {1, 1, 4, 4}),
                             bindPoint("scratch", BindPointKind::Scratch, 64, {1, 1, 4, 4})},
                            interfaces::kSubgraphPartition, bytecode);
}

/// The checks of AMatchingBlobIsUsedAndNothingIsCompiled, in a process where
/// nothing has loaded the JIT yet.
void checkMatchingBlobIsUsedAndNothingIsCompiled() {
  ASSERT_FALSE(isMapped("libcgc_driver_cpu_jit")) << "something loaded the JIT before";
  ASSERT_FALSE(isMapped("libMLIR")) << "this test binary must not link the compiler";
  auto device = makeDevice(nullptr, CGC_D3D12_DEVICE_FLAG_DEBUG);

  // MLIR programs run with or without the JIT (precompiled without it); the
  // exchanges' interfaces come from the JIT module being there, checked
  // without loading it.
  D3D12_FEATURE_DATA_D3D12_OPTIONS_MLIR options = {};
  ASSERT_EQ(device->CheckFeatureSupport(D3D12_FEATURE_D3D12_OPTIONS_MLIR, &options,
                                        sizeof(options)),
            S_OK);
  EXPECT_EQ(options.MlirProgramsTier, D3D12_MLIR_PROGRAMS_TIER_2_0);
  GUID requested[] = {CGC_SUBGRAPH_PARTITION, CGC_INPUT, CGC_SUBGRAPH_DECLARATION_REQUEST};
  BOOL supported[3] = {FALSE, TRUE, !CGC_HAVE_JIT_MODULE};
  D3D12_FEATURE_DATA_MLIR_INTERFACE_SUPPORT support = {3, requested, supported};
  ASSERT_EQ(device->CheckFeatureSupport(D3D12_FEATURE_MLIR_INTERFACE_SUPPORT, &support,
                                        sizeof(support)),
            S_OK);
  EXPECT_TRUE(supported[0]);
  EXPECT_FALSE(supported[1]);
  EXPECT_EQ(supported[2], BOOL(CGC_HAVE_JIT_MODULE));

  auto container = partitionContainer(addBindPoints(), interfaces::kSubgraphPartition,
                                      kJunkBytecode);
  auto blob = blobOf(keyFor(kJunkBytecode), serializeKernelProgram(addProgram(kN)));
  Creation c = create(device.Get(), container, &blob);
  ASSERT_EQ(c.hr, S_OK) << ::testing::PrintToString(messages(device.Get()));
  EXPECT_EQ(c.status, CGC_D3D12_CACHED_MLIR_PROGRAM_STATUS_HIT);
  runAdd(device.Get(), c.so.Get());
  EXPECT_FALSE(isMapped("libcgc_driver_cpu_jit"));
  EXPECT_FALSE(isMapped("libMLIR"));
  EXPECT_FALSE(isMapped("libLLVM"));

  // AddToStateObject takes cached blobs for the programs it adds.
  D3D12_STATE_OBJECT_CONFIG config = {D3D12_STATE_OBJECT_FLAG_ALLOW_STATE_OBJECT_ADDITIONS};
  D3D12_MLIR_PROGRAM_DESC program = {L"first", container.data(), container.size()};
  D3D12_CACHED_MLIR_PROGRAM_CGC cached = {L"first", {blob.data(), blob.size()}};
  D3D12_STATE_SUBOBJECT subs[] = {{D3D12_STATE_SUBOBJECT_TYPE_STATE_OBJECT_CONFIG, &config},
                                  {D3D12_STATE_SUBOBJECT_TYPE_MLIR_PROGRAM, &program},
                                  {D3D12_STATE_SUBOBJECT_TYPE_CACHED_MLIR_PROGRAM_CGC, &cached}};
  D3D12_STATE_OBJECT_DESC desc = {D3D12_STATE_OBJECT_TYPE_EXECUTABLE, 3, subs};
  ComPtr<ID3D12StateObject> first, grown;
  ASSERT_EQ(device->CreateStateObject(&desc, IID_PPV_ARGS(&first)), S_OK);
  program.ProgramName = cached.ProgramName = L"second";
  ASSERT_EQ(device->AddToStateObject(&desc, first.Get(), IID_PPV_ARGS(&grown)), S_OK)
      << ::testing::PrintToString(messages(device.Get()));
  for (LPCWSTR name : {L"first", L"second"}) {
    CGC_D3D12_CACHED_MLIR_PROGRAM_STATUS status = CGC_D3D12_CACHED_MLIR_PROGRAM_STATUS_NONE;
    EXPECT_EQ(CGCD3D12GetCachedMlirProgramStatus(grown.Get(), name, &status), S_OK);
    EXPECT_EQ(status, CGC_D3D12_CACHED_MLIR_PROGRAM_STATUS_HIT);
  }
  EXPECT_FALSE(isMapped("libMLIR"));
}

TEST(PrecompiledProgram, AMatchingBlobIsUsedAndNothingIsCompiled) {
  REQUIRE_KERNELS();
  // In a fresh process (gtest re-executes this binary for this test alone),
  // so that whatever order the tests run in, no other test has loaded the
  // JIT module before the checks that it is never mapped.
  ::testing::FLAGS_gtest_death_test_style = "threadsafe";
  EXPECT_EXIT(
      {
        checkMatchingBlobIsUsedAndNothingIsCompiled();
        std::exit(::testing::Test::HasFailure() ? 1 : 0);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST(PrecompiledProgram, WithoutAJitOnlyMatchingBlobsWork) {
  REQUIRE_KERNELS();
  std::string missing = ::testing::TempDir() + "/no-such-dir/libcgc_driver_cpu_jit.so";
  setenv("CGC_CPU_JIT", missing.c_str(), 1);
  struct Unset {
    ~Unset() { unsetenv("CGC_CPU_JIT"); }
  } unset;
  auto device = makeDevice(nullptr);
  D3D12_FEATURE_DATA_D3D12_OPTIONS_MLIR options = {};
  ASSERT_EQ(device->CheckFeatureSupport(D3D12_FEATURE_D3D12_OPTIONS_MLIR, &options,
                                        sizeof(options)),
            S_OK);
  // Precompiled programs still run: MLIR programs are supported.
  EXPECT_EQ(options.MlirProgramsTier, D3D12_MLIR_PROGRAMS_TIER_2_0);
  SIZE_T size = 0;
  D3D12_FEATURE_DATA_MLIR_EXCHANGE exchange = {CGC_SUBGRAPH_DECLARATION_REQUEST, nullptr, 0,
                                               nullptr, &size};
  EXPECT_EQ(device->CheckFeatureSupport(D3D12_FEATURE_MLIR_EXCHANGE, &exchange,
                                        sizeof(exchange)),
            DXGI_ERROR_UNSUPPORTED);

  auto container = partitionContainer(addBindPoints(), interfaces::kSubgraphPartition,
                                      kJunkBytecode);
  auto blob = blobOf(keyFor(kJunkBytecode), serializeKernelProgram(addProgram(kN)));
  Creation hit = create(device.Get(), container, &blob);
  ASSERT_EQ(hit.hr, S_OK) << ::testing::PrintToString(messages(device.Get()));
  EXPECT_EQ(hit.status, CGC_D3D12_CACHED_MLIR_PROGRAM_STATUS_HIT);
  runAdd(device.Get(), hit.so.Get());

  // No blob, or one for another compiler: the JIT is needed, and missing.
  Creation none = create(device.Get(), container, nullptr);
  EXPECT_EQ(none.hr, E_NOTIMPL);
  EXPECT_TRUE(anyMessageContains(device.Get(), {"no MLIR JIT", missing, "does not exist"}))
      << ::testing::PrintToString(messages(device.Get()));
  PrecompiledKey other = keyFor(kJunkBytecode);
  other.compiler = "another compiler";
  auto otherBlob = blobOf(other, serializeKernelProgram(addProgram(kN)));
  Creation miss = create(device.Get(), container, &otherBlob);
  EXPECT_EQ(miss.hr, E_NOTIMPL);
  EXPECT_TRUE(anyMessageContains(device.Get(), {"the cached blob is not used",
                                                "made by compiler 'another compiler'"}));
}

TEST(PrecompiledProgram, CgbpThatDisagreesWithTheProgramIsRefused) {
  // The debug layer checks bindings against the container's 'CGBP' bind
  // points: CreateStateObject checks those against the program the driver
  // made (here from the blob's kernel program), so a wrong 'CGBP' cannot
  // pass. No JIT is needed.
  REQUIRE_KERNELS();
  auto device = makeDevice(nullptr);
  auto blob = blobOf(keyFor(kJunkBytecode), serializeKernelProgram(addProgram(kN)));
  struct Case {
    std::vector<BindPoint> points;
    std::vector<std::string> needles;
  };
  std::vector<Case> cases;
  cases.push_back({addBindPoints(), {}});
  cases.back().points[2].bytes = kN * 8;
  cases.back().needles = {"bind point 2 'out'", "the program accesses " + std::to_string(kN * 4)};
  cases.push_back({addBindPoints(), {"bind point 1 'b'", "not a constant"}});
  cases.back().points[1].kind = BindPointKind::Constant;
  // (A count that differs the driver already refuses, reading the blob.)
  cases.push_back({addBindPoints(), {"3 bindings for 2 bind points"}});
  cases.back().points.pop_back();
  for (const Case &c : cases) {
    SCOPED_TRACE(c.needles.front());
    auto container = partitionContainer(c.points, interfaces::kSubgraphPartition, kJunkBytecode);
    Creation created = create(device.Get(), container, &blob);
    EXPECT_EQ(created.hr, E_INVALIDARG);
    std::vector<std::string> needles = c.needles;
    needles.push_back("MLIR program 'partition0'");
    EXPECT_TRUE(anyMessageContains(device.Get(), needles))
        << ::testing::PrintToString(messages(device.Get()));
  }
  // The matching one is created.
  auto container = partitionContainer(addBindPoints(), interfaces::kSubgraphPartition,
                                      kJunkBytecode);
  EXPECT_EQ(create(device.Get(), container, &blob).hr, S_OK);
}

TEST(PrecompiledProgram, BlobsForSomethingElseAreCompiledInstead) {
  REQUIRE_KERNELS();
  if (!CGC_HAVE_JIT_MODULE)
    GTEST_SKIP() << "this build has no JIT module (built without the compiler)";
  std::string bytecode = specPartitionBytecode();
  ASSERT_FALSE(bytecode.empty());
  auto container = specContainer(bytecode);
  auto device = makeDevice(nullptr);
  // What the JIT makes of it must not matter: any valid kernel program with
  // the partition's 7 bindings will do as the blob's content.
  KernelProgram seven;
  // Its bindings must still be the partition's (the runtime checks 'CGBP'
  // against them): the weights and biases are constants.
  seven.bindings = {{"in", 64},         {"w1", 36, true},  {"b1", 4, true}, {"w2", 36, true},
                    {"b2", 4, true},    {"output", 64},    {"scratch", 64}};
  KernelDesc relu;
  relu.op = "cgc_op.relu";
  relu.inputs = {operand(0, {16})};
  relu.outputs = {operand(5, {16})};
  seven.kernels = {relu};
  std::string json = serializeKernelProgram(seven);

  Creation none = create(device.Get(), container, nullptr);
  ASSERT_EQ(none.hr, S_OK) << ::testing::PrintToString(messages(device.Get()));
  EXPECT_EQ(none.status, CGC_D3D12_CACHED_MLIR_PROGRAM_STATUS_NONE);
  EXPECT_TRUE(isMapped("libcgc_driver_cpu_jit"));
  EXPECT_TRUE(isMapped("libMLIR"));

  auto matching = blobOf(keyFor(bytecode), json);
  Creation used = create(device.Get(), container, &matching);
  ASSERT_EQ(used.hr, S_OK);
  EXPECT_EQ(used.status, CGC_D3D12_CACHED_MLIR_PROGRAM_STATUS_HIT);

  PrecompiledKey otherCompiler = keyFor(bytecode);
  otherCompiler.compiler = "cgc-cpu 0.0.1 src:0000000000000000";
  PrecompiledKey otherBytecode = keyFor(bytecode);
  otherBytecode.partitionDigest = digestOf(bytecode + " ");
  struct Case {
    std::vector<uint8_t> blob;
    std::string why;
  } cases[] = {
      {blobOf(otherCompiler, json), "made by compiler 'cgc-cpu 0.0.1 src:0000000000000000'"},
      {blobOf(otherBytecode, json), "made from other bytecode"},
      {[] {
         ContainerWriter writer;
         writer.addPart(parts::kPrecompiledKey, "{\"format\": 2, \"compiler\": \"future\"}");
         writer.addPart(makeFourCC('N', 'E', 'X', 'T'), "anything");
         return writer.finish();
       }(),
       "key has format 2"},
      // A mismatch is decided on the key alone: what follows is not read.
      {blobOf(otherCompiler, "not a kernel program"), "made by compiler"},
  };
  for (const Case &c : cases) {
    Creation miss = create(device.Get(), container, &c.blob);
    ASSERT_EQ(miss.hr, S_OK) << c.why << ::testing::PrintToString(messages(device.Get()));
    EXPECT_EQ(miss.status, CGC_D3D12_CACHED_MLIR_PROGRAM_STATUS_MISMATCH) << c.why;
    EXPECT_TRUE(anyMessageContains(device.Get(), {"the cached blob is not used", c.why,
                                                  "compiling the bytecode"}))
        << c.why << ::testing::PrintToString(messages(device.Get()));
  }
  // An empty blob is no blob (as an empty CachedPSO).
  D3D12_MLIR_PROGRAM_DESC program = {L"partition0", container.data(), container.size()};
  D3D12_CACHED_MLIR_PROGRAM_CGC empty = {L"partition0", {nullptr, 0}};
  D3D12_STATE_SUBOBJECT subs[] = {{D3D12_STATE_SUBOBJECT_TYPE_MLIR_PROGRAM, &program},
                                  {D3D12_STATE_SUBOBJECT_TYPE_CACHED_MLIR_PROGRAM_CGC, &empty}};
  D3D12_STATE_OBJECT_DESC desc = {D3D12_STATE_OBJECT_TYPE_EXECUTABLE, 2, subs};
  ComPtr<ID3D12StateObject> so;
  ASSERT_EQ(device->CreateStateObject(&desc, IID_PPV_ARGS(&so)), S_OK);
  CGC_D3D12_CACHED_MLIR_PROGRAM_STATUS status = CGC_D3D12_CACHED_MLIR_PROGRAM_STATUS_HIT;
  EXPECT_EQ(CGCD3D12GetCachedMlirProgramStatus(so.Get(), L"partition0", &status), S_OK);
  EXPECT_EQ(status, CGC_D3D12_CACHED_MLIR_PROGRAM_STATUS_NONE);
}

TEST(PrecompiledProgram, MalformedOrCorruptBlobsFailTheCreation) {
  auto device = makeDevice(nullptr);
  auto container = partitionContainer(addBindPoints(), interfaces::kSubgraphPartition,
                                      kJunkBytecode);
  PrecompiledKey key = keyFor(kJunkBytecode);
  KernelProgram fourBindings = addProgram(kN);
  fourBindings.bindings.push_back({"extra", 4});
  KernelProgram tooLarge = addProgram(kN);
  tooLarge.bindings[2].bytes = kN * 8;
  KernelProgram outOfRange = addProgram(kN);
  outOfRange.kernels[0].outputs[0].offset = 4; // past the end of `out`
  std::vector<uint8_t> flipped = blobOf(key, serializeKernelProgram(addProgram(kN)));
  flipped[flipped.size() - 2] ^= 0x01;
  ContainerWriter unknownPart;
  unknownPart.addPart(parts::kPrecompiledKey, "{\"format\": 1, \"compiler\": \"" +
                                                  std::string(CGC_CPU_COMPILER_IDENTITY) +
                                                  "\", \"partition_md5\": \"" +
                                                  digestHex(key.partitionDigest) + "\"}");
  unknownPart.addPart(parts::kKernelProgram, serializeKernelProgram(addProgram(kN)));
  unknownPart.addPart(makeFourCC('X', 'T', 'R', 'A'), "?");
  struct Case {
    std::vector<uint8_t> blob;
    std::vector<std::string> why;
  } cases[] = {
      {std::vector<uint8_t>(100, 0x42), {"cached blob is malformed", "not a valid DX container"}},
      {flipped, {"cached blob is malformed", "digest"}},
      {writePrecompiledProgram(key, {}),
       {"matches this program but is corrupt", "0 'CGKP' kernel programs"}},
      {blobOf(key, "{\"kernels\": 3}"), {"matches this program but is corrupt"}},
      {blobOf(key, serializeKernelProgram(fourBindings)),
       {"matches this program but is corrupt", "4 bindings for 3 bind points"}},
      {blobOf(key, serializeKernelProgram(tooLarge)),
       {"matches this program but is corrupt", "needs 512 bytes at binding #2",
        "bind point 'out'"}},
      {blobOf(key, serializeKernelProgram(outOfRange)), {"matches this program but is corrupt"}},
      {unknownPart.finish(), {"matches this program but is corrupt", "XTRA"}},
  };
  for (const Case &c : cases) {
    Creation created = create(device.Get(), container, &c.blob);
    EXPECT_EQ(created.hr, E_INVALIDARG) << c.why[0];
    std::vector<std::string> needles = c.why;
    needles.push_back("MLIR program 'partition0'");
    EXPECT_TRUE(anyMessageContains(device.Get(), needles))
        << c.why.back() << ::testing::PrintToString(messages(device.Get()));
  }
}

TEST(PrecompiledProgram, TheSubobjectFollowsTheRules) {
  auto device = makeDevice(nullptr);
  auto container = partitionContainer(addBindPoints(), interfaces::kSubgraphPartition,
                                      kJunkBytecode);
  auto blob = blobOf(keyFor(kJunkBytecode), serializeKernelProgram(addProgram(kN)));
  D3D12_MLIR_PROGRAM_DESC program = {L"partition0", container.data(), container.size()};
  D3D12_CACHED_MLIR_PROGRAM_CGC cached = {L"partition0", {blob.data(), blob.size()}};
  D3D12_STATE_SUBOBJECT subs[] = {{D3D12_STATE_SUBOBJECT_TYPE_MLIR_PROGRAM, &program},
                                  {D3D12_STATE_SUBOBJECT_TYPE_CACHED_MLIR_PROGRAM_CGC, &cached},
                                  {D3D12_STATE_SUBOBJECT_TYPE_CACHED_MLIR_PROGRAM_CGC, &cached}};
  D3D12_STATE_OBJECT_DESC desc = {D3D12_STATE_OBJECT_TYPE_EXECUTABLE, 3, subs};
  ComPtr<ID3D12StateObject> so;
  auto expectRefused = [&](const std::string &why) {
    EXPECT_EQ(device->CreateStateObject(&desc, IID_PPV_ARGS(&so)), E_INVALIDARG) << why;
    EXPECT_NE(std::string(CGCD3D12GetLastError()).find(why), std::string::npos)
        << CGCD3D12GetLastError();
  };
  expectRefused("two cached blobs are given for MLIR program 'partition0'");
  desc.NumSubobjects = 2;
  cached.ProgramName = L"partition1";
  expectRefused("a cached blob is given for 'partition1', which is not an MLIR program");
  cached.ProgramName = nullptr;
  expectRefused("the cached MLIR program has no ProgramName");
  cached.ProgramName = L"partition0";
  cached.CachedBlob = {nullptr, 16};
  expectRefused("has a size and a null pointer");
  cached.CachedBlob = {blob.data(), 0};
  expectRefused("has a pointer and no size");

  cached.CachedBlob = {blob.data(), blob.size()};
  ASSERT_EQ(device->CreateStateObject(&desc, IID_PPV_ARGS(&so)), S_OK);
  CGC_D3D12_CACHED_MLIR_PROGRAM_STATUS status = CGC_D3D12_CACHED_MLIR_PROGRAM_STATUS_NONE;
  EXPECT_EQ(CGCD3D12GetCachedMlirProgramStatus(so.Get(), L"nope", &status), E_INVALIDARG);
  EXPECT_NE(std::string(CGCD3D12GetLastError()).find("no MLIR program named 'nope'"),
            std::string::npos);
  EXPECT_EQ(CGCD3D12GetCachedMlirProgramStatus(nullptr, L"partition0", &status), E_INVALIDARG);
  EXPECT_EQ(CGCD3D12GetCachedMlirProgramStatus(so.Get(), L"partition0", nullptr), E_INVALIDARG);

  // A driver that cannot report what it did with a blob (the DDI's test
  // double, which would take any subobject for a program) is given none,
  // and the status says so.
  auto other = makeDevice(testDriverPath());
  ComPtr<ID3D12StateObject> so2;
  ASSERT_EQ(other->CreateStateObject(&desc, IID_PPV_ARGS(&so2)), S_OK)
      << CGCD3D12GetLastError();
  EXPECT_EQ(CGCD3D12GetCachedMlirProgramStatus(so2.Get(), L"partition0", &status), E_NOTIMPL);
}

} // namespace
