//===- device.cpp - Devices, streams, tensors -----------------------------===//

#include "internal.h"

#include "cgc/checked.h"

#include <cinttypes>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <system_error>
#include <thread>

#include <unistd.h>

using namespace cgc::rt;

namespace cgc::rt {

std::string describeTensor(cgc_dtype_t dtype, const std::vector<int64_t> &shape) {
  const char *name = cgc_dtype_name(dtype);
  std::string text = name ? name : "dtype#" + std::to_string(int(dtype));
  text += "[";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? "," : "") + std::to_string(shape[i]);
  return text + "]";
}

std::string hresultText(HRESULT hr) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "HRESULT 0x%08" PRIx32, uint32_t(hr));
  switch (hr) {
  case E_INVALIDARG: return "E_INVALIDARG";
  case E_NOTIMPL: return "E_NOTIMPL";
  case E_OUTOFMEMORY: return "E_OUTOFMEMORY";
  case E_FAIL: return "E_FAIL";
  case E_NOINTERFACE: return "E_NOINTERFACE";
  default: return buffer;
  }
}

uint64_t nowNs() {
  return uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                      std::chrono::steady_clock::now().time_since_epoch())
                      .count());
}

void parallelFor(uint32_t threads, size_t count, const std::function<void(size_t)> &task) {
  std::atomic<size_t> next{0};
  std::mutex errorMutex;
  std::exception_ptr firstError;
  auto worker = [&] {
    while (true) {
      size_t i = next.fetch_add(1);
      if (i >= count)
        return;
      {
        std::lock_guard<std::mutex> lock(errorMutex);
        if (firstError)
          return;
      }
      try {
        task(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(errorMutex);
        if (!firstError)
          firstError = std::current_exception();
      }
    }
  };
  size_t n = std::min<size_t>(std::max<uint32_t>(threads, 1), count);
  std::vector<std::thread> pool;
  try {
    for (size_t t = 1; t < n; ++t)
      pool.emplace_back(worker);
  } catch (const std::system_error &e) {
    // Out of threads (a process or address-space limit): the run fails with
    // the reason once the threads already started have stopped.
    std::lock_guard<std::mutex> lock(errorMutex);
    firstError = std::make_exception_ptr(std::runtime_error(
        "cannot start thread " + std::to_string(pool.size() + 1) + " of " + std::to_string(n) +
        ": " + e.what()));
  }
  worker();
  for (std::thread &t : pool)
    t.join();
  if (firstError)
    std::rethrow_exception(firstError);
}

//===----------------------------------------------------------------------===//
// Devices
//===----------------------------------------------------------------------===//

static void STDMETHODCALLTYPE onMessage(D3D12_MESSAGE_CATEGORY, D3D12_MESSAGE_SEVERITY severity,
                                        D3D12_MESSAGE_ID, LPCSTR description, void *context) {
  if (severity <= D3D12_MESSAGE_SEVERITY_ERROR && description)
    static_cast<cgc_device_s *>(context)->addMessage(description);
}

static std::mutex createMutex; // CGCD3D12SelectDriver and the environment are global

Ref<cgc_device_s> createDevice(const cgc_device_options_t &options) {
  if (options.device_threads > cgc::kMaxThreads || options.compile_threads > cgc::kMaxThreads)
    fail(CGC_STATUS_INVALID_ARGUMENT,
         "cgc_device_create: " +
             std::string(options.device_threads > cgc::kMaxThreads ? "device_threads"
                                                                     : "compile_threads") +
             " is " +
             std::to_string(std::max(options.device_threads, options.compile_threads)) +
             "; at most " + std::to_string(cgc::kMaxThreads) + " threads are allowed");
  auto device = Ref<cgc_device_s>::adopt(new cgc_device_s());
  unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  device->compileThreads = options.compile_threads ? options.compile_threads : cores;
  device->debugLayer = options.debug_layer;
  device->driver = options.driver && *options.driver ? options.driver : "default";
  {
    std::lock_guard<std::mutex> lock(createMutex);
    if (CGCD3D12SelectDriver(options.driver) != S_OK)
      fail(CGC_STATUS_NOT_FOUND, std::string("cannot use the D3D12 driver '") +
                                     (options.driver ? options.driver : "default") +
                                     "': " + CGCD3D12GetLastError());
    CGCD3D12SelectDriver(nullptr);
    // The driver's configuration travels with the creation (DDI
    // pDriverOptions), never through the environment.
    std::string driverOptions;
    if (options.device_threads)
      driverOptions = "threads=" + std::to_string(options.device_threads);
    if (options.driver_options && *options.driver_options)
      driverOptions += (driverOptions.empty() ? "" : ",") + std::string(options.driver_options);
    device->driverOptions = driverOptions;
    CGCD3D12SetDeviceCreationFlags(options.debug_layer ? CGC_D3D12_DEVICE_FLAG_DEBUG : 0);
    HRESULT hr = CGCD3D12CreateDeviceWithOptions(
        options.driver, driverOptions.empty() ? nullptr : driverOptions.c_str(),
        IID_PPV_ARGS(&device->d3d));
    // Taken before the call below, which resets it.
    std::string why = FAILED(hr) ? CGCD3D12GetLastError() : "";
    CGCD3D12SetDeviceCreationFlags(0);
    if (FAILED(hr))
      fail(hr == E_INVALIDARG ? CGC_STATUS_INVALID_ARGUMENT : CGC_STATUS_INTERNAL,
           "D3D12CreateDevice failed (" + hresultText(hr) + "): " + why);
  }
  if (SUCCEEDED(device->d3d->QueryInterface(IID_PPV_ARGS(&device->infoQueue))))
    device->infoQueue->RegisterMessageCallback(onMessage, D3D12_MESSAGE_CALLBACK_FLAG_NONE,
                                               device.get(), &device->callbackCookie);
  return device;
}

} // namespace cgc::rt

