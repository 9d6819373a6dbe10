//===- driver.cpp - The CPU driver behind cgc's D3D12 DDI -------===//
//
// Implements cgc/d3d12ddi_mlir.h on the CPU: memory is host memory (GPU VA =
// host address), MLIR programs come as kernel programs from their cached
// blob (a precompiled program whose key matches this driver's compiler and
// the program's bytecode: cgc/precompiled_program.h) or else from the JIT
// (jit.h, a module loaded on first need), compute pipelines carry a kernel
// program from their 'CGKP' part, and recordings run on a ThreadPool: work
// between two barriers runs concurrently, a barrier orders the work before
// and after it that touches its range.
//
//===----------------------------------------------------------------------===//

// jit.h and container.h name a parameter `interface`, which
// <wsl/winadapter.h> defines as a macro: include them first.
#include "cgc/container.h"
#include "jit.h"

#include "cgc/bind_points.h"
#include "cgc/d3d12ddi_mlir.h"
#include "cgc/precompiled_program.h"
#include "cgc/checked.h"

#include "compiler_target.h"
#include "ddi_bind_points.h"
#include "pages.h"
#include "program.h"
#include "recording.h"

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <shared_mutex>
#include <stdexcept>
#include <thread>
#include <unordered_map>

using namespace cgc;
using namespace cgc::cpu;

#ifndef CGC_DRIVER_REFERENCE
#define CGC_DRIVER_REFERENCE 0
#endif
// How the driver names itself in messages: this file builds both the CPU
// driver and the reference driver (runtime/drivers/reference).
#define CGC_DRIVER_NAME (CGC_DRIVER_REFERENCE ? "reference driver" : "CPU driver")

namespace {

//===----------------------------------------------------------------------===//
// Objects
//===----------------------------------------------------------------------===//

struct MlirProgram {
  std::string name;
  uint64_t serial = 0;
  std::shared_ptr<const CompiledProgram> compiled;
  D3D12DDI_CACHED_MLIR_PROGRAM_STATUS_CGC cacheStatus = D3D12DDI_CACHED_MLIR_PROGRAM_STATUS_NONE_CGC;
  /// MD5 of its Partition IR: the key of its prepared constants.
  Md5Digest partition = {};
};

struct StateObject {
  std::map<std::wstring, std::shared_ptr<MlirProgram>> programs;
};

struct Pipeline {
  std::shared_ptr<const CompiledProgram> compiled;
};

struct Heap {
  void *memory = nullptr;
  bool owned = false;
  uint64_t bytes = 0, alignment = 0; // of an owned heap
  uint64_t size = 0;                 // the heap's size (owned or not)
};

/// The address ranges of a device's heaps: what its commands may access.
/// Looked up once per binding when a command is recorded, so that a binding
/// outside every heap faults the execution (removing the device) instead of
/// touching memory that is not the device's.
class HeapRanges {
public:
  void add(uint64_t start, uint64_t size) {
    std::unique_lock<std::shared_mutex> lock(mutex_);
    byStart_.emplace(start, size);
    maxSize_ = std::max(maxSize_, size);
  }
  void remove(uint64_t start, uint64_t size) {
    std::unique_lock<std::shared_mutex> lock(mutex_);
    auto range = byStart_.equal_range(start);
    for (auto it = range.first; it != range.second; ++it)
      if (it->second == size) {
        byStart_.erase(it);
        return;
      }
  }
  /// Whether [start, start + size) lies inside one heap.
  bool contains(uint64_t start, uint64_t size) {
    std::shared_lock<std::shared_mutex> lock(mutex_);
    auto it = byStart_.upper_bound(start);
    while (it != byStart_.begin()) {
      --it;
      if (it->first + maxSize_ <= start)
        break;
      if (start - it->first < it->second && size <= it->second - (start - it->first))
        return true;
    }
    return false;
  }

private:
  std::shared_mutex mutex_;
  std::multimap<uint64_t, uint64_t> byStart_;
  uint64_t maxSize_ = 0;
};

constexpr uint64_t kIdentifierTag = 0x4347435245465052ull; // "CGCREFPR"

struct Device {
  D3D12DDI_HRTDEVICE rt = {};
  D3D12DDI_RUNTIME_CALLBACKS_CGC callbacks = {};
  ThreadPool pool;
  std::atomic<uint64_t> nextSerial{1};
  std::shared_mutex programsMutex;
  std::unordered_map<uint64_t, std::weak_ptr<MlirProgram>> programs; // by serial
  HeapRanges heaps;
  /// The application's configuration of this device (its kernel and
  /// scheduling choices), with the environment's debug overrides.
  const KernelConfig config;

  explicit Device(const KernelConfig &config)
      : pool(config.threads ? config.threads : usableCores(), config.spinUs),
        config(config) {}

  void message(D3D12DDI_MESSAGE_SEVERITY_CGC severity, const std::string &text) {
    if (callbacks.pfnMessageCb)
      callbacks.pfnMessageCb(rt, severity, text.c_str());
  }
  void error(const std::string &text) { message(D3D12DDI_MESSAGE_SEVERITY_ERROR_CGC, text); }

  std::shared_ptr<MlirProgram> find(const D3D12DDI_PROGRAM_IDENTIFIER_0108 &id) {
    if (id.OpaqueData[0] != kIdentifierTag || id.OpaqueData[2] != uint64_t(uintptr_t(this)))
      return nullptr;
    std::shared_lock<std::shared_mutex> lock(programsMutex);
    auto it = programs.find(id.OpaqueData[1]);
    return it == programs.end() ? nullptr : it->second.lock();
  }
};

struct CommandList {
  Device *device;
  D3D12DDI_HRTCOMMANDLIST rt;
  RecordingBuilder builder;
  std::shared_ptr<MlirProgram> program;
  std::shared_ptr<const CompiledProgram> pipeline;
  std::vector<uint64_t> rootViews;

