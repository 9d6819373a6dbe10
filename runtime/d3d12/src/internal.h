//===- internal.h - cgc's D3D12 runtime: objects and helpers ----*- C++ -*-===//
//
// The COM objects of the API layer. Each forwards to the driver through the
// DDI (cgc/d3d12ddi_mlir.h) and keeps what the debug layer needs. Methods out
// of scope come from src/generated/<Class>.inc and report themselves through
// notImplemented().
//
//===----------------------------------------------------------------------===//

#ifndef CGC_D3D12_INTERNAL_H
#define CGC_D3D12_INTERNAL_H

#include "cgc/d3d12_mlir.h"
#include "cgc/d3d12ddi_mlir.h"

#include "cgc/bind_points.h"
#include "cgc/kernel_program.h"

#include "databases.h"

#include <wrl/client.h>

#include <atomic>
#include <condition_variable>
#include <cstring>
#include <type_traits>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace cgc::d3d12 {

/// The integer an API enum argument holds, read as bytes, not loaded as the
/// enum: the spec's MLIR values (D3D12_FEATURE 68, the MLIR state object
/// and subobject types) and flags an application gets wrong lie outside
/// DirectX-Headers' enums, and loading an enum object whose value is out of
/// its range is undefined behaviour (UBSan: -fsanitize=enum).
template <typename E> inline std::underlying_type_t<E> enumBits(const E &value) {
  static_assert(sizeof(std::underlying_type_t<E>) == sizeof(E));
  std::underlying_type_t<E> bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

using Microsoft::WRL::ComPtr;

class Device;
class Resource;
class Fence;

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

std::string narrow(LPCWSTR text);
std::string hex(uint64_t value);
std::string hresultName(HRESULT hr);
/// Sets the message CGCD3D12GetLastError returns on this thread.
void setLastError(std::string message);

/// ID3D12Object's private data and name.
class PrivateData {
public:
  ~PrivateData();
  HRESULT get(REFGUID guid, UINT *pDataSize, void *pData);
  HRESULT set(REFGUID guid, UINT size, const void *pData);
  HRESULT setInterface(REFGUID guid, const IUnknown *pData);
  HRESULT setName(LPCWSTR name);
  std::string name();

private:
  struct Entry {
    GUID guid;
    std::vector<uint8_t> bytes;
    IUnknown *iface = nullptr;
  };
  std::mutex mutex_;
  std::vector<Entry> entries_;
  std::string name_;
};

#define CGC_D3D12_REFCOUNT                                                     \
  std::atomic<ULONG> refs_{1};                                                 \
                                                                               \
public:                                                                        \
  ULONG STDMETHODCALLTYPE AddRef() override { return refs_.fetch_add(1) + 1; } \
  ULONG STDMETHODCALLTYPE Release() override {                                 \
    ULONG left = refs_.fetch_sub(1) - 1;                                       \
    if (left == 0)                                                             \
      delete this;                                                             \
    return left;                                                               \
  }

#define CGC_D3D12_OBJECT                                                       \
  PrivateData private_;                                                        \
                                                                               \
public:                                                                        \
  HRESULT STDMETHODCALLTYPE GetPrivateData(REFGUID guid, UINT *pDataSize,      \
                                           void *pData) override {             \
    return private_.get(guid, pDataSize, pData);                               \
  }                                                                            \
  HRESULT STDMETHODCALLTYPE SetPrivateData(REFGUID guid, UINT DataSize,        \
                                           const void *pData) override {       \
    return private_.set(guid, DataSize, pData);                                \
  }                                                                            \
  HRESULT STDMETHODCALLTYPE SetPrivateDataInterface(                           \
      REFGUID guid, const IUnknown *pData) override {                          \
    return private_.setInterface(guid, pData);                                 \
  }                                                                            \
  HRESULT STDMETHODCALLTYPE SetName(LPCWSTR Name) override {                   \
    return private_.setName(Name);                                             \
  }                                                                            \
  std::string debugName() { return private_.name(); }

#define CGC_D3D12_DEVICE_CHILD                                                 \
  CGC_D3D12_OBJECT                                                             \
  HRESULT STDMETHODCALLTYPE GetDevice(REFIID riid, void **ppvDevice) override; \
  Device *device() const { return device_.Get(); }                             \
                                                                               \
protected:                                                                     \
  ComPtr<Device> device_;                                                      \
                                                                               \
public:

#define CGC_D3D12_QI(Interface)                                                \
  if (riid == __uuidof(Interface)) {                                           \
    *ppv = static_cast<Interface *>(this);                                     \
    AddRef();                                                                  \
    return S_OK;                                                               \
  }

/// IIDs that return the implementation object itself (to recognise our own
/// objects passed back by the application).
extern const GUID kImplStateObject;
extern const GUID kImplDevice;
extern const GUID kImplResource;
extern const GUID kImplHeap;
extern const GUID kImplFence;
extern const GUID kImplPipelineState;
extern const GUID kImplCommandList;
extern const GUID kImplCommandAllocator;

/// The implementation behind an interface pointer, or nullptr if it is not
/// one of ours. Does not add a reference.
template <class T> T *implOf(IUnknown *object, const GUID &iid) {
  if (!object)
    return nullptr;
  void *impl = nullptr;
  if (FAILED(object->QueryInterface(iid, &impl)) || !impl)
    return nullptr;
  T *result = static_cast<T *>(impl);
  result->Release();
  return result;
}

//===----------------------------------------------------------------------===//
// Drivers
//===----------------------------------------------------------------------===//

struct Driver {
  std::string path;
  const D3D12DDI_ADAPTER_FUNCS_CGC *funcs = nullptr;
  D3D12DDI_HADAPTER adapter = {};
};

/// The driver selected now (loaded on first use, then cached for the
/// process), or nullptr with a message.
Driver *selectedDriver(std::string &error, const char *explicitChoice = nullptr);

//===----------------------------------------------------------------------===//
// Info queue (debug messages)
//===----------------------------------------------------------------------===//

class InfoQueue final : public ID3D12InfoQueue1 {
  CGC_D3D12_REFCOUNT
public:
  HRESULT STDMETHODCALLTYPE QueryInterface(REFIID riid, void **ppv) override;

  void add(D3D12_MESSAGE_CATEGORY category, D3D12_MESSAGE_SEVERITY severity,
           D3D12_MESSAGE_ID id, const std::string &text);

  HRESULT STDMETHODCALLTYPE SetMessageCountLimit(UINT64 MessageCountLimit) override;
  void STDMETHODCALLTYPE ClearStoredMessages() override;
  HRESULT STDMETHODCALLTYPE GetMessage(UINT64 MessageIndex, D3D12_MESSAGE *pMessage,
                                       SIZE_T *pMessageByteLength) override;
  UINT64 STDMETHODCALLTYPE GetNumStoredMessages() override;
  UINT64 STDMETHODCALLTYPE GetNumStoredMessagesAllowedByRetrievalFilter() override;
  UINT64 STDMETHODCALLTYPE GetNumMessagesDiscardedByMessageCountLimit() override;
  UINT64 STDMETHODCALLTYPE GetMessageCountLimit() override;
  HRESULT STDMETHODCALLTYPE AddMessage(D3D12_MESSAGE_CATEGORY Category,
                                       D3D12_MESSAGE_SEVERITY Severity,
                                       D3D12_MESSAGE_ID ID,
                                       LPCSTR pDescription) override;
  HRESULT STDMETHODCALLTYPE AddApplicationMessage(D3D12_MESSAGE_SEVERITY Severity,
                                                  LPCSTR pDescription) override;
  void STDMETHODCALLTYPE SetMuteDebugOutput(BOOL bMute) override;
  BOOL STDMETHODCALLTYPE GetMuteDebugOutput() override;
  HRESULT STDMETHODCALLTYPE RegisterMessageCallback(D3D12MessageFunc CallbackFunc,
                                                    D3D12_MESSAGE_CALLBACK_FLAGS CallbackFilterFlags,
                                                    void *pContext, DWORD *pCallbackCookie) override;
  HRESULT STDMETHODCALLTYPE UnregisterMessageCallback(DWORD CallbackCookie) override;

  void notImplemented(const char *what);
#include "generated/InfoQueue.inc"

private:
  struct Message {
    D3D12_MESSAGE_CATEGORY category;
    D3D12_MESSAGE_SEVERITY severity;
    D3D12_MESSAGE_ID id;
    std::string text;
  };
  struct Callback {
    D3D12MessageFunc func;
    void *context;
  };
  std::mutex mutex_;
  std::deque<Message> messages_;
  uint64_t limit_ = 4096;
  uint64_t discarded_ = 0;
  bool mute_ = false;
  DWORD nextCookie_ = 1;
  std::map<DWORD, Callback> callbacks_;
};

//===----------------------------------------------------------------------===//
// Memory
//===----------------------------------------------------------------------===//

/// A file mapped MAP_SHARED: the memory of a shared heap (shared.cpp). On
/// Linux a shared HANDLE is a file descriptor (CGCHandleFromFd).
struct SharedMemory {
  int fd = -1;
  void *mapping = nullptr;
  uint64_t size = 0;
  SharedMemory() = default;
  SharedMemory(SharedMemory &&other) noexcept { *this = std::move(other); }
  SharedMemory &operator=(SharedMemory &&other) noexcept;
  SharedMemory(const SharedMemory &) = delete;
  SharedMemory &operator=(const SharedMemory &) = delete;
  ~SharedMemory();
  bool valid() const { return fd >= 0; }
};

class Heap final : public ID3D12Heap1 {
  CGC_D3D12_REFCOUNT
  CGC_D3D12_DEVICE_CHILD
public:
  Heap(Device *device, const D3D12_HEAP_DESC &desc, D3D12DDI_HHEAP handle,
       const D3D12DDI_HEAP_MEMORY_CGC &memory);
  ~Heap();
  HRESULT STDMETHODCALLTYPE QueryInterface(REFIID riid, void **ppv) override;
  D3D12_HEAP_DESC STDMETHODCALLTYPE GetDesc() override { return desc_; }
  void notImplemented(const char *what);
#include "generated/Heap.inc"

  const D3D12_HEAP_DESC &desc() const { return desc_; }
  uint8_t *cpu() const { return cpu_; }
  uint64_t gpu() const { return gpu_; }

  /// Shared heaps (D3D12_HEAP_FLAG_SHARED, or opened with OpenSharedHandle)
  /// live in a mapped file (a memfd): the heap owns the descriptor and the
  /// mapping and releases both after the driver let go of the memory.
  void adoptSharedMemory(SharedMemory memory) { shared_ = std::move(memory); }
  const SharedMemory &sharedMemory() const { return shared_; }

private:
  D3D12_HEAP_DESC desc_;
  D3D12DDI_HHEAP handle_;
  uint8_t *cpu_;
  uint64_t gpu_;
  SharedMemory shared_;
};

class Resource final : public ID3D12Resource2 {
  CGC_D3D12_REFCOUNT
  CGC_D3D12_DEVICE_CHILD
public:
  Resource(Device *device, ComPtr<Heap> heap, uint64_t offset,
           const D3D12_RESOURCE_DESC &desc, bool committed,
           D3D12_RESOURCE_STATES initialState);
  ~Resource();
  HRESULT STDMETHODCALLTYPE QueryInterface(REFIID riid, void **ppv) override;
  HRESULT STDMETHODCALLTYPE Map(UINT Subresource, const D3D12_RANGE *pReadRange,
                                void **ppData) override;
  void STDMETHODCALLTYPE Unmap(UINT Subresource, const D3D12_RANGE *pWrittenRange) override;
  D3D12_RESOURCE_DESC STDMETHODCALLTYPE GetDesc() override { return desc_; }
  D3D12_RESOURCE_DESC1 STDMETHODCALLTYPE GetDesc1() override;
  D3D12_GPU_VIRTUAL_ADDRESS STDMETHODCALLTYPE GetGPUVirtualAddress() override { return gpu_; }
  HRESULT STDMETHODCALLTYPE GetHeapProperties(D3D12_HEAP_PROPERTIES *pHeapProperties,
                                              D3D12_HEAP_FLAGS *pHeapFlags) override;
  void notImplemented(const char *what);
#include "generated/Resource.inc"

  uint64_t gpu() const { return gpu_; }
  uint64_t size() const { return desc_.Width; }
  Heap *heap() const { return heap_.Get(); }
  bool committed() const { return committed_; }
  D3D12_HEAP_TYPE heapType() const { return heap_->desc().Properties.Type; }
  bool allowsUnorderedAccess() const {
    return desc_.Flags & D3D12_RESOURCE_FLAG_ALLOW_UNORDERED_ACCESS;
  }
  /// The debug layer's legacy resource state: the initial state, then the
  /// state each closed command list left it in (in the order lists are
  /// closed; see CommandList::states_).
  D3D12_RESOURCE_STATES state() const { return state_.load(); }
  void setState(D3D12_RESOURCE_STATES state) { state_.store(state); }

private:
  ComPtr<Heap> heap_;
  uint64_t offset_;
  D3D12_RESOURCE_DESC desc_;
  bool committed_;
  uint64_t gpu_;
  std::atomic<D3D12_RESOURCE_STATES> state_;
};

/// Live resources by GPU virtual address, for the debug layer and for
/// barriers on a whole resource.
class ResourceRegistry {
public:
  struct Entry {
    uint64_t start, size;
    std::string name;
    const Resource *resource; // identity only: not to be dereferenced
    D3D12_HEAP_TYPE heapType;
    bool unorderedAccess;     // D3D12_RESOURCE_FLAG_ALLOW_UNORDERED_ACCESS
    D3D12_RESOURCE_STATES state;
  };
  void add(Resource *resource);
  void remove(Resource *resource);
  /// The live resource containing [address, address + size) (size 0: just
  /// the address), or false.
  bool find(uint64_t address, uint64_t size, Entry &entry);
  /// Every live resource containing [address, address + size) (placed
  /// resources may alias), innermost first.
  std::vector<Entry> findAll(uint64_t address, uint64_t size);

private:
  std::shared_mutex mutex_;
  std::multimap<uint64_t, Resource *> byStart_;
  uint64_t maxSize_ = 0;
};

//===----------------------------------------------------------------------===//
// Programs
//===----------------------------------------------------------------------===//

/// What the runtime knows of one MLIR program: its name, identifier and bind
/// points (the 'CGBP' part of its container).
struct ProgramInfo {
  std::string name;
  std::wstring wideName;
  D3D12_PROGRAM_IDENTIFIER id = {};
  std::vector<BindPoint> bindPoints;
};

struct ProgramIdHash {
  size_t operator()(const D3D12_PROGRAM_IDENTIFIER &id) const {
    return std::hash<uint64_t>()(id.OpaqueData[0] ^ (id.OpaqueData[1] * 31) ^
                                 (id.OpaqueData[2] * 131) ^ (id.OpaqueData[3] * 1031));
  }
};
struct ProgramIdEqual {
  bool operator()(const D3D12_PROGRAM_IDENTIFIER &a, const D3D12_PROGRAM_IDENTIFIER &b) const {
    return std::memcmp(&a, &b, sizeof(a)) == 0;
  }
};

class StateObject final : public ID3D12StateObject, public ID3D12StateObjectProperties1 {
  CGC_D3D12_REFCOUNT
  CGC_D3D12_DEVICE_CHILD
public:
  StateObject(Device *device, D3D12DDI_HSTATEOBJECT handle, bool allowAdditions,
              std::map<std::wstring, std::shared_ptr<const ProgramInfo>> programs);
  ~StateObject();
  HRESULT STDMETHODCALLTYPE QueryInterface(REFIID riid, void **ppv) override;
  D3D12_PROGRAM_IDENTIFIER STDMETHODCALLTYPE GetProgramIdentifier(LPCWSTR pProgramName) override;
  void notImplemented(const char *what);
#include "generated/StateObject.inc"

  D3D12DDI_HSTATEOBJECT handle() const { return handle_; }
  bool allowAdditions() const { return allowAdditions_; }
  std::atomic<bool> grown{false};
  const std::map<std::wstring, std::shared_ptr<const ProgramInfo>> &programs() const {
    return programs_;
  }

private:
  D3D12DDI_HSTATEOBJECT handle_;
  bool allowAdditions_;
  std::map<std::wstring, std::shared_ptr<const ProgramInfo>> programs_;
};

/// A compute pipeline: a kernel program. The debug layer keeps its bindings.
class PipelineState final : public ID3D12PipelineState {
  CGC_D3D12_REFCOUNT
  CGC_D3D12_DEVICE_CHILD
public:
  PipelineState(Device *device, D3D12DDI_HPIPELINESTATE handle,
                std::vector<KernelProgram::Binding> bindings);
  ~PipelineState();
  HRESULT STDMETHODCALLTYPE QueryInterface(REFIID riid, void **ppv) override;
  void notImplemented(const char *what);
#include "generated/PipelineState.inc"

  D3D12DDI_HPIPELINESTATE handle() const { return handle_; }
  const std::vector<KernelProgram::Binding> &bindings() const { return bindings_; }

private:
  D3D12DDI_HPIPELINESTATE handle_;
  std::vector<KernelProgram::Binding> bindings_;
};

//===----------------------------------------------------------------------===//
// Commands
//===----------------------------------------------------------------------===//

class CommandAllocator final : public ID3D12CommandAllocator {
  CGC_D3D12_REFCOUNT
  CGC_D3D12_DEVICE_CHILD
public:
  CommandAllocator(Device *device, D3D12_COMMAND_LIST_TYPE type);
  HRESULT STDMETHODCALLTYPE QueryInterface(REFIID riid, void **ppv) override;
  HRESULT STDMETHODCALLTYPE Reset() override { return S_OK; }
  void notImplemented(const char *what);
#include "generated/CommandAllocator.inc"
  D3D12_COMMAND_LIST_TYPE type() const { return type_; }

private:
  D3D12_COMMAND_LIST_TYPE type_;
};

/// The driver's recording of a closed command list, shared by the list and
/// the queue items that execute it.
struct Recording {
  ComPtr<Device> device;
  D3D12DDI_HRECORDING_CGC handle = {};
  ~Recording();
};

class CommandList final : public ID3D12GraphicsCommandList10 {
  CGC_D3D12_REFCOUNT
  CGC_D3D12_DEVICE_CHILD
public:
  CommandList(Device *device, D3D12_COMMAND_LIST_TYPE type, D3D12DDI_HCOMMANDLIST handle,
              bool recording);
  ~CommandList();
  HRESULT STDMETHODCALLTYPE QueryInterface(REFIID riid, void **ppv) override;

  D3D12_COMMAND_LIST_TYPE STDMETHODCALLTYPE GetType() override { return type_; }
  HRESULT STDMETHODCALLTYPE Close() override;
  HRESULT STDMETHODCALLTYPE Reset(ID3D12CommandAllocator *pAllocator,
                                  ID3D12PipelineState *pInitialState) override;
  void STDMETHODCALLTYPE Dispatch(UINT X, UINT Y, UINT Z) override;
  void STDMETHODCALLTYPE CopyBufferRegion(ID3D12Resource *pDstBuffer, UINT64 DstOffset,
                                          ID3D12Resource *pSrcBuffer, UINT64 SrcOffset,
                                          UINT64 NumBytes) override;
  void STDMETHODCALLTYPE SetPipelineState(ID3D12PipelineState *pPipelineState) override;
  void STDMETHODCALLTYPE ResourceBarrier(UINT NumBarriers,
                                         const D3D12_RESOURCE_BARRIER *pBarriers) override;
  void STDMETHODCALLTYPE SetComputeRootSignature(ID3D12RootSignature *pRootSignature) override;
  void STDMETHODCALLTYPE SetComputeRootUnorderedAccessView(
      UINT RootParameterIndex, D3D12_GPU_VIRTUAL_ADDRESS BufferLocation) override;
  void STDMETHODCALLTYPE SetMarker(UINT Metadata, const void *pData, UINT Size) override {}
  void STDMETHODCALLTYPE BeginEvent(UINT Metadata, const void *pData, UINT Size) override {}
  void STDMETHODCALLTYPE EndEvent() override {}
  void STDMETHODCALLTYPE Barrier(UINT32 NumBarrierGroups,
                                 const D3D12_BARRIER_GROUP *pBarrierGroups) override;
  void STDMETHODCALLTYPE SetProgram(const D3D12_SET_PROGRAM_DESC *pDesc) override;
  void STDMETHODCALLTYPE DispatchGraph(const D3D12_DISPATCH_GRAPH_DESC *pDesc) override;

  void notImplemented(const char *what);
#include "generated/CommandList.inc"

  /// Records an error: Close() returns hr. Only the first error is kept.
  void setError(HRESULT hr, const std::string &message);
  /// The recording of the last successful Close(), or null.
  std::shared_ptr<Recording> recording();
  void attachHandle(D3D12DDI_HCOMMANDLIST handle) { handle_ = handle; }
  bool isClosed();

private:
  bool checkRecording(const char *method);
  void barrierOnResource(ID3D12Resource *resource, std::vector<D3D12DDI_BARRIER_CGC> &out);

  D3D12_COMMAND_LIST_TYPE type_;
  D3D12DDI_HCOMMANDLIST handle_;
  const D3D12DDI_COMMAND_LIST_FUNCS_CGC *ddi_;
  std::mutex mutex_; // guards the fields below against the runtime callback
  bool recording_;
  HRESULT error_ = S_OK;
  std::string errorMessage_;
  std::shared_ptr<Recording> closed_;
  /// DIRECT and COMPUTE lists run compute work; COPY (and video) lists do not.
  bool canRunCompute() const {
    return type_ == D3D12_COMMAND_LIST_TYPE_DIRECT || type_ == D3D12_COMMAND_LIST_TYPE_COMPUTE;
  }
  /// A resource's legacy state as this list sees it (debug layer).
  D3D12_RESOURCE_STATES stateOf(const ResourceRegistry::Entry &resource) const {
    auto it = states_.find(resource.resource);
    return it == states_.end() ? resource.state : it->second.second;
  }
  /// Why `resource` cannot be bound now (debug layer): bindingProblem with
  /// the list's view of its state, or an enhanced buffer barrier of this
  /// list that left it without unordered access.
  std::string bindingProblemOf(const ResourceRegistry::Entry &resource) const;
  /// Tracks a legacy transition; false with a message if StateBefore is not
  /// the state the resource is in (debug layer).
  bool trackTransition(Resource *resource, const D3D12_RESOURCE_TRANSITION_BARRIER &t,
                       std::string &error);
  /// Refuses a compute command on a list that cannot run it (Close fails).
  bool checkCompute(const char *method);
  /// Refuses CPU bindings on a tier 1.0 device (Close fails).
  bool checkBindingTypes(const D3D12_MLIR_PROGRAM_BINDINGS &bindings);

  // Debug-layer state.
  bool debug_;
  /// Legacy states of the resources this list transitioned, as of the end
  /// of what is recorded; applied to the resources when the list closes.
  std::unordered_map<const Resource *, std::pair<ComPtr<Resource>, D3D12_RESOURCE_STATES>> states_;
  /// AccessAfter of this list's last enhanced buffer barrier on a resource
  /// (accesses do not outlive the list: the next one starts from COMMON).
  std::unordered_map<const Resource *, D3D12_BARRIER_ACCESS> accesses_;
  std::shared_ptr<const ProgramInfo> program_;
  ComPtr<PipelineState> pipeline_;
  std::vector<D3D12_GPU_VIRTUAL_ADDRESS> rootViews_;
};

//===----------------------------------------------------------------------===//
// Queues and fences
//===----------------------------------------------------------------------===//

/// A command queue's pending work (commands.cpp), shared with the fences
/// the queue will signal: a thread blocked on such a fence runs the work
/// itself instead of waiting for the queue's thread.
struct QueueCore;

class Fence final : public ID3D12Fence1 {
  CGC_D3D12_REFCOUNT
  CGC_D3D12_DEVICE_CHILD
public:
  Fence(Device *device, UINT64 initialValue, D3D12_FENCE_FLAGS flags);
  ~Fence();
  HRESULT STDMETHODCALLTYPE QueryInterface(REFIID riid, void **ppv) override;
  /// UINT64_MAX once the device is removed, as on D3D12.
  UINT64 STDMETHODCALLTYPE GetCompletedValue() override;
  HRESULT STDMETHODCALLTYPE SetEventOnCompletion(UINT64 Value, HANDLE hEvent) override;
  HRESULT STDMETHODCALLTYPE Signal(UINT64 Value) override;
  D3D12_FENCE_FLAGS STDMETHODCALLTYPE GetCreationFlags() override { return flags_; }
  void notImplemented(const char *what);
#include "generated/Fence.inc"

  void signal(uint64_t value);
  /// Blocks until the value is reached; false if `abort` became true first.
  /// With `help`, the calling thread first runs the pending work of the
  /// queues that will signal this fence (in their order, up to the signal or
  /// a queue wait not yet satisfied): no thread hop for a run that is waited
  /// for. Threads that hold a queue's execution lock never help.
  bool waitFor(uint64_t value, const std::atomic<bool> *abort, bool help = false);
  /// Notes that `queue` has a signal of this fence pending.
  void addSignaler(const std::shared_ptr<QueueCore> &queue);
  /// The queues that noted a pending signal and still exist.
  std::vector<std::shared_ptr<QueueCore>> signalingQueues();
  /// Has those queues' threads run their pending items now, for a thread
  /// that waits without running them itself.
  void kickSignalers();

  /// Shared fences (D3D12_FENCE_FLAG_SHARED, or opened with
  /// OpenSharedHandle) keep their value in a shared page of a memfd: a
  /// cross-process timeline; waits sleep on a futex in that page and events
  /// are signaled by a watcher thread (shared.cpp). Returns false with a
  /// message if `memory` is not a fence page.
  bool makeShared(SharedMemory memory, bool initialize, std::string &error);
  bool isShared() const { return shared_ != nullptr; }
  const SharedMemory &sharedMemory() const { return sharedMemory_; }

  /// The layout of a shared fence's page.
  struct SharedPage;

private:
  void fireEvents(uint64_t value);
  void watchShared();
  static void wakeSharedWaiters(SharedPage *page);
  static bool waitShared(SharedPage *page, std::atomic<uint64_t> &value, uint64_t target,
                         const std::atomic<bool> *abort);

  std::atomic<uint64_t> localValue_;
  std::atomic<uint64_t> *value_ = &localValue_;
  D3D12_FENCE_FLAGS flags_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<std::pair<uint64_t, HANDLE>> events_;
  std::vector<std::pair<QueueCore *, std::weak_ptr<QueueCore>>> signalers_;
  // Shared fences only.
  SharedMemory sharedMemory_;
  SharedPage *shared_ = nullptr;
  std::thread watcher_;
  bool watching_ = false;
  bool stopWatching_ = false;
};

class CommandQueue final : public ID3D12CommandQueue {
  CGC_D3D12_REFCOUNT
  CGC_D3D12_DEVICE_CHILD
public:
  CommandQueue(Device *device, const D3D12_COMMAND_QUEUE_DESC &desc, D3D12DDI_HCOMMANDQUEUE handle);
  ~CommandQueue();
  HRESULT STDMETHODCALLTYPE QueryInterface(REFIID riid, void **ppv) override;
  void STDMETHODCALLTYPE ExecuteCommandLists(UINT NumCommandLists,
                                             ID3D12CommandList *const *ppCommandLists) override;
  HRESULT STDMETHODCALLTYPE Signal(ID3D12Fence *pFence, UINT64 Value) override;
  HRESULT STDMETHODCALLTYPE Wait(ID3D12Fence *pFence, UINT64 Value) override;
  D3D12_COMMAND_QUEUE_DESC STDMETHODCALLTYPE GetDesc() override { return desc_; }
  void STDMETHODCALLTYPE SetMarker(UINT Metadata, const void *pData, UINT Size) override {}
  void STDMETHODCALLTYPE BeginEvent(UINT Metadata, const void *pData, UINT Size) override {}
  void STDMETHODCALLTYPE EndEvent() override {}
  void notImplemented(const char *what);
#include "generated/CommandQueue.inc"

private:
  D3D12_COMMAND_QUEUE_DESC desc_;
  D3D12DDI_HCOMMANDQUEUE handle_;
  std::shared_ptr<QueueCore> core_; // items, executed by worker_ or a helper
  std::thread worker_;
};

//===----------------------------------------------------------------------===//
// Device
//===----------------------------------------------------------------------===//

class Device final : public ID3D12Device14 {
  CGC_D3D12_REFCOUNT
  CGC_D3D12_OBJECT
public:
  /// Creates a device on `driver`; false with a message.
  static HRESULT create(Driver *driver, UINT flags, const char *driverOptions, Device **device,
                        std::string &error);
  ~Device();
  HRESULT STDMETHODCALLTYPE QueryInterface(REFIID riid, void **ppv) override;

  UINT STDMETHODCALLTYPE GetNodeCount() override { return 1; }
  HRESULT STDMETHODCALLTYPE CreateCommandQueue(const D3D12_COMMAND_QUEUE_DESC *pDesc, REFIID riid,
                                               void **ppCommandQueue) override;
  HRESULT STDMETHODCALLTYPE CreateCommandAllocator(D3D12_COMMAND_LIST_TYPE type, REFIID riid,
                                                   void **ppCommandAllocator) override;
  HRESULT STDMETHODCALLTYPE CreateComputePipelineState(const D3D12_COMPUTE_PIPELINE_STATE_DESC *pDesc,
                                                       REFIID riid, void **ppPipelineState) override;
  HRESULT STDMETHODCALLTYPE CreateCommandList(UINT nodeMask, D3D12_COMMAND_LIST_TYPE type,
                                              ID3D12CommandAllocator *pCommandAllocator,
                                              ID3D12PipelineState *pInitialState, REFIID riid,
                                              void **ppCommandList) override;
  HRESULT STDMETHODCALLTYPE CheckFeatureSupport(D3D12_FEATURE Feature, void *pFeatureSupportData,
                                                UINT FeatureSupportDataSize) override;
  D3D12_RESOURCE_ALLOCATION_INFO STDMETHODCALLTYPE GetResourceAllocationInfo(
      UINT visibleMask, UINT numResourceDescs, const D3D12_RESOURCE_DESC *pResourceDescs) override;
  D3D12_HEAP_PROPERTIES STDMETHODCALLTYPE GetCustomHeapProperties(UINT nodeMask,
                                                                  D3D12_HEAP_TYPE heapType) override;
  HRESULT STDMETHODCALLTYPE CreateCommittedResource(const D3D12_HEAP_PROPERTIES *pHeapProperties,
                                                    D3D12_HEAP_FLAGS HeapFlags,
                                                    const D3D12_RESOURCE_DESC *pDesc,
                                                    D3D12_RESOURCE_STATES InitialResourceState,
                                                    const D3D12_CLEAR_VALUE *pOptimizedClearValue,
                                                    REFIID riidResource, void **ppvResource) override;
  HRESULT STDMETHODCALLTYPE CreateHeap(const D3D12_HEAP_DESC *pDesc, REFIID riid, void **ppvHeap) override;
  HRESULT STDMETHODCALLTYPE CreatePlacedResource(ID3D12Heap *pHeap, UINT64 HeapOffset,
                                                 const D3D12_RESOURCE_DESC *pDesc,
                                                 D3D12_RESOURCE_STATES InitialState,
                                                 const D3D12_CLEAR_VALUE *pOptimizedClearValue,
                                                 REFIID riid, void **ppvResource) override;
  HRESULT STDMETHODCALLTYPE CreateSharedHandle(ID3D12DeviceChild *pObject,
                                               const SECURITY_ATTRIBUTES *pAttributes, DWORD Access,
                                               LPCWSTR Name, HANDLE *pHandle) override;
  HRESULT STDMETHODCALLTYPE OpenSharedHandle(HANDLE NTHandle, REFIID riid, void **ppvObj) override;
  HRESULT STDMETHODCALLTYPE CreateFence(UINT64 InitialValue, D3D12_FENCE_FLAGS Flags, REFIID riid,
                                        void **ppFence) override;
  HRESULT STDMETHODCALLTYPE GetDeviceRemovedReason() override { return removedReason_.load(); }
  LUID STDMETHODCALLTYPE GetAdapterLuid() override;
  HRESULT STDMETHODCALLTYPE SetEventOnMultipleFenceCompletion(
      ID3D12Fence *const *ppFences, const UINT64 *pFenceValues, UINT NumFences,
      D3D12_MULTIPLE_FENCE_WAIT_FLAGS Flags, HANDLE hEvent) override;
  HRESULT STDMETHODCALLTYPE OpenExistingHeapFromAddress(const void *pAddress, REFIID riid,
                                                        void **ppvHeap) override;
  HRESULT STDMETHODCALLTYPE CreateCommandList1(UINT nodeMask, D3D12_COMMAND_LIST_TYPE type,
                                               D3D12_COMMAND_LIST_FLAGS flags, REFIID riid,
                                               void **ppCommandList) override;
  HRESULT STDMETHODCALLTYPE CreateCommittedResource1(
      const D3D12_HEAP_PROPERTIES *pHeapProperties, D3D12_HEAP_FLAGS HeapFlags,
      const D3D12_RESOURCE_DESC *pDesc, D3D12_RESOURCE_STATES InitialResourceState,
      const D3D12_CLEAR_VALUE *pOptimizedClearValue,
      ID3D12ProtectedResourceSession *pProtectedSession, REFIID riidResource,
      void **ppvResource) override;
  HRESULT STDMETHODCALLTYPE CreateHeap1(const D3D12_HEAP_DESC *pDesc,
                                        ID3D12ProtectedResourceSession *pProtectedSession,
                                        REFIID riid, void **ppvHeap) override;
  HRESULT STDMETHODCALLTYPE CreateStateObject(const D3D12_STATE_OBJECT_DESC *pDesc, REFIID riid,
                                              void **ppStateObject) override;
  HRESULT STDMETHODCALLTYPE AddToStateObject(const D3D12_STATE_OBJECT_DESC *pAddition,
                                             ID3D12StateObject *pStateObjectToGrowFrom,
                                             REFIID riid, void **ppNewStateObject) override;
  HRESULT STDMETHODCALLTYPE OpenExistingHeapFromAddress1(const void *pAddress, SIZE_T size,
                                                         REFIID riid, void **ppvHeap) override;

  void notImplemented(const char *what);
#include "generated/Device.inc"

  // For the other objects.
  const D3D12DDI_DEVICE_FUNCS_CORE_CGC &ddi() const { return *driver_->funcs->pDeviceFuncs; }
  const D3D12DDI_COMMAND_LIST_FUNCS_CGC &listDdi() const {
    return *driver_->funcs->pCommandListFuncs;
  }
  const D3D12DDI_COMMAND_QUEUE_FUNCS_CGC &queueDdi() const {
    return *driver_->funcs->pCommandQueueFuncs;
  }
  D3D12DDI_HDEVICE handle() const { return handle_; }
  bool debug() const { return debug_; }
  D3D12_MLIR_PROGRAMS_TIER tier() const { return tier_; }
  ResourceRegistry &resources() { return resources_; }
  /// The registered precompiled databases as this device's driver sees them.
  DeviceDatabases &databases() { return databases_; }

  /// Debug output: the info queue, stderr (unless CGC_D3D12_DEBUG_QUIET=1).
  void message(D3D12_MESSAGE_SEVERITY severity, D3D12_MESSAGE_CATEGORY category,
               const std::string &text);
  void error(const std::string &text) {
    message(D3D12_MESSAGE_SEVERITY_ERROR, D3D12_MESSAGE_CATEGORY_MISCELLANEOUS, text);
  }
  /// Fails with `hr`, reporting `text` (and setting CGCD3D12GetLastError).
  HRESULT fail(HRESULT hr, const std::string &text);
  void removeDevice(HRESULT reason, const std::string &text);

  /// The program an identifier names, or null (debug layer).
  std::shared_ptr<const ProgramInfo> findProgram(const D3D12_PROGRAM_IDENTIFIER &id);

private:
  Device(Driver *driver, bool debug, bool developerMode);
  HRESULT createHeapImpl(const D3D12_HEAP_DESC &desc, const void *existing,
                         ComPtr<Heap> &heap);
  /// A heap over shared memory (shared.cpp), which the heap then owns.
  HRESULT createSharedHeapImpl(const D3D12_HEAP_DESC &desc, SharedMemory *shared,
                         ComPtr<Heap> &heap);
  /// The memfd of a D3D12_HEAP_FLAG_SHARED heap (of a committed resource of
  /// `resourceWidth` bytes, or 0 for a heap).
  bool createSharedHeapMemory(const D3D12_HEAP_DESC &desc, uint64_t resourceWidth,
                              SharedMemory &memory, std::string &error);
  HRESULT createSharedFence(UINT64 initialValue, D3D12_FENCE_FLAGS flags, ComPtr<Fence> &fence);
  HRESULT checkBufferDesc(const D3D12_RESOURCE_DESC *pDesc, const char *method);
  HRESULT makeStateObject(const D3D12_STATE_OBJECT_DESC *pDesc, StateObject *grownFrom,
                          REFIID riid, void **ppStateObject);

  Driver *driver_;
  D3D12DDI_HDEVICE handle_ = {};
  bool debug_;
  bool developerMode_;
  D3D12_MLIR_PROGRAMS_TIER tier_ = D3D12_MLIR_PROGRAMS_TIER_NOT_SUPPORTED;
  ComPtr<InfoQueue> infoQueue_;
  std::atomic<HRESULT> removedReason_{S_OK};
  ResourceRegistry resources_;
  DeviceDatabases databases_;
  std::shared_mutex programsMutex_;
  std::unordered_map<D3D12_PROGRAM_IDENTIFIER, std::weak_ptr<const ProgramInfo>, ProgramIdHash,
                     ProgramIdEqual>
      programs_;
};

//===----------------------------------------------------------------------===//
// The debug layer
//===----------------------------------------------------------------------===//

/// Global switches set by D3D12GetDebugInterface / CGCD3D12SetDeviceCreationFlags.
UINT deviceCreationFlags();
void enableDebugLayerGlobally();

/// Validates a DispatchGraph against the program's bind points and the live
/// resources. Returns the errors found, each naming the bind point by index
/// and name.
/// Why a resource cannot be bound by the recording list, or "" (its flags,
/// heap, legacy state and enhanced-barrier access as the list sees them).
using BindingProblemFn = std::function<std::string(const ResourceRegistry::Entry &)>;
std::vector<std::string> validateDispatchGraph(Device &device, const ProgramInfo *program,
                                               const D3D12_DISPATCH_GRAPH_DESC &desc,
                                               const BindingProblemFn &problemOf);
/// Why `resource` cannot be bound to an MLIR program (or a root UAV), or "":
/// bindings are buffers with unordered access (the spec's Resource Binding):
/// D3D12_RESOURCE_FLAG_ALLOW_UNORDERED_ACCESS, a heap that allows it (not
/// UPLOAD or READBACK), and D3D12_RESOURCE_STATE_COMMON or UNORDERED_ACCESS.
std::string bindingProblem(const ResourceRegistry::Entry &resource, D3D12_RESOURCE_STATES state);
/// Validates a compute Dispatch against the pipeline's bindings.
std::vector<std::string> validateDispatch(
    Device &device, const PipelineState *pipeline,
    const std::vector<D3D12_GPU_VIRTUAL_ADDRESS> &views, UINT x, UINT y, UINT z,
    const BindingProblemFn &problemOf);

class Debug final : public ID3D12Debug {
  CGC_D3D12_REFCOUNT
public:
  HRESULT STDMETHODCALLTYPE QueryInterface(REFIID riid, void **ppv) override;
  void STDMETHODCALLTYPE EnableDebugLayer() override { enableDebugLayerGlobally(); }
  void notImplemented(const char *what);
#include "generated/Debug.inc"
};

} // namespace cgc::d3d12

#endif // CGC_D3D12_INTERNAL_H
