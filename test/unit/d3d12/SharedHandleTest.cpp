//===- SharedHandleTest.cpp - CreateSharedHandle / OpenSharedHandle -------===//
//
// Heaps, committed resources and fences shared through file descriptors
// (memfd), within a process (two devices) and across processes (a forked
// child that receives the handles over a socket with SCM_RIGHTS).
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

namespace cgc::test {
namespace {

D3D12_HEAP_DESC sharedHeapDesc(uint64_t bytes) {
  D3D12_HEAP_DESC desc = {};
  desc.SizeInBytes = bytes;
  desc.Properties.Type = D3D12_HEAP_TYPE_CUSTOM;
  desc.Properties.CPUPageProperty = D3D12_CPU_PAGE_PROPERTY_WRITE_BACK;
  desc.Properties.MemoryPoolPreference = D3D12_MEMORY_POOL_L0;
  desc.Flags = D3D12_HEAP_FLAG_SHARED | D3D12_HEAP_FLAG_ALLOW_ONLY_BUFFERS;
  return desc;
}

ComPtr<ID3D12Resource> placed(ID3D12Device *device, ID3D12Heap *heap, uint64_t bytes) {
  D3D12_RESOURCE_DESC desc = CD3DX12_RESOURCE_DESC::Buffer(bytes);
  ComPtr<ID3D12Resource> r;
  EXPECT_EQ(device->CreatePlacedResource(heap, 0, &desc, D3D12_RESOURCE_STATE_COMMON, nullptr,
                                         IID_PPV_ARGS(&r)),
            S_OK);
  return r;
}

std::string fdLink(int fd) {
  char path[64], target[256] = {};
  std::snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
  ssize_t n = readlink(path, target, sizeof(target) - 1);
  return n > 0 ? std::string(target, size_t(n)) : std::string();
}

TEST(SharedHandle, HeapBetweenDevices) {
  auto a = makeDevice(nullptr);
  auto b = makeDevice(nullptr);
  D3D12_HEAP_DESC desc = sharedHeapDesc(1 << 16);
  ComPtr<ID3D12Heap> heap;
  ASSERT_EQ(a->CreateHeap(&desc, IID_PPV_ARGS(&heap)), S_OK);
  HANDLE handle = nullptr;
  ASSERT_EQ(a->CreateSharedHandle(heap.Get(), nullptr, GENERIC_ALL, nullptr, &handle), S_OK);
  ASSERT_NE(handle, nullptr);
  int fd = CGCFdFromHandle(handle);
  EXPECT_NE(fdLink(fd).find("memfd:cgc-d3d12-heap"), std::string::npos) << fdLink(fd);

  ComPtr<ID3D12Heap> opened;
  ASSERT_EQ(b->OpenSharedHandle(handle, IID_PPV_ARGS(&opened)), S_OK)
      << CGCD3D12GetLastError();
  CGCCloseHandle(handle); // the opened heap keeps its own descriptor
  EXPECT_EQ(opened->GetDesc().SizeInBytes, desc.SizeInBytes);
  EXPECT_TRUE(opened->GetDesc().Flags & D3D12_HEAP_FLAG_SHARED);

  auto ra = placed(a.Get(), heap.Get(), 4096);
  auto rb = placed(b.Get(), opened.Get(), 4096);
  uint32_t *pa = mapped<uint32_t>(ra.Get());
  uint32_t *pb = mapped<uint32_t>(rb.Get());
  ASSERT_TRUE(pa && pb);
  // Two mappings of one memory: different addresses, same bytes.
  EXPECT_NE(static_cast<void *>(pa), static_cast<void *>(pb));
  for (uint32_t i = 0; i < 1024; ++i)
    pa[i] = i * 7 + 1;
  for (uint32_t i = 0; i < 1024; ++i)
    ASSERT_EQ(pb[i], i * 7 + 1);
  pb[5] = 12345;
  EXPECT_EQ(pa[5], 12345u);
}

TEST(SharedHandle, CommittedResourceOpensAsResource) {
  auto a = makeDevice(nullptr);
  auto b = makeDevice(nullptr);
  D3D12_HEAP_PROPERTIES props = {};
  props.Type = D3D12_HEAP_TYPE_CUSTOM;
  props.CPUPageProperty = D3D12_CPU_PAGE_PROPERTY_WRITE_BACK;
  props.MemoryPoolPreference = D3D12_MEMORY_POOL_L0;
  D3D12_RESOURCE_DESC rd = CD3DX12_RESOURCE_DESC::Buffer(1000);
  ComPtr<ID3D12Resource> resource;
  ASSERT_EQ(a->CreateCommittedResource(&props, D3D12_HEAP_FLAG_SHARED, &rd,
                                       D3D12_RESOURCE_STATE_COMMON, nullptr,
                                       IID_PPV_ARGS(&resource)),
            S_OK);
  HANDLE handle = nullptr;
  ASSERT_EQ(a->CreateSharedHandle(resource.Get(), nullptr, GENERIC_ALL, nullptr, &handle), S_OK);
  ComPtr<ID3D12Resource> opened;
  ASSERT_EQ(b->OpenSharedHandle(handle, IID_PPV_ARGS(&opened)), S_OK) << CGCD3D12GetLastError();
  EXPECT_EQ(opened->GetDesc().Width, 1000u);
  uint8_t *pa = mapped<uint8_t>(resource.Get());
  uint8_t *pb = mapped<uint8_t>(opened.Get());
  for (int i = 0; i < 1000; ++i)
    pa[i] = uint8_t(i * 3);
  for (int i = 0; i < 1000; ++i)
    ASSERT_EQ(pb[i], uint8_t(i * 3));
  // The same handle opens as a heap too; a heap handle is no resource.
  ComPtr<ID3D12Heap> asHeap;
  EXPECT_EQ(b->OpenSharedHandle(handle, IID_PPV_ARGS(&asHeap)), S_OK);
  CGCCloseHandle(handle);

  D3D12_HEAP_DESC hd = sharedHeapDesc(1 << 16);
  ComPtr<ID3D12Heap> heap;
  ASSERT_EQ(a->CreateHeap(&hd, IID_PPV_ARGS(&heap)), S_OK);
  ASSERT_EQ(a->CreateSharedHandle(heap.Get(), nullptr, GENERIC_ALL, nullptr, &handle), S_OK);
  ComPtr<ID3D12Resource> notResource;
  EXPECT_EQ(b->OpenSharedHandle(handle, IID_PPV_ARGS(&notResource)), E_INVALIDARG);
  EXPECT_TRUE(anyMessageContains(b.Get(), {"OpenSharedHandle", "not a shared committed resource"}));
  CGCCloseHandle(handle);
}

TEST(SharedHandle, FenceTimelineBetweenDevices) {
  auto a = makeDevice(nullptr);
  auto b = makeDevice(nullptr);
  ComPtr<ID3D12Fence> fence;
  ASSERT_EQ(a->CreateFence(3, D3D12_FENCE_FLAG_SHARED, IID_PPV_ARGS(&fence)), S_OK);
  HANDLE handle = nullptr;
  ASSERT_EQ(a->CreateSharedHandle(fence.Get(), nullptr, GENERIC_ALL, nullptr, &handle), S_OK);
  ComPtr<ID3D12Fence1> opened;
  ASSERT_EQ(b->OpenSharedHandle(handle, IID_PPV_ARGS(&opened)), S_OK) << CGCD3D12GetLastError();
  CGCCloseHandle(handle);
  EXPECT_EQ(opened->GetCompletedValue(), 3u);
  EXPECT_TRUE(opened->GetCreationFlags() & D3D12_FENCE_FLAG_SHARED);

  // CPU signal on one side is seen on the other.
  ASSERT_EQ(fence->Signal(4), S_OK);
  EXPECT_EQ(opened->GetCompletedValue(), 4u);
  ASSERT_EQ(opened->Signal(5), S_OK);
  EXPECT_EQ(fence->GetCompletedValue(), 5u);

  // A queue of device b waits on the timeline; device a's queue signals it.
  Queue qb(b.Get());
  Queue qa(a.Get());
  ASSERT_EQ(qb.queue->Wait(opened.Get(), 7), S_OK);
  ASSERT_EQ(qb.queue->Signal(qb.fence.Get(), 1), S_OK);
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  EXPECT_EQ(qb.fence->GetCompletedValue(), 0u) << "the wait did not hold the queue";

  // An event registered on the opened fence fires when the other side signals.
  HANDLE event = CGCCreateEvent();
  ASSERT_EQ(opened->SetEventOnCompletion(7, event), S_OK);
  EXPECT_EQ(CGCWaitForEvent(event, 0), S_FALSE);
  ASSERT_EQ(qa.queue->Signal(fence.Get(), 7), S_OK);
  EXPECT_EQ(CGCWaitForEvent(event, 5000), S_OK);
  EXPECT_EQ(qb.fence->SetEventOnCompletion(1, nullptr), S_OK);
  EXPECT_EQ(opened->GetCompletedValue(), 7u);
  CGCCloseEvent(event);
}

TEST(SharedHandle, Errors) {
  auto device = makeDevice(nullptr);
  ComPtr<ID3D12Fence> local;
  ASSERT_EQ(device->CreateFence(0, D3D12_FENCE_FLAG_NONE, IID_PPV_ARGS(&local)), S_OK);
  HANDLE handle = nullptr;
  EXPECT_EQ(device->CreateSharedHandle(local.Get(), nullptr, GENERIC_ALL, nullptr, &handle),
            E_INVALIDARG);
  EXPECT_TRUE(anyMessageContains(device.Get(), {"D3D12_FENCE_FLAG_SHARED"}));
  EXPECT_EQ(device->CreateSharedHandle(local.Get(), nullptr, GENERIC_ALL, nullptr, nullptr),
            E_INVALIDARG);

  ComPtr<ID3D12Fence> shared;
  ASSERT_EQ(device->CreateFence(0, D3D12_FENCE_FLAG_SHARED, IID_PPV_ARGS(&shared)), S_OK);
  EXPECT_EQ(device->CreateSharedHandle(shared.Get(), nullptr, GENERIC_ALL, L"name", &handle),
            E_NOTIMPL);
  ASSERT_EQ(device->CreateSharedHandle(shared.Get(), nullptr, GENERIC_ALL, nullptr, &handle),
            S_OK);
  // A fence is not memory.
  ComPtr<ID3D12Heap> heap;
  EXPECT_EQ(device->OpenSharedHandle(handle, IID_PPV_ARGS(&heap)), E_INVALIDARG);
  CGCCloseHandle(handle);

  // An eventfd is neither memory nor a fence.
  HANDLE event = CGCCreateEvent();
  ComPtr<ID3D12Fence> notFence;
  EXPECT_EQ(device->OpenSharedHandle(event, IID_PPV_ARGS(&notFence)), E_INVALIDARG);
  EXPECT_EQ(device->OpenSharedHandle(event, IID_PPV_ARGS(&heap)), E_INVALIDARG);
  EXPECT_TRUE(anyMessageContains(device.Get(), {"OpenSharedHandle", "not a mappable file"}));
  CGCCloseEvent(event);
  EXPECT_EQ(device->OpenSharedHandle(nullptr, IID_PPV_ARGS(&heap)), E_INVALIDARG);

  // A memfd the application made is a heap.
  int fd = memfd_create("app-buffer", MFD_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(ftruncate(fd, 8192), 0);
  EXPECT_EQ(device->OpenSharedHandle(CGCHandleFromFd(fd), IID_PPV_ARGS(&heap)), S_OK);
  EXPECT_EQ(heap->GetDesc().SizeInBytes, 8192u);
  close(fd);
}

// Sends `fds` over a UNIX socket.
void sendFds(int socket, const std::vector<int> &fds) {
  char byte = 'h';
  iovec iov = {&byte, 1};
  std::vector<char> control(CMSG_SPACE(sizeof(int) * fds.size()));
  msghdr msg = {};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control.data();
  msg.msg_controllen = control.size();
  cmsghdr *cmsg = CMSG_FIRSTHDR(&msg);
  cmsg->cmsg_level = SOL_SOCKET;
  cmsg->cmsg_type = SCM_RIGHTS;
  cmsg->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
  std::memcpy(CMSG_DATA(cmsg), fds.data(), sizeof(int) * fds.size());
  ASSERT_EQ(sendmsg(socket, &msg, 0), 1);
}

std::vector<int> receiveFds(int socket, size_t count) {
  char byte;
  iovec iov = {&byte, 1};
  std::vector<char> control(CMSG_SPACE(sizeof(int) * count));
  msghdr msg = {};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control.data();
  msg.msg_controllen = control.size();
  if (recvmsg(socket, &msg, 0) != 1)
    return {};
  cmsghdr *cmsg = CMSG_FIRSTHDR(&msg);
  if (!cmsg || cmsg->cmsg_type != SCM_RIGHTS)
    return {};
  std::vector<int> fds(count);
  std::memcpy(fds.data(), CMSG_DATA(cmsg), sizeof(int) * count);
  return fds;
}

// The child: opens the heap and the fence it received, waits for value 1,
// doubles every word, signals 2 from its own queue. Exit code 0 on success.
int childProcess(int socket) {
  std::vector<int> fds = receiveFds(socket, 2);
  if (fds.size() != 2)
    return 10;
  if (CGCD3D12SelectDriver(nullptr) != S_OK)
    return 11;
  ComPtr<ID3D12Device> device;
  if (D3D12CreateDevice(nullptr, D3D_FEATURE_LEVEL_12_0, IID_PPV_ARGS(&device)) != S_OK)
    return 12;
  ComPtr<ID3D12Heap> heap;
  ComPtr<ID3D12Fence> fence;
  if (device->OpenSharedHandle(CGCHandleFromFd(fds[0]), IID_PPV_ARGS(&heap)) != S_OK)
    return 13;
  if (device->OpenSharedHandle(CGCHandleFromFd(fds[1]), IID_PPV_ARGS(&fence)) != S_OK)
    return 14;
  close(fds[0]);
  close(fds[1]);
  D3D12_RESOURCE_DESC rd = CD3DX12_RESOURCE_DESC::Buffer(4096);
  ComPtr<ID3D12Resource> buffer;
  if (device->CreatePlacedResource(heap.Get(), 0, &rd, D3D12_RESOURCE_STATE_COMMON, nullptr,
                                   IID_PPV_ARGS(&buffer)) != S_OK)
    return 15;
  if (fence->SetEventOnCompletion(1, nullptr) != S_OK) // blocks until the parent signals
    return 16;
  uint32_t *data = nullptr;
  if (buffer->Map(0, nullptr, reinterpret_cast<void **>(&data)) != S_OK)
    return 17;
  for (int i = 0; i < 1024; ++i)
    data[i] *= 2;
  D3D12_COMMAND_QUEUE_DESC qd = {};
  qd.Type = D3D12_COMMAND_LIST_TYPE_COMPUTE;
  ComPtr<ID3D12CommandQueue> queue;
  if (device->CreateCommandQueue(&qd, IID_PPV_ARGS(&queue)) != S_OK)
    return 18;
  if (queue->Signal(fence.Get(), 2) != S_OK)
    return 19;
  // Keep the queue alive until it has signaled.
  while (fence->GetCompletedValue() < 2)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return 0;
}

TEST(SharedHandle, AcrossProcesses) {
  int sockets[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sockets), 0);
  // Fork before this test creates any device or thread.
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    close(sockets[0]);
    _exit(childProcess(sockets[1]));
  }
  close(sockets[1]);