cgc_device_s::~cgc_device_s() {
  if (infoQueue && callbackCookie)
    infoQueue->UnregisterMessageCallback(callbackCookie);
}

void cgc_device_s::addMessage(const char *text) {
  std::lock_guard<std::mutex> lock(messagesMutex);
  messages.emplace_back(nextMessage++, text);
  while (messages.size() > 256)
    messages.pop_front();
}

uint64_t cgc_device_s::messageMark() {
  std::lock_guard<std::mutex> lock(messagesMutex);
  return nextMessage;
}

std::string cgc_device_s::messagesSince(uint64_t mark, const std::string &filter) {
  std::lock_guard<std::mutex> lock(messagesMutex);
  std::vector<std::string> matching, other;
  for (const auto &[number, text] : messages) {
    if (number < mark)
      continue;
    if (!filter.empty() && text.find(filter) != std::string::npos)
      matching.push_back(text);
    else
      other.push_back(text);
  }
  // Other threads' messages only when nothing names the thing.
  const std::vector<std::string> &chosen = matching.empty() ? other : matching;
  std::string joined;
  for (const std::string &text : chosen) {
    if (joined.find(text) != std::string::npos)
      continue;
    joined += (joined.empty() ? "" : "; ") + text;
  }
  return joined;
}

void cgc_device_s::checkNotRemoved(const char *what) {
  HRESULT reason = d3d->GetDeviceRemovedReason();
  if (!FAILED(reason))
    return;
  std::string why = messagesSince(0, "removed");
  // Why the driver failed to execute (a kernel's RunError: an index out of
  // range) is its own message, reported with the removal.
  const std::string driverTag = "ExecuteCommandLists: ";
  std::string driver = messagesSince(0, driverTag);
  if (driver.find(driverTag) != std::string::npos)
    why += ": " + driver;
  fail(CGC_STATUS_DEVICE_LOST, std::string(what) + ": the device was removed (" +
                                   hresultText(reason) + "): " + why);
}

//===----------------------------------------------------------------------===//
// Streams
//===----------------------------------------------------------------------===//

