//===- ort_interop.cpp - Two processes share memory and a fence through ORT ===//
//
//   cgc-ort-interop MODEL.onnx          (process A)
//   cgc-ort-interop --peer MODEL.onnx HEAP_FD FENCE_FD   (process B)
//
// This program links libonnxruntime.so.1 from npm like any ORT application.
// Process A, the application's other API, creates a shared buffer (a D3D12
// heap) and a timeline fence on a cgc device, writes the input, starts B
// with both handles inherited, signals 1, waits for 2 and checks B's result
// in its own mapping. Process B is an ONNX Runtime application: it uses
// only ONNX Runtime's C API (the interop API of ORT 1.24+) with cgc's plugin
// EP: it imports the heap and the fence, creates tensors over the imported
// memory (input at offset 0, output at 4096), and on a cgc sync stream waits
// for 1, runs, signals 2. No tensor byte is copied: B checks that the output
// OrtValue still points into the imported memory and that the EP's data
// transfer copied nothing; A checks the values. B also checks that wrong
// handle types, out-of-range offsets and too-small sizes are ORT errors.
// The model is a Relu of float[3,4,5] (x -> y), ONNX's test_relu.
//
//===----------------------------------------------------------------------===//

#include "cgc/d3d12_mlir.h"
#include "cgc/d3dx12_mlir.h"
#include "cgc/onnxruntime_ep.h"

#include <onnxruntime_c_api.h>

#include <wrl/client.h>

#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <spawn.h>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <vector>

extern char **environ;

