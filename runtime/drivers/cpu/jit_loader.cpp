//===- jit_loader.cpp - Loading the CPU driver's JIT on demand ------===//
//
// The JIT (compiler/Targets/Cpu, libMLIR and all) is a module of its
// own that the driver dlopens the first time it must compile an MLIR program
// or answer an MLIR_EXCHANGE (jit.h). Its path is resolved on every call, so
// $CGC_CPU_JIT may change between devices; each path is loaded at most
// once and never unloaded.
//
//===----------------------------------------------------------------------===//

#include "jit.h"

#include "cpu_compiler_identity.h"

#include <cstdlib>
#include <dlfcn.h>
#include <map>
#include <mutex>
#include <sys/stat.h>

namespace cgc::cpu {

#ifndef CGC_CPU_JIT_BUILT
#define CGC_CPU_JIT_BUILT 0
#endif

const char *compilerIdentity() { return CGC_CPU_COMPILER_IDENTITY; }

/// The directory holding this driver.
static std::string driverDirectory() {
  Dl_info info;
  if (dladdr(reinterpret_cast<void *>(&driverDirectory), &info) && info.dli_fname) {
    std::string path = info.dli_fname;
    size_t slash = path.rfind('/');
    return slash == std::string::npos ? "." : path.substr(0, slash);
  }
  return ".";
}

std::string jitModulePath() {
  if (const char *env = std::getenv(CGC_CPU_JIT_ENV))
    return env;
  return driverDirectory() + "/" CGC_CPU_JIT_MODULE;
}

bool haveJitModule() {
  std::string path = jitModulePath();
  struct stat st;
  return !path.empty() && stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

namespace {
struct Loaded {
  const JitInterface *jit = nullptr;
  std::string error;
};
std::mutex gMutex;
std::map<std::string, Loaded> gLoaded; // by path
} // namespace

static Loaded load(const std::string &path) {
  Loaded result;
  if (path.empty()) {
    result.error = "this CPU driver has no MLIR JIT: $" CGC_CPU_JIT_ENV " is set "
                   "and empty";
    return result;
  }
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    result.error = std::string("this CPU driver has no MLIR JIT: ") + path +
                   " does not exist" +
                   (CGC_CPU_JIT_BUILT
                        ? " (it is built with the driver: check the installation, or "
                          "$" CGC_CPU_JIT_ENV ")"
                        : " (this build has no compiler: CGC_ENABLE_COMPILER=OFF)");
    return result;
  }
  void *module = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!module) {
    const char *why = dlerror();
    result.error = "cannot load the CPU driver's MLIR JIT '" + path +
                   "': " + (why ? why : "unknown error");
    return result;
  }
  auto open = reinterpret_cast<JitOpenFn>(dlsym(module, CGC_CPU_JIT_OPEN_NAME));
  const char *identity = nullptr;
  const JitInterface *jit = open ? open(kJitInterfaceVersion, &identity) : nullptr;
  if (!jit || !jit->compilePartition || !jit->exchange) {
    result.error = "'" + path + "' is not a CPU driver JIT of interface version " +
                   std::to_string(kJitInterfaceVersion) +
                   (open ? "" : ": it does not export " CGC_CPU_JIT_OPEN_NAME);
    dlclose(module);
    return result;
  }
  if (!identity || std::string(identity) != compilerIdentity()) {
    result.error = "the MLIR JIT '" + path + "' was built from other sources than this driver "
                   "(its compiler is '" + (identity ? identity : "?") +
                   "', the driver's is '" + compilerIdentity() + "'): rebuild or reinstall both";
    dlclose(module);
    return result;
  }
  result.jit = jit;
  return result;
}

const JitInterface *loadJit(std::string &error) {
  std::string path = jitModulePath();
  std::lock_guard<std::mutex> lock(gMutex);
  auto it = gLoaded.find(path);
  if (it == gLoaded.end()) {
    Loaded loaded = load(path);
    // A missing module may appear later (an installation in progress): only
    // remember what was loaded, or what exists and failed to load.
    if (!loaded.jit && !haveJitModule()) {
      error = loaded.error;
      return nullptr;
    }
    it = gLoaded.emplace(path, std::move(loaded)).first;
  }
  if (!it->second.jit)
    error = it->second.error;
  return it->second.jit;
}

} // namespace cgc::cpu
