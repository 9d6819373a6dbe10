//===- runtime.cpp - Entry points, drivers, debug output, helpers ---------===//

#include "internal.h"

#include <dirent.h>
#include <dlfcn.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cwchar>

namespace cgc::d3d12 {

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

std::string narrow(LPCWSTR text) {
  std::string out;
  if (!text)
    return out;
  for (; *text; ++text) {
    uint32_t c = uint32_t(*text);
    if (c < 0x80) {
      out += char(c);
    } else if (c < 0x800) {
      out += char(0xC0 | (c >> 6));
      out += char(0x80 | (c & 0x3F));
    } else if (c < 0x10000) {
      out += char(0xE0 | (c >> 12));
      out += char(0x80 | ((c >> 6) & 0x3F));
      out += char(0x80 | (c & 0x3F));
    } else {
      out += char(0xF0 | (c >> 18));
      out += char(0x80 | ((c >> 12) & 0x3F));
      out += char(0x80 | ((c >> 6) & 0x3F));
      out += char(0x80 | (c & 0x3F));
    }
  }
  return out;
}

std::string hex(uint64_t value) {
  char text[32];
  std::snprintf(text, sizeof(text), "0x%llx", static_cast<unsigned long long>(value));
  return text;
}

std::string hresultName(HRESULT hr) {
  switch (hr) {
  case S_OK: return "S_OK";
  case E_INVALIDARG: return "E_INVALIDARG";
  case E_NOTIMPL: return "E_NOTIMPL";
  case E_OUTOFMEMORY: return "E_OUTOFMEMORY";
  case E_NOINTERFACE: return "E_NOINTERFACE";
  case E_POINTER: return "E_POINTER";
  case E_FAIL: return "E_FAIL";
  case DXGI_ERROR_UNSUPPORTED: return "DXGI_ERROR_UNSUPPORTED";
  case DXGI_ERROR_DEVICE_REMOVED: return "DXGI_ERROR_DEVICE_REMOVED";
  case DXGI_ERROR_INVALID_CALL: return "DXGI_ERROR_INVALID_CALL";
  case DXGI_ERROR_DEVICE_HUNG: return "DXGI_ERROR_DEVICE_HUNG";
  case E_NOT_SUFFICIENT_BUFFER: return "E_NOT_SUFFICIENT_BUFFER";
  default: return hex(uint32_t(hr));
  }
}

static thread_local std::string tlsLastError;
void setLastError(std::string message) { tlsLastError = std::move(message); }

PrivateData::~PrivateData() {
  for (Entry &e : entries_)
    if (e.iface)
      e.iface->Release();
}

HRESULT PrivateData::get(REFGUID guid, UINT *pDataSize, void *pData) {
  if (!pDataSize)
    return E_INVALIDARG;
  std::lock_guard<std::mutex> lock(mutex_);
  for (Entry &e : entries_) {
    if (!(e.guid == guid))
      continue;
    UINT size = e.iface ? UINT(sizeof(IUnknown *)) : UINT(e.bytes.size());
    if (!pData) {
      *pDataSize = size;
      return S_OK;
    }
    if (*pDataSize < size) {
      *pDataSize = size;
      return DXGI_ERROR_MORE_DATA;
    }
    *pDataSize = size;
    if (e.iface) {
      e.iface->AddRef();
      std::memcpy(pData, &e.iface, sizeof(IUnknown *));
    } else {
      std::memcpy(pData, e.bytes.data(), size);
    }
    return S_OK;
  }
  *pDataSize = 0;
  return DXGI_ERROR_NOT_FOUND;
}

HRESULT PrivateData::set(REFGUID guid, UINT size, const void *pData) {
  if (size && !pData)
    return E_INVALIDARG;
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = std::find_if(entries_.begin(), entries_.end(),
                         [&](const Entry &e) { return e.guid == guid; });
  if (it != entries_.end()) {
    if (it->iface)
      it->iface->Release();
    entries_.erase(it);
  }
  if (pData) {
    Entry e;
    e.guid = guid;
    e.bytes.assign(static_cast<const uint8_t *>(pData), static_cast<const uint8_t *>(pData) + size);
    entries_.push_back(std::move(e));
  }
  if (guid == WKPDID_D3DDebugObjectName)
    name_.assign(static_cast<const char *>(pData), pData ? size : 0);
  return S_OK;
}

HRESULT PrivateData::setInterface(REFGUID guid, const IUnknown *pData) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = std::find_if(entries_.begin(), entries_.end(),
                         [&](const Entry &e) { return e.guid == guid; });
  if (it != entries_.end()) {
    if (it->iface)
      it->iface->Release();
    entries_.erase(it);
  }
  if (pData) {
    Entry e;
    e.guid = guid;
    e.iface = const_cast<IUnknown *>(pData);
    e.iface->AddRef();
    entries_.push_back(std::move(e));
  }
  return S_OK;
}

