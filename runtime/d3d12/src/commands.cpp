//===- commands.cpp - Command allocators, lists, queues and fences --------===//

#include "internal.h"

#include <pthread.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>

namespace cgc::d3d12 {

// The API's binding structs are passed to the driver without copying.
static_assert(sizeof(D3D12_MLIR_PROGRAM_BINDING) == sizeof(D3D12DDI_MLIR_PROGRAM_BINDING_0119),
              "binding layouts differ");
static_assert(offsetof(D3D12_MLIR_PROGRAM_BINDING, GpuBinding) ==
                  offsetof(D3D12DDI_MLIR_PROGRAM_BINDING_0119, GpuBinding),
              "binding layouts differ");
static_assert(offsetof(D3D12_MLIR_PROGRAM_BINDING, Type) ==
                  offsetof(D3D12DDI_MLIR_PROGRAM_BINDING_0119, Type),
              "binding layouts differ");
static_assert(sizeof(D3D12_PROGRAM_IDENTIFIER) == sizeof(D3D12DDI_PROGRAM_IDENTIFIER_0108),
              "identifier layouts differ");

//===----------------------------------------------------------------------===//
// Allocators
//===----------------------------------------------------------------------===//

CommandAllocator::CommandAllocator(Device *device, D3D12_COMMAND_LIST_TYPE type) : type_(type) {
  device_ = device;
}

HRESULT CommandAllocator::QueryInterface(REFIID riid, void **ppv) {
  if (!ppv)
    return E_POINTER;
  CGC_D3D12_QI(IUnknown)
  CGC_D3D12_QI(ID3D12Object)
  CGC_D3D12_QI(ID3D12DeviceChild)
  CGC_D3D12_QI(ID3D12Pageable)
  CGC_D3D12_QI(ID3D12CommandAllocator)
  if (riid == kImplCommandAllocator) {
    *ppv = this;
    AddRef();
    return S_OK;
  }
  *ppv = nullptr;
  return E_NOINTERFACE;
}
void CommandAllocator::notImplemented(const char *what) { device_->notImplemented(what); }

//===----------------------------------------------------------------------===//
// Command lists
//===----------------------------------------------------------------------===//

Recording::~Recording() {
  if (handle.pDrvPrivate)
    device->listDdi().pfnDestroyRecording(handle);
}

CommandList::CommandList(Device *device, D3D12_COMMAND_LIST_TYPE type,
                         D3D12DDI_HCOMMANDLIST handle, bool recording)
    : type_(type), handle_(handle), ddi_(&device->listDdi()), recording_(recording),
      debug_(device->debug()) {
  device_ = device;
}

CommandList::~CommandList() {
  if (handle_.pDrvPrivate)
    device_->ddi().pfnDestroyCommandList(device_->handle(), handle_);
}

HRESULT CommandList::QueryInterface(REFIID riid, void **ppv) {
  if (!ppv)
    return E_POINTER;
  CGC_D3D12_QI(IUnknown)
  CGC_D3D12_QI(ID3D12Object)
  CGC_D3D12_QI(ID3D12DeviceChild)
  CGC_D3D12_QI(ID3D12CommandList)
  CGC_D3D12_QI(ID3D12GraphicsCommandList)
  CGC_D3D12_QI(ID3D12GraphicsCommandList1)
  CGC_D3D12_QI(ID3D12GraphicsCommandList2)
  CGC_D3D12_QI(ID3D12GraphicsCommandList3)
  CGC_D3D12_QI(ID3D12GraphicsCommandList4)
  CGC_D3D12_QI(ID3D12GraphicsCommandList5)
  CGC_D3D12_QI(ID3D12GraphicsCommandList6)
  CGC_D3D12_QI(ID3D12GraphicsCommandList7)
  CGC_D3D12_QI(ID3D12GraphicsCommandList8)
  CGC_D3D12_QI(ID3D12GraphicsCommandList9)
  CGC_D3D12_QI(ID3D12GraphicsCommandList10)
  if (riid == kImplCommandList) {
    *ppv = this;
    AddRef();
    return S_OK;
  }
  *ppv = nullptr;
  return E_NOINTERFACE;
}

void CommandList::setError(HRESULT hr, const std::string &message) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (SUCCEEDED(error_)) {
    error_ = hr;
    errorMessage_ = message;
  }
}

void CommandList::notImplemented(const char *what) {
  std::string text = std::string(what) + " is not implemented by cgc (docs/d3d12.md); Close() "
                                         "will fail with E_NOTIMPL";
  device_->error(text);
  setError(E_NOTIMPL, text);
}

bool CommandList::checkRecording(const char *method) {
  if (recording_)
    return true;
  device_->error(std::string(method) + ": the command list is closed (call Reset first)");
  return false;
}

std::shared_ptr<Recording> CommandList::recording() { return closed_; }
bool CommandList::isClosed() { return !recording_; }

