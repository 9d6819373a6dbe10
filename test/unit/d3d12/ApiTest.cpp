//===- ApiTest.cpp - Devices, memory, queues, fences on the CPU driver -===//

#include "TestUtil.h"

#include <dirent.h>
#include <sys/mman.h>

#include <chrono>
#include <fstream>
#include <numeric>
#include <string>
#include <thread>

using namespace cgc;
using namespace cgc::test;

namespace {

TEST(Device, CreationAndInterfaces) {
  ComPtr<ID3D12Device> device;
  ASSERT_EQ(D3D12CreateDevice(nullptr, D3D_FEATURE_LEVEL_11_0, IID_PPV_ARGS(&device)), S_OK)
      << CGCD3D12GetLastError();
  // Support test without a device.
  EXPECT_EQ(D3D12CreateDevice(nullptr, D3D_FEATURE_LEVEL_12_0, __uuidof(ID3D12Device), nullptr),
            S_FALSE);
  ComPtr<ID3D12Device> tooNew;
  EXPECT_EQ(D3D12CreateDevice(nullptr, D3D_FEATURE_LEVEL_12_2, IID_PPV_ARGS(&tooNew)),
            E_INVALIDARG);
  ComPtr<ID3D12Device14> d14;
  ASSERT_EQ(device.As(&d14), S_OK);
  ComPtr<ID3D12Device5> d5;
  EXPECT_EQ(device.As(&d5), S_OK);
  EXPECT_EQ(static_cast<ID3D12Device *>(d5.Get()), device.Get());
  ComPtr<ID3D12InfoQueue> info;
  EXPECT_EQ(device.As(&info), S_OK);
  ComPtr<ID3D12Resource> notADevice;
  EXPECT_EQ(device.As(&notADevice), E_NOINTERFACE);
  // Reference counting.
  ID3D12Device *raw = d14.Get();
  ULONG refs = raw->AddRef();
  EXPECT_EQ(raw->Release(), refs - 1);
  EXPECT_EQ(device->GetNodeCount(), 1u);
  EXPECT_EQ(device->GetDeviceRemovedReason(), S_OK);
  // Private data and names.
  const GUID key = {0xabcdef01, 1, 2, {3, 4, 5, 6, 7, 8, 9, 10}};
  uint32_t value = 42, back = 0;
  UINT size = sizeof(back);
  EXPECT_EQ(device->SetPrivateData(key, sizeof(value), &value), S_OK);
  EXPECT_EQ(device->GetPrivateData(key, &size, &back), S_OK);
  EXPECT_EQ(back, 42u);
}

TEST(Device, DriverSelection) {
  EXPECT_EQ(CGCD3D12SelectDriver("/nonexistent/libcgc_driver_x.so"), E_INVALIDARG);
  EXPECT_NE(std::string(CGCD3D12GetLastError()).find("/nonexistent/libcgc_driver_x.so"),
            std::string::npos);
  EXPECT_EQ(CGCD3D12SelectDriver(badVersionDriverPath()), E_INVALIDARG);
  EXPECT_NE(std::string(CGCD3D12GetLastError()).find("DDI version 2.0"), std::string::npos)
      << CGCD3D12GetLastError();
  // A library that is not a driver.
  EXPECT_EQ(CGCD3D12SelectDriver("libc.so.6"), E_INVALIDARG);
  EXPECT_EQ(CGCD3D12SelectDriver("cpu"), S_OK);
  EXPECT_EQ(CGCD3D12SelectDriver(nullptr), S_OK);
  SIZE_T bytes = 0;
  UINT count = 0;
  ASSERT_EQ(CGCD3D12EnumerateDrivers(nullptr, &bytes, &count), S_OK);
  ASSERT_GE(count, 1u);
  std::vector<char> names(bytes);
  ASSERT_EQ(CGCD3D12EnumerateDrivers(names.data(), &bytes, &count), S_OK);
  EXPECT_NE(std::string(names.data(), names.size()).find("libcgc_driver_cpu.so"),
            std::string::npos);
}

TEST(Device, FeatureSupport) {
  auto device = makeDevice(nullptr);
  D3D12_FEATURE_DATA_D3D12_OPTIONS_MLIR options = {};
  ASSERT_EQ(device->CheckFeatureSupport(D3D12_FEATURE_D3D12_OPTIONS_MLIR, &options, sizeof(options)),
            S_OK);
  // The CPU driver supports MLIR programs (precompiled ones without
  // a JIT) and CGC_SUBGRAPH_PARTITION; CGC_INPUT is not for drivers.
  const GUID partition = CGC_SUBGRAPH_PARTITION, input = CGC_INPUT;
  GUID requested[2] = {partition, input};
  BOOL supported[2] = {TRUE, TRUE};
  D3D12_FEATURE_DATA_MLIR_INTERFACE_SUPPORT support = {2, requested, supported};
  ASSERT_EQ(device->CheckFeatureSupport(D3D12_FEATURE_MLIR_INTERFACE_SUPPORT, &support,
                                        sizeof(support)),
            S_OK);
  EXPECT_FALSE(supported[1]);
  EXPECT_EQ(options.MlirProgramsTier, D3D12_MLIR_PROGRAMS_TIER_2_0);
  EXPECT_TRUE(supported[0]);

  D3D12_FEATURE_DATA_ARCHITECTURE arch = {};
  ASSERT_EQ(device->CheckFeatureSupport(D3D12_FEATURE_ARCHITECTURE, &arch, sizeof(arch)), S_OK);
  EXPECT_TRUE(arch.UMA && arch.CacheCoherentUMA);
  D3D_FEATURE_LEVEL levels[] = {D3D_FEATURE_LEVEL_11_0, D3D_FEATURE_LEVEL_12_0,
                                D3D_FEATURE_LEVEL_12_1};
  D3D12_FEATURE_DATA_FEATURE_LEVELS fl = {3, levels, D3D_FEATURE_LEVEL(0)};
  ASSERT_EQ(device->CheckFeatureSupport(D3D12_FEATURE_FEATURE_LEVELS, &fl, sizeof(fl)), S_OK);
  EXPECT_EQ(fl.MaxSupportedFeatureLevel, D3D_FEATURE_LEVEL_12_0);
  D3D12_FEATURE_DATA_D3D12_OPTIONS o = {};
  EXPECT_EQ(device->CheckFeatureSupport(D3D12_FEATURE_D3D12_OPTIONS, &o, sizeof(o)), E_NOTIMPL);
  EXPECT_EQ(device->CheckFeatureSupport(D3D12_FEATURE_D3D12_OPTIONS_MLIR, nullptr, 4), E_INVALIDARG);
}

TEST(Memory, CommittedBuffersMapAndAddresses) {
  auto device = makeDevice(nullptr);
  auto buffer = makeBuffer(device.Get(), 1000);
  ASSERT_TRUE(buffer);
  D3D12_RESOURCE_DESC desc = buffer->GetDesc();
  EXPECT_EQ(desc.Width, 1000u);
  uint8_t *cpu = mapped<uint8_t>(buffer.Get());
  // GPU virtual address = host address, and heaps start zeroed.
  EXPECT_EQ(buffer->GetGPUVirtualAddress(), reinterpret_cast<uint64_t>(cpu));
  EXPECT_EQ(std::accumulate(cpu, cpu + 1000, 0), 0);
  // DEFAULT heaps cannot be mapped (as on real D3D12); UPLOAD can.
  auto gpuOnly = makeBuffer(device.Get(), 64, D3D12_HEAP_TYPE_DEFAULT);
  void *p = nullptr;
  EXPECT_EQ(gpuOnly->Map(0, nullptr, &p), E_INVALIDARG);
  auto upload = makeBuffer(device.Get(), 64, D3D12_HEAP_TYPE_UPLOAD);
  EXPECT_EQ(upload->Map(0, nullptr, &p), S_OK);
  EXPECT_EQ(upload->Map(1, nullptr, &p), E_INVALIDARG);
  // Textures are out of scope.
  D3D12_HEAP_PROPERTIES props = {};
  props.Type = D3D12_HEAP_TYPE_DEFAULT;
  D3D12_RESOURCE_DESC tex = CD3DX12_RESOURCE_DESC::Tex2D(DXGI_FORMAT_R8G8B8A8_UNORM, 4, 4);
  ComPtr<ID3D12Resource> t;
  EXPECT_EQ(device->CreateCommittedResource(&props, D3D12_HEAP_FLAG_NONE, &tex,
                                            D3D12_RESOURCE_STATE_COMMON, nullptr, IID_PPV_ARGS(&t)),
            E_NOTIMPL);
}

TEST(Memory, PlacedResourcesAndExistingHeaps) {
  auto device = makeDevice(nullptr);
  D3D12_HEAP_DESC hd = {};
  hd.SizeInBytes = 4 << 16;
  hd.Properties.Type = D3D12_HEAP_TYPE_CUSTOM;
  hd.Properties.CPUPageProperty = D3D12_CPU_PAGE_PROPERTY_WRITE_BACK;
  hd.Properties.MemoryPoolPreference = D3D12_MEMORY_POOL_L0;
  ComPtr<ID3D12Heap> heap;
  ASSERT_EQ(device->CreateHeap(&hd, IID_PPV_ARGS(&heap)), S_OK);
  D3D12_RESOURCE_DESC desc = CD3DX12_RESOURCE_DESC::Buffer(1 << 16);
  ComPtr<ID3D12Resource> a, b, bad;
  ASSERT_EQ(device->CreatePlacedResource(heap.Get(), 0, &desc, D3D12_RESOURCE_STATE_COMMON, nullptr,
                                         IID_PPV_ARGS(&a)),
            S_OK);
  ASSERT_EQ(device->CreatePlacedResource(heap.Get(), 2 << 16, &desc, D3D12_RESOURCE_STATE_COMMON,
                                         nullptr, IID_PPV_ARGS(&b)),
            S_OK);
  EXPECT_EQ(b->GetGPUVirtualAddress() - a->GetGPUVirtualAddress(), uint64_t(2 << 16));
  EXPECT_EQ(device->CreatePlacedResource(heap.Get(), 4 << 16, &desc, D3D12_RESOURCE_STATE_COMMON,
                                         nullptr, IID_PPV_ARGS(&bad)),
            E_INVALIDARG);
  EXPECT_EQ(device->CreatePlacedResource(heap.Get(), 100, &desc, D3D12_RESOURCE_STATE_COMMON,
                                         nullptr, IID_PPV_ARGS(&bad)),
            E_INVALIDARG);

  // Application memory becomes a heap in place.
  const size_t bytes = 1 << 20;
  void *memory = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(memory, MAP_FAILED);
  static_cast<uint32_t *>(memory)[5] = 0xC0FFEE;
  ComPtr<ID3D12Heap> existing, existing1;
  ASSERT_EQ(device->OpenExistingHeapFromAddress(memory, IID_PPV_ARGS(&existing)), S_OK)
      << CGCD3D12GetLastError();
  EXPECT_GE(existing->GetDesc().SizeInBytes, bytes);
  ASSERT_EQ(device->OpenExistingHeapFromAddress1(memory, bytes, IID_PPV_ARGS(&existing1)), S_OK);
  ComPtr<ID3D12Resource> view;
  ASSERT_EQ(device->CreatePlacedResource(existing1.Get(), 0, &desc, D3D12_RESOURCE_STATE_COMMON,
                                         nullptr, IID_PPV_ARGS(&view)),
            S_OK);
  EXPECT_EQ(view->GetGPUVirtualAddress(), reinterpret_cast<uint64_t>(memory));
  EXPECT_EQ(mapped<uint32_t>(view.Get())[5], 0xC0FFEEu);
  EXPECT_EQ(device->OpenExistingHeapFromAddress(static_cast<uint8_t *>(memory) + 8,
                                                IID_PPV_ARGS(&existing)),
            E_INVALIDARG);
  view.Reset();
  existing.Reset();
  existing1.Reset();
  munmap(memory, bytes);
}

TEST(Queue, CopiesRunInOrderWithBarriers) {
  auto device = makeDevice(nullptr);
  const uint64_t n = 1 << 16;
  auto a = makeBuffer(device.Get(), n), b = makeBuffer(device.Get(), n), c = makeBuffer(device.Get(), n);
  uint8_t *pa = mapped<uint8_t>(a.Get());
  for (uint64_t i = 0; i < n; ++i)
    pa[i] = uint8_t(i * 7 + 1);
  Recorder r(device.Get());
  r.list->CopyBufferRegion(b.Get(), 0, a.Get(), 0, n);
  // b must be complete before it is read: a buffer barrier on b.
  D3D12_BUFFER_BARRIER bb = {D3D12_BARRIER_SYNC_COPY, D3D12_BARRIER_SYNC_COPY,
                             D3D12_BARRIER_ACCESS_COPY_DEST, D3D12_BARRIER_ACCESS_COPY_SOURCE,
                             b.Get(), 0, UINT64_MAX};
  D3D12_BARRIER_GROUP group = {D3D12_BARRIER_TYPE_BUFFER, 1, {}};
  group.pBufferBarriers = &bb;
  r.list->Barrier(1, &group);
  r.list->CopyBufferRegion(c.Get(), 16, b.Get(), 0, n - 16);
  ASSERT_EQ(r.list->Close(), S_OK);
  Queue q(device.Get());
  q.run({r.list.Get()});
  const uint8_t *pc = mapped<uint8_t>(c.Get());
  for (uint64_t i = 16; i < n; i += 997)
    ASSERT_EQ(pc[i], uint8_t((i - 16) * 7 + 1)) << i;
  // A list can run again (and after Reset+re-record, its old submission is
  // unaffected).
  std::memset(mapped<uint8_t>(c.Get()), 0, n);
  q.run({r.list.Get()});
  EXPECT_EQ(pc[16], pa[0]);
}

TEST(Queue, CommandListErrors) {
  auto device = makeDevice(nullptr);
  auto a = makeBuffer(device.Get(), 64);
  Recorder r(device.Get());
  r.list->CopyBufferRegion(a.Get(), 32, a.Get(), 0, 64);
  EXPECT_EQ(r.list->Close(), E_INVALIDARG);
  EXPECT_EQ(r.list->Close(), E_FAIL); // already closed
  // A list whose Close failed is not executed.
  Queue q(device.Get());
  q.run({r.list.Get()});
  EXPECT_TRUE(anyMessageContains(device.Get(), {"ExecuteCommandLists", "not closed"}));
  // Out-of-scope commands make Close fail with E_NOTIMPL.
  ASSERT_EQ(r.list->Reset(r.allocator.Get(), nullptr), S_OK);
  r.list->DrawInstanced(3, 1, 0, 0);
  EXPECT_EQ(r.list->Close(), E_NOTIMPL);
  EXPECT_TRUE(anyMessageContains(device.Get(), {"DrawInstanced", "not implemented"}));
  // Out-of-scope device methods return E_NOTIMPL.
  ComPtr<ID3D12RootSignature> rs;
  EXPECT_EQ(device->CreateRootSignature(0, "x", 1, IID_PPV_ARGS(&rs)), E_NOTIMPL);
  D3D12_DESCRIPTOR_HEAP_DESC dh = {};
  dh.Type = D3D12_DESCRIPTOR_HEAP_TYPE_CBV_SRV_UAV;
  dh.NumDescriptors = 4;
  ComPtr<ID3D12DescriptorHeap> heap;
  EXPECT_EQ(device->CreateDescriptorHeap(&dh, IID_PPV_ARGS(&heap)), E_NOTIMPL);
  // Sharing needs D3D12_HEAP_FLAG_SHARED (SharedHandleTest.cpp).
  HANDLE h = nullptr;
  EXPECT_EQ(device->CreateSharedHandle(a.Get(), nullptr, 0x10000000, nullptr, &h), E_INVALIDARG);
  EXPECT_TRUE(anyMessageContains(device.Get(), {"CreateSharedHandle", "D3D12_HEAP_FLAG_SHARED"}));
}

/// The voluntary context switches of this process's thread named `name`
/// (its wake-ups from sleep); -1 if there is no such thread.
long wakeUpsOfThread(const std::string &name) {
  DIR *tasks = opendir("/proc/self/task");
  if (!tasks)
    return -1;
  long found = -1;
  while (dirent *entry = readdir(tasks)) {
    std::string dir = std::string("/proc/self/task/") + entry->d_name;
    std::string comm;
    std::getline(std::ifstream(dir + "/comm"), comm);
    if (comm != name)
      continue;
    std::ifstream status(dir + "/status");
    for (std::string line; std::getline(status, line);)
      if (line.rfind("voluntary_ctxt_switches:", 0) == 0)
        found = std::stol(line.substr(line.find(':') + 1));
  }
  closedir(tasks);
  return found;
}

TEST(Queue, RunsWaitedForAreNotHandedToTheQueueThread) {
  // A thread that waits for its run with SetEventOnCompletion(value,
  // nullptr) runs it itself; the queue's thread must not be woken for each
  // such run (it competed for the cores with the caller and the driver's
  // workers: a perceptron at 2 threads took 3-4x its time in half the
  // processes). It looks at the queue every few milliseconds at most.
  // Copies of 4 KiB: short enough that the queue's thread, once woken, can
  // finish a run before the caller comes to wait for it; the caller's wait
  // is noted even then, so the runs still go to the caller.
  const uint64_t n = 1 << 12;
  auto device = makeDevice(nullptr);
  auto a = makeBuffer(device.Get(), n), b = makeBuffer(device.Get(), n);
  Recorder r(device.Get());
  r.list->CopyBufferRegion(b.Get(), 0, a.Get(), 0, n);
  ASSERT_EQ(r.list->Close(), S_OK);
  Queue q(device.Get());
  for (int i = 0; i < 10; ++i)
    q.run({r.list.Get()});
  // One look per 4 ms (0-1 in the ~4 ms these runs take here), with slack
  // for a slow machine. A queue thread woken by every submission has two
  // wake-ups per run (400 here); the code before 993d179 had 14-75 with
  // copies of 1 MiB, and with these short ones slept through most pushes
  // in its grace wait (so this size does not tell it apart; the perceptron
  // benchmark did). A caller preempted for longer than the queue's grace
  // makes the queue's thread take the next few runs (two wake-ups each):
  // the best of three tries counts.
  const int runs = 200;
  std::string tries;
  bool met = false;
  for (int attempt = 0; attempt < 3 && !met; ++attempt) {
    long before = wakeUpsOfThread("cgc-queue");
    ASSERT_GE(before, 0) << "no thread named cgc-queue";
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < runs; ++i)
      q.run({r.list.Get()});
    double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
            .count();
    long wakeUps = wakeUpsOfThread("cgc-queue") - before;
    met = wakeUps < runs / 8 && wakeUps <= long(ms / 4) + 4;
    tries += " " + std::to_string(wakeUps) + " in " + std::to_string(ms) + " ms;";
  }
  EXPECT_TRUE(met) << "wake-ups of the queue's thread in " << runs << " runs:" << tries;

