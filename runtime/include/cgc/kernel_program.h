//===- cgc/kernel_program.h - The portable kernel program format -*- C++ -*-===//
//
// A kernel program is a list of cgc_op layers over byte ranges of bound
// buffers: the "shader" that the fallback target compiles a subgraph into and
// that a driver's compute path executes (part 'CGKP', JSON), and the form the
// CPU driver's MLIR JIT lowers Partition IR to before fusing kernels.
// No MLIR is needed to read or run one.
//
// Each kernel names a cgc_op op ("cgc_op.convolution"), carries the op's
// attributes, and gives one operand descriptor per ODS operand (null for an
// absent optional operand; variadic operands are flattened in order) and per
// result. Operands address either a binding (a bind point / root parameter)
// or a temporary (program-private memory), at a byte offset, with a dtype,
// static shape and element strides (empty: contiguous row-major).
//
//===----------------------------------------------------------------------===//

#ifndef CGC_KERNEL_PROGRAM_H
#define CGC_KERNEL_PROGRAM_H

#include "cgc/dtype.h"
#include "cgc/op_kind.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cgc {

/// An attribute value of a cgc_op op.
struct AttrValue {
  enum class Kind { Int, Float, Bool, String, Ints, Floats, DType };
  Kind kind = Kind::Int;
  int64_t i = 0;
  double f = 0;
  bool b = false;
  std::string s;
  std::vector<int64_t> ints;
  std::vector<double> floats;
  cgc_dtype_t dtype = CGC_DTYPE_INVALID;

  static AttrValue ofInt(int64_t v) { AttrValue a; a.kind = Kind::Int; a.i = v; return a; }
  static AttrValue ofFloat(double v) { AttrValue a; a.kind = Kind::Float; a.f = v; return a; }
  static AttrValue ofBool(bool v) { AttrValue a; a.kind = Kind::Bool; a.b = v; return a; }
  static AttrValue ofString(std::string v) { AttrValue a; a.kind = Kind::String; a.s = std::move(v); return a; }
  static AttrValue ofInts(std::vector<int64_t> v) { AttrValue a; a.kind = Kind::Ints; a.ints = std::move(v); return a; }
  static AttrValue ofFloats(std::vector<double> v) { AttrValue a; a.kind = Kind::Floats; a.floats = std::move(v); return a; }
  static AttrValue ofDType(cgc_dtype_t v) { AttrValue a; a.kind = Kind::DType; a.dtype = v; return a; }
  bool operator==(const AttrValue &other) const;
};

/// Where an operand's bytes are.
struct KernelOperand {
  enum class Storage { Binding, Temporary };
  cgc_dtype_t dtype = CGC_DTYPE_INVALID;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides; // in elements; empty means contiguous
  Storage storage = Storage::Binding;
  uint32_t index = 0;  // binding or temporary index
  uint64_t offset = 0; // bytes from the start of the binding or temporary

  int64_t numElements() const;
  /// Strides in elements, computed when contiguous.
  std::vector<int64_t> effectiveStrides() const;
  bool isContiguous() const;
  /// Bytes from the first to one past the last addressed element.
  uint64_t byteSpan() const;
  bool operator==(const KernelOperand &other) const;
};

struct KernelDesc {
  std::string op; // "cgc_op.relu"
  /// The op as an enum (OpKind::Unknown for a name cgc does not know).
  OpKind kind() const { return opKindOf(op); }
  std::vector<std::pair<std::string, AttrValue>> attrs; // sorted by name
  std::vector<std::optional<KernelOperand>> inputs;
  std::vector<KernelOperand> outputs;

  const AttrValue *attr(std::string_view name) const;
  int64_t getInt(std::string_view name, int64_t fallback) const;
  double getFloat(std::string_view name, double fallback) const;
  bool getBool(std::string_view name, bool fallback) const;
  std::string getString(std::string_view name, std::string fallback) const;
  std::vector<int64_t> getInts(std::string_view name) const;
  std::vector<double> getFloats(std::string_view name) const;
  /// Adds or replaces an attribute, keeping them sorted.
  void setAttr(std::string name, AttrValue value);
  bool operator==(const KernelDesc &other) const;
};

struct KernelProgram {
  static constexpr uint32_t kVersion = 1;
  struct Binding {
    std::string name;
    uint64_t bytes = 0; // the smallest range the binding must provide
    /// A constant bind point (`!cgc.memref<constant ...>`): its bytes never
    /// change while it is bound at a given address, so kernels may prepare
    /// them once (pre-packed weights). JSON field "constant", absent = false.
    bool constant = false;
    /// An intermediate only this program reads and writes (the partition
    /// argument's `cgc.internal`): a driver may store it in any layout of
    /// the same byte size. JSON field "internal", absent = false.
    bool internal = false;
    /// The element type of the partition argument it binds, which a driver
    /// reports with the binding (DDI pfnGetProgramBindPointsCgc). JSON field
    /// "dtype" (its name), absent = CGC_DTYPE_INVALID: unknown.
    cgc_dtype_t dtype = CGC_DTYPE_INVALID;
  };
  struct Temporary {
    uint64_t bytes = 0;
    uint64_t alignment = 64;
    /// The `internal` binding whose bytes this temporary may live in (its
    /// value was that bind point's), or -1: a driver may keep it there,
    /// where the compiler planned it (by the partition's invocation order),
    /// as long as its own order of steps never has two values live in the
    /// same bytes. JSON field "binding", absent = -1. At most one temporary
    /// per binding, of the binding's size.
    int64_t binding = -1;
  };
  std::vector<Binding> bindings;
  std::vector<Temporary> temporaries;
  std::vector<KernelDesc> kernels;

  /// Checks that every operand lies inside its binding or temporary and names
  /// a known dtype; returns false with a message naming the kernel and operand.
  bool validate(std::string &error) const;
  bool operator==(const KernelProgram &other) const;
};

/// JSON text of a program (the 'CGKP' part).
std::string serializeKernelProgram(const KernelProgram &program);
/// Parses what serializeKernelProgram wrote; false with a message on any
/// malformed or out-of-range field (also runs validate()).
bool deserializeKernelProgram(std::string_view text, KernelProgram &program,
                              std::string &error);

} // namespace cgc

#endif // CGC_KERNEL_PROGRAM_H
