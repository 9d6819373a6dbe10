//===- TestDriver.h - What the TEST DOUBLE driver shows its tests -*- C++ -*-===//
//
// The test double (test_driver.cpp) exports its call counters and its
// TEST-ONLY knobs; tests reach them with dlsym on the loaded double. No real
// driver has either.
//
//===----------------------------------------------------------------------===//

#ifndef CGC_TEST_D3D12_TESTDRIVER_H
#define CGC_TEST_D3D12_TESTDRIVER_H

#include <atomic>

struct CgcTestDriverCounters {
  std::atomic<int> exchanges{0};
  std::atomic<int> interfaceQueries{0};
  std::atomic<int> stateObjects{0};
  std::atomic<int> dispatchGraphs{0};
  std::atomic<int> executions{0};
  /// Programs created from a registered precompiled database's value, and
  /// values found for a program but made from another container.
  std::atomic<int> databaseHits{0};
  std::atomic<int> databaseStale{0};
};

/// TEST-ONLY configuration of the double.
struct CgcTestDriverKnobs {
  /// The D3D12DDI_MLIR_PROGRAMS_TIER it reports (default 2.0). The runtime
  /// reads the tier when a device is created: set it, then create the device.
  std::atomic<int> tier{20};
  /// Answer a non-null, too-small MLIR_EXCHANGE buffer with S_OK and the
  /// size, as a sloppy driver might.
  std::atomic<bool> sloppyExchange{false};
};

#endif // CGC_TEST_D3D12_TESTDRIVER_H