HRESULT CommandList::Close() {
  if (!recording_)
    return device_->fail(E_FAIL, "Close: the command list is not recording");
  recording_ = false;
  if (HRESULT removed = device_->GetDeviceRemovedReason(); FAILED(removed))
    return device_->fail(DXGI_ERROR_DEVICE_REMOVED,
                         "Close: the device was removed (" + hresultName(removed) +
                             "); recreate it (GetDeviceRemovedReason)");
  D3D12DDI_HRECORDING_CGC handle = {};
  HRESULT driverHr = ddi_->pfnClose(handle_, &handle);
  auto recording = std::make_shared<Recording>();
  recording->device = device_;
  recording->handle = SUCCEEDED(driverHr) ? handle : D3D12DDI_HRECORDING_CGC{};
  HRESULT hr;
  std::string message;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    hr = error_;
    message = errorMessage_;
  }
  if (FAILED(hr)) {
    device_->error("Close: the command list recorded an error: " + message);
    return hr;
  }
  if (FAILED(driverHr))
    return device_->fail(driverHr, "Close: the driver failed (" + hresultName(driverHr) + ")");
  closed_ = std::move(recording);
  // The debug layer's resource states: what this list leaves them in.
  for (auto &[key, entry] : states_)
    entry.first->setState(entry.second);
  states_.clear();
  return S_OK;
}

HRESULT CommandList::Reset(ID3D12CommandAllocator *pAllocator, ID3D12PipelineState *pInitialState) {
  CommandAllocator *allocator = implOf<CommandAllocator>(pAllocator, kImplCommandAllocator);
  if (!allocator)
    return device_->fail(E_INVALIDARG, "Reset: pAllocator is not an allocator of this runtime");
  if (allocator->type() != type_)
    return device_->fail(E_INVALIDARG, "Reset: the allocator's type differs from the list's");
  PipelineState *pipeline = nullptr;
  if (pInitialState && !(pipeline = implOf<PipelineState>(pInitialState, kImplPipelineState)))
    return device_->fail(E_INVALIDARG, "Reset: pInitialState is not a pipeline of this runtime");
  if (recording_)
    return device_->fail(E_FAIL, "Reset: the command list is recording; Close it first");
  {
    std::lock_guard<std::mutex> lock(mutex_);
    error_ = S_OK;
    errorMessage_.clear();
  }
  closed_.reset(); // queued executions keep their own reference
  program_.reset();
  states_.clear();
  accesses_.clear();
  pipeline_ = pipeline;
  rootViews_.clear();
  recording_ = true;
  ddi_->pfnReset(handle_);
  if (pipeline)
    ddi_->pfnSetPipelineState(handle_, pipeline->handle());
  return S_OK;
}

bool CommandList::checkCompute(const char *method) {
  if (canRunCompute())
    return true;
  std::string text = std::string(method) + ": a " +
                     (type_ == D3D12_COMMAND_LIST_TYPE_COPY ? "COPY" : "video") +
                     " command list cannot run compute work (MLIR programs and compute "
                     "pipelines run on DIRECT and COMPUTE lists)";
  device_->error(text);
  setError(E_INVALIDARG, text);
  return false;
}

bool CommandList::checkBindingTypes(const D3D12_MLIR_PROGRAM_BINDINGS &bindings) {
  if (device_->tier() >= D3D12_MLIR_PROGRAMS_TIER_2_0)
    return true;
  for (UINT i = 0; i < bindings.NumBindings; ++i)
    if (bindings.pBindings[i].Type == D3D12_MLIR_PROGRAM_BINDING_TYPE_CPU) {
      std::string text = "DispatchGraph: binding #" + std::to_string(i) + " (bind point " +
                         std::to_string(bindings.pBindings[i].BindPointIndex) +
                         ") is a CPU binding, which needs D3D12_MLIR_PROGRAMS_TIER_2_0; the "
                         "device reports tier 1.0 (GPU bindings only)";
      device_->error(text);
      setError(E_INVALIDARG, text);
      return false;
    }
  return true;
}

void CommandList::SetPipelineState(ID3D12PipelineState *pPipelineState) {
  if (!checkRecording("SetPipelineState") || !checkCompute("SetPipelineState"))
    return;
  PipelineState *pipeline = implOf<PipelineState>(pPipelineState, kImplPipelineState);
  if (!pipeline) {
    std::string text = "SetPipelineState: the pipeline is null or not of this runtime";
    device_->error(text);
    setError(E_INVALIDARG, text);
    return;
  }
  pipeline_ = pipeline;
  ddi_->pfnSetPipelineState(handle_, pipeline->handle());
}

void CommandList::SetComputeRootSignature(ID3D12RootSignature *pRootSignature) {
  if (!checkRecording("SetComputeRootSignature") || !pRootSignature)
    return;
  std::string text = "SetComputeRootSignature: root signatures are not implemented; kernel "
                     "programs bind root UAV i to binding i without one";
  device_->error(text);
  setError(E_NOTIMPL, text);
}

void CommandList::SetComputeRootUnorderedAccessView(UINT index, D3D12_GPU_VIRTUAL_ADDRESS address) {
  if (!checkRecording("SetComputeRootUnorderedAccessView") ||
      !checkCompute("SetComputeRootUnorderedAccessView"))
    return;
  if (debug_) {
    if (rootViews_.size() <= index)
      rootViews_.resize(index + 1, 0);
    rootViews_[index] = address;
  }
  ddi_->pfnSetComputeRootUnorderedAccessView(handle_, index, address);
}

