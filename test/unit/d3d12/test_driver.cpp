//===- test_driver.cpp - A TEST DOUBLE driver for the API-layer tests -----===//
//
// THIS IS A TEST DOUBLE, not a driver anyone runs models on. It implements
// the DDI so the API layer and its debug layer can be tested independently
// of the CPU driver's JIT and kernel library:
//   - it "compiles" a CGC_SUBGRAPH_PARTITION container by reading its 'CGBP'
//     bind points; executing such a program copies the bytes of bind point 0
//     into the last bind point (as many bytes as the last bind point has);
//   - MLIR_EXCHANGE answers CGC_SUBGRAPH_DECLARATION_REQUEST with a container
//     whose 'CGRS' part echoes the request's input size, following the
//     size-query protocol; other interfaces are DXGI_ERROR_UNSUPPORTED;
//   - it counts the DDI calls it receives (cgcTestDriverCounters) so tests
//     can check that the runtime rejected something before calling it;
//   - its adapter family is "cgc-test-copy", compiled for offline by the
//     second compiler plugin (test_plugin.c): at CreateStateObject it looks
//     each program up in the registered precompiled databases under
//     "cgc-test-copy/<FNV-1a of the container>" and, on a hit, takes the
//     bind points from the value ('TCPY', the FNV, the 'CGBP' part) instead
//     of reading the container (counted as databaseHits; a value made from
//     another container is databaseStale);
//   - TEST-ONLY knobs (cgcTestDriverKnobs, set by tests through dlsym) make
//     it report another MLIR programs tier (read by the runtime when a
//     device is created: set the knob, then create the device) or answer a
//     too-small exchange buffer with S_OK like a sloppy driver.
// It does not validate bindings beyond what it needs not to crash.
//
//===----------------------------------------------------------------------===//

#include "cgc/bind_points.h"
#include "cgc/container.h"

#include "cgc/d3d12ddi_mlir.h"

#include "TestDriver.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

using namespace cgc;

