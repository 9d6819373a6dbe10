//===- gemm_driver.cpp - An example third-party driver behind cgc's DDI ---===//
//
// libcgc_driver_gemm.so shows that a driver plugs into cgc through the DDI
// alone (cgc/d3d12ddi_mlir.h): an application or cgc-compile/cgc-run loads it
// by path (CGCD3D12SelectDriver, cgc-run --driver PATH, cgc-compile --device
// PATH), asks it for its MLIR programs tier and interfaces, takes its
// declared patterns through MLIR_EXCHANGE, and hands it state objects and
// command lists. What it declares and runs (gemm_compiler.h, gemm_kernels.h):
// matrix products with a short epilogue, float32, as MLIR programs it compiles
// itself. It reports MLIR programs tier 1.0: GPU bindings only.
//
// The rest of a model comes to it as the fallback target's kernel programs
// ('CGKP' compute pipelines). For those it reuses cgc's open CPU kernel
// library (cgc::cpu::CompiledProgram, the CPU driver's program runner),
// as a vendor may reuse an open library for the layers it has no kernels of.
//
// Execution is in submission order on the queue's thread: every recorded
// command runs after the ones before it, so barriers need no work here.
//
//===----------------------------------------------------------------------===//

#include "gemm_compiler.h"
#include "gemm_kernels.h"

#include "cgc/container.h"
#include "cgc/d3d12ddi_mlir.h"
#include "ddi_bind_points.h"
#include "program.h"

#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

using namespace cgc;

namespace {

/// An MLIR program this driver compiled.
struct Program {
  KernelProgram kernels;
  uint64_t temporaryBytes = 0;
  uint64_t serial = 0;
};

struct StateObject {
  std::map<std::wstring, std::shared_ptr<Program>> programs;
};

/// A compute pipeline: a fallback kernel program on the CPU kernels.
struct Pipeline {
  std::shared_ptr<cpu::CompiledProgram> program;
};

struct Device {
  D3D12DDI_RUNTIME_CALLBACKS_CGC callbacks;
  D3D12DDI_HRTDEVICE rt;
  std::mutex mutex;
  std::map<uint64_t, std::weak_ptr<Program>> programs; // by identifier
  uint64_t nextSerial = 1;
  /// Live heaps by first byte: [begin, end).
  std::map<uint64_t, uint64_t> heaps;
  cpu::ThreadPool pool{1};

