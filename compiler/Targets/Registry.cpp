//===- Registry.cpp - Targets by name -------------------------------------===//

#include "compiler/Targets/Registry.h"

#include "compiler/Targets/Device/DeviceTarget.h"
#include "compiler/Targets/Fallback/FallbackTarget.h"
#include "compiler/Targets/File/FileTarget.h"
#include "compiler/Targets/Cpu/PartitionCompiler.h"
#include "compiler/Targets/Cpu/CpuTarget.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

#include <map>
#include <mutex>

namespace cgc {

namespace {
struct Kind {
  std::string description;
  TargetFactory factory;
};

struct Registry {
  std::mutex mutex;
  std::map<std::string, Kind> kinds;
  llvm::StringMap<TargetHandle> resolved;
};

Registry &registry() {
  static Registry instance;
  return instance;
}
} // namespace

void registerTargetKind(llvm::StringRef kind, llvm::StringRef description,
                        TargetFactory factory) {
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.kinds[kind.str()] = {description.str(), std::move(factory)};
}

void registerBuiltinTargets() {
  static std::once_flag once;
  std::call_once(once, [] {
    registerTargetKind(
        kFallbackTargetName,
        "the target of last resort: one kernel program per remaining layer",
        [](llvm::StringRef argument,
           std::string &error) -> std::optional<TargetHandle> {
          if (!argument.empty()) {
            error = "target 'fallback' takes no argument";
            return std::nullopt;
          }
          return createFallbackTarget();
        });
    registerTargetKind(
        "patterns", "patterns:FILE.mlir, a target declared by a patterns file",
        [](llvm::StringRef argument,
           std::string &error) -> std::optional<TargetHandle> {
          if (argument.empty()) {
            error = "target 'patterns' needs a file: --target=patterns:FILE.mlir";
            return std::nullopt;
          }
          return createFileTarget(argument, error);
        });
    registerTargetKind(
        kCpuTargetName,
        "the CPU driver's compiler side (cpu:FILE.mlir "
        "replaces its built-in patterns, as CGC_CPU_PATTERNS does)",
        [](llvm::StringRef argument,
           std::string &error) -> std::optional<TargetHandle> {
          return createCpuTarget(argument, error);
        });
    registerTargetKind(
        "device",
        "device[:NAME|PATH], the patterns a D3D12 device's driver declares "
        "through MLIR_EXCHANGE (the default device without an argument)",
        [](llvm::StringRef argument,
           std::string &error) -> std::optional<TargetHandle> {
          DeviceTargetInfo info;
          if (!describeDeviceTarget(argument.str(), info, error))
            return std::nullopt;
          if (!info.target) {
            error = "target 'device" + (argument.empty() ? "" : ":" + argument.str()) +
                    "': " + info.label + " cannot be compiled for: " + info.unavailable;
            return std::nullopt;
          }
          return info.target;
        });
    registerTargetKind(
        "plugin",
        "plugin:PATH[@FAMILY], the patterns a compiler plugin declares for an adapter family "
        "(its first without @FAMILY) through GetCaps: a device's target with no device "
        "(docs/precompilation.md)",
        [](llvm::StringRef argument,
           std::string &error) -> std::optional<TargetHandle> {
          DeviceTargetInfo info;
          if (!describePluginTarget(argument.str(), info, error))
            return std::nullopt;
          if (!info.target) {
            error = "target 'plugin:" + argument.str() + "': " + info.label +
                    " cannot be compiled for: " + info.unavailable;
            return std::nullopt;
          }
          return info.target;
        });
  });
}

std::optional<TargetHandle> resolveTarget(llvm::StringRef spec,
                                          std::string &error) {
  registerBuiltinTargets();
  Registry &r = registry();
  TargetFactory factory;
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    auto cached = r.resolved.find(spec);
    if (cached != r.resolved.end())
      return cached->second;
    auto [kind, argument] = spec.split(':');
    auto it = r.kinds.find(kind.str());
    if (it == r.kinds.end()) {
      error = "unknown target '" + spec.str() + "'; known targets:\n";
      for (auto &[name, k] : r.kinds)
        error += "  " + name + "  " + k.description + "\n";
      return std::nullopt;
    }
    factory = it->second.factory;
  }
  std::optional<TargetHandle> handle = factory(spec.split(':').second, error);
  if (!handle)
    return std::nullopt;
  std::lock_guard<std::mutex> lock(r.mutex);
  r.resolved[spec] = *handle;
  return handle;
}

bool resolveTargets(llvm::ArrayRef<std::string> specs,
                    std::vector<TargetHandle> &targets, std::string &error) {
  targets.clear();
  llvm::StringSet<> names;
  bool sawFallback = false;
  for (const std::string &spec : specs) {
    if (sawFallback) {
      error = "target 'fallback' must be the last target";
      return false;
    }
    std::optional<TargetHandle> handle = resolveTarget(spec, error);
    if (!handle)
      return false;
    sawFallback = spec == kFallbackTargetName;
    if (!sawFallback && handle->name == kFallbackTargetName) {
      error = "a target other than the fallback is named 'fallback'";
      return false;
    }
    if (!names.insert(handle->name).second) {
      error = "two targets are named '" + handle->name +
              "'; the name is the origin of their subgraphs and must be unique";
      return false;
    }
    targets.push_back(std::move(*handle));
  }
  if (!sawFallback) {
    std::optional<TargetHandle> fallback =
        resolveTarget(kFallbackTargetName, error);
    if (!fallback)
      return false;
    targets.push_back(std::move(*fallback));
  }
  return true;
}

void registerTargetInstance(llvm::StringRef spec, TargetHandle handle) {
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.resolved[spec] = std::move(handle);
}

void unregisterTargetInstance(llvm::StringRef spec) {
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.resolved.erase(spec);
}

std::string describeTargetKinds() {
  registerBuiltinTargets();
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  std::string text;
  for (auto &[name, kind] : r.kinds)
    text += "  " + name + "  " + kind.description + "\n";
  return text;
}

PrecompileFn findPrecompiler(llvm::StringRef targetName) {
  if (targetName == kCpuTargetName)
    return [](ByteView bytecode, std::vector<uint8_t> &blob, std::string &error) {
      return cpu_target::precompilePartition(bytecode, blob, error);
    };
  return nullptr;
}

} // namespace cgc
