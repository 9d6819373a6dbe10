//===- recording.cpp - Recorded commands and their schedule ---------------===//

#include "recording.h"

#include <algorithm>
#include <cstring>

namespace cgc::cpu {

void RecordingBuilder::addWork(Work work) {
  int level = 0;
  for (const Fence &f : fences_) {
    if (f.level < 0)
      continue;
    bool ordered = f.global;
    for (size_t i = 0; i < work.ranges.size() && !ordered; ++i)
      ordered = f.range.overlaps(work.ranges[i]);
    if (ordered)
      level = std::max(level, f.level + 1);
  }
  levelOf_.push_back(level);
  recording_->work_.push_back(std::move(work));
}

void RecordingBuilder::addBarrier(bool global, std::vector<Range> ranges) {
  const auto &work = recording_->work_;
  auto highestLevel = [&](const Range *range) {
    int level = -1;
    for (size_t w = 0; w < work.size(); ++w) {
      bool touches = !range;
      for (size_t i = 0; i < work[w].ranges.size() && !touches; ++i)
        touches = range->overlaps(work[w].ranges[i]);
      if (touches)
        level = std::max(level, levelOf_[w]);
    }
    return level;
  };
  if (global) {
    fences_.push_back({true, {}, highestLevel(nullptr)});
    return;
  }
  for (const Range &r : ranges)
    fences_.push_back({false, r, highestLevel(&r)});
}

uint8_t *RecordingBuilder::copyCpuData(const void *data, uint64_t bytes) {
  auto copy = std::make_unique<uint8_t[]>(std::max<uint64_t>(bytes, 1));
  std::memcpy(copy.get(), data, bytes);
  uint8_t *address = copy.get();
  recording_->cpuData_.push_back(std::move(copy));
  return address;
}

std::unique_ptr<Recording> RecordingBuilder::finish() {
  int top = -1;
  for (int l : levelOf_)
    top = std::max(top, l);
  recording_->levels_.assign(size_t(top + 1), {});
  for (size_t w = 0; w < levelOf_.size(); ++w)
    recording_->levels_[size_t(levelOf_[w])].push_back(w);
  levelOf_.clear();
  fences_.clear();
  auto result = std::move(recording_);
  recording_ = std::make_unique<Recording>();
  return result;
}

static void runWork(const Work &w, ThreadPool &pool) {
  if (w.program)
    w.program->run(w.addresses, pool);
  else if (w.copyBytes)
    std::memmove(w.copyDst, w.copySrc, w.copyBytes);
}

void Recording::execute(ThreadPool &pool) const {
  for (const auto &level : levels_) {
    if (level.size() == 1) {
      runWork(work_[level[0]], pool);
      continue;
    }
    // The first exception (out of memory for scratch) is rethrown once every
    // work item of the level has finished.
    pool.run(level.size(), [&](size_t i) { runWork(work_[level[i]], pool); });
  }
}

} // namespace cgc::cpu
