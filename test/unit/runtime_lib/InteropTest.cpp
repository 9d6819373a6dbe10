//===- InteropTest.cpp - External memory and semaphores -------------------===//
//
// Imported buffers are used in place (the bound GPU addresses are the
// imported mappings, no tensor byte is copied), semaphores order runs on a
// stream, unsupported handle types are clear errors, and a second process
// imports a shared buffer and a timeline semaphore, waits, runs, signals.
//
//===----------------------------------------------------------------------===//

#include <gtest/gtest.h>

#include "TestModel.h"

#include "cgc/d3d12_mlir.h"
#include "cgc/runtime.hpp"

#include <wrl/client.h>

#include <chrono>
#include <cstring>
#include <thread>

#include <spawn.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

namespace cgc::test {
namespace {

using Microsoft::WRL::ComPtr;

struct Status {
  cgc_status_code_t code;
  std::string message;
};
Status take(cgc_status_t status) {
  Status s{cgc_status_code(status), cgc_status_message(status)};
  cgc_status_free(status);
  return s;
}

/// A memfd of `bytes`, mapped read-write here.
struct Memfd {
  int fd = -1;
  uint8_t *data = nullptr;
  size_t size = 0;
  explicit Memfd(size_t bytes) : size(bytes) {
    fd = memfd_create("interop-test", MFD_CLOEXEC);
    EXPECT_GE(fd, 0);
    EXPECT_EQ(ftruncate(fd, off_t(bytes)), 0);
    data = static_cast<uint8_t *>(mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
  }
  ~Memfd() {
    munmap(data, size);
    close(fd);
  }
};

cgc_external_memory_descriptor_t fdDesc(int fd, uint64_t size, uint64_t offset,
                                        cgc_external_memory_access_mode_t access) {
  cgc_external_memory_descriptor_t d = {};
  d.version = CGC_EXTERNAL_MEMORY_DESCRIPTOR_VERSION;
  d.handle_type = CGC_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD;
  d.fd = fd;
  d.size_bytes = size;
  d.offset_bytes = offset;
  d.access_mode = access;
  return d;
}

class InteropTest : public ::testing::Test {
protected:
  void SetUp() override { path = writeTemp(buildReluAddModel(), "interop.cgc"); }
  void TearDown() override { std::remove(path.c_str()); }
  std::string path;
};

TEST_F(InteropTest, Capabilities) {
  Device device;
  Importer importer(device);
  EXPECT_TRUE(importer.canImportMemory(CGC_EXTERNAL_MEMORY_HANDLE_TYPE_D3D12_HEAP));
  EXPECT_TRUE(importer.canImportMemory(CGC_EXTERNAL_MEMORY_HANDLE_TYPE_D3D12_RESOURCE));
  EXPECT_TRUE(importer.canImportMemory(CGC_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD));
  EXPECT_FALSE(importer.canImportMemory(CGC_EXTERNAL_MEMORY_HANDLE_TYPE_DMA_BUF));
  EXPECT_TRUE(importer.canImportSemaphore(CGC_EXTERNAL_SEMAPHORE_TYPE_D3D12_FENCE));
  EXPECT_FALSE(importer.canImportSemaphore(CGC_EXTERNAL_SEMAPHORE_TYPE_SYNC_FD));

  // Unsupported types are UNIMPLEMENTED with a reason.
  Memfd memfd(4096);
  cgc_external_memory_descriptor_t d = fdDesc(memfd.fd, 4096, 0,
                                              CGC_EXTERNAL_MEMORY_ACCESS_READ_WRITE);
  d.handle_type = CGC_EXTERNAL_MEMORY_HANDLE_TYPE_DMA_BUF;
  cgc_external_memory_t *m = nullptr;
  Status s = take(cgc_importer_import_memory(importer.get(), &d, &m));
  EXPECT_EQ(s.code, CGC_STATUS_UNIMPLEMENTED);
  EXPECT_NE(s.message.find("dma-buf"), std::string::npos) << s.message;
  cgc_external_semaphore_descriptor_t sd = {CGC_EXTERNAL_SEMAPHORE_DESCRIPTOR_VERSION,
                                            CGC_EXTERNAL_SEMAPHORE_TYPE_SYNC_FD, nullptr};
  cgc_external_semaphore_t *sem = nullptr;
  s = take(cgc_importer_import_semaphore(importer.get(), &sd, &sem));
  EXPECT_EQ(s.code, CGC_STATUS_UNIMPLEMENTED);
  EXPECT_NE(s.message.find("sync_file"), std::string::npos) << s.message;
  d.handle_type = cgc_external_memory_handle_type_t(42);
  s = take(cgc_importer_import_memory(importer.get(), &d, &m));
  EXPECT_EQ(s.code, CGC_STATUS_UNIMPLEMENTED);
}

TEST_F(InteropTest, ImportedMemoryIsUsedInPlace) {
  Device device;
  Model model(device, path);
  Context context(model);
  Importer importer(device);
  // Input at offset 128 of one memfd, output in another, read-write.
  Memfd inFd(8192), outFd(4096);
  std::vector<float> x(16);
  for (int i = 0; i < 16; ++i)
    x[i] = float(i) * 0.75f - 4.0f;
  std::memcpy(inFd.data + 4096 + 128, x.data(), kBytes);
  ExternalMemory in = importer.importMemory(
      fdDesc(inFd.fd, 4096, 4096, CGC_EXTERNAL_MEMORY_ACCESS_READ_ONLY));
  ExternalMemory out = importer.importMemory(
      fdDesc(outFd.fd, 4096, 0, CGC_EXTERNAL_MEMORY_ACCESS_WRITE_ONLY));
  EXPECT_EQ(in.size(), 4096u);
  Tensor tin = importer.createTensor(in, CGC_DTYPE_FLOAT32, kShape, 128);
  Tensor tout = importer.createTensor(out, CGC_DTYPE_FLOAT32, kShape);
  // Bound by address: the tensors are the imported mappings themselves.
  EXPECT_EQ(tin.gpuAddress(), reinterpret_cast<uint64_t>(in.data()) + 128);
  EXPECT_EQ(tout.gpuAddress(), reinterpret_cast<uint64_t>(out.data()));
  EXPECT_EQ(std::memcmp(tin.data(), x.data(), kBytes), 0);
  context.bindInput(0, tin);
  context.bindOutput(0, tout);
  context.run();
  // The result is in the application's memfd (seen through its own mapping).
  std::vector<float> y(16);
  std::memcpy(y.data(), outFd.data, kBytes);
  EXPECT_EQ(y, expected(x));
  // A second run after the application changed the input in place.
  for (int i = 0; i < 16; ++i)
    x[i] = -x[i];
  std::memcpy(inFd.data + 4096 + 128, x.data(), kBytes);
  context.run();
  std::memcpy(y.data(), outFd.data, kBytes);
  EXPECT_EQ(y, expected(x));
  cgc_context_stats_t stats = context.stats();
  EXPECT_EQ(stats.bytes_copied, 0u) << "the runtime copied tensor bytes";
  EXPECT_EQ(stats.recordings, 1u);
  EXPECT_EQ(stats.runs, 2u);
}

TEST_F(InteropTest, ImportErrors) {
  Device device;
  Model model(device, path);
  Context context(model);
  Importer importer(device);
  Memfd memfd(4096);

  // Too small for the tensor.
  ExternalMemory small =
      importer.importMemory(fdDesc(memfd.fd, 48, 0, CGC_EXTERNAL_MEMORY_ACCESS_READ_WRITE));
  cgc_external_tensor_descriptor_t td = {CGC_EXTERNAL_TENSOR_DESCRIPTOR_VERSION,
                                         CGC_DTYPE_FLOAT32, kShape.data(), kShape.size(), 0};
  cgc_tensor_t *t = nullptr;
  Status s = take(cgc_importer_create_tensor(importer.get(), small.get(), &td, &t));
  EXPECT_EQ(s.code, CGC_STATUS_OUT_OF_RANGE);
  EXPECT_NE(s.message.find("float32[2,8] (64 bytes at offset 0) does not fit in the imported "
                           "memory of 48 bytes"),
            std::string::npos)
      << s.message;
  ExternalMemory whole =
      importer.importMemory(fdDesc(memfd.fd, 4096, 0, CGC_EXTERNAL_MEMORY_ACCESS_READ_WRITE));
  td.offset_bytes = 4096 - 32;
  s = take(cgc_importer_create_tensor(importer.get(), whole.get(), &td, &t));
  EXPECT_EQ(s.code, CGC_STATUS_OUT_OF_RANGE) << s.message;

  // Outside the allocation.
  cgc_external_memory_descriptor_t d =
      fdDesc(memfd.fd, 4096, 64, CGC_EXTERNAL_MEMORY_ACCESS_READ_WRITE);
  cgc_external_memory_t *m = nullptr;
  s = take(cgc_importer_import_memory(importer.get(), &d, &m));
  EXPECT_EQ(s.code, CGC_STATUS_OUT_OF_RANGE);
  EXPECT_NE(s.message.find("outside the 4096-byte allocation"), std::string::npos) << s.message;
  // Not a file: a pipe.
  int pipes[2];
  ASSERT_EQ(pipe(pipes), 0);
  d = fdDesc(pipes[0], 64, 0, CGC_EXTERNAL_MEMORY_ACCESS_READ_WRITE);
  s = take(cgc_importer_import_memory(importer.get(), &d, &m));
  EXPECT_EQ(s.code, CGC_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(s.message.find("not a mappable file"), std::string::npos) << s.message;
  close(pipes[0]);
  close(pipes[1]);
  d = fdDesc(-1, 64, 0, CGC_EXTERNAL_MEMORY_ACCESS_READ_WRITE);
  s = take(cgc_importer_import_memory(importer.get(), &d, &m));
  EXPECT_EQ(s.code, CGC_STATUS_INVALID_ARGUMENT);
  d = fdDesc(memfd.fd, 64, 0, CGC_EXTERNAL_MEMORY_ACCESS_READ_WRITE);
  d.version = 99;
  s = take(cgc_importer_import_memory(importer.get(), &d, &m));
  EXPECT_EQ(s.code, CGC_STATUS_INVALID_ARGUMENT);
  // A memfd is not a D3D12 shared resource.
  d = fdDesc(memfd.fd, 64, 0, CGC_EXTERNAL_MEMORY_ACCESS_READ_WRITE);
  d.handle_type = CGC_EXTERNAL_MEMORY_HANDLE_TYPE_D3D12_RESOURCE;
  d.native_handle = CGCHandleFromFd(memfd.fd);
  s = take(cgc_importer_import_memory(importer.get(), &d, &m));
  EXPECT_EQ(s.code, CGC_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(s.message.find("not a shared committed resource"), std::string::npos) << s.message;

  // Read-only memory cannot be an output.
  ExternalMemory ro =
      importer.importMemory(fdDesc(memfd.fd, 4096, 0, CGC_EXTERNAL_MEMORY_ACCESS_READ_ONLY));
  Tensor tro = importer.createTensor(ro, CGC_DTYPE_FLOAT32, kShape);
  s = take(cgc_context_bind_output(context.get(), 0, tro.get()));
  EXPECT_EQ(s.code, CGC_STATUS_FAILED_PRECONDITION);
  EXPECT_NE(s.message.find("imported read-only"), std::string::npos) << s.message;
  EXPECT_NO_THROW(context.bindInput(0, tro)); // as an input it is fine
  // A wrong shape over imported memory is the same error as any other.
  Tensor wrong = importer.createTensor(whole, CGC_DTYPE_FLOAT32, {4, 4});
  s = take(cgc_context_bind_input(context.get(), 0, wrong.get()));
  EXPECT_EQ(s.code, CGC_STATUS_INVALID_ARGUMENT);
  // A null or non-fence semaphore handle.
  cgc_external_semaphore_descriptor_t sd = {CGC_EXTERNAL_SEMAPHORE_DESCRIPTOR_VERSION,
                                            CGC_EXTERNAL_SEMAPHORE_TYPE_D3D12_FENCE,
                                            CGCHandleFromFd(memfd.fd)};
  cgc_external_semaphore_t *sem = nullptr;
  s = take(cgc_importer_import_semaphore(importer.get(), &sd, &sem));
  EXPECT_EQ(s.code, CGC_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(s.message.find("not a shared fence"), std::string::npos) << s.message;
  sd.native_handle = nullptr;
  s = take(cgc_importer_import_semaphore(importer.get(), &sd, &sem));
  EXPECT_EQ(s.code, CGC_STATUS_INVALID_ARGUMENT);
}

// The application side of the ONNX Runtime interop flow on one machine: a
// D3D12 device of its own with a shared heap and a shared fence.
struct SharedResources {
  ComPtr<ID3D12Device> device;
  ComPtr<ID3D12Heap> heap;
  ComPtr<ID3D12Resource> buffer;
  ComPtr<ID3D12Fence> fence;
  HANDLE heapHandle = nullptr, fenceHandle = nullptr;
  uint8_t *data = nullptr;
  SharedResources(bool inheritable) {
    EXPECT_EQ(D3D12CreateDevice(nullptr, D3D_FEATURE_LEVEL_12_0, IID_PPV_ARGS(&device)), S_OK);
    D3D12_HEAP_DESC hd = {};
    hd.SizeInBytes = 1 << 16;
    hd.Properties.Type = D3D12_HEAP_TYPE_CUSTOM;
    hd.Properties.CPUPageProperty = D3D12_CPU_PAGE_PROPERTY_WRITE_BACK;
    hd.Properties.MemoryPoolPreference = D3D12_MEMORY_POOL_L0;
    hd.Flags = D3D12_HEAP_FLAG_SHARED | D3D12_HEAP_FLAG_ALLOW_ONLY_BUFFERS;
    EXPECT_EQ(device->CreateHeap(&hd, IID_PPV_ARGS(&heap)), S_OK);
    D3D12_RESOURCE_DESC rd = {};
    rd.Dimension = D3D12_RESOURCE_DIMENSION_BUFFER;
    rd.Width = 1 << 16;
    rd.Height = rd.DepthOrArraySize = rd.MipLevels = 1;
    rd.SampleDesc.Count = 1;
    rd.Layout = D3D12_TEXTURE_LAYOUT_ROW_MAJOR;
    EXPECT_EQ(device->CreatePlacedResource(heap.Get(), 0, &rd, D3D12_RESOURCE_STATE_COMMON,
                                           nullptr, IID_PPV_ARGS(&buffer)),
              S_OK);
    EXPECT_EQ(buffer->Map(0, nullptr, reinterpret_cast<void **>(&data)), S_OK);
    EXPECT_EQ(device->CreateFence(0, D3D12_FENCE_FLAG_SHARED, IID_PPV_ARGS(&fence)), S_OK);
    SECURITY_ATTRIBUTES attributes = {};
    attributes.nLength = sizeof(attributes);
    attributes.bInheritHandle = inheritable;
    EXPECT_EQ(device->CreateSharedHandle(heap.Get(), &attributes, GENERIC_ALL, nullptr,
                                         &heapHandle),
              S_OK);
    EXPECT_EQ(device->CreateSharedHandle(fence.Get(), &attributes, GENERIC_ALL, nullptr,
                                         &fenceHandle),
              S_OK);
  }
  ~SharedResources() {
    CGCCloseHandle(heapHandle);
    CGCCloseHandle(fenceHandle);
  }
};

TEST_F(InteropTest, SemaphoresOrderRunsOnAStream) {
  SharedResources app(false);
  Device device;
  Model model(device, path);
  Context context(model);
  Importer importer(device);
  cgc_external_memory_descriptor_t d = {};
  d.version = CGC_EXTERNAL_MEMORY_DESCRIPTOR_VERSION;
  d.handle_type = CGC_EXTERNAL_MEMORY_HANDLE_TYPE_D3D12_HEAP;
  d.native_handle = app.heapHandle;
  d.size_bytes = 1 << 16;
  d.access_mode = CGC_EXTERNAL_MEMORY_ACCESS_READ_WRITE;
  ExternalMemory memory = importer.importMemory(d);
  Tensor in = importer.createTensor(memory, CGC_DTYPE_FLOAT32, kShape, 0);
  Tensor out = importer.createTensor(memory, CGC_DTYPE_FLOAT32, kShape, 4096);
  cgc_external_semaphore_descriptor_t sd = {CGC_EXTERNAL_SEMAPHORE_DESCRIPTOR_VERSION,
                                            CGC_EXTERNAL_SEMAPHORE_TYPE_D3D12_FENCE,
                                            app.fenceHandle};
  ExternalSemaphore sem = importer.importSemaphore(sd);
  EXPECT_EQ(sem.value(), 0u);
  context.bindInput(0, in);
  context.bindOutput(0, out);

  // Queue: wait for 1, run, signal 2. Nothing runs before the app signals 1.
  importer.waitSemaphore(sem, context.stream(), 1);
  context.submit();
  importer.signalSemaphore(sem, context.stream(), 2);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(app.fence->GetCompletedValue(), 0u) << "the run did not wait for the semaphore";
  std::vector<float> x(16);
  for (int i = 0; i < 16; ++i)
    x[i] = float(i) - 6.5f;
  std::memcpy(app.data, x.data(), kBytes); // the app "renders" the input
  ASSERT_EQ(app.fence->Signal(1), S_OK);
  ASSERT_EQ(app.fence->SetEventOnCompletion(2, nullptr), S_OK); // the app waits for 2
  std::vector<float> y(16);
  std::memcpy(y.data(), app.data + 4096, kBytes);
  EXPECT_EQ(y, expected(x));
  EXPECT_EQ(sem.value(), 2u);
  context.wait();
  EXPECT_EQ(context.stats().bytes_copied, 0u);
}

TEST_F(InteropTest, TwoProcesses) {
  // This process creates the shared buffer and timeline semaphore; the peer
  // (cgc-runtime-interop-peer) imports both, waits for 1, runs, signals 2.
  SharedResources app(/*inheritable=*/true);
  std::vector<float> x(16);
  for (int i = 0; i < 16; ++i)
    x[i] = float(15 - i) * 0.5f - 2.0f;
  std::memcpy(app.data, x.data(), kBytes);
  std::memset(app.data + 4096, 0xff, kBytes);

  std::string heapFd = std::to_string(CGCFdFromHandle(app.heapHandle));
  std::string fenceFd = std::to_string(CGCFdFromHandle(app.fenceHandle));
  std::vector<std::string> args = {CGC_INTEROP_PEER_PATH, path, heapFd, fenceFd};
  std::vector<char *> argv;
  for (auto &a : args)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  ASSERT_EQ(posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), environ), 0);

  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_EQ(app.fence->Signal(1), S_OK);
  HANDLE event = CGCCreateEvent();
  ASSERT_EQ(app.fence->SetEventOnCompletion(2, event), S_OK);
  HRESULT waited = CGCWaitForEvent(event, 60000);
  CGCCloseEvent(event);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0) << "the peer failed (its stderr says why)";
  ASSERT_EQ(waited, S_OK) << "the peer never signaled 2";
  std::vector<float> y(16);
  std::memcpy(y.data(), app.data + 4096, kBytes);
  EXPECT_EQ(y, expected(x));
}

} // namespace
} // namespace cgc::test
