//===- NoCompiler.cpp - cgc-run built without the compiler ----------------===//

#include "Compile.h"

namespace cgc::run {

bool haveCompiler() { return false; }

bool compileOnnx(const std::string &path, const CompileOptions &, std::vector<uint8_t> &,
                 std::string &error) {
  error = path + ": this cgc-run was built without the compiler "
                 "(-DCGC_ENABLE_COMPILER=OFF); compile it with cgc-compile first";
  return false;
}

} // namespace cgc::run
