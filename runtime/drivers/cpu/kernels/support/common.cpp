//===- common.cpp - Shared pieces of the CPU kernel library ---------===//

#include "common.h"

#include "weight_arena.h"

#include <algorithm>
#include <cstdlib>

namespace cgc::cpu {

//===----------------------------------------------------------------------===//
// Dtypes
//===----------------------------------------------------------------------===//

static bool isFloatDType(cgc_dtype_t d) {
  return d == CGC_DTYPE_FLOAT32 || d == CGC_DTYPE_FLOAT64 ||
         d == CGC_DTYPE_FLOAT16 || d == CGC_DTYPE_BFLOAT16;
}
static bool isSignedIntDType(cgc_dtype_t d) {
  return d == CGC_DTYPE_INT8 || d == CGC_DTYPE_INT16 || d == CGC_DTYPE_INT32 ||
         d == CGC_DTYPE_INT64;
}
static bool isUnsignedIntDType(cgc_dtype_t d) {
  return d == CGC_DTYPE_UINT8 || d == CGC_DTYPE_UINT16 ||
         d == CGC_DTYPE_UINT32 || d == CGC_DTYPE_UINT64;
}

bool dtypeIn(cgc_dtype_t d, DTypeClass cls) {
  if (cgc_dtype_size(d) == 0)
    return false;
  switch (cls) {
  case DTypeClass::Any: return true;
  case DTypeClass::Float: return isFloatDType(d);
  case DTypeClass::Integer: return isSignedIntDType(d) || isUnsignedIntDType(d);
  case DTypeClass::Bool: return d == CGC_DTYPE_BOOL;
  case DTypeClass::Numeric: return d != CGC_DTYPE_BOOL;
  case DTypeClass::Signed: return isFloatDType(d) || isSignedIntDType(d);
  case DTypeClass::Index: return d == CGC_DTYPE_INT32 || d == CGC_DTYPE_INT64;
  case DTypeClass::Unsigned: return isUnsignedIntDType(d);
  }
  return false;
}

const char *dtypeClassName(DTypeClass cls) {
  switch (cls) {
  case DTypeClass::Any: return "any element type";
  case DTypeClass::Float: return "a floating-point type";
  case DTypeClass::Integer: return "an integer type";
  case DTypeClass::Bool: return "bool";
  case DTypeClass::Numeric: return "a numeric type (float or integer)";
  case DTypeClass::Signed: return "a signed type (float or signed integer)";
  case DTypeClass::Index: return "int32 or int64";
  case DTypeClass::Unsigned: return "an unsigned integer type";
  }
  return "?";
}

std::string dtypeName(cgc_dtype_t dtype) {
  const char *name = cgc_dtype_name(dtype);
  return name ? name : cat("<unknown dtype ", int(dtype), ">");
}

std::string shapeStr(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

void fail(const std::string &message) { throw DescError{message}; }

void throwIndexOutOfRange(std::string_view op, int64_t index, int64_t position,
                          const std::vector<int64_t> &indicesShape, int64_t axis,
                          int64_t size) {
  std::vector<int64_t> at(indicesShape.size());
  for (size_t d = indicesShape.size(); d-- > 0;) {
    int64_t dim = std::max<int64_t>(indicesShape[d], 1);
    at[d] = position % dim;
    position /= dim;
  }
  std::string where;
  for (size_t d = 0; d < at.size(); ++d)
    where += cat(d ? ", " : "", at[d]);
  throw RunError(cat(op, ": index ", index, " at indices[", where,
                     "] is out of range for dimension ", axis, " of size ", size,
                     " (valid: ", -size, " to ", size - 1, ")"));
}

//===----------------------------------------------------------------------===//
// DescReader
//===----------------------------------------------------------------------===//

DescReader::DescReader(const KernelDesc &desc) : desc_(desc) {}

void DescReader::error(const std::string &text) const { fail(desc_.op + ": " + text); }

void DescReader::expectInputs(size_t min, size_t max) const {
  size_t n = desc_.inputs.size();
  if (n < min || n > max) {
    if (min == max)
      error(cat("expected ", min, " input operand(s), got ", n));
    error(cat("expected between ", min, " and ", max, " input operands, got ", n));
  }
}

void DescReader::expectOutputs(size_t min, size_t max) const {
  size_t n = desc_.outputs.size();
  if (n < min || n > max) {
    if (min == max)
      error(cat("expected ", min, " output operand(s), got ", n));
    error(cat("expected between ", min, " and ", max, " outputs, got ", n));
  }
}

const KernelOperand &DescReader::input(size_t i, const char *name) const {
  if (i >= desc_.inputs.size() || !desc_.inputs[i])
    error(cat("required input ", i, " (", name, ") is absent"));
  return *desc_.inputs[i];
}

void DescReader::expectDType(const KernelOperand &operand, const std::string &name,
                             DTypeClass cls) const {
  if (!dtypeIn(operand.dtype, cls))
    error(cat(name, " has element type ", dtypeName(operand.dtype), "; expected ",
              dtypeClassName(cls)));
}

void DescReader::expectSameDType(const KernelOperand &a, const std::string &aName,
                                 const KernelOperand &b, const std::string &bName) const {
  if (a.dtype != b.dtype)
    error(cat(aName, " (", dtypeName(a.dtype), ") and ", bName, " (",
              dtypeName(b.dtype), ") must have the same element type"));
}

void DescReader::expectShape(const KernelOperand &operand, const std::string &name,
                             const std::vector<int64_t> &shape) const {
  if (operand.shape != shape)
    error(cat(name, " has shape ", shapeStr(operand.shape), "; expected ", shapeStr(shape)));
}

static const char *kindName(AttrValue::Kind kind) {
  switch (kind) {
  case AttrValue::Kind::Int: return "an integer";
  case AttrValue::Kind::Float: return "a float";
  case AttrValue::Kind::Bool: return "a bool";
  case AttrValue::Kind::String: return "a string";
  case AttrValue::Kind::Ints: return "an integer array";
  case AttrValue::Kind::Floats: return "a float array";
  case AttrValue::Kind::DType: return "an element type";
  }
  return "?";
}

int64_t DescReader::getInt(const char *name, std::optional<int64_t> fallback) const {
  const AttrValue *a = desc_.attr(name);
  if (!a) {
    if (!fallback)
      error(cat("missing required attribute '", name, "'"));
    return *fallback;
  }
  if (a->kind != AttrValue::Kind::Int)
    error(cat("attribute '", name, "' must be an integer, got ", kindName(a->kind)));
  return a->i;
}

double DescReader::getFloat(const char *name, std::optional<double> fallback) const {
  const AttrValue *a = desc_.attr(name);
  if (!a) {
    if (!fallback)
      error(cat("missing required attribute '", name, "'"));
    return *fallback;
  }
  if (a->kind == AttrValue::Kind::Int)
    return double(a->i);
  if (a->kind != AttrValue::Kind::Float)
    error(cat("attribute '", name, "' must be a float, got ", kindName(a->kind)));
  return a->f;
}

std::optional<double> DescReader::getOptionalFloat(const char *name) const {
  if (!desc_.attr(name))
    return std::nullopt;
  return getFloat(name);
}

bool DescReader::getBool(const char *name, std::optional<bool> fallback) const {
  const AttrValue *a = desc_.attr(name);
  if (!a) {
    if (!fallback)
      error(cat("missing required attribute '", name, "'"));
    return *fallback;
  }
  if (a->kind == AttrValue::Kind::Int)
    return a->i != 0;
  if (a->kind != AttrValue::Kind::Bool)
    error(cat("attribute '", name, "' must be a bool, got ", kindName(a->kind)));
  return a->b;
}

std::string DescReader::getString(const char *name, std::optional<std::string> fallback,
                                  const std::vector<std::string> &allowed) const {
  const AttrValue *a = desc_.attr(name);
  std::string value;
  if (!a) {
    if (!fallback)
      error(cat("missing required attribute '", name, "'"));
    value = *fallback;
  } else if (a->kind != AttrValue::Kind::String) {
    error(cat("attribute '", name, "' must be a string, got ", kindName(a->kind)));
  } else {
    value = a->s;
  }
  if (!allowed.empty() && std::find(allowed.begin(), allowed.end(), value) == allowed.end()) {
    std::string list;
    for (const std::string &v : allowed)
      list += (list.empty() ? "" : ", ") + v;
    error(cat("attribute '", name, "' is \"", value, "\"; expected one of: ", list));
  }
  return value;
}

std::vector<int64_t> DescReader::getInts(const char *name,
                                         std::optional<std::vector<int64_t>> fallback) const {
  const AttrValue *a = desc_.attr(name);
  if (!a) {
    if (!fallback)
      error(cat("missing required attribute '", name, "'"));
    return *fallback;
  }
  if (a->kind != AttrValue::Kind::Ints)
    error(cat("attribute '", name, "' must be an integer array, got ", kindName(a->kind)));
  return a->ints;
}

std::vector<double> DescReader::getFloats(const char *name, bool optional) const {
  const AttrValue *a = desc_.attr(name);
  if (!a) {
    if (!optional)
      error(cat("missing required attribute '", name, "'"));
    return {};
  }
  if (a->kind == AttrValue::Kind::Ints)
    return std::vector<double>(a->ints.begin(), a->ints.end());
  if (a->kind != AttrValue::Kind::Floats)
    error(cat("attribute '", name, "' must be a float array, got ", kindName(a->kind)));
  return a->floats;
}

cgc_dtype_t DescReader::getDType(const char *name) const {
  const AttrValue *a = desc_.attr(name);
  if (!a)
    error(cat("missing required attribute '", name, "'"));
  if (a->kind != AttrValue::Kind::DType)
    error(cat("attribute '", name, "' must be an element type, got ", kindName(a->kind)));
  if (cgc_dtype_size(a->dtype) == 0)
    error(cat("attribute '", name, "' names an unknown element type (", int(a->dtype), ")"));
  return a->dtype;
}

void checkOperands(const KernelDesc &desc) {
  auto check = [&](const KernelOperand &operand, const std::string &name) {
    if (cgc_dtype_size(operand.dtype) == 0)
      fail(cat(desc.op, ": ", name, " has an unknown element type (", int(operand.dtype), ")"));
    for (int64_t d : operand.shape)
      if (d < 0)
        fail(cat(desc.op, ": ", name, " has a negative dimension in shape ",
                 shapeStr(operand.shape)));
    if (!operand.strides.empty() && operand.strides.size() != operand.shape.size())
      fail(cat(desc.op, ": ", name, " has ", operand.strides.size(), " strides for rank ",
               operand.shape.size()));
    if (operand.shape.size() > 16)
      fail(cat(desc.op, ": ", name, " has rank ", operand.shape.size(),
               "; the kernels support rank <= 16"));
  };
  for (size_t i = 0; i < desc.inputs.size(); ++i)
    if (desc.inputs[i])
      check(*desc.inputs[i], cat("input ", i));
  for (size_t i = 0; i < desc.outputs.size(); ++i)
    check(desc.outputs[i], cat("output ", i));
}

int64_t numElements(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

std::vector<int64_t> contiguousStrides(const std::vector<int64_t> &shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (int64_t i = int64_t(shape.size()) - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * std::max<int64_t>(shape[i + 1], 1);
  return strides;
}

bool channelsLast(const KernelOperand &op) {
  std::vector<int64_t> s = op.effectiveStrides();
  if (s.size() < 3 || s[1] != 1)
    return false;
  int64_t expect = op.shape[1];
  for (size_t d = s.size(); d-- > 2;) {
    if (op.shape[d] != 1 && s[d] != expect)
      return false;
    expect *= op.shape[d];
  }
  return op.shape[0] == 1 || s[0] == expect;
}

size_t chainExtraOperands(const std::vector<KernelDesc> &chain) {
  size_t extras = 0;
  for (const KernelDesc &op : chain)
    extras += op.inputs.size() - 1;
  return extras;
}

std::string chainSummary(const std::vector<KernelDesc> &chain) {
  std::string summary;
  for (const KernelDesc &op : chain)
    summary += "+" + op.op.substr(7);
  return summary;
}

std::string avx512Float32Mismatch(const KernelDesc &anchor, const KernelOperand &out) {
  if (!cpuHasAvx512())
    return "the CPU has no AVX-512";
  for (const auto &in : anchor.inputs)
    if (in && in->dtype != CGC_DTYPE_FLOAT32)
      return "an operand is not float32";
  if (out.dtype != CGC_DTYPE_FLOAT32)
    return "the result is not float32";
  return "";
}

bool broadcastShapes(const std::vector<int64_t> &a, const std::vector<int64_t> &b,
                     std::vector<int64_t> &result) {
  size_t rank = std::max(a.size(), b.size());
  result.assign(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1)
      return false;
    result[i] = da == 1 ? db : da;
  }
  return true;
}

std::vector<int64_t> broadcastStrides(const KernelOperand &operand,
                                      const std::vector<int64_t> &target) {
  std::vector<int64_t> strides(target.size(), 0);
  std::vector<int64_t> own = operand.effectiveStrides();
  size_t offset = target.size() - operand.shape.size();
  for (size_t i = 0; i < operand.shape.size(); ++i)
    strides[offset + i] = operand.shape[i] == 1 ? 0 : own[i];
  return strides;
}

//===----------------------------------------------------------------------===//
// CPU features, threads, scratch
//===----------------------------------------------------------------------===//

bool cpuHasAvx512() {
  static const bool has = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
           __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
           __builtin_cpu_supports("bmi2");
  }();
  return has;
}

namespace {
/// Recently freed scratch blocks of this thread.
struct ScratchCache {
  struct Block {
    void *ptr;
    size_t bytes;
  };
  std::vector<Block> blocks;
  size_t cachedBytes = 0;
  static constexpr size_t kMaxBlocks = 8;
  static constexpr size_t kMaxBytes = size_t(512) << 20;

  ~ScratchCache() {
    for (Block &b : blocks)
      std::free(b.ptr);
  }
  void *take(size_t bytes, size_t &got) {
    size_t best = blocks.size();
    for (size_t i = 0; i < blocks.size(); ++i)
      if (blocks[i].bytes >= bytes && blocks[i].bytes <= 4 * bytes + 4096 &&
          (best == blocks.size() || blocks[i].bytes < blocks[best].bytes))
        best = i;
    if (best == blocks.size())
      return nullptr;
    Block b = blocks[best];
    blocks.erase(blocks.begin() + best);
    cachedBytes -= b.bytes;
    got = b.bytes;
    return b.ptr;
  }
  void give(void *ptr, size_t bytes) {
    blocks.push_back({ptr, bytes});
    cachedBytes += bytes;
    while (blocks.size() > kMaxBlocks || cachedBytes > kMaxBytes) {
      // Evict the oldest.
      cachedBytes -= blocks.front().bytes;
      std::free(blocks.front().ptr);
      blocks.erase(blocks.begin());
    }
  }
};
thread_local ScratchCache scratchCache;
} // namespace

void Scratch::allocate(size_t bytes) {
  if (ptr_) {
    scratchCache.give(ptr_, bytes_);
    ptr_ = nullptr;
    bytes_ = 0;
  }
  if (bytes == 0)
    return;
  size_t got = 0;
  if (void *p = scratchCache.take(bytes, got)) {
    ptr_ = p;
    bytes_ = got;
    return;
  }
  size_t rounded = (bytes + 63) / 64 * 64;
  ptr_ = std::aligned_alloc(64, rounded);
  if (!ptr_)
    throw std::bad_alloc();
  bytes_ = rounded;
}

AlignedBuffer::AlignedBuffer(size_t bytes) : bytes_(bytes) {
  if (bytes == 0)
    return;
  if (bytes >= WeightArena::kMinBytes && activeConfig().weightArena)
    if (WeightArena *arena = WeightArena::shared())
      if ((ptr_ = arena->allocate(bytes))) {
        arena_ = true;
        return;
      }
  ptr_ = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
  if (!ptr_)
    throw std::bad_alloc();
}

AlignedBuffer::~AlignedBuffer() {
  if (arena_)
    WeightArena::shared()->release(ptr_, bytes_);
  else
    std::free(ptr_);
}


Scratch::~Scratch() {
  if (ptr_)
    scratchCache.give(ptr_, bytes_);
}

} // namespace cgc::cpu
