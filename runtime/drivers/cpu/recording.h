//===- recording.h - Recorded commands and their schedule -------*- C++ -*-===//
//
// A command list records work (program runs, buffer copies) and barriers.
// Closing it computes a schedule: work runs in levels; work in one level runs
// concurrently on the ThreadPool. A work item is placed after every earlier
// item that a barrier between them orders: a global barrier orders all
// earlier and later work, a range barrier orders earlier and later work that
// both access its range. Work with no barrier between it runs concurrently,
// as D3D12 allows.
//
//===----------------------------------------------------------------------===//

#ifndef CGC_CPU_RECORDING_H
#define CGC_CPU_RECORDING_H

#include "program.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace cgc::cpu {

struct Range {
  uint64_t start = 0, size = 0;
  bool overlaps(const Range &o) const {
    return start < o.start + o.size && o.start < start + size;
  }
};

/// One unit of work: a program run, or a copy when `program` is null.
struct Work {
  std::shared_ptr<const CompiledProgram> program;
  std::vector<uint8_t *> addresses; // binding i
  uint8_t *copyDst = nullptr;
  const uint8_t *copySrc = nullptr;
  uint64_t copyBytes = 0;
  std::vector<Range> ranges; // memory it accesses
};

class Recording {
public:
  void execute(ThreadPool &pool) const;
  /// Non-empty when a command accesses memory outside every heap of the
  /// device: executing the recording would fault (as a GPU's page fault, it
  /// removes the device instead of running anything).
  const std::string &fault() const { return fault_; }
  /// Levels of work indices, in execution order (for tests and profiles).
  const std::vector<std::vector<size_t>> &levels() const { return levels_; }

private:
  friend class RecordingBuilder;
  std::vector<Work> work_;
  std::vector<std::vector<size_t>> levels_;
  std::vector<std::unique_ptr<uint8_t[]>> cpuData_; // copies of CPU bindings
  std::string fault_;
};

class RecordingBuilder {
public:
  void addWork(Work work);
  void addBarrier(bool global, std::vector<Range> ranges);
  /// Copies CPU binding data into the recording; returns the copy's address.
  uint8_t *copyCpuData(const void *data, uint64_t bytes);
  /// Marks the recording as faulting (the first reason is kept).
  void setFault(std::string why) {
    if (recording_->fault_.empty())
      recording_->fault_ = std::move(why);
  }
  std::unique_ptr<Recording> finish();

private:
  struct Fence {
    bool global;
    Range range;
    int level; // highest level of earlier work it orders
  };
  std::unique_ptr<Recording> recording_ = std::make_unique<Recording>();
  std::vector<int> levelOf_;
  std::vector<Fence> fences_;
};

} // namespace cgc::cpu

#endif // CGC_CPU_RECORDING_H
