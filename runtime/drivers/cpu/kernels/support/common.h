//===- common.h - Shared pieces of the CPU kernel library -*- C++ -*-===//
//
// Element types (float16, bfloat16 and bool storage), dtype dispatch,
// descriptor checking with messages that name the op and operand, strict
// attribute readers that apply the ODS defaults, CPU feature dispatch and
// scratch memory. Private to cgc_cpu_kernels.
//
//===----------------------------------------------------------------------===//

#ifndef CGC_CPU_KERNELS_COMMON_H
#define CGC_CPU_KERNELS_COMMON_H

#include "config.h"
#include "kernels.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <exception>
#include <functional>
#include <limits>
#include <memory>
#include <new>
#include <optional>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace cgc::cpu {

//===----------------------------------------------------------------------===//
// Element types
//===----------------------------------------------------------------------===//

/// IEEE binary16 storage.
struct Half {
  uint16_t bits;
};
/// bfloat16 storage (the upper half of a float32).
struct BFloat16 {
  uint16_t bits;
};
/// Bool storage: one byte, 0 or 1 when written by a kernel; any non-zero
/// byte reads as true.
struct Bool {
  uint8_t v;
};

[[gnu::always_inline]] inline uint32_t floatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
[[gnu::always_inline]] inline float bitsFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// float16 <-> float32 conversions, branch-free so that loops vectorize
// (after Maratyszcza's FP16 library: exact for every half value, rounds to
// nearest even, NaN stays NaN, overflow gives infinity).
[[gnu::always_inline]] inline float halfToFloat(uint16_t h) {
  const uint32_t w = uint32_t(h) << 16;
  const uint32_t sign = w & 0x80000000u;
  const uint32_t twoW = w + w;
  const float normalized = bitsFloat((twoW >> 4) + (0xE0u << 23)) * 0x1.0p-112f;
  const float denormalized = bitsFloat((twoW >> 17) | (126u << 23)) - 0.5f;
  const uint32_t result =
      sign | (twoW < (1u << 27) ? floatBits(denormalized) : floatBits(normalized));
  return bitsFloat(result);
}

[[gnu::always_inline]] inline uint16_t floatToHalf(float f) {
  float base = (std::fabs(f) * 0x1.0p+112f) * 0x1.0p-110f;
  const uint32_t w = floatBits(f);
  const uint32_t shl1W = w + w;
  const uint32_t sign = w & 0x80000000u;
  uint32_t bias = shl1W & 0xFF000000u;
  if (bias < 0x71000000u)
    bias = 0x71000000u;
  base = bitsFloat((bias >> 1) + 0x07800000u) + base;
  const uint32_t bits = floatBits(base);
  const uint32_t expBits = (bits >> 13) & 0x00007C00u;
  const uint32_t mantissaBits = bits & 0x00000FFFu;
  const uint32_t nonsign = expBits + mantissaBits;
  return uint16_t((sign >> 16) | (shl1W > 0xFF000000u ? 0x7E00u : nonsign));
}

[[gnu::always_inline]] inline float bf16ToFloat(uint16_t b) {
  return bitsFloat(uint32_t(b) << 16);
}

