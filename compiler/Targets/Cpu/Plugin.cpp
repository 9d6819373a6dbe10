//===- Plugin.cpp - The CPU driver's compiler as a compiler plugin --------===//
//
// libcgc_compiler_plugin_cpu.so: the compiler plugin DDI
// (cgc/d3d12ddi_compiler.h) over the same code as the driver's JIT
// (PartitionCompiler.h, Jit.cpp), so that a state object compiler can
// build precompiled databases for the CPU driver with no device, and an
// offline toolchain can ask it for pattern declarations and specialization
// answers (GetCaps, MLIR_EXCHANGE). One adapter family (every x86-64 CPU),
// one ABI version, no application profiles (compiler_target.h).
//
// Values it stores, per MLIR program, under precompiledValueKey(family,
// MD5 of the Partition IR) -- what the driver derives at CreateStateObject:
//   OBJECT_CODE  the precompiled-program blob (cgc/precompiled_program.h):
//                the compiler identity, the partition digest, the kernel
//                program;
//   METADATA     JSON: {"compiler", "partition_md5", "program"} (the name of
//                the first program compiled to it).
//
// The cache callbacks come through SetCallbackDDITable on the plugin
// object, but the spec's CreateCompiler receives no plugin object: a
// compiler uses the callbacks of the plugin object opened last (hosts open
// one per process).
//
//===----------------------------------------------------------------------===//

#include "cgc/container.h"
#include "cgc/precompiled_program.h"
#include "compiler/Targets/Cpu/PartitionCompiler.h"
#include "compiler_target.h"
#include "jit.h"
#include "program.h"
#include "thread_pool.h"

// Last: <wsl/winadapter.h> defines `interface`.
#include "cgc/d3d12ddi_compiler.h"

#include <atomic>
#include <cstdio>
#include <cstring>
#include <new>
#include <string>
#include <vector>

using namespace cgc;