void CommandList::Dispatch(UINT X, UINT Y, UINT Z) {
  if (!checkRecording("Dispatch") || !checkCompute("Dispatch"))
    return;
  if (debug_) {
    std::vector<std::string> errors =
        validateDispatch(*device_.Get(), pipeline_.Get(), rootViews_, X, Y, Z,
                         [&](const ResourceRegistry::Entry &r) { return bindingProblemOf(r); });
    if (!errors.empty()) {
      for (const std::string &e : errors)
        device_->error(e);
      setError(E_INVALIDARG, errors.front());
      return;
    }
  }
  ddi_->pfnDispatch(handle_, X, Y, Z);
}

void CommandList::CopyBufferRegion(ID3D12Resource *pDstBuffer, UINT64 DstOffset,
                                   ID3D12Resource *pSrcBuffer, UINT64 SrcOffset, UINT64 NumBytes) {
  if (!checkRecording("CopyBufferRegion"))
    return;
  Resource *dst = implOf<Resource>(pDstBuffer, kImplResource);
  Resource *src = implOf<Resource>(pSrcBuffer, kImplResource);
  std::string text;
  if (!dst || !src)
    text = "CopyBufferRegion: a buffer is null or not of this runtime";
  else if (DstOffset > dst->size() || NumBytes > dst->size() - DstOffset)
    text = "CopyBufferRegion: [" + std::to_string(DstOffset) + ", +" + std::to_string(NumBytes) +
           ") exceeds the " + std::to_string(dst->size()) + "-byte destination";
  else if (SrcOffset > src->size() || NumBytes > src->size() - SrcOffset)
    text = "CopyBufferRegion: [" + std::to_string(SrcOffset) + ", +" + std::to_string(NumBytes) +
           ") exceeds the " + std::to_string(src->size()) + "-byte source";
  if (!text.empty()) {
    device_->error(text);
    setError(E_INVALIDARG, text);
    return;
  }
  ddi_->pfnCopyBufferRegion(handle_, dst->gpu() + DstOffset, src->gpu() + SrcOffset, NumBytes);
}

// Barriers on real D3D12 cover whole resources: a legacy barrier names a
// resource, and an enhanced buffer barrier's Offset and Size are reserved
// (0 and UINT64_MAX). The driver is told the resource's whole range; the
// debug layer refuses a partial one. (The DXCGC runtime keeps its planned
// concurrency by placing one buffer per barriered range: docs/d3d12.md.)
void CommandList::barrierOnResource(ID3D12Resource *resource,
                                    std::vector<D3D12DDI_BARRIER_CGC> &out) {
  Resource *r = implOf<Resource>(resource, kImplResource);
  if (!r) {
    out.push_back({D3D12DDI_BARRIER_SCOPE_GLOBAL_CGC, {0, 0}});
    return;
  }
  out.push_back({D3D12DDI_BARRIER_SCOPE_RANGE_CGC, {r->gpu(), r->size()}});
}

static std::string resourceName(Resource *r) {
  std::string name = r->debugName();
  return (name.empty() ? "" : "'" + name + "' ") + "at " + hex(r->gpu());
}

std::string CommandList::bindingProblemOf(const ResourceRegistry::Entry &resource) const {
  std::string why = bindingProblem(resource, stateOf(resource));
  if (!why.empty())
    return why;
  // The spec: bindings must be accessible with D3D12_BARRIER_ACCESS_COMMON
  // or D3D12_BARRIER_ACCESS_UNORDERED_ACCESS.
  auto it = accesses_.find(resource.resource);
  if (it != accesses_.end() && it->second != D3D12_BARRIER_ACCESS_COMMON &&
      !(it->second & D3D12_BARRIER_ACCESS_UNORDERED_ACCESS))
    return "the resource" + (resource.name.empty() ? "" : " '" + resource.name + "'") + " at " +
           hex(resource.start) + " was left with AccessAfter " + hex(uint32_t(it->second)) +
           " by an enhanced buffer barrier of this list; MLIR program bindings must be "
           "accessible with D3D12_BARRIER_ACCESS_COMMON or UNORDERED_ACCESS";
  return "";
}

bool CommandList::trackTransition(Resource *r, const D3D12_RESOURCE_TRANSITION_BARRIER &t,
                                  std::string &error) {
  if (t.Subresource != D3D12_RESOURCE_BARRIER_ALL_SUBRESOURCES && t.Subresource != 0) {
    error = "subresource " + std::to_string(t.Subresource) + " of buffer " + resourceName(r) +
            " does not exist (a buffer has subresource 0)";
    return false;
  }
  auto it = states_.find(r);
  D3D12_RESOURCE_STATES current = it == states_.end() ? r->state() : it->second.second;
  // A COMMON buffer is promoted implicitly to the state its first use needs
  // (D3D12's common state promotion), so any StateBefore may be right then.
  if (current != D3D12_RESOURCE_STATE_COMMON && t.StateBefore != current) {
    error = "StateBefore " + hex(uint32_t(t.StateBefore)) + " of buffer " + resourceName(r) +
            " differs from its state " + hex(uint32_t(current)) +
            " (the initial state, then the transitions of closed lists and of this one)";
    return false;
  }
  states_[r] = {ComPtr<Resource>(r), t.StateAfter};
  return true;
}

