//===- databases.cpp - Registered SODB/PSDB pairs -------------------------===//

#include "cgc/container.h"
#include "cgc/databases.h"

#include "databases.h"

#include <cerrno>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <shared_mutex>
#include <unordered_set>
#include <vector>

namespace cgc::d3d12 {

namespace {

struct Registered {
  uint64_t sequence = 0; // registration order
  std::string sodbPath;
  std::unique_ptr<db::PrecompiledDatabase> psdb;
  /// Value keys of the groups whose version is the SODB's.
  std::unordered_set<std::string> eligible;
  /// "<psdb>.values" mapped read-only (never unmapped: drivers keep
  /// pointers into it for the life of the process), or null.
  const uint8_t *values = nullptr;
  uint64_t valuesBytes = 0;
  /// External values whose checksum was checked.
  std::mutex verifiedMutex;
  std::unordered_set<std::string> verified;
};

std::shared_mutex gMutex;
std::vector<std::shared_ptr<Registered>> gRegistered;
uint64_t gSequence = 0;

std::string text(const db::Bytes &bytes) { return std::string(bytes.begin(), bytes.end()); }

std::string versionText(uint64_t v) {
  return std::to_string(v >> 48) + "." + std::to_string((v >> 32) & 0xFFFF) + "." +
         std::to_string((v >> 16) & 0xFFFF) + "." + std::to_string(v & 0xFFFF);
}

/// Why `target` is not for a driver with `p`, or "".
std::string mismatch(const db::CompilerTarget &target, const CompilerProperties &p) {
  if (!p.known)
    return "the driver does not report what its compiler produces";
  if (target.adapterFamily != p.adapterFamily)
    return "it was compiled for adapter family '" + target.adapterFamily + "', the driver's is '" +
           p.adapterFamily + "'";
  if (target.abiVersion < p.minAbi || target.abiVersion > p.maxAbi)
    return "it was compiled for ABI version " + std::to_string(target.abiVersion) +
           ", the driver supports " + std::to_string(p.minAbi) + ".." + std::to_string(p.maxAbi);
  if (target.compilerVersion != p.compilerVersion)
    return "it was compiled by compiler version " + versionText(target.compilerVersion) +
           ", the driver's compiler is " + versionText(p.compilerVersion);
  if (target.applicationProfileVersion >> 32 != p.profileVersion >> 32)
    return "it was compiled for application profile version " +
           versionText(target.applicationProfileVersion) + ", the driver's is " +
           versionText(p.profileVersion);
  return "";
}

} // namespace

bool registerDatabases(const std::string &sodbPath, const std::vector<std::string> &psdbPaths,
                       std::string &error) {
  std::vector<std::shared_ptr<Registered>> added;
  try {
    auto sodb = db::StateObjectDatabase::open(sodbPath, /*writable=*/false);
    auto sodbApp = sodb->applicationDesc();
    for (const std::string &path : psdbPaths) {
      auto entry = std::make_shared<Registered>();
      entry->sodbPath = sodbPath;
      entry->psdb = db::PrecompiledDatabase::open(path, /*writable=*/false);
      if (!(entry->psdb->target().valueTypes & D3D12DDI_COMPILER_VALUE_TYPE_FLAGS_OBJECT_CODE))
        throw db::Error(path + ": the precompiled database holds no object code");
      auto psdbApp = entry->psdb->applicationDesc();
      if (sodbApp && psdbApp && !(*sodbApp == *psdbApp))
        throw db::Error(path + ": it was compiled for application '" + psdbApp->name + "' (" +
                        psdbApp->exeFilename + "), the state object database is for '" +
                        sodbApp->name + "' (" + sodbApp->exeFilename + ")");
      if (uint64_t end = entry->psdb->externalValuesEnd()) {
        const std::string file = entry->psdb->externalValuesPath();
        int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
        struct stat st = {};
        if (fd < 0 || ::fstat(fd, &st) != 0) {
          if (fd >= 0)
            ::close(fd);
          throw db::Error(file + ": cannot open the database's values: " + std::strerror(errno));
        }
        if (uint64_t(st.st_size) < end) {
          ::close(fd);
          throw db::Error(file + ": holds " + std::to_string(st.st_size) +
                          " bytes; the database's values need " + std::to_string(end) +
                          " (truncated)");
        }
        void *p = ::mmap(nullptr, size_t(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
        ::close(fd);
        if (p == MAP_FAILED)
          throw db::Error(file + ": cannot map it: " + std::strerror(errno));
        entry->values = static_cast<const uint8_t *>(p);
        entry->valuesBytes = uint64_t(st.st_size);
      }
      for (const auto &group : entry->psdb->groups()) {
        auto version = sodb->findObjectVersion(group.key);
        if (!version || *version != group.version)
          continue; // compiled from another version of the entry, or another SODB
        for (const db::Bytes &key : group.valueKeys)
          entry->eligible.insert(text(key));
      }
      added.push_back(std::move(entry));
    }
  } catch (const db::Error &e) {
    error = e.what();
    return false;
  }
  std::unique_lock lock(gMutex);
  for (auto &entry : added) {
    entry->sequence = gSequence++;
    gRegistered.push_back(entry);
  }
  return true;
}

void clearDatabases() {
  std::unique_lock lock(gMutex);
  gRegistered.clear();
}

bool registerEnvironmentDatabases(std::string &error) {
  static std::once_flag once;
  static bool ok = true;
  static std::string message;
  std::call_once(once, [] {
    const char *value = std::getenv("CGC_D3D12_PRECOMPILED_DATABASES");
    if (!value || !*value)
      return;
    std::string all = value;
    size_t start = 0;
    while (ok && start <= all.size()) {
      size_t end = all.find(';', start);
      std::string pair = all.substr(start, end == std::string::npos ? end : end - start);
      start = end == std::string::npos ? all.size() + 1 : end + 1;
      if (pair.empty())
        continue;
      size_t eq = pair.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == pair.size()) {
        ok = false;
        message = "'" + pair + "' is not SODB=PSDB[,PSDB...]";
        break;
      }
      std::vector<std::string> psdbs;
      std::string list = pair.substr(eq + 1);
      if (list.find_first_not_of(',') == std::string::npos) {
        ok = false;
        message = "'" + pair + "' names no precompiled database";
        break;
      }
      for (size_t at = 0; at <= list.size();) {
        size_t comma = list.find(',', at);
        std::string one = list.substr(at, comma == std::string::npos ? comma : comma - at);
        if (!one.empty())
          psdbs.push_back(one);
        at = comma == std::string::npos ? list.size() + 1 : comma + 1;
      }
      ok = registerDatabases(pair.substr(0, eq), psdbs, message);
    }
    if (!ok)
      message = "CGC_D3D12_PRECOMPILED_DATABASES: " + message;
  });
  if (!ok)
    error = message;
  return ok;
}

HRESULT DeviceDatabases::find(const D3D12DDI_COMPILER_CACHE_VALUE_KEY *key,
                              D3D12DDI_COMPILER_CACHE_TYPED_VALUE *values, UINT count,
                              const Report &report) {
  if (!key || (!key->pKey && key->KeySize) || !values || !count)
    return E_INVALIDARG;
  for (UINT i = 0; i < count; ++i)
    if (values[i].Type >= D3D12DDI_COMPILER_CACHE_VALUE_TYPE_MAX_VALID ||
        (values[i].Value.ValueSize && !values[i].Value.pValue))
      return E_INVALIDARG;
  // A driver asks for the size first (ValueSize 0), then for the bytes:
  // one lookup, and a hit when the bytes were copied.
  bool sizeQuery = values[0].Value.ValueSize == 0;
  if (sizeQuery)
    ++lookups_;
  std::string wanted(static_cast<const char *>(key->pKey), key->KeySize);
  std::vector<std::shared_ptr<Registered>> registered;
  {
    std::shared_lock lock(gMutex);
    registered = gRegistered;
  }
  // Newest ABI first (the registration API's preference).
  std::sort(registered.begin(), registered.end(), [](const auto &a, const auto &b) {
    uint64_t abiA = a->psdb->target().abiVersion, abiB = b->psdb->target().abiVersion;
    return abiA != abiB ? abiA > abiB : a->sequence < b->sequence;
  });
  for (const auto &entry : registered) {
    std::string why = mismatch(entry->psdb->target(), properties_);
    if (!why.empty()) {
      std::lock_guard lock(mutex_);
      if (reported_.insert(entry->psdb->path()).second)
        report("precompiled database '" + entry->psdb->path() + "' is not used on this device: " +
               why);
      continue;
    }
    if (!entry->eligible.count(wanted))
      continue;
    std::vector<std::optional<db::Bytes>> found(count);
    try {
      for (UINT i = 0; i < count; ++i)
        found[i] = entry->psdb->findValue(db::Bytes(wanted.begin(), wanted.end()),
                                          db::ValueType(values[i].Type));
    } catch (const db::Error &e) {
      report(std::string("precompiled database lookup failed: ") + e.what());
      return E_FAIL;
    }
    bool all = true;
    for (const auto &value : found)
      all &= value.has_value() && !value->empty();
    if (!all)
      continue;
    HRESULT hr = S_OK;
    for (UINT i = 0; i < count; ++i) {
      SIZE_T size = found[i]->size();
      D3D12DDI_COMPILER_CACHE_VALUE &out = values[i].Value;
      if (out.ValueSize == 0) {
        out.ValueSize = size;
        continue;
      }
      if (out.ValueSize < size) {
        out.ValueSize = size;
        hr = DXGI_ERROR_MORE_DATA;
        continue;
      }
      std::memcpy(out.pValue, found[i]->data(), size);
      out.ValueSize = size;
    }
    if (hr == S_OK && !sizeQuery)
      ++hits_;
    return hr;
  }
  return DXGI_ERROR_NOT_FOUND;
}

HRESULT DeviceDatabases::map(const D3D12DDI_COMPILER_CACHE_VALUE_KEY *key, uint32_t type,
                             const void **data, SIZE_T *size, const Report &report) {
  if (!key || !key->pKey || !key->KeySize || !data || !size)
    return E_INVALIDARG;
  *data = nullptr;
  *size = 0;
  db::Bytes wanted(static_cast<const uint8_t *>(key->pKey),
                   static_cast<const uint8_t *>(key->pKey) + key->KeySize);
  std::vector<std::shared_ptr<Registered>> registered;
  {
    std::shared_lock lock(gMutex);
    registered = gRegistered;
  }
  for (const auto &entry : registered) {
    if (!entry->values || !mismatch(entry->psdb->target(), properties_).empty())
      continue;
    std::optional<db::PrecompiledDatabase::ExternalValue> value;
    try {
      value = entry->psdb->findExternalValue(wanted, type);
    } catch (const db::Error &e) {
      report(std::string("precompiled database lookup failed: ") + e.what());
      return E_FAIL;
    }
    if (!value)
      continue;
    const std::string file = entry->psdb->externalValuesPath();
    if (value->offset > entry->valuesBytes || value->size > entry->valuesBytes - value->offset) {
      report(file + ": value '" + text(wanted) + "' lies outside the file (corrupted database)");
      return E_FAIL;
    }
    const uint8_t *p = entry->values + value->offset;
    {
      std::lock_guard lock(entry->verifiedMutex);
      if (!entry->verified.count(text(wanted) + "/" + std::to_string(type))) {
        if (fastChecksum(p, value->size) != value->checksum) {
          report(file + ": value '" + text(wanted) +
                 "' does not match its checksum (corrupted database)");
          return E_FAIL;
        }
        entry->verified.insert(text(wanted) + "/" + std::to_string(type));
      }
    }
    *data = p;
    *size = SIZE_T(value->size);
    return S_OK;
  }
  return DXGI_ERROR_NOT_FOUND;
}

void DeviceDatabases::counts(uint32_t &registered, uint32_t &matching) {
  std::shared_lock lock(gMutex);
  registered = uint32_t(gRegistered.size());
  matching = 0;
  for (const auto &entry : gRegistered)
    matching += mismatch(entry->psdb->target(), properties_).empty();
}

} // namespace cgc::d3d12
