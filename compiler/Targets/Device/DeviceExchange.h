//===- DeviceExchange.h - A target reached through a D3D12 device -*- C++ -*-===//
//
// The spec's central loop from the compiler's side: the compiler asks a
// D3D12 device (not an in-process target) for its MLIR programs tier and the
// MLIR interfaces it supports, then exchanges declarations and
// specialization requests with it through
// CheckFeatureSupport(D3D12_FEATURE_MLIR_EXCHANGE), which the runtime hands
// to the driver through the DDI. Nothing here links a driver's compiler.
//
// This header carries no D3D12 or MLIR types (DeviceExchange.cpp is the one
// file that includes the D3D12 headers): a device is an `ID3D12Device *`
// passed as `void *`.
//
//===----------------------------------------------------------------------===//

#ifndef CGC_COMPILER_TARGETS_DEVICE_DEVICEEXCHANGE_H
#define CGC_COMPILER_TARGETS_DEVICE_DEVICEEXCHANGE_H

#include "compiler/Targets/Target.h"

#include <memory>
#include <string>

namespace cgc::device {

/// What a device says about MLIR programs.
struct Capabilities {
  /// D3D12_MLIR_PROGRAMS_TIER: 0 (NOT_SUPPORTED), 10 (1.0) or 20 (2.0).
  int tier = 0;
  /// CGC_SUBGRAPH_DECLARATION_REQUEST and CGC_SUBGRAPH_DECLARATION.
  bool declaration = false;
  /// CGC_SUBGRAPH_SPECIALIZATION_REQUEST and CGC_SUBGRAPH_SPECIALIZATION.
  bool specialization = false;
  /// CGC_SUBGRAPH_PARTITION (state objects from Partition IR).
  bool partition = false;

  /// "2.0", "1.0", "NOT_SUPPORTED" or the number.
  std::string tierName() const;
  /// True when the device can take part in compilation: a tier, and the
  /// declaration, specialization and partition interfaces.
  bool canCompile() const { return tier > 0 && declaration && specialization && partition; }
  /// Why canCompile() is false ("" when it is true).
  std::string whyNot() const;
};

/// A reference on an ID3D12Device, released with the last copy.
using DeviceRef = std::shared_ptr<void>;

/// Takes a reference on `d3d12Device` (an ID3D12Device *).
DeviceRef retainDevice(void *d3d12Device);

/// Creates a device on `driver`: a driver name ("cpu" is
/// libcgc_driver_cpu.so next to libcgc_d3d12.so), a path, or empty for
/// the default ($CGC_D3D12_DRIVER, else cpu). Null with a message
/// naming the driver when it cannot be loaded or refuses.
DeviceRef createDevice(const std::string &driver, std::string &error);

/// Queries the tier (D3D12_FEATURE_D3D12_OPTIONS_MLIR) and the interfaces
/// (D3D12_FEATURE_MLIR_INTERFACE_SUPPORT). False with a message if the
/// queries themselves fail.
bool queryCapabilities(void *d3d12Device, Capabilities &caps, std::string &error);

/// The exchange function of Target.h over the device's
/// CheckFeatureSupport(D3D12_FEATURE_MLIR_EXCHANGE). It keeps `device`
/// alive. An output buffer that is too small is the size query's answer
/// (S_OK with the size) when the buffer is null, E_NOT_SUFFICIENT_BUFFER
/// otherwise, as the API returns.
ExchangeFn makeExchange(DeviceRef device);

/// An offline stand-in for a device: a compiler plugin
/// (cgc/d3d12ddi_compiler.h) answering the tier, interface and MLIR_EXCHANGE
/// queries through its GetCaps for one adapter family, with no driver
/// loaded (docs/precompilation.md). `spec` is "PATH[@FAMILY]" (FAMILY a name
/// or an index; default the first, at its newest ABI). `label` receives a
/// name for messages. Null with a message naming the plugin on failure.
ExchangeFn makePluginExchange(const std::string &spec, Capabilities &caps, std::string &label,
                              std::string &error);

/// The D3D12 layer's last error on this thread ("" if none).
std::string lastD3D12Error();

} // namespace cgc::device

#endif // CGC_COMPILER_TARGETS_DEVICE_DEVICEEXCHANGE_H