namespace {

CgcTestDriverCounters gCounters;
CgcTestDriverKnobs gKnobs;

struct Program {
  std::vector<BindPoint> bindPoints;
  uint64_t serial;
};
struct StateObject {
  std::map<std::wstring, std::shared_ptr<Program>> programs;
};
struct Device {
  D3D12DDI_RUNTIME_CALLBACKS_CGC callbacks;
  D3D12DDI_HRTDEVICE rt;
  std::mutex mutex;
  std::map<uint64_t, std::weak_ptr<Program>> programs;
  uint64_t next = 1;
};
struct Op {
  uint8_t *src;
  uint8_t *dst;
  uint64_t bytes;
};
struct Recording {
  std::vector<Op> ops;
  std::vector<std::unique_ptr<uint8_t[]>> cpu;
};
struct CommandList {
  Device *device;
  D3D12DDI_HRTCOMMANDLIST rt;
  std::unique_ptr<Recording> recording = std::make_unique<Recording>();
  std::shared_ptr<Program> program;
  void fail(const char *text) {
    device->callbacks.pfnSetCommandListErrorCb(rt, E_INVALIDARG, text);
  }
};

template <class T> T *get(void *p) { return static_cast<T *>(p); }

HRESULT getCaps(D3D12DDI_HADAPTER, const D3D12DDIARG_GETCAPS *args) {
  switch (args->Type) {
  case D3D12DDI_CAPS_TYPE_MLIR:
    static_cast<D3D12DDI_OPTIONS_DATA_MLIR *>(args->pData)->MlirProgramsTier =
        D3D12DDI_MLIR_PROGRAMS_TIER(gKnobs.tier.load());
    return S_OK;
  case D3D12DDICAPS_TYPE_MLIR_EXCHANGE_0119: {
    ++gCounters.exchanges;
    auto *ex = static_cast<D3D12DDI_MLIR_EXCHANGE_0119 *>(args->pData);
    Guid guid;
    std::memcpy(&guid, &ex->MlirInterface, sizeof(guid));
    if (guid != interfaces::kSubgraphDeclarationRequest)
      return DXGI_ERROR_UNSUPPORTED;
    ContainerWriter writer;
    writer.addPart(parts::kResponse, "{\"input_bytes\": " + std::to_string(ex->InputDataSizeInBytes) + "}");
    std::vector<uint8_t> answer = writer.finish();
    if (!ex->pOutputData || *ex->OutputDataSizeInBytes < answer.size()) {
      bool query = !ex->pOutputData;
      *ex->OutputDataSizeInBytes = answer.size();
      // A sloppy driver (gKnobs.sloppyExchange) answers a short buffer with
      // S_OK: the runtime must still report E_NOT_SUFFICIENT_BUFFER.
      return query || gKnobs.sloppyExchange ? S_OK : E_NOT_SUFFICIENT_BUFFER;
    }
    std::memcpy(ex->pOutputData, answer.data(), answer.size());
    *ex->OutputDataSizeInBytes = answer.size();
    return S_OK;
  }
  case D3D12DDICAPS_TYPE_MLIR_INTERFACE_SUPPORT_0119: {
    ++gCounters.interfaceQueries;
    auto *s = static_cast<D3D12DDI_MLIR_INTERFACE_SUPPORT_0119 *>(args->pData);
    for (UINT i = 0; i < s->NumMlirInterfaces; ++i) {
      Guid guid;
      std::memcpy(&guid, &s->pMlirInterfacesRequested[i], sizeof(guid));
      s->pMlirInterfacesSupported[i] = guid == interfaces::kSubgraphPartition ||
                                       guid == interfaces::kSubgraphDeclarationRequest ||
                                       guid == interfaces::kSubgraphDeclaration;
    }
    return S_OK;
  }
  }
  return E_INVALIDARG;
}

HRESULT getCompilerProperties(D3D12DDI_HADAPTER, D3D12DDI_COMPILER_PROPERTIES_CGC *p) {
  *p = {};
  const char family[] = "cgc-test-copy";
  for (size_t i = 0; family[i]; ++i)
    p->szAdapterFamily[i] = WCHAR(family[i]);
  p->MinimumABISupportVersion = p->MaximumABISupportVersion = 1;
  p->CompilerVersion = 0x0001000000000000ull;
  return S_OK;
}

HRESULT createDevice(D3D12DDI_HADAPTER, const D3D12DDIARG_CREATEDEVICE_CGC *args,
                     D3D12DDI_HDEVICE *out) {
  out->pDrvPrivate = new Device{*args->pCallbacks, args->hRTDevice, {}, {}, 1};
  return S_OK;
}
void closeAdapter(D3D12DDI_HADAPTER) {}
void destroyDevice(D3D12DDI_HDEVICE h) { delete get<Device>(h.pDrvPrivate); }

HRESULT createHeap(D3D12DDI_HDEVICE, const D3D12DDIARG_CREATEHEAP_CGC *args, D3D12DDI_HHEAP *out,
                   D3D12DDI_HEAP_MEMORY_CGC *memory) {
  void *p = args->pExistingAddress ? const_cast<void *>(args->pExistingAddress)
                                   : std::calloc(1, args->SizeInBytes);
  memory->pCPUAddress = p;
  memory->GPUVirtualAddress = reinterpret_cast<uint64_t>(p);
  out->pDrvPrivate = args->pExistingAddress ? nullptr : p;
  return S_OK;
}
void destroyHeap(D3D12DDI_HDEVICE, D3D12DDI_HHEAP h) { std::free(h.pDrvPrivate); }

uint64_t fnv1a(const void *data, size_t size) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < size; ++i)
    h = (h ^ static_cast<const uint8_t *>(data)[i]) * 0x100000001b3ull;
  return h;
}

/// The bind points the test plugin stored for this container, if a
/// registered database holds them.
bool fromDatabase(Device *device, const D3D12DDI_MLIR_PROGRAM_DESC_0119 *desc,
                  std::vector<BindPoint> &bindPoints) {
  auto find = device->callbacks.pfnFindPrecompiledValueCgc;
  if (!find)
    return false;
  uint64_t hash = fnv1a(desc->pBytecode, desc->BytecodeSizeInBytes);
  char key[64];
  std::snprintf(key, sizeof key, "cgc-test-copy/%016llx", (unsigned long long)hash);
  D3D12DDI_COMPILER_CACHE_VALUE_KEY valueKey = {key, UINT(std::strlen(key))};
  D3D12DDI_COMPILER_CACHE_TYPED_VALUE value = {D3D12DDI_COMPILER_CACHE_VALUE_TYPE_OBJECT_CODE,
                                               {nullptr, 0}};
  if (find(device->rt, &valueKey, &value, 1) != S_OK || value.Value.ValueSize < 12)
    return false;
  std::vector<uint8_t> code(value.Value.ValueSize);
  value.Value.pValue = code.data();
  if (find(device->rt, &valueKey, &value, 1) != S_OK)
    return false;
  uint64_t madeFrom = 0;
  std::memcpy(&madeFrom, code.data() + 4, 8);
  std::string error;
  if (std::memcmp(code.data(), "TCPY", 4) || madeFrom != hash ||
      !deserializeBindPoints(std::string(code.begin() + 12, code.end()), bindPoints, error)) {
    ++gCounters.databaseStale;
    return false;
  }
  ++gCounters.databaseHits;
  return true;
}