HRESULT PrivateData::setName(LPCWSTR name) {
  std::lock_guard<std::mutex> lock(mutex_);
  name_ = narrow(name);
  return S_OK;
}

std::string PrivateData::name() {
  std::lock_guard<std::mutex> lock(mutex_);
  return name_;
}

// {5C0B3C29-3E4E-4E5B-9C2D-6A0C4F1A7E01} ... private IIDs of the implementations.
const GUID kImplStateObject = {0x5c0b3c29, 0x3e4e, 0x4e5b, {0x9c, 0x2d, 0x6a, 0x0c, 0x4f, 0x1a, 0x7e, 0x01}};
const GUID kImplResource = {0x5c0b3c29, 0x3e4e, 0x4e5b, {0x9c, 0x2d, 0x6a, 0x0c, 0x4f, 0x1a, 0x7e, 0x02}};
const GUID kImplHeap = {0x5c0b3c29, 0x3e4e, 0x4e5b, {0x9c, 0x2d, 0x6a, 0x0c, 0x4f, 0x1a, 0x7e, 0x03}};
const GUID kImplFence = {0x5c0b3c29, 0x3e4e, 0x4e5b, {0x9c, 0x2d, 0x6a, 0x0c, 0x4f, 0x1a, 0x7e, 0x04}};
const GUID kImplPipelineState = {0x5c0b3c29, 0x3e4e, 0x4e5b, {0x9c, 0x2d, 0x6a, 0x0c, 0x4f, 0x1a, 0x7e, 0x05}};
const GUID kImplCommandList = {0x5c0b3c29, 0x3e4e, 0x4e5b, {0x9c, 0x2d, 0x6a, 0x0c, 0x4f, 0x1a, 0x7e, 0x06}};
const GUID kImplCommandAllocator = {0x5c0b3c29, 0x3e4e, 0x4e5b, {0x9c, 0x2d, 0x6a, 0x0c, 0x4f, 0x1a, 0x7e, 0x07}};
const GUID kImplDevice = {0x5c0b3c29, 0x3e4e, 0x4e5b, {0x9c, 0x2d, 0x6a, 0x0c, 0x4f, 0x1a, 0x7e, 0x08}};

//===----------------------------------------------------------------------===//
// Info queue
//===----------------------------------------------------------------------===//

HRESULT InfoQueue::QueryInterface(REFIID riid, void **ppv) {
  if (!ppv)
    return E_POINTER;
  CGC_D3D12_QI(IUnknown)
  CGC_D3D12_QI(ID3D12InfoQueue)
  CGC_D3D12_QI(ID3D12InfoQueue1)
  *ppv = nullptr;
  return E_NOINTERFACE;
}

void InfoQueue::add(D3D12_MESSAGE_CATEGORY category, D3D12_MESSAGE_SEVERITY severity,
                    D3D12_MESSAGE_ID id, const std::string &text) {
  std::vector<Callback> callbacks;
  bool mute;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    messages_.push_back({category, severity, id, text});
    while (messages_.size() > limit_) {
      messages_.pop_front();
      ++discarded_;
    }
    for (auto &[cookie, cb] : callbacks_)
      callbacks.push_back(cb);
    mute = mute_;
  }
  static const bool quiet = [] {
    const char *q = std::getenv("CGC_D3D12_DEBUG_QUIET");
    return q && *q && std::string(q) != "0";
  }();
  // Information is stored, not printed.
  if (!mute && !quiet && severity <= D3D12_MESSAGE_SEVERITY_WARNING) {
    const char *level = severity <= D3D12_MESSAGE_SEVERITY_ERROR     ? "ERROR"
                        : severity == D3D12_MESSAGE_SEVERITY_WARNING ? "WARNING"
                                                                     : "INFO";
    std::fprintf(stderr, "D3D12 %s: %s\n", level, text.c_str());
  }
  for (const Callback &cb : callbacks)
    cb.func(category, severity, id, text.c_str(), cb.context);
}