  void message(D3D12DDI_MESSAGE_SEVERITY_CGC severity, const std::string &text) {
    if (callbacks.pfnMessageCb)
      callbacks.pfnMessageCb(rt, severity, ("gemm driver: " + text).c_str());
  }
  /// True when [address, address + bytes) lies inside one live heap.
  bool inHeap(uint64_t address, uint64_t bytes) {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = heaps.upper_bound(address);
    if (it == heaps.begin())
      return false;
    --it;
    return address >= it->first && bytes <= it->second - address;
  }
};

struct Recording {
  std::vector<std::function<void()>> commands;
};

struct CommandList {
  CommandList(Device *device, D3D12DDI_HRTCOMMANDLIST rt) : device(device), rt(rt) {}
  Device *device;
  D3D12DDI_HRTCOMMANDLIST rt;
  std::unique_ptr<Recording> recording = std::make_unique<Recording>();
  std::shared_ptr<Program> program;
  std::shared_ptr<cpu::CompiledProgram> pipeline;
  std::vector<uint64_t> rootViews;
  void fail(const std::string &text) {
    device->callbacks.pfnSetCommandListErrorCb(rt, E_INVALIDARG,
                                               ("gemm driver: " + text).c_str());
  }
};

template <class T> T *get(void *p) { return static_cast<T *>(p); }

std::string narrow(LPCWSTR name) {
  std::string out;
  for (const wchar_t *p = name; p && *p; ++p)
    out += *p < 128 ? char(*p) : '?';
  return out;
}

bool isInterface(const GUID &guid, const Guid &known) {
  return std::memcmp(&guid, &known, sizeof(Guid)) == 0;
}

HRESULT getCaps(D3D12DDI_HADAPTER, const D3D12DDIARG_GETCAPS *args) {
  if (!args || !args->pData)
    return E_INVALIDARG;
  switch (args->Type) {
  case D3D12DDI_CAPS_TYPE_MLIR:
    if (args->DataSize < sizeof(D3D12DDI_OPTIONS_DATA_MLIR))
      return E_INVALIDARG;
    static_cast<D3D12DDI_OPTIONS_DATA_MLIR *>(args->pData)->MlirProgramsTier =
        D3D12DDI_MLIR_PROGRAMS_TIER_1_0;
    return S_OK;
  case D3D12DDICAPS_TYPE_MLIR_EXCHANGE_0119: {
    auto *ex = static_cast<D3D12DDI_MLIR_EXCHANGE_0119 *>(args->pData);
    if (!ex->OutputDataSizeInBytes)
      return E_INVALIDARG;
    Guid guid;
    std::memcpy(&guid, &ex->MlirInterface, sizeof(guid));
    size_t size = *ex->OutputDataSizeInBytes;
    int32_t hr = gemm::exchange(guid, ex->pInputData, ex->InputDataSizeInBytes,
                                ex->pOutputData, &size);
    *ex->OutputDataSizeInBytes = size;
    return HRESULT(hr);
  }
  case D3D12DDICAPS_TYPE_MLIR_INTERFACE_SUPPORT_0119: {
    auto *s = static_cast<D3D12DDI_MLIR_INTERFACE_SUPPORT_0119 *>(args->pData);
    for (UINT i = 0; i < s->NumMlirInterfaces; ++i) {
      const GUID &g = s->pMlirInterfacesRequested[i];
      s->pMlirInterfacesSupported[i] =
          isInterface(g, interfaces::kSubgraphPartition) ||
          isInterface(g, interfaces::kSubgraphDeclarationRequest) ||
          isInterface(g, interfaces::kSubgraphDeclaration) ||
          isInterface(g, interfaces::kSubgraphSpecializationRequest) ||
          isInterface(g, interfaces::kSubgraphSpecialization);
    }
    return S_OK;
  }
  }
  return E_INVALIDARG;
}

HRESULT createDevice(D3D12DDI_HADAPTER, const D3D12DDIARG_CREATEDEVICE_CGC *args,
                     D3D12DDI_HDEVICE *out) {
  // This driver has no settings of its own: it runs one thread.
  if (args->pDriverOptions && *args->pDriverOptions) {
    if (args->pCallbacks && args->pCallbacks->pfnMessageCb)
      args->pCallbacks->pfnMessageCb(
          args->hRTDevice, D3D12DDI_MESSAGE_SEVERITY_ERROR_CGC,
          (std::string("CreateDevice: the gemm driver takes no driver options, got '") +
           args->pDriverOptions + "'")
              .c_str());
    return E_INVALIDARG;
  }
  auto *device = new Device();
  device->callbacks = *args->pCallbacks;
  device->rt = args->hRTDevice;
  out->pDrvPrivate = device;
  return S_OK;
}
void closeAdapter(D3D12DDI_HADAPTER) {}
void destroyDevice(D3D12DDI_HDEVICE h) { delete get<Device>(h.pDrvPrivate); }

struct Heap {
  void *owned; // null for wrapped memory
  uint64_t begin;
};

HRESULT createHeap(D3D12DDI_HDEVICE h, const D3D12DDIARG_CREATEHEAP_CGC *args,
                   D3D12DDI_HHEAP *out, D3D12DDI_HEAP_MEMORY_CGC *memory) {
  auto *device = get<Device>(h.pDrvPrivate);
  void *p = const_cast<void *>(args->pExistingAddress);
  void *owned = nullptr;
  if (!p) {
    uint64_t align = std::max<uint64_t>(args->Alignment, 64);
    uint64_t bytes = (args->SizeInBytes + align - 1) / align * align;
    owned = p = std::aligned_alloc(align, bytes);
    if (!p)
      return E_OUTOFMEMORY;
    std::memset(p, 0, bytes);
  }
  uint64_t begin = reinterpret_cast<uint64_t>(p);
  memory->pCPUAddress = p;
  memory->GPUVirtualAddress = begin;
  {
    std::lock_guard<std::mutex> lock(device->mutex);
    device->heaps[begin] = begin + args->SizeInBytes;
  }
  out->pDrvPrivate = new Heap{owned, begin};
  return S_OK;
}
void destroyHeap(D3D12DDI_HDEVICE h, D3D12DDI_HHEAP heap) {
  auto *device = get<Device>(h.pDrvPrivate);
  auto *hp = get<Heap>(heap.pDrvPrivate);
  {
    std::lock_guard<std::mutex> lock(device->mutex);
    device->heaps.erase(hp->begin);
  }
  std::free(hp->owned);
  delete hp;
}

HRESULT compile(Device *device, const D3D12DDIARG_CREATE_STATE_OBJECT_0054 *args,
                StateObject &so) {
  for (UINT i = 0; i < args->NumSubobjects; ++i) {
    if (args->pSubobjects[i].Type != D3D12DDI_STATE_SUBOBJECT_TYPE_MLIR_PROGRAM)
      continue; // cached blobs: this driver has no precompiled form
    auto *desc = static_cast<const D3D12DDI_MLIR_PROGRAM_DESC_0119 *>(args->pSubobjects[i].pDesc);
    std::string name = narrow(desc->ProgramName), error;
    ContainerReader reader;
    if (!reader.open(desc->pBytecode, desc->BytecodeSizeInBytes, error)) {
      device->message(D3D12DDI_MESSAGE_SEVERITY_ERROR_CGC,
                      "MLIR program '" + name + "': " + error);
      return E_INVALIDARG;
    }
    auto mlir = reader.find(parts::kMLIR);
    Guid iface;
    ByteView bytecode;
    if (mlir.size() != 1 || !ContainerReader::splitMLIRPart(*mlir[0], iface, bytecode, error) ||
        iface != interfaces::kSubgraphPartition) {
      device->message(D3D12DDI_MESSAGE_SEVERITY_ERROR_CGC,
                      "MLIR program '" + name + "': no CGC_SUBGRAPH_PARTITION part" +
                          (error.empty() ? "" : ": " + error));
      return E_INVALIDARG;
    }
    auto program = std::make_shared<Program>();
    if (!gemm::compilePartition(bytecode.data, bytecode.size, program->kernels, error)) {
      device->message(D3D12DDI_MESSAGE_SEVERITY_ERROR_CGC,
                      "MLIR program '" + name + "': " + error);
      return E_INVALIDARG;
    }
    std::vector<uint64_t> offsets;
    program->temporaryBytes = gemm::temporaryBytes(program->kernels, offsets);
    std::lock_guard<std::mutex> lock(device->mutex);
    program->serial = device->nextSerial++;
    device->programs[program->serial] = program;
    so.programs[desc->ProgramName] = program;
  }
  return S_OK;
}

HRESULT createStateObject(D3D12DDI_HDEVICE h, const D3D12DDIARG_CREATE_STATE_OBJECT_0054 *args,
                          D3D12DDI_HSTATEOBJECT *out) {
  auto so = std::make_unique<StateObject>();
  HRESULT hr = compile(get<Device>(h.pDrvPrivate), args, *so);
  if (SUCCEEDED(hr))
    out->pDrvPrivate = so.release();
  return hr;
}
HRESULT addToStateObject(D3D12DDI_HDEVICE h, const D3D12DDIARG_CREATE_STATE_OBJECT_0054 *args,
                         D3D12DDI_HSTATEOBJECT existing, D3D12DDI_HSTATEOBJECT *out) {
  auto so = std::make_unique<StateObject>();
  HRESULT hr = compile(get<Device>(h.pDrvPrivate), args, *so);
  if (FAILED(hr))
    return hr;
  for (auto &[name, p] : get<StateObject>(existing.pDrvPrivate)->programs)
    so->programs[name] = p;
  out->pDrvPrivate = so.release();
  return S_OK;
}
void destroyStateObject(D3D12DDI_HDEVICE, D3D12DDI_HSTATEOBJECT h) {
  delete get<StateObject>(h.pDrvPrivate);
}
HRESULT getProgramIdentifier(D3D12DDI_HDEVICE, D3D12DDI_HSTATEOBJECT h, LPCWSTR name,
                             D3D12DDI_PROGRAM_IDENTIFIER_0108 *id) {
  auto *so = get<StateObject>(h.pDrvPrivate);
  auto it = so->programs.find(name);
  if (it == so->programs.end())
    return E_INVALIDARG;
  *id = {{0x6E33, it->second->serial, 0, 0}};
  return S_OK;
}

/// DDI 1.2: the bind points as this driver compiled the Partition IR, which
/// the runtime checks the container's 'CGBP' metadata against.
HRESULT getProgramBindPoints(D3D12DDI_HDEVICE, D3D12DDI_HSTATEOBJECT so, LPCWSTR name,
                             UINT *count, D3D12DDI_PROGRAM_BIND_POINT_CGC *points) {
  auto *object = get<StateObject>(so.pDrvPrivate);
  if (!object || !name || !count)
    return E_INVALIDARG;
  auto it = object->programs.find(name);
  if (it == object->programs.end())
    return E_INVALIDARG;
  return cpu::describeBindPoints(it->second->kernels, count, points);
}

HRESULT createPso(D3D12DDI_HDEVICE h, const D3D12DDIARG_CREATE_COMPUTE_PIPELINE_STATE_CGC *args,
                  D3D12DDI_HPIPELINESTATE *out) {
  auto *device = get<Device>(h.pDrvPrivate);
  std::string error;
  ContainerReader reader;
  if (!reader.open(args->pComputeShader, args->ComputeShaderSizeInBytes, error)) {
    device->message(D3D12DDI_MESSAGE_SEVERITY_ERROR_CGC, "compute pipeline: " + error);
    return E_INVALIDARG;
  }
  auto part = reader.find(parts::kKernelProgram);
  KernelProgram program;
  if (part.size() != 1 || !deserializeKernelProgram(part[0]->data.str(), program, error)) {
    device->message(D3D12DDI_MESSAGE_SEVERITY_ERROR_CGC,
                    "compute pipeline: no valid 'CGKP' kernel program" +
                        (error.empty() ? "" : ": " + error));
    return E_INVALIDARG;
  }
  std::shared_ptr<cpu::CompiledProgram> compiled =
      cpu::CompiledProgram::create(std::move(program), error);
  if (!compiled) {
    device->message(D3D12DDI_MESSAGE_SEVERITY_ERROR_CGC, "compute pipeline: " + error);
    return E_INVALIDARG;
  }
  out->pDrvPrivate = new Pipeline{std::move(compiled)};
  return S_OK;
}
void destroyPso(D3D12DDI_HDEVICE, D3D12DDI_HPIPELINESTATE h) { delete get<Pipeline>(h.pDrvPrivate); }

HRESULT createList(D3D12DDI_HDEVICE h, D3D12DDI_HRTCOMMANDLIST rt, D3D12DDI_HCOMMANDLIST *out) {
  out->pDrvPrivate = new CommandList(get<Device>(h.pDrvPrivate), rt);
  return S_OK;
}
void destroyList(D3D12DDI_HDEVICE, D3D12DDI_HCOMMANDLIST h) { delete get<CommandList>(h.pDrvPrivate); }
HRESULT createQueue(D3D12DDI_HDEVICE h, D3D12DDI_HCOMMANDQUEUE *out) {
  out->pDrvPrivate = h.pDrvPrivate;
  return S_OK;
}
void destroyQueue(D3D12DDI_HDEVICE, D3D12DDI_HCOMMANDQUEUE) {}

void reset(D3D12DDI_HCOMMANDLIST h) {
  auto *cl = get<CommandList>(h.pDrvPrivate);
  cl->recording = std::make_unique<Recording>();
  cl->program.reset();
  cl->pipeline.reset();
  cl->rootViews.clear();
}
HRESULT close(D3D12DDI_HCOMMANDLIST h, D3D12DDI_HRECORDING_CGC *out) {
  auto *cl = get<CommandList>(h.pDrvPrivate);
  out->pDrvPrivate = cl->recording.release();
  cl->recording = std::make_unique<Recording>();
  return S_OK;
}
void destroyRecording(D3D12DDI_HRECORDING_CGC h) { delete get<Recording>(h.pDrvPrivate); }

void setProgram(D3D12DDI_HCOMMANDLIST h, const D3D12DDI_SET_PROGRAM_DESC_0108 *desc) {
  auto *cl = get<CommandList>(h.pDrvPrivate);
  std::lock_guard<std::mutex> lock(cl->device->mutex);
  auto it = cl->device->programs.find(desc->MlirProgram.ProgramIdentifier.OpaqueData[1]);
  cl->program = it == cl->device->programs.end() ? nullptr : it->second.lock();
  if (!cl->program || desc->MlirProgram.ProgramIdentifier.OpaqueData[0] != 0x6E33)
    cl->fail("SetProgram: the program identifier names no live program of this driver");
}

void dispatchGraph(D3D12DDI_HCOMMANDLIST h, const D3D12DDI_DISPATCH_GRAPH_DESC_0108 *desc) {
  auto *cl = get<CommandList>(h.pDrvPrivate);
  if (!cl->program)
    return cl->fail("DispatchGraph: no program is set");
  std::shared_ptr<Program> program = cl->program;
  const auto &bindings = program->kernels.bindings;
  const auto &b = desc->MlirProgramBindings;
  if (b.NumBindings != bindings.size() || (b.NumBindings && !b.pBindings))
    return cl->fail("DispatchGraph: " + std::to_string(b.NumBindings) +
                    " bindings for a program with " + std::to_string(bindings.size()) +
                    " bind points");
  std::vector<uint8_t *> at(bindings.size(), nullptr);
  for (UINT i = 0; i < b.NumBindings; ++i) {
    const auto &binding = b.pBindings[i];
    if (binding.BindPointIndex >= at.size() || at[binding.BindPointIndex])
      return cl->fail("DispatchGraph: binding " + std::to_string(i) +
                      " has a bad or repeated bind point index");
    const KernelProgram::Binding &point = bindings[binding.BindPointIndex];
    if (binding.Type != D3D12DDI_MLIR_PROGRAM_BINDING_TYPE_GPU_0119)
      return cl->fail("DispatchGraph: bind point " + std::to_string(binding.BindPointIndex) +
                      " '" + point.name + "' is a CPU binding; this driver is MLIR programs "
                      "tier 1.0 (GPU bindings only)");
    uint64_t address = binding.GpuBinding.StartAddress;
    if (!cl->device->inHeap(address, point.bytes))
      return cl->fail("DispatchGraph: bind point " + std::to_string(binding.BindPointIndex) +
                      " '" + point.name + "': " + std::to_string(point.bytes) +
                      " bytes at the bound address are not inside one resource");
    at[binding.BindPointIndex] = reinterpret_cast<uint8_t *>(address);
  }
  cl->recording->commands.push_back([program, at] {
    std::unique_ptr<uint8_t, void (*)(void *)> temporaries(
        program->temporaryBytes
            ? static_cast<uint8_t *>(std::aligned_alloc(64, (program->temporaryBytes + 63) / 64 * 64))
            : nullptr,
        std::free);
    if (program->temporaryBytes && !temporaries)
      throw std::bad_alloc();
    gemm::run(program->kernels, at, temporaries.get());
  });
}

void setPso(D3D12DDI_HCOMMANDLIST h, D3D12DDI_HPIPELINESTATE pso) {
  auto *cl = get<CommandList>(h.pDrvPrivate);
  cl->pipeline = pso.pDrvPrivate ? get<Pipeline>(pso.pDrvPrivate)->program : nullptr;
  cl->rootViews.clear();
}
void setRootUav(D3D12DDI_HCOMMANDLIST h, UINT index, uint64_t address) {
  auto *cl = get<CommandList>(h.pDrvPrivate);
  if (index >= 4096)
    return cl->fail("SetComputeRootUnorderedAccessView: root parameter index out of range");
  if (cl->rootViews.size() <= index)
    cl->rootViews.resize(index + 1, 0);
  cl->rootViews[index] = address;
}
void dispatch(D3D12DDI_HCOMMANDLIST h, UINT, UINT, UINT) {
  auto *cl = get<CommandList>(h.pDrvPrivate);
  if (!cl->pipeline)
    return cl->fail("Dispatch: no pipeline state is set");
  std::shared_ptr<cpu::CompiledProgram> program = cl->pipeline;
  const auto &bindings = program->program().bindings;
  if (cl->rootViews.size() < bindings.size())
    return cl->fail("Dispatch: the kernel program has " + std::to_string(bindings.size()) +
                    " bindings, " + std::to_string(cl->rootViews.size()) + " are set");
  std::vector<uint8_t *> at;
  for (size_t i = 0; i < bindings.size(); ++i) {
    if (!cl->device->inHeap(cl->rootViews[i], bindings[i].bytes))
      return cl->fail("Dispatch: binding " + std::to_string(i) + " '" + bindings[i].name +
                      "' is not inside one resource");
    at.push_back(reinterpret_cast<uint8_t *>(cl->rootViews[i]));
  }
  Device *device = cl->device;
  cl->recording->commands.push_back([program, at, device] { program->run(at, device->pool); });
}
void barrier(D3D12DDI_HCOMMANDLIST, UINT, const D3D12DDI_BARRIER_CGC *) {
  // Commands run one after another in recorded order.
}
void copy(D3D12DDI_HCOMMANDLIST h, uint64_t dst, uint64_t src, UINT64 n) {
  auto *cl = get<CommandList>(h.pDrvPrivate);
  if (!cl->device->inHeap(dst, n) || !cl->device->inHeap(src, n))
    return cl->fail("CopyBufferRegion: a range is not inside one resource");
  cl->recording->commands.push_back([dst, src, n] {
    std::memmove(reinterpret_cast<void *>(dst), reinterpret_cast<const void *>(src), n);
  });
}
HRESULT execute(D3D12DDI_HCOMMANDQUEUE q, UINT n, const D3D12DDI_HRECORDING_CGC *recordings) {
  auto *device = get<Device>(q.pDrvPrivate);
  try {
    for (UINT i = 0; i < n; ++i)
      for (const auto &command : get<Recording>(recordings[i].pDrvPrivate)->commands)
        command();
  } catch (const std::exception &e) {
    device->message(D3D12DDI_MESSAGE_SEVERITY_ERROR_CGC,
                    std::string("execution failed: ") + e.what());
    return E_FAIL;
  }
  return S_OK;
}

const D3D12DDI_DEVICE_FUNCS_CORE_CGC kDevice = {
    destroyDevice, createHeap,  destroyHeap, createStateObject, addToStateObject,
    destroyStateObject, getProgramIdentifier, createPso, destroyPso, createList,
    destroyList, createQueue, destroyQueue,
    /*pfnGetCachedMlirProgramStatusCgc=*/nullptr, // no precompiled form
    getProgramBindPoints};
const D3D12DDI_COMMAND_LIST_FUNCS_CGC kList = {reset,  close,      destroyRecording, setProgram,
                                               dispatchGraph, setPso, setRootUav, dispatch,
                                               barrier, copy};
const D3D12DDI_COMMAND_QUEUE_FUNCS_CGC kQueue = {execute};
const D3D12DDI_ADAPTER_FUNCS_CGC kAdapter = {CGC_D3D12DDI_VERSION,
                                             sizeof(D3D12DDI_ADAPTER_FUNCS_CGC),
                                             "cgc example gemm driver (matmul + epilogue, "
                                             "MLIR programs tier 1.0)",
                                             getCaps,
                                             createDevice,
                                             closeAdapter,
                                             &kDevice,
                                             &kList,
                                             &kQueue,
                                             /*pfnGetCompilerPropertiesCgc: no offline
                                                compiler, no precompiled databases*/
                                             nullptr};

} // namespace

extern "C" __attribute__((visibility("default"))) HRESULT
CgcD3D12DDIOpenAdapter(UINT32 version, const D3D12DDI_ADAPTER_FUNCS_CGC **funcs,
                       D3D12DDI_HADAPTER *adapter) {
  if ((version >> 16) != CGC_D3D12DDI_VERSION_MAJOR)
    return E_NOINTERFACE;
  *funcs = &kAdapter;
  adapter->pDrvPrivate = nullptr;
  return S_OK;
}
