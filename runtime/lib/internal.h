//===- internal.h - The DXCGC runtime's objects -----------------*- C++ -*-===//
//
// The C API's handles are these C++ objects (intrusively reference counted).
// Errors inside the library are exceptions of type Error, turned into a
// cgc_status_t at the C boundary (c_api.cpp); none crosses it.
//
//===----------------------------------------------------------------------===//

#ifndef CGC_RUNTIME_LIB_INTERNAL_H
#define CGC_RUNTIME_LIB_INTERNAL_H

// cgc/container.h names a parameter `interface`, which DirectX's
// <wsl/winadapter.h> defines as a macro: include it first.
#include "cgc/compiled_model.h"
#include "cgc/container.h"

#include "cgc/d3d12_mlir.h"
#include "cgc/runtime.h"

#include <wrl/client.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace cgc::rt {

using Microsoft::WRL::ComPtr;

//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//

struct Error {
  cgc_status_code_t code;
  std::string message;
};

[[noreturn]] inline void fail(cgc_status_code_t code, std::string message) {
  throw Error{code, std::move(message)};
}

/// "float32[1,3,224,224]".
std::string describeTensor(cgc_dtype_t dtype, const std::vector<int64_t> &shape);
std::string hresultText(HRESULT hr);
uint64_t nowNs();

//===----------------------------------------------------------------------===//
// Reference counting
//===----------------------------------------------------------------------===//

class Object {
public:
  virtual ~Object() = default;
  void retain() { refs_.fetch_add(1, std::memory_order_relaxed); }
  void release() {
    if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1)
      delete this;
  }

private:
  std::atomic<int> refs_{1};
};

/// An owning pointer to an Object.
template <class T> class Ref {
public:
  Ref() = default;
  /// Adopts a new object (its initial reference).
  static Ref adopt(T *object) {
    Ref r;
    r.p_ = object;
    return r;
  }
  /// Takes a new reference to an existing object.
  static Ref share(T *object) {
    if (object)
      object->retain();
    Ref r;
    r.p_ = object;
    return r;
  }
  Ref(const Ref &o) : p_(o.p_) {
    if (p_)
      p_->retain();
  }
  Ref(Ref &&o) noexcept : p_(o.p_) { o.p_ = nullptr; }
  Ref &operator=(Ref o) noexcept {
    std::swap(p_, o.p_);
    return *this;
  }
  ~Ref() {
    if (p_)
      p_->release();
  }
  T *get() const { return p_; }
  T *operator->() const { return p_; }
  T &operator*() const { return *p_; }
  explicit operator bool() const { return p_ != nullptr; }
  /// Gives the reference to the caller.
  T *detach() {
    T *p = p_;
    p_ = nullptr;
    return p;
  }

private:
  T *p_ = nullptr;
};

} // namespace cgc::rt

//===----------------------------------------------------------------------===//
// The objects behind the C handles
//===----------------------------------------------------------------------===//

struct cgc_device_s final : cgc::rt::Object {
  cgc::rt::ComPtr<ID3D12Device14> d3d;
  /// The driver as the application named it ("cpu", a path), or
  /// "default".
  std::string driver;
  std::string driverOptions; // as given to the driver (threads=N, then driver_options)
  uint32_t compileThreads = 1;
  /// cgc_device_info's answer, computed once (compile.cpp).
  std::mutex infoMutex;
  std::shared_ptr<void> info;
  bool debugLayer = false;

  /// Error messages of the D3D12 runtime and the driver, numbered, recent
  /// ones kept (registered as an ID3D12InfoQueue1 callback).
  uint64_t messageMark();
  /// Error messages after `mark` ("; "-joined), those mentioning `filter`
  /// first when it is not empty.
  std::string messagesSince(uint64_t mark, const std::string &filter = "");
  void addMessage(const char *text);
  /// Fails with DEVICE_LOST if the device was removed.
  void checkNotRemoved(const char *what);

  std::mutex messagesMutex;
  std::deque<std::pair<uint64_t, std::string>> messages;
  uint64_t nextMessage = 0;
  DWORD callbackCookie = 0;
  cgc::rt::ComPtr<ID3D12InfoQueue1> infoQueue;
  ~cgc_device_s() override;
};