HRESULT InfoQueue::SetMessageCountLimit(UINT64 limit) {
  std::lock_guard<std::mutex> lock(mutex_);
  limit_ = limit == UINT64(-1) ? UINT64_MAX : limit;
  while (messages_.size() > limit_) {
    messages_.pop_front();
    ++discarded_;
  }
  return S_OK;
}

void InfoQueue::ClearStoredMessages() {
  std::lock_guard<std::mutex> lock(mutex_);
  messages_.clear();
}

HRESULT InfoQueue::GetMessage(UINT64 index, D3D12_MESSAGE *pMessage, SIZE_T *pLength) {
  if (!pLength)
    return E_INVALIDARG;
  std::lock_guard<std::mutex> lock(mutex_);
  if (index >= messages_.size())
    return E_INVALIDARG;
  const Message &m = messages_[index];
  SIZE_T needed = sizeof(D3D12_MESSAGE) + m.text.size() + 1;
  if (!pMessage) {
    *pLength = needed;
    return S_FALSE;
  }
  if (*pLength < needed) {
    *pLength = needed;
    return E_INVALIDARG;
  }
  char *text = reinterpret_cast<char *>(pMessage + 1);
  std::memcpy(text, m.text.c_str(), m.text.size() + 1);
  pMessage->Category = m.category;
  pMessage->Severity = m.severity;
  pMessage->ID = m.id;
  pMessage->pDescription = text;
  pMessage->DescriptionByteLength = m.text.size() + 1;
  *pLength = needed;
  return S_OK;
}

UINT64 InfoQueue::GetNumStoredMessages() {
  std::lock_guard<std::mutex> lock(mutex_);
  return messages_.size();
}
UINT64 InfoQueue::GetNumStoredMessagesAllowedByRetrievalFilter() { return GetNumStoredMessages(); }
UINT64 InfoQueue::GetNumMessagesDiscardedByMessageCountLimit() {
  std::lock_guard<std::mutex> lock(mutex_);
  return discarded_;
}
UINT64 InfoQueue::GetMessageCountLimit() {
  std::lock_guard<std::mutex> lock(mutex_);
  return limit_;
}
HRESULT InfoQueue::AddMessage(D3D12_MESSAGE_CATEGORY category, D3D12_MESSAGE_SEVERITY severity,
                              D3D12_MESSAGE_ID id, LPCSTR description) {
  if (!description)
    return E_INVALIDARG;
  add(category, severity, id, description);
  return S_OK;
}
HRESULT InfoQueue::AddApplicationMessage(D3D12_MESSAGE_SEVERITY severity, LPCSTR description) {
  if (!description)
    return E_INVALIDARG;
  add(D3D12_MESSAGE_CATEGORY_APPLICATION_DEFINED, severity, D3D12_MESSAGE_ID_UNKNOWN, description);
  return S_OK;
}
void InfoQueue::SetMuteDebugOutput(BOOL mute) {
  std::lock_guard<std::mutex> lock(mutex_);
  mute_ = mute;
}
BOOL InfoQueue::GetMuteDebugOutput() {
  std::lock_guard<std::mutex> lock(mutex_);
  return mute_;
}
HRESULT InfoQueue::RegisterMessageCallback(D3D12MessageFunc func, D3D12_MESSAGE_CALLBACK_FLAGS,
                                           void *context, DWORD *cookie) {
  if (!func || !cookie)
    return E_INVALIDARG;
  std::lock_guard<std::mutex> lock(mutex_);
  *cookie = nextCookie_++;
  callbacks_[*cookie] = {func, context};
  return S_OK;
}
HRESULT InfoQueue::UnregisterMessageCallback(DWORD cookie) {
  std::lock_guard<std::mutex> lock(mutex_);
  return callbacks_.erase(cookie) ? S_OK : E_INVALIDARG;
}
void InfoQueue::notImplemented(const char *what) {
  add(D3D12_MESSAGE_CATEGORY_MISCELLANEOUS, D3D12_MESSAGE_SEVERITY_WARNING,
      D3D12_MESSAGE_ID_UNKNOWN, std::string(what) + " is not implemented by cgc");
}