void CommandList::ResourceBarrier(UINT NumBarriers, const D3D12_RESOURCE_BARRIER *pBarriers) {
  if (!checkRecording("ResourceBarrier"))
    return;
  std::string text;
  if (NumBarriers && !pBarriers)
    text = "ResourceBarrier: pBarriers is null";
  std::vector<D3D12DDI_BARRIER_CGC> barriers;
  for (UINT i = 0; i < NumBarriers && text.empty(); ++i) {
    const D3D12_RESOURCE_BARRIER &b = pBarriers[i];
    switch (b.Type) {
    case D3D12_RESOURCE_BARRIER_TYPE_TRANSITION:
      if (debug_) {
        Resource *r = implOf<Resource>(b.Transition.pResource, kImplResource);
        std::string why;
        if (!r)
          text = "ResourceBarrier: transition barrier #" + std::to_string(i) +
                 " names no resource of this runtime";
        else if (!trackTransition(r, b.Transition, why))
          text = "ResourceBarrier: transition barrier #" + std::to_string(i) + ": " + why;
        if (!text.empty())
          break;
      }
      barrierOnResource(b.Transition.pResource, barriers);
      break;
    case D3D12_RESOURCE_BARRIER_TYPE_UAV:
      if (b.UAV.pResource)
        barrierOnResource(b.UAV.pResource, barriers);
      else
        barriers.push_back({D3D12DDI_BARRIER_SCOPE_GLOBAL_CGC, {0, 0}});
      break;
    case D3D12_RESOURCE_BARRIER_TYPE_ALIASING:
      barriers.push_back({D3D12DDI_BARRIER_SCOPE_GLOBAL_CGC, {0, 0}});
      break;
    default:
      text = "ResourceBarrier: barrier #" + std::to_string(i) + " has an unknown type";
    }
  }
  if (!text.empty()) {
    device_->error(text);
    setError(E_INVALIDARG, text);
    return;
  }
  ddi_->pfnBarrier(handle_, UINT(barriers.size()), barriers.data());
}

void CommandList::Barrier(UINT32 NumBarrierGroups, const D3D12_BARRIER_GROUP *pBarrierGroups) {
  if (!checkRecording("Barrier"))
    return;
  std::string text;
  std::vector<D3D12DDI_BARRIER_CGC> barriers;
  if (NumBarrierGroups && !pBarrierGroups)
    text = "Barrier: pBarrierGroups is null";
  for (UINT32 g = 0; g < NumBarrierGroups && text.empty(); ++g) {
    const D3D12_BARRIER_GROUP &group = pBarrierGroups[g];
    if (group.NumBarriers && !group.pGlobalBarriers) {
      text = "Barrier: group #" + std::to_string(g) + " has a null barrier array";
      break;
    }
    switch (group.Type) {
    case D3D12_BARRIER_TYPE_GLOBAL:
      for (UINT32 i = 0; i < group.NumBarriers; ++i)
        barriers.push_back({D3D12DDI_BARRIER_SCOPE_GLOBAL_CGC, {0, 0}});
      break;
    case D3D12_BARRIER_TYPE_BUFFER:
      for (UINT32 i = 0; i < group.NumBarriers && text.empty(); ++i) {
        const D3D12_BUFFER_BARRIER &b = group.pBufferBarriers[i];
        Resource *r = implOf<Resource>(b.pResource, kImplResource);
        const std::string which =
            "Barrier: buffer barrier #" + std::to_string(i) + " of group #" + std::to_string(g);
        if (!r) {
          text = which + " has no resource of this runtime";
          break;
        }
        // D3D12: "Offset: must be 0", "Size: must be UINT64_MAX or the
        // buffer's width" -- a buffer barrier covers the whole buffer.
        if (debug_ && (b.Offset != 0 || (b.Size != UINT64_MAX && b.Size != r->size()))) {
          text = which + " on buffer " + resourceName(r) + " covers [" + std::to_string(b.Offset) +
                 ", +" + (b.Size == UINT64_MAX ? std::string("UINT64_MAX") : std::to_string(b.Size)) +
                 ") of its " + std::to_string(r->size()) +
                 " bytes; a buffer barrier covers the whole buffer (Offset 0, Size UINT64_MAX): "
                 "place a buffer over the range to order it alone";
          break;
        }
        if (debug_)
          accesses_[r] = b.AccessAfter;
        barriers.push_back({D3D12DDI_BARRIER_SCOPE_RANGE_CGC, {r->gpu(), r->size()}});
      }
      break;
    case D3D12_BARRIER_TYPE_TEXTURE:
      text = "Barrier: texture barriers are not implemented (textures are out of scope)";
      setError(E_NOTIMPL, text);
      break;
    default:
      text = "Barrier: group #" + std::to_string(g) + " has an unknown type";
    }
  }
  if (!text.empty()) {
    device_->error(text);
    setError(E_INVALIDARG, text);
    return;
  }
  ddi_->pfnBarrier(handle_, UINT(barriers.size()), barriers.data());
}

