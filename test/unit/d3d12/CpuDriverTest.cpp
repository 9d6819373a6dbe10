//===- CpuDriverTest.cpp - Execution on the CPU driver ----===//
//
// Compute pipelines (kernel programs), fusion, the debug layer on the compute
// path, MLIR programs through the JIT, and many threads using one device.
//
//===----------------------------------------------------------------------===//

// jit.h names a parameter `interface`: before any DirectX header.
#include "jit.h"

#include "TestUtil.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <mutex>
#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>
#include <sys/mman.h>
#include <thread>
#include <unistd.h>

using namespace cgc;
using namespace cgc::test;

namespace {

/// out = relu(A[m,k] x B[k,n]) + C[m,n], through two temporaries.
KernelProgram matmulReluAddProgram(int64_t m, int64_t k, int64_t n) {
  using S = KernelOperand::Storage;
  KernelProgram p;
  p.bindings = {{"A", uint64_t(m * k * 4)}, {"B", uint64_t(k * n * 4)},
                {"C", uint64_t(m * n * 4)}, {"out", uint64_t(m * n * 4)}};
  p.temporaries = {{uint64_t(m * n * 4), 64}, {uint64_t(m * n * 4), 64}};
  KernelDesc mm, relu, add;
  mm.op = "cgc_op.matmul";
  mm.inputs = {operand(0, {m, k}), operand(1, {k, n})};
  mm.outputs = {operand(0, {m, n}, S::Temporary)};
  relu.op = "cgc_op.relu";
  relu.inputs = {operand(0, {m, n}, S::Temporary)};
  relu.outputs = {operand(1, {m, n}, S::Temporary)};
  add.op = "cgc_op.add";
  add.inputs = {operand(1, {m, n}, S::Temporary), operand(2, {m, n})};
  add.outputs = {operand(3, {m, n})};
  p.kernels = {mm, relu, add};
  return p;
}

ComPtr<ID3D12PipelineState> makePipeline(ID3D12Device *device, const KernelProgram &program,
                                         HRESULT expected = S_OK) {
  auto cs = kernelProgramContainer(program);
  D3D12_COMPUTE_PIPELINE_STATE_DESC desc = {};
  desc.CS = {cs.data(), cs.size()};
  ComPtr<ID3D12PipelineState> pso;
  EXPECT_EQ(device->CreateComputePipelineState(&desc, IID_PPV_ARGS(&pso)), expected)
      << CGCD3D12GetLastError();
  return pso;
}

void fillRandom(float *p, size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  for (size_t i = 0; i < n; ++i)
    p[i] = dist(rng);
}

#define REQUIRE_KERNELS()                                                                      \
  if (!CGC_CPU_HAVE_KERNELS)                                                                   \
  GTEST_SKIP() << "the kernel library (runtime/drivers/cpu/kernels) had no kernels when " \
                  "this was built"

/// Pages of [p, p + bytes) in memory now.
size_t residentPages(const void *p, size_t bytes) {
  size_t page = size_t(sysconf(_SC_PAGESIZE));
  uintptr_t start = reinterpret_cast<uintptr_t>(p) / page * page;
  size_t span = reinterpret_cast<uintptr_t>(p) + bytes - start;
  std::vector<unsigned char> in((span + page - 1) / page);
  EXPECT_EQ(mincore(reinterpret_cast<void *>(start), span, in.data()), 0);
  size_t n = 0;
  for (unsigned char c : in)
    n += c & 1;
  return n;
}

TEST(CpuDriver, HeapsAreZeroedAndResidentOnlyWhereTouched) {
  // A model's scratch holds bind points the driver never touches (internal
  // intermediates it keeps in its own memory): their pages must cost no
  // memory, so heaps are not cleared by writing them.
  auto device = makeDevice(nullptr);
  const size_t bytes = size_t(64) << 20, page = size_t(sysconf(_SC_PAGESIZE));
  auto buffer = makeBuffer(device.Get(), bytes);
  ASSERT_TRUE(buffer);
  auto *p = mapped<uint8_t>(buffer.Get());
  EXPECT_EQ(residentPages(p, bytes), 0u);
  p[100 * page + 5] = 1;
  p[bytes - 1] = 2;
  // Two pages (a few more if the system backs them with huge pages), of
  // 16384.
  size_t touched = residentPages(p, bytes);
  EXPECT_GE(touched, 2u);
  EXPECT_LE(touched, 2 * (size_t(2) << 20) / page);
  for (size_t i = 0; i < bytes; i += 4099)
    ASSERT_EQ(p[i], i == 100 * page + 5 ? 1 : 0) << i;
  EXPECT_EQ(p[bytes - 1], 2);
}

TEST(CpuDriver, ComputePipelineRunsAKernelProgram) {
  REQUIRE_KERNELS();
  auto device = makeDevice(nullptr);
  const int64_t n = 1000;
  auto pso = makePipeline(device.Get(), addProgram(n));
  ASSERT_TRUE(pso);
  auto a = makeBuffer(device.Get(), n * 4), b = makeBuffer(device.Get(), n * 4),
       out = makeBuffer(device.Get(), n * 4);
  fillRandom(mapped<float>(a.Get()), n, 1);
  fillRandom(mapped<float>(b.Get()), n, 2);
  Recorder r(device.Get());
  r.list->SetComputeRootSignature(nullptr);
  r.list->SetPipelineState(pso.Get());
  r.list->SetComputeRootUnorderedAccessView(0, a->GetGPUVirtualAddress());
  r.list->SetComputeRootUnorderedAccessView(1, b->GetGPUVirtualAddress());
  r.list->SetComputeRootUnorderedAccessView(2, out->GetGPUVirtualAddress());
  r.list->Dispatch(1, 1, 1);
  ASSERT_EQ(r.list->Close(), S_OK);
  Queue q(device.Get());
  q.run({r.list.Get()});
  const float *pa = mapped<float>(a.Get()), *pb = mapped<float>(b.Get()),
              *po = mapped<float>(out.Get());
  for (int64_t i = 0; i < n; ++i)
    ASSERT_EQ(po[i], pa[i] + pb[i]) << i;
}

TEST(CpuDriver, AnchorAndEpilogueAreFused) {
  REQUIRE_KERNELS();
  auto device = makeDevice(nullptr);
  const int64_t m = 8, k = 16, n = 12;
  auto pso = makePipeline(device.Get(), matmulReluAddProgram(m, k, n));
  ASSERT_TRUE(pso);
  EXPECT_TRUE(anyMessageContains(device.Get(), {"cgc_op.matmul", "fused"}))
      << ::testing::PrintToString(messages(device.Get()));
  auto A = makeBuffer(device.Get(), m * k * 4), B = makeBuffer(device.Get(), k * n * 4),
       C = makeBuffer(device.Get(), m * n * 4), out = makeBuffer(device.Get(), m * n * 4);
  float *pa = mapped<float>(A.Get()), *pb = mapped<float>(B.Get()), *pc = mapped<float>(C.Get());
  fillRandom(pa, m * k, 3);
  fillRandom(pb, k * n, 4);
  fillRandom(pc, m * n, 5);
  Recorder r(device.Get());
  r.list->SetPipelineState(pso.Get());
  ID3D12Resource *bufs[] = {A.Get(), B.Get(), C.Get(), out.Get()};
  for (UINT i = 0; i < 4; ++i)
    r.list->SetComputeRootUnorderedAccessView(i, bufs[i]->GetGPUVirtualAddress());
  r.list->Dispatch(1, 1, 1);
  ASSERT_EQ(r.list->Close(), S_OK);
  Queue q(device.Get());
  q.run({r.list.Get()});
  const float *po = mapped<float>(out.Get());
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0;
      for (int64_t t = 0; t < k; ++t)
        acc += double(pa[i * k + t]) * pb[t * n + j];
      double expected = std::max(acc, 0.0) + pc[i * n + j];
      ASSERT_NEAR(po[i * n + j], expected, 1e-4) << i << "," << j;
    }
}

