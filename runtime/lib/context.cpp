//===- context.cpp - Bindings, recording once, replaying runs -------------===//
//
// A context owns the scratch memory of one run in flight and a command list
// recorded from the plan: per dispatch SetProgram + DispatchGraph (MLIR
// programs) or SetPipelineState + SetComputeRootUnorderedAccessView +
// Dispatch (kernel programs), and the planned buffer barriers: one
// whole-buffer barrier per barriered range, each scratch range having a
// buffer placed over it (createScratch). The list is replayed on every run
// and recorded again only when a bound address changed.
//
//===----------------------------------------------------------------------===//

#include "internal.h"

#include <algorithm>
#include <cstring>

using namespace cgc;
using namespace cgc::rt;

static std::string ioName(const cgc_model_s &model, bool output, size_t index) {
  const PlanTensor &t = output ? model.plan().outputs[index] : model.plan().inputs[index];
  return std::string(output ? "output " : "input ") + std::to_string(index) + " '" + t.name + "'";
}

void cgc_context_s::create() {
  const ExecutionPlan &p = model->plan();
  cgc_device_s *device = model->device.get();
  if (!stream)
    stream = Ref<cgc_stream_s>::adopt(new cgc_stream_s(model->device));
  // A plan without intermediates may still bind empty scratch ranges: every
  // binding needs a valid address, so some memory is allocated then too.
  bool bindsScratch = false;
  for (const PlanCommand &command : p.commands)
    for (const PlanRange &range : command.ranges)
      bindsScratch = bindsScratch || range.buffer == PlanBuffer::Scratch;
  if (p.scratchBytes || bindsScratch)
    createScratch();
  for (size_t i = 0; i < p.inputs.size(); ++i)
    ownInputs.push_back(
        allocateTensor(device, p.inputs[i].dtype, p.inputs[i].shape, ioName(*model, false, i)));
  for (size_t i = 0; i < p.outputs.size(); ++i)
    ownOutputs.push_back(
        allocateTensor(device, p.outputs[i].dtype, p.outputs[i].shape, ioName(*model, true, i)));
  inputs = ownInputs;
  outputs = ownOutputs;
  HRESULT hr = device->d3d->CreateCommandAllocator(D3D12_COMMAND_LIST_TYPE_COMPUTE,
                                                   IID_PPV_ARGS(&allocator));
  if (SUCCEEDED(hr))
    hr = device->d3d->CreateCommandList1(0, D3D12_COMMAND_LIST_TYPE_COMPUTE,
                                         D3D12_COMMAND_LIST_FLAG_NONE, IID_PPV_ARGS(&list));
  if (FAILED(hr))
    fail(CGC_STATUS_INTERNAL, "cannot create a command list (" + hresultText(hr) + ")");
}

void cgc_context_s::bind(bool output, size_t index, cgc_tensor_s *tensor) {
  const ExecutionPlan &p = model->plan();
  const std::vector<PlanTensor> &planned = output ? p.outputs : p.inputs;
  if (index >= planned.size())
    fail(CGC_STATUS_OUT_OF_RANGE, model->where() + (output ? "output" : "input") + " index " +
                                      std::to_string(index) + " is out of range: the model has " +
                                      std::to_string(planned.size()));
  std::vector<Ref<cgc_tensor_s>> &bound = output ? outputs : inputs;
  if (!tensor) {
    bound[index] = (output ? ownOutputs : ownInputs)[index];
    return;
  }
  const PlanTensor &want = planned[index];
  std::string what = model->where() + ioName(*model, output, index);
  if (tensor->device.get() != model->device.get())
    fail(CGC_STATUS_INVALID_ARGUMENT, what + ": the tensor belongs to another device");
  if (tensor->dtype != want.dtype)
    fail(CGC_STATUS_INVALID_ARGUMENT, what + ": expected dtype " +
                                          describeTensor(want.dtype, want.shape) + ", got " +
                                          describeTensor(tensor->dtype, tensor->shape));
  if (tensor->shape != want.shape)
    fail(CGC_STATUS_INVALID_ARGUMENT, what + ": expected shape " +
                                          describeTensor(want.dtype, want.shape) + ", got " +
                                          describeTensor(tensor->dtype, tensor->shape));
  if (output && tensor->readOnly)
    fail(CGC_STATUS_FAILED_PRECONDITION,
         what + ": the tensor is in memory imported read-only (" + tensor->origin +
             "); an output needs READ_WRITE or WRITE_ONLY access");
  bound[index] = Ref<cgc_tensor_s>::share(tensor);
}

uint64_t cgc_context_s::address(const PlanRange &range) const {
  switch (range.buffer) {
  case PlanBuffer::Input:
    return inputs.at(range.index)->gpu + range.offset;
  case PlanBuffer::Output:
    return outputs.at(range.index)->gpu + range.offset;
  case PlanBuffer::Scratch:
    return scratchAddress + range.offset;
  case PlanBuffer::Constants:
    return model->constantsAddress + range.offset;
  }
  return 0;
}

/// Placed resources start at multiples of 64 KiB of their heap.
static constexpr uint64_t kPlacement = D3D12_DEFAULT_RESOURCE_PLACEMENT_ALIGNMENT;