void CommandList::SetProgram(const D3D12_SET_PROGRAM_DESC *pDesc) {
  if (!checkRecording("SetProgram") || !checkCompute("SetProgram"))
    return;
  std::string text;
  HRESULT hr = E_INVALIDARG;
  if (!pDesc) {
    text = "SetProgram: pDesc is null";
  } else if (device_->tier() == D3D12_MLIR_PROGRAMS_TIER_NOT_SUPPORTED) {
    text = "SetProgram: the device reports D3D12_MLIR_PROGRAMS_TIER_NOT_SUPPORTED; it has no "
           "MLIR programs to set";
    hr = DXGI_ERROR_UNSUPPORTED;
  } else if (pDesc->Type != D3D12_PROGRAM_TYPE_MLIR_PROGRAM) {
    text = "SetProgram: program type " + std::to_string(int(pDesc->Type)) +
           " is not implemented (only D3D12_PROGRAM_TYPE_MLIR_PROGRAM)";
    hr = E_NOTIMPL;
  } else if (debug_) {
    program_ = device_->findProgram(pDesc->MlirProgram.ProgramIdentifier);
    if (!program_)
      text = "SetProgram: the program identifier names no live MLIR program of this device "
             "(was GetProgramIdentifier given an unknown name, or the state object released?)";
    else if (pDesc->MlirProgram.Flags != D3D12_SET_MLIR_PROGRAM_FLAG_NONE)
      text = "SetProgram: Flags must be D3D12_SET_MLIR_PROGRAM_FLAG_NONE";
  }
  if (!text.empty()) {
    device_->error(text);
    setError(hr, text);
    return;
  }
  D3D12DDI_SET_PROGRAM_DESC_0108 desc = {};
  desc.Type = D3D12DDI_PROGRAM_TYPE_MLIR_PROGRAM_0119;
  std::memcpy(&desc.MlirProgram.ProgramIdentifier, &pDesc->MlirProgram.ProgramIdentifier,
              sizeof(D3D12_PROGRAM_IDENTIFIER));
  desc.MlirProgram.Flags = D3D12DDI_SET_MLIR_PROGRAM_FLAGS_0119(pDesc->MlirProgram.Flags);
  ddi_->pfnSetProgram(handle_, &desc);
}

void CommandList::DispatchGraph(const D3D12_DISPATCH_GRAPH_DESC *pDesc) {
  if (!checkRecording("DispatchGraph") || !checkCompute("DispatchGraph"))
    return;
  std::string text;
  HRESULT hr = E_INVALIDARG;
  if (!pDesc) {
    text = "DispatchGraph: pDesc is null";
  } else if (pDesc->Mode != D3D12_DISPATCH_MODE_MLIR_PROGRAM) {
    text = "DispatchGraph: mode " + std::to_string(int(pDesc->Mode)) +
           " is not implemented (work graphs are out of scope; use "
           "D3D12_DISPATCH_MODE_MLIR_PROGRAM)";
    hr = E_NOTIMPL;
  } else if (pDesc->MlirProgramBindings.NumBindings && !pDesc->MlirProgramBindings.pBindings) {
    text = "DispatchGraph: pBindings is null with NumBindings = " +
           std::to_string(pDesc->MlirProgramBindings.NumBindings);
  } else if (!checkBindingTypes(pDesc->MlirProgramBindings)) {
    return;
  } else if (debug_) {
    std::vector<std::string> errors =
        validateDispatchGraph(*device_.Get(), program_.get(), *pDesc,
                              [&](const ResourceRegistry::Entry &r) { return bindingProblemOf(r); });
    if (!errors.empty()) {
      for (size_t i = 1; i < errors.size(); ++i)
        device_->error(errors[i]);
      text = errors.front();
    }
  }
  if (!text.empty()) {
    device_->error(text);
    setError(hr, text);
    return;
  }
  D3D12DDI_DISPATCH_GRAPH_DESC_0108 desc = {};
  desc.Mode = D3D12DDI_DISPATCH_MODE_MLIR_PROGRAM;
  desc.MlirProgramBindings.NumBindings = pDesc->MlirProgramBindings.NumBindings;
  desc.MlirProgramBindings.pBindings = reinterpret_cast<const D3D12DDI_MLIR_PROGRAM_BINDING_0119 *>(
      pDesc->MlirProgramBindings.pBindings);
  ddi_->pfnDispatchGraph(handle_, &desc);
}

//===----------------------------------------------------------------------===//
// Fences
//===----------------------------------------------------------------------===//

static void signalEvent(HANDLE event) {
  int fd = int(reinterpret_cast<intptr_t>(event) - 1);
  uint64_t one = 1;
  ssize_t written = write(fd, &one, sizeof(one));
  (void)written;
}

//===----------------------------------------------------------------------===//
// Queue cores: a queue's pending work and how it is executed
//===----------------------------------------------------------------------===//

struct QueueCore {
  struct Item {
    enum Kind { Execute, Signal, Wait } kind;
    std::vector<std::shared_ptr<Recording>> recordings;
    ComPtr<Fence> fence;
    uint64_t value = 0;
    std::chrono::steady_clock::time_point pushedAt;
  };

  QueueCore(Device *device, D3D12DDI_HCOMMANDQUEUE handle) : device(device), handle(handle) {}

  void push(Item item) {
    bool notify;
    {
      std::lock_guard<std::mutex> lock(mutex);
      item.pushedAt = std::chrono::steady_clock::now();
      items.push_back(std::move(item));
      ++pushes;
      notify = state == State::Idle; // otherwise it looks at `items` again
    }
    if (notify)
      wake.notify_one();
  }