TEST(CpuDriver, DependentDispatchesHonourBarriers) {
  REQUIRE_KERNELS();
  auto device = makeDevice(nullptr);
  const int64_t n = 4096;
  auto pso = makePipeline(device.Get(), addProgram(n));
  auto x = makeBuffer(device.Get(), n * 4), y = makeBuffer(device.Get(), n * 4),
       z = makeBuffer(device.Get(), n * 4);
  float *px = mapped<float>(x.Get());
  fillRandom(px, n, 6);
  Recorder r(device.Get());
  r.list->SetPipelineState(pso.Get());
  auto dispatch = [&](ID3D12Resource *a, ID3D12Resource *b, ID3D12Resource *o) {
    r.list->SetComputeRootUnorderedAccessView(0, a->GetGPUVirtualAddress());
    r.list->SetComputeRootUnorderedAccessView(1, b->GetGPUVirtualAddress());
    r.list->SetComputeRootUnorderedAccessView(2, o->GetGPUVirtualAddress());
    r.list->Dispatch(1, 1, 1);
  };
  D3D12_RESOURCE_BARRIER uavY = CD3DX12_RESOURCE_BARRIER::UAV(y.Get());
  D3D12_RESOURCE_BARRIER uavZ = CD3DX12_RESOURCE_BARRIER::UAV(z.Get());
  // y = 2x; z = 4x; y = 8x, each reading what the previous wrote.
  for (int round = 0; round < 10; ++round) {
    dispatch(x.Get(), x.Get(), y.Get());
    r.list->ResourceBarrier(1, &uavY);
    dispatch(y.Get(), y.Get(), z.Get());
    r.list->ResourceBarrier(1, &uavZ);
    dispatch(z.Get(), z.Get(), y.Get());
    D3D12_RESOURCE_BARRIER all = CD3DX12_RESOURCE_BARRIER::UAV(nullptr);
    r.list->ResourceBarrier(1, &all);
  }
  ASSERT_EQ(r.list->Close(), S_OK);
  Queue q(device.Get());
  q.run({r.list.Get()});
  const float *py = mapped<float>(y.Get());
  for (int64_t i = 0; i < n; ++i)
    ASSERT_EQ(py[i], px[i] * 8) << i;
}