HRESULT compile(Device *device, const D3D12DDIARG_CREATE_STATE_OBJECT_0054 *args, StateObject &so) {
  ++gCounters.stateObjects;
  for (UINT i = 0; i < args->NumSubobjects; ++i) {
    auto *desc = static_cast<const D3D12DDI_MLIR_PROGRAM_DESC_0119 *>(args->pSubobjects[i].pDesc);
    auto program = std::make_shared<Program>();
    if (!fromDatabase(device, desc, program->bindPoints)) {
      ContainerReader reader;
      std::string error;
      if (!reader.open(desc->pBytecode, desc->BytecodeSizeInBytes, error))
        return E_INVALIDARG;
      auto bp = reader.find(parts::kBindPoints);
      if (bp.size() != 1 || !deserializeBindPoints(bp[0]->data.str(), program->bindPoints, error))
        return E_INVALIDARG;
    }
    if (program->bindPoints.empty())
      return E_INVALIDARG;
    std::lock_guard<std::mutex> lock(device->mutex);
    program->serial = device->next++;
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
  *id = {{0x7E57, it->second->serial, 0, 0}};
  return S_OK;
}
HRESULT createPso(D3D12DDI_HDEVICE, const D3D12DDIARG_CREATE_COMPUTE_PIPELINE_STATE_CGC *,
                  D3D12DDI_HPIPELINESTATE *) {
  return E_NOTIMPL; // the double has no compute path
}
void destroyPso(D3D12DDI_HDEVICE, D3D12DDI_HPIPELINESTATE) {}
HRESULT createList(D3D12DDI_HDEVICE h, D3D12DDI_HRTCOMMANDLIST rt, D3D12DDI_HCOMMANDLIST *out) {
  out->pDrvPrivate = new CommandList{get<Device>(h.pDrvPrivate), rt};
  return S_OK;
}
void destroyList(D3D12DDI_HDEVICE, D3D12DDI_HCOMMANDLIST h) { delete get<CommandList>(h.pDrvPrivate); }
HRESULT createQueue(D3D12DDI_HDEVICE, D3D12DDI_HCOMMANDQUEUE *out) {
  out->pDrvPrivate = &gCounters;
  return S_OK;
}
void destroyQueue(D3D12DDI_HDEVICE, D3D12DDI_HCOMMANDQUEUE) {}

void reset(D3D12DDI_HCOMMANDLIST h) {
  auto *cl = get<CommandList>(h.pDrvPrivate);
  cl->recording = std::make_unique<Recording>();
  cl->program.reset();
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
  if (!cl->program)
    cl->fail("test double: unknown program identifier");
}
void dispatchGraph(D3D12DDI_HCOMMANDLIST h, const D3D12DDI_DISPATCH_GRAPH_DESC_0108 *desc) {
  auto *cl = get<CommandList>(h.pDrvPrivate);
  ++gCounters.dispatchGraphs;
  if (!cl->program)
    return cl->fail("test double: no program");
  const auto &bps = cl->program->bindPoints;
  const auto &b = desc->MlirProgramBindings;
  std::vector<uint8_t *> at(bps.size(), nullptr);
  for (UINT i = 0; i < b.NumBindings; ++i) {
    const auto &binding = b.pBindings[i];
    if (binding.BindPointIndex >= bps.size())
      return cl->fail("test double: bad index");
    if (binding.Type == D3D12DDI_MLIR_PROGRAM_BINDING_TYPE_CPU_0119) {
      if (!binding.CpuBinding.pData)
        return cl->fail("test double: null CPU data");
      auto copy = std::make_unique<uint8_t[]>(binding.CpuBinding.DataSizeInBytes);
      std::memcpy(copy.get(), binding.CpuBinding.pData, binding.CpuBinding.DataSizeInBytes);
      at[binding.BindPointIndex] = copy.get();
      cl->recording->cpu.push_back(std::move(copy));
    } else {
      at[binding.BindPointIndex] = reinterpret_cast<uint8_t *>(binding.GpuBinding.StartAddress);
    }
  }
  for (uint8_t *p : at)
    if (!p)
      return cl->fail("test double: a bind point is not bound");
  cl->recording->ops.push_back({at.front(), at.back(), bps.back().bytes});
}
void setPso(D3D12DDI_HCOMMANDLIST, D3D12DDI_HPIPELINESTATE) {}
void setRootUav(D3D12DDI_HCOMMANDLIST, UINT, uint64_t) {}
void dispatch(D3D12DDI_HCOMMANDLIST h, UINT, UINT, UINT) {
  get<CommandList>(h.pDrvPrivate)->fail("test double: no compute path");
}
void barrier(D3D12DDI_HCOMMANDLIST, UINT, const D3D12DDI_BARRIER_CGC *) {}
void copy(D3D12DDI_HCOMMANDLIST h, uint64_t dst, uint64_t src, UINT64 n) {
  get<CommandList>(h.pDrvPrivate)->recording->ops.push_back(
      {reinterpret_cast<uint8_t *>(src), reinterpret_cast<uint8_t *>(dst), n});
}
HRESULT execute(D3D12DDI_HCOMMANDQUEUE, UINT n, const D3D12DDI_HRECORDING_CGC *recordings) {
  ++gCounters.executions;
  for (UINT i = 0; i < n; ++i)
    for (const Op &op : get<Recording>(recordings[i].pDrvPrivate)->ops)
      std::memmove(op.dst, op.src, op.bytes);
  return S_OK;
}

const D3D12DDI_DEVICE_FUNCS_CORE_CGC kDevice = {
    destroyDevice, createHeap,  destroyHeap, createStateObject, addToStateObject,
    destroyStateObject, getProgramIdentifier, createPso, destroyPso, createList,
    destroyList, createQueue, destroyQueue,
    /*pfnGetCachedMlirProgramStatusCgc=*/nullptr, // takes no cached blobs
    // Its programs are read from 'CGBP' itself: nothing to check it against.
    /*pfnGetProgramBindPointsCgc=*/nullptr};
const D3D12DDI_COMMAND_LIST_FUNCS_CGC kList = {reset,  close,      destroyRecording, setProgram,
                                               dispatchGraph, setPso, setRootUav, dispatch,
                                               barrier, copy};
const D3D12DDI_COMMAND_QUEUE_FUNCS_CGC kQueue = {execute};
const D3D12DDI_ADAPTER_FUNCS_CGC kAdapter = {CGC_D3D12DDI_VERSION,
                                             sizeof(D3D12DDI_ADAPTER_FUNCS_CGC),
                                             "cgc TEST DOUBLE driver",
                                             getCaps,
                                             createDevice,
                                             closeAdapter,
                                             &kDevice,
                                             &kList,
                                             &kQueue,
                                             getCompilerProperties};

} // namespace

extern "C" __attribute__((visibility("default"))) CgcTestDriverCounters *cgcTestDriverCounters() {
  return &gCounters;
}

extern "C" __attribute__((visibility("default"))) CgcTestDriverKnobs *cgcTestDriverKnobs() {
  return &gKnobs;
}

extern "C" __attribute__((visibility("default"))) HRESULT
CgcD3D12DDIOpenAdapter(UINT32 version, const D3D12DDI_ADAPTER_FUNCS_CGC **funcs,
                       D3D12DDI_HADAPTER *adapter) {
  if ((version >> 16) != CGC_D3D12DDI_VERSION_MAJOR)
    return E_NOINTERFACE;
#ifdef CGC_TEST_DRIVER_BAD_VERSION
  // Built a second time as a driver of a newer, incompatible DDI major.
  static D3D12DDI_ADAPTER_FUNCS_CGC newer = kAdapter;
  newer.Version = uint32_t(CGC_D3D12DDI_VERSION_MAJOR + 1) << 16;
  *funcs = &newer;
#else
  *funcs = &kAdapter;
#endif
  adapter->pDrvPrivate = nullptr;
  return S_OK;
}
