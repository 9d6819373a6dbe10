//===- DeviceExchange.cpp - A target reached through a D3D12 device -------===//
//
// The one compiler file that includes the D3D12 headers (DirectX-Headers'
// winadapter.h defines names that clash with MLIR's).
//
//===----------------------------------------------------------------------===//

#include "compiler/Targets/Device/DeviceExchange.h"

#include "cgc/d3d12_mlir.h"

#include <cstring>

namespace cgc::device {

std::string Capabilities::tierName() const {
  switch (tier) {
  case D3D12_MLIR_PROGRAMS_TIER_NOT_SUPPORTED: return "NOT_SUPPORTED";
  case D3D12_MLIR_PROGRAMS_TIER_1_0: return "1.0";
  case D3D12_MLIR_PROGRAMS_TIER_2_0: return "2.0";
  default: return std::to_string(tier);
  }
}

std::string Capabilities::whyNot() const {
  if (tier <= 0)
    return "its MLIR programs tier is NOT_SUPPORTED";
  std::string missing;
  auto add = [&](bool ok, const char *what) {
    if (!ok)
      missing += (missing.empty() ? "" : ", ") + std::string(what);
  };
  add(declaration, "CGC_SUBGRAPH_DECLARATION_REQUEST/CGC_SUBGRAPH_DECLARATION");
  add(specialization, "CGC_SUBGRAPH_SPECIALIZATION_REQUEST/CGC_SUBGRAPH_SPECIALIZATION");
  add(partition, "CGC_SUBGRAPH_PARTITION");
  return missing.empty() ? "" : "it does not support the MLIR interfaces " + missing;
}

/// Owns one reference of `device`.
static DeviceRef adopt(ID3D12Device *device) {
  return DeviceRef(device, [](void *p) { static_cast<ID3D12Device *>(p)->Release(); });
}

DeviceRef retainDevice(void *d3d12Device) {
  auto *device = static_cast<ID3D12Device *>(d3d12Device);
  device->AddRef();
  return adopt(device);
}

DeviceRef createDevice(const std::string &driver, std::string &error) {
  ID3D12Device *device = nullptr;
  HRESULT hr = CGCD3D12CreateDeviceOnDriver(driver.empty() ? nullptr : driver.c_str(),
                                            IID_PPV_ARGS(&device));
  if (FAILED(hr) || !device) {
    std::string why = CGCD3D12GetLastError();
    error = "cannot create a D3D12 device on " +
            (driver.empty() ? std::string("the default driver") : "driver '" + driver + "'") +
            (why.empty() ? "" : ": " + why);
    return nullptr;
  }
  return adopt(device);
}

bool queryCapabilities(void *d3d12Device, Capabilities &caps, std::string &error) {
  auto *device = static_cast<ID3D12Device *>(d3d12Device);
  D3D12_FEATURE_DATA_D3D12_OPTIONS_MLIR options = {};
  HRESULT hr = device->CheckFeatureSupport(D3D12_FEATURE_D3D12_OPTIONS_MLIR, &options,
                                           sizeof(options));
  if (FAILED(hr)) {
    error = "CheckFeatureSupport(D3D12_OPTIONS_MLIR) failed: " + lastD3D12Error();
    return false;
  }
  caps = {};
  caps.tier = int(options.MlirProgramsTier);
  if (caps.tier == D3D12_MLIR_PROGRAMS_TIER_NOT_SUPPORTED)
    return true;
  const GUID requested[] = {CGC_SUBGRAPH_DECLARATION_REQUEST, CGC_SUBGRAPH_DECLARATION,
                            CGC_SUBGRAPH_SPECIALIZATION_REQUEST, CGC_SUBGRAPH_SPECIALIZATION,
                            CGC_SUBGRAPH_PARTITION};
  constexpr UINT count = sizeof(requested) / sizeof(requested[0]);
  BOOL supported[count] = {};
  D3D12_FEATURE_DATA_MLIR_INTERFACE_SUPPORT support = {count, requested, supported};
  hr = device->CheckFeatureSupport(D3D12_FEATURE_MLIR_INTERFACE_SUPPORT, &support,
                                   sizeof(support));
  if (FAILED(hr)) {
    error = "CheckFeatureSupport(MLIR_INTERFACE_SUPPORT) failed: " + lastD3D12Error();
    return false;
  }
  caps.declaration = supported[0] && supported[1];
  caps.specialization = supported[2] && supported[3];
  caps.partition = supported[4];
  return true;
}

ExchangeFn makeExchange(DeviceRef device) {
  return [device](const Guid &mlirInterface, const void *in, size_t inSize, void *out,
                  size_t *outSize) -> int32_t {
    D3D12_FEATURE_DATA_MLIR_EXCHANGE exchange = {};
    std::memcpy(&exchange.MlirInterface, &mlirInterface, sizeof(GUID));
    exchange.pInputData = in;
    exchange.InputDataSizeInBytes = inSize;
    exchange.pOutputData = out;
    SIZE_T size = *outSize;
    exchange.OutputDataSizeInBytes = &size;
    HRESULT hr = static_cast<ID3D12Device *>(device.get())
                     ->CheckFeatureSupport(D3D12_FEATURE_MLIR_EXCHANGE, &exchange,
                                           sizeof(exchange));
    *outSize = size;
    return int32_t(hr);
  };
}

std::string lastD3D12Error() {
  const char *text = CGCD3D12GetLastError();
  return text ? text : "";
}

} // namespace cgc::device