  auto device = makeDevice(nullptr);
  D3D12_HEAP_DESC hd = sharedHeapDesc(1 << 16);
  ComPtr<ID3D12Heap> heap;
  ASSERT_EQ(device->CreateHeap(&hd, IID_PPV_ARGS(&heap)), S_OK);
  ComPtr<ID3D12Fence> fence;
  ASSERT_EQ(device->CreateFence(0, D3D12_FENCE_FLAG_SHARED, IID_PPV_ARGS(&fence)), S_OK);
  HANDLE heapHandle = nullptr, fenceHandle = nullptr;
  ASSERT_EQ(device->CreateSharedHandle(heap.Get(), nullptr, GENERIC_ALL, nullptr, &heapHandle),
            S_OK);
  ASSERT_EQ(device->CreateSharedHandle(fence.Get(), nullptr, GENERIC_ALL, nullptr, &fenceHandle),
            S_OK);
  sendFds(sockets[0], {CGCFdFromHandle(heapHandle), CGCFdFromHandle(fenceHandle)});
  CGCCloseHandle(heapHandle);
  CGCCloseHandle(fenceHandle);

  auto buffer = placed(device.Get(), heap.Get(), 4096);
  uint32_t *data = mapped<uint32_t>(buffer.Get());
  for (uint32_t i = 0; i < 1024; ++i)
    data[i] = i + 1;
  // Hand over through the timeline, then wait for the child's value.
  HANDLE event = CGCCreateEvent();
  ASSERT_EQ(fence->SetEventOnCompletion(2, event), S_OK);
  ASSERT_EQ(fence->Signal(1), S_OK);
  EXPECT_EQ(CGCWaitForEvent(event, 20000), S_OK) << "the child never signaled 2";
  CGCCloseEvent(event);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "child failed at step " << WEXITSTATUS(status);
  EXPECT_EQ(fence->GetCompletedValue(), 2u);
  for (uint32_t i = 0; i < 1024; ++i)
    ASSERT_EQ(data[i], 2 * (i + 1)) << "word " << i;
  close(sockets[0]);
}

} // namespace
} // namespace cgc::test