TEST(CpuDriver, BindingOutsideEveryHeapRemovesTheDevice) {
  // Without the debug layer nothing checks addresses against resources: as
  // a GPU faults on memory that is not its own, the driver refuses to run
  // the submission and the device is removed -- the process lives on.
  REQUIRE_KERNELS();
  auto device = makeDevice(nullptr);
  const int64_t n = 64;
  auto pso = makePipeline(device.Get(), addProgram(n));
  ASSERT_TRUE(pso);
  auto a = makeBuffer(device.Get(), n * 4), out = makeBuffer(device.Get(), n * 4);
  std::vector<float> notDeviceMemory(n, 1.0f); // the process's heap, not a D3D12 heap
  Recorder r(device.Get());
  r.list->SetPipelineState(pso.Get());
  r.list->SetComputeRootUnorderedAccessView(0, a->GetGPUVirtualAddress());
  r.list->SetComputeRootUnorderedAccessView(
      1, reinterpret_cast<D3D12_GPU_VIRTUAL_ADDRESS>(notDeviceMemory.data()));
  r.list->SetComputeRootUnorderedAccessView(2, out->GetGPUVirtualAddress());
  r.list->Dispatch(1, 1, 1);
  ASSERT_EQ(r.list->Close(), S_OK); // recorded as a real driver would
  Queue q(device.Get());
  ID3D12CommandList *lists[] = {r.list.Get()};
  q.queue->ExecuteCommandLists(1, lists);
  EXPECT_EQ(q.queue->Signal(q.fence.Get(), 1), S_OK);
  // The fence's signal still arrives; a removed device's fences read
  // UINT64_MAX, as on D3D12.
  EXPECT_EQ(q.fence->SetEventOnCompletion(1, nullptr), S_OK);
  EXPECT_EQ(device->GetDeviceRemovedReason(), DXGI_ERROR_DEVICE_HUNG);
  EXPECT_EQ(q.fence->GetCompletedValue(), UINT64_MAX);
  EXPECT_TRUE(anyMessageContains(device.Get(), {"page fault", "root UAV 1 ('b')",
                                                "outside every heap"}))
      << ::testing::PrintToString(messages(device.Get()));
  EXPECT_TRUE(anyMessageContains(device.Get(), {"device removed", "DXGI_ERROR_DEVICE_HUNG"}));
  EXPECT_EQ(mapped<float>(out.Get())[0], 0.0f); // nothing of the submission ran
  // Recording and submitting report it.
  ASSERT_EQ(r.list->Reset(r.allocator.Get(), pso.Get()), S_OK);
  EXPECT_EQ(r.list->Close(), DXGI_ERROR_DEVICE_REMOVED);
  q.queue->ExecuteCommandLists(1, lists);
  EXPECT_TRUE(anyMessageContains(device.Get(), {"ExecuteCommandLists", "device was removed"}));
  // Another device is unaffected.
  auto other = makeDevice(nullptr);
  EXPECT_EQ(other->GetDeviceRemovedReason(), S_OK);
}

