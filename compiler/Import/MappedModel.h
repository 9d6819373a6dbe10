//===- MappedModel.h - Parse an ONNX model leaving weights mapped -*- C++ -*-===//
//
// Parsing a ModelProto with protobuf copies every tensor's raw_data into a
// std::string: for a 400 MB model that is 400 MB of fresh pages to fault in.
// parseMappedModel instead walks the protobuf wire format of the memory-mapped
// file, builds a copy of the model without the raw_data of the main graph's
// initializers and node tensor attributes (a few kilobytes to parse), and
// returns where those bytes lie in the mapping. The ConstantStore then points
// into the file: no copy is made and pages are read only when used.
//
//===----------------------------------------------------------------------===//

#ifndef CGC_COMPILER_IMPORT_MAPPEDMODEL_H
#define CGC_COMPILER_IMPORT_MAPPEDMODEL_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/MemoryBuffer.h"

#include "onnx/onnx_pb.h"

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace cgc::import {

struct MappedTensorData {
  /// The mapped file (owner of every range below).
  std::shared_ptr<llvm::MemoryBuffer> file;
  /// raw_data of graph.initializer(i), where it had one.
  std::vector<std::optional<llvm::ArrayRef<uint8_t>>> initializers;
  /// raw_data of the tensor attribute graph.node(n).attribute(a).t.
  std::map<std::pair<int, int>, llvm::ArrayRef<uint8_t>> nodeAttributes;
};

/// Parses the binary ModelProto in `file`. Returns an error message (empty
/// on success) describing where the wire format is broken.
std::string parseMappedModel(std::shared_ptr<llvm::MemoryBuffer> file,
                             onnx::ModelProto &model, MappedTensorData &data);

} // namespace cgc::import

#endif // CGC_COMPILER_IMPORT_MAPPEDMODEL_H
