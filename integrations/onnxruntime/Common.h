//===- Common.h - Shared pieces of the ONNX Runtime plugin EP ---*- C++ -*-===//
//
// The ONNX Runtime API tables (set once by CreateEpFactories), errors as
// exceptions inside the plugin and as OrtStatus at its boundary, and the
// cgc objects the factory, the EPs and the importer share.
//
//===----------------------------------------------------------------------===//

#ifndef CGC_ORT_EP_COMMON_H
#define CGC_ORT_EP_COMMON_H

#include "cgc/onnxruntime_ep.h"
#include "cgc/runtime.h"

#include <onnxruntime_c_api.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

namespace cgc::ort_ep {

extern const OrtApi *ort;
extern const OrtEpApi *epApi;
extern const OrtModelEditorApi *editorApi;

/// An error inside the plugin; turned into an OrtStatus at the API boundary.
struct Error : std::runtime_error {
  Error(OrtErrorCode code, const std::string &message)
      : std::runtime_error(message), code(code) {}
  OrtErrorCode code;
};
[[noreturn]] inline void fail(OrtErrorCode code, const std::string &message) {
  throw Error(code, message);
}

/// Throws an ORT error for a failed ORT call (the message says what for).
void check(OrtStatus *status, const char *what);
/// Throws for a failed cgc call, mapping cgc's status code to ORT's.
void check(cgc_status_t status, const char *what);

/// Runs `body`, turning what it throws into an OrtStatus (null on success).
template <typename F> OrtStatus *guard(F &&body) noexcept {
  try {
    body();
    return nullptr;
  } catch (const Error &e) {
    return ort->CreateStatus(e.code, (std::string("cgc: ") + e.what()).c_str());
  } catch (const std::bad_alloc &) {
    return ort->CreateStatus(ORT_FAIL, "cgc: out of memory");
  } catch (const std::exception &e) {
    return ort->CreateStatus(ORT_FAIL, (std::string("cgc: ") + e.what()).c_str());
  }
}

struct CgcDeviceDeleter {
  void operator()(cgc_device_t *d) const { cgc_device_release(d); }
};
using DevicePtr = std::shared_ptr<cgc_device_t>;

/// What the plugin counts (cgc_ort_ep_stats).
struct Counters {
  std::atomic<uint64_t> compiles{0}, contextLoads{0}, runs{0}, bytesCopied{0},
      tensorsCopied{0}, capabilityCompiles{0}, runNs{0};
};
Counters &counters();

/// One cgc driver, as an OrtEpDevice of the factory: its cgc device is made
/// on first use, with the options of the session or call that needs it.
struct DriverDevice {
  std::string name;   // "cpu"
  std::string path;   // the driver library
  uint32_t deviceId = 0;
  OrtHardwareDevice *hardware = nullptr;
  OrtMemoryInfo *memoryInfo = nullptr; // device memory (GPU type, DEFAULT)
  OrtMemoryInfo *hostInfo = nullptr;   // host-accessible memory

  /// The device shared by allocators, streams and the importer, and by
  /// sessions with the default device options.
  DevicePtr shared();
  /// A device with these options (`threads`, `driverOptions`): the shared
  /// one when they are the defaults or equal its own.
  DevicePtr withOptions(uint32_t threads, const std::string &driverOptions);

private:
  std::mutex mutex;
  DevicePtr sharedDevice;
  uint32_t sharedThreads = 0;
  std::string sharedOptions;
};

/// The vendor id the plugin's hardware devices and memory carry ("cgc" in
/// the PCI space no vendor uses).
constexpr uint32_t kVendorId = 0xC6C0;

/// Element sizes of ONNX element types cgc handles (0: not a fixed-size
/// type cgc binds).
size_t elementSize(ONNXTensorElementDataType type);

} // namespace cgc::ort_ep

#endif // CGC_ORT_EP_COMMON_H