cgc_stream_s::cgc_stream_s(Ref<cgc_device_s> d) : device(std::move(d)) {
  D3D12_COMMAND_QUEUE_DESC desc = {};
  desc.Type = D3D12_COMMAND_LIST_TYPE_COMPUTE;
  HRESULT hr = device->d3d->CreateCommandQueue(&desc, IID_PPV_ARGS(&queue));
  if (FAILED(hr))
    fail(CGC_STATUS_INTERNAL, "CreateCommandQueue failed (" + hresultText(hr) + ")");
  hr = device->d3d->CreateFence(0, D3D12_FENCE_FLAG_NONE, IID_PPV_ARGS(&fence));
  if (FAILED(hr))
    fail(CGC_STATUS_INTERNAL, "CreateFence failed (" + hresultText(hr) + ")");
  event = CGCCreateEvent();
  if (!event)
    fail(CGC_STATUS_RESOURCE_EXHAUSTED, "cannot create an event (eventfd)");
}

cgc_stream_s::~cgc_stream_s() {
  // The queue's destructor runs what is still queued (contexts waited for
  // their runs before releasing the stream), giving up on waits for external
  // semaphores nobody will signal; only then may the event be closed.
  queue.Reset();
  fence.Reset();
  if (event)
    CGCCloseEvent(event);
}

uint64_t cgc_stream_s::signalNextLocked() {
  uint64_t value = lastValue + 1;
  HRESULT hr = queue->Signal(fence.Get(), value);
  if (FAILED(hr))
    fail(CGC_STATUS_INTERNAL, "ID3D12CommandQueue::Signal failed (" + hresultText(hr) + ")");
  lastValue = value;
  return value;
}

void cgc_stream_s::waitFor(uint64_t value, uint32_t timeoutMs, const char *what) {
  if (timeoutMs == UINT32_MAX) {
    // Block without an event: the D3D12 layer then runs the queued work on
    // this thread (no wake-up of the queue's thread, no event to signal).
    // Signals still arrive after the device is removed. Called even when
    // the value is reached: the queue then leaves the next runs to this
    // thread.
    if (FAILED(fence->SetEventOnCompletion(value, nullptr)))
      fail(CGC_STATUS_INTERNAL, std::string(what) + ": SetEventOnCompletion failed");
    return;
  }
  if (fence->GetCompletedValue() >= value)
    return;
  // One event per stream: a wait that timed out leaves it registered, so
  // every wake-up re-checks the fence.
  uint64_t start = nowNs();
  std::lock_guard<std::mutex> lock(waitMutex); // one waiter uses the event at a time
  while (fence->GetCompletedValue() < value) {
    uint32_t left = UINT32_MAX;
    if (timeoutMs != UINT32_MAX) {
      uint64_t spent = (nowNs() - start) / 1000000;
      if (spent >= timeoutMs)
        fail(CGC_STATUS_DEADLINE_EXCEEDED,
             std::string(what) + ": not done after " + std::to_string(timeoutMs) + " ms");
      left = uint32_t(timeoutMs - spent);
    }
    if (FAILED(fence->SetEventOnCompletion(value, event)))
      fail(CGC_STATUS_INTERNAL, std::string(what) + ": SetEventOnCompletion failed");
    HRESULT hr = CGCWaitForEvent(event, left);
    if (FAILED(hr))
      fail(CGC_STATUS_INTERNAL, std::string(what) + ": waiting for the event failed");
    if (FAILED(device->d3d->GetDeviceRemovedReason()))
      break; // the queue stops executing work; its signals still arrive
  }
}

