//===- config.h - The CPU driver's kernel and scheduling choices -*- C++ -*-===//
//
// Every choice of the driver that is not forced by the program: which
// implementation runs an op where several apply (Winograd or direct, the
// packed GEMM or oneDNN, the fused depthwise blocks, ...), how many worker
// threads run it and how long they spin. Each has a default (the fastest
// measured, docs/cpu-kernels.md) and a name.
//
// A configuration belongs to a device: the application gives it as text
// when it creates the device (`cgc_device_options_t::driver_options`,
// `cgc-run --driver-options`, the DDI's `pDriverOptions`), the driver parses
// it once, keeps it, and the programs created on that device choose their
// kernels with it. Two devices in one process may hold two configurations.
//
// The environment is read in one place, KernelConfig::environment(), once
// per process, as a debug override applied over the device's text:
// CGC_CPU_<NAME> for each setting (CGC_CPU_WINOGRAD=0, ...).
//
// Kernel creation reads the configuration of the program being created
// through activeConfig(), which ConfigScope sets on the creating (and
// running) thread: choices deep in the kernel library (a GEMM's tile shape,
// Winograd's tile) see the device's configuration without every helper
// taking it as a parameter. Outside any scope it is the defaults with the
// environment's overrides.
//
//===----------------------------------------------------------------------===//

#ifndef CGC_CPU_KERNELS_CONFIG_H
#define CGC_CPU_KERNELS_CONFIG_H

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace cgc::cpu {

struct KernelConfig {
  // Convolutions.
  bool winograd = true;              // oneDNN's Winograd kernels for 3x3 stride-1 layers
  bool winogradChannelBlocks = true; // split a Winograd layer by output channels across threads
  int winogradGemm = 1;              // 0: off, 1: where it pays, 2: "all" (wherever it can run)
  bool subsampledPointwise = true;   // strided 1x1 convolutions on the packed GEMM
  bool channelsLastDepthwise = true; // the direct channels-last depthwise kernel
  bool depthwisePool = true;         // a depthwise convolution fused with its global pool
  bool stemConvolution = true;       // the direct kernel for few-input-channel convolutions
  bool stemDepthwise = true;         // a stem fused into the depthwise convolution after it
  bool expandDepthwise = true;       // a 1x1 expansion fused into the depthwise convolution
  bool depthwiseProject = true;      // a depthwise convolution fused with its projection
  bool directDeconvolution = true;   // conv_transpose with stride = kernel as one block per input
  bool patchConvolution = true;      // a convolution with stride = kernel as one product of patches
  bool directPool = true;            // small and channels-last float32 2-D pools, direct kernels
  // Products.
  bool packedGemm = true;       // the AVX-512 packed GEMM (else oneDNN)
  /// One Strassen level for large products at 1 thread. Off by default:
  /// on the VM of 2026-11-30 the BERT encoder at 1 thread ran 3-8% slower
  /// with it (9 alternating pairs, 8 slower: 199.7-208.0 against
  /// 187.7-200.0 ms; per step, all four projections slower), where an
  /// earlier VM had measured it ~3% faster (docs/cpu-kernels.md); and the
  /// classic product rounds less.
  bool strassen = false;
  bool gemmBalancedRows = true; // spread rows evenly over register tiles
  bool gemmRowBlocks = true;    // row blocks under every panel where A dominates
  bool gemmKPairs = true;       // K in pairs for narrow products
  bool gemmGelu = true;         // erf GELU in the packed GEMM's epilogue
  bool batchedGemm = true;      // batched products on the packed GEMM
  bool rowProduct = true;       // one-row products with B stored N x K as row dot products
  // Other ops and memory.
  bool separableResize = true; // resize as one pass per dimension
  bool elementwiseChains = true; // elementwise ops after an elementwise op in one pass
  bool weightArena = true;     // prepared weights in one shared arena
  /// Constants prepared when the runtime declares them final (at load,
  /// CompiledProgram::prepareConstants) rather than on the first run.
  bool prepareConstants = true;
  /// Temporaries of internal bind points in the bound bytes, where the
  /// compiler planned them. Off by default: the driver's own per-run plan
  /// also leaves out the values its fusions never store, which the
  /// compiler's plan reserves, so it is smaller (ResNet-50 peak RSS 185.7
  /// against 189.2 MiB with it on; docs/memory-planning.md).
  bool boundTemporaries = false;
  // Scheduling.
  int threads = 0;     // worker threads; 0: one per core
  int spinUs = 300;    // how long an idle worker spins before it sleeps
  std::string profile; // per-step profile: "" off, "1" stderr, else a file appended to
  /// What evaluates a program's ops: "kernels" (this library: fused,
  /// blocked, vectorized, threaded) or "reference" (every op alone on the
  /// reference evaluator, runtime/drivers/reference: the reference driver's
  /// default).
  std::string evaluator = "kernels";

  /// The settings by name ("winograd", "packed-gemm", ..., "threads"),
  /// with their meaning.
  struct Setting {
    const char *name;
    const char *help;
  };
  static const std::vector<Setting> &settings();

  /// Applies "name=value[,name=value...]" (booleans 0/1, on/off,
  /// true/false; winograd-gemm also "all"). False with a message naming
  /// the setting on an unknown name or a bad value; nothing is applied then.
  bool apply(std::string_view text, std::string &error);
  /// One setting.
  bool set(std::string_view name, std::string_view value, std::string &error);
  /// The value of a setting as text.
  std::string get(std::string_view name) const;
  /// "name=value,..." of the settings that differ from the defaults, or
  /// "defaults".
  std::string describe() const;

  /// The overrides of the environment (CGC_CPU_<NAME>, the name in
  /// upper case with '_' for '-'), as "name=value,..." text; read once per
  /// process. Empty when none is set; an invalid value is reported by
  /// apply() naming the variable.
  static const std::string &environment();
  /// Applies environment() over this configuration; false with a message
  /// naming the variable on a bad value (nothing is applied then).
  bool applyEnvironment(std::string &error);
  /// The defaults with the environment's overrides applied (an invalid
  /// override is ignored here and reported where a device is created).
  static const KernelConfig &process();

  bool operator==(const KernelConfig &other) const;
};

/// The configuration of the program being created or run on this thread
/// (ConfigScope), else KernelConfig::process().
const KernelConfig &activeConfig();

/// Makes `config` the active configuration of this thread while it lives.
class ConfigScope {
public:
  explicit ConfigScope(const KernelConfig &config);
  ~ConfigScope();
  ConfigScope(const ConfigScope &) = delete;
  ConfigScope &operator=(const ConfigScope &) = delete;

private:
  const KernelConfig *previous_;
};

} // namespace cgc::cpu

#endif // CGC_CPU_KERNELS_CONFIG_H
