//===- interop.cpp - Importing external memory and semaphores -------------===//
//
// The capability object of ONNX Runtime's D3D12 interop proposal
// (OrtExternalResourceImporter) on Linux file descriptors:
//
//   memory     D3D12_HEAP / D3D12_RESOURCE (a HANDLE from CreateSharedHandle),
//              OPAQUE_FD (a memfd or /dev/shm file): the allocation's
//              [offset, offset + size) is mapped in this process (read-only
//              for READ_ONLY access) and wrapped as a D3D12 heap over that
//              mapping (OpenExistingHeapFromAddress1), so tensors over it are
//              bound by address: no copy. DMA_BUF: not implemented on the
//              CPU device.
//   semaphores D3D12_FENCE (a HANDLE from CreateSharedHandle on a shared
//              fence): opened with OpenSharedHandle; waits and signals are
//              queued on a stream (ID3D12CommandQueue::Wait / Signal).
//              SYNC_FD: not implemented.
//
//===----------------------------------------------------------------------===//

#include "internal.h"

#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

using namespace cgc::rt;

static constexpr long kDmaBufMagic = 0x444d4142; // DMA_BUF_MAGIC, linux/magic.h

static const char *typeName(cgc_external_memory_handle_type_t type) {
  switch (type) {
  case CGC_EXTERNAL_MEMORY_HANDLE_TYPE_D3D12_HEAP: return "D3D12_HEAP";
  case CGC_EXTERNAL_MEMORY_HANDLE_TYPE_D3D12_RESOURCE: return "D3D12_RESOURCE";
  case CGC_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD: return "OPAQUE_FD";
  case CGC_EXTERNAL_MEMORY_HANDLE_TYPE_DMA_BUF: return "DMA_BUF";
  }
  return "unknown";
}

static const char *dmaBufWhy =
    "importing dma-buf memory is not implemented on the CPU device: CPU access "
    "to a dma-buf must be bracketed by DMA_BUF_IOCTL_SYNC around every run, which the "
    "CPU driver does not do; share a memfd (OPAQUE_FD) or a D3D12 shared heap instead";

cgc_external_memory_s::~cgc_external_memory_s() {
  resource.Reset();
  heap.Reset();
  if (mapping)
    munmap(mapping, mappingSize);
  if (fd >= 0)
    close(fd);
}

