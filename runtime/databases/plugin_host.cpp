//===- plugin_host.cpp - Hosting a compiler plugin ------------------------===//

#include "plugin_host.h"

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <dlfcn.h>
#include <memory>

namespace cgc::soc {

std::string versionText(uint64_t v) {
  return std::to_string(v >> 48) + "." + std::to_string((v >> 32) & 0xFFFF) + "." +
         std::to_string((v >> 16) & 0xFFFF) + "." + std::to_string(v & 0xFFFF);
}

static std::string ddiVersionText(uint64_t v) {
  return std::to_string((v >> 48) & 0xFFFF) + "." + std::to_string((v >> 32) & 0xFFFF);
}

static std::string hr(HRESULT h) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%08X", unsigned(h));
  return text;
}

static std::wstring widen(const std::string &s) { return std::wstring(s.begin(), s.end()); }

static std::string narrowName(const WCHAR *text, size_t max) {
  std::string out;
  for (size_t i = 0; i < max && text[i]; ++i)
    out += text[i] < 0x80 ? char(text[i]) : '?';
  return out;
}

namespace {

/// One Compile* call's cache session (D3D12DDI_HRTCOMPILERCACHESESSION).
struct Session {
  db::PrecompiledDatabase *psdb = nullptr;
  std::vector<db::Bytes> keys;
  bool keysSet = false;
  std::vector<std::string> messages;
  size_t stored = 0, shared = 0;
};

Session *session(D3D12DDI_HRTCOMPILERCACHESESSION h) { return static_cast<Session *>(h.handle); }

db::Bytes keyBytes(const D3D12DDI_COMPILER_CACHE_VALUE_KEY *key) {
  const auto *p = static_cast<const uint8_t *>(key->pKey);
  return db::Bytes(p, p + key->KeySize);
}

HRESULT APIENTRY findValueCb(D3D12DDI_HRTCOMPILERCACHESESSION h,
                             const D3D12DDI_COMPILER_CACHE_VALUE_KEY *key,
                             D3D12DDI_COMPILER_CACHE_TYPED_VALUE *values, UINT count) {
  Session *s = session(h);
  if (!s || !key || (!key->pKey && key->KeySize) || !values || !count)
    return E_INVALIDARG;
  try {
    HRESULT result = S_OK;
    for (UINT i = 0; i < count; ++i) {
      if (values[i].Type == D3D12DDI_COMPILER_CACHE_VALUE_TYPE_PREPARED_CONSTANTS_CGC) {
        // Beside the database: presence and size only.
        auto external = s->psdb->findExternalValue(keyBytes(key), values[i].Type);
        if (!external)
          return DXGI_ERROR_NOT_FOUND;
        values[i].Value.ValueSize = SIZE_T(external->size);
        continue;
      }
      if (values[i].Type >= D3D12DDI_COMPILER_CACHE_VALUE_TYPE_MAX_VALID)
        return E_INVALIDARG;
      auto found = s->psdb->findValue(keyBytes(key), db::ValueType(values[i].Type));
      if (!found)
        return DXGI_ERROR_NOT_FOUND;
      D3D12DDI_COMPILER_CACHE_VALUE &out = values[i].Value;
      if (out.ValueSize && out.pValue) {
        if (out.ValueSize < found->size())
          result = DXGI_ERROR_MORE_DATA;
        else
          std::memcpy(out.pValue, found->data(), found->size());
      }
      out.ValueSize = found->size();
    }
    return result;
  } catch (const db::Error &e) {
    s->messages.push_back(e.what());
    return E_FAIL;
  }
}

HRESULT APIENTRY storeValueCb(D3D12DDI_HRTCOMPILERCACHESESSION h,
                              const D3D12DDI_COMPILER_CACHE_VALUE_KEY *key,
                              const D3D12DDI_COMPILER_CACHE_TYPED_CONST_VALUE *values,
                              UINT count) {
  Session *s = session(h);
  if (!s || !key || !key->pKey || !key->KeySize || !values || !count)
    return E_INVALIDARG;
  uint32_t seen = 0;
  for (UINT i = 0; i < count; ++i) {
    const bool prepared = values[i].Type == D3D12DDI_COMPILER_CACHE_VALUE_TYPE_PREPARED_CONSTANTS_CGC;
    const uint32_t bit = prepared ? 1u << 16 : 1u << values[i].Type;
    if ((!prepared && values[i].Type >= D3D12DDI_COMPILER_CACHE_VALUE_TYPE_MAX_VALID) ||
        !values[i].Value.pValue || !values[i].Value.ValueSize || (seen & bit))
      return E_INVALIDARG;
    seen |= bit;
  }
  try {
    db::Bytes k = keyBytes(key);
    // Prepared constants go beside the database (large, mapped at load).
    if (seen & (1u << 16)) {
      if (count != 1)
        return E_INVALIDARG;
      const auto *p = static_cast<const uint8_t *>(values[0].Value.pValue);
      if (!s->psdb->storeExternalValue(k, values[0].Type,
                                       db::Bytes(p, p + values[0].Value.ValueSize))) {
        ++s->shared;
        return DXGI_ERROR_ALREADY_EXISTS;
      }
      ++s->stored;
      return S_OK;
    }
    for (UINT i = 0; i < count; ++i)
      if (s->psdb->findValue(k, db::ValueType(values[i].Type))) {
        ++s->shared;
        return DXGI_ERROR_ALREADY_EXISTS;
      }
    for (UINT i = 0; i < count; ++i) {
      const auto *p = static_cast<const uint8_t *>(values[i].Value.pValue);
      s->psdb->storeValue(k, db::ValueType(values[i].Type),
                          db::Bytes(p, p + values[i].Value.ValueSize));
    }
    ++s->stored;
    return S_OK;
  } catch (const db::Error &e) {
    s->messages.push_back(e.what());
    return E_FAIL;
  }
}

HRESULT APIENTRY setObjectValueKeysCb(D3D12DDI_HRTCOMPILERCACHESESSION h,
                                      const D3D12DDI_COMPILER_CACHE_VALUE_KEY *keys, UINT count) {
  Session *s = session(h);
  if (!s || (count && !keys))
    return E_INVALIDARG;
  if (s->keysSet) {
    s->messages.push_back("the plugin called SetObjectValueKeys twice for one state object");
    return E_INVALIDARG;
  }
  for (UINT i = 0; i < count; ++i) {
    if (!keys[i].pKey || !keys[i].KeySize)
      return E_INVALIDARG;
    s->keys.push_back(keyBytes(&keys[i]));
  }
  s->keysSet = true;
  return S_OK;
}

void APIENTRY messageCb(D3D12DDI_HRTCOMPILERCACHESESSION h, const char *message) {
  if (Session *s = session(h); s && message)
    s->messages.push_back(message);
}

const D3D12DDI_COMPILER_CACHE_CALLBACKS kCallbacks = {findValueCb, storeValueCb,
                                                      setObjectValueKeysCb, messageCb};

/// Memory the plugin constructs an object in (aligned for any type).
struct PrivateMemory {
  explicit PrivateMemory(size_t bytes)
      : storage((bytes + sizeof(std::max_align_t) - 1) / sizeof(std::max_align_t) + 1) {}
  void *data() { return storage.data(); }
  std::vector<std::max_align_t> storage;
};

/// An application description with the strings it points to.
struct AppDesc {
  explicit AppDesc(const std::optional<db::ApplicationDesc> &app) {
    if (!app)
      return;
    exe = widen(app->exeFilename);
    name = widen(app->name);
    engine = widen(app->engineName.value_or(""));
    desc = {exe.c_str(), name.c_str(), app->version,
            app->engineName ? engine.c_str() : nullptr, app->engineVersion};
    present = true;
  }
  const D3D12DDI_APPLICATION_DESC *get() const { return present ? &desc : nullptr; }
  std::wstring exe, name, engine;
  D3D12DDI_APPLICATION_DESC desc = {};
  bool present = false;
};

} // namespace