//===----------------------------------------------------------------------===//
// Debug interface and creation flags
//===----------------------------------------------------------------------===//

static std::atomic<UINT> gCreationFlags{0};

static bool envFlag(const char *name) {
  const char *v = std::getenv(name);
  return v && *v && std::string(v) != "0";
}

UINT deviceCreationFlags() {
  UINT flags = gCreationFlags.load();
  if (envFlag("CGC_D3D12_DEBUG"))
    flags |= CGC_D3D12_DEVICE_FLAG_DEBUG;
  if (envFlag("CGC_D3D12_DEVELOPER_MODE"))
    flags |= CGC_D3D12_DEVICE_FLAG_DEVELOPER_MODE;
  return flags;
}

void enableDebugLayerGlobally() { gCreationFlags.fetch_or(CGC_D3D12_DEVICE_FLAG_DEBUG); }

HRESULT Debug::QueryInterface(REFIID riid, void **ppv) {
  if (!ppv)
    return E_POINTER;
  CGC_D3D12_QI(IUnknown)
  CGC_D3D12_QI(ID3D12Debug)
  *ppv = nullptr;
  return E_NOINTERFACE;
}
void Debug::notImplemented(const char *what) {
  std::fprintf(stderr, "D3D12 WARNING: %s is not implemented by cgc\n", what);
}

//===----------------------------------------------------------------------===//
// Drivers
//===----------------------------------------------------------------------===//

static std::mutex gDriverMutex;
static std::map<std::string, std::unique_ptr<Driver>> gDrivers; // by path, never unloaded
static std::string gSelected;                                   // "" = default

/// The directory holding libcgc_d3d12.so.
static std::string libraryDirectory() {
  Dl_info info;
  if (dladdr(reinterpret_cast<void *>(&libraryDirectory), &info) && info.dli_fname) {
    std::string path = info.dli_fname;
    size_t slash = path.rfind('/');
    return slash == std::string::npos ? "." : path.substr(0, slash);
  }
  return ".";
}

static std::string resolveDriverPath(const std::string &nameOrPath) {
  if (nameOrPath.find('/') != std::string::npos)
    return nameOrPath;
  if (nameOrPath.size() > 3 && nameOrPath.compare(nameOrPath.size() - 3, 3, ".so") == 0)
    return libraryDirectory() + "/" + nameOrPath;
  return libraryDirectory() + "/libcgc_driver_" + nameOrPath + ".so";
}

static Driver *loadDriver(const std::string &path, std::string &error) {
  auto it = gDrivers.find(path);
  if (it != gDrivers.end())
    return it->second.get();
  void *lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char *why = dlerror();
    error = "cannot load D3D12 driver '" + path + "': " + (why ? why : "unknown error");
    return nullptr;
  }
  auto open = reinterpret_cast<PFND3D12DDI_OPEN_ADAPTER_CGC>(
      dlsym(lib, CGC_D3D12DDI_OPEN_ADAPTER_NAME));
  if (!open) {
    error = "'" + path + "' is not a cgc D3D12 driver: it does not export " +
            CGC_D3D12DDI_OPEN_ADAPTER_NAME;
    dlclose(lib);
    return nullptr;
  }
  auto driver = std::make_unique<Driver>();
  driver->path = path;
  HRESULT hr = open(CGC_D3D12DDI_VERSION, &driver->funcs, &driver->adapter);
  if (FAILED(hr) || !driver->funcs) {
    error = "driver '" + path + "' refused DDI version " +
            std::to_string(CGC_D3D12DDI_VERSION_MAJOR) + "." +
            std::to_string(CGC_D3D12DDI_VERSION_MINOR) + " (" + hresultName(hr) + ")";
    dlclose(lib);
    return nullptr;
  }
  const D3D12DDI_ADAPTER_FUNCS_CGC *f = driver->funcs;
  UINT major = f->Version >> 16, minor = f->Version & 0xFFFF;
  if (major != CGC_D3D12DDI_VERSION_MAJOR || minor < CGC_D3D12DDI_VERSION_MINOR ||
      f->TableSize < sizeof(D3D12DDI_ADAPTER_FUNCS_CGC) || !f->pDeviceFuncs ||
      !f->pCommandListFuncs || !f->pCommandQueueFuncs || !f->pfnGetCaps || !f->pfnCreateDevice) {
    error = "driver '" + path + "' implements DDI version " + std::to_string(major) + "." +
            std::to_string(minor) + "; this runtime needs " +
            std::to_string(CGC_D3D12DDI_VERSION_MAJOR) + "." +
            std::to_string(CGC_D3D12DDI_VERSION_MINOR) + " with a complete table";
    dlclose(lib);
    return nullptr;
  }
  Driver *result = driver.get();
  gDrivers[path] = std::move(driver);
  return result;
}