static uint64_t alignDown(uint64_t value) { return value / kPlacement * kPlacement; }

/// The scratch view of a barrier on [offset, +bytes): from the 64 KiB
/// boundary at or below it to its end.
static std::pair<uint64_t, uint64_t> scratchView(uint64_t offset, uint64_t bytes) {
  uint64_t start = alignDown(offset);
  return {start, offset + bytes - start};
}

static D3D12_RESOURCE_DESC bufferDesc(uint64_t width) {
  D3D12_RESOURCE_DESC desc = {};
  desc.Dimension = D3D12_RESOURCE_DIMENSION_BUFFER;
  desc.Width = width;
  desc.Height = desc.DepthOrArraySize = desc.MipLevels = 1;
  desc.SampleDesc.Count = 1;
  desc.Layout = D3D12_TEXTURE_LAYOUT_ROW_MAJOR;
  desc.Flags = D3D12_RESOURCE_FLAG_ALLOW_UNORDERED_ACCESS;
  return desc;
}

void cgc_context_s::createScratch() {
  const ExecutionPlan &p = model->plan();
  cgc_device_s *device = model->device.get();
  uint64_t bytes = std::max<uint64_t>(p.scratchBytes, 64);
  D3D12_HEAP_DESC heapDesc = {};
  heapDesc.SizeInBytes = (bytes + kPlacement - 1) / kPlacement * kPlacement;
  heapDesc.Properties.Type = D3D12_HEAP_TYPE_CUSTOM;
  heapDesc.Properties.CPUPageProperty = D3D12_CPU_PAGE_PROPERTY_WRITE_BACK;
  heapDesc.Properties.MemoryPoolPreference = D3D12_MEMORY_POOL_L0;
  heapDesc.Properties.CreationNodeMask = heapDesc.Properties.VisibleNodeMask = 1;
  heapDesc.Flags = D3D12_HEAP_FLAG_ALLOW_ONLY_BUFFERS;
  HRESULT hr = device->d3d->CreateHeap(&heapDesc, IID_PPV_ARGS(&scratchHeap));
  if (FAILED(hr))
    fail(hr == E_OUTOFMEMORY ? CGC_STATUS_RESOURCE_EXHAUSTED : CGC_STATUS_INTERNAL,
         "cannot allocate " + std::to_string(bytes) + " bytes for the scratch memory (" +
             hresultText(hr) + ")");
  auto place = [&](uint64_t offset, uint64_t width, ComPtr<ID3D12Resource> &out) {
    D3D12_RESOURCE_DESC desc = bufferDesc(width);
    HRESULT placed = device->d3d->CreatePlacedResource(
        scratchHeap.Get(), offset, &desc, D3D12_RESOURCE_STATE_COMMON, nullptr, IID_PPV_ARGS(&out));
    if (FAILED(placed))
      fail(CGC_STATUS_INTERNAL, "cannot place a buffer of " + std::to_string(width) +
                                    " bytes at offset " + std::to_string(offset) +
                                    " of the scratch memory (" + hresultText(placed) +
                                    "): " + CGCD3D12GetLastError());
  };
  place(0, bytes, scratch);
  scratchAddress = scratch->GetGPUVirtualAddress();
  // One buffer per range a barrier orders (aliasing the others, as placed
  // resources over one heap may).
  for (const PlanCommand &command : p.commands) {
    if (command.kind != PlanCommand::Kind::Barrier)
      continue;
    for (const PlanRange &range : command.ranges) {
      if (range.buffer != PlanBuffer::Scratch || range.bytes == 0)
        continue;
      if (range.offset > bytes || range.bytes > bytes - range.offset)
        fail(CGC_STATUS_DATA_LOSS, model->where() + "a planned barrier orders [" +
                                       std::to_string(range.offset) + ", +" +
                                       std::to_string(range.bytes) + ") of the " +
                                       std::to_string(bytes) + "-byte scratch memory");
      auto view = scratchView(range.offset, range.bytes);
      if (!scratchViews.count(view))
        place(view.first, view.second, scratchViews[view]);
    }
  }
}

ID3D12Resource *cgc_context_s::barrierResource(const PlanRange &range) const {
  switch (range.buffer) {
  case PlanBuffer::Input:
    return inputs.at(range.index)->resource.Get();
  case PlanBuffer::Output:
    return outputs.at(range.index)->resource.Get();
  case PlanBuffer::Scratch: {
    auto it = scratchViews.find(scratchView(range.offset, range.bytes));
    return it == scratchViews.end() ? scratch.Get() : it->second.Get();
  }
  case PlanBuffer::Constants:
    return model->constants.Get();
  }
  return nullptr;
}

