//===- CompileLoader.cpp - Loading cgc-run's compiler module --------------===//

#include "Compile.h"

#include <dlfcn.h>
#include <mutex>
#include <sys/stat.h>
#include <unistd.h>

#ifndef CGC_RUN_COMPILER_MODULE
#error "CGC_RUN_COMPILER_MODULE (the module's path relative to cgc-run's directory) is not set"
#endif
#ifndef CGC_RUN_COMPILER_BUILT
#define CGC_RUN_COMPILER_BUILT 0
#endif

namespace cgc::run {

/// The directory of this executable.
static std::string executableDirectory() {
  std::string path(4096, '\0');
  ssize_t n = readlink("/proc/self/exe", path.data(), path.size());
  if (n <= 0 || size_t(n) >= path.size())
    return ".";
  path.resize(size_t(n));
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

std::string compilerModulePath() {
  return executableDirectory() + "/" CGC_RUN_COMPILER_MODULE;
}

const CompilerInterface *loadCompiler(std::string &error) {
  static std::mutex mutex;
  static const CompilerInterface *loaded = nullptr;
  std::lock_guard<std::mutex> lock(mutex);
  if (loaded)
    return loaded;
  std::string path = compilerModulePath();
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    error = "cannot compile .onnx models: the compiler module " + path + " does not exist" +
            (CGC_RUN_COMPILER_BUILT
                 ? std::string(" (it is built and installed with cgc-run: check the "
                               "installation)")
                 : std::string(" (this build has no compiler: CGC_ENABLE_COMPILER=OFF)")) +
            "; compile the model with cgc-compile and run the .cgc";
    return nullptr;
  }
  void *module = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!module) {
    const char *why = dlerror();
    error = "cannot load the compiler module " + path + ": " + (why ? why : "unknown error");
    return nullptr;
  }
  auto open = reinterpret_cast<CompilerOpenFn>(dlsym(module, CGC_RUN_COMPILER_OPEN_NAME));
  const CompilerInterface *compiler = open ? open(kCompilerInterfaceVersion) : nullptr;
  if (!compiler || !compiler->compileOnnx) {
    error = path + " is not cgc-run's compiler module of interface version " +
            std::to_string(kCompilerInterfaceVersion);
    dlclose(module);
    return nullptr;
  }
  loaded = compiler;
  return loaded;
}

} // namespace cgc::run