  void stop() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      stopping.store(true);
    }
    wake.notify_all();
    grace.notify_all();
  }

  /// Runs one item; called with `execMutex` held, so items run one at a time
  /// and in order whichever thread runs them.
  void execute(Item &item) {
    switch (item.kind) {
    case Item::Execute: {
      if (FAILED(device->GetDeviceRemovedReason()))
        break;
      D3D12DDI_HRECORDING_CGC one;
      std::vector<D3D12DDI_HRECORDING_CGC> many;
      const D3D12DDI_HRECORDING_CGC *handles = &one;
      if (item.recordings.size() == 1) {
        one = item.recordings[0]->handle;
      } else {
        for (const auto &r : item.recordings)
          many.push_back(r->handle);
        handles = many.data();
      }
      HRESULT hr = device->queueDdi().pfnExecuteCommandLists(
          handle, UINT(item.recordings.size()), handles);
      if (FAILED(hr))
        device->removeDevice(hr, "the driver failed to execute command lists (" +
                                     hresultName(hr) + ")");
      break;
    }
    case Item::Signal:
      item.fence->signal(item.value);
      break;
    case Item::Wait:
      item.fence->waitFor(item.value, &stopping);
      break;
    }
  }

  /// Pops the front item and runs it under `execMutex`; false if there is
  /// none (another thread took it) or, for a helper, if the queue is gone or
  /// the item is a queue wait not satisfied yet.
  bool runFront(bool helper) {
    std::lock_guard<std::mutex> exec(execMutex);
    if (closed)
      return false;
    Item item;
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (items.empty())
        return false;
      const Item &front = items.front();
      if (helper && front.kind == Item::Wait && front.fence->GetCompletedValue() < front.value)
        return false;
      item = std::move(items.front());
      items.pop_front();
      if (item.kind == Item::Execute) {
        lastHelped = helper;
        helped += helper;
        if (helper) {
          gracesSkipped = 0;
        } else {
          helperCame = helpers > 0; // one is waiting for execMutex already
          gracesSkipped -= gracesSkipped > 0;
        }
      }
    }
    execute(item);
    return true;
  }

  /// The queue's thread: runs items as they come until stopped and drained.
  /// Items are left to threads helping from a fence (they run them without
  /// a thread hop): while one helps, and — when the last run was run by a
  /// helper, so the one just submitted likely will be too — until the item
  /// has waited `kGrace` with no helper.
  ///
  /// While helpers run the items, this thread is not woken per submission
  /// (Watching): it looks at the queue every `kWatch` instead, for as long
  /// as items keep coming, and a thread that waits without helping (an
  /// event, another queue's wait) kicks it. A wake-up per run put a third
  /// thread on the two cores that the caller and the driver's pool use, and
  /// cost a small model at 2 threads 3-4x its time in half the processes (a
  /// perceptron: 0.053-0.105 ms per run in 11 of 20 processes against
  /// 0.016-0.026 in the rest; with this, 0.013-0.020 in all 20). Work that
  /// is neither helped nor waited for through a fence (a thread polling
  /// GetCompletedValue) starts within kWatch. After `kWatches` looks with
  /// nothing submitted, this thread sleeps until a submission wakes it.
  void workerLoop() {
    static constexpr auto kGrace = std::chrono::microseconds(500);
    static constexpr int kWatches = 20;
    static constexpr auto kWatch = std::chrono::milliseconds(4);
    static constexpr int kSkippedGraces = 16;
    std::unique_lock<std::mutex> lock(mutex);
    int quietWatches = 0;
    uint64_t seenPushes = pushes;
    while (true) {
      // A helper is expected for the next item if one ran the last, or came
      // for it while this thread ran it: the submitter lost a race to this
      // thread's wake-up once, and would for good if this thread kept
      // taking the items at once (two hops per run).
      const bool expectHelper = lastHelped || (helperCame && gracesSkipped == 0);
      if (helpers > 0 || items.empty()) {
        if (stopping.load() && items.empty())
          return; // stopped and drained
        if (stopping.load()) {
          // A helper runs the rest; it may leave without a word.
          wake.wait_for(lock, kGrace);
          continue;
        }
        if (expectHelper && quietWatches < kWatches) {
          state = State::Watching;
          wake.wait_for(lock, kWatch);
          quietWatches = pushes == seenPushes ? quietWatches + 1 : 0;
          seenPushes = pushes;
          continue;
        }
        // Back to the top on every wake-up (not a predicate wait, which
        // would stay Idle while helpers keep taking the items it is woken
        // for: a wake-up per run).
        state = State::Idle;
        wake.wait(lock);
        quietWatches = 0;
        seenPushes = pushes;
        continue;
      }
      if (expectHelper && !handedOver && !stopping.load()) {
        auto due = items.front().pushedAt + kGrace;
        if (std::chrono::steady_clock::now() < due) {
          state = State::Grace;
          uint64_t seen = helped;
          bool came = grace.wait_until(lock, due, [&] {
            return helpers > 0 || items.empty() || stopping.load() || handedOver;
          });
          if (helpers > 0 || items.empty() || helped != seen)
            continue;
          // Nobody came: the submitter works on before it waits. No grace
          // for the next kSkippedGraces items this thread runs, unless a
          // helper runs one.
          if (!came)
            gracesSkipped = kSkippedGraces;
        }
      }
      handedOver = false;
      state = State::Busy;
      lock.unlock();
      runFront(/*helper=*/false);
      lock.lock();
    }
  }

  /// A thread came to help after the work it waits for was done.
  void noteWaiter() {
    std::lock_guard<std::mutex> lock(mutex);
    helperCame = true;
  }

  /// For a thread that waits without helping (an event, another queue's
  /// wait): pending items run now, not after a look or a grace left for
  /// helpers.
  void kick() {
    bool notify;
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (items.empty())
        return;
      handedOver = true;
      notify = state == State::Watching || state == State::Grace;
    }
    if (notify) {
      wake.notify_one();
      grace.notify_one();
    }
  }

  /// Runs items on the calling thread until `fence` reaches `value`; stops
  /// at an empty queue, at a queue wait that is not satisfied yet (the
  /// queue's thread waits for that) or once the queue is destroyed.
  void help(Fence &fence, uint64_t value) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      ++helpers;
      helperCame = true;
    }
    struct Leave {
      QueueCore &core;
      ~Leave() {
        bool handOver;
        {
          std::lock_guard<std::mutex> lock(core.mutex);
          handOver = --core.helpers == 0 && !core.items.empty();
          core.handedOver = core.handedOver || handOver;
        }
        if (handOver) {
          core.wake.notify_one();
          core.grace.notify_one();
        }
      }
    } leave{*this};
    while (fence.GetCompletedValue() < value)
      if (!runFront(/*helper=*/true))
        return;
  }

  Device *device; // valid until `closed`
  D3D12DDI_HCOMMANDQUEUE handle;
  std::mutex mutex; // guards what follows up to `stopping`
  std::condition_variable wake, grace;
  std::deque<Item> items;
  // The queue's thread: asleep until woken (Idle), looking every kWatch
  // (Watching), leaving the front item to a helper (Grace), running.
  enum class State { Idle, Watching, Grace, Busy } state = State::Busy;
  uint64_t pushes = 0;     // items pushed
  int helpers = 0;         // threads in help()
  uint64_t helped = 0;     // Execute items run by helpers
  bool lastHelped = false; // the last Execute item ran on a helper
  bool helperCame = false;  // a helper came for the last one this thread ran
  int gracesSkipped = 0;    // items this thread runs without a grace
  bool handedOver = false; // a helper left items for the queue's thread
  std::atomic<bool> stopping{false};
  std::mutex execMutex; // held while an item runs
  bool closed = false;  // under execMutex: the queue is gone
};