Driver *selectedDriver(std::string &error, const char *explicitChoice) {
  std::lock_guard<std::mutex> lock(gDriverMutex);
  std::string choice = explicitChoice && *explicitChoice ? explicitChoice : gSelected;
  if (choice.empty()) {
    const char *env = std::getenv("CGC_D3D12_DRIVER");
    choice = env && *env ? env : "cpu";
  }
  return loadDriver(resolveDriverPath(choice), error);
}

} // namespace cgc::d3d12

using namespace cgc::d3d12;

//===----------------------------------------------------------------------===//
// Entry points
//===----------------------------------------------------------------------===//

static HRESULT createDeviceOn(const char *driverChoice, REFIID riid, void **ppDevice,
                              const char *driverOptions = nullptr) {
  std::string error;
  Driver *driver = selectedDriver(error, driverChoice);
  if (!driver) {
    std::fprintf(stderr, "D3D12 ERROR: %s\n", error.c_str());
    setLastError(error);
    return driverChoice && *driverChoice ? E_INVALIDARG : E_FAIL;
  }
  if (!ppDevice)
    return S_FALSE;
  *ppDevice = nullptr;
  Device *device = nullptr;
  HRESULT hr = Device::create(driver, deviceCreationFlags(), driverOptions, &device, error);
  if (FAILED(hr)) {
    std::fprintf(stderr, "D3D12 ERROR: %s\n", error.c_str());
    setLastError(error);
    return hr;
  }
  hr = device->QueryInterface(riid, ppDevice);
  device->Release();
  return hr;
}

CGC_D3D12_API HRESULT D3D12CreateDevice(IUnknown *pAdapter, D3D_FEATURE_LEVEL MinimumFeatureLevel,
                                        REFIID riid, void **ppDevice) {
  setLastError("");
  if (pAdapter) {
    setLastError("D3D12CreateDevice: adapters are chosen with CGCD3D12SelectDriver; pass a null "
                 "adapter");
    return E_INVALIDARG;
  }
  if (MinimumFeatureLevel > D3D_FEATURE_LEVEL_12_0) {
    setLastError("D3D12CreateDevice: cgc devices support feature level 12_0");
    return E_INVALIDARG;
  }
  return createDeviceOn(nullptr, riid, ppDevice);
}

CGC_D3D12_API HRESULT CGCD3D12CreateDeviceOnDriver(const char *pDriverPathOrName, REFIID riid,
                                                   void **ppDevice) {
  setLastError("");
  return createDeviceOn(pDriverPathOrName, riid, ppDevice);
}

CGC_D3D12_API HRESULT CGCD3D12CreateDeviceWithOptions(const char *pDriverPathOrName,
                                                      const char *pDriverOptions, REFIID riid,
                                                      void **ppDevice) {
  setLastError("");
  return createDeviceOn(pDriverPathOrName, riid, ppDevice, pDriverOptions);
}

