//===- Factory.cpp - The EP factory, streams and the importer -------------===//
//
// CreateEpFactories / ReleaseEpFactory, the OrtEpFactory (devices,
// allocators, data transfer, streams, the external resource importer), and
// the plugin's counters. The EP itself is in Ep.cpp.
//
//===----------------------------------------------------------------------===//

#include "Factory.h"

#include "Ep.h"

#include <onnxruntime_ep_device_ep_metadata_keys.h>

#include <cinttypes>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <unordered_map>

namespace cgc::ort_ep {

const OrtApi *ort = nullptr;
const OrtEpApi *epApi = nullptr;
const OrtModelEditorApi *editorApi = nullptr;

Counters &counters() {
  static Counters c;
  return c;
}

void check(OrtStatus *status, const char *what) {
  if (!status)
    return;
  OrtErrorCode code = ort->GetErrorCode(status);
  std::string message = std::string(what) + ": " + ort->GetErrorMessage(status);
  ort->ReleaseStatus(status);
  fail(code, message);
}

void check(cgc_status_t status, const char *what) {
  if (!status)
    return;
  OrtErrorCode code = ORT_FAIL;
  switch (cgc_status_code(status)) {
  case CGC_STATUS_INVALID_ARGUMENT:
  case CGC_STATUS_OUT_OF_RANGE:
    code = ORT_INVALID_ARGUMENT;
    break;
  case CGC_STATUS_NOT_FOUND:
    code = ORT_NO_SUCHFILE;
    break;
  case CGC_STATUS_UNIMPLEMENTED:
    code = ORT_NOT_IMPLEMENTED;
    break;
  case CGC_STATUS_DATA_LOSS:
  case CGC_STATUS_INCOMPATIBLE:
    code = ORT_INVALID_PROTOBUF;
    break;
  case CGC_STATUS_DEVICE_LOST:
  case CGC_STATUS_INTERNAL:
    code = ORT_RUNTIME_EXCEPTION;
    break;
  default:
    break;
  }
  std::string message = std::string(what) + ": " + cgc_status_message(status);
  cgc_status_free(status);
  fail(code, message);
}

void log(const OrtLogger *logger, OrtLoggingLevel level, const std::string &message) {
  if (!logger)
    return;
  if (OrtStatus *s = ort->Logger_LogMessage(logger, level, message.c_str(), __FILE__, __LINE__,
                                            "cgc"))
    ort->ReleaseStatus(s);
}

size_t elementSize(ONNXTensorElementDataType type) {
  switch (type) {
  case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT:
  case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32:
  case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT32:
    return 4;
  case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8:
  case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8:
  case ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL:
  case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E4M3FN:
  case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E4M3FNUZ:
  case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E5M2:
  case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E5M2FNUZ:
    return 1;
  case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT16:
  case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT16:
  case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16:
  case ONNX_TENSOR_ELEMENT_DATA_TYPE_BFLOAT16:
    return 2;
  case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64:
  case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT64:
  case ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE:
  case ONNX_TENSOR_ELEMENT_DATA_TYPE_COMPLEX64:
    return 8;
  case ONNX_TENSOR_ELEMENT_DATA_TYPE_COMPLEX128:
    return 16;
  default:
    return 0;
  }
}

//===----------------------------------------------------------------------===//
// Devices
//===----------------------------------------------------------------------===//

namespace {

DevicePtr createDevice(const DriverDevice &driver, uint32_t threads,
                       const std::string &driverOptions) {
  cgc_device_options_t options;
  cgc_device_options_init(&options);
  options.driver = driver.path.c_str();
  options.device_threads = threads;
  options.driver_options = driverOptions.empty() ? nullptr : driverOptions.c_str();
  cgc_device_t *device = nullptr;
  check(cgc_device_create(&options, &device),
        ("creating the cgc device of driver '" + driver.name + "'").c_str());
  return DevicePtr(device, CgcDeviceDeleter());
}

} // namespace

DevicePtr DriverDevice::shared() {
  std::lock_guard<std::mutex> lock(mutex);
  if (!sharedDevice)
    sharedDevice = createDevice(*this, 0, "");
  return sharedDevice;
}

DevicePtr DriverDevice::withOptions(uint32_t threads, const std::string &driverOptions) {
  std::lock_guard<std::mutex> lock(mutex);
  if (!sharedDevice) {
    // The first session decides the shared device's options.
    sharedDevice = createDevice(*this, threads, driverOptions);
    sharedThreads = threads;
    sharedOptions = driverOptions;
    return sharedDevice;
  }
  if (threads == sharedThreads && driverOptions == sharedOptions)
    return sharedDevice;
  return createDevice(*this, threads, driverOptions);
}

//===----------------------------------------------------------------------===//
// Allocator: device memory. The CPU driver's device is cache-coherent
// UMA: its memory is host memory bound by address, so device memory is
// host memory aligned for the device, which runs bind in place.
//===----------------------------------------------------------------------===//

namespace {

/// Freed blocks are kept for the next allocation of the same size (up to
/// kCachedBytes): ONNX Runtime allocates a run's device tensors again on
/// every Run, and handing back the same addresses lets the EP's contexts keep
/// their bindings and recorded command lists.
struct Allocator : OrtAllocator {
  static constexpr size_t kCachedBytes = size_t(256) << 20;