namespace cgc::rt {

//===----------------------------------------------------------------------===//
// Tensors
//===----------------------------------------------------------------------===//

uint64_t tensorBytes(cgc_dtype_t dtype, const std::vector<int64_t> &shape) {
  uint64_t n = cgc_dtype_size(dtype);
  for (int64_t d : shape) {
    if (d != 0 && n > UINT64_MAX / uint64_t(d))
      fail(CGC_STATUS_INVALID_ARGUMENT, describeTensor(dtype, shape) + " is too large");
    n *= uint64_t(d);
  }
  return n;
}

std::vector<int64_t> checkDesc(cgc_dtype_t dtype, size_t rank, const int64_t *shape,
                               const char *what) {
  if (!cgc_dtype_size(dtype))
    fail(CGC_STATUS_INVALID_ARGUMENT,
         std::string(what) + ": unknown dtype " + std::to_string(int(dtype)));
  if (rank && !shape)
    fail(CGC_STATUS_INVALID_ARGUMENT, std::string(what) + ": shape is null with rank " +
                                          std::to_string(rank));
  if (rank > 64)
    fail(CGC_STATUS_INVALID_ARGUMENT, std::string(what) + ": rank " + std::to_string(rank) +
                                          " is not supported");
  std::vector<int64_t> dims(shape, shape + rank);
  for (int64_t d : dims)
    if (d < 0)
      fail(CGC_STATUS_INVALID_ARGUMENT,
           std::string(what) + ": negative dimension in " + describeTensor(dtype, dims));
  return dims;
}

ComPtr<ID3D12Resource> createBuffer(cgc_device_s *device, uint64_t bytes, const std::string &what) {
  D3D12_HEAP_PROPERTIES props = {};
  props.Type = D3D12_HEAP_TYPE_CUSTOM;
  props.CPUPageProperty = D3D12_CPU_PAGE_PROPERTY_WRITE_BACK;
  props.MemoryPoolPreference = D3D12_MEMORY_POOL_L0;
  props.CreationNodeMask = props.VisibleNodeMask = 1;
  D3D12_RESOURCE_DESC desc = {};
  desc.Dimension = D3D12_RESOURCE_DIMENSION_BUFFER;
  desc.Width = std::max<uint64_t>(bytes, 1);
  desc.Height = 1;
  desc.DepthOrArraySize = 1;
  desc.MipLevels = 1;
  desc.SampleDesc.Count = 1;
  desc.Layout = D3D12_TEXTURE_LAYOUT_ROW_MAJOR;
  desc.Flags = D3D12_RESOURCE_FLAG_ALLOW_UNORDERED_ACCESS;
  ComPtr<ID3D12Resource> resource;
  HRESULT hr = device->d3d->CreateCommittedResource(&props, D3D12_HEAP_FLAG_NONE, &desc,
                                                    D3D12_RESOURCE_STATE_COMMON, nullptr,
                                                    IID_PPV_ARGS(&resource));
  if (FAILED(hr))
    fail(hr == E_OUTOFMEMORY ? CGC_STATUS_RESOURCE_EXHAUSTED : CGC_STATUS_INTERNAL,
         "cannot allocate " + std::to_string(bytes) + " bytes for " + what + " (" +
             hresultText(hr) + ")");
  return resource;
}

Ref<cgc_tensor_s> allocateTensor(cgc_device_s *device, cgc_dtype_t dtype,
                                 std::vector<int64_t> shape, const std::string &origin) {
  auto t = Ref<cgc_tensor_s>::adopt(new cgc_tensor_s());
  t->device = Ref<cgc_device_s>::share(device);
  t->dtype = dtype;
  t->bytes = tensorBytes(dtype, shape);
  t->shape = std::move(shape);
  t->resource = createBuffer(device, t->bytes, origin);
  void *p = nullptr;
  if (FAILED(t->resource->Map(0, nullptr, &p)))
    fail(CGC_STATUS_INTERNAL, "cannot map the buffer of " + origin);
  t->cpu = static_cast<uint8_t *>(p);
  t->gpu = t->resource->GetGPUVirtualAddress();
  t->origin = origin;
  return t;
}

Ref<cgc_tensor_s> wrapHostTensor(cgc_device_s *device, cgc_dtype_t dtype,
                                 std::vector<int64_t> shape, void *data, size_t size) {
  uint64_t bytes = tensorBytes(dtype, shape);
  if (!data)
    fail(CGC_STATUS_INVALID_ARGUMENT, "cgc_tensor_wrap_host: data is null");
  if (size < bytes)
    fail(CGC_STATUS_OUT_OF_RANGE, "cgc_tensor_wrap_host: " + describeTensor(dtype, shape) +
                                      " needs " + std::to_string(bytes) + " bytes, the memory has " +
                                      std::to_string(size));
  // A heap over the pages holding the memory; the tensor starts inside it.
  uint64_t page = uint64_t(sysconf(_SC_PAGESIZE));
  uint64_t address = reinterpret_cast<uint64_t>(data);
  uint64_t base = address / page * page;
  uint64_t end = (address + std::max<uint64_t>(bytes, 1) + page - 1) / page * page;
  auto t = Ref<cgc_tensor_s>::adopt(new cgc_tensor_s());
  t->device = Ref<cgc_device_s>::share(device);
  HRESULT hr = device->d3d->OpenExistingHeapFromAddress1(reinterpret_cast<void *>(base),
                                                         end - base, IID_PPV_ARGS(&t->heap));
  if (FAILED(hr))
    fail(CGC_STATUS_INTERNAL, "cgc_tensor_wrap_host: OpenExistingHeapFromAddress1 failed (" +
                                  hresultText(hr) + "): " + CGCD3D12GetLastError());
  D3D12_RESOURCE_DESC desc = {};
  desc.Dimension = D3D12_RESOURCE_DIMENSION_BUFFER;
  desc.Width = end - base;
  desc.Height = desc.DepthOrArraySize = desc.MipLevels = 1;
  desc.SampleDesc.Count = 1;
  desc.Layout = D3D12_TEXTURE_LAYOUT_ROW_MAJOR;
  desc.Flags = D3D12_RESOURCE_FLAG_ALLOW_UNORDERED_ACCESS; // MLIR programs bind it
  hr = device->d3d->CreatePlacedResource(t->heap.Get(), 0, &desc, D3D12_RESOURCE_STATE_COMMON,
                                         nullptr, IID_PPV_ARGS(&t->resource));
  if (FAILED(hr))
    fail(CGC_STATUS_INTERNAL, "cgc_tensor_wrap_host: CreatePlacedResource failed (" +
                                  hresultText(hr) + ")");
  t->dtype = dtype;
  t->shape = std::move(shape);
  t->bytes = bytes;
  t->offset = address - base;
  t->cpu = static_cast<uint8_t *>(data);
  t->gpu = t->resource->GetGPUVirtualAddress() + t->offset;
  t->origin = "host memory";
  return t;
}

Ref<cgc_tensor_s> wrapResourceTensor(cgc_device_s *device, cgc_dtype_t dtype,
                                     std::vector<int64_t> shape, ID3D12Resource *resource,
                                     uint64_t offset) {
  if (!resource)
    fail(CGC_STATUS_INVALID_ARGUMENT, "cgc_tensor_wrap_d3d12_resource: resource is null");
  uint64_t bytes = tensorBytes(dtype, shape);
  D3D12_RESOURCE_DESC desc = resource->GetDesc();
  if (desc.Dimension != D3D12_RESOURCE_DIMENSION_BUFFER)
    fail(CGC_STATUS_INVALID_ARGUMENT, "cgc_tensor_wrap_d3d12_resource: not a buffer");
  if (offset > desc.Width || bytes > desc.Width - offset)
    fail(CGC_STATUS_OUT_OF_RANGE, "cgc_tensor_wrap_d3d12_resource: " +
                                      describeTensor(dtype, shape) + " (" + std::to_string(bytes) +
                                      " bytes at offset " + std::to_string(offset) +
                                      ") does not fit in the " + std::to_string(desc.Width) +
                                      "-byte buffer");
  auto t = Ref<cgc_tensor_s>::adopt(new cgc_tensor_s());
  t->device = Ref<cgc_device_s>::share(device);
  t->dtype = dtype;
  t->shape = std::move(shape);
  t->bytes = bytes;
  t->resource = resource;
  t->offset = offset;
  void *p = nullptr;
  if (SUCCEEDED(resource->Map(0, nullptr, &p)) && p)
    t->cpu = static_cast<uint8_t *>(p) + offset;
  t->gpu = resource->GetGPUVirtualAddress() + offset;
  t->origin = "a D3D12 resource";
  return t;
}

} // namespace cgc::rt