namespace {

struct PluginObject {
  bool selected = false;
  bool haveCallbacks = false;
  D3D12DDI_COMPILER_CACHE_CALLBACKS cache = {};
};

std::atomic<PluginObject *> gLastOpened{nullptr};

struct Compiler {
  PluginObject *plugin;
};

struct StateObject {
  size_t values = 0;
};

std::string narrowText(LPCWSTR text) {
  std::string out;
  for (; text && *text; ++text)
    out += *text < 0x80 ? char(*text) : '?';
  return out;
}

/// `text` as a JSON string literal.
std::string jsonString(const std::string &text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\u%04x", unsigned(c));
      out += escaped;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

bool validTarget(const D3D12DDI_COMPILER_TARGET *target) {
  return target && target->AdapterFamilyIndex == 0 && target->ABIVersion == cpu::kAbiVersion;
}

void APIENTRY destroyDDI(D3D12DDI_HCOMPILERDDI h) {
  auto *plugin = static_cast<PluginObject *>(h.pDrvPrivate);
  PluginObject *expected = plugin;
  gLastOpened.compare_exchange_strong(expected, nullptr);
  delete plugin;
}

HRESULT APIENTRY getSupportedVersions(D3D12DDI_HCOMPILERDDI, UINT32 *count, UINT64 *versions) {
  if (!count)
    return E_INVALIDARG;
  if (!versions) {
    *count = 1;
    return S_OK;
  }
  if (*count < 1)
    return DXGI_ERROR_MORE_DATA;
  versions[0] = CGC_COMPILER_PLUGIN_DDI_VERSION;
  *count = 1;
  return S_OK;
}

HRESULT APIENTRY setSelectedVersion(D3D12DDI_HCOMPILERDDI h, UINT64 pluginVersion,
                                    UINT64 usermodeVersion) {
  auto *plugin = static_cast<PluginObject *>(h.pDrvPrivate);
  // The interface version (upper 32 bits) must be ours; the build and
  // revision (lower 32) do not change the tables.
  if (!plugin || pluginVersion >> 32 != CGC_COMPILER_PLUGIN_DDI_VERSION >> 32 ||
      (usermodeVersion >> 16) != CGC_D3D12DDI_VERSION_MAJOR)
    return E_INVALIDARG;
  plugin->selected = true;
  return S_OK;
}

HRESULT APIENTRY getCaps(D3D12DDI_HCOMPILERDDI, const D3D12DDI_COMPILER_TARGET *target,
                         const D3D12DDI_APPLICATION_DESC *, const D3D12DDIARG_GETCAPS *caps) {
  if (!validTarget(target) || !caps || !caps->pData)
    return E_INVALIDARG;
  switch (caps->Type) {
  case D3D12DDI_CAPS_TYPE_MLIR:
    if (caps->DataSize != sizeof(D3D12DDI_OPTIONS_DATA_MLIR))
      return E_INVALIDARG;
    static_cast<D3D12DDI_OPTIONS_DATA_MLIR *>(caps->pData)->MlirProgramsTier =
        D3D12DDI_MLIR_PROGRAMS_TIER_2_0;
    return S_OK;
  case D3D12DDICAPS_TYPE_MLIR_INTERFACE_SUPPORT_0119: {
    if (caps->DataSize != sizeof(D3D12DDI_MLIR_INTERFACE_SUPPORT_0119))
      return E_INVALIDARG;
    auto *s = static_cast<D3D12DDI_MLIR_INTERFACE_SUPPORT_0119 *>(caps->pData);
    if (s->NumMlirInterfaces && (!s->pMlirInterfacesRequested || !s->pMlirInterfacesSupported))
      return E_INVALIDARG;
    for (UINT i = 0; i < s->NumMlirInterfaces; ++i) {
      Guid g;
      std::memcpy(&g, &s->pMlirInterfacesRequested[i], sizeof(g));
      s->pMlirInterfacesSupported[i] =
          g == interfaces::kSubgraphPartition || g == interfaces::kSubgraphDeclarationRequest ||
          g == interfaces::kSubgraphDeclaration ||
          g == interfaces::kSubgraphSpecializationRequest ||
          g == interfaces::kSubgraphSpecialization;
    }
    return S_OK;
  }
  case D3D12DDICAPS_TYPE_MLIR_EXCHANGE_0119: {
    if (caps->DataSize != sizeof(D3D12DDI_MLIR_EXCHANGE_0119))
      return E_INVALIDARG;
    auto *ex = static_cast<D3D12DDI_MLIR_EXCHANGE_0119 *>(caps->pData);
    if (!ex->OutputDataSizeInBytes || (ex->InputDataSizeInBytes && !ex->pInputData))
      return E_INVALIDARG;
    Guid g;
    std::memcpy(&g, &ex->MlirInterface, sizeof(g));
    try {
      return HRESULT(cpu::getJitInterface()->exchange(g, ex->pInputData, ex->InputDataSizeInBytes,
                                                      ex->pOutputData, ex->OutputDataSizeInBytes));
    } catch (const std::bad_alloc &) {
      return E_OUTOFMEMORY;
    } catch (...) {
      return E_FAIL;
    }
  }
  default:
    return DXGI_ERROR_UNSUPPORTED;
  }
}

HRESULT APIENTRY enumerateAdapterFamilies(D3D12DDI_HCOMPILERDDI, UINT index,
                                          D3D12DDI_COMPILER_ADAPTER_FAMILY *family) {
  if (!family)
    return E_INVALIDARG;
  if (index != 0)
    return DXGI_ERROR_NOT_FOUND;
  std::memset(family, 0, sizeof(*family));
  for (size_t i = 0; cpu::kAdapterFamily[i]; ++i)
    family->szAdapterFamily[i] = WCHAR(cpu::kAdapterFamily[i]);
  return S_OK;
}

HRESULT APIENTRY getAbiVersions(D3D12DDI_HCOMPILERDDI, UINT index, UINT *count,
                                UINT64 *versions) {
  if (index != 0) {
    if (count)
      *count = 0;
    return DXGI_ERROR_NOT_FOUND;
  }
  if (!count)
    return E_INVALIDARG;
  if (!versions) {
    *count = 1;
    return S_OK;
  }
  if (*count < 1) {
    *count = 1;
    return DXGI_ERROR_MORE_DATA;
  }
  versions[0] = cpu::kAbiVersion;
  *count = 1;
  return S_OK;
}

HRESULT APIENTRY getCompilerVersion(D3D12DDI_HCOMPILERDDI, UINT index, UINT64 *version) {
  if (!version)
    return E_INVALIDARG;
  if (index != 0)
    return DXGI_ERROR_NOT_FOUND;
  *version = compilerVersionNumber(cpu_target::compilerIdentity());
  return S_OK;
}

HRESULT APIENTRY getApplicationProfileVersion(D3D12DDI_HCOMPILERDDI,
                                              const D3D12DDI_COMPILER_TARGET *target,
                                              const D3D12DDI_APPLICATION_DESC *, UINT64 *version) {
  if (!validTarget(target) || !version)
    return E_INVALIDARG;
  *version = cpu::kApplicationProfileVersion;
  return S_OK;
}

SIZE_T APIENTRY calcCompilerSize(const D3D12DDI_COMPILER_TARGET *,
                                 const D3D12DDI_APPLICATION_DESC *) {
  return sizeof(Compiler);
}

HRESULT APIENTRY createCompiler(const D3D12DDI_COMPILER_TARGET *target,
                                const D3D12DDI_APPLICATION_DESC *, D3D12DDI_HCOMPILER h,
                                D3D12DDI_HRTCOMPILER) {
  PluginObject *plugin = gLastOpened.load();
  if (!validTarget(target) || !h.pDrvPrivate || !plugin || !plugin->haveCallbacks)
    return E_INVALIDARG;
  new (h.pDrvPrivate) Compiler{plugin};
  return S_OK;
}

void APIENTRY destroyCompiler(D3D12DDI_HCOMPILER h) {
  if (h.pDrvPrivate)
    static_cast<Compiler *>(h.pDrvPrivate)->~Compiler();
}

SIZE_T APIENTRY calcStateObjectSize(D3D12DDI_HCOMPILER,
                                    const D3D12DDIARG_CREATE_STATE_OBJECT_0054 *) {
  return sizeof(StateObject);
}

HRESULT compileStateObject(const Compiler &compiler, D3D12DDI_HRTCOMPILERCACHESESSION session,
                           D3D12DDI_COMPILER_VALUE_TYPE_FLAGS flags,
                           const D3D12DDIARG_CREATE_STATE_OBJECT_0054 *args, StateObject &out) {
  const D3D12DDI_COMPILER_CACHE_CALLBACKS &cache = compiler.plugin->cache;
  auto report = [&](const std::string &text) {
    if (cache.pfnCompilerCacheMessageCgc)
      cache.pfnCompilerCacheMessageCgc(session, text.c_str());
    return E_INVALIDARG;
  };
  if (!args || (args->NumSubobjects && !args->pSubobjects))
    return E_INVALIDARG;
  std::vector<std::string> keys;
  for (UINT i = 0; i < args->NumSubobjects; ++i) {
    const D3D12DDI_STATE_SUBOBJECT_0054 &sub = args->pSubobjects[i];
    if (sub.Type != D3D12DDI_STATE_SUBOBJECT_TYPE_MLIR_PROGRAM || !sub.pDesc)
      return report("subobject #" + std::to_string(i) +
                    " is not an MLIR program; the CPU compiler compiles MLIR programs only");
    const auto *desc = static_cast<const D3D12DDI_MLIR_PROGRAM_DESC_0119 *>(sub.pDesc);
    std::string where = "MLIR program '" + narrowText(desc->ProgramName) + "'";
    ContainerReader reader;
    std::string error;
    if (!reader.open(desc->pBytecode, desc->BytecodeSizeInBytes, error))
      return report(where + ": " + error);
    auto mlir = reader.find(parts::kMLIR);
    Guid iface;
    ByteView bytecode;
    if (mlir.size() != 1 || !ContainerReader::splitMLIRPart(*mlir[0], iface, bytecode, error))
      return report(where + ": the container needs exactly one valid 'MLIR' part " + error);
    if (iface != interfaces::kSubgraphPartition)
      return report(where + ": the MLIR part is not CGC_SUBGRAPH_PARTITION");
    Md5Digest digest = digestBytecode(bytecode);
    std::string key = precompiledValueKey(cpu::kAdapterFamily, digest);
    keys.push_back(key);
    D3D12DDI_COMPILER_CACHE_VALUE_KEY valueKey = {key.data(), UINT(key.size())};
    // Equal partitions (another program, another state object) share a value.
    D3D12DDI_COMPILER_CACHE_TYPED_VALUE probe = {
        flags & D3D12DDI_COMPILER_VALUE_TYPE_FLAGS_OBJECT_CODE
            ? D3D12DDI_COMPILER_CACHE_VALUE_TYPE_OBJECT_CODE
            : D3D12DDI_COMPILER_CACHE_VALUE_TYPE_METADATA,
        {nullptr, 0}};
    if (cache.pfnCompilerCacheFindValue(session, &valueKey, &probe, 1) == S_OK)
      continue;
    std::vector<uint8_t> blob;
    if (!cpu_target::precompilePartition(bytecode, blob, error))
      return report(where + ": " + error);
    std::string metadata = std::string("{\"compiler\": ") +
                           jsonString(cpu_target::compilerIdentity()) +
                           ", \"partition_md5\": \"" + digestHex(digest) +
                           "\", \"program\": " + jsonString(narrowText(desc->ProgramName)) + "}";
    std::vector<D3D12DDI_COMPILER_CACHE_TYPED_CONST_VALUE> values;
    if (flags & D3D12DDI_COMPILER_VALUE_TYPE_FLAGS_OBJECT_CODE)
      values.push_back({D3D12DDI_COMPILER_CACHE_VALUE_TYPE_OBJECT_CODE, {blob.data(), blob.size()}});
    if (flags & D3D12DDI_COMPILER_VALUE_TYPE_FLAGS_METADATA)
      values.push_back(
          {D3D12DDI_COMPILER_CACHE_VALUE_TYPE_METADATA, {metadata.data(), metadata.size()}});
    if (values.empty())
      continue;
    HRESULT hr = cache.pfnCompilerCacheStoreValue(session, &valueKey, values.data(),
                                                  UINT(values.size()));
    if (FAILED(hr) && hr != DXGI_ERROR_ALREADY_EXISTS)
      return report(where + ": the cache refused its values");
    out.values += hr == S_OK;
  }
  std::vector<D3D12DDI_COMPILER_CACHE_VALUE_KEY> valueKeys;
  for (const std::string &key : keys)
    valueKeys.push_back({key.data(), UINT(key.size())});
  return cache.pfnCompilerCacheSetObjectValueKeys(session, valueKeys.data(),
                                                  UINT(valueKeys.size()));
}

HRESULT APIENTRY compileCreateStateObject(D3D12DDI_HCOMPILER h,
                                          D3D12DDI_HRTCOMPILERCACHESESSION session,
                                          D3D12DDI_COMPILER_VALUE_TYPE_FLAGS flags,
                                          const D3D12DDIARG_CREATE_STATE_OBJECT_0054 *args,
                                          D3D12DDI_HCOMPILERSTATEOBJECT so) {
  auto *compiler = static_cast<Compiler *>(h.pDrvPrivate);
  if (!compiler || !so.pDrvPrivate)
    return E_INVALIDARG;
  auto *object = new (so.pDrvPrivate) StateObject();
  try {
    return compileStateObject(*compiler, session, flags, args, *object);
  } catch (const std::bad_alloc &) {
    return E_OUTOFMEMORY;
  } catch (...) {
    return E_FAIL;
  }
}

void APIENTRY destroyStateObject(D3D12DDI_HCOMPILER, D3D12DDI_HCOMPILERSTATEOBJECT so) {
  if (so.pDrvPrivate)
    static_cast<StateObject *>(so.pDrvPrivate)->~StateObject();
}

/// Prepares `program`'s constants as its driver would at load, recording
/// the blocks (prepared.h), and stores them as one value.
HRESULT prepareConstants(const Compiler &compiler, D3D12DDI_HRTCOMPILERCACHESESSION session,
                         const D3D12DDI_MLIR_PROGRAM_DESC_0119 *desc, UINT count,
                         const D3D12DDI_MLIR_PROGRAM_CONSTANT_CGC *constants, UINT threads) {
  const D3D12DDI_COMPILER_CACHE_CALLBACKS &cache = compiler.plugin->cache;
  auto report = [&](const std::string &text) {
    if (cache.pfnCompilerCacheMessageCgc)
      cache.pfnCompilerCacheMessageCgc(session, text.c_str());
    return E_INVALIDARG;
  };
  if (!desc || (count && !constants) || threads == 0 || threads > 1024)
    return E_INVALIDARG;
  std::string where = "MLIR program '" + narrowText(desc->ProgramName) + "'";
  ContainerReader reader;
  std::string error;
  if (!reader.open(desc->pBytecode, desc->BytecodeSizeInBytes, error))
    return report(where + ": " + error);
  auto mlir = reader.find(parts::kMLIR);
  Guid iface;
  ByteView bytecode;
  if (mlir.size() != 1 || !ContainerReader::splitMLIRPart(*mlir[0], iface, bytecode, error))
    return report(where + ": the container needs exactly one valid 'MLIR' part " + error);
  KernelProgram lowered;
  if (!cpu_target::compilePartition(bytecode.data, bytecode.size, lowered, error))
    return report(where + ": " + error);
  auto program = cpu::CompiledProgram::create(std::move(lowered), cpu::KernelConfig(), error);
  if (!program)
    return report(where + ": " + error);
  const auto &declared = program->program().bindings;
  std::vector<uint8_t *> bindings(declared.size(), nullptr);
  std::vector<std::array<uint8_t, 16>> digests(declared.size());
  for (UINT i = 0; i < count; ++i) {
    const UINT b = constants[i].BindPointIndex;
    if (b >= declared.size() || !declared[b].constant || bindings[b] || !constants[i].pData ||
        constants[i].SizeInBytes < declared[b].bytes)
      return report(where + ": constant #" + std::to_string(i) + " (bind point " +
                    std::to_string(b) + ") is not a constant bind point given once with its "
                    "bytes");
    bindings[b] = static_cast<uint8_t *>(const_cast<void *>(constants[i].pData));
    std::memcpy(digests[b].data(), constants[i].Digest.Digest, 16);
  }
  std::vector<cpu::prepared::Range> ranges;
  std::vector<std::array<uint8_t, 16>> keyDigests;
  for (size_t b = 0; b < declared.size(); ++b) {
    if (!declared[b].constant)
      continue;
    if (!bindings[b])
      return report(where + ": constant bind point " + std::to_string(b) + " '" +
                    declared[b].name + "' is not given");
    ranges.push_back({bindings[b], size_t(declared[b].bytes), digests[b]});
    keyDigests.push_back(digests[b]);
  }
  if (ranges.empty())
    return S_FALSE; // nothing to prepare
  cpu::ThreadPool pool(static_cast<int>(threads));
  cpu::prepared::Context context(cpu::prepared::Context::Mode::Record, std::move(ranges));
  program->prepareConstants(bindings, pool, &context);
  std::vector<cpu::prepared::Context::Block> blocks = context.takeRecorded();
  std::vector<cpu::PreparedBlockRef> refs;
  for (const auto &block : blocks)
    refs.push_back({block.key, block.data.data(), block.data.size()});
  std::vector<uint8_t> value = cpu::writePreparedValue(refs);
  std::string key = cpu::preparedValueKey(digestBytecode(bytecode), keyDigests,
                                          program->preparedSignature(size_t(pool.size())));
  D3D12DDI_COMPILER_CACHE_VALUE_KEY valueKey = {key.data(), UINT(key.size())};
  D3D12DDI_COMPILER_CACHE_TYPED_CONST_VALUE typed = {
      D3D12DDI_COMPILER_CACHE_VALUE_TYPE_PREPARED_CONSTANTS_CGC, {value.data(), value.size()}};
  HRESULT hr = cache.pfnCompilerCacheStoreValue(session, &valueKey, &typed, 1);
  if (FAILED(hr) && hr != DXGI_ERROR_ALREADY_EXISTS)
    return report(where + ": the cache refused its prepared constants");
  return S_OK;
}

HRESULT APIENTRY prepareConstantsEntry(D3D12DDI_HCOMPILER h, D3D12DDI_HRTCOMPILERCACHESESSION session,
                                       const D3D12DDI_MLIR_PROGRAM_DESC_0119 *desc, UINT count,
                                       const D3D12DDI_MLIR_PROGRAM_CONSTANT_CGC *constants,
                                       UINT threads) {
  auto *compiler = static_cast<Compiler *>(h.pDrvPrivate);
  if (!compiler)
    return E_INVALIDARG;
  try {
    return prepareConstants(*compiler, session, desc, count, constants, threads);
  } catch (const std::bad_alloc &) {
    return E_OUTOFMEMORY;
  } catch (const std::exception &e) {
    if (compiler->plugin->cache.pfnCompilerCacheMessageCgc)
      compiler->plugin->cache.pfnCompilerCacheMessageCgc(session, e.what());
    return E_FAIL;
  }
}

HRESULT APIENTRY fillDDITable(D3D12DDI_HCOMPILERDDI h, D3D12DDI_COMPILER_TABLE_TYPE type,
                              void *table, SIZE_T size) {
  auto *plugin = static_cast<PluginObject *>(h.pDrvPrivate);
  if (!plugin || !plugin->selected || !table)
    return E_INVALIDARG;
  if (type == D3D12DDI_COMPILER_TABLE_TYPE_CAPABILITIES) {
    static const D3D12DDI_COMPILER_CAPABILITIES_FUNCS caps = {
        getCaps, enumerateAdapterFamilies, getAbiVersions, getCompilerVersion,
        getApplicationProfileVersion};
    if (size != sizeof(caps))
      return E_INVALIDARG;
    std::memcpy(table, &caps, sizeof(caps));
    return S_OK;
  }
  if (type == D3D12DDI_COMPILER_TABLE_TYPE_COMPILER) {
    static const D3D12DDI_COMPILER_FUNCS funcs = {
        calcCompilerSize,    createCompiler,           destroyCompiler,
        calcStateObjectSize, compileCreateStateObject, destroyStateObject};
    if (size != sizeof(funcs))
      return E_INVALIDARG;
    std::memcpy(table, &funcs, sizeof(funcs));
    return S_OK;
  }
  if (type == D3D12DDI_COMPILER_TABLE_TYPE_CONSTANTS_CGC) {
    static const D3D12DDI_COMPILER_CONSTANTS_FUNCS_CGC funcs = {prepareConstantsEntry};
    if (size != sizeof(funcs))
      return E_INVALIDARG;
    std::memcpy(table, &funcs, sizeof(funcs));
    return S_OK;
  }
  return E_INVALIDARG;
}

HRESULT APIENTRY setCallbackDDITable(D3D12DDI_HCOMPILERDDI h,
                                     D3D12DDI_COMPILER_CALLBACK_TABLE_TYPE type, const void *table,
                                     SIZE_T size) {
  auto *plugin = static_cast<PluginObject *>(h.pDrvPrivate);
  if (!plugin || !plugin->selected || type != D3D12DDI_COMPILER_CALLBACK_TABLE_TYPE_CACHE ||
      !table || size != sizeof(D3D12DDI_COMPILER_CACHE_CALLBACKS))
    return E_INVALIDARG;
  std::memcpy(&plugin->cache, table, size);
  if (!plugin->cache.pfnCompilerCacheFindValue || !plugin->cache.pfnCompilerCacheStoreValue ||
      !plugin->cache.pfnCompilerCacheSetObjectValueKeys)
    return E_INVALIDARG;
  plugin->haveCallbacks = true;
  return S_OK;
}

const D3D12DDI_COMPILER_DDI_FUNCS kDDIFuncs = {destroyDDI, getSupportedVersions,
                                               setSelectedVersion, fillDDITable,
                                               setCallbackDDITable};

} // namespace

extern "C" __attribute__((visibility("default"))) HRESULT APIENTRY
D3D12OpenCompilerDDI(D3D12DDIARG_COMPILER_OPEN_DDI *args) {
  if (!args)
    return E_INVALIDARG;
  auto *plugin = new (std::nothrow) PluginObject();
  if (!plugin)
    return E_OUTOFMEMORY;
  gLastOpened.store(plugin);
  args->hCompilerDDI.pDrvPrivate = plugin;
  args->pDDIFuncs = &kDDIFuncs;
  return S_OK;
}