namespace {

constexpr size_t kElements = 3 * 4 * 5, kBytes = kElements * 4, kOutputOffset = 4096,
                 kHeapBytes = 1 << 16;

[[noreturn]] void die(const std::string &message) {
  std::fprintf(stderr, "cgc-ort-interop: %s\n", message.c_str());
  std::exit(1);
}

//===----------------------------------------------------------------------===//
// Process B: an ONNX Runtime application
//===----------------------------------------------------------------------===//

const OrtApi *ort = nullptr;

void check(OrtStatus *status, const char *what) {
  if (!status)
    return;
  std::string message = ort->GetErrorMessage(status);
  ort->ReleaseStatus(status);
  die(std::string("peer: ") + what + ": " + message);
}

/// Expects `status` to be an error of `code`; prints its message.
void expectError(OrtStatus *status, OrtErrorCode code, const char *what) {
  if (!status)
    die(std::string("peer: ") + what + " succeeded; expected an error");
  OrtErrorCode got = ort->GetErrorCode(status);
  std::printf("peer: %s: error %d: %s\n", what, int(got), ort->GetErrorMessage(status));
  ort->ReleaseStatus(status);
  if (got != code)
    die(std::string("peer: ") + what + ": error code " + std::to_string(got) + ", expected " +
        std::to_string(code));
}

void *handleOf(int fd) { return reinterpret_cast<void *>(intptr_t(fd) + 1); } // CGCHandleFromFd

int peer(const char *model, int heapFd, int fenceFd) {
  // Linked against the npm ORT library (not loaded with dlopen).
  ort = OrtGetApiBase()->GetApi(ORT_API_VERSION);
  if (!ort)
    die("peer: this ONNX Runtime does not offer C API " + std::to_string(ORT_API_VERSION));
  OrtEnv *env = nullptr;
  check(ort->CreateEnv(ORT_LOGGING_LEVEL_WARNING, "interop-peer", &env), "CreateEnv");
  check(ort->RegisterExecutionProviderLibrary(env, "cgc", CGC_ORT_EP_LIBRARY),
        "RegisterExecutionProviderLibrary");
  const OrtEpDevice *const *devices = nullptr;
  size_t count = 0;
  check(ort->GetEpDevices(env, &devices, &count), "GetEpDevices");
  const OrtEpDevice *device = nullptr;
  for (size_t i = 0; i < count && !device; ++i)
    if (std::strcmp(ort->EpDevice_EpName(devices[i]), CGC_ORT_EP_NAME) == 0)
      device = devices[i];
  if (!device)
    die("peer: no cgc OrtEpDevice");

  OrtSessionOptions *options = nullptr;
  check(ort->CreateSessionOptions(&options), "CreateSessionOptions");
  check(ort->SessionOptionsAppendExecutionProvider_V2(options, env, &device, 1, nullptr,
                                                      nullptr, 0),
        "SessionOptionsAppendExecutionProvider_V2");
  check(ort->AddSessionConfigEntry(options, "session.disable_cpu_ep_fallback", "1"),
        "disable_cpu_ep_fallback");
  OrtSession *session = nullptr;
  check(ort->CreateSession(env, model, options, &session), "CreateSession");

  const OrtInteropApi *interop = ort->GetInteropApi();
  OrtExternalResourceImporter *importer = nullptr;
  check(interop->CreateExternalResourceImporterForDevice(device, &importer),
        "CreateExternalResourceImporterForDevice");
  if (!importer)
    die("peer: the cgc EP offers no external resource importer");

  // Capabilities, answered truthfully.
  bool can = false;
  check(interop->CanImportMemory(importer, ORT_EXTERNAL_MEMORY_HANDLE_TYPE_D3D12_HEAP, &can),
        "CanImportMemory");
  if (!can)
    die("peer: CanImportMemory(D3D12_HEAP) is false");
  check(interop->CanImportMemory(importer, ORT_EXTERNAL_MEMORY_HANDLE_TYPE_VK_MEMORY_WIN32,
                                 &can),
        "CanImportMemory");
  if (can)
    die("peer: CanImportMemory(VK_MEMORY_WIN32) is true on Linux");
  check(interop->CanImportSemaphore(importer, ORT_EXTERNAL_SEMAPHORE_D3D12_FENCE, &can),
        "CanImportSemaphore");
  if (!can)
    die("peer: CanImportSemaphore(D3D12_FENCE) is false");

  // Wrong handle types and ranges are errors.
  OrtExternalMemoryDescriptor md = {};
  md.version = ORT_API_VERSION;
  md.handle_type = ORT_EXTERNAL_MEMORY_HANDLE_TYPE_VK_MEMORY_WIN32;
  md.native_handle = handleOf(heapFd);
  md.size_bytes = kHeapBytes;
  OrtExternalMemoryHandle *memory = nullptr;
  expectError(interop->ImportMemory(importer, &md, &memory), ORT_NOT_IMPLEMENTED,
              "ImportMemory(VK_MEMORY_WIN32)");
  md.handle_type = OrtExternalMemoryHandleType(77);
  expectError(interop->ImportMemory(importer, &md, &memory), ORT_NOT_IMPLEMENTED,
              "ImportMemory(handle type 77)");
  md.handle_type = ORT_EXTERNAL_MEMORY_HANDLE_TYPE_D3D12_HEAP;
  md.offset_bytes = kHeapBytes + 16;
  expectError(interop->ImportMemory(importer, &md, &memory), ORT_INVALID_ARGUMENT,
              "ImportMemory(offset past the end)");
  md.offset_bytes = 0;
  md.size_bytes = size_t(1) << 40;
  expectError(interop->ImportMemory(importer, &md, &memory), ORT_INVALID_ARGUMENT,
              "ImportMemory(size larger than the heap)");
  OrtExternalSemaphoreDescriptor sd = {ORT_API_VERSION,
                                       ORT_EXTERNAL_SEMAPHORE_VK_TIMELINE_SEMAPHORE_OPAQUE_FD,
                                       handleOf(fenceFd)};
  OrtExternalSemaphoreHandle *semaphore = nullptr;
  expectError(interop->ImportSemaphore(importer, &sd, &semaphore), ORT_NOT_IMPLEMENTED,
              "ImportSemaphore(VK_TIMELINE_SEMAPHORE_OPAQUE_FD)");

  // The real imports.
  md.size_bytes = kHeapBytes;
  check(interop->ImportMemory(importer, &md, &memory), "ImportMemory(D3D12_HEAP)");
  sd.type = ORT_EXTERNAL_SEMAPHORE_D3D12_FENCE;
  check(interop->ImportSemaphore(importer, &sd, &semaphore), "ImportSemaphore(D3D12_FENCE)");

  const int64_t shape[] = {3, 4, 5};
  OrtExternalTensorDescriptor td = {};
  td.version = ORT_API_VERSION;
  td.element_type = ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT;
  td.shape = shape;
  td.rank = 3;
  OrtValue *input = nullptr, *output = nullptr, *tooBig = nullptr;
  td.offset_bytes = kHeapBytes - kBytes + 4;
  expectError(interop->CreateTensorFromMemory(importer, memory, &td, &tooBig),
              ORT_INVALID_ARGUMENT, "CreateTensorFromMemory(past the end)");
  td.offset_bytes = 0;
  check(interop->CreateTensorFromMemory(importer, memory, &td, &input), "input tensor");
  td.offset_bytes = kOutputOffset;
  check(interop->CreateTensorFromMemory(importer, memory, &td, &output), "output tensor");
  void *inputData = nullptr, *outputData = nullptr;
  check(ort->GetTensorMutableData(input, &inputData), "input data");
  check(ort->GetTensorMutableData(output, &outputData), "output data");
  if (static_cast<char *>(outputData) - static_cast<char *>(inputData) != kOutputOffset)
    die("peer: the tensors are not views of the imported memory");

  OrtSyncStream *stream = nullptr;
  check(ort->CreateSyncStreamForEpDevice(device, nullptr, &stream), "CreateSyncStreamForEpDevice");
  OrtRunOptions *run = nullptr;
  check(ort->CreateRunOptions(&run), "CreateRunOptions");
  ort->RunOptionsSetSyncStream(run, stream);

  // Wait for A's 1, run, signal 2: in this order on the EP's stream.
  check(interop->WaitSemaphore(importer, semaphore, stream, 1), "WaitSemaphore(1)");
  const char *inNames[] = {"x"}, *outNames[] = {"y"};
  const OrtValue *inputs[] = {input};
  OrtValue *outputs[] = {output};
  check(ort->Run(session, run, inNames, inputs, 1, outNames, 1, outputs), "Run");
  check(interop->SignalSemaphore(importer, semaphore, stream, 2), "SignalSemaphore(2)");

  void *after = nullptr;
  check(ort->GetTensorMutableData(outputs[0], &after), "output data after the run");
  if (after != outputData)
    die("peer: ONNX Runtime replaced the output tensor (a copy)");
  auto stats = reinterpret_cast<cgc_ort_ep_stats_fn>(
      dlsym(dlopen(CGC_ORT_EP_LIBRARY, RTLD_NOW | RTLD_NOLOAD), "cgc_ort_ep_stats"));
  if (!stats)
    die("peer: the EP library exports no cgc_ort_ep_stats");
  cgc_ort_ep_stats_t s = {};
  stats(&s);
  std::printf("peer: runs %llu, tensors copied %llu (%llu bytes)\n",
              (unsigned long long)s.runs, (unsigned long long)s.tensors_copied,
              (unsigned long long)s.bytes_copied);
  if (s.runs != 1 || s.tensors_copied != 0)
    die("peer: expected one run and no copy");

  ort->ReleaseRunOptions(run);
  ort->ReleaseSyncStream(stream);
  ort->ReleaseValue(input);
  ort->ReleaseValue(output);
  interop->ReleaseExternalSemaphoreHandle(semaphore);
  interop->ReleaseExternalMemoryHandle(memory);
  interop->ReleaseExternalResourceImporter(importer);
  ort->ReleaseSession(session);
  ort->ReleaseSessionOptions(options);
  check(ort->UnregisterExecutionProviderLibrary(env, "cgc"), "UnregisterExecutionProviderLibrary");
  ort->ReleaseEnv(env);
  return 0;
}

//===----------------------------------------------------------------------===//
// Process A: the application's D3D12 side
//===----------------------------------------------------------------------===//

using Microsoft::WRL::ComPtr;

void ok(HRESULT hr, const char *what) {
  if (hr != S_OK)
    die(std::string(what) + " failed");
}

int application(const char *self, const char *model) {
  ComPtr<ID3D12Device> device;
  ok(D3D12CreateDevice(nullptr, D3D_FEATURE_LEVEL_12_0, IID_PPV_ARGS(&device)),
     "D3D12CreateDevice");
  // A custom (CPU-visible, write-back) shared heap holding one buffer.
  D3D12_HEAP_DESC hd = CD3DX12_HEAP_DESC(
      kHeapBytes, CD3DX12_HEAP_PROPERTIES(D3D12_CPU_PAGE_PROPERTY_WRITE_BACK, D3D12_MEMORY_POOL_L0),
      0, D3D12_HEAP_FLAG_SHARED | D3D12_HEAP_FLAG_ALLOW_ONLY_BUFFERS);
  ComPtr<ID3D12Heap> heap;
  ok(device->CreateHeap(&hd, IID_PPV_ARGS(&heap)), "CreateHeap");
  D3D12_RESOURCE_DESC rd = CD3DX12_RESOURCE_DESC::Buffer(kHeapBytes);
  ComPtr<ID3D12Resource> buffer;
  ok(device->CreatePlacedResource(heap.Get(), 0, &rd, D3D12_RESOURCE_STATE_COMMON, nullptr,
                                  IID_PPV_ARGS(&buffer)),
     "CreatePlacedResource");
  uint8_t *data = nullptr;
  ok(buffer->Map(0, nullptr, reinterpret_cast<void **>(&data)), "Map");
  ComPtr<ID3D12Fence> fence;
  ok(device->CreateFence(0, D3D12_FENCE_FLAG_SHARED, IID_PPV_ARGS(&fence)), "CreateFence");
  SECURITY_ATTRIBUTES inherit = {};
  inherit.nLength = sizeof(inherit);
  inherit.bInheritHandle = TRUE;
  HANDLE heapHandle = nullptr, fenceHandle = nullptr;
  ok(device->CreateSharedHandle(heap.Get(), &inherit, GENERIC_ALL, nullptr, &heapHandle),
     "CreateSharedHandle(heap)");
  ok(device->CreateSharedHandle(fence.Get(), &inherit, GENERIC_ALL, nullptr, &fenceHandle),
     "CreateSharedHandle(fence)");

  std::vector<float> x(kElements);
  for (size_t i = 0; i < kElements; ++i)
    x[i] = float(int(i % 11) - 5) * 0.75f;
  std::memcpy(data, x.data(), kBytes);
  std::memset(data + kOutputOffset, 0xff, kBytes); // NaNs until B writes

  std::string heapFd = std::to_string(CGCFdFromHandle(heapHandle));
  std::string fenceFd = std::to_string(CGCFdFromHandle(fenceHandle));
  std::vector<std::string> args = {self, "--peer", model, heapFd, fenceFd};
  std::vector<char *> argv;
  for (auto &a : args)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  // Itself again, wherever PATH found it.
  if (posix_spawn(&pid, "/proc/self/exe", nullptr, nullptr, argv.data(), environ) != 0)
    die("cannot start the peer");

  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  // B waits for this before it runs: the input is complete.
  ok(fence->Signal(1), "Signal(1)");
  HANDLE event = CGCCreateEvent();
  ok(fence->SetEventOnCompletion(2, event), "SetEventOnCompletion(2)");
  HRESULT waited = CGCWaitForEvent(event, 120000);
  CGCCloseEvent(event);
  int status = 0;
  if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
    die("the ONNX Runtime peer failed (its stderr says why)");
  if (waited != S_OK)
    die("the peer never signaled 2");
  std::vector<float> y(kElements);
  std::memcpy(y.data(), data + kOutputOffset, kBytes);
  for (size_t i = 0; i < kElements; ++i)
    if (y[i] != std::max(x[i], 0.0f))
      die("y[" + std::to_string(i) + "] = " + std::to_string(y[i]) + ", expected " +
          std::to_string(std::max(x[i], 0.0f)));
  std::printf("application: the peer waited for 1, ran Relu on the shared buffer in place and "
              "signaled 2; %zu outputs match\n",
              kElements);
  CGCCloseHandle(heapHandle);
  CGCCloseHandle(fenceHandle);
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  if (argc == 5 && std::strcmp(argv[1], "--peer") == 0)
    return peer(argv[2], std::atoi(argv[3]), std::atoi(argv[4]));
  if (argc == 2)
    return application(argv[0], argv[1]);
  std::fprintf(stderr, "usage: %s MODEL.onnx\n", argv[0]);
  return 2;
}