CGC_D3D12_API HRESULT D3D12GetDebugInterface(REFIID riid, void **ppvDebug) {
  if (!ppvDebug)
    return E_POINTER;
  Debug *debug = new Debug();
  HRESULT hr = debug->QueryInterface(riid, ppvDebug);
  debug->Release();
  return hr;
}

CGC_D3D12_API void CGCD3D12SetDeviceCreationFlags(UINT Flags) { gCreationFlags.store(Flags); }

CGC_D3D12_API HRESULT CGCD3D12SelectDriver(const char *pDriverPathOrName) {
  setLastError("");
  std::lock_guard<std::mutex> lock(gDriverMutex);
  if (!pDriverPathOrName || !*pDriverPathOrName) {
    gSelected.clear();
    return S_OK;
  }
  std::string error;
  if (!loadDriver(resolveDriverPath(pDriverPathOrName), error)) {
    std::fprintf(stderr, "D3D12 ERROR: %s\n", error.c_str());
    setLastError(error);
    return E_INVALIDARG;
  }
  gSelected = pDriverPathOrName;
  return S_OK;
}

CGC_D3D12_API HRESULT CGCD3D12EnumerateDrivers(char *pBuffer, SIZE_T *pBufferSize, UINT *pCount) {
  if (!pBufferSize || !pCount)
    return E_INVALIDARG;
  std::vector<std::string> found;
  std::string dir = libraryDirectory();
  if (DIR *d = opendir(dir.c_str())) {
    while (dirent *e = readdir(d)) {
      std::string name = e->d_name;
      // libcgc_driver_<name>_jit.so is a driver's compiler module (the
      // CPU driver's JIT), not a driver.
      auto endsWith = [&](const char *suffix) {
        size_t n = std::strlen(suffix);
        return name.size() >= n && name.compare(name.size() - n, n, suffix) == 0;
      };
      if (name.rfind("libcgc_driver_", 0) == 0 && endsWith(".so") && !endsWith("_jit.so"))
        found.push_back(dir + "/" + name);
    }
    closedir(d);
  }
  if (const char *env = std::getenv("CGC_D3D12_DRIVER"))
    if (*env) {
      std::string path = resolveDriverPath(env);
      if (std::find(found.begin(), found.end(), path) == found.end())
        found.push_back(path);
    }
  std::sort(found.begin(), found.end());
  SIZE_T needed = 0;
  for (const std::string &p : found)
    needed += p.size() + 1;
  SIZE_T capacity = *pBufferSize;
  *pBufferSize = needed;
  *pCount = UINT(found.size());
  if (!pBuffer)
    return S_OK;
  if (capacity < needed)
    return DXGI_ERROR_MORE_DATA;
  for (const std::string &p : found) {
    std::memcpy(pBuffer, p.c_str(), p.size() + 1);
    pBuffer += p.size() + 1;
  }
  return S_OK;
}

CGC_D3D12_API const char *CGCD3D12GetLastError() { return tlsLastError.c_str(); }

CGC_D3D12_API HANDLE CGCCreateEvent() {
  int fd = eventfd(0, EFD_CLOEXEC);
  if (fd < 0)
    return nullptr;
  // Descriptor 0 would read as a null handle: keep it out of the way.
  return reinterpret_cast<HANDLE>(intptr_t(fd) + 1);
}

CGC_D3D12_API HRESULT CGCWaitForEvent(HANDLE hEvent, UINT32 Milliseconds) {
  if (!hEvent)
    return E_INVALIDARG;
  int fd = int(reinterpret_cast<intptr_t>(hEvent) - 1);
  pollfd p = {fd, POLLIN, 0};
  int timeout = Milliseconds == UINT32_MAX ? -1 : int(std::min<UINT32>(Milliseconds, INT32_MAX));
  int r;
  do {
    r = poll(&p, 1, timeout);
  } while (r < 0 && errno == EINTR);
  if (r < 0)
    return E_FAIL;
  if (r == 0)
    return S_FALSE;
  uint64_t count;
  if (read(fd, &count, sizeof(count)) != sizeof(count))
    return E_FAIL;
  return S_OK;
}

CGC_D3D12_API void CGCCloseEvent(HANDLE hEvent) {
  if (hEvent)
    close(int(reinterpret_cast<intptr_t>(hEvent) - 1));
}