  explicit Allocator(const OrtMemoryInfo *info) : info(info) {
    version = ORT_API_VERSION;
    Alloc = [](OrtAllocator *self, size_t size) noexcept -> void * {
      return static_cast<Allocator *>(self)->allocate(size);
    };
    Free = [](OrtAllocator *self, void *p) noexcept {
      static_cast<Allocator *>(self)->release(p);
    };
    Info = [](const OrtAllocator *self) noexcept {
      return static_cast<const Allocator *>(self)->info;
    };
    Reserve = [](OrtAllocator *self, size_t size) noexcept { return self->Alloc(self, size); };
    GetStats = [](const OrtAllocator *self, OrtKeyValuePairs **out) noexcept -> OrtStatus * {
      return guard([&] {
        auto *a = static_cast<const Allocator *>(self);
        std::lock_guard<std::mutex> lock(a->mutex);
        *out = nullptr;
        ort->CreateKeyValuePairs(out);
        ort->AddKeyValuePair(*out, "InUse", std::to_string(a->inUseBytes).c_str());
        ort->AddKeyValuePair(*out, "NumAllocs", std::to_string(a->allocations).c_str());
        ort->AddKeyValuePair(*out, "CachedBytes", std::to_string(a->cachedBytes).c_str());
      });
    };
    AllocOnStream = [](OrtAllocator *self, size_t size, OrtSyncStream *) noexcept {
      return self->Alloc(self, size);
    };
    Shrink = [](OrtAllocator *self) noexcept -> OrtStatus * {
      static_cast<Allocator *>(self)->trim(0);
      return nullptr;
    };
  }
  ~Allocator() { trim(0); }

  void *allocate(size_t size) {
    size = size ? size : 1;
    {
      std::lock_guard<std::mutex> lock(mutex);
      ++allocations;
      auto it = cache.find(size);
      if (it != cache.end() && !it->second.empty()) {
        void *p = it->second.back();
        it->second.pop_back();
        cachedBytes -= size;
        inUseBytes += size;
        sizes[p] = size;
        return p;
      }
    }
    void *p = nullptr;
    if (posix_memalign(&p, 256, size) != 0)
      return nullptr;
    std::lock_guard<std::mutex> lock(mutex);
    inUseBytes += size;
    sizes[p] = size;
    return p;
  }

  void release(void *p) {
    if (!p)
      return;
    std::lock_guard<std::mutex> lock(mutex);
    auto it = sizes.find(p);
    if (it == sizes.end()) { // not ours: let the C library say so
      std::free(p);
      return;
    }
    size_t size = it->second;
    sizes.erase(it);
    inUseBytes -= size;
    if (cachedBytes + size > kCachedBytes) {
      std::free(p);
      return;
    }
    cache[size].push_back(p);
    cachedBytes += size;
  }

  void trim(size_t keep) {
    std::lock_guard<std::mutex> lock(mutex);
    for (auto &[size, blocks] : cache)
      while (!blocks.empty() && cachedBytes > keep) {
        std::free(blocks.back());
        blocks.pop_back();
        cachedBytes -= size;
      }
  }