Plugin::Plugin(const std::string &path) : path_(path) {
  auto fail = [&](const std::string &what) -> PluginError {
    return PluginError("compiler plugin '" + path + "': " + what);
  };
  library_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!library_)
    throw fail(std::string("cannot load it: ") + dlerror());
  auto open = reinterpret_cast<PFND3D12DDI_COMPILER_OPEN_DDI>(
      dlsym(library_, CGC_COMPILER_PLUGIN_OPEN_NAME));
  if (!open) {
    dlclose(library_);
    throw fail("it does not export " CGC_COMPILER_PLUGIN_OPEN_NAME);
  }
  D3D12DDIARG_COMPILER_OPEN_DDI args = {{this}, {}, nullptr};
  HRESULT h = open(&args);
  if (FAILED(h) || !args.pDDIFuncs || !args.pDDIFuncs->pfnDestroyCompilerDDI ||
      !args.pDDIFuncs->pfnGetSupportedVersions || !args.pDDIFuncs->pfnSetSelectedVersion ||
      !args.pDDIFuncs->pfnFillDDITable || !args.pDDIFuncs->pfnSetCallbackDDITable) {
    dlclose(library_);
    throw fail(FAILED(h) ? "D3D12OpenCompilerDDI failed (" + hr(h) + ")"
                         : "D3D12OpenCompilerDDI returned an incomplete function table");
  }
  ddi_ = args.pDDIFuncs;
  handle_ = args.hCompilerDDI;
  try {
    UINT32 count = 0;
    if (FAILED(h = ddi_->pfnGetSupportedVersions(handle_, &count, nullptr)) || !count ||
        count > 1024)
      throw fail("it reports no plugin DDI version (" + hr(h) + ")");
    std::vector<UINT64> versions(count);
    if (FAILED(h = ddi_->pfnGetSupportedVersions(handle_, &count, versions.data())))
      throw fail("GetSupportedVersions failed (" + hr(h) + ")");
    versions.resize(std::min<size_t>(count, versions.size()));
    for (UINT64 v : versions)
      if (v >> 32 == CGC_COMPILER_PLUGIN_DDI_VERSION >> 32) {
        selected_ = v;
        break;
      }
    if (!selected_) {
      std::string listed;
      for (UINT64 v : versions)
        listed += (listed.empty() ? "" : ", ") + ddiVersionText(v);
      throw fail("it supports plugin DDI version" + std::string(versions.size() > 1 ? "s " : " ") +
                 listed + "; this host needs " + ddiVersionText(CGC_COMPILER_PLUGIN_DDI_VERSION));
    }
    if (FAILED(h = ddi_->pfnSetSelectedVersion(handle_, selected_, CGC_D3D12DDI_VERSION)))
      throw fail("it refused plugin DDI version " + ddiVersionText(selected_) +
                 " with usermode DDI " + std::to_string(CGC_D3D12DDI_VERSION_MAJOR) + "." +
                 std::to_string(CGC_D3D12DDI_VERSION_MINOR) + " (" + hr(h) + ")");
    if (FAILED(h = ddi_->pfnFillDDITable(handle_, D3D12DDI_COMPILER_TABLE_TYPE_CAPABILITIES,
                                         &caps_, sizeof(caps_))) ||
        !caps_.pfnGetCaps || !caps_.pfnEnumerateAdapterFamilies ||
        !caps_.pfnGetAdapterFamilyABIVersions || !caps_.pfnGetCompilerVersion ||
        !caps_.pfnGetApplicationProfileVersion)
      throw fail("it did not fill the capabilities table (" + hr(h) + ")");
    if (FAILED(h = ddi_->pfnFillDDITable(handle_, D3D12DDI_COMPILER_TABLE_TYPE_COMPILER,
                                         &compiler_, sizeof(compiler_))) ||
        !compiler_.pfnCalcPrivateCompilerSize || !compiler_.pfnCreateCompiler ||
        !compiler_.pfnDestroyCompiler || !compiler_.pfnCalcPrivateStateObjectSize ||
        !compiler_.pfnCompileCreateStateObject || !compiler_.pfnDestroyStateObject)
      throw fail("it did not fill the compiler table (" + hr(h) + ")");
    // Optional: a plugin that does not prepare constants refuses the table.
    if (FAILED(ddi_->pfnFillDDITable(handle_, D3D12DDI_COMPILER_TABLE_TYPE_CONSTANTS_CGC,
                                     &constants_, sizeof(constants_))))
      constants_ = {};
    if (FAILED(h = ddi_->pfnSetCallbackDDITable(handle_, D3D12DDI_COMPILER_CALLBACK_TABLE_TYPE_CACHE,
                                                &kCallbacks, sizeof(kCallbacks))))
      throw fail("it refused the cache callbacks (" + hr(h) + ")");
  } catch (...) {
    ddi_->pfnDestroyCompilerDDI(handle_);
    dlclose(library_);
    throw;
  }
}

