//===- KernelTestUtil.cpp - Tensors, descriptors and oracles --------------===//

#include "KernelTestUtil.h"
#include "evaluator.h"

#include <algorithm>
#include <cstring>
#include <sstream>

namespace cgc::cpu::test {

const std::vector<cgc_dtype_t> kFloatTypes = {CGC_DTYPE_FLOAT32, CGC_DTYPE_FLOAT64,
                                              CGC_DTYPE_FLOAT16, CGC_DTYPE_BFLOAT16};
const std::vector<cgc_dtype_t> kSignedIntTypes = {CGC_DTYPE_INT8, CGC_DTYPE_INT16,
                                                  CGC_DTYPE_INT32, CGC_DTYPE_INT64};
const std::vector<cgc_dtype_t> kUnsignedTypes = {CGC_DTYPE_UINT8, CGC_DTYPE_UINT16,
                                                 CGC_DTYPE_UINT32, CGC_DTYPE_UINT64};
const std::vector<cgc_dtype_t> kIntTypes = {CGC_DTYPE_INT8,   CGC_DTYPE_INT16,  CGC_DTYPE_INT32,
                                            CGC_DTYPE_INT64,  CGC_DTYPE_UINT8,  CGC_DTYPE_UINT16,
                                            CGC_DTYPE_UINT32, CGC_DTYPE_UINT64};
const std::vector<cgc_dtype_t> kNumericTypes = {
    CGC_DTYPE_FLOAT32, CGC_DTYPE_FLOAT64, CGC_DTYPE_FLOAT16, CGC_DTYPE_BFLOAT16,
    CGC_DTYPE_INT8,    CGC_DTYPE_INT16,   CGC_DTYPE_INT32,   CGC_DTYPE_INT64,
    CGC_DTYPE_UINT8,   CGC_DTYPE_UINT16,  CGC_DTYPE_UINT32,  CGC_DTYPE_UINT64};
const std::vector<cgc_dtype_t> kSignedTypes = {CGC_DTYPE_FLOAT32, CGC_DTYPE_FLOAT64,
                                               CGC_DTYPE_FLOAT16, CGC_DTYPE_BFLOAT16,
                                               CGC_DTYPE_INT8,    CGC_DTYPE_INT16,
                                               CGC_DTYPE_INT32,   CGC_DTYPE_INT64};
const std::vector<cgc_dtype_t> kAllTypes = {
    CGC_DTYPE_FLOAT32, CGC_DTYPE_FLOAT64, CGC_DTYPE_FLOAT16, CGC_DTYPE_BFLOAT16, CGC_DTYPE_INT8,
    CGC_DTYPE_INT16,   CGC_DTYPE_INT32,   CGC_DTYPE_INT64,   CGC_DTYPE_UINT8,    CGC_DTYPE_UINT16,
    CGC_DTYPE_UINT32,  CGC_DTYPE_UINT64,  CGC_DTYPE_BOOL};

const char *layoutName(Layout layout) {
  switch (layout) {
  case Layout::Contiguous: return "contiguous";
  case Layout::Padded: return "padded";
  case Layout::Transposed: return "transposed";
  case Layout::Reversed: return "reversed";
  case Layout::ChannelsLast: return "channels-last";
  }
  return "?";
}

std::string dtypeStr(cgc_dtype_t dtype) {
  const char *n = cgc_dtype_name(dtype);
  return n ? n : "?";
}

bool isFloat(cgc_dtype_t d) {
  return d == CGC_DTYPE_FLOAT32 || d == CGC_DTYPE_FLOAT64 || d == CGC_DTYPE_FLOAT16 ||
         d == CGC_DTYPE_BFLOAT16;
}
bool isSignedInt(cgc_dtype_t d) {
  return d == CGC_DTYPE_INT8 || d == CGC_DTYPE_INT16 || d == CGC_DTYPE_INT32 ||
         d == CGC_DTYPE_INT64;
}
bool isUnsignedInt(cgc_dtype_t d) {
  return d == CGC_DTYPE_UINT8 || d == CGC_DTYPE_UINT16 || d == CGC_DTYPE_UINT32 ||
         d == CGC_DTYPE_UINT64;
}

//===----------------------------------------------------------------------===//
// Conversions (independent of the library)
//===----------------------------------------------------------------------===//

static uint16_t toHalfBits(double v) {
  // Round a double to the nearest binary16 (ties to even) by scaling.
  if (std::isnan(v))
    return 0x7e00;
  uint16_t sign = std::signbit(v) ? 0x8000 : 0;
  double a = std::fabs(v);
  if (a >= 65520.0)
    return sign | 0x7c00;
  if (a < std::ldexp(1.0, -14)) {
    // Subnormal: multiples of 2^-24.
    double q = std::nearbyint(a * std::ldexp(1.0, 24));
    return sign | uint16_t(q);
  }
  int e;
  double m = std::frexp(a, &e); // a = m 2^e, m in [0.5, 1)
  double q = std::nearbyint(m * 2048.0); // 11 significant bits
  if (q == 2048.0) {
    q = 1024.0;
    ++e;
  }
  int exp = e - 1 + 15;
  if (exp >= 31)
    return sign | 0x7c00;
  return sign | uint16_t(exp << 10) | uint16_t(uint32_t(q) - 1024);
}

static double fromHalfBits(uint16_t h) {
  double sign = (h & 0x8000) ? -1.0 : 1.0;
  int exp = (h >> 10) & 0x1f;
  int man = h & 0x3ff;
  if (exp == 0x1f)
    return man ? std::nan("") : sign * INFINITY;
  if (exp == 0)
    return sign * std::ldexp(double(man), -24);
  return sign * std::ldexp(double(man + 1024), exp - 25);
}

static uint16_t toBf16Bits(double v) {
  float f = float(v);
  if (std::isnan(f))
    return 0x7fc0;
  uint32_t u;
  std::memcpy(&u, &f, 4);
  uint32_t lower = u & 0xffff;
  uint32_t upper = u >> 16;
  if (lower > 0x8000 || (lower == 0x8000 && (upper & 1)))
    ++upper;
  return uint16_t(upper);
}

static double fromBf16Bits(uint16_t b) {
  uint32_t u = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

double wrapTo(cgc_dtype_t d, double v) {
  if (isFloat(d))
    return roundTo(d, v);
  if (d == CGC_DTYPE_BOOL)
    return v != 0 ? 1 : 0;
  // Integers: modulo 2^bits (v is an exact integer in the tests).
  long double x = std::trunc((long double)v);
  int bits = int(cgc_dtype_size(d) * 8);
  long double mod = std::ldexp((long double)1, bits);
  long double r = std::fmod(x, mod);
  if (r < 0)
    r += mod;
  if (isSignedInt(d) && r >= mod / 2)
    r -= mod;
  return double(r);
}

double roundTo(cgc_dtype_t d, double v) {
  switch (d) {
  case CGC_DTYPE_FLOAT32: return double(float(v));
  case CGC_DTYPE_FLOAT64: return v;
  case CGC_DTYPE_FLOAT16: return fromHalfBits(toHalfBits(v));
  case CGC_DTYPE_BFLOAT16: return fromBf16Bits(toBf16Bits(v));
  case CGC_DTYPE_BOOL: return v != 0 ? 1 : 0;
  default: return wrapTo(d, v);
  }
}

//===----------------------------------------------------------------------===//
// Tensor
//===----------------------------------------------------------------------===//

int64_t count(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

static std::vector<int64_t> denseStrides(const std::vector<int64_t> &shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (int64_t i = int64_t(shape.size()) - 2; i >= 0; --i)
    s[size_t(i)] = s[size_t(i) + 1] * std::max<int64_t>(shape[size_t(i) + 1], 1);
  return s;
}

bool Tensor::guardsIntact() const {
  if (storage_.size() < 128)
    return true; // a default-constructed tensor has no storage
  auto intact = [](auto begin, auto end) {
    return std::all_of(begin, end, [](uint8_t b) { return b == 0xCD; });
  };
  return intact(storage_.begin(), storage_.begin() + 64) &&
         intact(storage_.end() - 64, storage_.end());
}

Tensor Tensor::withStrides(cgc_dtype_t dtype, std::vector<int64_t> shape,
                           std::vector<int64_t> strides) {
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.strides_ = std::move(strides);
  size_t elem = cgc_dtype_size(dtype);
  int64_t lo = 0, hi = 0;
  for (size_t d = 0; d < t.shape_.size(); ++d) {
    if (t.shape_[d] == 0)
      continue;
    int64_t span = (t.shape_[d] - 1) * t.strides_[d];
    if (span < 0)
      lo += span;
    else
      hi += span;
  }
  // Guard bytes before and after catch writes out of bounds.
  t.storage_.assign(size_t(hi - lo + 1) * elem + 128, 0xCD);
  t.origin_ = int64_t(-lo * int64_t(elem)) + 64;
  return t;
}

Tensor::Tensor(cgc_dtype_t dtype, std::vector<int64_t> shape, Layout layout) {
  std::vector<int64_t> strides;
  size_t rank = shape.size();
  switch (layout) {
  case Layout::Contiguous:
    strides = denseStrides(shape);
    break;
  case Layout::Padded: {
    strides.assign(rank, 1);
    int64_t s = 2;
    for (size_t d = rank; d-- > 0;) {
      strides[d] = s;
      s = s * std::max<int64_t>(shape[d], 1) + 3;
    }
    break;
  }
  case Layout::Transposed: {
    strides = denseStrides(shape);
    if (rank >= 2) {
      std::vector<int64_t> swapped = shape;
      std::swap(swapped[rank - 1], swapped[rank - 2]);
      std::vector<int64_t> s = denseStrides(swapped);
      strides = s;
      std::swap(strides[rank - 1], strides[rank - 2]);
    }
    break;
  }
  case Layout::Reversed:
    strides = denseStrides(shape);
    if (rank >= 1)
      strides[rank - 1] = -strides[rank - 1];
    break;
  case Layout::ChannelsLast: {
    strides = denseStrides(shape);
    if (rank >= 3) {
      // dims order in memory: 0, 2, 3, ..., 1
      int64_t s = 1;
      strides[1] = 1;
      s = std::max<int64_t>(shape[1], 1);
      for (size_t d = rank; d-- > 2;) {
        strides[d] = s;
        s *= std::max<int64_t>(shape[d], 1);
      }
      strides[0] = s;
    }
    break;
  }
  }
  *this = withStrides(dtype, std::move(shape), std::move(strides));
  if (layout == Layout::Contiguous)
    strides_ = denseStrides(shape_);
}

int64_t Tensor::size() const { return count(shape_); }

bool Tensor::contiguous() const { return strides_ == denseStrides(shape_); }

int64_t Tensor::byteOffset(int64_t i) const {
  int64_t off = 0;
  for (size_t d = shape_.size(); d-- > 0;) {
    off += (i % shape_[d]) * strides_[d];
    i /= shape_[d];
  }
  return off * int64_t(cgc_dtype_size(dtype_));
}

double Tensor::get(int64_t i) const {
  const uint8_t *p = static_cast<const uint8_t *>(data()) + byteOffset(i);
  switch (dtype_) {
  case CGC_DTYPE_FLOAT32: { float v; std::memcpy(&v, p, 4); return v; }
  case CGC_DTYPE_FLOAT64: { double v; std::memcpy(&v, p, 8); return v; }
  case CGC_DTYPE_FLOAT16: { uint16_t v; std::memcpy(&v, p, 2); return fromHalfBits(v); }
  case CGC_DTYPE_BFLOAT16: { uint16_t v; std::memcpy(&v, p, 2); return fromBf16Bits(v); }
  case CGC_DTYPE_INT8: return double(*reinterpret_cast<const int8_t *>(p));
  case CGC_DTYPE_UINT8: return double(*p);
  case CGC_DTYPE_BOOL: return *p ? 1.0 : 0.0;
  case CGC_DTYPE_INT16: { int16_t v; std::memcpy(&v, p, 2); return v; }
  case CGC_DTYPE_UINT16: { uint16_t v; std::memcpy(&v, p, 2); return v; }
  case CGC_DTYPE_INT32: { int32_t v; std::memcpy(&v, p, 4); return v; }
  case CGC_DTYPE_UINT32: { uint32_t v; std::memcpy(&v, p, 4); return v; }
  case CGC_DTYPE_INT64: { int64_t v; std::memcpy(&v, p, 8); return double(v); }
  case CGC_DTYPE_UINT64: { uint64_t v; std::memcpy(&v, p, 8); return double(v); }
  default: return 0;
  }
}

void Tensor::set(int64_t i, double v) {
  uint8_t *p = static_cast<uint8_t *>(data()) + byteOffset(i);
  switch (dtype_) {
  case CGC_DTYPE_FLOAT32: { float x = float(v); std::memcpy(p, &x, 4); break; }
  case CGC_DTYPE_FLOAT64: std::memcpy(p, &v, 8); break;
  case CGC_DTYPE_FLOAT16: { uint16_t x = toHalfBits(v); std::memcpy(p, &x, 2); break; }
  case CGC_DTYPE_BFLOAT16: { uint16_t x = toBf16Bits(v); std::memcpy(p, &x, 2); break; }
  case CGC_DTYPE_BOOL: *p = v != 0; break;
  case CGC_DTYPE_INT8: { int8_t x = int8_t(wrapTo(dtype_, v)); std::memcpy(p, &x, 1); break; }
  case CGC_DTYPE_UINT8: { uint8_t x = uint8_t(wrapTo(dtype_, v)); std::memcpy(p, &x, 1); break; }
  case CGC_DTYPE_INT16: { int16_t x = int16_t(wrapTo(dtype_, v)); std::memcpy(p, &x, 2); break; }
  case CGC_DTYPE_UINT16: { uint16_t x = uint16_t(wrapTo(dtype_, v)); std::memcpy(p, &x, 2); break; }
  case CGC_DTYPE_INT32: { int32_t x = int32_t(wrapTo(dtype_, v)); std::memcpy(p, &x, 4); break; }
  case CGC_DTYPE_UINT32: { uint32_t x = uint32_t(wrapTo(dtype_, v)); std::memcpy(p, &x, 4); break; }
  case CGC_DTYPE_INT64: { int64_t x = int64_t(wrapTo(dtype_, v)); std::memcpy(p, &x, 8); break; }
  case CGC_DTYPE_UINT64: { uint64_t x = uint64_t(wrapTo(dtype_, v)); std::memcpy(p, &x, 8); break; }
  default: break;
  }
}

std::vector<double> Tensor::values() const {
  std::vector<double> v(static_cast<size_t>(size()));
  for (int64_t i = 0; i < size(); ++i)
    v[size_t(i)] = get(i);
  return v;
}

void Tensor::setValues(const std::vector<double> &v) {
  for (int64_t i = 0; i < size(); ++i)
    set(i, v[size_t(i)]);
}

KernelOperand Tensor::operand() const {
  KernelOperand op;
  op.dtype = dtype_;
  op.shape = shape_;
  if (!contiguous())
    op.strides = strides_;
  return op;
}

void fillRandom(Tensor &t, std::mt19937 &rng, double lo, double hi) {
  for (int64_t i = 0; i < t.size(); ++i) {
    double v;
    if (t.dtype() == CGC_DTYPE_BOOL) {
      v = double(rng() & 1);
    } else if (isFloat(t.dtype())) {
      v = std::uniform_real_distribution<double>(lo, hi)(rng);
    } else {
      double l = std::ceil(lo), h = std::floor(hi);
      if (isUnsignedInt(t.dtype()))
        l = std::max(l, 0.0);
      v = double(std::uniform_int_distribution<int64_t>(int64_t(l), int64_t(h))(rng));
    }
    t.set(i, roundTo(t.dtype(), v));
  }
}

//===----------------------------------------------------------------------===//
// Kernels
//===----------------------------------------------------------------------===//

std::unique_ptr<Kernel> make(const KernelDesc &desc, const KernelOptions &options) {
  std::string error;
  std::unique_ptr<Kernel> k = createKernel(desc, options, error);
  EXPECT_TRUE(k != nullptr) << "createKernel(" << desc.op << ") failed: " << error;
  return k;
}

std::string makeError(const KernelDesc &desc) {
  std::string error;
  std::unique_ptr<Kernel> k = createKernel(desc, error);
  if (k)
    return "";
  return error.empty() ? "<failed without a message>" : error;
}

void runKernel(const Kernel &kernel, const std::vector<const Tensor *> &inputs,
               const std::vector<Tensor *> &outputs, ThreadPool &pool) {
  std::vector<const void *> in;
  std::vector<void *> out;
  for (const Tensor *t : inputs)
    in.push_back(t ? t->data() : nullptr);
  for (Tensor *t : outputs)
    out.push_back(t->data());
  KernelArgs args{in.data(), out.data()};
  kernel.run(args, pool);
}

double relTol(cgc_dtype_t d) {
  switch (d) {
  case CGC_DTYPE_FLOAT32: return 2e-5;
  case CGC_DTYPE_FLOAT64: return 1e-11;
  case CGC_DTYPE_FLOAT16: return 2e-3;
  case CGC_DTYPE_BFLOAT16: return 1.6e-2;
  default: return 0;
  }
}

double absTol(cgc_dtype_t d) {
  switch (d) {
  case CGC_DTYPE_FLOAT32: return 2e-6;
  case CGC_DTYPE_FLOAT64: return 1e-12;
  case CGC_DTYPE_FLOAT16: return 2e-3;
  case CGC_DTYPE_BFLOAT16: return 1.6e-2;
  default: return 0;
  }
}

std::vector<double> referenceValues(const KernelDesc &desc,
                                    const std::vector<const Tensor *> &inputs, size_t output) {
  KernelDesc wide = desc;
  std::vector<Tensor> results;
  for (KernelOperand &out : wide.outputs) {
    // Integer and bool results keep their dtype (exact either way).
    cgc_dtype_t dtype = isFloat(out.dtype) ? CGC_DTYPE_FLOAT64 : out.dtype;
    results.emplace_back(dtype, out.shape);
    out = results.back().operand();
  }
  std::string why = reference::unsupported(wide);
  if (!why.empty()) {
    ADD_FAILURE() << "the reference evaluator refuses " << desc.op << ": " << why;
    return {};
  }
  std::vector<const void *> in;
  for (const Tensor *t : inputs)
    in.push_back(t ? t->data() : nullptr);
  std::vector<void *> out;
  for (Tensor &t : results)
    out.push_back(t.data());
  reference::evaluate(wide, in.data(), out.data());
  return results.at(output).values();
}

::testing::AssertionResult closeTo(const Tensor &actual, const std::vector<double> &expected,
                                   double rel, double abs, const std::string &context) {
  if (int64_t(expected.size()) != actual.size())
    return ::testing::AssertionFailure() << context << ": expected " << expected.size()
                                         << " values, the tensor has " << actual.size();
  if (!actual.guardsIntact())
    return ::testing::AssertionFailure() << context << ": a write landed outside the tensor";
  int bad = 0;
  std::ostringstream os;
  for (int64_t i = 0; i < actual.size(); ++i) {
    double a = actual.get(i), e = expected[size_t(i)];
    bool ok;
    if (std::isnan(e))
      ok = std::isnan(a);
    else if (std::isinf(e))
      ok = a == e;
    else
      ok = std::fabs(a - e) <= abs + rel * std::fabs(e);
    if (!ok) {
      if (bad < 6) {
        os << "\n  at " << i << " (";
        std::vector<int64_t> c = coords(i, actual.shape());
        for (size_t k = 0; k < c.size(); ++k)
          os << (k ? "," : "") << c[k];
        os << "): got " << a << ", expected " << e;
      }
      ++bad;
    }
  }
  if (bad == 0)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << context << ": " << bad << " of " << actual.size()
                                       << " elements differ (" << dtypeStr(actual.dtype())
                                       << ", rel " << rel << ", abs " << abs << ")" << os.str();
}

std::vector<int64_t> coords(int64_t i, const std::vector<int64_t> &shape) {
  std::vector<int64_t> c(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    c[d] = shape[d] ? i % shape[d] : 0;
    i = shape[d] ? i / shape[d] : 0;
  }
  return c;
}

int64_t linear(const std::vector<int64_t> &c, const std::vector<int64_t> &shape) {
  int64_t i = 0;
  for (size_t d = 0; d < shape.size(); ++d)
    i = i * shape[d] + c[d];
  return i;
}

int64_t broadcastIndex(const std::vector<int64_t> &c, const std::vector<int64_t> &src) {
  int64_t i = 0;
  size_t off = c.size() - src.size();
  for (size_t d = 0; d < src.size(); ++d)
    i = i * src[d] + (src[d] == 1 ? 0 : c[off + d]);
  return i;
}

std::vector<int64_t> broadcast(const std::vector<int64_t> &a, const std::vector<int64_t> &b) {
  size_t rank = std::max(a.size(), b.size());
  std::vector<int64_t> r(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    r[i] = da == 1 ? db : da;
  }
  return r;
}

ThreadPool &pool1() {
  static ThreadPool pool(1);
  return pool;
}
ThreadPool &pool3() {
  static ThreadPool pool(3);
  return pool;
}

} // namespace cgc::cpu::test
