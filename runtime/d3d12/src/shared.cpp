//===- shared.cpp - Cross-process sharing of heaps and fences -------------===//
//
// CreateSharedHandle / OpenSharedHandle on Linux, the D3D12 side of the ONNX
// Runtime interop design (docs/d3d12.md, docs/runtime.md):
//
//   - A HANDLE is a file descriptor (CGCHandleFromFd: fd + 1, so that
//     descriptor 0 is not a null handle). Shared handles are created close-on-
//     exec unless SECURITY_ATTRIBUTES::bInheritHandle is set; pass them to
//     another process by inheritance or SCM_RIGHTS.
//   - A heap created with D3D12_HEAP_FLAG_SHARED (or the heap of a committed
//     resource created with it) lives in a memfd named "cgc-d3d12-heap" (or
//     "cgc-d3d12-resource:<width>"), mapped MAP_SHARED; the driver wraps that
//     memory as it wraps OpenExistingHeapFromAddress memory.
//   - A fence created with D3D12_FENCE_FLAG_SHARED keeps its 64-bit value in
//     a one-page memfd named "cgc-d3d12-fence": a cross-process timeline.
//     Signals store the value and bump a 32-bit sequence word; waiters sleep
//     on that word with a (non-private) futex, so a signal in one process
//     wakes waiters in every process that opened the fence.
//   - OpenSharedHandle opens fences and resources from those handles, and
//     heaps from them or from any other mappable file (a memfd or a /dev/shm
//     file the application made itself).
//
//===----------------------------------------------------------------------===//

#include "internal.h"

#include <cerrno>
#include <climits>
#include <cstring>

#include <fcntl.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace cgc::d3d12 {

static constexpr const char kHeapName[] = "cgc-d3d12-heap";
static constexpr const char kResourcePrefix[] = "cgc-d3d12-resource:";
static constexpr const char kFenceName[] = "cgc-d3d12-fence";
static constexpr uint64_t kFenceMagic = 0x45434e4546434743ull; // "CGCFENCE"
static constexpr uint32_t kFenceVersion = 1;

//===----------------------------------------------------------------------===//
// Shared memory
//===----------------------------------------------------------------------===//

SharedMemory &SharedMemory::operator=(SharedMemory &&other) noexcept {
  if (this != &other) {
    this->~SharedMemory();
    fd = other.fd;
    mapping = other.mapping;
    size = other.size;
    other.fd = -1;
    other.mapping = nullptr;
    other.size = 0;
  }
  return *this;
}

SharedMemory::~SharedMemory() {
  if (mapping)
    munmap(mapping, size);
  if (fd >= 0)
    close(fd);
  mapping = nullptr;
  fd = -1;
  size = 0;
}

static uint64_t pageSize() { return uint64_t(sysconf(_SC_PAGESIZE)); }

static uint64_t roundUpToPage(uint64_t bytes) {
  uint64_t page = pageSize();
  return (bytes + page - 1) / page * page;
}

