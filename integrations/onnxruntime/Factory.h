//===- Factory.h - The EP factory, streams and the importer -----*- C++ -*-===//

#ifndef CGC_ORT_EP_FACTORY_H
#define CGC_ORT_EP_FACTORY_H

#include "Common.h"

#include <string>
#include <vector>

namespace cgc::ort_ep {

/// OrtEpFactory: one OrtEpDevice per cgc D3D12 driver found.
struct Factory : OrtEpFactory {
  Factory(const char *registeredName, const OrtLogger *logger);
  ~Factory();

  /// The driver of one of the factory's devices (by the ids it gave them).
  DriverDevice *driverFor(const OrtHardwareDevice *device);
  DriverDevice *driverFor(const OrtMemoryDevice *device);

  std::string registeredName;
  const OrtLogger *logger;
  std::vector<std::unique_ptr<DriverDevice>> drivers;
  OrtDataTransferImpl *dataTransfer = nullptr;
};

/// OrtSyncStreamImpl over a cgc stream of a driver's shared device. Work the
/// EP submits on it, and waits and signals of imported semaphores, execute
/// in the order they are queued.
struct Stream : OrtSyncStreamImpl {
  explicit Stream(DevicePtr device);
  ~Stream();
  DevicePtr device;
  cgc_stream_t *stream = nullptr;
};

/// The cgc stream behind an ORT sync stream when it is one of this
/// plugin's, else null.
Stream *ownStream(OrtSyncStream *stream);

/// Writes `message` to ORT's log at `level`.
void log(const OrtLogger *logger, OrtLoggingLevel level, const std::string &message);

} // namespace cgc::ort_ep

#endif // CGC_ORT_EP_FACTORY_H
