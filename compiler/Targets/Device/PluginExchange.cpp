//===- PluginExchange.cpp - A compiler plugin in place of a device --------===//
//
// makePluginExchange (DeviceExchange.h): the queries a device answers
// through CheckFeatureSupport, answered by a compiler plugin's GetCaps for
// one adapter family (plugin_host.h), so the compiler can lower Input IR
// for that family offline. No MLIR here.
//
//===----------------------------------------------------------------------===//

#include "compiler/Targets/Device/DeviceExchange.h"

#include "plugin_host.h"

#include <cstring>
#include <memory>

namespace cgc::device {

ExchangeFn makePluginExchange(const std::string &spec, Capabilities &caps, std::string &label,
                              std::string &error) {
  const size_t at = spec.rfind('@');
  const std::string path = at == std::string::npos ? spec : spec.substr(0, at);
  const std::string familyName = at == std::string::npos ? "" : spec.substr(at + 1);
  if (path.empty()) {
    error = "target 'plugin' needs a compiler plugin: --target=plugin:PATH[@FAMILY]";
    return nullptr;
  }
  std::shared_ptr<soc::Plugin> plugin;
  UINT family = 0;
  uint64_t abi = 0;
  try {
    plugin = std::make_shared<soc::Plugin>(path);
    family = plugin->familyIndex(familyName);
    soc::AdapterFamily info = plugin->adapterFamilies().at(family);
    abi = info.abiVersions.front();
    label = "compiler plugin '" + path + "' (adapter family '" + info.name + "')";
  } catch (const std::exception &e) {
    error = e.what();
    return nullptr;
  }
  caps = {};
  D3D12DDI_OPTIONS_DATA_MLIR options = {};
  D3D12DDIARG_GETCAPS tier = {D3D12DDI_CAPS_TYPE_MLIR, 0, nullptr, &options, sizeof(options)};
  if (FAILED(plugin->getCaps(family, abi, tier))) {
    error = label + ": GetCaps(D3D12DDI_CAPS_TYPE_MLIR) failed";
    return nullptr;
  }
  caps.tier = int(options.MlirProgramsTier);
  const Guid requested[] = {interfaces::kSubgraphDeclarationRequest,
                            interfaces::kSubgraphDeclaration,
                            interfaces::kSubgraphSpecializationRequest,
                            interfaces::kSubgraphSpecialization, interfaces::kSubgraphPartition};
  constexpr UINT count = sizeof(requested) / sizeof(requested[0]);
  GUID guids[count];
  BOOL supported[count] = {};
  std::memcpy(guids, requested, sizeof(guids));
  D3D12DDI_MLIR_INTERFACE_SUPPORT_0119 support = {count, guids, supported};
  D3D12DDIARG_GETCAPS interfacesQuery = {D3D12DDICAPS_TYPE_MLIR_INTERFACE_SUPPORT_0119, 0,
                                         nullptr, &support, sizeof(support)};
  if (FAILED(plugin->getCaps(family, abi, interfacesQuery))) {
    error = label + ": GetCaps(MLIR_INTERFACE_SUPPORT) failed";
    return nullptr;
  }
  caps.declaration = supported[0] && supported[1];
  caps.specialization = supported[2] && supported[3];
  caps.partition = supported[4];
  return [plugin, family, abi](const Guid &mlirInterface, const void *in, size_t inSize,
                               void *out, size_t *outSize) -> int32_t {
    D3D12DDI_MLIR_EXCHANGE_0119 ex = {};
    std::memcpy(&ex.MlirInterface, &mlirInterface, sizeof(GUID));
    ex.pInputData = in;
    ex.InputDataSizeInBytes = inSize;
    ex.pOutputData = out;
    SIZE_T size = *outSize;
    ex.OutputDataSizeInBytes = &size;
    D3D12DDIARG_GETCAPS caps = {D3D12DDICAPS_TYPE_MLIR_EXCHANGE_0119, 0, nullptr, &ex,
                                UINT(sizeof(ex))};
    HRESULT hr = plugin->getCaps(family, abi, caps);
    *outSize = size;
    return int32_t(hr);
  };
}

} // namespace cgc::device
