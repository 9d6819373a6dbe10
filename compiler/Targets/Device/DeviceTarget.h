//===- DeviceTarget.h - Compiling for a D3D12 device ------------*- C++ -*-===//
//
// The compiler's side of the spec's device flow: a target whose declaration
// and specialization answers come from a D3D12 device through
// CheckFeatureSupport(D3D12_FEATURE_MLIR_EXCHANGE) (DeviceExchange.h), named
// after the module its driver declares (the origin written on the subgraphs
// it claims). `cgc-compile --device`, `cgc-run model.onnx` and the runtime's
// compile API (cgc_model_compile_onnx) all compile through it.
//
//===----------------------------------------------------------------------===//

#ifndef CGC_COMPILER_TARGETS_DEVICE_DEVICETARGET_H
#define CGC_COMPILER_TARGETS_DEVICE_DEVICETARGET_H

#include "compiler/Targets/Device/DeviceExchange.h"

#include "mlir/IR/Operation.h"

#include <optional>
#include <string>
#include <vector>

namespace cgc {

/// What compiling for a device found.
struct DeviceTargetInfo {
  /// "device 'cpu'", "the default device", ... for messages.
  std::string label;
  device::Capabilities caps;
  /// The target, when the device declares patterns; else `unavailable` says
  /// why the compilation is for the fallback target alone.
  std::optional<TargetHandle> target;
  std::string unavailable;
  /// The patterns it declared, by name.
  std::vector<std::string> patterns;
};

/// Queries `device` and fetches its declaration. A device that cannot take
/// part (no MLIR tier, interfaces missing, DXGI_ERROR_UNSUPPORTED from the
/// exchange, an empty declaration) gives an info without a target and with
/// the reason; a device that answers with something malformed, or whose
/// queries fail, is an error (false, `error`).
bool describeDeviceTarget(device::DeviceRef device, std::string label,
                          DeviceTargetInfo &info, std::string &error);

/// The same for a new device on `driver` (a name, a path, or empty for the
/// default).
bool describeDeviceTarget(const std::string &driver, DeviceTargetInfo &info,
                          std::string &error);

/// The same for a compiler plugin in place of a device ("PATH[@FAMILY]",
/// makePluginExchange): what its adapter family's devices would declare and
/// answer, with no driver loaded (the `plugin` target kind).
bool describePluginTarget(const std::string &spec, DeviceTargetInfo &info, std::string &error);

/// A device's target registered under a `--target` spec of its own while
/// this object lives (the device stays alive as long), so the pipeline
/// resolves it like any other target. Registers nothing for a device that
/// declares no patterns.
class ScopedDeviceTarget {
public:
  explicit ScopedDeviceTarget(const DeviceTargetInfo &info);
  ~ScopedDeviceTarget();
  ScopedDeviceTarget(const ScopedDeviceTarget &) = delete;
  ScopedDeviceTarget &operator=(const ScopedDeviceTarget &) = delete;

  /// Inserts the spec at the front of `targets` (first in priority), when
  /// there is a target.
  void prependTo(std::vector<std::string> &targets) const;

private:
  std::string spec_;
};

/// One line per target that claimed subgraphs in an Output IR module:
/// "  cpu: 53 subgraphs, 140 layers" ..., in the order first seen:
/// invocations of each target's subgraphs and the layers they hold.
std::string describeClaims(mlir::Operation *outputIR);

/// "device 'X' (MLIR programs tier 2.0): N patterns" or "device 'X':
/// fallback target only (REASON)".
std::string describeDevice(const DeviceTargetInfo &info);

} // namespace cgc

#endif // CGC_COMPILER_TARGETS_DEVICE_DEVICETARGET_H