[[gnu::always_inline]] inline uint16_t floatToBf16(float f) {
  uint32_t u = floatBits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) // NaN: keep it quiet
    return uint16_t((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}

/// The type arithmetic is done in for a storage type.
template <class T> struct ComputeOf { using type = T; };
template <> struct ComputeOf<Half> { using type = float; };
template <> struct ComputeOf<BFloat16> { using type = float; };
template <> struct ComputeOf<Bool> { using type = bool; };
template <class T> using Compute = typename ComputeOf<T>::type;

template <class T> [[gnu::always_inline]] inline Compute<T> load(T v) { return v; }
template <> [[gnu::always_inline]] inline float load(Half v) { return halfToFloat(v.bits); }
template <> [[gnu::always_inline]] inline float load(BFloat16 v) { return bf16ToFloat(v.bits); }
template <> [[gnu::always_inline]] inline bool load(Bool v) { return v.v != 0; }

template <class T> [[gnu::always_inline]] inline T store(Compute<T> v) { return v; }
template <> [[gnu::always_inline]] inline Half store<Half>(float v) { return Half{floatToHalf(v)}; }
template <> [[gnu::always_inline]] inline BFloat16 store<BFloat16>(float v) { return BFloat16{floatToBf16(v)}; }
template <> [[gnu::always_inline]] inline Bool store<Bool>(bool v) { return Bool{uint8_t(v ? 1 : 0)}; }

template <class T> constexpr bool isFloatType() {
  return std::is_same_v<T, float> || std::is_same_v<T, double> ||
         std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;
}
template <class T> constexpr bool isIntType() {
  return std::is_integral_v<T> && !std::is_same_v<T, bool>;
}

/// Converts between any two element types with the rules of cgc_op.cast:
/// float to integer truncates toward zero (saturating, NaN gives 0: the
/// result of an out-of-range conversion is unspecified by ONNX and must not
/// be undefined behaviour here), to bool gives `x != 0`.
template <class To, class From> [[gnu::always_inline]] inline To convert(From from) {
  using CF = Compute<From>;
  using CT = Compute<To>;
  CF x = load(from);
  if constexpr (std::is_same_v<CT, bool>) {
    return store<To>(x != CF(0));
  } else if constexpr (std::is_floating_point_v<CT>) {
    return store<To>(CT(x));
  } else if constexpr (std::is_floating_point_v<CF>) {
    // float -> integer
    if (!(x == x))
      return store<To>(CT(0));
    constexpr CF lo = CF(std::numeric_limits<CT>::min());
    // max()+1 is a power of two, exactly representable.
    constexpr CF hiExclusive = CF(2) * CF(std::numeric_limits<CT>::max() / 2 + 1);
    if (x <= lo)
      return store<To>(std::numeric_limits<CT>::min());
    if (x >= hiExclusive)
      return store<To>(std::numeric_limits<CT>::max());
    return store<To>(CT(x));
  } else {
    // integer or bool -> integer: modular, as numpy's astype.
    return store<To>(CT(x));
  }
}

//===----------------------------------------------------------------------===//
// Dtype dispatch
//===----------------------------------------------------------------------===//

template <class T> struct TypeTag { using type = T; };

/// Calls `f(TypeTag<T>{})` for the storage type of `dtype`; returns false for
/// an unknown dtype.
template <class F> bool visitDType(cgc_dtype_t dtype, F &&f) {
  switch (dtype) {
  case CGC_DTYPE_FLOAT32: f(TypeTag<float>{}); return true;
  case CGC_DTYPE_FLOAT64: f(TypeTag<double>{}); return true;
  case CGC_DTYPE_FLOAT16: f(TypeTag<Half>{}); return true;
  case CGC_DTYPE_BFLOAT16: f(TypeTag<BFloat16>{}); return true;
  case CGC_DTYPE_INT8: f(TypeTag<int8_t>{}); return true;
  case CGC_DTYPE_INT16: f(TypeTag<int16_t>{}); return true;
  case CGC_DTYPE_INT32: f(TypeTag<int32_t>{}); return true;
  case CGC_DTYPE_INT64: f(TypeTag<int64_t>{}); return true;
  case CGC_DTYPE_UINT8: f(TypeTag<uint8_t>{}); return true;
  case CGC_DTYPE_UINT16: f(TypeTag<uint16_t>{}); return true;
  case CGC_DTYPE_UINT32: f(TypeTag<uint32_t>{}); return true;
  case CGC_DTYPE_UINT64: f(TypeTag<uint64_t>{}); return true;
  case CGC_DTYPE_BOOL: f(TypeTag<Bool>{}); return true;
  default: return false;
  }
}

/// The dtype classes of CGCOpBase.td's type constraints.
enum class DTypeClass { Any, Float, Integer, Bool, Numeric, Signed, Index, Unsigned };

bool dtypeIn(cgc_dtype_t dtype, DTypeClass cls);
const char *dtypeClassName(DTypeClass cls);
std::string dtypeName(cgc_dtype_t dtype);

//===----------------------------------------------------------------------===//
// Messages
//===----------------------------------------------------------------------===//

inline void appendAll(std::ostringstream &) {}
template <class A, class... R> void appendAll(std::ostringstream &os, const A &a, const R &...r) {
  os << a;
  appendAll(os, r...);
}
/// Concatenates anything streamable.
template <class... A> std::string cat(const A &...a) {
  std::ostringstream os;
  appendAll(os, a...);
  return os.str();
}
std::string shapeStr(const std::vector<int64_t> &shape);

/// Thrown (and caught at the library boundary) while checking a descriptor;
/// the message names the op and what is wrong.
struct DescError {
  std::string message;
};
[[noreturn]] void fail(const std::string &message);

//===----------------------------------------------------------------------===//
// Implementation lists: how an op with several kernels chooses one
//===----------------------------------------------------------------------===//

/// One kernel an op family may choose for a case (`Case`: the op alone or
/// with the elementwise chain fused after it, parsed once): whether it takes
/// the case (empty, or why not) and how to create it (null with a reason, or
/// a DescError or library exception, when it cannot after all).
template <class Case> struct Implementation {
  const char *name;
  std::string (*applies)(const Case &);
  std::unique_ptr<Kernel> (*create)(const Case &, std::string &reason);
};

/// Empty when `ok`, else `why`: an `applies` answer.
inline std::string unlessReason(bool ok, const char *why) {
  return ok ? std::string() : std::string(why);
}

/// The first implementation of `list` (in order of preference) that takes
/// `c` and creates a kernel, for the plain and the fused case alike; the
/// kernel records the ones passed over and why (Kernel::passedOver, which
/// profiles print). Null when none does, with every reason after `op`.
template <class Case, size_t N>
std::unique_ptr<Kernel> selectImplementation(const Implementation<Case> (&list)[N], const Case &c,
                                             const std::string &op, std::string &reason) {
  std::string passed;
  for (const Implementation<Case> &implementation : list) {
    std::string why = implementation.applies(c);
    if (why.empty()) {
      try {
        if (std::unique_ptr<Kernel> kernel = implementation.create(c, why)) {
          kernel->passedOver = std::move(passed);
          return kernel;
        }
        if (why.empty())
          why = "no kernel";
      } catch (const DescError &e) {
        why = e.message;
      } catch (const std::bad_alloc &) {
        throw;
      } catch (const std::exception &e) {
        // A library with no implementation for this geometry (dnnl::error).
        why = std::string("no implementation (") + e.what() + ")";
      }
    }
    passed += (passed.empty() ? "" : "; ") + std::string(implementation.name) + ": " + why;
  }
  reason = op + ": no kernel takes it (" + passed + ")";
  return nullptr;
}

//===----------------------------------------------------------------------===//
// Descriptor access
//===----------------------------------------------------------------------===//

/// A checked view of one KernelDesc: arity, dtypes, shapes, attributes.
/// Every failure throws DescError naming the op ("cgc_op.add: ...").
class DescReader {
public:
  explicit DescReader(const KernelDesc &desc);
  const KernelDesc &desc() const { return desc_; }
  const std::string &op() const { return desc_.op; }
  /// "cgc_op.add: " + text.
  [[noreturn]] void error(const std::string &text) const;

  /// Checks the number of inputs (variadic: at least `min`) and outputs.
  void expectInputs(size_t min, size_t max) const;
  void expectOutputs(size_t min, size_t max) const;

  size_t numInputs() const { return desc_.inputs.size(); }
  size_t numOutputs() const { return desc_.outputs.size(); }
  bool hasInput(size_t i) const { return i < desc_.inputs.size() && desc_.inputs[i].has_value(); }
  /// A required input; fails if absent.
  const KernelOperand &input(size_t i, const char *name) const;
  const KernelOperand &output(size_t i) const { return desc_.outputs[i]; }

  /// Fails unless `operand`'s dtype is in `cls`.
  void expectDType(const KernelOperand &operand, const std::string &name, DTypeClass cls) const;
  void expectSameDType(const KernelOperand &a, const std::string &aName,
                       const KernelOperand &b, const std::string &bName) const;
  void expectShape(const KernelOperand &operand, const std::string &name,
                   const std::vector<int64_t> &shape) const;

  // Attributes: the ODS default when absent, an error when of the wrong kind.
  int64_t getInt(const char *name, std::optional<int64_t> fallback = std::nullopt) const;
  double getFloat(const char *name, std::optional<double> fallback = std::nullopt) const;
  std::optional<double> getOptionalFloat(const char *name) const;
  bool getBool(const char *name, std::optional<bool> fallback = std::nullopt) const;
  std::string getString(const char *name, std::optional<std::string> fallback,
                        const std::vector<std::string> &allowed) const;
  std::vector<int64_t> getInts(const char *name,
                               std::optional<std::vector<int64_t>> fallback = std::nullopt) const;
  std::vector<double> getFloats(const char *name, bool optional = false) const;
  cgc_dtype_t getDType(const char *name) const;

private:
  const KernelDesc &desc_;
};

/// Checks every operand of `desc`: known dtype, non-negative dimensions,
/// strides of the right length. Throws DescError.
void checkOperands(const KernelDesc &desc);

/// Element strides of an operand (computed when contiguous).
inline std::vector<int64_t> stridesOf(const KernelOperand &operand) {
  return operand.effectiveStrides();
}
int64_t numElements(const std::vector<int64_t> &shape);
std::vector<int64_t> contiguousStrides(const std::vector<int64_t> &shape);
/// Dense channels-last (N, C, spatial...): channels innermost with unit
/// stride, the positions one progression of stride C, the batch included.
bool channelsLast(const KernelOperand &op);
/// "+op1+op2..." for a fused chain (ops without their "cgc_op." prefix), as
/// kernel descriptions name it.
std::string chainSummary(const std::vector<KernelDesc> &chain);
/// The extra operands of a fused chain: each op's inputs after its first
/// (the running value), counted in KernelArgs order.
size_t chainExtraOperands(const std::vector<KernelDesc> &chain);
/// Empty if the CPU has AVX-512 and every operand of `anchor` and `out` is
/// float32, else which is not so (for the direct AVX-512 kernels).
std::string avx512Float32Mismatch(const KernelDesc &anchor, const KernelOperand &out);
/// numpy broadcast of two shapes; false if incompatible.
bool broadcastShapes(const std::vector<int64_t> &a, const std::vector<int64_t> &b,
                     std::vector<int64_t> &result);
/// Strides (in elements) of `operand` viewed as broadcast to `target`
/// (stride 0 on broadcast dimensions, leading dimensions added).
std::vector<int64_t> broadcastStrides(const KernelOperand &operand,
                                      const std::vector<int64_t> &target);

//===----------------------------------------------------------------------===//
// CPU features, threads, scratch
//===----------------------------------------------------------------------===//

/// True if the CPU has AVX-512 F/BW/DQ/VL (the level the hand-written
/// loops are compiled for besides the baseline).
bool cpuHasAvx512();

#define CGC_TARGET_AVX512                                                       \
  __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma,f16c,bmi,bmi2,lzcnt,popcnt")))

/// The input rows a band of output rows [start, start + len) of a sliding
/// window reads along one dimension (stride, window extent incl. dilation,
/// padding before, input extent), and the band's share of the padding.
struct BandInput {
  int64_t start = 0, len = 0; // input rows
  int64_t padB = 0, padE = 0; // padding rows before and after them
};
/// False if the band lies entirely in the padding.
inline bool bandInput(int64_t start, int64_t len, int64_t stride, int64_t window,
                      int64_t padBegin, int64_t inExtent, BandInput &band) {
  const int64_t first = start * stride - padBegin;
  const int64_t last = (start + len - 1) * stride - padBegin + window - 1;
  const int64_t lo = std::max<int64_t>(0, first), hi = std::min(inExtent - 1, last) + 1;
  if (hi <= lo)
    return false;
  band = {lo, hi - lo, lo - first, last + 1 - hi};
  return true;
}

/// 64-byte aligned scratch memory, freed on destruction. Allocations come
/// from a per-thread cache of recently freed blocks, so steady-state runs do
/// not call the allocator.
class Scratch {
public:
  Scratch() = default;
  explicit Scratch(size_t bytes) { allocate(bytes); }
  ~Scratch();
  Scratch(const Scratch &) = delete;
  Scratch &operator=(const Scratch &) = delete;
  Scratch(Scratch &&other) noexcept : ptr_(other.ptr_), bytes_(other.bytes_) {
    other.ptr_ = nullptr;
    other.bytes_ = 0;
  }
  void allocate(size_t bytes);
  void *data() const { return ptr_; }
  template <class T> T *as() const { return static_cast<T *>(ptr_); }
  size_t size() const { return bytes_; }

private:
  void *ptr_ = nullptr;
  size_t bytes_ = 0;
};

/// A 64-byte aligned block that stays with its owner (prepared weights;
/// unlike Scratch it never goes back to a per-thread cache). Blocks of
/// WeightArena::kMinBytes or more come from the process's WeightArena
/// (page-aligned, see weight_arena.h), others and any the arena cannot hold
/// from the C heap.
class AlignedBuffer {
public:
  explicit AlignedBuffer(size_t bytes);
  ~AlignedBuffer();
  AlignedBuffer(const AlignedBuffer &) = delete;
  AlignedBuffer &operator=(const AlignedBuffer &) = delete;
  void *data() const { return ptr_; }
  size_t size() const { return bytes_; }
  /// True if the block is in the WeightArena.
  bool inArena() const { return arena_; }

private:
  void *ptr_ = nullptr;
  size_t bytes_ = 0;
  bool arena_ = false;
};

/// A Kernel with a fixed description string.
class KernelBase : public Kernel {
public:
  std::string describe() const override { return description_; }

protected:
  std::string description_;
};

//===----------------------------------------------------------------------===//
// Op factories (one per op family; see the .cpp files)
//===----------------------------------------------------------------------===//

using Factory = std::unique_ptr<Kernel> (*)(const KernelDesc &desc, const KernelOptions &options);

struct OpEntry {
  OpKind op;
  Factory factory;
  /// The factory handles strided (non-contiguous) operands itself.
  bool strided = true;
};

void registerElementwiseOps(std::vector<OpEntry> &ops);
void registerReductionOps(std::vector<OpEntry> &ops);
void registerNormalizationOps(std::vector<OpEntry> &ops);
void registerPoolingOps(std::vector<OpEntry> &ops);
void registerConvolutionOps(std::vector<OpEntry> &ops);
void registerMatMulOps(std::vector<OpEntry> &ops);
void registerMovementOps(std::vector<OpEntry> &ops);
void registerResizeOps(std::vector<OpEntry> &ops);
void registerScatterOps(std::vector<OpEntry> &ops);
void registerDetectionOps(std::vector<OpEntry> &ops); // detection.cpp: non_max_suppression
void registerCheckOps(std::vector<OpEntry> &ops);     // check.cpp: cgc_op.check
void registerGeluOps(std::vector<OpEntry> &ops); // gelu.cpp: cgc_op.erf_gelu

/// Softmax of one contiguous float32 row of `n` (reduce.cpp, the softmax
/// kernel's own row function); `out` may be `in`.
void softmaxRowFloat(const float *in, float *out, int64_t n);

/// Builds `make(dense)` for a copy of `desc` whose operands are contiguous
/// and, if `desc` has strided operands, wraps it to pack inputs and unpack
/// outputs around each run.
std::unique_ptr<Kernel> makeDenseAdapted(
    const KernelDesc &desc,
    const std::function<std::unique_ptr<Kernel>(const KernelDesc &dense)> &make);

/// Fused kernels of the anchors (conv.cpp, matmul.cpp, norm.cpp): nullptr with
/// `reason` when the chain cannot be fused. May throw DescError for a bad
/// anchor descriptor.
std::unique_ptr<Kernel> createFusedConvolution(const KernelDesc &anchor,
                                               const std::vector<KernelDesc> &epilogue,
                                               const KernelOptions &options,
                                               std::string &reason);
std::unique_ptr<Kernel> createFusedMatMul(const KernelDesc &anchor,
                                          const std::vector<KernelDesc> &epilogue,
                                          const KernelOptions &options, std::string &reason);
/// Checks an erf_gelu descriptor (gelu.cpp): a float32 input, three
/// float32 one-element k1, k2, k3, the result like the input. Throws
/// DescError naming what is wrong; returns its `multiply`.
bool checkErfGelu(const KernelDesc &desc);
/// y = erf_gelu(x) over n contiguous floats (y may be x), with the constants
/// and the `multiply` form of checkErfGelu (gelu.cpp; AVX-512 when the CPU
/// has it).
void erfGeluRow(const float *x, float *y, int64_t n, float k1, float k2, float k3,
                bool multiply);
/// batch_norm with a chain of one relu or clip (norm.cpp), applied before
/// the store into the chain's result. Throws DescError for another chain.
std::unique_ptr<Kernel> createFusedBatchNorm(const KernelDesc &anchor,
                                             const std::vector<KernelDesc> &epilogue,
                                             std::string &reason);
/// The kernel of createDepthwisePool (conv.cpp checks the geometry).
std::unique_ptr<Kernel> createFusedDepthwisePool(const KernelDesc &anchor,
                                                 const std::vector<KernelDesc> &chain,
                                                 const KernelDesc &pool,
                                                 const KernelOptions &options,
                                                 std::string &reason);
/// The kernel of createDepthwiseBlock and createExpandDepthwise (conv.cpp
/// checks the geometry); `pool` as createExpandDepthwise's.
std::unique_ptr<Kernel> createFusedDepthwiseBlock(const DepthwiseBlock &block,
                                                  const KernelOptions &options,
                                                  const KernelDesc *pool, std::string &reason);

} // namespace cgc::cpu

#endif // CGC_CPU_KERNELS_COMMON_H