TEST(CpuDriver, ExchangeIntoATooSmallBufferIsNotSufficientBuffer) {
  if (!cpu::getJitInterface())
    GTEST_SKIP() << "this build has no JIT: the driver answers no exchange";
  auto device = makeDevice(nullptr);
  SIZE_T size = 0;
  D3D12_FEATURE_DATA_MLIR_EXCHANGE ex = {CGC_SUBGRAPH_DECLARATION_REQUEST, nullptr, 0, nullptr,
                                         &size};
  ASSERT_EQ(device->CheckFeatureSupport(D3D12_FEATURE_MLIR_EXCHANGE, &ex, sizeof(ex)), S_OK);
  const SIZE_T needed = size;
  ASSERT_GT(needed, kContainerHeaderSize);
  std::vector<uint8_t> small(needed - 1, 0x5A);
  ex.pOutputData = small.data();
  size = small.size();
  EXPECT_EQ(device->CheckFeatureSupport(D3D12_FEATURE_MLIR_EXCHANGE, &ex, sizeof(ex)),
            E_NOT_SUFFICIENT_BUFFER);
  EXPECT_EQ(size, needed);
  EXPECT_TRUE(std::all_of(small.begin(), small.end(), [](uint8_t b) { return b == 0x5A; }));
  std::vector<uint8_t> exact(needed);
  ex.pOutputData = exact.data();
  size = exact.size();
  EXPECT_EQ(device->CheckFeatureSupport(D3D12_FEATURE_MLIR_EXCHANGE, &ex, sizeof(ex)), S_OK);
  EXPECT_EQ(size, needed);
}

TEST(CpuDriver, ComputeBindingErrors) {
  REQUIRE_KERNELS();
  for (bool debug : {false, true}) {
    auto device = makeDevice(nullptr, debug ? CGC_D3D12_DEVICE_FLAG_DEBUG : 0);
    auto pso = makePipeline(device.Get(), addProgram(64));
    auto a = makeBuffer(device.Get(), 256), small = makeBuffer(device.Get(), 16);
    Recorder r(device.Get());
    r.list->SetPipelineState(pso.Get());
    r.list->SetComputeRootUnorderedAccessView(0, a->GetGPUVirtualAddress());
    r.list->SetComputeRootUnorderedAccessView(2, a->GetGPUVirtualAddress());
    r.list->Dispatch(1, 1, 1); // root UAV 1 missing
    EXPECT_EQ(r.list->Close(), E_INVALIDARG);
    EXPECT_TRUE(anyMessageContains(device.Get(), {"root UAV 1", "'b'"}));
    if (debug) {
      ASSERT_EQ(r.list->Reset(r.allocator.Get(), pso.Get()), S_OK);
      for (UINT i = 0; i < 3; ++i)
        r.list->SetComputeRootUnorderedAccessView(i, (i == 1 ? small : a)->GetGPUVirtualAddress());
      r.list->Dispatch(1, 1, 1);
      EXPECT_EQ(r.list->Close(), E_INVALIDARG);
      EXPECT_TRUE(anyMessageContains(device.Get(), {"root UAV 1", "'b'", "16 bytes"}));
    }
  }
  // Malformed pipelines.
  auto device = makeDevice(nullptr);
  D3D12_COMPUTE_PIPELINE_STATE_DESC desc = {};
  ComPtr<ID3D12PipelineState> pso;
  EXPECT_EQ(device->CreateComputePipelineState(&desc, IID_PPV_ARGS(&pso)), E_INVALIDARG);
  std::vector<uint8_t> junk(100, 7);
  desc.CS = {junk.data(), junk.size()};
  EXPECT_EQ(device->CreateComputePipelineState(&desc, IID_PPV_ARGS(&pso)), E_INVALIDARG);
  KernelProgram unknownOp = addProgram(4);
  unknownOp.kernels[0].op = "cgc_op.no_such_op";
  makePipeline(device.Get(), unknownOp, E_INVALIDARG);
  EXPECT_TRUE(anyMessageContains(device.Get(), {"cgc_op.no_such_op"}));
}