struct cgc_stream_s final : cgc::rt::Object {
  cgc::rt::Ref<cgc_device_s> device;
  cgc::rt::ComPtr<ID3D12CommandQueue> queue;
  cgc::rt::ComPtr<ID3D12Fence> fence;
  HANDLE event = nullptr;
  std::mutex mutex;       // orders submissions and their signal values
  std::mutex waitMutex;   // guards the event
  uint64_t lastValue = 0; // the last value queued to be signaled

  explicit cgc_stream_s(cgc::rt::Ref<cgc_device_s> device);
  ~cgc_stream_s() override;
  /// Queues a signal of the next value; returns it. Call with `mutex` held.
  uint64_t signalNextLocked();
  /// Blocks until the stream's fence reaches `value`.
  void waitFor(uint64_t value, uint32_t timeoutMs, const char *what);
};

struct cgc_external_memory_s;

struct cgc_tensor_s final : cgc::rt::Object {
  cgc::rt::Ref<cgc_device_s> device;
  cgc_dtype_t dtype = CGC_DTYPE_INVALID;
  std::vector<int64_t> shape;
  uint64_t bytes = 0;
  /// The buffer and where the tensor starts in it.
  cgc::rt::ComPtr<ID3D12Resource> resource;
  uint64_t offset = 0;
  uint8_t *cpu = nullptr;
  uint64_t gpu = 0;
  bool readOnly = false;
  std::string origin; // "runtime", "host memory", "imported memory", ...
  cgc::rt::ComPtr<ID3D12Heap> heap;             // over application memory
  cgc::rt::Ref<cgc_external_memory_s> imported; // keeps the import mapped
};

struct cgc_model_s final : cgc::rt::Object {
  cgc::rt::Ref<cgc_device_s> device;
  std::string path; // or "<memory>"
  // Declared before the D3D12 objects that point into it: destroyed last.
  struct Mapping {
    void *data = nullptr;
    size_t size = 0;
    ~Mapping();
  } copy; // cgc_model_load_memory's page-aligned copy
  cgc::CompiledModel file;

  struct Program {
    std::string name;
    cgc::PlanProgram::Kind kind;
    cgc::rt::ComPtr<ID3D12StateObject> stateObject;
    D3D12_PROGRAM_IDENTIFIER id = {};
    cgc::rt::ComPtr<ID3D12PipelineState> pipeline;
  };
  std::vector<Program> programs;
  cgc::rt::ComPtr<ID3D12Heap> constantsHeap;
  cgc::rt::ComPtr<ID3D12Resource> constants;
  uint64_t constantsAddress = 0;
  cgc_model_stats_t stats = {};

  const cgc::ExecutionPlan &plan() const { return file.getPlan(); }
  void load(const cgc_model_options_t *options);
  /// "model.cgc: ".
  std::string where() const { return path + ": "; }
};

struct cgc_context_s final : cgc::rt::Object {
  cgc::rt::Ref<cgc_model_s> model;
  cgc::rt::Ref<cgc_stream_s> stream;
  /// The scratch memory: a heap, a buffer placed over all of it (what
  /// dispatches bind), and a buffer placed over each range a planned barrier
  /// orders (D3D12 barriers cover whole buffers; these keep the plan's
  /// concurrency: work outside a barrier's range is not ordered by it).
  cgc::rt::ComPtr<ID3D12Heap> scratchHeap;
  cgc::rt::ComPtr<ID3D12Resource> scratch;
  std::map<std::pair<uint64_t, uint64_t>, cgc::rt::ComPtr<ID3D12Resource>> scratchViews;
  uint64_t scratchAddress = 0;
  std::vector<cgc::rt::Ref<cgc_tensor_s>> inputs, outputs;       // bound
  std::vector<cgc::rt::Ref<cgc_tensor_s>> ownInputs, ownOutputs; // the context's own
  cgc::rt::ComPtr<ID3D12CommandAllocator> allocator;
  cgc::rt::ComPtr<ID3D12GraphicsCommandList10> list;
  std::vector<uint64_t> recordedAddresses; // inputs then outputs
  bool recorded = false;
  uint64_t pendingValue = 0; // stream value of the last submitted run
  uint64_t pendingSubmitNs = 0;
  cgc_context_stats_t stats = {};