void cgc_context_s::record() {
  const ExecutionPlan &p = model->plan();
  cgc_device_s *device = model->device.get();
  uint64_t mark = device->messageMark();
  HRESULT hr = list->Reset(allocator.Get(), nullptr);
  if (FAILED(hr))
    fail(CGC_STATUS_INTERNAL, "cannot reset the command list (" + hresultText(hr) + ")");
  int current = -1; // the program set on the list
  std::vector<D3D12_MLIR_PROGRAM_BINDING> bindings;
  std::vector<D3D12_BUFFER_BARRIER> barriers;
  for (const PlanCommand &command : p.commands) {
    if (command.kind == PlanCommand::Kind::Barrier) {
      // Whole-buffer barriers (Offset 0, Size UINT64_MAX), as D3D12
      // requires: a scratch range has a buffer placed over it.
      barriers.clear();
      for (const PlanRange &range : command.ranges) {
        ID3D12Resource *resource = barrierResource(range);
        if (!resource || range.bytes == 0)
          continue;
        bool seen = false;
        for (const D3D12_BUFFER_BARRIER &b : barriers)
          seen = seen || b.pResource == resource;
        if (seen)
          continue;
        D3D12_BUFFER_BARRIER b = {};
        b.SyncBefore = D3D12_BARRIER_SYNC_COMPUTE_SHADING;
        b.SyncAfter = D3D12_BARRIER_SYNC_COMPUTE_SHADING;
        b.AccessBefore = D3D12_BARRIER_ACCESS_UNORDERED_ACCESS;
        b.AccessAfter = D3D12_BARRIER_ACCESS_UNORDERED_ACCESS;
        b.pResource = resource;
        b.Offset = 0;
        b.Size = UINT64_MAX;
        barriers.push_back(b);
      }
      if (barriers.empty())
        continue;
      D3D12_BARRIER_GROUP group = {};
      group.Type = D3D12_BARRIER_TYPE_BUFFER;
      group.NumBarriers = UINT32(barriers.size());
      group.pBufferBarriers = barriers.data();
      list->Barrier(1, &group);
      continue;
    }
    const cgc_model_s::Program &program = model->programs.at(command.program);
    if (program.kind == PlanProgram::Kind::Mlir) {
      if (current != int(command.program)) {
        D3D12_SET_PROGRAM_DESC set = {};
        set.Type = D3D12_PROGRAM_TYPE_MLIR_PROGRAM;
        set.MlirProgram.ProgramIdentifier = program.id;
        set.MlirProgram.Flags = D3D12_SET_MLIR_PROGRAM_FLAG_NONE;
        list->SetProgram(&set);
        current = int(command.program);
      }
      bindings.resize(command.ranges.size());
      for (size_t i = 0; i < command.ranges.size(); ++i) {
        D3D12_MLIR_PROGRAM_BINDING &b = bindings[i];
        b = {};
        b.BindPointIndex = UINT(i);
        b.Flags = D3D12_MLIR_PROGRAM_BINDING_FLAG_NONE;
        b.Type = D3D12_MLIR_PROGRAM_BINDING_TYPE_GPU;
        b.GpuBinding.StartAddress = address(command.ranges[i]);
        b.GpuBinding.SizeInBytes = command.ranges[i].bytes;
      }
      D3D12_DISPATCH_GRAPH_DESC dispatch = {};
      dispatch.Mode = D3D12_DISPATCH_MODE_MLIR_PROGRAM;
      dispatch.MlirProgramBindings.NumBindings = UINT(bindings.size());
      dispatch.MlirProgramBindings.pBindings = bindings.data();
      list->DispatchGraph(&dispatch);
    } else {
      list->SetPipelineState(program.pipeline.Get());
      current = -1;
      for (size_t i = 0; i < command.ranges.size(); ++i)
        list->SetComputeRootUnorderedAccessView(UINT(i), address(command.ranges[i]));
      list->Dispatch(1, 1, 1);
    }
  }
  hr = list->Close();
  if (FAILED(hr))
    fail(hr == E_NOTIMPL ? CGC_STATUS_UNIMPLEMENTED : CGC_STATUS_INTERNAL,
         model->where() + "recording the command list failed (" + hresultText(hr) +
             "): " + device->messagesSince(mark));
  recorded = true;
  ++stats.recordings;
}

void cgc_context_s::submit() {
  model->device->checkNotRemoved("cgc_context_submit");
  // Record again only if a bound address changed.
  std::vector<uint64_t> addresses;
  for (const auto &t : inputs)
    addresses.push_back(t->gpu);
  for (const auto &t : outputs)
    addresses.push_back(t->gpu);
  if (!recorded || addresses != recordedAddresses) {
    // A list being re-recorded may still be queued: the queue keeps its
    // closed recording alive (docs/d3d12.md), so Reset is safe.
    record();
    recordedAddresses = std::move(addresses);
  }
  std::lock_guard<std::mutex> lock(stream->mutex);
  ID3D12CommandList *lists[] = {list.Get()};
  stream->queue->ExecuteCommandLists(1, lists);
  pendingValue = stream->signalNextLocked();
  pendingSubmitNs = nowNs();
  ++stats.runs;
}

void cgc_context_s::wait(uint32_t timeoutMs) {
  if (!pendingValue)
    return;
  stream->waitFor(pendingValue, timeoutMs, "cgc_context_wait");
  model->device->checkNotRemoved((model->where() + "the run failed").c_str());
  stats.last_run_ns = nowNs() - pendingSubmitNs;
}