TEST(CpuDriver, MlirProgramsWithoutAJitFailClearly) {
  if (cpu::getJitInterface())
    GTEST_SKIP() << "this build has the JIT: MlirProgramRunsTheSpecPartition covers it";
  auto device = makeDevice(nullptr);
  D3D12_FEATURE_DATA_D3D12_OPTIONS_MLIR options = {};
  ASSERT_EQ(device->CheckFeatureSupport(D3D12_FEATURE_D3D12_OPTIONS_MLIR, &options, sizeof(options)),
            S_OK);
  // Precompiled programs (cached blobs) still run without a JIT.
  EXPECT_EQ(options.MlirProgramsTier, D3D12_MLIR_PROGRAMS_TIER_2_0);
  auto bytes = partitionContainer({bindPoint("in", BindPointKind::Argument, 64)});
  D3D12_MLIR_PROGRAM_DESC p = {L"partition0", bytes.data(), bytes.size()};
  D3D12_STATE_SUBOBJECT sub = {D3D12_STATE_SUBOBJECT_TYPE_MLIR_PROGRAM, &p};
  D3D12_STATE_OBJECT_DESC desc = {D3D12_STATE_OBJECT_TYPE_EXECUTABLE, 1, &sub};
  ComPtr<ID3D12StateObject> so;
  EXPECT_TRUE(FAILED(device->CreateStateObject(&desc, IID_PPV_ARGS(&so))));
  EXPECT_TRUE(anyMessageContains(device.Get(), {"no MLIR JIT"}));
  SIZE_T size = 0;
  D3D12_FEATURE_DATA_MLIR_EXCHANGE ex = {CGC_SUBGRAPH_DECLARATION_REQUEST, nullptr, 0, nullptr, &size};
  EXPECT_EQ(device->CheckFeatureSupport(D3D12_FEATURE_MLIR_EXCHANGE, &ex, sizeof(ex)),
            DXGI_ERROR_UNSUPPORTED);
}

/// conv3x3 (pad 1) of a 4x4 image with one channel, plus bias.
std::vector<float> conv3x3(const std::vector<float> &in, const float *w, float b) {
  std::vector<float> out(16);
  for (int y = 0; y < 4; ++y)
    for (int x = 0; x < 4; ++x) {
      double acc = b;
      for (int dy = -1; dy <= 1; ++dy)
        for (int dx = -1; dx <= 1; ++dx) {
          int yy = y + dy, xx = x + dx;
          if (yy >= 0 && yy < 4 && xx >= 0 && xx < 4)
            acc += double(in[yy * 4 + xx]) * w[(dy + 1) * 3 + dx + 1];
        }
      out[y * 4 + x] = float(acc);
    }
  return out;
}

