//===- DeviceTarget.cpp - Compiling for a D3D12 device --------------------===//

#include "compiler/Targets/Device/DeviceTarget.h"

#include "compiler/Targets/Common/Exchange.h"
#include "compiler/Targets/Registry.h"
#include "cgc_pattern/IR/CGCPatternOps.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/StringMap.h"

#include <atomic>
#include <map>

using namespace mlir;

namespace cgc {

/// The rest of describing a target once its capabilities are in `info`:
/// the declaration through `exchange`.
static bool describeExchangeTarget(ExchangeFn exchange, DeviceTargetInfo &info,
                                   std::string &error) {
  if (!info.caps.canCompile()) {
    info.unavailable = info.caps.whyNot();
    return true;
  }
  TargetHandle handle;
  handle.name = info.label;
  handle.exchange = std::move(exchange);
  MLIRContext context(MLIRContext::Threading::DISABLED);
  context.loadDialect<CGCDialect, op::CGCOpDialect, pattern::CGCPatternDialect>();
  // The size query tells a device that declares nothing (the spec's
  // "Compiler should use shaders only") from one that answers badly.
  size_t size = 0;
  int32_t hr = handle.exchange(interfaces::kSubgraphDeclarationRequest, nullptr, 0, nullptr,
                               &size);
  if (hr == kDXGI_ERROR_UNSUPPORTED) {
    info.unavailable = "its driver answers CGC_SUBGRAPH_DECLARATION_REQUEST with "
                       "DXGI_ERROR_UNSUPPORTED";
    return true;
  }
  OwningOpRef<ModuleOp> declaration = requestDeclaration(&context, handle, error);
  if (!declaration) {
    error = info.label + ": " + error;
    return false;
  }
  for (auto pattern : declaration->getBody()->getOps<pattern::PatternOp>())
    info.patterns.push_back(pattern.getSymName().str());
  if (info.patterns.empty()) {
    info.unavailable = "its driver declares no pattern";
    return true;
  }
  if (std::optional<StringRef> name = declaration->getSymName())
    handle.name = name->str();
  else
    handle.name = "device";
  if (handle.name == "fallback") {
    error = info.label + " declares a module named 'fallback', the name of the target of "
                         "last resort";
    return false;
  }
  info.target = std::move(handle);
  return true;
}

bool describeDeviceTarget(device::DeviceRef dev, std::string label, DeviceTargetInfo &info,
                          std::string &error) {
  info = {};
  info.label = std::move(label);
  if (!device::queryCapabilities(dev.get(), info.caps, error)) {
    error = info.label + ": " + error;
    return false;
  }
  return describeExchangeTarget(device::makeExchange(dev), info, error);
}

bool describePluginTarget(const std::string &spec, DeviceTargetInfo &info, std::string &error) {
  info = {};
  ExchangeFn exchange = device::makePluginExchange(spec, info.caps, info.label, error);
  if (!exchange)
    return false;
  return describeExchangeTarget(std::move(exchange), info, error);
}

bool describeDeviceTarget(const std::string &driver, DeviceTargetInfo &info,
                          std::string &error) {
  device::DeviceRef dev = device::createDevice(driver, error);
  if (!dev)
    return false;
  return describeDeviceTarget(dev, driver.empty() ? "the default device" : "device '" + driver + "'",
                              info, error);
}

ScopedDeviceTarget::ScopedDeviceTarget(const DeviceTargetInfo &info) {
  static std::atomic<uint64_t> next{0};
  if (!info.target)
    return;
  spec_ = "device-instance:" + std::to_string(next++);
  registerTargetInstance(spec_, *info.target);
}

ScopedDeviceTarget::~ScopedDeviceTarget() {
  if (!spec_.empty())
    unregisterTargetInstance(spec_);
}

void ScopedDeviceTarget::prependTo(std::vector<std::string> &targets) const {
  if (!spec_.empty())
    targets.insert(targets.begin(), spec_);
}

std::string describeClaims(Operation *outputIR) {
  // Identical matches share one cgc.subgraph: count its invocations (and
  // before the program is built, when there are none, the definitions).
  struct Claim {
    size_t order = 0, subgraphs = 0, layers = 0;
  };
  llvm::StringMap<SubgraphOp> byName;
  outputIR->walk([&](SubgraphOp subgraph) { byName[subgraph.getSymName()] = subgraph; });
  auto layersOf = [](SubgraphOp subgraph) {
    size_t layers = 0;
    if (FunctionalDefinitionOp definition = subgraph.getFunctionalDefinition())
      for (Operation &op : definition.getBody().front())
        if (op.getDialect() && op.getDialect()->getNamespace() == "cgc_op")
          ++layers;
    return layers;
  };
  std::map<std::string, Claim> claims;
  auto count = [&](SubgraphOp subgraph) {
    auto [it, inserted] = claims.try_emplace(subgraph.getOrigin().str());
    if (inserted)
      it->second.order = claims.size();
    ++it->second.subgraphs;
    it->second.layers += layersOf(subgraph);
  };
  bool invoked = false;
  outputIR->walk([&](InvokeOp invoke) {
    auto it = byName.find(invoke.getCallee());
    if (it != byName.end()) {
      invoked = true;
      count(it->second);
    }
  });
  if (!invoked)
    for (auto &entry : byName)
      count(entry.second);
  std::vector<std::pair<size_t, std::string>> ordered;
  for (auto &[name, claim] : claims)
    ordered.push_back({claim.order, name});
  std::sort(ordered.begin(), ordered.end());
  std::string text;
  for (auto &[order, name] : ordered) {
    const Claim &c = claims[name];
    text += "  " + name + ": " + std::to_string(c.subgraphs) + " subgraph" +
            (c.subgraphs == 1 ? "" : "s") + ", " + std::to_string(c.layers) + " layer" +
            (c.layers == 1 ? "" : "s") + "\n";
  }
  return text;
}

std::string describeDevice(const DeviceTargetInfo &info) {
  if (!info.target)
    return info.label + " (MLIR programs tier " + info.caps.tierName() +
           "): the fallback target only, because " + info.unavailable;
  return info.label + " (MLIR programs tier " + info.caps.tierName() + "): target '" +
         info.target->name + "', " + std::to_string(info.patterns.size()) + " pattern" +
         (info.patterns.size() == 1 ? "" : "s") + " declared";
}

} // namespace cgc