  void fail(HRESULT hr, const std::string &text) {
    if (device->callbacks.pfnSetCommandListErrorCb)
      device->callbacks.pfnSetCommandListErrorCb(rt, hr, text.c_str());
  }
  /// Marks the recording as faulting if [address, +bytes) is outside every
  /// heap of the device (nothing is checked for an empty range).
  void checkAccess(uint64_t address, uint64_t bytes, const std::string &what) {
    if (bytes && !device->heaps.contains(address, bytes))
      builder.setFault(what + " accesses [0x" + hexDigits(address) + ", +" +
                       std::to_string(bytes) + "), which is outside every heap of the device");
  }
  static std::string hexDigits(uint64_t value) {
    char text[17];
    std::snprintf(text, sizeof(text), "%llx", static_cast<unsigned long long>(value));
    return text;
  }
};

struct Queue {
  Device *device;
};

template <class T> T *get(void *p) { return static_cast<T *>(p); }

std::string narrow(LPCWSTR text) {
  std::string out;
  for (; text && *text; ++text)
    out += *text < 0x80 ? char(*text) : '?';
  return out;
}

/// Runs `body`, turning an escaping exception into an HRESULT (nothing may
/// cross the DDI).
template <class F> HRESULT guarded(Device *device, const char *what, F &&body) {
  try {
    return body();
  } catch (const std::bad_alloc &) {
    if (device)
      device->error(std::string(what) + ": out of memory");
    return E_OUTOFMEMORY;
  } catch (const std::exception &e) {
    if (device)
      device->error(std::string(what) + ": " + e.what());
    return E_FAIL;
  }
}

//===----------------------------------------------------------------------===//
// Adapter
//===----------------------------------------------------------------------===//

bool isSubgraphInterface(const GUID &g) {
  Guid guid;
  std::memcpy(&guid, &g, sizeof(guid));
  return guid == interfaces::kSubgraphPartition || guid == interfaces::kSubgraphDeclarationRequest ||
         guid == interfaces::kSubgraphDeclaration ||
         guid == interfaces::kSubgraphSpecializationRequest ||
         guid == interfaces::kSubgraphSpecialization;
}

/// The DDI minor version of the runtime that opened the adapter (what
/// the runtime's callback table holds).
std::atomic<uint32_t> gRuntimeMinor{0};

HRESULT getCompilerProperties(D3D12DDI_HADAPTER, D3D12DDI_COMPILER_PROPERTIES_CGC *properties) {
  if (!properties)
    return E_INVALIDARG;
  *properties = {};
  for (size_t i = 0; kAdapterFamily[i] && i + 1 < std::size(properties->szAdapterFamily); ++i)
    properties->szAdapterFamily[i] = WCHAR(kAdapterFamily[i]);
  properties->MinimumABISupportVersion = kAbiVersion;
  properties->MaximumABISupportVersion = kAbiVersion;
  properties->CompilerVersion = compilerVersionNumber(compilerIdentity());
  properties->ApplicationProfileVersion = kApplicationProfileVersion;
  return S_OK;
}

HRESULT getCaps(D3D12DDI_HADAPTER, const D3D12DDIARG_GETCAPS *args) {
  if (!args || !args->pData)
    return E_INVALIDARG;
  // The driver runs MLIR programs with or without its JIT (without it they
  // must come precompiled, as cached blobs), so it reports tier 2.0 and
  // CGC_SUBGRAPH_PARTITION either way; the exchanges need the JIT module,
  // whose presence on disk is checked here without loading it (it is loaded
  // only by what needs it: an exchange, a compile).
  switch (args->Type) {
  case D3D12DDI_CAPS_TYPE_MLIR: {
    if (args->DataSize != sizeof(D3D12DDI_OPTIONS_DATA_MLIR))
      return E_INVALIDARG;
    static_cast<D3D12DDI_OPTIONS_DATA_MLIR *>(args->pData)->MlirProgramsTier =
        D3D12DDI_MLIR_PROGRAMS_TIER_2_0;
    return S_OK;
  }
  case D3D12DDICAPS_TYPE_MLIR_EXCHANGE_0119: {
    if (args->DataSize != sizeof(D3D12DDI_MLIR_EXCHANGE_0119))
      return E_INVALIDARG;
    auto *ex = static_cast<D3D12DDI_MLIR_EXCHANGE_0119 *>(args->pData);
    if (!haveJitModule())
      return DXGI_ERROR_UNSUPPORTED; // no compiler: no exchanges
    std::string error;
    const JitInterface *jit = loadJit(error);
    if (!jit) {
      // The adapter has no device to report through.
      std::fprintf(stderr, "%s: MLIR_EXCHANGE: %s\n", CGC_DRIVER_NAME, error.c_str());
      return E_FAIL;
    }
    Guid guid;
    std::memcpy(&guid, &ex->MlirInterface, sizeof(guid));
    return guarded(nullptr, "MLIR_EXCHANGE", [&] {
      return HRESULT(jit->exchange(guid, ex->pInputData, ex->InputDataSizeInBytes,
                                   ex->pOutputData, ex->OutputDataSizeInBytes));
    });
  }
  case D3D12DDICAPS_TYPE_MLIR_INTERFACE_SUPPORT_0119: {
    if (args->DataSize != sizeof(D3D12DDI_MLIR_INTERFACE_SUPPORT_0119))
      return E_INVALIDARG;
    auto *s = static_cast<D3D12DDI_MLIR_INTERFACE_SUPPORT_0119 *>(args->pData);
    bool jit = haveJitModule();
    for (UINT i = 0; i < s->NumMlirInterfaces; ++i) {
      Guid guid;
      std::memcpy(&guid, &s->pMlirInterfacesRequested[i], sizeof(guid));
      s->pMlirInterfacesSupported[i] =
          guid == interfaces::kSubgraphPartition ||
          (jit && isSubgraphInterface(s->pMlirInterfacesRequested[i]));
    }
    return S_OK;
  }
  default:
    return E_INVALIDARG;
  }
}

HRESULT createDevice(D3D12DDI_HADAPTER, const D3D12DDIARG_CREATEDEVICE_CGC *args,
                     D3D12DDI_HDEVICE *out) {
  if (!args || !out)
    return E_INVALIDARG;
  // No device yet to report through: the runtime's callbacks take the reason.
  auto report = [&](const std::string &text) {
    if (args->pCallbacks && args->pCallbacks->pfnMessageCb)
      args->pCallbacks->pfnMessageCb(args->hRTDevice, D3D12DDI_MESSAGE_SEVERITY_ERROR_CGC,
                                     ("CreateDevice: " + text).c_str());
  };
  try {
    // The application's text, then the environment's debug overrides
    // (KernelConfig::environment, the one place they are read).
    KernelConfig config;
    std::string why;
#if CGC_DRIVER_REFERENCE
    // The reference driver: the same device, bind points, recording and
    // JIT, every op evaluated alone by the reference evaluator.
    config.evaluator = "reference";
#endif
    if (args->pDriverOptions && !config.apply(args->pDriverOptions, why))
      throw std::invalid_argument("driver options '" + std::string(args->pDriverOptions) +
                                  "': " + why);
    if (!config.applyEnvironment(why))
      throw std::invalid_argument(why);
    static_assert(cgc::kMaxThreads == 1024, "KernelConfig's 'threads' bound");
    auto *device = new Device(config);
    device->rt = args->hRTDevice;
    if (args->pCallbacks) {
      // A runtime older than DDI 1.4 passes the table without its database
      // lookup: copy what it has.
      if (gRuntimeMinor.load() >= 4) {
        device->callbacks = *args->pCallbacks;
      } else {
        device->callbacks.pfnSetCommandListErrorCb = args->pCallbacks->pfnSetCommandListErrorCb;
        device->callbacks.pfnMessageCb = args->pCallbacks->pfnMessageCb;
      }
    }
    out->pDrvPrivate = device;
    return S_OK;
  } catch (const std::bad_alloc &) {
    report("out of memory");
    return E_OUTOFMEMORY;
  } catch (const std::invalid_argument &e) {
    report(e.what());
    return E_INVALIDARG;
  } catch (const std::exception &e) {
    report(e.what());
    return E_FAIL;
  }
}

void closeAdapter(D3D12DDI_HADAPTER) {}

//===----------------------------------------------------------------------===//
// Device functions
//===----------------------------------------------------------------------===//

void destroyDevice(D3D12DDI_HDEVICE h) { delete get<Device>(h.pDrvPrivate); }

HRESULT createHeap(D3D12DDI_HDEVICE h, const D3D12DDIARG_CREATEHEAP_CGC *args,
                   D3D12DDI_HHEAP *out, D3D12DDI_HEAP_MEMORY_CGC *memory) {
  Device *device = get<Device>(h.pDrvPrivate);
  if (!args || !out || !memory || args->SizeInBytes == 0)
    return E_INVALIDARG;
  auto heap = std::make_unique<Heap>();
  if (args->pExistingAddress) {
    heap->memory = const_cast<void *>(args->pExistingAddress);
  } else {
    // D3D12 heaps start zeroed: fresh anonymous pages are, and only the
    // pages something touches become resident (pages.h).
    heap->alignment = std::max<uint64_t>(args->Alignment, 64);
    heap->bytes = args->SizeInBytes;
    heap->memory = allocatePages(heap->bytes, heap->alignment);
    if (!heap->memory) {
      device->error("CreateHeap: cannot allocate " + std::to_string(heap->bytes) + " bytes");
      return E_OUTOFMEMORY;
    }
    heap->owned = true;
  }
  memory->pCPUAddress = heap->memory;
  memory->GPUVirtualAddress = reinterpret_cast<uint64_t>(heap->memory);
  heap->size = args->SizeInBytes;
  device->heaps.add(memory->GPUVirtualAddress, heap->size);
  out->pDrvPrivate = heap.release();
  return S_OK;
}

void destroyHeap(D3D12DDI_HDEVICE h, D3D12DDI_HHEAP hh) {
  Heap *heap = get<Heap>(hh.pDrvPrivate);
  if (heap)
    get<Device>(h.pDrvPrivate)->heaps.remove(reinterpret_cast<uint64_t>(heap->memory), heap->size);
  if (heap && heap->owned)
    freePages(heap->memory, heap->bytes, heap->alignment);
  delete heap;
}

/// Tells the debug output which kernels were fused.
void describeFusion(Device *device, const std::string &what, const CompiledProgram &program) {
  for (const auto &step : program.steps()) {
    if (step.kernels.size() < 2)
      continue;
    std::string text = std::string(CGC_DRIVER_NAME) + ": " + what + ": kernels";
    for (size_t k : step.kernels)
      text += " " + std::to_string(k) + " (" + program.program().kernels[k].op + ")";
    text += " fused into one kernel: " + step.kernel->describe();
    device->message(D3D12DDI_MESSAGE_SEVERITY_INFO_CGC, text);
  }
}

/// Reads the cached blob of an MLIR program: `program` and a HIT status if
/// its key matches this driver's compiler and `bytecode`, a MISMATCH status
/// (and a warning saying why) if it is a well-formed blob for something
/// else. A blob that is malformed, or matches but holds no valid kernel
/// program for the program's bind points, is an error: it claims to be
/// this program's compiled form, so compiling instead would hide a bug or
/// tampering (disable the blobs to get the JIT's result).
HRESULT usePrecompiled(Device *device, const std::string &where,
                       const D3D12DDI_CACHED_MLIR_PROGRAM_CGC &cached, ByteView bytecode,
                       const ContainerReader &container, KernelProgram &program,
                       D3D12DDI_CACHED_MLIR_PROGRAM_STATUS_CGC &status) {
  ContainerReader blob;
  PrecompiledKey key;
  std::string error;
  if (!readPrecompiledProgram(cached.pCachedBlob, cached.CachedBlobSizeInBytes, blob, key,
                              error)) {
    device->error(where + ": the cached blob is malformed: " + error);
    return E_INVALIDARG;
  }
  PrecompiledKey expected;
  expected.compiler = compilerIdentity();
  expected.partitionDigest = digestBytecode(bytecode);
  if (key != expected) {
    status = D3D12DDI_CACHED_MLIR_PROGRAM_STATUS_MISMATCH_CGC;
    device->message(D3D12DDI_MESSAGE_SEVERITY_WARNING_CGC,
                    where + ": the cached blob is not used: " +
                        describeKeyMismatch(key, expected) + "; compiling the bytecode");
    return S_OK;
  }
  auto corrupt = [&](const std::string &why) {
    device->error(where + ": the cached blob matches this program but is corrupt: " + why);
    return E_INVALIDARG;
  };
  if (!blob.checkKnownParts({parts::kPrecompiledKey, parts::kKernelProgram}, error))
    return corrupt(error);
  auto kernels = blob.find(parts::kKernelProgram);
  if (kernels.size() != 1)
    return corrupt("it has " + std::to_string(kernels.size()) +
                   " 'CGKP' kernel programs; exactly one is needed");
  if (!deserializeKernelProgram(kernels[0]->data.str(), program, error))
    return corrupt(error);
  // The kernel program's bindings are the partition's bind points.
  auto points = container.find(parts::kBindPoints);
  std::vector<BindPoint> bindPoints;
  if (points.size() != 1 || !deserializeBindPoints(points[0]->data.str(), bindPoints, error))
    return corrupt("the program's container has no valid 'CGBP' bind points to check it against" +
                   (error.empty() ? std::string() : ": " + error));
  if (program.bindings.size() != bindPoints.size())
    return corrupt("its kernel program has " + std::to_string(program.bindings.size()) +
                   " bindings for " + std::to_string(bindPoints.size()) + " bind points");
  for (size_t b = 0; b < bindPoints.size(); ++b)
    if (program.bindings[b].bytes > bindPoints[b].bytes)
      return corrupt("its kernel program needs " + std::to_string(program.bindings[b].bytes) +
                     " bytes at binding #" + std::to_string(b) + ", more than bind point '" +
                     bindPoints[b].name + "' holds (" + std::to_string(bindPoints[b].bytes) +
                     ")");
  status = D3D12DDI_CACHED_MLIR_PROGRAM_STATUS_HIT_CGC;
  return S_OK;
}

/// Creates the MLIR program subobjects of `args` in `out`: from their cached
/// blobs where those match, else compiled by the JIT.
HRESULT compilePrograms(Device *device, const D3D12DDIARG_CREATE_STATE_OBJECT_0054 *args,
                        StateObject &out) {
  if (!args || (args->NumSubobjects && !args->pSubobjects))
    return E_INVALIDARG;
  std::map<std::wstring, const D3D12DDI_CACHED_MLIR_PROGRAM_CGC *> cachedBlobs;
  for (UINT i = 0; i < args->NumSubobjects; ++i) {
    const auto &sub = args->pSubobjects[i];
    if (sub.Type != D3D12DDI_STATE_SUBOBJECT_TYPE_CACHED_MLIR_PROGRAM_CGC)
      continue;
    const auto *cached = static_cast<const D3D12DDI_CACHED_MLIR_PROGRAM_CGC *>(sub.pDesc);
    if (!cached || !cached->ProgramName || !cached->pCachedBlob ||
        !cached->CachedBlobSizeInBytes || !cachedBlobs.emplace(cached->ProgramName, cached).second) {
      device->error(std::string(CGC_DRIVER_NAME) + ": a cached MLIR program subobject without a name or a blob, "
                    "or a second one for the same program (the runtime passes neither)");
      return E_INVALIDARG;
    }
  }
  for (UINT i = 0; i < args->NumSubobjects; ++i) {
    const auto &sub = args->pSubobjects[i];
    if (sub.Type == D3D12DDI_STATE_SUBOBJECT_TYPE_CACHED_MLIR_PROGRAM_CGC)
      continue;
    if (sub.Type != D3D12DDI_STATE_SUBOBJECT_TYPE_MLIR_PROGRAM || !sub.pDesc)
      return E_INVALIDARG;
    const auto *desc = static_cast<const D3D12DDI_MLIR_PROGRAM_DESC_0119 *>(sub.pDesc);
    std::string name = narrow(desc->ProgramName);
    std::string where = std::string(CGC_DRIVER_NAME) + ": MLIR program '" + name + "'";
    ContainerReader reader;
    std::string error;
    if (!reader.open(desc->pBytecode, desc->BytecodeSizeInBytes, error)) {
      device->error(where + ": " + error);
      return E_INVALIDARG;
    }
    auto mlir = reader.find(parts::kMLIR);
    Guid iface;
    ByteView bytecode;
    if (mlir.size() != 1 || !ContainerReader::splitMLIRPart(*mlir[0], iface, bytecode, error)) {
      device->error(where + ": the container needs exactly one valid 'MLIR' part " + error);
      return E_INVALIDARG;
    }
    if (iface != interfaces::kSubgraphPartition) {
      const char *known = interfaces::name(iface);
      device->error(where + ": the MLIR part is tagged " + (known ? known : iface.str()) +
                    "; the CPU driver compiles CGC_SUBGRAPH_PARTITION only");
      return E_INVALIDARG;
    }
    KernelProgram program;
    auto status = D3D12DDI_CACHED_MLIR_PROGRAM_STATUS_NONE_CGC;
    auto cached = desc->ProgramName ? cachedBlobs.find(desc->ProgramName) : cachedBlobs.end();
    const bool givenBlob = cached != cachedBlobs.end();
    if (givenBlob) {
      HRESULT hr = guarded(device, where.c_str(), [&] {
        return usePrecompiled(device, where, *cached->second, bytecode, reader, program, status);
      });
      if (FAILED(hr))
        return hr;
      cachedBlobs.erase(cached);
    }
    // No cached blob: the registered precompiled databases may hold this
    // program's compiled form under the key the plugin derived from it.
    std::vector<uint8_t> stored;
    if (!givenBlob && device->callbacks.pfnFindPrecompiledValueCgc) {
      std::string key = precompiledValueKey(kAdapterFamily, digestBytecode(bytecode));
      D3D12DDI_COMPILER_CACHE_VALUE_KEY valueKey = {key.data(), UINT(key.size())};
      D3D12DDI_COMPILER_CACHE_TYPED_VALUE value = {D3D12DDI_COMPILER_CACHE_VALUE_TYPE_OBJECT_CODE,
                                                   {nullptr, 0}};
      auto find = device->callbacks.pfnFindPrecompiledValueCgc;
      if (find(device->rt, &valueKey, &value, 1) == S_OK && value.Value.ValueSize) {
        stored.resize(value.Value.ValueSize);
        value.Value.pValue = stored.data();
        if (find(device->rt, &valueKey, &value, 1) != S_OK ||
            value.Value.ValueSize != stored.size())
          stored.clear(); // the database changed between the two calls
      }
      if (!stored.empty()) {
        D3D12DDI_CACHED_MLIR_PROGRAM_CGC fromDatabase = {desc->ProgramName, stored.data(),
                                                         stored.size()};
        std::string from = where + " (precompiled database value '" + key + "')";
        HRESULT hr = guarded(device, where.c_str(), [&] {
          return usePrecompiled(device, from, fromDatabase, bytecode, reader, program, status);
        });
        if (FAILED(hr))
          return hr;
        status = status == D3D12DDI_CACHED_MLIR_PROGRAM_STATUS_HIT_CGC
                     ? D3D12DDI_CACHED_MLIR_PROGRAM_STATUS_DATABASE_HIT_CGC
                     : D3D12DDI_CACHED_MLIR_PROGRAM_STATUS_DATABASE_STALE_CGC;
      }
    }
    if (status != D3D12DDI_CACHED_MLIR_PROGRAM_STATUS_HIT_CGC &&
        status != D3D12DDI_CACHED_MLIR_PROGRAM_STATUS_DATABASE_HIT_CGC) {
      const JitInterface *jit = loadJit(error);
      if (!jit) {
        device->error(where + ": " + error + "; MLIR programs can only be created from "
                      "matching precompiled programs (cached blobs). Compute pipelines with "
                      "kernel programs ('CGKP') still work.");
        return haveJitModule() ? E_FAIL : E_NOTIMPL;
      }
      HRESULT hr = guarded(device, where.c_str(), [&] {
        return jit->compilePartition(bytecode.data, bytecode.size, program, error) ? S_OK
                                                                                  : E_INVALIDARG;
      });
      if (FAILED(hr)) {
        if (!error.empty())
          device->error(where + ": " + error);
        return hr;
      }
    }
    std::shared_ptr<const CompiledProgram> compiled;
    HRESULT hr = guarded(device, where.c_str(), [&] {
      compiled = CompiledProgram::create(std::move(program), device->config, error);
      return compiled ? S_OK : E_INVALIDARG;
    });
    if (FAILED(hr)) {
      if (!error.empty())
        device->error(where + ": " + error);
      return hr;
    }
    describeFusion(device, "MLIR program '" + name + "'", *compiled);
    auto mp = std::make_shared<MlirProgram>();
    mp->name = name;
    mp->serial = device->nextSerial.fetch_add(1);
    mp->compiled = std::move(compiled);
    mp->cacheStatus = status;
    mp->partition = digestBytecode(bytecode);
    out.programs[desc->ProgramName] = mp;
  }
  if (!cachedBlobs.empty()) {
    device->error(std::string(CGC_DRIVER_NAME) + ": a cached blob is given for '" +
                  narrow(cachedBlobs.begin()->first.c_str()) +
                  "', which is not an MLIR program of this state object");
    return E_INVALIDARG;
  }
  std::unique_lock<std::shared_mutex> lock(device->programsMutex);
  for (auto &[name, program] : out.programs)
    device->programs[program->serial] = program;
  for (auto it = device->programs.begin(); it != device->programs.end();)
    it = it->second.expired() ? device->programs.erase(it) : std::next(it);
  return S_OK;
}

HRESULT createStateObject(D3D12DDI_HDEVICE h, const D3D12DDIARG_CREATE_STATE_OBJECT_0054 *args,
                          D3D12DDI_HSTATEOBJECT *out) {
  Device *device = get<Device>(h.pDrvPrivate);
  if (!out)
    return E_INVALIDARG;
  return guarded(device, "CreateStateObject", [&] {
    auto so = std::make_unique<StateObject>();
    HRESULT hr = compilePrograms(device, args, *so);
    if (SUCCEEDED(hr))
      out->pDrvPrivate = so.release();
    return hr;
  });
}

HRESULT addToStateObject(D3D12DDI_HDEVICE h, const D3D12DDIARG_CREATE_STATE_OBJECT_0054 *args,
                         D3D12DDI_HSTATEOBJECT existing, D3D12DDI_HSTATEOBJECT *out) {
  Device *device = get<Device>(h.pDrvPrivate);
  StateObject *from = get<StateObject>(existing.pDrvPrivate);
  if (!out || !from)
    return E_INVALIDARG;
  return guarded(device, "AddToStateObject", [&] {
    auto so = std::make_unique<StateObject>();
    HRESULT hr = compilePrograms(device, args, *so);
    if (FAILED(hr))
      return hr;
    for (auto &[name, program] : from->programs)
      if (!so->programs.emplace(name, program).second) {
        device->error("AddToStateObject: program '" + program->name + "' already exists");
        return E_INVALIDARG;
      }
    out->pDrvPrivate = so.release();
    return S_OK;
  });
}

void destroyStateObject(D3D12DDI_HDEVICE, D3D12DDI_HSTATEOBJECT h) {
  delete get<StateObject>(h.pDrvPrivate);
}

HRESULT getProgramIdentifier(D3D12DDI_HDEVICE h, D3D12DDI_HSTATEOBJECT so, LPCWSTR name,
                             D3D12DDI_PROGRAM_IDENTIFIER_0108 *id) {
  Device *device = get<Device>(h.pDrvPrivate);
  StateObject *object = get<StateObject>(so.pDrvPrivate);
  if (!object || !name || !id)
    return E_INVALIDARG;
  auto it = object->programs.find(name);
  if (it == object->programs.end())
    return E_INVALIDARG;
  id->OpaqueData[0] = kIdentifierTag;
  id->OpaqueData[1] = it->second->serial;
  id->OpaqueData[2] = uint64_t(uintptr_t(device));
  id->OpaqueData[3] = 0;
  return S_OK;
}

HRESULT getCachedMlirProgramStatus(D3D12DDI_HDEVICE, D3D12DDI_HSTATEOBJECT so, LPCWSTR name,
                                   D3D12DDI_CACHED_MLIR_PROGRAM_STATUS_CGC *status) {
  StateObject *object = get<StateObject>(so.pDrvPrivate);
  if (!object || !name || !status)
    return E_INVALIDARG;
  auto it = object->programs.find(name);
  if (it == object->programs.end())
    return E_INVALIDARG;
  *status = it->second->cacheStatus;
  return S_OK;
}

/// The bind points of a program as the driver compiled it: its kernel
/// program's bindings (from the JIT's reading of the Partition IR's
/// arguments, or from a matching cached blob).
HRESULT getProgramBindPoints(D3D12DDI_HDEVICE, D3D12DDI_HSTATEOBJECT so, LPCWSTR name,
                             UINT *count, D3D12DDI_PROGRAM_BIND_POINT_CGC *points) {
  StateObject *object = get<StateObject>(so.pDrvPrivate);
  if (!object || !name || !count)
    return E_INVALIDARG;
  auto it = object->programs.find(name);
  if (it == object->programs.end())
    return E_INVALIDARG;
  return describeBindPoints(it->second->compiled->program(), count, points);
}

/// The runtime's word that a program's constants are bound at these
/// addresses with their final bytes: its kernels prepare them now
/// (CompiledProgram::prepareConstants), not on the first run.
/// Both PrepareMlirProgramConstants entry points: with `digests`, the
/// prepared constants may come from a registered precompiled database.
HRESULT prepareConstants(D3D12DDI_HDEVICE h, D3D12DDI_HSTATEOBJECT so, LPCWSTR name, UINT count,
                         const D3D12DDI_MLIR_PROGRAM_BINDING_0119 *given,
                         const D3D12DDI_CONSTANT_DIGEST_CGC *digests,
                         D3D12DDI_PREPARED_CONSTANTS_STATISTICS_CGC *statistics) {
  Device *device = get<Device>(h.pDrvPrivate);
  StateObject *object = get<StateObject>(so.pDrvPrivate);
  if (!device || !object || !name || (count && !given))
    return E_INVALIDARG;
  auto it = object->programs.find(name);
  if (it == object->programs.end())
    return E_INVALIDARG;
  const MlirProgram &mlir = *it->second;
  const CompiledProgram &program = *mlir.compiled;
  const auto &bindPoints = program.program().bindings;
  const std::string where = "PrepareMlirProgramConstants (program '" + mlir.name + "'): ";
  std::vector<uint8_t *> addresses(bindPoints.size(), nullptr);
  std::vector<std::array<uint8_t, 16>> contents(bindPoints.size());
  for (UINT i = 0; i < count; ++i) {
    const UINT index = given[i].BindPointIndex;
    if (index >= bindPoints.size() || !bindPoints[index].constant || addresses[index] ||
        given[i].Type != D3D12DDI_MLIR_PROGRAM_BINDING_TYPE_GPU_0119 ||
        !given[i].GpuBinding.StartAddress) {
      device->error(where + "binding #" + std::to_string(i) + " (bind point " +
                    std::to_string(index) + ") is not a constant bind point bound once to a GPU "
                                            "address");
      return E_INVALIDARG;
    }
    addresses[index] = reinterpret_cast<uint8_t *>(given[i].GpuBinding.StartAddress);
    if (digests)
      std::memcpy(contents[index].data(), digests[i].Digest, 16);
  }
  for (size_t b = 0; b < bindPoints.size(); ++b)
    if (bindPoints[b].constant && !addresses[b]) {
      device->error(where + "constant bind point " + std::to_string(b) + " '" +
                    bindPoints[b].name + "' is not given");
      return E_INVALIDARG;
    }
  return guarded(device, "PrepareMlirProgramConstants", [&] {
    if (!digests) {
      program.prepareConstants(addresses, device->pool);
      return S_OK;
    }
    std::vector<prepared::Range> ranges;
    std::vector<std::array<uint8_t, 16>> keyDigests;
    for (size_t b = 0; b < bindPoints.size(); ++b)
      if (bindPoints[b].constant) {
        ranges.push_back({addresses[b], size_t(bindPoints[b].bytes), contents[b]});
        keyDigests.push_back(contents[b]);
      }
    prepared::Context context(prepared::Context::Mode::Replay, std::move(ranges));
    // The blocks the plugin prepared offline for these contents, mapped.
    if (auto map = device->callbacks.pfnMapPrecompiledValueCgc) {
      std::string key = preparedValueKey(
          mlir.partition, keyDigests, program.preparedSignature(size_t(device->pool.size())));
      D3D12DDI_COMPILER_CACHE_VALUE_KEY valueKey = {key.data(), UINT(key.size())};
      const void *value = nullptr;
      SIZE_T size = 0;
      HRESULT hr = map(device->rt, &valueKey,
                       D3D12DDI_COMPILER_CACHE_VALUE_TYPE_PREPARED_CONSTANTS_CGC, &value, &size);
      if (hr == S_OK) {
        std::vector<PreparedBlockRef> blocks;
        std::string error;
        if (!readPreparedValue(value, size, blocks, error)) {
          device->error(where + "the prepared constants '" + key +
                        "' of a precompiled database are corrupt: " + error);
          return E_INVALIDARG;
        }
        for (const PreparedBlockRef &block : blocks)
          context.add(block.key, block.data, block.bytes);
      } else if (hr != DXGI_ERROR_NOT_FOUND) {
        device->error(where + "the precompiled database failed to map '" + key + "'");
        return hr;
      }
    }
    program.prepareConstants(addresses, device->pool, &context);
    if (statistics)
      *statistics = {context.mapped.load(), context.mappedBytes.load(), context.computed.load(),
                     context.computedBytes.load()};
    return S_OK;
  });
}

HRESULT prepareMlirProgramConstants(D3D12DDI_HDEVICE h, D3D12DDI_HSTATEOBJECT so, LPCWSTR name,
                                    UINT count, const D3D12DDI_MLIR_PROGRAM_BINDING_0119 *given) {
  return prepareConstants(h, so, name, count, given, nullptr, nullptr);
}

HRESULT prepareMlirProgramConstantsWithDigests(
    D3D12DDI_HDEVICE h, D3D12DDI_HSTATEOBJECT so, LPCWSTR name, UINT count,
    const D3D12DDI_MLIR_PROGRAM_BINDING_0119 *given, const D3D12DDI_CONSTANT_DIGEST_CGC *digests,
    D3D12DDI_PREPARED_CONSTANTS_STATISTICS_CGC *statistics) {
  if (count && !digests)
    return E_INVALIDARG;
  static const D3D12DDI_CONSTANT_DIGEST_CGC none = {};
  return prepareConstants(h, so, name, count, given, count ? digests : &none, statistics);
}

HRESULT createComputePipelineState(D3D12DDI_HDEVICE h,
                                   const D3D12DDIARG_CREATE_COMPUTE_PIPELINE_STATE_CGC *args,
                                   D3D12DDI_HPIPELINESTATE *out) {
  Device *device = get<Device>(h.pDrvPrivate);
  if (!args || !out)
    return E_INVALIDARG;
  return guarded(device, "CreateComputePipelineState", [&] {
    ContainerReader reader;
    std::string error;
    if (!reader.open(args->pComputeShader, args->ComputeShaderSizeInBytes, error)) {
      device->error(std::string(CGC_DRIVER_NAME) + ": compute shader: " + error);
      return E_INVALIDARG;
    }
    auto parts = reader.find(parts::kKernelProgram);
    if (parts.size() != 1) {
      device->error(std::string(CGC_DRIVER_NAME) + ": the compute shader needs exactly one 'CGKP' part");
      return E_INVALIDARG;
    }
    KernelProgram program;
    if (!deserializeKernelProgram(parts[0]->data.str(), program, error)) {
      device->error(std::string(CGC_DRIVER_NAME) + ": " + error);
      return E_INVALIDARG;
    }
    auto compiled = CompiledProgram::create(std::move(program), device->config, error);
    if (!compiled) {
      device->error(std::string(CGC_DRIVER_NAME) + ": compute pipeline: " + error);
      return E_INVALIDARG;
    }
    describeFusion(device, "compute pipeline", *compiled);
    out->pDrvPrivate = new Pipeline{std::move(compiled)};
    return S_OK;
  });
}

void destroyPipelineState(D3D12DDI_HDEVICE, D3D12DDI_HPIPELINESTATE h) {
  delete get<Pipeline>(h.pDrvPrivate);
}

HRESULT createCommandList(D3D12DDI_HDEVICE h, D3D12DDI_HRTCOMMANDLIST rt,
                          D3D12DDI_HCOMMANDLIST *out) {
  if (!out)
    return E_INVALIDARG;
  out->pDrvPrivate = new CommandList{get<Device>(h.pDrvPrivate), rt, {}, nullptr, nullptr, {}};
  return S_OK;
}

void destroyCommandList(D3D12DDI_HDEVICE, D3D12DDI_HCOMMANDLIST h) {
  delete get<CommandList>(h.pDrvPrivate);
}

HRESULT createCommandQueue(D3D12DDI_HDEVICE h, D3D12DDI_HCOMMANDQUEUE *out) {
  if (!out)
    return E_INVALIDARG;
  out->pDrvPrivate = new Queue{get<Device>(h.pDrvPrivate)};
  return S_OK;
}

void destroyCommandQueue(D3D12DDI_HDEVICE, D3D12DDI_HCOMMANDQUEUE h) {
  delete get<Queue>(h.pDrvPrivate);
}

//===----------------------------------------------------------------------===//
// Command lists
//===----------------------------------------------------------------------===//

void reset(D3D12DDI_HCOMMANDLIST h) {
  CommandList *cl = get<CommandList>(h.pDrvPrivate);
  cl->builder = RecordingBuilder();
  cl->program.reset();
  cl->pipeline.reset();
  cl->rootViews.clear();
}

HRESULT close(D3D12DDI_HCOMMANDLIST h, D3D12DDI_HRECORDING_CGC *out) {
  CommandList *cl = get<CommandList>(h.pDrvPrivate);
  if (!out)
    return E_INVALIDARG;
  return guarded(cl->device, "Close", [&] {
    out->pDrvPrivate = cl->builder.finish().release();
    return S_OK;
  });
}

void destroyRecording(D3D12DDI_HRECORDING_CGC h) { delete get<Recording>(h.pDrvPrivate); }

void setProgram(D3D12DDI_HCOMMANDLIST h, const D3D12DDI_SET_PROGRAM_DESC_0108 *desc) {
  CommandList *cl = get<CommandList>(h.pDrvPrivate);
  cl->program.reset();
  if (!desc || desc->Type != D3D12DDI_PROGRAM_TYPE_MLIR_PROGRAM_0119) {
    cl->fail(E_INVALIDARG, "SetProgram: not an MLIR program");
    return;
  }
  cl->program = cl->device->find(desc->MlirProgram.ProgramIdentifier);
  if (!cl->program)
    cl->fail(E_INVALIDARG, "SetProgram: the identifier names no live MLIR program of this device");
}

void dispatchGraph(D3D12DDI_HCOMMANDLIST h, const D3D12DDI_DISPATCH_GRAPH_DESC_0108 *desc) {
  CommandList *cl = get<CommandList>(h.pDrvPrivate);
  try {
    if (!desc || desc->Mode != D3D12DDI_DISPATCH_MODE_MLIR_PROGRAM)
      return cl->fail(E_INVALIDARG, "DispatchGraph: not an MLIR program dispatch");
    if (!cl->program)
      return cl->fail(E_INVALIDARG, "DispatchGraph: no MLIR program is set");
    const CompiledProgram &program = *cl->program->compiled;
    const auto &bindings = program.program().bindings;
    const auto &b = desc->MlirProgramBindings;
    std::string prefix = "DispatchGraph (program '" + cl->program->name + "'): ";
    if (b.NumBindings != bindings.size() || (b.NumBindings && !b.pBindings))
      return cl->fail(E_INVALIDARG, prefix + std::to_string(b.NumBindings) + " bindings for " +
                                        std::to_string(bindings.size()) + " bind points");
    Work work;
    work.program = cl->program->compiled;
    work.addresses.assign(bindings.size(), nullptr);
    for (UINT i = 0; i < b.NumBindings; ++i) {
      const auto &binding = b.pBindings[i];
      UINT index = binding.BindPointIndex;
      if (index >= bindings.size() || work.addresses[index])
        return cl->fail(E_INVALIDARG, prefix + "binding #" + std::to_string(i) +
                                          " has an invalid or repeated BindPointIndex " +
                                          std::to_string(index));
      const std::string target = "bind point " + std::to_string(index) + " '" +
                                 bindings[index].name + "'";
      if (binding.Type == D3D12DDI_MLIR_PROGRAM_BINDING_TYPE_CPU_0119) {
        if (!binding.CpuBinding.pData || binding.CpuBinding.DataSizeInBytes < bindings[index].bytes)
          return cl->fail(E_INVALIDARG, prefix + target + ": CPU data is null or smaller than " +
                                            std::to_string(bindings[index].bytes) + " bytes");
        work.addresses[index] = cl->builder.copyCpuData(binding.CpuBinding.pData,
                                                        binding.CpuBinding.DataSizeInBytes);
        continue;
      }
      if (binding.Type != D3D12DDI_MLIR_PROGRAM_BINDING_TYPE_GPU_0119)
        return cl->fail(E_INVALIDARG, prefix + target + ": unknown binding type");
      if (!binding.GpuBinding.StartAddress)
        return cl->fail(E_INVALIDARG, prefix + target + " is bound to a null GPU virtual address");
      if (binding.GpuBinding.SizeInBytes && binding.GpuBinding.SizeInBytes < bindings[index].bytes)
        return cl->fail(E_INVALIDARG, prefix + target + ": the bound range holds " +
                                          std::to_string(binding.GpuBinding.SizeInBytes) +
                                          " bytes, fewer than " +
                                          std::to_string(bindings[index].bytes));
      work.addresses[index] = reinterpret_cast<uint8_t *>(binding.GpuBinding.StartAddress);
      work.ranges.push_back({binding.GpuBinding.StartAddress, bindings[index].bytes});
      cl->checkAccess(binding.GpuBinding.StartAddress, bindings[index].bytes, prefix + target);
    }
    cl->builder.addWork(std::move(work));
  } catch (const std::exception &e) {
    cl->fail(E_OUTOFMEMORY, std::string("DispatchGraph: ") + e.what());
  }
}

void setPipelineState(D3D12DDI_HCOMMANDLIST h, D3D12DDI_HPIPELINESTATE pso) {
  CommandList *cl = get<CommandList>(h.pDrvPrivate);
  Pipeline *pipeline = get<Pipeline>(pso.pDrvPrivate);
  cl->pipeline = pipeline ? pipeline->compiled : nullptr;
}

void setComputeRootUnorderedAccessView(D3D12DDI_HCOMMANDLIST h, UINT index, uint64_t address) {
  CommandList *cl = get<CommandList>(h.pDrvPrivate);
  if (index >= 4096)
    return cl->fail(E_INVALIDARG, "SetComputeRootUnorderedAccessView: root parameter index " +
                                      std::to_string(index) + " is out of range");
  if (cl->rootViews.size() <= index)
    cl->rootViews.resize(index + 1, 0);
  cl->rootViews[index] = address;
}

void dispatch(D3D12DDI_HCOMMANDLIST h, UINT x, UINT y, UINT z) {
  CommandList *cl = get<CommandList>(h.pDrvPrivate);
  try {
    if (!cl->pipeline)
      return cl->fail(E_INVALIDARG, "Dispatch: no compute pipeline state is set");
    if (x != 1 || y != 1 || z != 1)
      return cl->fail(E_INVALIDARG, "Dispatch: a kernel program runs as a whole; dispatch "
                                    "(1, 1, 1)");
    const auto &bindings = cl->pipeline->program().bindings;
    Work work;
    work.program = cl->pipeline;
    for (size_t i = 0; i < bindings.size(); ++i) {
      uint64_t address = i < cl->rootViews.size() ? cl->rootViews[i] : 0;
      if (!address)
        return cl->fail(E_INVALIDARG, "Dispatch: root UAV " + std::to_string(i) + " (binding '" +
                                          bindings[i].name + "') is not set");
      work.addresses.push_back(reinterpret_cast<uint8_t *>(address));
      work.ranges.push_back({address, bindings[i].bytes});
      cl->checkAccess(address, bindings[i].bytes,
                      "Dispatch: root UAV " + std::to_string(i) + " ('" + bindings[i].name + "')");
    }
    cl->builder.addWork(std::move(work));
  } catch (const std::exception &e) {
    cl->fail(E_OUTOFMEMORY, std::string("Dispatch: ") + e.what());
  }
}

void barrier(D3D12DDI_HCOMMANDLIST h, UINT n, const D3D12DDI_BARRIER_CGC *barriers) {
  CommandList *cl = get<CommandList>(h.pDrvPrivate);
  try {
    std::vector<Range> ranges;
    bool global = false;
    for (UINT i = 0; i < n; ++i) {
      if (barriers[i].Scope == D3D12DDI_BARRIER_SCOPE_GLOBAL_CGC)
        global = true;
      else
        ranges.push_back({barriers[i].Range.StartAddress, barriers[i].Range.SizeInBytes});
    }
    cl->builder.addBarrier(global, std::move(ranges));
  } catch (const std::exception &e) {
    cl->fail(E_OUTOFMEMORY, std::string("Barrier: ") + e.what());
  }
}

void copyBufferRegion(D3D12DDI_HCOMMANDLIST h, uint64_t dst, uint64_t src, UINT64 bytes) {
  CommandList *cl = get<CommandList>(h.pDrvPrivate);
  try {
    Work work;
    work.copyDst = reinterpret_cast<uint8_t *>(dst);
    work.copySrc = reinterpret_cast<const uint8_t *>(src);
    work.copyBytes = bytes;
    work.ranges = {{dst, bytes}, {src, bytes}};
    cl->checkAccess(dst, bytes, "CopyBufferRegion (destination)");
    cl->checkAccess(src, bytes, "CopyBufferRegion (source)");
    cl->builder.addWork(std::move(work));
  } catch (const std::exception &e) {
    cl->fail(E_OUTOFMEMORY, std::string("CopyBufferRegion: ") + e.what());
  }
}

//===----------------------------------------------------------------------===//
// Queues
//===----------------------------------------------------------------------===//

HRESULT executeCommandLists(D3D12DDI_HCOMMANDQUEUE h, UINT n,
                            const D3D12DDI_HRECORDING_CGC *recordings) {
  Queue *queue = get<Queue>(h.pDrvPrivate);
  return guarded(queue->device, "ExecuteCommandLists", [&] {
    // A GPU faults on an access outside its memory, and the device is
    // removed: so here, found when the command was recorded, before any
    // list of the submission runs.
    for (UINT i = 0; i < n; ++i)
      if (const std::string &fault = get<Recording>(recordings[i].pDrvPrivate)->fault();
          !fault.empty()) {
        queue->device->error(std::string(CGC_DRIVER_NAME) + ": page fault in command list #" +
                             std::to_string(i) + " of the submission: " + fault);
        return DXGI_ERROR_DEVICE_HUNG;
      }
    for (UINT i = 0; i < n; ++i)
      get<Recording>(recordings[i].pDrvPrivate)->execute(queue->device->pool);
    return S_OK;
  });
}

//===----------------------------------------------------------------------===//
// Tables
//===----------------------------------------------------------------------===//

const D3D12DDI_DEVICE_FUNCS_CORE_CGC kDeviceFuncs = {
    destroyDevice,        createHeap,           destroyHeap,
    createStateObject,    addToStateObject,     destroyStateObject,
    getProgramIdentifier, createComputePipelineState, destroyPipelineState,
    createCommandList,    destroyCommandList,   createCommandQueue,
    destroyCommandQueue,  getCachedMlirProgramStatus, getProgramBindPoints,
    prepareMlirProgramConstants, prepareMlirProgramConstantsWithDigests,
};

const D3D12DDI_COMMAND_LIST_FUNCS_CGC kCommandListFuncs = {
    reset,    close,     destroyRecording, setProgram,      dispatchGraph, setPipelineState,
    setComputeRootUnorderedAccessView,     dispatch,        barrier,       copyBufferRegion,
};

const D3D12DDI_COMMAND_QUEUE_FUNCS_CGC kQueueFuncs = {executeCommandLists};

const D3D12DDI_ADAPTER_FUNCS_CGC kAdapterFuncs = {
    CGC_D3D12DDI_VERSION,
    sizeof(D3D12DDI_ADAPTER_FUNCS_CGC),
#if CGC_DRIVER_REFERENCE
    "cgc reference driver (each op alone on the plain reference evaluator)",
#else
    "cgc CPU driver",
#endif
    getCaps,
    createDevice,
    closeAdapter,
    &kDeviceFuncs,
    &kCommandListFuncs,
    &kQueueFuncs,
    getCompilerProperties,
};

} // namespace

extern "C" __attribute__((visibility("default"))) HRESULT
CgcD3D12DDIOpenAdapter(UINT32 runtimeVersion, const D3D12DDI_ADAPTER_FUNCS_CGC **funcs,
                       D3D12DDI_HADAPTER *adapter) {
  if (!funcs || !adapter)
    return E_INVALIDARG;
  if ((runtimeVersion >> 16) != CGC_D3D12DDI_VERSION_MAJOR)
    return E_NOINTERFACE;
  gRuntimeMinor.store(runtimeVersion & 0xFFFF);
  *funcs = &kAdapterFuncs;
  adapter->pDrvPrivate = nullptr;
  return S_OK;
}