Plugin::~Plugin() {
  ddi_->pfnDestroyCompilerDDI(handle_);
  dlclose(library_);
}

std::vector<AdapterFamily> Plugin::adapterFamilies() {
  std::vector<AdapterFamily> families;
  for (UINT i = 0; i < 1024; ++i) {
    D3D12DDI_COMPILER_ADAPTER_FAMILY family = {};
    HRESULT h = caps_.pfnEnumerateAdapterFamilies(handle_, i, &family);
    if (h == DXGI_ERROR_NOT_FOUND)
      break;
    if (FAILED(h))
      throw PluginError("compiler plugin '" + path_ + "': EnumerateAdapterFamilies(" +
                        std::to_string(i) + ") failed (" + hr(h) + ")");
    AdapterFamily f;
    f.name = narrowName(family.szAdapterFamily, std::size(family.szAdapterFamily));
    UINT count = 0;
    if (FAILED(h = caps_.pfnGetAdapterFamilyABIVersions(handle_, i, &count, nullptr)) || !count ||
        count > 1024)
      throw PluginError("compiler plugin '" + path_ + "': adapter family '" + f.name +
                        "' reports no ABI version (" + hr(h) + ")");
    f.abiVersions.resize(count);
    if (FAILED(h = caps_.pfnGetAdapterFamilyABIVersions(handle_, i, &count, f.abiVersions.data())))
      throw PluginError("compiler plugin '" + path_ + "': GetAdapterFamilyABIVersions failed (" +
                        hr(h) + ")");
    f.abiVersions.resize(std::min<size_t>(count, f.abiVersions.size()));
    for (UINT64 abi : f.abiVersions)
      if (abi == 0 || abi == UINT64_MAX)
        throw PluginError("compiler plugin '" + path_ + "': adapter family '" + f.name +
                          "' reports reserved ABI version " + std::to_string(abi));
    if (FAILED(h = caps_.pfnGetCompilerVersion(handle_, i, &f.compilerVersion)))
      throw PluginError("compiler plugin '" + path_ + "': GetCompilerVersion failed (" + hr(h) +
                        ")");
    families.push_back(std::move(f));
  }
  return families;
}