  void create();
  void bind(bool output, size_t index, cgc_tensor_s *tensor);
  void submit();
  void wait(uint32_t timeoutMs);

private:
  void record();
  uint64_t address(const cgc::PlanRange &range) const;
  /// The buffer a barrier on `range` names: the scratch view placed over it,
  /// or the whole input, output or constants buffer.
  ID3D12Resource *barrierResource(const cgc::PlanRange &range) const;
  void createScratch();
};

/// Models of one ONNX model compiled per set of input shapes
/// (shape_cache.cpp).
struct cgc_shape_cache_s final : cgc::rt::Object {
  cgc::rt::Ref<cgc_device_s> device;
  std::vector<uint8_t> onnx;
  std::string name;
  /// Copies of the options and the strings they point at.
  cgc_compile_options_t compileOptions{};
  std::vector<std::string> baseShapes, freezeInputs, targets;
  std::vector<const char *> freezePointers, targetPointers;
  cgc_model_options_t modelOptions{};
  bool hasModelOptions = false;
  size_t capacity = 8;

  std::mutex mutex;
  /// (shapes key, model), most recently used first.
  std::list<std::pair<std::string, cgc::rt::Ref<cgc_model_s>>> models;
  size_t compilations = 0;
};

struct cgc_importer_s final : cgc::rt::Object {
  cgc::rt::Ref<cgc_device_s> device;
};

struct cgc_external_memory_s final : cgc::rt::Object {
  cgc::rt::Ref<cgc_device_s> device;
  cgc_external_memory_handle_type_t type;
  cgc_external_memory_access_mode_t access;
  int fd = -1;
  void *mapping = nullptr;
  size_t mappingSize = 0;
  uint8_t *data = nullptr; // the imported offset, inside the mapping
  uint64_t size = 0;
  cgc::rt::ComPtr<ID3D12Heap> heap;
  cgc::rt::ComPtr<ID3D12Resource> resource; // the whole mapping
  ~cgc_external_memory_s() override;
};

struct cgc_external_semaphore_s final : cgc::rt::Object {
  cgc::rt::Ref<cgc_device_s> device;
  cgc::rt::ComPtr<ID3D12Fence> fence;
};

namespace cgc::rt {

Ref<cgc_device_s> createDevice(const cgc_device_options_t &options);
Ref<cgc_tensor_s> allocateTensor(cgc_device_s *device, cgc_dtype_t dtype,
                                 std::vector<int64_t> shape, const std::string &origin);
Ref<cgc_tensor_s> wrapHostTensor(cgc_device_s *device, cgc_dtype_t dtype,
                                 std::vector<int64_t> shape, void *data, size_t size);
Ref<cgc_tensor_s> wrapResourceTensor(cgc_device_s *device, cgc_dtype_t dtype,
                                     std::vector<int64_t> shape, ID3D12Resource *resource,
                                     uint64_t offset);
std::vector<int64_t> checkDesc(cgc_dtype_t dtype, size_t rank, const int64_t *shape,
                               const char *what);
uint64_t tensorBytes(cgc_dtype_t dtype, const std::vector<int64_t> &shape);

Ref<cgc_external_memory_s> importMemory(cgc_device_s *device,
                                        const cgc_external_memory_descriptor_t &desc);
Ref<cgc_tensor_s> tensorFromMemory(cgc_external_memory_s *memory,
                                   const cgc_external_tensor_descriptor_t &desc);
Ref<cgc_external_semaphore_s> importSemaphore(cgc_device_s *device,
                                              const cgc_external_semaphore_descriptor_t &desc);
bool canImportMemory(cgc_external_memory_handle_type_t type);
bool canImportSemaphore(cgc_external_semaphore_type_t type);

/// A committed buffer in a CPU-visible heap (CUSTOM, write-back, L0: the
/// device is cache-coherent UMA), zeroed.
ComPtr<ID3D12Resource> createBuffer(cgc_device_s *device, uint64_t bytes, const std::string &what);

/// Runs `count` tasks on up to `threads` threads; rethrows the first error.
void parallelFor(uint32_t threads, size_t count, const std::function<void(size_t)> &task);

} // namespace cgc::rt

#endif // CGC_RUNTIME_LIB_INTERNAL_H
