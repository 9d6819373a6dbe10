//===- device.cpp - ID3D12Device: features, memory, programs --------------===//

// Before any DirectX header: <wsl/winadapter.h> defines `interface`, a
// parameter name in container.h.
#include "cgc/container.h"

#include "internal.h"

#include <algorithm>
#include <set>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <unistd.h>
#include <vector>

namespace cgc::d3d12 {

//===----------------------------------------------------------------------===//
// Runtime callbacks (driver -> runtime)
//===----------------------------------------------------------------------===//

static void setCommandListErrorCb(D3D12DDI_HRTCOMMANDLIST list, HRESULT hr, const char *message) {
  if (auto *cl = static_cast<CommandList *>(list.handle))
    cl->setError(hr, message ? message : "");
}

static void messageCb(D3D12DDI_HRTDEVICE device, D3D12DDI_MESSAGE_SEVERITY_CGC severity,
                      const char *message) {
  auto *d = static_cast<Device *>(device.handle);
  if (!d || !message)
    return;
  D3D12_MESSAGE_SEVERITY s = severity == D3D12DDI_MESSAGE_SEVERITY_ERROR_CGC
                                 ? D3D12_MESSAGE_SEVERITY_ERROR
                             : severity == D3D12DDI_MESSAGE_SEVERITY_WARNING_CGC
                                 ? D3D12_MESSAGE_SEVERITY_WARNING
                                 : D3D12_MESSAGE_SEVERITY_INFO;
  d->message(s, D3D12_MESSAGE_CATEGORY_EXECUTION, message);
}

static HRESULT findPrecompiledValueCb(D3D12DDI_HRTDEVICE device,
                                      const D3D12DDI_COMPILER_CACHE_VALUE_KEY *key,
                                      D3D12DDI_COMPILER_CACHE_TYPED_VALUE *values, UINT count) {
  auto *d = static_cast<Device *>(device.handle);
  if (!d)
    return E_INVALIDARG;
  return d->databases().find(key, values, count, [d](const std::string &text) {
    d->message(D3D12_MESSAGE_SEVERITY_WARNING, D3D12_MESSAGE_CATEGORY_EXECUTION, text);
  });
}

static HRESULT mapPrecompiledValueCb(D3D12DDI_HRTDEVICE device,
                                     const D3D12DDI_COMPILER_CACHE_VALUE_KEY *key,
                                     D3D12DDI_COMPILER_CACHE_VALUE_TYPE type, const void **data,
                                     SIZE_T *size) {
  auto *d = static_cast<Device *>(device.handle);
  if (!d)
    return E_INVALIDARG;
  return d->databases().map(key, uint32_t(type), data, size, [d](const std::string &text) {
    d->message(D3D12_MESSAGE_SEVERITY_ERROR, D3D12_MESSAGE_CATEGORY_EXECUTION, text);
  });
}

static const D3D12DDI_RUNTIME_CALLBACKS_CGC kCallbacks = {
    setCommandListErrorCb, messageCb, findPrecompiledValueCb, mapPrecompiledValueCb};

//===----------------------------------------------------------------------===//
// Creation
//===----------------------------------------------------------------------===//

Device::Device(Driver *driver, bool debug, bool developerMode)
    : driver_(driver), debug_(debug), developerMode_(developerMode) {
  infoQueue_.Attach(new InfoQueue());
}

HRESULT Device::create(Driver *driver, UINT flags, const char *driverOptions, Device **out,
                       std::string &error) {
  if (!registerEnvironmentDatabases(error))
    return E_INVALIDARG;
  auto *device = new Device(driver, flags & CGC_D3D12_DEVICE_FLAG_DEBUG,
                            flags & CGC_D3D12_DEVICE_FLAG_DEVELOPER_MODE);
  // What the driver's compiler produces: which precompiled databases it
  // can use.
  if (driver->funcs->pfnGetCompilerPropertiesCgc) {
    D3D12DDI_COMPILER_PROPERTIES_CGC p = {};
    if (SUCCEEDED(driver->funcs->pfnGetCompilerPropertiesCgc(driver->adapter, &p))) {
      CompilerProperties properties;
      properties.known = true;
      p.szAdapterFamily[std::size(p.szAdapterFamily) - 1] = 0;
      properties.adapterFamily = narrow(p.szAdapterFamily);
      properties.minAbi = p.MinimumABISupportVersion;
      properties.maxAbi = p.MaximumABISupportVersion;
      properties.compilerVersion = p.CompilerVersion;
      properties.profileVersion = p.ApplicationProfileVersion;
      device->databases_.setProperties(std::move(properties));
    }
  }
  D3D12DDIARG_CREATEDEVICE_CGC args = {{device}, &kCallbacks, driverOptions};
  HRESULT hr = driver->funcs->pfnCreateDevice(driver->adapter, &args, &device->handle_);
  if (FAILED(hr)) {
    error = "driver '" + driver->path + "' failed to create a device (" + hresultName(hr) + ")";
    // The driver's own error messages say why (a bad thread count, ...).
    for (UINT64 i = 0, n = device->infoQueue_->GetNumStoredMessages(); i < n; ++i) {
      SIZE_T size = 0;
      if (FAILED(device->infoQueue_->GetMessage(i, nullptr, &size)) || !size)
        continue;
      std::vector<uint8_t> storage(size);
      auto *m = reinterpret_cast<D3D12_MESSAGE *>(storage.data());
      if (SUCCEEDED(device->infoQueue_->GetMessage(i, m, &size)) &&
          m->Severity <= D3D12_MESSAGE_SEVERITY_ERROR && m->pDescription)
        error += std::string(": ") + m->pDescription;
    }
    device->handle_ = {};
    device->Release();
    return hr;
  }
  D3D12DDI_OPTIONS_DATA_MLIR options = {};
  D3D12DDIARG_GETCAPS caps = {D3D12DDI_CAPS_TYPE_MLIR, 0, nullptr, &options, sizeof(options)};
  if (SUCCEEDED(driver->funcs->pfnGetCaps(driver->adapter, &caps)))
    device->tier_ = D3D12_MLIR_PROGRAMS_TIER(options.MlirProgramsTier);
  *out = device;
  return S_OK;
}

Device::~Device() {
  if (handle_.pDrvPrivate)
    ddi().pfnDestroyDevice(handle_);
}

HRESULT Device::QueryInterface(REFIID riid, void **ppv) {
  if (!ppv)
    return E_POINTER;
  CGC_D3D12_QI(IUnknown)
  CGC_D3D12_QI(ID3D12Object)
  CGC_D3D12_QI(ID3D12Device)
  CGC_D3D12_QI(ID3D12Device1)
  CGC_D3D12_QI(ID3D12Device2)
  CGC_D3D12_QI(ID3D12Device3)
  CGC_D3D12_QI(ID3D12Device4)
  CGC_D3D12_QI(ID3D12Device5)
  CGC_D3D12_QI(ID3D12Device6)
  CGC_D3D12_QI(ID3D12Device7)
  CGC_D3D12_QI(ID3D12Device8)
  CGC_D3D12_QI(ID3D12Device9)
  CGC_D3D12_QI(ID3D12Device10)
  CGC_D3D12_QI(ID3D12Device11)
  CGC_D3D12_QI(ID3D12Device12)
  CGC_D3D12_QI(ID3D12Device13)
  CGC_D3D12_QI(ID3D12Device14)
  if (riid == __uuidof(ID3D12InfoQueue) || riid == __uuidof(ID3D12InfoQueue1))
    return infoQueue_->QueryInterface(riid, ppv);
  if (riid == kImplDevice) {
    AddRef();
    *ppv = this;
    return S_OK;
  }
  *ppv = nullptr;
  return E_NOINTERFACE;
}

void Device::message(D3D12_MESSAGE_SEVERITY severity, D3D12_MESSAGE_CATEGORY category,
                     const std::string &text) {
  infoQueue_->add(category, severity, D3D12_MESSAGE_ID_UNKNOWN, text);
}

HRESULT Device::fail(HRESULT hr, const std::string &text) {
  error(text);
  setLastError(text);
  return hr;
}

void Device::removeDevice(HRESULT reason, const std::string &text) {
  HRESULT expected = S_OK;
  if (removedReason_.compare_exchange_strong(expected, reason))
    error("device removed: " + text);
}

void Device::notImplemented(const char *what) {
  message(D3D12_MESSAGE_SEVERITY_WARNING, D3D12_MESSAGE_CATEGORY_MISCELLANEOUS,
          std::string(what) + " is not implemented by cgc (docs/d3d12.md)");
}

LUID Device::GetAdapterLuid() {
  LUID luid = {};
  luid.LowPart = DWORD(std::hash<std::string>()(driver_->path));
  return luid;
}

std::shared_ptr<const ProgramInfo> Device::findProgram(const D3D12_PROGRAM_IDENTIFIER &id) {
  std::shared_lock<std::shared_mutex> lock(programsMutex_);
  auto it = programs_.find(id);
  return it == programs_.end() ? nullptr : it->second.lock();
}

//===----------------------------------------------------------------------===//
// Features
//===----------------------------------------------------------------------===//

HRESULT Device::CheckFeatureSupport(D3D12_FEATURE Feature, void *pData, UINT size) {
  if (!pData)
    return fail(E_INVALIDARG, "CheckFeatureSupport: pFeatureSupportData is null");
  auto needSize = [&](size_t expected, const char *name) {
    if (size == expected)
      return true;
    fail(E_INVALIDARG, std::string("CheckFeatureSupport(") + name + "): FeatureSupportDataSize is " +
                           std::to_string(size) + ", expected " + std::to_string(expected));
    return false;
  };
  const D3D12DDI_ADAPTER_FUNCS_CGC &adapter = *driver_->funcs;
  switch (int(enumBits(Feature))) {
  case 68: { // D3D12_FEATURE_D3D12_OPTIONS_MLIR
    if (!needSize(sizeof(D3D12_FEATURE_DATA_D3D12_OPTIONS_MLIR), "D3D12_OPTIONS_MLIR"))
      return E_INVALIDARG;
    static_cast<D3D12_FEATURE_DATA_D3D12_OPTIONS_MLIR *>(pData)->MlirProgramsTier = tier_;
    return S_OK;
  }
  case 69: { // D3D12_FEATURE_MLIR_EXCHANGE
    if (!needSize(sizeof(D3D12_FEATURE_DATA_MLIR_EXCHANGE), "MLIR_EXCHANGE"))
      return E_INVALIDARG;
    auto *ex = static_cast<D3D12_FEATURE_DATA_MLIR_EXCHANGE *>(pData);
    Guid guid;
    std::memcpy(&guid, &ex->MlirInterface, sizeof(guid));
    if (!interfaces::isKnown(guid) && !developerMode_)
      return fail(E_INVALIDARG, "CheckFeatureSupport(MLIR_EXCHANGE): MLIR interface " +
                                    guid.str() +
                                    " is not known to the runtime (set developer mode to pass "
                                    "unknown interfaces to the driver)");
    if (!ex->OutputDataSizeInBytes)
      return fail(E_INVALIDARG, "CheckFeatureSupport(MLIR_EXCHANGE): OutputDataSizeInBytes is null");
    if (ex->InputDataSizeInBytes && !ex->pInputData)
      return fail(E_INVALIDARG,
                  "CheckFeatureSupport(MLIR_EXCHANGE): pInputData is null with a non-zero size");
    if (tier_ == D3D12_MLIR_PROGRAMS_TIER_NOT_SUPPORTED)
      return fail(DXGI_ERROR_UNSUPPORTED,
                  "CheckFeatureSupport(MLIR_EXCHANGE): the device reports "
                  "D3D12_MLIR_PROGRAMS_TIER_NOT_SUPPORTED; it answers no MLIR exchange");
    // The size-query protocol: a null pOutputData asks for the size (S_OK);
    // a buffer smaller than the answer gets the size and
    // E_NOT_SUFFICIENT_BUFFER, nothing written. Enforced here too, so that a
    // driver answering a short buffer with S_OK cannot pass for success.
    const SIZE_T given = *ex->OutputDataSizeInBytes;
    D3D12DDI_MLIR_EXCHANGE_0119 ddi = {ex->MlirInterface, ex->pInputData, ex->InputDataSizeInBytes,
                                       ex->pOutputData, ex->OutputDataSizeInBytes};
    D3D12DDIARG_GETCAPS caps = {D3D12DDICAPS_TYPE_MLIR_EXCHANGE_0119, 0, nullptr, &ddi, sizeof(ddi)};
    HRESULT hr = adapter.pfnGetCaps(driver_->adapter, &caps);
    if (hr == S_OK && ex->pOutputData && *ex->OutputDataSizeInBytes > given)
      hr = E_NOT_SUFFICIENT_BUFFER;
    if (hr == E_NOT_SUFFICIENT_BUFFER)
      message(D3D12_MESSAGE_SEVERITY_WARNING, D3D12_MESSAGE_CATEGORY_MISCELLANEOUS,
              "CheckFeatureSupport(MLIR_EXCHANGE): the output buffer holds " +
                  std::to_string(given) + " bytes, the answer needs " +
                  std::to_string(*ex->OutputDataSizeInBytes) +
                  " (E_NOT_SUFFICIENT_BUFFER; query the size with a null pOutputData)");
    return hr;
  }
  case 70: { // D3D12_FEATURE_MLIR_INTERFACE_SUPPORT
    if (!needSize(sizeof(D3D12_FEATURE_DATA_MLIR_INTERFACE_SUPPORT), "MLIR_INTERFACE_SUPPORT"))
      return E_INVALIDARG;
    auto *s = static_cast<D3D12_FEATURE_DATA_MLIR_INTERFACE_SUPPORT *>(pData);
    if (s->NumMlirInterfaces && (!s->pMlirInterfacesRequested || !s->pMlirInterfacesSupported))
      return fail(E_INVALIDARG, "CheckFeatureSupport(MLIR_INTERFACE_SUPPORT): null array with "
                                "NumMlirInterfaces = " +
                                    std::to_string(s->NumMlirInterfaces));
    // Answered per interface: an interface the runtime does not know is
    // unsupported (FALSE in its slot) and is not passed to the driver,
    // unless developer mode is on; the known ones go to the driver. A
    // device without MLIR programs supports none.
    std::vector<GUID> asked;
    std::vector<UINT> slots;
    for (UINT i = 0; i < s->NumMlirInterfaces; ++i) {
      s->pMlirInterfacesSupported[i] = FALSE;
      Guid guid;
      std::memcpy(&guid, &s->pMlirInterfacesRequested[i], sizeof(guid));
      if (tier_ == D3D12_MLIR_PROGRAMS_TIER_NOT_SUPPORTED)
        continue;
      if (!interfaces::isKnown(guid) && !developerMode_) {
        message(D3D12_MESSAGE_SEVERITY_INFO, D3D12_MESSAGE_CATEGORY_MISCELLANEOUS,
                "CheckFeatureSupport(MLIR_INTERFACE_SUPPORT): interface #" + std::to_string(i) +
                    " " + guid.str() +
                    " is not known to the runtime: unsupported (developer mode asks the driver)");
        continue;
      }
      asked.push_back(s->pMlirInterfacesRequested[i]);
      slots.push_back(i);
    }
    if (asked.empty())
      return S_OK;
    std::vector<BOOL> answers(asked.size(), FALSE);
    D3D12DDI_MLIR_INTERFACE_SUPPORT_0119 ddi = {UINT(asked.size()), asked.data(), answers.data()};
    D3D12DDIARG_GETCAPS caps = {D3D12DDICAPS_TYPE_MLIR_INTERFACE_SUPPORT_0119, 0, nullptr, &ddi,
                                sizeof(ddi)};
    if (HRESULT hr = adapter.pfnGetCaps(driver_->adapter, &caps); FAILED(hr))
      return fail(hr, "CheckFeatureSupport(MLIR_INTERFACE_SUPPORT): the driver failed (" +
                          hresultName(hr) + ")");
    for (size_t k = 0; k < slots.size(); ++k)
      s->pMlirInterfacesSupported[slots[k]] = answers[k] ? TRUE : FALSE;
    return S_OK;
  }
  case D3D12_FEATURE_FEATURE_LEVELS: {
    if (!needSize(sizeof(D3D12_FEATURE_DATA_FEATURE_LEVELS), "FEATURE_LEVELS"))
      return E_INVALIDARG;
    auto *f = static_cast<D3D12_FEATURE_DATA_FEATURE_LEVELS *>(pData);
    if (f->NumFeatureLevels && !f->pFeatureLevelsRequested)
      return fail(E_INVALIDARG, "CheckFeatureSupport(FEATURE_LEVELS): null request array");
    f->MaxSupportedFeatureLevel = D3D_FEATURE_LEVEL(0);
    for (UINT i = 0; i < f->NumFeatureLevels; ++i)
      if (f->pFeatureLevelsRequested[i] <= D3D_FEATURE_LEVEL_12_0 &&
          f->pFeatureLevelsRequested[i] > f->MaxSupportedFeatureLevel)
        f->MaxSupportedFeatureLevel = f->pFeatureLevelsRequested[i];
    return S_OK;
  }
  case D3D12_FEATURE_ARCHITECTURE: {
    if (!needSize(sizeof(D3D12_FEATURE_DATA_ARCHITECTURE), "ARCHITECTURE"))
      return E_INVALIDARG;
    auto *a = static_cast<D3D12_FEATURE_DATA_ARCHITECTURE *>(pData);
    if (a->NodeIndex != 0)
      return fail(E_INVALIDARG, "CheckFeatureSupport(ARCHITECTURE): the device has one node");
    a->TileBasedRenderer = FALSE;
    a->UMA = TRUE;
    a->CacheCoherentUMA = TRUE;
    return S_OK;
  }
  case D3D12_FEATURE_ARCHITECTURE1: {
    if (!needSize(sizeof(D3D12_FEATURE_DATA_ARCHITECTURE1), "ARCHITECTURE1"))
      return E_INVALIDARG;
    auto *a = static_cast<D3D12_FEATURE_DATA_ARCHITECTURE1 *>(pData);
    if (a->NodeIndex != 0)
      return fail(E_INVALIDARG, "CheckFeatureSupport(ARCHITECTURE1): the device has one node");
    a->TileBasedRenderer = FALSE;
    a->UMA = TRUE;
    a->CacheCoherentUMA = TRUE;
    a->IsolatedMMU = FALSE;
    return S_OK;
  }
  case D3D12_FEATURE_GPU_VIRTUAL_ADDRESS_SUPPORT: {
    if (!needSize(sizeof(D3D12_FEATURE_DATA_GPU_VIRTUAL_ADDRESS_SUPPORT),
                  "GPU_VIRTUAL_ADDRESS_SUPPORT"))
      return E_INVALIDARG;
    auto *g = static_cast<D3D12_FEATURE_DATA_GPU_VIRTUAL_ADDRESS_SUPPORT *>(pData);
    g->MaxGPUVirtualAddressBitsPerResource = 47;
    g->MaxGPUVirtualAddressBitsPerProcess = 47;
    return S_OK;
  }
  default:
    return fail(E_NOTIMPL, "CheckFeatureSupport: feature " + std::to_string(int(Feature)) +
                               " is not answered by cgc (docs/d3d12.md lists those that are)");
  }
}

//===----------------------------------------------------------------------===//
// Memory
//===----------------------------------------------------------------------===//

static constexpr uint64_t kPlacementAlignment = D3D12_DEFAULT_RESOURCE_PLACEMENT_ALIGNMENT; // 64 KiB

HRESULT Device::checkBufferDesc(const D3D12_RESOURCE_DESC *pDesc, const char *method) {
  if (!pDesc)
    return fail(E_INVALIDARG, std::string(method) + ": pDesc is null");
  if (pDesc->Dimension != D3D12_RESOURCE_DIMENSION_BUFFER)
    return fail(E_NOTIMPL, std::string(method) +
                               ": only buffers are implemented (textures are out of scope, "
                               "docs/d3d12.md)");
  if (pDesc->Width == 0 || pDesc->Height != 1 || pDesc->DepthOrArraySize != 1 ||
      pDesc->MipLevels != 1 || pDesc->SampleDesc.Count != 1 ||
      pDesc->Layout != D3D12_TEXTURE_LAYOUT_ROW_MAJOR || pDesc->Format != DXGI_FORMAT_UNKNOWN)
    return fail(E_INVALIDARG, std::string(method) +
                                  ": a buffer needs Width > 0, Height = DepthOrArraySize = "
                                  "MipLevels = SampleDesc.Count = 1, Format UNKNOWN and "
                                  "Layout ROW_MAJOR");
  if (pDesc->Alignment != 0 && pDesc->Alignment != kPlacementAlignment)
    return fail(E_INVALIDARG, std::string(method) + ": a buffer's Alignment must be 0 or 64 KiB");
  return S_OK;
}

D3D12_RESOURCE_ALLOCATION_INFO Device::GetResourceAllocationInfo(UINT, UINT num,
                                                                 const D3D12_RESOURCE_DESC *descs) {
  D3D12_RESOURCE_ALLOCATION_INFO info = {0, kPlacementAlignment};
  for (UINT i = 0; i < num; ++i) {
    if (!descs || FAILED(checkBufferDesc(&descs[i], "GetResourceAllocationInfo")))
      return {UINT64_MAX, 0};
    info.SizeInBytes = (info.SizeInBytes + kPlacementAlignment - 1) / kPlacementAlignment *
                           kPlacementAlignment +
                       descs[i].Width;
  }
  info.SizeInBytes = (info.SizeInBytes + kPlacementAlignment - 1) / kPlacementAlignment *
                     kPlacementAlignment;
  return info;
}

D3D12_HEAP_PROPERTIES Device::GetCustomHeapProperties(UINT, D3D12_HEAP_TYPE heapType) {
  // A cache-coherent UMA device (D3D12_FEATURE_ARCHITECTURE).
  D3D12_HEAP_PROPERTIES p = {};
  p.Type = D3D12_HEAP_TYPE_CUSTOM;
  p.CPUPageProperty = heapType == D3D12_HEAP_TYPE_DEFAULT ? D3D12_CPU_PAGE_PROPERTY_NOT_AVAILABLE
                                                          : D3D12_CPU_PAGE_PROPERTY_WRITE_BACK;
  p.MemoryPoolPreference = D3D12_MEMORY_POOL_L0;
  p.CreationNodeMask = p.VisibleNodeMask = 1;
  return p;
}

HRESULT Device::createHeapImpl(const D3D12_HEAP_DESC &desc, const void *existing,
                               ComPtr<Heap> &heap) {
  D3D12DDIARG_CREATEHEAP_CGC args = {desc.SizeInBytes,
                                     desc.Alignment ? desc.Alignment : kPlacementAlignment, existing};
  D3D12DDI_HHEAP handle = {};
  D3D12DDI_HEAP_MEMORY_CGC memory = {};
  HRESULT hr = ddi().pfnCreateHeap(handle_, &args, &handle, &memory);
  if (FAILED(hr))
    return fail(hr, "the driver could not allocate a heap of " + std::to_string(desc.SizeInBytes) +
                        " bytes (" + hresultName(hr) + ")");
  heap.Attach(new Heap(this, desc, handle, memory));
  return S_OK;
}

HRESULT Device::createSharedHeapImpl(const D3D12_HEAP_DESC &desc, SharedMemory *shared,
                               ComPtr<Heap> &heap) {
  D3D12_HEAP_DESC sized = desc;
  sized.SizeInBytes = shared->size;
  if (HRESULT hr = createHeapImpl(sized, static_cast<const void *>(shared->mapping), heap);
      FAILED(hr))
    return hr;
  heap->adoptSharedMemory(std::move(*shared));
  return S_OK;
}

static bool validHeapProperties(const D3D12_HEAP_PROPERTIES &p) {
  switch (p.Type) {
  case D3D12_HEAP_TYPE_DEFAULT:
  case D3D12_HEAP_TYPE_UPLOAD:
  case D3D12_HEAP_TYPE_READBACK:
    return p.CPUPageProperty == D3D12_CPU_PAGE_PROPERTY_UNKNOWN &&
           p.MemoryPoolPreference == D3D12_MEMORY_POOL_UNKNOWN;
  case D3D12_HEAP_TYPE_CUSTOM:
    return p.CPUPageProperty != D3D12_CPU_PAGE_PROPERTY_UNKNOWN &&
           p.MemoryPoolPreference != D3D12_MEMORY_POOL_UNKNOWN;
  default:
    return false;
  }
}

HRESULT Device::CreateCommittedResource(const D3D12_HEAP_PROPERTIES *pHeapProperties,
                                        D3D12_HEAP_FLAGS HeapFlags, const D3D12_RESOURCE_DESC *pDesc,
                                        D3D12_RESOURCE_STATES InitialResourceState,
                                        const D3D12_CLEAR_VALUE *, REFIID riid,
                                        void **ppvResource) {
  if (!pHeapProperties || !validHeapProperties(*pHeapProperties))
    return fail(E_INVALIDARG, "CreateCommittedResource: invalid heap properties");
  if (HRESULT hr = checkBufferDesc(pDesc, "CreateCommittedResource"); FAILED(hr))
    return hr;
  if (!ppvResource)
    return S_FALSE;
  *ppvResource = nullptr;
  D3D12_HEAP_DESC heapDesc = {};
  heapDesc.SizeInBytes = (pDesc->Width + kPlacementAlignment - 1) / kPlacementAlignment *
                         kPlacementAlignment;
  heapDesc.Properties = *pHeapProperties;
  heapDesc.Alignment = kPlacementAlignment;
  heapDesc.Flags = HeapFlags;
  ComPtr<Heap> heap;
  if (HeapFlags & D3D12_HEAP_FLAG_SHARED) {
    // Cross-process: the memory is a memfd (shared.cpp).
    SharedMemory memory;
    std::string error;
    if (!createSharedHeapMemory(heapDesc, pDesc->Width, memory, error))
      return fail(E_OUTOFMEMORY, "CreateCommittedResource(D3D12_HEAP_FLAG_SHARED): " + error);
    if (HRESULT hr = createSharedHeapImpl(heapDesc, &memory, heap); FAILED(hr))
      return hr;
  } else if (HRESULT hr = createHeapImpl(heapDesc, nullptr, heap); FAILED(hr)) {
    return hr;
  }
  ComPtr<Resource> resource;
  resource.Attach(new Resource(this, heap, 0, *pDesc, true, InitialResourceState));
  return resource->QueryInterface(riid, ppvResource);
}

HRESULT Device::CreateCommittedResource1(const D3D12_HEAP_PROPERTIES *pHeapProperties,
                                         D3D12_HEAP_FLAGS HeapFlags, const D3D12_RESOURCE_DESC *pDesc,
                                         D3D12_RESOURCE_STATES state,
                                         const D3D12_CLEAR_VALUE *clear,
                                         ID3D12ProtectedResourceSession *session, REFIID riid,
                                         void **ppvResource) {
  if (session)
    return fail(E_NOTIMPL, "CreateCommittedResource1: protected sessions are not implemented");
  return CreateCommittedResource(pHeapProperties, HeapFlags, pDesc, state, clear, riid,
                                 ppvResource);
}

HRESULT Device::CreateHeap(const D3D12_HEAP_DESC *pDesc, REFIID riid, void **ppvHeap) {
  if (!pDesc || pDesc->SizeInBytes == 0 || !validHeapProperties(pDesc->Properties))
    return fail(E_INVALIDARG, "CreateHeap: a heap needs SizeInBytes > 0 and valid properties");
  if (pDesc->Alignment != 0 && pDesc->Alignment != kPlacementAlignment &&
      pDesc->Alignment != D3D12_DEFAULT_MSAA_RESOURCE_PLACEMENT_ALIGNMENT)
    return fail(E_INVALIDARG, "CreateHeap: Alignment must be 0, 64 KiB or 4 MiB");
  if (!ppvHeap)
    return S_FALSE;
  *ppvHeap = nullptr;
  ComPtr<Heap> heap;
  if (pDesc->Flags & D3D12_HEAP_FLAG_SHARED) {
    // Cross-process: the memory is a memfd (shared.cpp).
    SharedMemory memory;
    std::string error;
    if (!createSharedHeapMemory(*pDesc, 0, memory, error))
      return fail(E_OUTOFMEMORY, "CreateHeap(D3D12_HEAP_FLAG_SHARED): " + error);
    if (HRESULT hr = createSharedHeapImpl(*pDesc, &memory, heap); FAILED(hr))
      return hr;
  } else if (HRESULT hr = createHeapImpl(*pDesc, nullptr, heap); FAILED(hr)) {
    return hr;
  }
  return heap->QueryInterface(riid, ppvHeap);
}

HRESULT Device::CreateHeap1(const D3D12_HEAP_DESC *pDesc, ID3D12ProtectedResourceSession *session,
                            REFIID riid, void **ppvHeap) {
  if (session)
    return fail(E_NOTIMPL, "CreateHeap1: protected sessions are not implemented");
  return CreateHeap(pDesc, riid, ppvHeap);
}

HRESULT Device::CreatePlacedResource(ID3D12Heap *pHeap, UINT64 HeapOffset,
                                     const D3D12_RESOURCE_DESC *pDesc,
                                     D3D12_RESOURCE_STATES InitialState,
                                     const D3D12_CLEAR_VALUE *, REFIID riid, void **ppvResource) {
  Heap *heap = implOf<Heap>(pHeap, kImplHeap);
  if (!heap)
    return fail(E_INVALIDARG, "CreatePlacedResource: pHeap is not a heap of this runtime");
  if (heap->device() != this)
    return fail(E_INVALIDARG, "CreatePlacedResource: the heap belongs to another device");
  if (HRESULT hr = checkBufferDesc(pDesc, "CreatePlacedResource"); FAILED(hr))
    return hr;
  if (HeapOffset % kPlacementAlignment)
    return fail(E_INVALIDARG, "CreatePlacedResource: HeapOffset " + std::to_string(HeapOffset) +
                                  " is not a multiple of 64 KiB");
  if (heap->desc().Flags & D3D12_HEAP_FLAG_DENY_BUFFERS)
    return fail(E_INVALIDARG, "CreatePlacedResource: the heap denies buffers");
  uint64_t size = heap->desc().SizeInBytes;
  if (HeapOffset > size || pDesc->Width > size - HeapOffset)
    return fail(E_INVALIDARG, "CreatePlacedResource: [" + std::to_string(HeapOffset) + ", " +
                                  std::to_string(HeapOffset + pDesc->Width) +
                                  ") does not fit in the " + std::to_string(size) + "-byte heap");
  if (!ppvResource)
    return S_FALSE;
  *ppvResource = nullptr;
  ComPtr<Resource> resource;
  resource.Attach(new Resource(this, heap, HeapOffset, *pDesc, false, InitialState));
  return resource->QueryInterface(riid, ppvResource);
}

/// The bytes mapped from `address` (page-aligned) to the end of its mapping,
/// from /proc/self/maps; adjacent mappings count as one, as the kernel merges
/// neighbouring anonymous mappings anyway. 0 if `address` is not mapped.
static uint64_t mappingSize(uint64_t address) {
  if (address % uint64_t(sysconf(_SC_PAGESIZE)))
    return 0;
  std::ifstream maps("/proc/self/maps");
  std::string line;
  uint64_t end = 0;
  while (std::getline(maps, line)) {
    unsigned long long lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%llx-%llx", &lo, &hi) != 2)
      continue;
    if (end == 0 && lo <= address && address < hi)
      end = hi;
    else if (end != 0 && lo == end)
      end = hi;
    else if (end != 0)
      break;
  }
  return end ? end - address : 0;
}

HRESULT Device::OpenExistingHeapFromAddress(const void *pAddress, REFIID riid, void **ppvHeap) {
  uint64_t address = reinterpret_cast<uint64_t>(pAddress);
  uint64_t size = pAddress ? mappingSize(address) : 0;
  if (!size)
    return fail(E_INVALIDARG, "OpenExistingHeapFromAddress: " + hex(address) +
                                  " is not a page-aligned mapped address (use mmap, or "
                                  "OpenExistingHeapFromAddress1 with a size)");
  return OpenExistingHeapFromAddress1(pAddress, size, riid, ppvHeap);
}

HRESULT Device::OpenExistingHeapFromAddress1(const void *pAddress, SIZE_T size, REFIID riid,
                                             void **ppvHeap) {
  uint64_t address = reinterpret_cast<uint64_t>(pAddress);
  long page = sysconf(_SC_PAGESIZE);
  if (!pAddress || address % uint64_t(page) || size == 0)
    return fail(E_INVALIDARG, "OpenExistingHeapFromAddress1: the address must be non-null and "
                              "page-aligned and the size non-zero");
  if (!ppvHeap)
    return S_FALSE;
  *ppvHeap = nullptr;
  D3D12_HEAP_DESC desc = {};
  desc.SizeInBytes = size;
  desc.Properties.Type = D3D12_HEAP_TYPE_CUSTOM;
  desc.Properties.CPUPageProperty = D3D12_CPU_PAGE_PROPERTY_WRITE_BACK;
  desc.Properties.MemoryPoolPreference = D3D12_MEMORY_POOL_L0;
  desc.Properties.CreationNodeMask = desc.Properties.VisibleNodeMask = 1;
  desc.Alignment = kPlacementAlignment;
  desc.Flags = D3D12_HEAP_FLAG_SHARED_CROSS_ADAPTER | D3D12_HEAP_FLAG_ALLOW_ONLY_BUFFERS;
  ComPtr<Heap> heap;
  if (HRESULT hr = createHeapImpl(desc, pAddress, heap); FAILED(hr))
    return hr;
  return heap->QueryInterface(riid, ppvHeap);
}

//===----------------------------------------------------------------------===//
// Fences, queues, lists
//===----------------------------------------------------------------------===//

HRESULT Device::CreateFence(UINT64 InitialValue, D3D12_FENCE_FLAGS Flags, REFIID riid,
                            void **ppFence) {
  const auto flagBits = enumBits(Flags);
  if (flagBits & ~enumBits(D3D12_FENCE_FLAG_SHARED | D3D12_FENCE_FLAG_SHARED_CROSS_ADAPTER |
                           D3D12_FENCE_FLAG_NON_MONITORED))
    return fail(E_INVALIDARG, "CreateFence: unknown flags");
  if (!ppFence)
    return S_FALSE;
  *ppFence = nullptr;
  ComPtr<Fence> fence;
  if (Flags & D3D12_FENCE_FLAG_SHARED) {
    // A cross-process timeline in a shared page (shared.cpp).
    if (HRESULT hr = createSharedFence(InitialValue, Flags, fence); FAILED(hr))
      return hr;
  } else {
    fence.Attach(new Fence(this, InitialValue, Flags));
  }
  return fence->QueryInterface(riid, ppFence);
}

HRESULT Device::SetEventOnMultipleFenceCompletion(ID3D12Fence *const *ppFences,
                                                  const UINT64 *pValues, UINT num,
                                                  D3D12_MULTIPLE_FENCE_WAIT_FLAGS flags,
                                                  HANDLE hEvent) {
  if (num && (!ppFences || !pValues))
    return fail(E_INVALIDARG, "SetEventOnMultipleFenceCompletion: null arrays");
  std::vector<Fence *> fences;
  for (UINT i = 0; i < num; ++i) {
    Fence *f = implOf<Fence>(ppFences[i], kImplFence);
    if (!f)
      return fail(E_INVALIDARG, "SetEventOnMultipleFenceCompletion: fence #" + std::to_string(i) +
                                    " is not a fence of this runtime");
    fences.push_back(f);
  }
  if (hEvent)
    return fail(E_NOTIMPL, "SetEventOnMultipleFenceCompletion: only a null event (block until "
                           "done) is implemented");
  if (flags == D3D12_MULTIPLE_FENCE_WAIT_FLAG_ANY) {
    while (true) {
      for (UINT i = 0; i < num; ++i)
        if (fences[i]->GetCompletedValue() >= pValues[i])
          return S_OK;
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  }
  for (UINT i = 0; i < num; ++i)
    fences[i]->waitFor(pValues[i], nullptr);
  return S_OK;
}

HRESULT Device::CreateCommandQueue(const D3D12_COMMAND_QUEUE_DESC *pDesc, REFIID riid,
                                   void **ppCommandQueue) {
  if (!pDesc)
    return fail(E_INVALIDARG, "CreateCommandQueue: pDesc is null");
  if (pDesc->Type != D3D12_COMMAND_LIST_TYPE_DIRECT && pDesc->Type != D3D12_COMMAND_LIST_TYPE_COMPUTE &&
      pDesc->Type != D3D12_COMMAND_LIST_TYPE_COPY)
    return fail(E_NOTIMPL, "CreateCommandQueue: only DIRECT, COMPUTE and COPY queues exist");
  if (pDesc->NodeMask > 1)
    return fail(E_INVALIDARG, "CreateCommandQueue: the device has one node");
  if (!ppCommandQueue)
    return S_FALSE;
  *ppCommandQueue = nullptr;
  D3D12DDI_HCOMMANDQUEUE handle = {};
  HRESULT hr = ddi().pfnCreateCommandQueue(handle_, &handle);
  if (FAILED(hr))
    return fail(hr, "CreateCommandQueue: the driver failed (" + hresultName(hr) + ")");
  ComPtr<CommandQueue> queue;
  queue.Attach(new CommandQueue(this, *pDesc, handle));
  return queue->QueryInterface(riid, ppCommandQueue);
}

HRESULT Device::CreateCommandAllocator(D3D12_COMMAND_LIST_TYPE type, REFIID riid,
                                       void **ppCommandAllocator) {
  if (type != D3D12_COMMAND_LIST_TYPE_DIRECT && type != D3D12_COMMAND_LIST_TYPE_COMPUTE &&
      type != D3D12_COMMAND_LIST_TYPE_COPY)
    return fail(E_NOTIMPL, "CreateCommandAllocator: only DIRECT, COMPUTE and COPY lists exist");
  if (!ppCommandAllocator)
    return S_FALSE;
  *ppCommandAllocator = nullptr;
  ComPtr<CommandAllocator> allocator;
  allocator.Attach(new CommandAllocator(this, type));
  return allocator->QueryInterface(riid, ppCommandAllocator);
}

HRESULT Device::CreateCommandList(UINT nodeMask, D3D12_COMMAND_LIST_TYPE type,
                                  ID3D12CommandAllocator *pCommandAllocator,
                                  ID3D12PipelineState *pInitialState, REFIID riid,
                                  void **ppCommandList) {
  CommandAllocator *allocator = implOf<CommandAllocator>(pCommandAllocator, kImplCommandAllocator);
  if (!allocator)
    return fail(E_INVALIDARG, "CreateCommandList: pCommandAllocator is not an allocator of this "
                              "runtime");
  if (allocator->type() != type)
    return fail(E_INVALIDARG, "CreateCommandList: the allocator's type differs from the list's");
  if (nodeMask > 1)
    return fail(E_INVALIDARG, "CreateCommandList: the device has one node");
  if (pInitialState && !implOf<PipelineState>(pInitialState, kImplPipelineState))
    return fail(E_INVALIDARG, "CreateCommandList: pInitialState is not a pipeline of this runtime");
  if (!ppCommandList)
    return S_FALSE;
  *ppCommandList = nullptr;
  ComPtr<ID3D12GraphicsCommandList10> list;
  if (HRESULT hr = CreateCommandList1(nodeMask, type, D3D12_COMMAND_LIST_FLAG_NONE,
                                      IID_PPV_ARGS(&list));
      FAILED(hr))
    return hr;
  if (HRESULT hr = list->Reset(pCommandAllocator, pInitialState); FAILED(hr))
    return hr;
  return list->QueryInterface(riid, ppCommandList);
}

HRESULT Device::CreateCommandList1(UINT nodeMask, D3D12_COMMAND_LIST_TYPE type,
                                   D3D12_COMMAND_LIST_FLAGS flags, REFIID riid,
                                   void **ppCommandList) {
  if (type != D3D12_COMMAND_LIST_TYPE_DIRECT && type != D3D12_COMMAND_LIST_TYPE_COMPUTE &&
      type != D3D12_COMMAND_LIST_TYPE_COPY)
    return fail(E_NOTIMPL, "CreateCommandList1: only DIRECT, COMPUTE and COPY lists exist");
  if (nodeMask > 1 || flags != D3D12_COMMAND_LIST_FLAG_NONE)
    return fail(E_INVALIDARG, "CreateCommandList1: invalid node mask or flags");
  if (!ppCommandList)
    return S_FALSE;
  *ppCommandList = nullptr;
  ComPtr<CommandList> list;
  list.Attach(new CommandList(this, type, {}, false));
  D3D12DDI_HCOMMANDLIST handle = {};
  HRESULT hr = ddi().pfnCreateCommandList(handle_, {list.Get()}, &handle);
  if (FAILED(hr))
    return fail(hr, "CreateCommandList: the driver failed (" + hresultName(hr) + ")");
  list->attachHandle(handle);
  return list->QueryInterface(riid, ppCommandList);
}

//===----------------------------------------------------------------------===//
// Compute pipelines
//===----------------------------------------------------------------------===//

HRESULT Device::CreateComputePipelineState(const D3D12_COMPUTE_PIPELINE_STATE_DESC *pDesc,
                                           REFIID riid, void **ppPipelineState) {
  if (!pDesc)
    return fail(E_INVALIDARG, "CreateComputePipelineState: pDesc is null");
  if (pDesc->pRootSignature)
    return fail(E_INVALIDARG, "CreateComputePipelineState: root signatures are not implemented; "
                              "pass null (the kernel program's bindings are the root "
                              "parameters, root UAV i = binding i)");
  if (pDesc->CachedPSO.pCachedBlob || pDesc->CachedPSO.CachedBlobSizeInBytes)
    return fail(E_NOTIMPL, "CreateComputePipelineState: cached PSOs are not implemented");
  if (pDesc->NodeMask > 1)
    return fail(E_INVALIDARG, "CreateComputePipelineState: the device has one node");
  if (!pDesc->CS.pShaderBytecode || !pDesc->CS.BytecodeLength)
    return fail(E_INVALIDARG, "CreateComputePipelineState: CS bytecode is empty");
  ContainerReader reader;
  std::string error;
  if (!reader.open(pDesc->CS.pShaderBytecode, pDesc->CS.BytecodeLength, error))
    return fail(E_INVALIDARG, "CreateComputePipelineState: CS bytecode is not a valid DX "
                              "container: " +
                                  error);
  auto programs = reader.find(parts::kKernelProgram);
  if (programs.size() != 1)
    return fail(E_INVALIDARG, "CreateComputePipelineState: the CS container has " +
                                  std::to_string(programs.size()) +
                                  " 'CGKP' kernel-program parts; exactly one is needed (DXIL "
                                  "shaders are out of scope)");
  std::vector<KernelProgram::Binding> bindings;
  if (debug_) {
    KernelProgram program;
    if (!deserializeKernelProgram(programs[0]->data.str(), program, error))
      return fail(E_INVALIDARG, "CreateComputePipelineState: " + error);
    bindings = program.bindings;
  }
  if (!ppPipelineState)
    return S_FALSE;
  *ppPipelineState = nullptr;
  D3D12DDIARG_CREATE_COMPUTE_PIPELINE_STATE_CGC args = {pDesc->CS.pShaderBytecode,
                                                        pDesc->CS.BytecodeLength};
  D3D12DDI_HPIPELINESTATE handle = {};
  HRESULT hr = ddi().pfnCreateComputePipelineState(handle_, &args, &handle);
  if (FAILED(hr))
    return fail(hr, "CreateComputePipelineState: the driver failed (" + hresultName(hr) + ")");
  ComPtr<PipelineState> pipeline;
  pipeline.Attach(new PipelineState(this, handle, std::move(bindings)));
  return pipeline->QueryInterface(riid, ppPipelineState);
}

//===----------------------------------------------------------------------===//
// State objects
//===----------------------------------------------------------------------===//

namespace {
/// What the runtime parses out of a state object description.
struct ParsedStateObject {
  bool allowAdditions = false;
  bool hasConfig = false;
  std::vector<D3D12DDI_MLIR_PROGRAM_DESC_0119> programs;
  std::vector<std::shared_ptr<ProgramInfo>> infos;
  /// Non-empty cached blobs (cgc extension), each for one of `programs`.
  std::vector<D3D12DDI_CACHED_MLIR_PROGRAM_CGC> cached;
};
} // namespace

static HRESULT parseStateObject(Device &device, const D3D12_STATE_OBJECT_DESC *pDesc,
                                bool developerMode, const char *method, ParsedStateObject &out,
                                std::string &error) {
  auto bad = [&](HRESULT hr, const std::string &text) {
    error = std::string(method) + ": " + text;
    return hr;
  };
  if (!pDesc)
    return bad(E_INVALIDARG, "the description is null");
  const auto type = enumBits(pDesc->Type);
  if (type != enumBits(D3D12_STATE_OBJECT_TYPE_EXECUTABLE)) {
    if (type == enumBits(D3D12_STATE_OBJECT_TYPE_COLLECTION) ||
        type == enumBits(D3D12_STATE_OBJECT_TYPE_RAYTRACING_PIPELINE))
      return bad(E_NOTIMPL, "collections and raytracing pipelines are not implemented; MLIR "
                            "programs live in D3D12_STATE_OBJECT_TYPE_EXECUTABLE state objects");
    return bad(E_INVALIDARG, "unknown state object type " + std::to_string(type));
  }
  if (pDesc->NumSubobjects && !pDesc->pSubobjects)
    return bad(E_INVALIDARG, "pSubobjects is null");
  std::set<std::wstring> cachedNames;
  for (UINT i = 0; i < pDesc->NumSubobjects; ++i) {
    const D3D12_STATE_SUBOBJECT &sub = pDesc->pSubobjects[i];
    std::string where = "subobject #" + std::to_string(i);
    if (!sub.pDesc)
      return bad(E_INVALIDARG, where + " has a null pDesc");
    const auto subType = enumBits(sub.Type);
    if (subType == enumBits(D3D12_STATE_SUBOBJECT_TYPE_STATE_OBJECT_CONFIG)) {
      if (out.hasConfig)
        return bad(E_INVALIDARG, where + ": more than one D3D12_STATE_OBJECT_CONFIG");
      out.hasConfig = true;
      const auto flags = enumBits(static_cast<const D3D12_STATE_OBJECT_CONFIG *>(sub.pDesc)->Flags);
      const auto additions = enumBits(D3D12_STATE_OBJECT_FLAG_ALLOW_STATE_OBJECT_ADDITIONS);
      if (flags & ~additions)
        return bad(E_NOTIMPL, where + ": only D3D12_STATE_OBJECT_FLAG_ALLOW_STATE_OBJECT_ADDITIONS "
                                      "is implemented");
      out.allowAdditions = (flags & additions) != 0;
      continue;
    }
    if (int(subType) == int(D3D12_STATE_SUBOBJECT_TYPE_CACHED_MLIR_PROGRAM_CGC)) {
      const auto *cached = static_cast<const D3D12_CACHED_MLIR_PROGRAM_CGC *>(sub.pDesc);
      if (!cached->ProgramName || !*cached->ProgramName)
        return bad(E_INVALIDARG, where + ": the cached MLIR program has no ProgramName");
      std::string name = narrow(cached->ProgramName);
      const D3D12_CACHED_PIPELINE_STATE &blob = cached->CachedBlob;
      if (!blob.pCachedBlob != !blob.CachedBlobSizeInBytes)
        return bad(E_INVALIDARG, where + ": the cached blob of MLIR program '" + name +
                                     "' has " +
                                     (blob.pCachedBlob ? "a pointer and no size"
                                                       : "a size and a null pointer"));
      if (cachedNames.count(cached->ProgramName))
        return bad(E_INVALIDARG, "two cached blobs are given for MLIR program '" + name + "'");
      cachedNames.insert(cached->ProgramName);
      if (blob.pCachedBlob)
        out.cached.push_back(
            {cached->ProgramName, blob.pCachedBlob, blob.CachedBlobSizeInBytes});
      continue;
    }
    if (int(subType) != int(D3D12_STATE_SUBOBJECT_TYPE_MLIR_PROGRAM))
      return bad(E_NOTIMPL, where + " has type " + std::to_string(int(subType)) +
                                "; only MLIR programs, their cached blobs and the state object "
                                "config are implemented (shaders are out of scope)");
    const auto *desc = static_cast<const D3D12_MLIR_PROGRAM_DESC *>(sub.pDesc);
    if (!desc->ProgramName || !*desc->ProgramName)
      return bad(E_INVALIDARG, where + ": the MLIR program has no ProgramName");
    auto info = std::make_shared<ProgramInfo>();
    info->wideName = desc->ProgramName;
    info->name = narrow(desc->ProgramName);
    where = "MLIR program '" + info->name + "'";
    for (const auto &other : out.infos)
      if (other->wideName == info->wideName)
        return bad(E_INVALIDARG, "two MLIR programs are named '" + info->name + "'");
    if (!desc->pBytecode || !desc->BytecodeSizeInBytes)
      return bad(E_INVALIDARG, where + " has no bytecode");
    ContainerReader reader;
    std::string why;
    if (!reader.open(desc->pBytecode, desc->BytecodeSizeInBytes, why))
      return bad(E_INVALIDARG, where + ": the bytecode is not a valid DX container: " + why);
    auto mlir = reader.find(parts::kMLIR);
    if (mlir.size() != 1)
      return bad(E_INVALIDARG, where + ": the container has " + std::to_string(mlir.size()) +
                                   " 'MLIR' parts; exactly one is needed");
    Guid iface;
    ByteView bytecode;
    if (!ContainerReader::splitMLIRPart(*mlir[0], iface, bytecode, why))
      return bad(E_INVALIDARG, where + ": " + why);
    if (!interfaces::isKnown(iface) && !developerMode)
      return bad(E_INVALIDARG, where + ": MLIR interface " + iface.str() +
                                   " is not known to the runtime (developer mode passes it on)");
    auto bindPoints = reader.find(parts::kBindPoints);
    if (bindPoints.size() != 1)
      return bad(E_INVALIDARG, where + ": the container has " +
                                   std::to_string(bindPoints.size()) +
                                   " 'CGBP' bind-point parts; exactly one is needed");
    if (!deserializeBindPoints(bindPoints[0]->data.str(), info->bindPoints, why))
      return bad(E_INVALIDARG, where + ": bind-point metadata: " + why);
    out.programs.push_back({desc->ProgramName, desc->pBytecode, desc->BytecodeSizeInBytes});
    out.infos.push_back(std::move(info));
  }
  for (const std::wstring &name : cachedNames) {
    bool found = false;
    for (const auto &info : out.infos)
      found |= info->wideName == name;
    if (!found)
      return bad(E_INVALIDARG, "a cached blob is given for '" + narrow(name.c_str()) +
                                   "', which is not an MLIR program of this description");
  }
  (void)device;
  return S_OK;
}

/// Why the 'CGBP' bind points of `info` do not describe the program the
/// driver compiled (its own reading of the Partition IR), or "". The debug
/// layer checks bindings against 'CGBP': a wrong one must not pass.
static std::string compareBindPoints(const ProgramInfo &info,
                                     const std::vector<D3D12DDI_PROGRAM_BIND_POINT_CGC> &compiled) {
  const std::string lead = "the container's 'CGBP' bind points do not match the program the "
                           "driver compiled: ";
  if (compiled.size() != info.bindPoints.size())
    return lead + "'CGBP' lists " + std::to_string(info.bindPoints.size()) +
           " bind points, the program has " + std::to_string(compiled.size());
  for (size_t i = 0; i < compiled.size(); ++i) {
    const BindPoint &bp = info.bindPoints[i];
    const D3D12DDI_PROGRAM_BIND_POINT_CGC &c = compiled[i];
    std::string which = lead + "bind point " + std::to_string(i) + " '" + bp.name + "' (" +
                        bindPointKindName(bp.kind) + ", " + std::to_string(bp.bytes) + " bytes";
    const char *dtype = cgc_dtype_name(bp.dtype);
    which += std::string(", ") + (dtype ? dtype : "no dtype") + ")";
    if (c.SizeInBytes != bp.bytes)
      return which + ": the program accesses " + std::to_string(c.SizeInBytes) + " bytes";
    if (bool(c.Constant) != (bp.kind == BindPointKind::Constant))
      return which + ": the program's argument is " +
             (c.Constant ? "a constant" : "not a constant");
    if (c.DType != CGC_DTYPE_INVALID && c.DType != UINT(bp.dtype)) {
      const char *actual = cgc_dtype_name(cgc_dtype_t(c.DType));
      return which + ": the program's argument holds " +
             (actual ? actual : "dtype #" + std::to_string(c.DType));
    }
  }
  return "";
}

HRESULT Device::makeStateObject(const D3D12_STATE_OBJECT_DESC *pDesc, StateObject *grownFrom,
                                REFIID riid, void **ppStateObject) {
  const char *method = grownFrom ? "AddToStateObject" : "CreateStateObject";
  ParsedStateObject parsed;
  std::string error;
  if (HRESULT hr = parseStateObject(*this, pDesc, developerMode_, method, parsed, error); FAILED(hr))
    return fail(hr, error);
  if (parsed.programs.empty())
    return fail(E_INVALIDARG, std::string(method) +
                                  ": an executable state object needs at least one MLIR program");
  // The spec's D3D12_MLIR_PROGRAMS_TIER_NOT_SUPPORTED: "attempts to create
  // any state objects containing MLIR programs will fail".
  if (tier_ == D3D12_MLIR_PROGRAMS_TIER_NOT_SUPPORTED)
    return fail(DXGI_ERROR_UNSUPPORTED,
                std::string(method) + ": MLIR program '" + parsed.infos.front()->name +
                    "': the device reports D3D12_MLIR_PROGRAMS_TIER_NOT_SUPPORTED (driver '" +
                    driver_->path + "'); it creates no MLIR programs");
  std::map<std::wstring, std::shared_ptr<const ProgramInfo>> programs;
  if (grownFrom) {
    if (!grownFrom->allowAdditions())
      return fail(E_INVALIDARG, "AddToStateObject: the state object to grow from was not created "
                                "with D3D12_STATE_OBJECT_FLAG_ALLOW_STATE_OBJECT_ADDITIONS");
    if (!parsed.allowAdditions)
      return fail(E_INVALIDARG, "AddToStateObject: the addition does not opt in with "
                                "D3D12_STATE_OBJECT_FLAG_ALLOW_STATE_OBJECT_ADDITIONS");
    programs = grownFrom->programs();
    for (const auto &info : parsed.infos)
      if (programs.count(info->wideName))
        return fail(E_INVALIDARG, "AddToStateObject: the state object already has an MLIR "
                                  "program named '" +
                                      info->name + "'");
  }
  if (!ppStateObject)
    return S_FALSE;
  *ppStateObject = nullptr;
  std::vector<D3D12DDI_STATE_SUBOBJECT_0054> subobjects;
  for (const auto &program : parsed.programs)
    subobjects.push_back({D3D12DDI_STATE_SUBOBJECT_TYPE_MLIR_PROGRAM, &program});
  // A driver that cannot report what it did with a cached blob gets none:
  // it compiles every program, and CGCD3D12GetCachedMlirProgramStatus says
  // E_NOTIMPL.
  if (ddi().pfnGetCachedMlirProgramStatusCgc)
    for (const auto &cached : parsed.cached)
      subobjects.push_back({D3D12DDI_STATE_SUBOBJECT_TYPE_CACHED_MLIR_PROGRAM_CGC, &cached});
  D3D12DDIARG_CREATE_STATE_OBJECT_0054 args = {D3D12DDI_STATE_OBJECT_TYPE_EXECUTABLE,
                                               UINT(subobjects.size()), subobjects.data()};
  // Linear history: only the most recent addition may grow.
  if (grownFrom) {
    bool expected = false;
    if (!grownFrom->grown.compare_exchange_strong(expected, true))
      return fail(E_INVALIDARG, "AddToStateObject: this state object has already been grown; "
                                "additions must be made to the most recent one");
  }
  D3D12DDI_HSTATEOBJECT handle = {};
  HRESULT hr = grownFrom ? ddi().pfnAddToStateObject(handle_, &args, grownFrom->handle(), &handle)
                         : ddi().pfnCreateStateObject(handle_, &args, &handle);
  if (FAILED(hr)) {
    if (grownFrom)
      grownFrom->grown.store(false);
    return fail(hr, std::string(method) + ": the driver failed (" + hresultName(hr) + ")");
  }
  for (auto &info : parsed.infos) {
    D3D12DDI_PROGRAM_IDENTIFIER_0108 id = {};
    if (FAILED(ddi().pfnGetProgramIdentifier(handle_, handle, info->wideName.c_str(), &id))) {
      ddi().pfnDestroyStateObject(handle_, handle);
      if (grownFrom)
        grownFrom->grown.store(false);
      return fail(E_FAIL, std::string(method) + ": the driver has no identifier for '" +
                              info->name + "'");
    }
    std::memcpy(&info->id, &id, sizeof(id));
    programs[info->wideName] = info;
  }
  // The 'CGBP' metadata against the program as the driver compiled it.
  if (auto query = ddi().pfnGetProgramBindPointsCgc) {
    for (const auto &info : parsed.infos) {
      UINT count = 0;
      std::vector<D3D12DDI_PROGRAM_BIND_POINT_CGC> compiled;
      HRESULT qhr = query(handle_, handle, info->wideName.c_str(), &count, nullptr);
      if (SUCCEEDED(qhr)) {
        compiled.resize(count);
        qhr = query(handle_, handle, info->wideName.c_str(), &count, compiled.data());
      }
      std::string why = FAILED(qhr) ? "the driver does not report the program's bind points (" +
                                          hresultName(qhr) + ")"
                                    : compareBindPoints(*info, compiled);
      if (!why.empty()) {
        ddi().pfnDestroyStateObject(handle_, handle);
        if (grownFrom)
          grownFrom->grown.store(false);
        return fail(FAILED(qhr) ? E_FAIL : E_INVALIDARG,
                    std::string(method) + ": MLIR program '" + info->name + "': " + why);
      }
    }
  } else if (debug_) {
    message(D3D12_MESSAGE_SEVERITY_WARNING, D3D12_MESSAGE_CATEGORY_STATE_CREATION,
            std::string(method) + ": the driver does not report its programs' bind points "
                                  "(pfnGetProgramBindPointsCgc); the 'CGBP' metadata the debug "
                                  "layer checks bindings against is not checked against '" +
                parsed.infos.front()->name + "'");
  }
  {
    std::unique_lock<std::shared_mutex> lock(programsMutex_);
    for (auto &[name, info] : programs)
      programs_[info->id] = info;
    // Forget identifiers whose programs are gone.
    for (auto it = programs_.begin(); it != programs_.end();)
      it = it->second.expired() ? programs_.erase(it) : std::next(it);
  }
  ComPtr<StateObject> object;
  object.Attach(new StateObject(this, handle, parsed.allowAdditions, std::move(programs)));
  return object->QueryInterface(riid, ppStateObject);
}

HRESULT Device::CreateStateObject(const D3D12_STATE_OBJECT_DESC *pDesc, REFIID riid,
                                  void **ppStateObject) {
  return makeStateObject(pDesc, nullptr, riid, ppStateObject);
}

HRESULT Device::AddToStateObject(const D3D12_STATE_OBJECT_DESC *pAddition,
                                 ID3D12StateObject *pStateObjectToGrowFrom, REFIID riid,
                                 void **ppNewStateObject) {
  StateObject *from = implOf<StateObject>(pStateObjectToGrowFrom, kImplStateObject);
  if (!from)
    return fail(E_INVALIDARG, "AddToStateObject: pStateObjectToGrowFrom is not a state object of "
                              "this runtime");
  if (from->device() != this)
    return fail(E_INVALIDARG, "AddToStateObject: the state object belongs to another device");
  return makeStateObject(pAddition, from, riid, ppNewStateObject);
}

//===----------------------------------------------------------------------===//
// Device children
//===----------------------------------------------------------------------===//

#define CGC_D3D12_GET_DEVICE(Class)                                            \
  HRESULT Class::GetDevice(REFIID riid, void **ppvDevice) {                    \
    if (!ppvDevice)                                                            \
      return E_POINTER;                                                        \
    return device_->QueryInterface(riid, ppvDevice);                           \
  }
CGC_D3D12_GET_DEVICE(Heap)
CGC_D3D12_GET_DEVICE(Resource)
CGC_D3D12_GET_DEVICE(StateObject)
CGC_D3D12_GET_DEVICE(PipelineState)
CGC_D3D12_GET_DEVICE(CommandAllocator)
CGC_D3D12_GET_DEVICE(CommandList)
CGC_D3D12_GET_DEVICE(Fence)
CGC_D3D12_GET_DEVICE(CommandQueue)

Heap::Heap(Device *device, const D3D12_HEAP_DESC &desc, D3D12DDI_HHEAP handle,
           const D3D12DDI_HEAP_MEMORY_CGC &memory)
    : desc_(desc), handle_(handle), cpu_(static_cast<uint8_t *>(memory.pCPUAddress)),
      gpu_(memory.GPUVirtualAddress) {
  device_ = device;
}

Heap::~Heap() { device_->ddi().pfnDestroyHeap(device_->handle(), handle_); }

HRESULT Heap::QueryInterface(REFIID riid, void **ppv) {
  if (!ppv)
    return E_POINTER;
  CGC_D3D12_QI(IUnknown)
  CGC_D3D12_QI(ID3D12Object)
  CGC_D3D12_QI(ID3D12DeviceChild)
  CGC_D3D12_QI(ID3D12Pageable)
  CGC_D3D12_QI(ID3D12Heap)
  CGC_D3D12_QI(ID3D12Heap1)
  if (riid == kImplHeap) {
    *ppv = this;
    AddRef();
    return S_OK;
  }
  *ppv = nullptr;
  return E_NOINTERFACE;
}
void Heap::notImplemented(const char *what) { device_->notImplemented(what); }

Resource::Resource(Device *device, ComPtr<Heap> heap, uint64_t offset,
                   const D3D12_RESOURCE_DESC &desc, bool committed,
                   D3D12_RESOURCE_STATES initialState)
    : heap_(std::move(heap)), offset_(offset), desc_(desc), committed_(committed),
      state_(initialState) {
  device_ = device;
  desc_.Alignment = kPlacementAlignment;
  gpu_ = heap_->gpu() + offset_;
  device_->resources().add(this);
}

Resource::~Resource() { device_->resources().remove(this); }

HRESULT Resource::QueryInterface(REFIID riid, void **ppv) {
  if (!ppv)
    return E_POINTER;
  CGC_D3D12_QI(IUnknown)
  CGC_D3D12_QI(ID3D12Object)
  CGC_D3D12_QI(ID3D12DeviceChild)
  CGC_D3D12_QI(ID3D12Pageable)
  CGC_D3D12_QI(ID3D12Resource)
  CGC_D3D12_QI(ID3D12Resource1)
  CGC_D3D12_QI(ID3D12Resource2)
  if (riid == kImplResource) {
    *ppv = this;
    AddRef();
    return S_OK;
  }
  *ppv = nullptr;
  return E_NOINTERFACE;
}
void Resource::notImplemented(const char *what) { device_->notImplemented(what); }

HRESULT Resource::Map(UINT Subresource, const D3D12_RANGE *, void **ppData) {
  if (Subresource != 0)
    return device_->fail(E_INVALIDARG, "Map: a buffer has one subresource (0)");
  const D3D12_HEAP_PROPERTIES &p = heap_->desc().Properties;
  if (p.Type == D3D12_HEAP_TYPE_DEFAULT ||
      (p.Type == D3D12_HEAP_TYPE_CUSTOM && p.CPUPageProperty == D3D12_CPU_PAGE_PROPERTY_NOT_AVAILABLE))
    return device_->fail(E_INVALIDARG, "Map: the resource is in a heap the CPU cannot access "
                                       "(DEFAULT); use UPLOAD, READBACK or a CUSTOM heap with a "
                                       "CPU page property (the device is cache-coherent UMA)");
  if (ppData)
    *ppData = heap_->cpu() + offset_;
  return S_OK;
}

void Resource::Unmap(UINT, const D3D12_RANGE *) {}

D3D12_RESOURCE_DESC1 Resource::GetDesc1() {
  D3D12_RESOURCE_DESC1 d = {};
  d.Dimension = desc_.Dimension;
  d.Alignment = desc_.Alignment;
  d.Width = desc_.Width;
  d.Height = desc_.Height;
  d.DepthOrArraySize = desc_.DepthOrArraySize;
  d.MipLevels = desc_.MipLevels;
  d.Format = desc_.Format;
  d.SampleDesc = desc_.SampleDesc;
  d.Layout = desc_.Layout;
  d.Flags = desc_.Flags;
  return d;
}

HRESULT Resource::GetHeapProperties(D3D12_HEAP_PROPERTIES *pHeapProperties,
                                    D3D12_HEAP_FLAGS *pHeapFlags) {
  if (pHeapProperties)
    *pHeapProperties = heap_->desc().Properties;
  if (pHeapFlags)
    *pHeapFlags = heap_->desc().Flags;
  return committed_ || pHeapProperties || pHeapFlags ? S_OK : S_OK;
}

void ResourceRegistry::add(Resource *resource) {
  std::unique_lock<std::shared_mutex> lock(mutex_);
  byStart_.emplace(resource->gpu(), resource);
  maxSize_ = std::max(maxSize_, resource->size());
}

void ResourceRegistry::remove(Resource *resource) {
  std::unique_lock<std::shared_mutex> lock(mutex_);
  auto range = byStart_.equal_range(resource->gpu());
  for (auto it = range.first; it != range.second; ++it)
    if (it->second == resource) {
      byStart_.erase(it);
      return;
    }
}

std::vector<ResourceRegistry::Entry> ResourceRegistry::findAll(uint64_t address, uint64_t size) {
  std::vector<Entry> found;
  std::shared_lock<std::shared_mutex> lock(mutex_);
  auto it = byStart_.upper_bound(address);
  while (it != byStart_.begin()) {
    --it;
    uint64_t start = it->first, rsize = it->second->size();
    if (start + maxSize_ <= address)
      break;
    if (address >= start && address - start < rsize &&
        (size == 0 || size <= rsize - (address - start))) {
      const Resource *r = it->second;
      found.push_back({start, rsize, it->second->debugName(), r, r->heapType(),
                       r->allowsUnorderedAccess(), r->state()});
    }
  }
  // Innermost (smallest) first: a placed view before the heap-wide buffer.
  std::stable_sort(found.begin(), found.end(),
                   [](const Entry &a, const Entry &b) { return a.size < b.size; });
  return found;
}

bool ResourceRegistry::find(uint64_t address, uint64_t size, Entry &entry) {
  std::vector<Entry> found = findAll(address, size);
  if (found.empty())
    return false;
  entry = std::move(found.front());
  return true;
}

StateObject::StateObject(Device *device, D3D12DDI_HSTATEOBJECT handle, bool allowAdditions,
                         std::map<std::wstring, std::shared_ptr<const ProgramInfo>> programs)
    : handle_(handle), allowAdditions_(allowAdditions), programs_(std::move(programs)) {
  device_ = device;
}

StateObject::~StateObject() { device_->ddi().pfnDestroyStateObject(device_->handle(), handle_); }

HRESULT StateObject::QueryInterface(REFIID riid, void **ppv) {
  if (!ppv)
    return E_POINTER;
  if (riid == __uuidof(IUnknown) || riid == __uuidof(ID3D12Object) ||
      riid == __uuidof(ID3D12DeviceChild) || riid == __uuidof(ID3D12Pageable) ||
      riid == __uuidof(ID3D12StateObject)) {
    *ppv = static_cast<ID3D12StateObject *>(this);
    AddRef();
    return S_OK;
  }
  CGC_D3D12_QI(ID3D12StateObjectProperties)
  CGC_D3D12_QI(ID3D12StateObjectProperties1)
  if (riid == kImplStateObject) {
    *ppv = this;
    AddRef();
    return S_OK;
  }
  *ppv = nullptr;
  return E_NOINTERFACE;
}

D3D12_PROGRAM_IDENTIFIER StateObject::GetProgramIdentifier(LPCWSTR pProgramName) {
  if (pProgramName) {
    auto it = programs_.find(pProgramName);
    if (it != programs_.end())
      return it->second->id;
  }
  device_->error("GetProgramIdentifier: the state object has no program named '" +
                 narrow(pProgramName) + "'; returning a null identifier");
  return {};
}
void StateObject::notImplemented(const char *what) { device_->notImplemented(what); }


PipelineState::PipelineState(Device *device, D3D12DDI_HPIPELINESTATE handle,
                             std::vector<KernelProgram::Binding> bindings)
    : handle_(handle), bindings_(std::move(bindings)) {
  device_ = device;
}

PipelineState::~PipelineState() {
  device_->ddi().pfnDestroyPipelineState(device_->handle(), handle_);
}

HRESULT PipelineState::QueryInterface(REFIID riid, void **ppv) {
  if (!ppv)
    return E_POINTER;
  CGC_D3D12_QI(IUnknown)
  CGC_D3D12_QI(ID3D12Object)
  CGC_D3D12_QI(ID3D12DeviceChild)
  CGC_D3D12_QI(ID3D12Pageable)
  CGC_D3D12_QI(ID3D12PipelineState)
  if (riid == kImplPipelineState) {
    *ppv = this;
    AddRef();
    return S_OK;
  }
  *ppv = nullptr;
  return E_NOINTERFACE;
}
void PipelineState::notImplemented(const char *what) { device_->notImplemented(what); }

} // namespace cgc::d3d12

using namespace cgc::d3d12;

CGC_D3D12_API HRESULT CGCD3D12GetCachedMlirProgramStatus(
    ID3D12StateObject *pStateObject, LPCWSTR pProgramName,
    CGC_D3D12_CACHED_MLIR_PROGRAM_STATUS *pStatus) {
  const char *method = "CGCD3D12GetCachedMlirProgramStatus: ";
  StateObject *object = implOf<StateObject>(pStateObject, kImplStateObject);
  if (!object || !pProgramName || !pStatus) {
    setLastError(std::string(method) + (!object ? "pStateObject is not a state object of this "
                                                  "runtime"
                                                : "pProgramName and pStatus must not be null"));
    return E_INVALIDARG;
  }
  Device *device = object->device();
  if (!object->programs().count(pProgramName))
    return device->fail(E_INVALIDARG, method + std::string("the state object has no MLIR program "
                                                           "named '") +
                                          narrow(pProgramName) + "'");
  auto query = device->ddi().pfnGetCachedMlirProgramStatusCgc;
  if (!query)
    return device->fail(E_NOTIMPL, method + std::string("the driver does not report it"));
  D3D12DDI_CACHED_MLIR_PROGRAM_STATUS_CGC status = D3D12DDI_CACHED_MLIR_PROGRAM_STATUS_NONE_CGC;
  HRESULT hr = query(device->handle(), object->handle(), pProgramName, &status);
  if (FAILED(hr))
    return device->fail(hr, method + std::string("the driver failed (") + hresultName(hr) + ")");
  *pStatus = CGC_D3D12_CACHED_MLIR_PROGRAM_STATUS(status);
  return S_OK;
}

CGC_D3D12_API HRESULT CGCD3D12RegisterPrecompiledDatabases(
    const char *pStateObjectDatabase, UINT NumPrecompiledDatabases,
    const char *const *ppPrecompiledDatabases) {
  const char *method = "CGCD3D12RegisterPrecompiledDatabases: ";
  if (!pStateObjectDatabase || !*pStateObjectDatabase || !NumPrecompiledDatabases ||
      !ppPrecompiledDatabases) {
    setLastError(std::string(method) + "a state object database and at least one precompiled "
                                       "database are needed");
    return E_INVALIDARG;
  }
  std::vector<std::string> psdbs;
  for (UINT i = 0; i < NumPrecompiledDatabases; ++i) {
    if (!ppPrecompiledDatabases[i] || !*ppPrecompiledDatabases[i]) {
      setLastError(std::string(method) + "precompiled database path #" + std::to_string(i) +
                   " is null or empty");
      return E_INVALIDARG;
    }
    psdbs.push_back(ppPrecompiledDatabases[i]);
  }
  std::string error;
  if (!registerDatabases(pStateObjectDatabase, psdbs, error)) {
    setLastError(method + error);
    return E_INVALIDARG;
  }
  return S_OK;
}

CGC_D3D12_API void CGCD3D12ClearPrecompiledDatabases() { clearDatabases(); }

CGC_D3D12_API HRESULT CGCD3D12GetPrecompiledDatabaseStatistics(
    ID3D12Device *pDevice, CGC_D3D12_PRECOMPILED_DATABASE_STATISTICS *pStatistics) {
  Device *device = implOf<Device>(pDevice, kImplDevice);
  if (!device || !pStatistics) {
    setLastError("CGCD3D12GetPrecompiledDatabaseStatistics: pDevice is not a device of this "
                 "runtime, or pStatistics is null");
    return E_INVALIDARG;
  }
  CGC_D3D12_PRECOMPILED_DATABASE_STATISTICS s = {};
  device->databases().counts(s.RegisteredDatabases, s.MatchingDatabases);
  s.Lookups = device->databases().lookups();
  s.Hits = device->databases().hits();
  *pStatistics = s;
  return S_OK;
}

/// Both CGCD3D12PrepareMlirProgramConstants entry points.
static HRESULT prepareConstantsImpl(const char *method, ID3D12StateObject *pStateObject,
                                    LPCWSTR pProgramName, UINT NumBindings,
                                    const D3D12_MLIR_PROGRAM_BINDING *pBindings,
                                    const CGC_D3D12_CONSTANT_DIGEST *pDigests,
                                    CGC_D3D12_PREPARED_CONSTANTS_STATISTICS *pStatistics) {
  StateObject *object = implOf<StateObject>(pStateObject, kImplStateObject);
  if (!object || !pProgramName || (NumBindings && !pBindings)) {
    setLastError(std::string(method) +
                 (!object ? "pStateObject is not a state object of this runtime"
                          : "pProgramName must not be null, nor pBindings with bindings"));
    return E_INVALIDARG;
  }
  Device *device = object->device();
  if (!object->programs().count(pProgramName))
    return device->fail(E_INVALIDARG, method + std::string("the state object has no MLIR program "
                                                           "named '") +
                                          narrow(pProgramName) + "'");
  for (UINT i = 0; i < NumBindings; ++i)
    if (pBindings[i].Type != D3D12_MLIR_PROGRAM_BINDING_TYPE_GPU ||
        !pBindings[i].GpuBinding.StartAddress)
      return device->fail(E_INVALIDARG, method + std::string("binding #") + std::to_string(i) +
                                            " is not a GPU binding with an address");
  static_assert(sizeof(D3D12_MLIR_PROGRAM_BINDING) == sizeof(D3D12DDI_MLIR_PROGRAM_BINDING_0119),
                "the API's and the DDI's bindings share one layout");
  static_assert(sizeof(CGC_D3D12_CONSTANT_DIGEST) == sizeof(D3D12DDI_CONSTANT_DIGEST_CGC) &&
                    sizeof(CGC_D3D12_PREPARED_CONSTANTS_STATISTICS) ==
                        sizeof(D3D12DDI_PREPARED_CONSTANTS_STATISTICS_CGC),
                "the API's and the DDI's digests and statistics share one layout");
  const auto *bindings = reinterpret_cast<const D3D12DDI_MLIR_PROGRAM_BINDING_0119 *>(pBindings);
  if (pStatistics)
    *pStatistics = {};
  HRESULT hr;
  if (pDigests && device->ddi().pfnPrepareMlirProgramConstantsWithDigestsCgc) {
    hr = device->ddi().pfnPrepareMlirProgramConstantsWithDigestsCgc(
        device->handle(), object->handle(), pProgramName, NumBindings, bindings,
        reinterpret_cast<const D3D12DDI_CONSTANT_DIGEST_CGC *>(pDigests),
        reinterpret_cast<D3D12DDI_PREPARED_CONSTANTS_STATISTICS_CGC *>(pStatistics));
  } else if (auto prepare = device->ddi().pfnPrepareMlirProgramConstantsCgc) {
    hr = prepare(device->handle(), object->handle(), pProgramName, NumBindings, bindings);
  } else {
    return S_FALSE;
  }
  if (FAILED(hr))
    return device->fail(hr, method + std::string("the driver refused (") + hresultName(hr) + ")");
  return S_OK;
}

CGC_D3D12_API HRESULT CGCD3D12PrepareMlirProgramConstants(
    ID3D12StateObject *pStateObject, LPCWSTR pProgramName, UINT NumBindings,
    const D3D12_MLIR_PROGRAM_BINDING *pBindings) {
  return prepareConstantsImpl("CGCD3D12PrepareMlirProgramConstants: ", pStateObject,
                              pProgramName, NumBindings, pBindings, nullptr, nullptr);
}

CGC_D3D12_API HRESULT CGCD3D12PrepareMlirProgramConstantsWithDigests(
    ID3D12StateObject *pStateObject, LPCWSTR pProgramName, UINT NumBindings,
    const D3D12_MLIR_PROGRAM_BINDING *pBindings, const CGC_D3D12_CONSTANT_DIGEST *pDigests,
    CGC_D3D12_PREPARED_CONSTANTS_STATISTICS *pStatistics) {
  if (NumBindings && !pDigests) {
    setLastError("CGCD3D12PrepareMlirProgramConstantsWithDigests: pDigests is null");
    return E_INVALIDARG;
  }
  static const CGC_D3D12_CONSTANT_DIGEST none = {};
  return prepareConstantsImpl("CGCD3D12PrepareMlirProgramConstantsWithDigests: ", pStateObject,
                              pProgramName, NumBindings, pBindings,
                              NumBindings ? pDigests : &none, pStatistics);
}