UINT Plugin::familyIndex(const std::string &nameOrIndex) {
  auto families = adapterFamilies();
  if (families.empty())
    throw PluginError("compiler plugin '" + path_ + "' has no adapter family");
  if (nameOrIndex.empty())
    return 0;
  for (size_t i = 0; i < families.size(); ++i)
    if (families[i].name == nameOrIndex)
      return UINT(i);
  if (nameOrIndex.find_first_not_of("0123456789") == std::string::npos &&
      nameOrIndex.size() < 6 && std::stoul(nameOrIndex) < families.size())
    return UINT(std::stoul(nameOrIndex));
  std::string names;
  for (const auto &f : families)
    names += (names.empty() ? "'" : ", '") + f.name + "'";
  throw PluginError("compiler plugin '" + path_ + "' has no adapter family '" + nameOrIndex +
                    "' (it has " + names + ")");
}

uint64_t Plugin::applicationProfileVersion(UINT family, uint64_t abi,
                                           const std::optional<db::ApplicationDesc> &app) {
  AppDesc desc(app);
  D3D12DDI_COMPILER_TARGET target = {family, abi};
  UINT64 version = 0;
  HRESULT h = caps_.pfnGetApplicationProfileVersion(handle_, &target, desc.get(), &version);
  if (FAILED(h))
    throw PluginError("compiler plugin '" + path_ + "': GetApplicationProfileVersion failed (" +
                      hr(h) + ")");
  return version;
}