/// A new memfd of `bytes` (rounded up to a page), mapped read-write.
static bool createSharedMemory(const std::string &name, uint64_t bytes, SharedMemory &out,
                               std::string &error) {
  SharedMemory memory;
  memory.fd = memfd_create(name.c_str(), MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (memory.fd < 0) {
    error = std::string("memfd_create failed: ") + std::strerror(errno);
    return false;
  }
  memory.size = roundUpToPage(bytes);
  if (ftruncate(memory.fd, off_t(memory.size)) != 0) {
    error = "cannot size the memfd to " + std::to_string(memory.size) +
            " bytes: " + std::strerror(errno);
    return false;
  }
  // Shared memory cannot shrink under the mapping.
  fcntl(memory.fd, F_ADD_SEALS, F_SEAL_SHRINK);
  void *p = mmap(nullptr, memory.size, PROT_READ | PROT_WRITE, MAP_SHARED, memory.fd, 0);
  if (p == MAP_FAILED) {
    error = "cannot map the memfd: " + std::string(std::strerror(errno));
    return false;
  }
  memory.mapping = p;
  out = std::move(memory);
  return true;
}

/// Maps all of the file `fd` (duplicated: the caller keeps its descriptor)
/// read-write.
static bool mapSharedFile(int fd, SharedMemory &out, std::string &error) {
  struct stat st = {};
  if (fstat(fd, &st) != 0) {
    error = "the handle is not an open file descriptor (" + std::string(std::strerror(errno)) +
            ")";
    return false;
  }
  if (!S_ISREG(st.st_mode)) {
    error = "the handle is not a mappable file (a memfd or a shared-memory file)";
    return false;
  }
  if (st.st_size <= 0) {
    error = "the shared file is empty";
    return false;
  }
  SharedMemory memory;
  memory.fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
  if (memory.fd < 0) {
    error = "cannot duplicate the handle: " + std::string(std::strerror(errno));
    return false;
  }
  memory.size = uint64_t(st.st_size);
  void *p = mmap(nullptr, memory.size, PROT_READ | PROT_WRITE, MAP_SHARED, memory.fd, 0);
  if (p == MAP_FAILED) {
    error = "cannot map the shared file read-write (" + std::string(std::strerror(errno)) +
            "); was it opened read-only?";
    return false;
  }
  memory.mapping = p;
  out = std::move(memory);
  return true;
}

/// The memfd name of `fd` ("cgc-d3d12-fence", ...), or "" if it is not a memfd.
static std::string memfdName(int fd) {
  char path[64], target[512];
  std::snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
  ssize_t n = readlink(path, target, sizeof(target) - 1);
  if (n <= 0)
    return "";
  std::string link(target, size_t(n));
  const std::string prefix = "/memfd:";
  if (link.compare(0, prefix.size(), prefix) != 0)
    return "";
  link = link.substr(prefix.size());
  const std::string deleted = " (deleted)";
  if (link.size() >= deleted.size() &&
      link.compare(link.size() - deleted.size(), deleted.size(), deleted) == 0)
    link.resize(link.size() - deleted.size());
  return link;
}

static int fdOf(HANDLE handle) { return int(reinterpret_cast<intptr_t>(handle) - 1); }

//===----------------------------------------------------------------------===//
// Shared fences
//===----------------------------------------------------------------------===//

struct Fence::SharedPage {
  uint64_t magic;
  uint32_t version;
  uint32_t reserved;
  std::atomic<uint64_t> value;
  std::atomic<uint32_t> sequence; // futex word, bumped on every signal
};
static_assert(std::atomic<uint64_t>::is_always_lock_free &&
                  std::atomic<uint32_t>::is_always_lock_free,
              "shared fences need lock-free atomics");

static long futex(std::atomic<uint32_t> *word, int op, uint32_t value, const timespec *timeout) {
  return syscall(SYS_futex, reinterpret_cast<uint32_t *>(word), op, value, timeout, nullptr, 0);
}

void Fence::wakeSharedWaiters(SharedPage *page) {
  page->sequence.fetch_add(1, std::memory_order_acq_rel);
  futex(&page->sequence, FUTEX_WAKE, INT_MAX, nullptr);
}

bool Fence::waitShared(SharedPage *page, std::atomic<uint64_t> &value, uint64_t target,
                       const std::atomic<bool> *abort) {
  while (true) {
    uint32_t seen = page->sequence.load(std::memory_order_acquire);
    if (value.load(std::memory_order_acquire) >= target)
      return true;
    if (abort && abort->load())
      return false;
    timespec tick = {0, 10 * 1000 * 1000};
    futex(&page->sequence, FUTEX_WAIT, seen, abort ? &tick : nullptr);
  }
}

bool Fence::makeShared(SharedMemory memory, bool initialize, std::string &error) {
  if (memory.size < sizeof(SharedPage)) {
    error = "the shared file is too small to be a fence";
    return false;
  }
  auto *page = static_cast<SharedPage *>(memory.mapping);
  if (initialize) {
    page->magic = kFenceMagic;
    page->version = kFenceVersion;
    page->value.store(localValue_.load());
    page->sequence.store(0);
  } else if (page->magic != kFenceMagic || page->version != kFenceVersion) {
    error = "the shared file is not a cgc D3D12 fence (bad magic or version)";
    return false;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  sharedMemory_ = std::move(memory);
  shared_ = page;
  value_ = &page->value;
  return true;
}

void Fence::watchShared() {
  while (true) {
    uint32_t seen = shared_->sequence.load(std::memory_order_acquire);
    fireEvents(value_->load());
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (stopWatching_ || events_.empty()) {
        watching_ = false;
        return;
      }
    }
    timespec tick = {0, 50 * 1000 * 1000};
    futex(&shared_->sequence, FUTEX_WAIT, seen, &tick);
  }
}

Fence::~Fence() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopWatching_ = true;
  }
  if (watcher_.joinable())
    watcher_.join(); // it wakes at least every 50 ms
}

