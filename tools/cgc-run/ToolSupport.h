//===- ToolSupport.h - What cgc-run and cgc-ort-run share -------*- C++ -*-===//
//
// Small helpers of the two model-running tools (cgc-run and its ONNX Runtime
// peer cgc-ort-run, built from the same sources so that they read inputs and
// report alike): file names, the ONNX test-data layout, peak memory.
//
//===----------------------------------------------------------------------===//

#ifndef CGC_TOOLS_CGC_RUN_TOOLSUPPORT_H
#define CGC_TOOLS_CGC_RUN_TOOLSUPPORT_H

#include "cgc/checked.h"

#include <cstddef>
#include <string>
#include <vector>

namespace cgc::run {

/// The most --runs (and --warmup) a benchmark takes: the run times are kept.
inline constexpr int kMaxRuns = 1000000;

/// "cgc-run 0.1.0 (CGC IR 1.0.0)": what --version prints.
std::string versionText(const std::string &tool);

/// Whether a file can be created at `path`: its folder exists and is a
/// folder. False with `error` naming the path and the reason.
bool checkOutputPath(const std::string &path, std::string &error);

/// Writes `size` bytes to `path` (replacing it). False with `error` naming
/// the path and the system's reason.
bool writeFile(const std::string &path, const void *data, size_t size, std::string &error);

bool endsWith(const std::string &s, const std::string &suffix);

/// PREFIX0.pb, PREFIX1.pb, ... in `dir` (ONNX test data: input_N.pb,
/// output_N.pb), ordered by N. False with `error` if `dir` cannot be opened.
bool numberedFiles(const std::string &dir, const std::string &prefix,
                   std::vector<std::string> &paths, std::string &error);

/// The process's peak resident memory (VmHWM of /proc/self/status) in KiB;
/// 0 where /proc is not available. Unlike getrusage's ru_maxrss it is not
/// raised by the memory of the process that exec'ed this one.
long peakRssKiB();

} // namespace cgc::run

#endif // CGC_TOOLS_CGC_RUN_TOOLSUPPORT_H