Plugin::Result Plugin::compile(db::StateObjectDatabase &sodb, db::PrecompiledDatabase &psdb,
                               UINT family, uint64_t abi, uint32_t valueTypes,
                               const std::optional<db::Bytes> &onlyKey) {
  auto app = sodb.applicationDesc();
  AppDesc desc(app);
  D3D12DDI_COMPILER_TARGET target = {family, abi};
  PrivateMemory compilerMemory(compiler_.pfnCalcPrivateCompilerSize(&target, desc.get()));
  D3D12DDI_HCOMPILER compiler = {compilerMemory.data()};
  HRESULT h = compiler_.pfnCreateCompiler(&target, desc.get(), compiler, {this});
  if (FAILED(h))
    throw PluginError("compiler plugin '" + path_ + "': CreateCompiler for adapter family #" +
                      std::to_string(family) + ", ABI " + std::to_string(abi) + " failed (" +
                      hr(h) + ")");
  struct Destroy {
    const D3D12DDI_COMPILER_FUNCS &f;
    D3D12DDI_HCOMPILER c;
    ~Destroy() { f.pfnDestroyCompiler(c); }
  } destroy{compiler_, compiler};

  std::vector<db::Bytes> keys;
  if (onlyKey) {
    if (!sodb.findObjectVersion(*onlyKey))
      throw PluginError(sodb.path() + ": no state object has key '" + db::keyText(*onlyKey) + "'");
    keys.push_back(*onlyKey);
  } else {
    keys = sodb.stateObjectKeys();
  }
  Result result;
  for (const db::Bytes &key : keys) {
    auto object = sodb.findStateObject(key);
    if (!object)
      continue;
    std::vector<std::wstring> names;
    std::vector<D3D12DDI_MLIR_PROGRAM_DESC_0119> programs;
    names.reserve(object->programs.size());
    for (const auto &p : object->programs) {
      names.push_back(widen(p.name));
      programs.push_back({names.back().c_str(), p.bytecode.data(), p.bytecode.size()});
    }
    std::vector<D3D12DDI_STATE_SUBOBJECT_0054> subobjects;
    for (const auto &p : programs)
      subobjects.push_back({D3D12DDI_STATE_SUBOBJECT_TYPE_MLIR_PROGRAM, &p});
    D3D12DDIARG_CREATE_STATE_OBJECT_0054 args = {D3D12DDI_STATE_OBJECT_TYPE_EXECUTABLE,
                                                 UINT(subobjects.size()), subobjects.data()};
    PrivateMemory soMemory(compiler_.pfnCalcPrivateStateObjectSize(compiler, &args));
    D3D12DDI_HCOMPILERSTATEOBJECT so = {soMemory.data()};
    Session session;
    session.psdb = &psdb;
    struct DestroyObject {
      const D3D12DDI_COMPILER_FUNCS &f;
      D3D12DDI_HCOMPILER c;
      D3D12DDI_HCOMPILERSTATEOBJECT so;
      ~DestroyObject() { f.pfnDestroyStateObject(c, so); }
    } destroyObject{compiler_, compiler, so};
    psdb.transaction([&] {
      h = compiler_.pfnCompileCreateStateObject(
          compiler, {&session}, D3D12DDI_COMPILER_VALUE_TYPE_FLAGS(valueTypes), &args, so);
      if (SUCCEEDED(h) && !session.keysSet) {
        session.messages.push_back("the plugin did not call SetObjectValueKeys");
        h = E_FAIL;
      }
      if (FAILED(h)) {
        std::string text;
        for (const auto &m : session.messages)
          text += "\n  " + m;
        throw PluginError("compiler plugin '" + path_ + "': state object '" + db::keyText(key) +
                          "' did not compile (" + hr(h) + ")" + text);
      }
      psdb.storeGroup(key, object->version, session.keys);
    });
    ++result.stateObjects;
    result.programs += object->programs.size();
    result.valuesStored += session.stored;
    result.valuesShared += session.shared;
  }
  return result;
}