  // Work submitted after helped runs still runs when nobody helps: for an
  // event's waiter, and for a thread that only polls.
  ID3D12CommandList *lists[] = {r.list.Get()};
  for (int round = 0; round < 3; ++round) {
    mapped<uint32_t>(a.Get())[0] = 100 + round;
    q.run({r.list.Get()}); // helped, so the next one is left for a helper first
    mapped<uint32_t>(a.Get())[0] = 200 + round;
    q.queue->ExecuteCommandLists(1, lists);
    ASSERT_EQ(q.queue->Signal(q.fence.Get(), ++q.value), S_OK);
    if (round == 0) {
      HANDLE event = CGCCreateEvent();
      ASSERT_NE(event, nullptr);
      ASSERT_EQ(q.fence->SetEventOnCompletion(q.value, event), S_OK);
      EXPECT_EQ(CGCWaitForEvent(event, 10000), S_OK);
      CGCCloseEvent(event);
    } else {
      auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (q.fence->GetCompletedValue() < q.value && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    ASSERT_EQ(q.fence->GetCompletedValue(), q.value) << "round " << round;
    EXPECT_EQ(mapped<uint32_t>(b.Get())[0], uint32_t(200 + round));
  }
}

TEST(Fence, CpuAndQueueTimelines) {
  auto device = makeDevice(nullptr);
  ComPtr<ID3D12Fence> fence;
  ASSERT_EQ(device->CreateFence(5, D3D12_FENCE_FLAG_NONE, IID_PPV_ARGS(&fence)), S_OK);
  EXPECT_EQ(fence->GetCompletedValue(), 5u);
  EXPECT_EQ(fence->Signal(7), S_OK);
  EXPECT_EQ(fence->GetCompletedValue(), 7u);
  EXPECT_EQ(fence->SetEventOnCompletion(6, nullptr), S_OK); // already reached

  // Queue B waits for the CPU to signal; queue A signals after B's copy.
  Queue qa(device.Get()), qb(device.Get());
  auto src = makeBuffer(device.Get(), 256), dst = makeBuffer(device.Get(), 256);
  mapped<uint32_t>(src.Get())[0] = 1234;
  Recorder r(device.Get());
  r.list->CopyBufferRegion(dst.Get(), 0, src.Get(), 0, 256);
  ASSERT_EQ(r.list->Close(), S_OK);
  ID3D12CommandList *lists[] = {r.list.Get()};
  EXPECT_EQ(qb.queue->Wait(fence.Get(), 10), S_OK);
  qb.queue->ExecuteCommandLists(1, lists);
  EXPECT_EQ(qb.queue->Signal(qb.fence.Get(), 1), S_OK);
  HANDLE event = CGCCreateEvent();
  ASSERT_NE(event, nullptr);
  EXPECT_EQ(qb.fence->SetEventOnCompletion(1, event), S_OK);
  // Nothing runs before the CPU signal.
  EXPECT_EQ(CGCWaitForEvent(event, 50), S_FALSE);
  EXPECT_EQ(mapped<uint32_t>(dst.Get())[0], 0u);
  EXPECT_EQ(fence->Signal(10), S_OK);
  EXPECT_EQ(CGCWaitForEvent(event, 10000), S_OK);
  EXPECT_EQ(mapped<uint32_t>(dst.Get())[0], 1234u);
  CGCCloseEvent(event);

  // Cross-queue: A waits on B's fence.
  EXPECT_EQ(qa.queue->Wait(qb.fence.Get(), 2), S_OK);
  EXPECT_EQ(qa.queue->Signal(qa.fence.Get(), 1), S_OK);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(qa.fence->GetCompletedValue(), 0u);
  EXPECT_EQ(qb.queue->Signal(qb.fence.Get(), 2), S_OK);
  EXPECT_EQ(qa.fence->SetEventOnCompletion(1, nullptr), S_OK);
  EXPECT_EQ(qa.fence->GetCompletedValue(), 1u);
}

} // namespace