TEST(CpuDriver, CgbpThatDisagreesWithThePartitionIsRefused) {
  // The debug layer's bounds checks trust the container's 'CGBP' bind
  // points; CreateStateObject checks them against the partition's own
  // arguments as the JIT read them, so a wrong 'CGBP' fails the creation.
  if (!cpu::getJitInterface())
    GTEST_SKIP() << "getJitInterface() is null: this build has no MLIR JIT";
  std::string opt = CGC_OPT_PATH;
  ASSERT_FALSE(opt.empty()) << "the JIT is linked but cgc-opt was not built";
  std::string bc = ::testing::TempDir() + "/partition-cgbp.mlirbc";
  std::string cmd = opt + " " CGC_SOURCE_DIR "/examples/spec/partition-ir.mlir -emit-bytecode -o " + bc;
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::ifstream file(bc, std::ios::binary);
  std::string bytecode((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  ASSERT_FALSE(bytecode.empty());
  const std::vector<BindPoint> right = {
      bindPoint("in", BindPointKind::Argument, 64, {1, 1, 4, 4}),
      bindPoint("w1", BindPointKind::Constant, 36, {1, 1, 3, 3}),
      bindPoint("b1", BindPointKind::Constant, 4, {1}),
      bindPoint("w2", BindPointKind::Constant, 36, {1, 1, 3, 3}),
      bindPoint("b2", BindPointKind::Constant, 4, {1}),
      bindPoint("output", BindPointKind::Output, 64, {1, 1, 4, 4}),
      bindPoint("scratch", BindPointKind::Scratch, 64, {1, 1, 4, 4})};
  auto device = makeDevice(nullptr, CGC_D3D12_DEVICE_FLAG_DEBUG);
  auto create = [&](const std::vector<BindPoint> &points) {
    auto container = partitionContainer(points, interfaces::kSubgraphPartition, bytecode);
    D3D12_MLIR_PROGRAM_DESC p = {L"partition0", container.data(), container.size()};
    D3D12_STATE_SUBOBJECT sub = {D3D12_STATE_SUBOBJECT_TYPE_MLIR_PROGRAM, &p};
    D3D12_STATE_OBJECT_DESC desc = {D3D12_STATE_OBJECT_TYPE_EXECUTABLE, 1, &sub};
    ComPtr<ID3D12StateObject> so;
    return device->CreateStateObject(&desc, IID_PPV_ARGS(&so));
  };
  ASSERT_EQ(create(right), S_OK) << ::testing::PrintToString(messages(device.Get()));

  // An output smaller than the program writes: the debug layer would accept
  // a 32-byte binding the program writes 64 bytes into.
  auto smaller = right;
  smaller[5].bytes = 32;
  EXPECT_EQ(create(smaller), E_INVALIDARG);
  EXPECT_TRUE(anyMessageContains(device.Get(), {"CreateStateObject", "'partition0'",
                                                "bind point 5 'output' (output, 32 bytes",
                                                "the program accesses 64 bytes"}))
      << ::testing::PrintToString(messages(device.Get()));
  auto notConstant = right;
  notConstant[1].kind = BindPointKind::Argument;
  EXPECT_EQ(create(notConstant), E_INVALIDARG);
  EXPECT_TRUE(anyMessageContains(device.Get(), {"bind point 1 'w1'", "is a constant"}));
  auto otherType = right;
  otherType[0].dtype = CGC_DTYPE_INT32;
  EXPECT_EQ(create(otherType), E_INVALIDARG);
  EXPECT_TRUE(anyMessageContains(device.Get(), {"bind point 0 'in'", "int32",
                                                "the program's argument holds float32"}));
  auto fewer = right;
  fewer.pop_back();
  EXPECT_EQ(create(fewer), E_INVALIDARG);
  EXPECT_TRUE(anyMessageContains(device.Get(), {"'CGBP' lists 6 bind points, the program has 7"}));
}

TEST(CpuDriver, MlirProgramRunsTheSpecPartition) {
  if (!cpu::getJitInterface())
    GTEST_SKIP() << "getJitInterface() is null: this build has no MLIR JIT "
                    "(compiler/Targets/Cpu not linked)";
  // The spec's Partition IR listing, as bytecode.
  std::string opt = CGC_OPT_PATH;
  ASSERT_FALSE(opt.empty()) << "the JIT is linked but cgc-opt was not built";
  std::string bc = ::testing::TempDir() + "/partition.mlirbc";
  std::string cmd = opt + " " CGC_SOURCE_DIR "/examples/spec/partition-ir.mlir -emit-bytecode -o " + bc;
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::ifstream file(bc, std::ios::binary);
  std::string bytecode((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  ASSERT_FALSE(bytecode.empty());
  auto container = partitionContainer(
      {bindPoint("in", BindPointKind::Argument, 64, {1, 1, 4, 4}),
       bindPoint("w1", BindPointKind::Constant, 36, {1, 1, 3, 3}),
       bindPoint("b1", BindPointKind::Constant, 4, {1}),
       bindPoint("w2", BindPointKind::Constant, 36, {1, 1, 3, 3}),
       bindPoint("b2", BindPointKind::Constant, 4, {1}),
       bindPoint("output", BindPointKind::Output, 64, {1, 1, 4, 4}),
       bindPoint("scratch", BindPointKind::Scratch, 64, {1, 1, 4, 4})},
      interfaces::kSubgraphPartition, bytecode);

  auto device = makeDevice(nullptr, CGC_D3D12_DEVICE_FLAG_DEBUG);
  CD3DX12_STATE_OBJECT_DESC stateObjectDesc(D3D12_STATE_OBJECT_TYPE_EXECUTABLE);
  auto mlGraph = stateObjectDesc.CreateSubobject<CD3DX12_MLIR_PROGRAM_SUBOBJECT>();
  mlGraph->SetProgramName(L"partition0");
  mlGraph->SetBytecode(container.data(), container.size());
  ComPtr<ID3D12StateObject> stateObject;
  ASSERT_EQ(device->CreateStateObject(&(*stateObjectDesc), IID_PPV_ARGS(&stateObject)), S_OK)
      << ::testing::PrintToString(messages(device.Get()));

  std::array<ComPtr<ID3D12Resource>, 7> buffers;
  for (auto &b : buffers)
    b = makeBuffer(device.Get(), 64);
  std::vector<float> in(16);
  fillRandom(in.data(), 16, 7);
  std::memcpy(mapped<float>(buffers[0].Get()), in.data(), 64);
  float *w1 = mapped<float>(buffers[1].Get()), *w2 = mapped<float>(buffers[3].Get());
  fillRandom(w1, 9, 8);
  fillRandom(w2, 9, 9);
  float b1 = 0.25f, b2 = -0.5f;
  *mapped<float>(buffers[2].Get()) = b1;
  *mapped<float>(buffers[4].Get()) = b2;

  // The constants (bind points 1-4) declared final: the driver prepares its
  // kernels' copies now and writes nothing the application can see.
  std::array<D3D12_MLIR_PROGRAM_BINDING, 4> constants = {};
  for (uint32_t i = 0; i < constants.size(); ++i) {
    constants[i].BindPointIndex = i + 1;
    constants[i].Type = D3D12_MLIR_PROGRAM_BINDING_TYPE_GPU;
    constants[i].GpuBinding = buffers[i + 1]->GetGPUVirtualAddress();
  }
  std::memset(mapped<float>(buffers[5].Get()), 0x7f, 64);
  std::memset(mapped<float>(buffers[6].Get()), 0x7f, 64);
  EXPECT_EQ(CGCD3D12PrepareMlirProgramConstants(stateObject.Get(), L"partition0", 4,
                                                constants.data()),
            S_OK)
      << ::testing::PrintToString(messages(device.Get()));
  for (int b : {5, 6})
    for (int i = 0; i < 64; ++i)
      ASSERT_EQ(reinterpret_cast<const uint8_t *>(mapped<float>(buffers[b].Get()))[i], 0x7f)
          << "buffer " << b << " written by the preparation";
  EXPECT_EQ(std::memcmp(mapped<float>(buffers[0].Get()), in.data(), 64), 0);
  // A bind point that is not a constant, a constant left out, an unknown
  // program: refused.
  std::array<D3D12_MLIR_PROGRAM_BINDING, 4> wrong = constants;
  wrong[0].BindPointIndex = 0;
  EXPECT_EQ(CGCD3D12PrepareMlirProgramConstants(stateObject.Get(), L"partition0", 4, wrong.data()),
            E_INVALIDARG);
  EXPECT_TRUE(anyMessageContains(device.Get(), {"not a constant bind point"}));
  EXPECT_EQ(CGCD3D12PrepareMlirProgramConstants(stateObject.Get(), L"partition0", 3,
                                                constants.data()),
            E_INVALIDARG);
  EXPECT_TRUE(anyMessageContains(device.Get(), {"constant bind point 4 ", "is not given"}));
  EXPECT_EQ(CGCD3D12PrepareMlirProgramConstants(stateObject.Get(), L"nope", 4, constants.data()),
            E_INVALIDARG);

  ComPtr<ID3D12StateObjectProperties1> stateObjectProperties;
  ASSERT_EQ(stateObject->QueryInterface(IID_PPV_ARGS(&stateObjectProperties)), S_OK);
  auto programId = stateObjectProperties->GetProgramIdentifier(L"partition0");
  Recorder r(device.Get());
  D3D12_SET_PROGRAM_DESC programDesc = {};
  programDesc.Type = D3D12_PROGRAM_TYPE_MLIR_PROGRAM;
  programDesc.MlirProgram.ProgramIdentifier = programId;
  r.list->SetProgram(&programDesc);
  std::array<D3D12_MLIR_PROGRAM_BINDING, 7> bindings = {};
  for (uint32_t i = 0; i < bindings.size(); i++) {
    bindings[i].BindPointIndex = i;
    bindings[i].Type = D3D12_MLIR_PROGRAM_BINDING_TYPE_GPU;
    bindings[i].GpuBinding = buffers[i]->GetGPUVirtualAddress();
  }
  D3D12_DISPATCH_GRAPH_DESC dispatchDesc = {};
  dispatchDesc.Mode = D3D12_DISPATCH_MODE_MLIR_PROGRAM;
  dispatchDesc.MlirProgramBindings.NumBindings = bindings.size();
  dispatchDesc.MlirProgramBindings.pBindings = bindings.data();
  r.list->DispatchGraph(&dispatchDesc);
  ASSERT_EQ(r.list->Close(), S_OK);
  Queue q(device.Get());
  q.run({r.list.Get()});

  auto convReluAdd = [](const std::vector<float> &x, const float *w, float b) {
    std::vector<float> c = conv3x3(x, w, b);
    for (int i = 0; i < 16; ++i)
      c[i] = std::max(c[i], 0.0f) + x[i];
    return c;
  };
  std::vector<float> expected = convReluAdd(convReluAdd(in, w1, b1), w2, b2);
  const float *out = mapped<float>(buffers[5].Get());
  for (int i = 0; i < 16; ++i)
    EXPECT_NEAR(out[i], expected[i], 1e-4) << i;
}

/// Many threads create pipelines, state objects, lists and queues on one
/// device and execute at once (run it under ThreadSanitizer: scripts/tsan.sh).
TEST(CpuDriver, ConcurrentUseOfOneDevice) {
  auto device = makeDevice(nullptr);
  auto doubleDevice = makeDevice(testDriverPath());
  const int threads = 6, rounds = 4;
  const int64_t n = 2048;
  Queue shared(device.Get());
  std::mutex sharedMutex;
  std::atomic<int> failures{0};
  auto worker = [&](int t) {
    for (int round = 0; round < rounds; ++round) {
      // State objects on the double (the CPU driver needs its JIT).
      auto bytes = partitionContainer({bindPoint("in", BindPointKind::Argument, 64),
                                       bindPoint("out", BindPointKind::Output, 64)});
      D3D12_MLIR_PROGRAM_DESC p = {L"p", bytes.data(), bytes.size()};
      D3D12_STATE_SUBOBJECT sub = {D3D12_STATE_SUBOBJECT_TYPE_MLIR_PROGRAM, &p};
      D3D12_STATE_OBJECT_DESC soDesc = {D3D12_STATE_OBJECT_TYPE_EXECUTABLE, 1, &sub};
      ComPtr<ID3D12StateObject> so;
      if (doubleDevice->CreateStateObject(&soDesc, IID_PPV_ARGS(&so)) != S_OK)
        ++failures;
      auto in = makeBuffer(device.Get(), n * 4), out = makeBuffer(device.Get(), n * 4);
      float *pin = mapped<float>(in.Get());
      fillRandom(pin, n, unsigned(t * 100 + round));
      Recorder r(device.Get());
      ComPtr<ID3D12PipelineState> pso;
      if (CGC_CPU_HAVE_KERNELS) {
        pso = makePipeline(device.Get(), addProgram(n));
        r.list->SetPipelineState(pso.Get());
        r.list->SetComputeRootUnorderedAccessView(0, in->GetGPUVirtualAddress());
        r.list->SetComputeRootUnorderedAccessView(1, in->GetGPUVirtualAddress());
        r.list->SetComputeRootUnorderedAccessView(2, out->GetGPUVirtualAddress());
        r.list->Dispatch(1, 1, 1);
      } else {
        r.list->CopyBufferRegion(out.Get(), 0, in.Get(), 0, n * 4);
      }
      if (r.list->Close() != S_OK) {
        ++failures;
        continue;
      }
      if (round % 2) {
        Queue own(device.Get());
        own.run({r.list.Get()});
      } else {
        std::lock_guard<std::mutex> lock(sharedMutex);
        shared.run({r.list.Get()});
      }
      const float *po = mapped<float>(out.Get());
      for (int64_t i = 0; i < n; ++i)
        if (po[i] != (CGC_CPU_HAVE_KERNELS ? pin[i] * 2 : pin[i])) {
          ++failures;
          break;
        }
    }
  };
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back(worker, t);
  for (auto &t : pool)
    t.join();
  EXPECT_EQ(failures.load(), 0);
}

} // namespace