namespace cgc::rt {

bool canImportMemory(cgc_external_memory_handle_type_t type) {
  switch (type) {
  case CGC_EXTERNAL_MEMORY_HANDLE_TYPE_D3D12_HEAP:
  case CGC_EXTERNAL_MEMORY_HANDLE_TYPE_D3D12_RESOURCE:
  case CGC_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD:
    return true;
  default:
    return false;
  }
}

bool canImportSemaphore(cgc_external_semaphore_type_t type) {
  return type == CGC_EXTERNAL_SEMAPHORE_TYPE_D3D12_FENCE;
}

Ref<cgc_external_memory_s> importMemory(cgc_device_s *device,
                                        const cgc_external_memory_descriptor_t &given) {
  // A C caller may pass any int as the handle type: read it as bytes (a
  // value outside the enum loaded as the enum is undefined behaviour) and
  // map an unknown one to a value the checks below refuse by number.
  cgc_external_memory_descriptor_t desc = given;
  int handleType;
  static_assert(sizeof handleType == sizeof desc.handle_type);
  std::memcpy(&handleType, &given.handle_type, sizeof handleType);
  if (handleType < CGC_EXTERNAL_MEMORY_HANDLE_TYPE_D3D12_HEAP ||
      handleType > CGC_EXTERNAL_MEMORY_HANDLE_TYPE_DMA_BUF)
    fail(CGC_STATUS_UNIMPLEMENTED, "cgc_importer_import_memory: unknown handle type " +
                                       std::to_string(handleType));
  std::string what = std::string("cgc_importer_import_memory(") + typeName(desc.handle_type) + ")";
  if (desc.version != CGC_EXTERNAL_MEMORY_DESCRIPTOR_VERSION)
    fail(CGC_STATUS_INVALID_ARGUMENT, what + ": descriptor version " +
                                          std::to_string(desc.version) + ", expected " +
                                          std::to_string(CGC_EXTERNAL_MEMORY_DESCRIPTOR_VERSION));
  if (desc.access_mode != CGC_EXTERNAL_MEMORY_ACCESS_READ_WRITE &&
      desc.access_mode != CGC_EXTERNAL_MEMORY_ACCESS_READ_ONLY &&
      desc.access_mode != CGC_EXTERNAL_MEMORY_ACCESS_WRITE_ONLY)
    fail(CGC_STATUS_INVALID_ARGUMENT, what + ": unknown access mode " +
                                          std::to_string(int(desc.access_mode)));
  if (desc.handle_type == CGC_EXTERNAL_MEMORY_HANDLE_TYPE_DMA_BUF)
    fail(CGC_STATUS_UNIMPLEMENTED, what + ": " + dmaBufWhy);
  if (!canImportMemory(desc.handle_type))
    fail(CGC_STATUS_UNIMPLEMENTED, what + ": handle type " +
                                       std::to_string(int(desc.handle_type)) +
                                       " is not supported (cgc_importer_can_import_memory)");
  if (desc.size_bytes == 0)
    fail(CGC_STATUS_INVALID_ARGUMENT, what + ": size_bytes is 0");

  bool d3d12 = desc.handle_type != CGC_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD;
  int fd = d3d12 ? CGCFdFromHandle(desc.native_handle) : desc.fd;
  if (fd < 0)
    fail(CGC_STATUS_INVALID_ARGUMENT,
         what + (d3d12 ? ": native_handle is null" : ": fd is negative"));
  struct stat st = {};
  if (fstat(fd, &st) != 0)
    fail(CGC_STATUS_INVALID_ARGUMENT,
         what + ": the handle is not an open descriptor (" + std::strerror(errno) + ")");
  struct statfs fs = {};
  if (fstatfs(fd, &fs) == 0 && long(fs.f_type) == kDmaBufMagic)
    fail(CGC_STATUS_UNIMPLEMENTED, what + ": the descriptor is a dma-buf; " + dmaBufWhy);
  if (!S_ISREG(st.st_mode))
    fail(CGC_STATUS_INVALID_ARGUMENT,
         what + ": the descriptor is not a mappable file (a memfd, a /dev/shm file)");
  uint64_t allocation = uint64_t(st.st_size);
  if (d3d12) {
    // The handle must be what the type says: D3D12 opens it to check.
    HRESULT hr;
    if (desc.handle_type == CGC_EXTERNAL_MEMORY_HANDLE_TYPE_D3D12_RESOURCE) {
      ComPtr<ID3D12Resource> resource;
      hr = device->d3d->OpenSharedHandle(desc.native_handle, IID_PPV_ARGS(&resource));
      if (SUCCEEDED(hr))
        allocation = resource->GetDesc().Width;
    } else {
      ComPtr<ID3D12Heap> heap;
      hr = device->d3d->OpenSharedHandle(desc.native_handle, IID_PPV_ARGS(&heap));
    }
    if (FAILED(hr))
      fail(CGC_STATUS_INVALID_ARGUMENT, what + ": " + CGCD3D12GetLastError());
  }
  if (desc.offset_bytes > allocation || desc.size_bytes > allocation - desc.offset_bytes)
    fail(CGC_STATUS_OUT_OF_RANGE, what + ": [" + std::to_string(desc.offset_bytes) + ", +" +
                                      std::to_string(desc.size_bytes) +
                                      ") is outside the " + std::to_string(allocation) +
                                      "-byte allocation");

  auto memory = Ref<cgc_external_memory_s>::adopt(new cgc_external_memory_s());
  memory->device = Ref<cgc_device_s>::share(device);
  memory->type = desc.handle_type;
  memory->access = desc.access_mode;
  memory->size = desc.size_bytes;
  memory->fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
  if (memory->fd < 0)
    fail(CGC_STATUS_RESOURCE_EXHAUSTED,
         what + ": cannot duplicate the descriptor: " + std::strerror(errno));
  uint64_t page = uint64_t(sysconf(_SC_PAGESIZE));
  uint64_t start = desc.offset_bytes / page * page;
  uint64_t end = (desc.offset_bytes + desc.size_bytes + page - 1) / page * page;
  int prot = desc.access_mode == CGC_EXTERNAL_MEMORY_ACCESS_READ_ONLY
                 ? PROT_READ
                 : PROT_READ | PROT_WRITE;
  void *p = mmap(nullptr, end - start, prot, MAP_SHARED, memory->fd, off_t(start));
  if (p == MAP_FAILED)
    fail(CGC_STATUS_INVALID_ARGUMENT,
         what + ": cannot map the memory" +
             (prot & PROT_WRITE ? " read-write" : " read-only") + " (" + std::strerror(errno) +
             ")" + (errno == EACCES ? "; import it READ_ONLY or share it writable" : ""));
  memory->mapping = p;
  memory->mappingSize = end - start;
  memory->data = static_cast<uint8_t *>(p) + (desc.offset_bytes - start);

  HRESULT hr = device->d3d->OpenExistingHeapFromAddress1(p, memory->mappingSize,
                                                         IID_PPV_ARGS(&memory->heap));
  if (FAILED(hr))
    fail(CGC_STATUS_INTERNAL, what + ": OpenExistingHeapFromAddress1 failed (" +
                                  hresultText(hr) + "): " + CGCD3D12GetLastError());
  D3D12_RESOURCE_DESC rd = {};
  rd.Dimension = D3D12_RESOURCE_DIMENSION_BUFFER;
  rd.Width = memory->mappingSize;
  rd.Height = rd.DepthOrArraySize = rd.MipLevels = 1;
  rd.SampleDesc.Count = 1;
  rd.Layout = D3D12_TEXTURE_LAYOUT_ROW_MAJOR;
  rd.Flags = D3D12_RESOURCE_FLAG_ALLOW_UNORDERED_ACCESS; // MLIR programs bind it
  hr = device->d3d->CreatePlacedResource(memory->heap.Get(), 0, &rd, D3D12_RESOURCE_STATE_COMMON,
                                         nullptr, IID_PPV_ARGS(&memory->resource));
  if (FAILED(hr))
    fail(CGC_STATUS_INTERNAL, what + ": CreatePlacedResource failed (" + hresultText(hr) + ")");
  return memory;
}

Ref<cgc_tensor_s> tensorFromMemory(cgc_external_memory_s *memory,
                                   const cgc_external_tensor_descriptor_t &desc) {
  const char *what = "cgc_importer_create_tensor";
  if (desc.version != CGC_EXTERNAL_TENSOR_DESCRIPTOR_VERSION)
    fail(CGC_STATUS_INVALID_ARGUMENT, std::string(what) + ": descriptor version " +
                                          std::to_string(desc.version) + ", expected " +
                                          std::to_string(CGC_EXTERNAL_TENSOR_DESCRIPTOR_VERSION));
  std::vector<int64_t> shape = checkDesc(desc.dtype, desc.rank, desc.shape, what);
  uint64_t bytes = tensorBytes(desc.dtype, shape);
  if (desc.offset_bytes > memory->size || bytes > memory->size - desc.offset_bytes)
    fail(CGC_STATUS_OUT_OF_RANGE,
         std::string(what) + ": the tensor " + describeTensor(desc.dtype, shape) + " (" +
             std::to_string(bytes) + " bytes at offset " + std::to_string(desc.offset_bytes) +
             ") does not fit in the imported memory of " + std::to_string(memory->size) +
             " bytes");
  auto t = Ref<cgc_tensor_s>::adopt(new cgc_tensor_s());
  t->device = memory->device;
  t->dtype = desc.dtype;
  t->shape = std::move(shape);
  t->bytes = bytes;
  t->resource = memory->resource;
  t->offset = uint64_t(memory->data - static_cast<uint8_t *>(memory->mapping)) + desc.offset_bytes;
  t->cpu = memory->data + desc.offset_bytes;
  t->gpu = memory->resource->GetGPUVirtualAddress() + t->offset;
  t->readOnly = memory->access == CGC_EXTERNAL_MEMORY_ACCESS_READ_ONLY;
  t->origin = std::string("imported ") + typeName(memory->type) + " memory";
  t->imported = Ref<cgc_external_memory_s>::share(memory);
  return t;
}

Ref<cgc_external_semaphore_s> importSemaphore(cgc_device_s *device,
                                              const cgc_external_semaphore_descriptor_t &desc) {
  const char *what = "cgc_importer_import_semaphore";
  if (desc.version != CGC_EXTERNAL_SEMAPHORE_DESCRIPTOR_VERSION)
    fail(CGC_STATUS_INVALID_ARGUMENT,
         std::string(what) + ": descriptor version " + std::to_string(desc.version) +
             ", expected " + std::to_string(CGC_EXTERNAL_SEMAPHORE_DESCRIPTOR_VERSION));
  if (desc.type == CGC_EXTERNAL_SEMAPHORE_TYPE_SYNC_FD)
    fail(CGC_STATUS_UNIMPLEMENTED,
         std::string(what) + "(SYNC_FD): sync_file semaphores are not implemented (they are "
                             "binary, one payload per submission); share a D3D12 fence created "
                             "with D3D12_FENCE_FLAG_SHARED (a timeline)");
  if (!canImportSemaphore(desc.type))
    fail(CGC_STATUS_UNIMPLEMENTED, std::string(what) + ": semaphore type " +
                                       std::to_string(int(desc.type)) + " is not supported");
  if (!desc.native_handle)
    fail(CGC_STATUS_INVALID_ARGUMENT, std::string(what) + "(D3D12_FENCE): native_handle is null");
  auto semaphore = Ref<cgc_external_semaphore_s>::adopt(new cgc_external_semaphore_s());
  semaphore->device = Ref<cgc_device_s>::share(device);
  HRESULT hr = device->d3d->OpenSharedHandle(desc.native_handle, IID_PPV_ARGS(&semaphore->fence));
  if (FAILED(hr))
    fail(CGC_STATUS_INVALID_ARGUMENT,
         std::string(what) + "(D3D12_FENCE): " + CGCD3D12GetLastError());
  return semaphore;
}

} // namespace cgc::rt