//===----------------------------------------------------------------------===//
// Device methods
//===----------------------------------------------------------------------===//

bool Device::createSharedHeapMemory(const D3D12_HEAP_DESC &desc, uint64_t resourceWidth,
                                    SharedMemory &memory, std::string &error) {
  std::string name = resourceWidth ? kResourcePrefix + std::to_string(resourceWidth) : kHeapName;
  return createSharedMemory(name, desc.SizeInBytes, memory, error);
}

HRESULT Device::createSharedFence(UINT64 initialValue, D3D12_FENCE_FLAGS flags,
                                  ComPtr<Fence> &fence) {
  SharedMemory memory;
  std::string error;
  if (!createSharedMemory(kFenceName, sizeof(Fence::SharedPage), memory, error))
    return fail(E_OUTOFMEMORY, "CreateFence(D3D12_FENCE_FLAG_SHARED): " + error);
  fence.Attach(new Fence(this, initialValue, flags));
  if (!fence->makeShared(std::move(memory), /*initialize=*/true, error))
    return fail(E_FAIL, "CreateFence(D3D12_FENCE_FLAG_SHARED): " + error);
  return S_OK;
}

HRESULT Device::CreateSharedHandle(ID3D12DeviceChild *pObject,
                                   const SECURITY_ATTRIBUTES *pAttributes, DWORD,
                                   LPCWSTR Name, HANDLE *pHandle) {
  if (!pObject || !pHandle)
    return fail(E_INVALIDARG, "CreateSharedHandle: pObject and pHandle must not be null");
  *pHandle = nullptr;
  if (Name)
    return fail(E_NOTIMPL, "CreateSharedHandle: named handles are not implemented on Linux; "
                           "pass the handle (a file descriptor) to the other process");
  int fd = -1;
  if (Heap *heap = implOf<Heap>(pObject, kImplHeap)) {
    if (!heap->sharedMemory().valid())
      return fail(E_INVALIDARG,
                  "CreateSharedHandle: the heap was not created with D3D12_HEAP_FLAG_SHARED");
    fd = heap->sharedMemory().fd;
  } else if (Resource *resource = implOf<Resource>(pObject, kImplResource)) {
    if (!resource->committed())
      return fail(E_INVALIDARG, "CreateSharedHandle: a placed resource cannot be shared; share "
                                "its heap");
    if (!resource->heap()->sharedMemory().valid())
      return fail(E_INVALIDARG, "CreateSharedHandle: the resource was not created with "
                                "D3D12_HEAP_FLAG_SHARED");
    fd = resource->heap()->sharedMemory().fd;
  } else if (Fence *fence = implOf<Fence>(pObject, kImplFence)) {
    if (!fence->isShared())
      return fail(E_INVALIDARG,
                  "CreateSharedHandle: the fence was not created with D3D12_FENCE_FLAG_SHARED");
    fd = fence->sharedMemory().fd;
  } else {
    return fail(E_NOTIMPL, "CreateSharedHandle: only heaps, committed resources and fences can "
                           "be shared");
  }
  bool inherit = pAttributes && pAttributes->bInheritHandle;
  int copy = fcntl(fd, inherit ? F_DUPFD : F_DUPFD_CLOEXEC, 3);
  if (copy < 0)
    return fail(E_OUTOFMEMORY,
                "CreateSharedHandle: cannot duplicate the descriptor: " +
                    std::string(std::strerror(errno)));
  *pHandle = reinterpret_cast<HANDLE>(intptr_t(copy) + 1);
  return S_OK;
}