Fence::Fence(Device *device, UINT64 initialValue, D3D12_FENCE_FLAGS flags)
    : localValue_(initialValue), flags_(flags) {
  device_ = device;
}

HRESULT Fence::QueryInterface(REFIID riid, void **ppv) {
  if (!ppv)
    return E_POINTER;
  CGC_D3D12_QI(IUnknown)
  CGC_D3D12_QI(ID3D12Object)
  CGC_D3D12_QI(ID3D12DeviceChild)
  CGC_D3D12_QI(ID3D12Pageable)
  CGC_D3D12_QI(ID3D12Fence)
  CGC_D3D12_QI(ID3D12Fence1)
  if (riid == kImplFence) {
    *ppv = this;
    AddRef();
    return S_OK;
  }
  *ppv = nullptr;
  return E_NOINTERFACE;
}
void Fence::notImplemented(const char *what) { device_->notImplemented(what); }

UINT64 Fence::GetCompletedValue() {
  if (FAILED(device_->GetDeviceRemovedReason()) && !shared_)
    return UINT64_MAX;
  return value_->load();
}

void Fence::signal(uint64_t value) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    value_->store(value);
  }
  if (shared_)
    wakeSharedWaiters(shared_);
  changed_.notify_all();
  fireEvents(value);
}

void Fence::fireEvents(uint64_t value) {
  std::vector<HANDLE> ready;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto it = events_.begin(); it != events_.end();) {
      if (it->first <= value) {
        ready.push_back(it->second);
        it = events_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (HANDLE event : ready)
    signalEvent(event);
}

void Fence::addSignaler(const std::shared_ptr<QueueCore> &queue) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto it = signalers_.begin(); it != signalers_.end();) {
    if (it->first == queue.get() && !it->second.expired())
      return;
    it = it->second.expired() ? signalers_.erase(it) : std::next(it);
  }
  signalers_.push_back({queue.get(), queue});
}

std::vector<std::shared_ptr<QueueCore>> Fence::signalingQueues() {
  std::vector<std::shared_ptr<QueueCore>> queues;
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto &s : signalers_)
    if (auto queue = s.second.lock())
      queues.push_back(std::move(queue));
  return queues;
}

void Fence::kickSignalers() {
  for (const auto &queue : signalingQueues())
    queue->kick();
}

bool Fence::waitFor(uint64_t value, const std::atomic<bool> *abort, bool help) {
  if (value_->load() >= value) {
    // Done before its waiter came (the queue's thread ran it): the queues
    // leave the next runs to the waiter, which would otherwise keep losing
    // that race (its wake-ups of the queue's thread are what made it late).
    if (help)
      for (const auto &queue : signalingQueues())
        queue->noteWaiter();
    return true;
  }
  if (help) {
    for (const auto &queue : signalingQueues())
      queue->help(*this, value);
    // The queue's thread may be finishing a short run: a brief spin saves
    // the wake-up of a sleep.
    auto deadline = std::chrono::steady_clock::now() + std::chrono::microseconds(20);
    while (value_->load() < value && std::chrono::steady_clock::now() < deadline)
      std::this_thread::yield();
  }
  if (!help) // a thread that waits without helping: the queues' threads run now
    kickSignalers();
  if (shared_)
    return waitShared(shared_, *value_, value, abort);
  std::unique_lock<std::mutex> lock(mutex_);
  while (value_->load() < value) {
    if (abort && abort->load())
      return false;
    if (abort)
      changed_.wait_for(lock, std::chrono::milliseconds(10));
    else
      changed_.wait(lock);
  }
  return true;
}

