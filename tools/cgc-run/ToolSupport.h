//===- ToolSupport.h - What cgc-run and cgc-ort-run share -------*- C++ -*-===//
//
// Small helpers of the two model-running tools (cgc-run and its ONNX Runtime
// peer cgc-ort-run, built from the same sources so that they read inputs and
// report alike): file names, the ONNX test-data layout, peak memory.
//
//===----------------------------------------------------------------------===//

#ifndef CGC_TOOLS_CGC_RUN_TOOLSUPPORT_H
#define CGC_TOOLS_CGC_RUN_TOOLSUPPORT_H

#include <string>
#include <vector>

namespace cgc::run {

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