HRESULT Device::OpenSharedHandle(HANDLE NTHandle, REFIID riid, void **ppvObj) {
  if (!ppvObj)
    return fail(E_INVALIDARG, "OpenSharedHandle: ppvObj is null");
  *ppvObj = nullptr;
  int fd = fdOf(NTHandle);
  if (!NTHandle || fd < 0)
    return fail(E_INVALIDARG, "OpenSharedHandle: the handle is null");
  std::string name = memfdName(fd);
  bool isFence = name == kFenceName;
  std::string error;

  if (riid == __uuidof(ID3D12Fence) || riid == __uuidof(ID3D12Fence1)) {
    if (!isFence)
      return fail(E_INVALIDARG, "OpenSharedHandle: the handle is not a shared fence (made by "
                                "CreateSharedHandle on a D3D12_FENCE_FLAG_SHARED fence)");
    SharedMemory memory;
    if (!mapSharedFile(fd, memory, error))
      return fail(E_INVALIDARG, "OpenSharedHandle: " + error);
    ComPtr<Fence> fence;
    fence.Attach(new Fence(this, 0, D3D12_FENCE_FLAG_SHARED));
    if (!fence->makeShared(std::move(memory), /*initialize=*/false, error))
      return fail(E_INVALIDARG, "OpenSharedHandle: " + error);
    return fence->QueryInterface(riid, ppvObj);
  }

  bool wantsHeap = riid == __uuidof(ID3D12Heap) || riid == __uuidof(ID3D12Heap1);
  bool wantsResource = riid == __uuidof(ID3D12Resource) || riid == __uuidof(ID3D12Resource1) ||
                       riid == __uuidof(ID3D12Resource2);
  if (!wantsHeap && !wantsResource)
    return fail(E_NOINTERFACE, "OpenSharedHandle: only ID3D12Heap, ID3D12Resource and "
                               "ID3D12Fence can be opened");
  if (isFence)
    return fail(E_INVALIDARG, "OpenSharedHandle: the handle is a fence, not memory");
  uint64_t width = 0;
  if (name.compare(0, std::strlen(kResourcePrefix), kResourcePrefix) == 0)
    width = std::strtoull(name.c_str() + std::strlen(kResourcePrefix), nullptr, 10);
  if (wantsResource && !width)
    return fail(E_INVALIDARG, "OpenSharedHandle: the handle is not a shared committed resource "
                              "(open heaps as ID3D12Heap)");
  SharedMemory memory;
  if (!mapSharedFile(fd, memory, error))
    return fail(E_INVALIDARG, "OpenSharedHandle: " + error);
  if (width > memory.size)
    return fail(E_INVALIDARG, "OpenSharedHandle: the shared resource is " + std::to_string(width) +
                                  " bytes but its memory only " + std::to_string(memory.size));
  D3D12_HEAP_DESC desc = {};
  desc.SizeInBytes = memory.size;
  desc.Properties.Type = D3D12_HEAP_TYPE_CUSTOM;
  desc.Properties.CPUPageProperty = D3D12_CPU_PAGE_PROPERTY_WRITE_BACK;
  desc.Properties.MemoryPoolPreference = D3D12_MEMORY_POOL_L0;
  desc.Properties.CreationNodeMask = desc.Properties.VisibleNodeMask = 1;
  desc.Alignment = D3D12_DEFAULT_RESOURCE_PLACEMENT_ALIGNMENT;
  desc.Flags = D3D12_HEAP_FLAG_SHARED | D3D12_HEAP_FLAG_ALLOW_ONLY_BUFFERS;
  ComPtr<Heap> heap;
  if (HRESULT hr = createSharedHeapImpl(desc, &memory, heap); FAILED(hr))
    return hr;
  if (wantsHeap)
    return heap->QueryInterface(riid, ppvObj);
  D3D12_RESOURCE_DESC rd = {};
  rd.Dimension = D3D12_RESOURCE_DIMENSION_BUFFER;
  rd.Width = width;
  rd.Height = 1;
  rd.DepthOrArraySize = 1;
  rd.MipLevels = 1;
  rd.SampleDesc.Count = 1;
  rd.Layout = D3D12_TEXTURE_LAYOUT_ROW_MAJOR;
  // The creator's resource flags do not travel with the memfd: an opened
  // buffer allows unordered access (what MLIR program bindings need), in the
  // COMMON state shared resources are used in.
  rd.Flags = D3D12_RESOURCE_FLAG_ALLOW_UNORDERED_ACCESS;
  ComPtr<Resource> resource;
  resource.Attach(new Resource(this, heap, 0, rd, /*committed=*/true,
                               D3D12_RESOURCE_STATE_COMMON));
  return resource->QueryInterface(riid, ppvObj);
}

} // namespace cgc::d3d12

//===----------------------------------------------------------------------===//
// Handles
//===----------------------------------------------------------------------===//

CGC_D3D12_API HANDLE CGCHandleFromFd(int fd) {
  return fd < 0 ? nullptr : reinterpret_cast<HANDLE>(intptr_t(fd) + 1);
}

CGC_D3D12_API int CGCFdFromHandle(HANDLE handle) {
  return handle ? int(reinterpret_cast<intptr_t>(handle) - 1) : -1;
}

CGC_D3D12_API void CGCCloseHandle(HANDLE handle) {
  if (handle)
    close(int(reinterpret_cast<intptr_t>(handle) - 1));
}