HRESULT Plugin::getCaps(UINT family, uint64_t abi, const D3D12DDIARG_GETCAPS &caps) {
  D3D12DDI_COMPILER_TARGET target = {family, abi};
  return caps_.pfnGetCaps(handle_, &target, nullptr, &caps);
}

std::vector<uint8_t> Plugin::exchange(UINT family, uint64_t abi, const GUID &mlirInterface,
                                      const void *input, size_t inputSize) {
  D3D12DDI_COMPILER_TARGET target = {family, abi};
  SIZE_T size = 0;
  D3D12DDI_MLIR_EXCHANGE_0119 ex = {mlirInterface, input, inputSize, nullptr, &size};
  D3D12DDIARG_GETCAPS caps = {D3D12DDICAPS_TYPE_MLIR_EXCHANGE_0119, 0, nullptr, &ex,
                              UINT(sizeof(ex))};
  HRESULT h = caps_.pfnGetCaps(handle_, &target, nullptr, &caps);
  if (FAILED(h))
    throw PluginError("compiler plugin '" + path_ + "': the MLIR exchange failed (" + hr(h) +
                      ")");
  std::vector<uint8_t> answer(size);
  ex.pOutputData = answer.data();
  if (FAILED(h = caps_.pfnGetCaps(handle_, &target, nullptr, &caps)))
    throw PluginError("compiler plugin '" + path_ + "': the MLIR exchange failed (" + hr(h) +
                      ")");
  answer.resize(size);
  return answer;
}

bool Plugin::prepareConstants(db::PrecompiledDatabase &psdb, UINT family, uint64_t abi,
                              const std::string &programName,
                              const std::vector<uint8_t> &container,
                              const std::vector<Constant> &constants, UINT threads) {
  if (!preparesConstants())
    throw PluginError("compiler plugin '" + path_ + "' does not prepare constants");
  D3D12DDI_COMPILER_TARGET target = {family, abi};
  PrivateMemory compilerMemory(compiler_.pfnCalcPrivateCompilerSize(&target, nullptr));
  D3D12DDI_HCOMPILER compiler = {compilerMemory.data()};
  HRESULT h = compiler_.pfnCreateCompiler(&target, nullptr, compiler, {this});
  if (FAILED(h))
    throw PluginError("compiler plugin '" + path_ + "': CreateCompiler failed (" + hr(h) + ")");
  struct Destroy {
    const D3D12DDI_COMPILER_FUNCS &f;
    D3D12DDI_HCOMPILER c;
    ~Destroy() { f.pfnDestroyCompiler(c); }
  } destroy{compiler_, compiler};
  std::wstring name = widen(programName);
  D3D12DDI_MLIR_PROGRAM_DESC_0119 program = {name.c_str(), container.data(), container.size()};
  std::vector<D3D12DDI_MLIR_PROGRAM_CONSTANT_CGC> given;
  for (const Constant &c : constants) {
    D3D12DDI_MLIR_PROGRAM_CONSTANT_CGC g = {c.bindPoint, c.data, c.bytes, {}};
    std::memcpy(g.Digest.Digest, c.digest.data(), 16);
    given.push_back(g);
  }
  Session session;
  session.psdb = &psdb;
  psdb.transaction([&] {
    h = constants_.pfnPrepareMlirProgramConstantsCgc(compiler, {&session}, &program,
                                                      UINT(given.size()), given.data(), threads);
    if (FAILED(h)) {
      std::string text;
      for (const auto &m : session.messages)
        text += "\n  " + m;
      throw PluginError("compiler plugin '" + path_ + "': the constants of program '" +
                        programName + "' were not prepared (" + hr(h) + ")" + text);
    }
  });
  return session.stored != 0;
}

} // namespace cgc::soc
