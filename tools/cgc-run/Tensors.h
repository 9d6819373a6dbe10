//===- Tensors.h - cgc-run's host tensors: .npy, .pb, compare ---*- C++ -*-===//
//
// Host tensors read from NumPy .npy files (format 1.0-3.0, C order) or ONNX
// TensorProto .pb files (read with a small protobuf wire-format reader: no
// protobuf library needed), written as .npy, filled with random values, and
// compared with numpy.allclose semantics.
//
//===----------------------------------------------------------------------===//

#ifndef CGC_TOOLS_CGC_RUN_TENSORS_H
#define CGC_TOOLS_CGC_RUN_TENSORS_H

#include "cgc/dtype.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace cgc::run {

struct HostTensor {
  std::string name; // from a .pb's name field, if any
  cgc_dtype_t dtype = CGC_DTYPE_INVALID;
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;

  int64_t elements() const;
  /// Element i as a double (bool, integers, float16/bfloat16, float, double).
  double at(int64_t i) const;
};

/// A number read from a file (ONNX's TensorProto.DataType) as a dtype:
/// CGC_DTYPE_INVALID unless it names one (converting any int to the enum is
/// undefined behaviour outside its range).
cgc_dtype_t dtypeFromInt(int64_t value);

/// "float32[1,3,224,224]".
std::string describe(cgc_dtype_t dtype, const std::vector<int64_t> &shape);

/// Reads a .npy or .pb file (by extension; other names are sniffed). False
/// with a message naming the file.
bool readTensorFile(const std::string &path, HostTensor &tensor, std::string &error);
bool readNpy(const std::string &path, HostTensor &tensor, std::string &error);
bool readTensorProto(const std::string &path, HostTensor &tensor, std::string &error);
bool writeNpy(const std::string &path, const HostTensor &tensor, std::string &error);

/// What an ONNX model's graph input or output is.
enum class ValueKind { Tensor, Sequence, Optional, OptionalSequence, Other };
const char *valueKindName(ValueKind kind);
/// The kinds of the graph inputs and outputs of a binary ONNX model file,
/// by name (read with the wire-format reader: no protobuf library).
bool readModelValueKinds(const std::string &path, std::map<std::string, ValueKind> &inputs,
                         std::map<std::string, ValueKind> &outputs, std::string &error);

/// An ONNX value from a .pb file: a tensor, the tensors of a sequence
/// (named `name[0]`, `name[1]`, ...: the compiled model's inputs and outputs
/// for it), or an optional holding one of those or nothing.
struct HostValue {
  std::string name;
  bool isSequence = false, isOptional = false, present = true;
  std::vector<HostTensor> tensors;
};
/// Reads `path` as the value `name` of `kind` (a TensorProto or .npy for a
/// tensor, a SequenceProto, an OptionalProto).
bool readValueFile(const std::string &path, const std::string &name, ValueKind kind,
                   HostValue &value, std::string &error);
/// The name stored in a SequenceProto or OptionalProto file (field 1), or
/// empty.
std::string storedValueName(const std::string &path);

/// Random values: floats uniform in [-1, 1), integers in [0, 10), bools.
void fillRandom(HostTensor &tensor, uint64_t seed);

/// Tolerances of a comparison (all >= 0): an element matches when
/// |got - want| <= atol + rtol * |want| + stol * scale, where scale is the
/// largest finite |want| of the whole output. stol makes the absolute floor
/// follow the output's magnitude: an output of scale 1e-9 is not "matched" by
/// zeros or by its own negation, as a fixed atol of 1e-5 would let it be.
struct Tolerances {
  double rtol = 1e-4, atol = 0, stol = 1e-5;
};

struct Comparison {
  bool matches = true;
  int64_t mismatches = 0;
  double maxAbsError = 0;
  /// |got - want| / |want| over every element with want != 0 (infinite where
  /// want == 0 and got differs): no element is left out.
  double maxRelError = 0;
  /// ||got - want||_2 / ||want||_2 over the finite elements (0 when both are
  /// zero, infinite when only want is).
  double normwiseRelError = 0;
  double scale = 0;           // max |want| over the finite elements
  int64_t firstMismatch = -1; // flat index
  double got = 0, want = 0;   // at the first mismatch
  std::string error;          // dtype or shape differ
};

/// Elementwise with Tolerances (NaN equals NaN, equal infinities match;
/// integers and bools must be equal); shapes and dtypes must agree.
Comparison compare(const HostTensor &got, const HostTensor &want, const Tolerances &tolerances);

/// "[0, 2, 1]" for a flat index in a shape.
std::string indexString(int64_t flat, const std::vector<int64_t> &shape);

/// min / max / mean and the first values, one line.
std::string summarize(const HostTensor &tensor, int firstValues = 5);

} // namespace cgc::run

#endif // CGC_TOOLS_CGC_RUN_TENSORS_H