HRESULT Fence::SetEventOnCompletion(UINT64 Value, HANDLE hEvent) {
  if (!hEvent) {
    waitFor(Value, nullptr, /*help=*/true);
    return S_OK;
  }
  bool reached = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (value_->load() < Value) {
      events_.push_back({Value, hEvent});
      // Another process may signal a shared fence: a watcher thread sees it.
      if (shared_ && !watching_) {
        if (watcher_.joinable())
          watcher_.join();
        watching_ = true;
        watcher_ = std::thread([this] { watchShared(); });
      }
    } else {
      reached = true;
    }
  }
  if (reached) {
    signalEvent(hEvent);
    return S_OK;
  }
  // Nobody helps an event's waiter: the queues' threads run the work now.
  kickSignalers();
  return S_OK;
}

HRESULT Fence::Signal(UINT64 Value) {
  signal(Value);
  return S_OK;
}

//===----------------------------------------------------------------------===//
// Queues
//===----------------------------------------------------------------------===//

CommandQueue::CommandQueue(Device *device, const D3D12_COMMAND_QUEUE_DESC &desc,
                           D3D12DDI_HCOMMANDQUEUE handle)
    : desc_(desc), handle_(handle), core_(std::make_shared<QueueCore>(device, handle)) {
  device_ = device;
  worker_ = std::thread([core = core_.get()] { core->workerLoop(); });
  pthread_setname_np(worker_.native_handle(), "cgc-queue"); // in top, perf, gdb
}

CommandQueue::~CommandQueue() {
  core_->stop();
  worker_.join();
  {
    // A thread helping from a fence may still hold the core: let it finish
    // its item and see that the queue is gone.
    std::lock_guard<std::mutex> exec(core_->execMutex);
    core_->closed = true;
  }
  device_->ddi().pfnDestroyCommandQueue(device_->handle(), handle_);
}

HRESULT CommandQueue::QueryInterface(REFIID riid, void **ppv) {
  if (!ppv)
    return E_POINTER;
  CGC_D3D12_QI(IUnknown)
  CGC_D3D12_QI(ID3D12Object)
  CGC_D3D12_QI(ID3D12DeviceChild)
  CGC_D3D12_QI(ID3D12Pageable)
  CGC_D3D12_QI(ID3D12CommandQueue)
  *ppv = nullptr;
  return E_NOINTERFACE;
}
void CommandQueue::notImplemented(const char *what) { device_->notImplemented(what); }

void CommandQueue::ExecuteCommandLists(UINT NumCommandLists, ID3D12CommandList *const *ppCommandLists) {
  if (NumCommandLists && !ppCommandLists) {
    device_->error("ExecuteCommandLists: ppCommandLists is null");
    return;
  }
  if (HRESULT removed = device_->GetDeviceRemovedReason(); FAILED(removed)) {
    device_->error("ExecuteCommandLists: the device was removed (" + hresultName(removed) +
                   "); nothing is executed");
    return;
  }
  QueueCore::Item item;
  item.kind = QueueCore::Item::Execute;
  for (UINT i = 0; i < NumCommandLists; ++i) {
    CommandList *list = implOf<CommandList>(ppCommandLists[i], kImplCommandList);
    std::shared_ptr<Recording> recording = list ? list->recording() : nullptr;
    if (!list || !list->isClosed() || !recording) {
      device_->error("ExecuteCommandLists: command list #" + std::to_string(i) +
                     (!list ? " is not a command list of this runtime"
                            : " is not closed, or its Close() failed") +
                     "; nothing in this call is executed");
      return;
    }
    if (list->GetType() != desc_.Type) {
      device_->error("ExecuteCommandLists: command list #" + std::to_string(i) +
                     " has a different type than the queue; nothing in this call is executed");
      return;
    }
    item.recordings.push_back(std::move(recording));
  }
  core_->push(std::move(item));
}

HRESULT CommandQueue::Signal(ID3D12Fence *pFence, UINT64 Value) {
  Fence *fence = implOf<Fence>(pFence, kImplFence);
  if (!fence)
    return device_->fail(E_INVALIDARG, "Signal: pFence is not a fence of this runtime");
  QueueCore::Item item;
  item.kind = QueueCore::Item::Signal;
  item.fence = fence;
  item.value = Value;
  fence->addSignaler(core_);
  core_->push(std::move(item));
  return S_OK;
}

HRESULT CommandQueue::Wait(ID3D12Fence *pFence, UINT64 Value) {
  Fence *fence = implOf<Fence>(pFence, kImplFence);
  if (!fence)
    return device_->fail(E_INVALIDARG, "Wait: pFence is not a fence of this runtime");
  QueueCore::Item item;
  item.kind = QueueCore::Item::Wait;
  item.fence = fence;
  item.value = Value;
  core_->push(std::move(item));
  return S_OK;
}

} // namespace cgc::d3d12