  const OrtMemoryInfo *info;
  mutable std::mutex mutex;
  std::unordered_map<size_t, std::vector<void *>> cache;
  std::unordered_map<void *, size_t> sizes;
  size_t cachedBytes = 0, inUseBytes = 0, allocations = 0;
};

//===----------------------------------------------------------------------===//
// Data transfer: host <-> device copies (counted: a zero-copy path shows 0).
//===----------------------------------------------------------------------===//

struct DataTransfer : OrtDataTransferImpl {
  explicit DataTransfer(Factory *factory) : factory(factory) {
    ort_version_supported = ORT_API_VERSION;
    Release = [](OrtDataTransferImpl *self) noexcept { delete static_cast<DataTransfer *>(self); };
    CanCopy = [](const OrtDataTransferImpl *self, const OrtMemoryDevice *src,
                 const OrtMemoryDevice *dst) noexcept {
      auto *t = static_cast<const DataTransfer *>(self);
      auto known = [&](const OrtMemoryDevice *d) noexcept {
        return epApi->MemoryDevice_GetDeviceType(d) == OrtMemoryInfoDeviceType_CPU ||
               t->factory->driverFor(d) != nullptr;
      };
      return known(src) && known(dst) &&
             (t->factory->driverFor(src) || t->factory->driverFor(dst));
    };
    CopyTensors = [](OrtDataTransferImpl *, const OrtValue **src, OrtValue **dst,
                     OrtSyncStream **streams, size_t count) noexcept -> OrtStatus * {
      return guard([&] {
        for (size_t i = 0; i < count; ++i) {
          // Work queued before the copy (an imported semaphore's wait) comes
          // first.
          if (streams && streams[i])
            if (Stream *s = ownStream(streams[i]))
              check(cgc_stream_synchronize(s->stream, UINT32_MAX), "synchronizing the stream");
          size_t srcBytes = 0, dstBytes = 0;
          check(ort->GetTensorSizeInBytes(src[i], &srcBytes), "source size");
          check(ort->GetTensorSizeInBytes(dst[i], &dstBytes), "destination size");
          if (srcBytes != dstBytes)
            fail(ORT_INVALID_ARGUMENT, "copying " + std::to_string(srcBytes) +
                                           " bytes into a tensor of " +
                                           std::to_string(dstBytes));
          const void *from = nullptr;
          void *to = nullptr;
          check(ort->GetTensorData(src[i], &from), "source data");
          check(ort->GetTensorMutableData(dst[i], &to), "destination data");
          if (srcBytes && from != to)
            std::memcpy(to, from, srcBytes);
          counters().tensorsCopied++;
          counters().bytesCopied += srcBytes;
        }
      });
    };
  }
  Factory *factory;
};

//===----------------------------------------------------------------------===//
// Streams and notifications
//===----------------------------------------------------------------------===//

void releaseStream(OrtSyncStreamImpl *self) noexcept { delete static_cast<Stream *>(self); }

struct Notification : OrtSyncNotificationImpl {
  explicit Notification(Stream *stream) : stream(stream) {
    ort_version_supported = ORT_API_VERSION;
    Release = [](OrtSyncNotificationImpl *self) noexcept { delete static_cast<Notification *>(self); };
    // The EP submits work when it runs; completion is what waits look at.
    Activate = [](OrtSyncNotificationImpl *) noexcept -> OrtStatus * { return nullptr; };
    WaitOnDevice = [](OrtSyncNotificationImpl *self, OrtSyncStream *) noexcept -> OrtStatus * {
      return static_cast<Notification *>(self)->wait();
    };
    WaitOnHost = [](OrtSyncNotificationImpl *self) noexcept -> OrtStatus * {
      return static_cast<Notification *>(self)->wait();
    };
  }
  OrtStatus *wait() {
    return guard([&] {
      check(cgc_stream_synchronize(stream->stream, UINT32_MAX), "waiting for the cgc stream");
    });
  }
  Stream *stream;
};

} // namespace

Stream::Stream(DevicePtr device) : device(std::move(device)) {
  ort_version_supported = ORT_API_VERSION;
  check(cgc_stream_create(this->device.get(), &stream), "cgc_stream_create");
  Release = &releaseStream;
  GetHandle = [](OrtSyncStreamImpl *self) noexcept -> void * {
    return static_cast<Stream *>(self)->stream;
  };
  CreateNotification = [](OrtSyncStreamImpl *self,
                          OrtSyncNotificationImpl **out) noexcept -> OrtStatus * {
    return guard([&] { *out = new Notification(static_cast<Stream *>(self)); });
  };
  Flush = [](OrtSyncStreamImpl *) noexcept -> OrtStatus * { return nullptr; }; // submitted at once
  OnSessionRunEnd = [](OrtSyncStreamImpl *) noexcept -> OrtStatus * { return nullptr; };
}

Stream::~Stream() {
  if (stream) {
    if (cgc_status_t s = cgc_stream_synchronize(stream, UINT32_MAX))
      cgc_status_free(s);
    cgc_stream_release(stream);
  }
}

Stream *ownStream(OrtSyncStream *stream) {
  if (!stream)
    return nullptr;
  const OrtSyncStreamImpl *impl = epApi->SyncStream_GetImpl(stream);
  if (!impl || impl->Release != &releaseStream)
    return nullptr;
  return const_cast<Stream *>(static_cast<const Stream *>(impl));
}

//===----------------------------------------------------------------------===//
// The external resource importer (ORT's interop API over cgc's importer)
//===----------------------------------------------------------------------===//

namespace {

/// An enum's bits as an int, without loading a value of the enum type:
/// ORT passes values outside its enums through unchanged (cgc's dma-buf type,
/// a newer ORT's types, garbage), and loading those as the enum is undefined.
template <typename E> int rawEnum(const E &value) {
  static_assert(sizeof(E) == sizeof(int), "an int-sized enum");
  int bits = 0;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

constexpr int kHostAllocation = CGC_ORT_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION;
constexpr int kDmaBuf = CGC_ORT_EXTERNAL_MEMORY_HANDLE_TYPE_DMA_BUF;

struct MemoryHandle : OrtExternalMemoryHandle {
  cgc_external_memory_t *memory = nullptr; // null for a host allocation
  uint8_t *base = nullptr;                 // the imported bytes
  uint64_t size = 0;
};

struct SemaphoreHandle : OrtExternalSemaphoreHandle {
  cgc_external_semaphore_t *semaphore = nullptr;
};

/// cgc's handle type for an ORT one; false when cgc has none.
bool cgcMemoryType(int type, cgc_external_memory_handle_type_t &out) {
  switch (type) {
  case ORT_EXTERNAL_MEMORY_HANDLE_TYPE_D3D12_RESOURCE:
    out = CGC_EXTERNAL_MEMORY_HANDLE_TYPE_D3D12_RESOURCE;
    return true;
  case ORT_EXTERNAL_MEMORY_HANDLE_TYPE_D3D12_HEAP:
    out = CGC_EXTERNAL_MEMORY_HANDLE_TYPE_D3D12_HEAP;
    return true;
  case ORT_EXTERNAL_MEMORY_HANDLE_TYPE_VK_MEMORY_OPAQUE_FD:
    out = CGC_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD;
    return true;
  case kDmaBuf:
    out = CGC_EXTERNAL_MEMORY_HANDLE_TYPE_DMA_BUF;
    return true;
  default:
    return false;
  }
}

std::string memoryTypeName(int type) {
  switch (type) {
  case ORT_EXTERNAL_MEMORY_HANDLE_TYPE_D3D12_RESOURCE:
    return "D3D12_RESOURCE";
  case ORT_EXTERNAL_MEMORY_HANDLE_TYPE_D3D12_HEAP:
    return "D3D12_HEAP";
  case ORT_EXTERNAL_MEMORY_HANDLE_TYPE_VK_MEMORY_WIN32:
    return "VK_MEMORY_WIN32";
  case ORT_EXTERNAL_MEMORY_HANDLE_TYPE_VK_MEMORY_OPAQUE_FD:
    return "VK_MEMORY_OPAQUE_FD";
  case kHostAllocation:
    return "HOST_ALLOCATION";
  case kDmaBuf:
    return "cgc DMA_BUF";
  default:
    return "unknown type " + std::to_string(type);
  }
}

struct Importer : OrtExternalResourceImporterImpl {
  Importer(const OrtEpDevice *epDevice, DriverDevice *driver)
      : epDevice(epDevice), driver(driver), device(driver->shared()) {
    ort_version_supported = ORT_API_VERSION;
    check(cgc_importer_create(device.get(), &importer), "cgc_importer_create");
    CanImportMemory = [](const OrtExternalResourceImporterImpl *self,
                         OrtExternalMemoryHandleType type) noexcept {
      return static_cast<const Importer *>(self)->canImportMemory(rawEnum(type));
    };
    ImportMemory = [](OrtExternalResourceImporterImpl *self,
                      const OrtExternalMemoryDescriptor *desc,
                      OrtExternalMemoryHandle **out) noexcept -> OrtStatus * {
      return guard([&] { *out = static_cast<Importer *>(self)->importMemory(desc); });
    };
    ReleaseMemory = [](OrtExternalResourceImporterImpl *, OrtExternalMemoryHandle *handle) noexcept {
      releaseMemory(handle);
    };
    CreateTensorFromMemory = [](OrtExternalResourceImporterImpl *self,
                                const OrtExternalMemoryHandle *handle,
                                const OrtExternalTensorDescriptor *desc,
                                OrtValue **out) noexcept -> OrtStatus * {
      return guard([&] { *out = static_cast<Importer *>(self)->createTensor(handle, desc); });
    };
    CanImportSemaphore = [](const OrtExternalResourceImporterImpl *self,
                            OrtExternalSemaphoreType type) noexcept {
      bool supported = false;
      if (rawEnum(type) != ORT_EXTERNAL_SEMAPHORE_D3D12_FENCE)
        return false;
      cgc_status_t s = cgc_importer_can_import_semaphore(
          static_cast<const Importer *>(self)->importer,
          CGC_EXTERNAL_SEMAPHORE_TYPE_D3D12_FENCE, &supported);
      cgc_status_free(s);
      return !s && supported;
    };
    ImportSemaphore = [](OrtExternalResourceImporterImpl *self,
                         const OrtExternalSemaphoreDescriptor *desc,
                         OrtExternalSemaphoreHandle **out) noexcept -> OrtStatus * {
      return guard([&] { *out = static_cast<Importer *>(self)->importSemaphore(desc); });
    };
    ReleaseSemaphore = [](OrtExternalResourceImporterImpl *, OrtExternalSemaphoreHandle *h) noexcept {
      releaseSemaphore(h);
    };
    WaitSemaphore = [](OrtExternalResourceImporterImpl *self, OrtExternalSemaphoreHandle *h,
                       OrtSyncStream *stream, uint64_t value) noexcept -> OrtStatus * {
      return guard([&] { static_cast<Importer *>(self)->queue(h, stream, value, true); });
    };
    SignalSemaphore = [](OrtExternalResourceImporterImpl *self, OrtExternalSemaphoreHandle *h,
                         OrtSyncStream *stream, uint64_t value) noexcept -> OrtStatus * {
      return guard([&] { static_cast<Importer *>(self)->queue(h, stream, value, false); });
    };
    Release = [](OrtExternalResourceImporterImpl *self) noexcept { delete static_cast<Importer *>(self); };
  }
  ~Importer() { cgc_importer_release(importer); }

  bool canImportMemory(int type) const {
    if (type == kHostAllocation)
      return true;
    cgc_external_memory_handle_type_t cgcType;
    if (!cgcMemoryType(type, cgcType))
      return false;
    bool supported = false;
    cgc_status_t s = cgc_importer_can_import_memory(importer, cgcType, &supported);
    cgc_status_free(s);
    return !s && supported;
  }

  OrtExternalMemoryHandle *importMemory(const OrtExternalMemoryDescriptor *desc) {
    if (!desc)
      fail(ORT_INVALID_ARGUMENT, "ImportMemory: the descriptor is null");
    int type = rawEnum(desc->handle_type);
    if (!canImportMemory(type))
      fail(ORT_NOT_IMPLEMENTED, "ImportMemory: cgc device '" + driver->name +
                                    "' cannot import external memory of handle type " +
                                    memoryTypeName(type));
    if (desc->offset_bytes >= desc->size_bytes)
      fail(ORT_INVALID_ARGUMENT, "ImportMemory: offset_bytes " +
                                     std::to_string(desc->offset_bytes) +
                                     " is not inside the allocation of size_bytes " +
                                     std::to_string(desc->size_bytes));
    auto handle = std::make_unique<MemoryHandle>();
    handle->version = ORT_API_VERSION;
    handle->ep_device = epDevice;
    handle->descriptor = *desc;
    handle->Release = &releaseMemory;
    handle->size = desc->size_bytes - desc->offset_bytes;
    if (type == kHostAllocation) {
      if (!desc->native_handle)
        fail(ORT_INVALID_ARGUMENT, "ImportMemory: HOST_ALLOCATION with a null pointer");
      handle->base = static_cast<uint8_t *>(desc->native_handle) + desc->offset_bytes;
      return handle.release();
    }
    cgc_external_memory_descriptor_t d = {};
    d.version = CGC_EXTERNAL_MEMORY_DESCRIPTOR_VERSION;
    cgcMemoryType(type, d.handle_type);
    d.native_handle = desc->native_handle;
    d.fd = -1;
    if (type == ORT_EXTERNAL_MEMORY_HANDLE_TYPE_VK_MEMORY_OPAQUE_FD || type == kDmaBuf) {
      // On Linux the file descriptor travels in native_handle.
      intptr_t fd = reinterpret_cast<intptr_t>(desc->native_handle);
      if (fd < 0 || fd > INT_MAX)
        fail(ORT_INVALID_ARGUMENT, "ImportMemory: native_handle " + std::to_string(fd) +
                                       " is not a file descriptor (" + memoryTypeName(type) +
                                       " carries the fd in native_handle)");
      d.fd = int(fd);
      d.native_handle = nullptr;
    }
    d.size_bytes = handle->size;
    d.offset_bytes = desc->offset_bytes;
    d.access_mode = CGC_EXTERNAL_MEMORY_ACCESS_READ_WRITE;
    check(cgc_importer_import_memory(importer, &d, &handle->memory), "ImportMemory");
    handle->base = static_cast<uint8_t *>(cgc_external_memory_data(handle->memory));
    return handle.release();
  }

  static void releaseMemory(OrtExternalMemoryHandle *h) noexcept {
    auto *handle = static_cast<MemoryHandle *>(h);
    if (handle)
      cgc_external_memory_release(handle->memory);
    delete handle;
  }

  OrtValue *createTensor(const OrtExternalMemoryHandle *h,
                         const OrtExternalTensorDescriptor *desc) {
    if (!h || !desc)
      fail(ORT_INVALID_ARGUMENT, "CreateTensorFromMemory: null handle or descriptor");
    if (h->Release != &releaseMemory)
      fail(ORT_INVALID_ARGUMENT, "CreateTensorFromMemory: the memory was not imported by cgc");
    auto *memory = static_cast<const MemoryHandle *>(h);
    int elementType = rawEnum(desc->element_type);
    size_t element = elementType > 0 && elementType <= ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E8M0
                         ? elementSize(ONNXTensorElementDataType(elementType))
                         : 0;
    if (!element)
      fail(ORT_NOT_IMPLEMENTED, "CreateTensorFromMemory: element type " +
                                    std::to_string(elementType) + " is not one cgc binds");
    if (desc->rank && !desc->shape)
      fail(ORT_INVALID_ARGUMENT, "CreateTensorFromMemory: shape is null with rank " +
                                     std::to_string(desc->rank));
    unsigned __int128 bytes = element;
    for (size_t i = 0; i < desc->rank; ++i) {
      if (desc->shape[i] < 0)
        fail(ORT_INVALID_ARGUMENT, "CreateTensorFromMemory: dimension " + std::to_string(i) +
                                       " is negative");
      bytes *= uint64_t(desc->shape[i]);
      if (bytes > (unsigned __int128)UINT64_MAX)
        fail(ORT_INVALID_ARGUMENT, "CreateTensorFromMemory: the tensor's size overflows");
    }
    if (desc->offset_bytes > memory->size || bytes > memory->size - desc->offset_bytes)
      fail(ORT_INVALID_ARGUMENT,
           "CreateTensorFromMemory: the tensor does not fit: offset_bytes " +
               std::to_string(desc->offset_bytes) + " + " + std::to_string(uint64_t(bytes)) +
               " bytes > the " + std::to_string(memory->size) + " bytes imported");
    OrtValue *value = nullptr;
    check(ort->CreateTensorWithDataAsOrtValue(driver->memoryInfo,
                                              memory->base + desc->offset_bytes, size_t(bytes),
                                              desc->shape, desc->rank, desc->element_type,
                                              &value),
          "CreateTensorFromMemory");
    return value;
  }

  OrtExternalSemaphoreHandle *importSemaphore(const OrtExternalSemaphoreDescriptor *desc) {
    if (!desc)
      fail(ORT_INVALID_ARGUMENT, "ImportSemaphore: the descriptor is null");
    if (rawEnum(desc->type) != ORT_EXTERNAL_SEMAPHORE_D3D12_FENCE)
      fail(ORT_NOT_IMPLEMENTED,
           "ImportSemaphore: cgc imports timeline fences shared as D3D12_FENCE handles only "
           "(type " + std::to_string(rawEnum(desc->type)) + ")");
    auto handle = std::make_unique<SemaphoreHandle>();
    handle->version = ORT_API_VERSION;
    handle->ep_device = epDevice;
    handle->descriptor = *desc;
    handle->Release = &releaseSemaphore;
    cgc_external_semaphore_descriptor_t d = {CGC_EXTERNAL_SEMAPHORE_DESCRIPTOR_VERSION,
                                             CGC_EXTERNAL_SEMAPHORE_TYPE_D3D12_FENCE,
                                             desc->native_handle};
    check(cgc_importer_import_semaphore(importer, &d, &handle->semaphore), "ImportSemaphore");
    return handle.release();
  }

  static void releaseSemaphore(OrtExternalSemaphoreHandle *h) noexcept {
    auto *handle = static_cast<SemaphoreHandle *>(h);
    if (handle)
      cgc_external_semaphore_release(handle->semaphore);
    delete handle;
  }

  void queue(OrtExternalSemaphoreHandle *h, OrtSyncStream *stream, uint64_t value, bool wait) {
    const char *what = wait ? "WaitSemaphore" : "SignalSemaphore";
    if (!h || h->Release != &releaseSemaphore)
      fail(ORT_INVALID_ARGUMENT, std::string(what) + ": the semaphore was not imported by cgc");
    Stream *s = ownStream(stream);
    if (!s)
      fail(ORT_INVALID_ARGUMENT, std::string(what) +
                                     ": the stream is not one of the cgc EP's (create it with "
                                     "CreateSyncStreamForEpDevice on the cgc OrtEpDevice)");
    if (s->device != device)
      fail(ORT_INVALID_ARGUMENT,
           std::string(what) + ": the stream belongs to another cgc device than the importer");
    auto *semaphore = static_cast<SemaphoreHandle *>(h)->semaphore;
    if (wait)
      check(cgc_importer_wait_semaphore(importer, semaphore, s->stream, value), what);
    else
      check(cgc_importer_signal_semaphore(importer, semaphore, s->stream, value), what);
  }

  const OrtEpDevice *epDevice;
  DriverDevice *driver;
  DevicePtr device;
  cgc_importer_t *importer = nullptr;
};

//===----------------------------------------------------------------------===//
// The factory's table
//===----------------------------------------------------------------------===//

Factory *self(OrtEpFactory *f) { return static_cast<Factory *>(f); }
const Factory *self(const OrtEpFactory *f) { return static_cast<const Factory *>(f); }

std::string compatibilityInfo() {
  return std::string("cgc/") + cgc_runtime_version();
}

OrtCompiledModelCompatibility compatibilityOf(const char *info) {
  if (!info || std::strncmp(info, "cgc/", 4) != 0)
    return OrtCompiledModelCompatibility_EP_NOT_APPLICABLE;
  // The container carries its own versions; the runtime loads what it can
  // and names what it cannot.
  return std::strcmp(info, compatibilityInfo().c_str()) == 0
             ? OrtCompiledModelCompatibility_EP_SUPPORTED_OPTIMAL
             : OrtCompiledModelCompatibility_EP_SUPPORTED_PREFER_RECOMPILATION;
}

void fillFactoryTable(Factory &f) {
  f.ort_version_supported = ORT_API_VERSION;
  f.GetName = [](const OrtEpFactory *) noexcept { return CGC_ORT_EP_NAME; };
  f.GetVendor = [](const OrtEpFactory *) noexcept { return "cgc"; };
  f.GetSupportedDevices = [](OrtEpFactory *fp, const OrtHardwareDevice *const *, size_t,
                             OrtEpDevice **epDevices, size_t maxEpDevices,
                             size_t *count) noexcept -> OrtStatus * {
    return guard([&] {
      Factory &factory = *self(fp);
      *count = 0;
      for (auto &driver : factory.drivers) {
        if (*count >= maxEpDevices)
          break;
        OrtKeyValuePairs *metadata = nullptr;
        ort->CreateKeyValuePairs(&metadata);
        ort->AddKeyValuePair(metadata, "cgc.driver", driver->name.c_str());
        ort->AddKeyValuePair(metadata, "cgc.driver_path", driver->path.c_str());
        ort->AddKeyValuePair(metadata, "cgc.runtime_version", cgc_runtime_version());
        OrtEpDevice *epDevice = nullptr;
        OrtStatus *status =
            epApi->CreateEpDevice(fp, driver->hardware, metadata, nullptr, &epDevice);
        ort->ReleaseKeyValuePairs(metadata);
        check(status, "CreateEpDevice");
        check(epApi->EpDevice_AddAllocatorInfo(epDevice, driver->memoryInfo),
              "EpDevice_AddAllocatorInfo");
        check(epApi->EpDevice_AddAllocatorInfo(epDevice, driver->hostInfo),
              "EpDevice_AddAllocatorInfo");
        epDevices[(*count)++] = epDevice;
      }
    });
  };
  f.CreateEp = [](OrtEpFactory *fp, const OrtHardwareDevice *const *devices,
                  const OrtKeyValuePairs *const *, size_t numDevices,
                  const OrtSessionOptions *options, const OrtLogger *logger,
                  OrtEp **out) noexcept -> OrtStatus * {
    return guard([&] {
      *out = nullptr;
      if (numDevices != 1)
        fail(ORT_INVALID_ARGUMENT, "the cgc EP runs on one device at a time (given " +
                                       std::to_string(numDevices) + ")");
      DriverDevice *driver = self(fp)->driverFor(devices[0]);
      if (!driver)
        fail(ORT_INVALID_ARGUMENT, "CreateEp: the device is not one of the cgc factory's");
      *out = createEp(*self(fp), *driver, options, logger);
    });
  };
  f.ReleaseEp = [](OrtEpFactory *, OrtEp *ep) noexcept { releaseEp(ep); };
  f.GetVendorId = [](const OrtEpFactory *) noexcept { return kVendorId; };
  f.GetVersion = [](const OrtEpFactory *) noexcept { return cgc_runtime_version(); };
  f.ValidateCompiledModelCompatibilityInfo =
      [](OrtEpFactory *, const OrtHardwareDevice *const *, size_t, const char *info,
         OrtCompiledModelCompatibility *out) noexcept -> OrtStatus * {
    *out = compatibilityOf(info);
    return nullptr;
  };
  f.CreateAllocator = [](OrtEpFactory *fp, const OrtMemoryInfo *info, const OrtKeyValuePairs *,
                         OrtAllocator **out) noexcept -> OrtStatus * {
    return guard([&] {
      *out = nullptr;
      DriverDevice *driver = self(fp)->driverFor(epApi->MemoryInfo_GetMemoryDevice(info));
      if (!driver)
        fail(ORT_INVALID_ARGUMENT, "CreateAllocator: the memory is not a cgc device's");
      bool host = epApi->MemoryDevice_GetMemoryType(epApi->MemoryInfo_GetMemoryDevice(info)) ==
                  OrtDeviceMemoryType_HOST_ACCESSIBLE;
      *out = new Allocator(host ? driver->hostInfo : driver->memoryInfo);
    });
  };
  f.ReleaseAllocator = [](OrtEpFactory *, OrtAllocator *a) noexcept {
    delete static_cast<Allocator *>(a);
  };
  f.CreateDataTransfer = [](OrtEpFactory *fp, OrtDataTransferImpl **out) noexcept -> OrtStatus * {
    return guard([&] { *out = new DataTransfer(self(fp)); });
  };
  f.IsStreamAware = [](const OrtEpFactory *) noexcept { return true; };
  f.CreateSyncStreamForDevice = [](OrtEpFactory *fp, const OrtMemoryDevice *memoryDevice,
                                   const OrtKeyValuePairs *,
                                   OrtSyncStreamImpl **out) noexcept -> OrtStatus * {
    return guard([&] {
      *out = nullptr;
      DriverDevice *driver = self(fp)->driverFor(memoryDevice);
      if (!driver)
        fail(ORT_INVALID_ARGUMENT, "CreateSyncStreamForDevice: not a cgc device's memory");
      *out = new Stream(driver->shared());
    });
  };
  f.GetHardwareDeviceIncompatibilityDetails =
      [](OrtEpFactory *, const OrtHardwareDevice *,
         OrtDeviceEpIncompatibilityDetails *) noexcept -> OrtStatus * { return nullptr; };
  f.CreateExternalResourceImporterForDevice =
      [](OrtEpFactory *fp, const OrtEpDevice *epDevice,
         OrtExternalResourceImporterImpl **out) noexcept -> OrtStatus * {
    return guard([&] {
      *out = nullptr;
      DriverDevice *driver = self(fp)->driverFor(ort->EpDevice_Device(epDevice));
      if (!driver)
        fail(ORT_INVALID_ARGUMENT, "the OrtEpDevice is not one of the cgc factory's");
      *out = new Importer(epDevice, driver);
    });
  };
  f.GetNumCustomOpDomains = [](OrtEpFactory *, size_t *n) noexcept -> OrtStatus * {
    *n = 0;
    return nullptr;
  };
  f.GetCustomOpDomains = [](OrtEpFactory *, OrtCustomOpDomain **, size_t) noexcept -> OrtStatus * {
    return nullptr;
  };
  f.InitGraphicsInterop = [](OrtEpFactory *, const OrtEpDevice *,
                             const OrtGraphicsInteropConfig *) noexcept -> OrtStatus * {
    return ort->CreateStatus(ORT_NOT_IMPLEMENTED,
                             "cgc: graphics interop needs no initialization: import fences "
                             "with the external resource importer (ImportSemaphore)");
  };
  f.DeinitGraphicsInterop = [](OrtEpFactory *, const OrtEpDevice *) noexcept -> OrtStatus * {
    return nullptr;
  };
  f.SelectBestModelCandidate = [](OrtEpFactory *, const OrtHardwareDevice *,
                                  const OrtKeyValuePairs *const *candidates, size_t count,
                                  const OrtSessionOptions *, size_t *selected) noexcept -> OrtStatus * {
    *selected = SIZE_MAX;
    OrtCompiledModelCompatibility best = OrtCompiledModelCompatibility_EP_UNSUPPORTED;
    for (size_t c = 0; c < count; ++c) {
      const char *n = candidates[c] ? ort->GetKeyValue(candidates[c], "num_models") : nullptr;
      long models = n ? std::strtol(n, nullptr, 10) : 0;
      if (models < 1)
        continue;
      OrtCompiledModelCompatibility worst = OrtCompiledModelCompatibility_EP_SUPPORTED_OPTIMAL;
      for (long i = 0; i < models; ++i) {
        std::string key = std::to_string(i) + ".ep_compatibility_info";
        OrtCompiledModelCompatibility m =
            compatibilityOf(ort->GetKeyValue(candidates[c], key.c_str()));
        if (m == OrtCompiledModelCompatibility_EP_NOT_APPLICABLE)
          m = OrtCompiledModelCompatibility_EP_UNSUPPORTED;
        worst = std::max(worst, m);
      }
      if (worst < best) {
        best = worst;
        *selected = c;
      }
    }
    return nullptr;
  };
}

} // namespace

Factory::Factory(const char *name, const OrtLogger *logger)
    : registeredName(name ? name : ""), logger(logger) {
  fillFactoryTable(*this);
  for (size_t i = 0; i < cgc_driver_count(); ++i) {
    auto driver = std::make_unique<DriverDevice>();
    driver->path = cgc_driver_path(i);
    std::string file = driver->path.substr(driver->path.rfind('/') + 1);
    const std::string prefix = "libcgc_driver_";
    driver->name = file.rfind(prefix, 0) == 0 ? file.substr(prefix.size()) : file;
    if (driver->name.size() > 3 && driver->name.compare(driver->name.size() - 3, 3, ".so") == 0)
      driver->name.resize(driver->name.size() - 3);
    driver->deviceId = uint32_t(i);
    OrtKeyValuePairs *metadata = nullptr;
    ort->CreateKeyValuePairs(&metadata);
    ort->AddKeyValuePair(metadata, kOrtHardwareDevice_MetadataKey_IsVirtual, "1");
    ort->AddKeyValuePair(metadata, "Description",
                         ("cgc D3D12 device, driver " + driver->name).c_str());
    ort->AddKeyValuePair(metadata, "cgc.driver", driver->name.c_str());
    OrtStatus *status = epApi->CreateHardwareDevice(OrtHardwareDeviceType_GPU, kVendorId,
                                                    driver->deviceId, "cgc", metadata,
                                                    &driver->hardware);
    ort->ReleaseKeyValuePairs(metadata);
    check(status, "CreateHardwareDevice");
    std::string memoryName = "cgc:" + driver->name;
    check(ort->CreateMemoryInfo_V2(memoryName.c_str(), OrtMemoryInfoDeviceType_GPU, kVendorId,
                                   int32_t(driver->deviceId), OrtDeviceMemoryType_DEFAULT, 256,
                                   OrtDeviceAllocator, &driver->memoryInfo),
          "CreateMemoryInfo_V2");
    std::string hostName = memoryName + ":host";
    check(ort->CreateMemoryInfo_V2(hostName.c_str(), OrtMemoryInfoDeviceType_GPU, kVendorId,
                                   int32_t(driver->deviceId),
                                   OrtDeviceMemoryType_HOST_ACCESSIBLE, 256, OrtDeviceAllocator,
                                   &driver->hostInfo),
          "CreateMemoryInfo_V2");
    drivers.push_back(std::move(driver));
  }
}

Factory::~Factory() {
  for (auto &driver : drivers) {
    ort->ReleaseMemoryInfo(driver->memoryInfo);
    ort->ReleaseMemoryInfo(driver->hostInfo);
    epApi->ReleaseHardwareDevice(driver->hardware);
  }
}

DriverDevice *Factory::driverFor(const OrtHardwareDevice *device) {
  if (!device || ort->HardwareDevice_VendorId(device) != kVendorId)
    return nullptr;
  uint32_t id = ort->HardwareDevice_DeviceId(device);
  return id < drivers.size() ? drivers[id].get() : nullptr;
}

DriverDevice *Factory::driverFor(const OrtMemoryDevice *device) {
  if (!device || epApi->MemoryDevice_GetVendorId(device) != kVendorId ||
      epApi->MemoryDevice_GetDeviceType(device) != OrtMemoryInfoDeviceType_GPU)
    return nullptr;
  uint32_t id = epApi->MemoryDevice_GetDeviceId(device);
  return id < drivers.size() ? drivers[id].get() : nullptr;
}

} // namespace cgc::ort_ep

using namespace cgc::ort_ep;

extern "C" {

__attribute__((visibility("default"))) OrtStatus *
CreateEpFactories(const char *registeredName, const OrtApiBase *base,
                  const OrtLogger *logger, OrtEpFactory **factories, size_t maxFactories,
                  size_t *count) {
  const OrtApi *api = base ? base->GetApi(ORT_API_VERSION) : nullptr;
  if (!api) { // an older ONNX Runtime: no API table to report an error with
    *count = 0;
    return nullptr;
  }
  ort = api;
  epApi = ort->GetEpApi();
  editorApi = ort->GetModelEditorApi();
  return guard([&] {
    *count = 0;
    if (!epApi)
      fail(ORT_NOT_IMPLEMENTED, "this ONNX Runtime has no EP API");
    if (maxFactories < 1)
      fail(ORT_INVALID_ARGUMENT, "no room for the cgc factory");
    if (!cgc_driver_count())
      fail(ORT_ENGINE_ERROR, "no cgc D3D12 driver was found beside libcgc_d3d12.so "
                             "(libcgc_driver_*.so) or in $CGC_D3D12_DRIVER");
    factories[0] = new Factory(registeredName, logger);
    *count = 1;
  });
}

__attribute__((visibility("default"))) OrtStatus *ReleaseEpFactory(OrtEpFactory *factory) {
  delete static_cast<Factory *>(factory);
  return nullptr;
}

__attribute__((visibility("default"))) void cgc_ort_ep_stats(cgc_ort_ep_stats_t *out) {
  if (!out)
    return;
  Counters &c = counters();
  out->compiles = c.compiles;
  out->capability_compiles = c.capabilityCompiles;
  out->context_loads = c.contextLoads;
  out->runs = c.runs;
  out->tensors_copied = c.tensorsCopied;
  out->bytes_copied = c.bytesCopied;
  out->run_ns = c.runNs;
}

} // extern "C"
