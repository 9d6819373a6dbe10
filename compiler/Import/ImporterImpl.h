//===- ImporterImpl.h - The ONNX importer's internals -----------*- C++ -*-===//
//
// Shared by the graph walker (Importer.cpp) and the op converters
// (Convert*.cpp): the import state, the per-node context a converter works
// with, and the converter registry.
//
// Converters see ONNX nodes and build cgc_op ops through NodeContext::create,
// which infers the result types with the op's shape function, verifies the
// op, and folds it when every operand is a small constant: constant
// subgraphs (shape computations) collapse into constants whose values later
// converters read as attributes.
//
//===----------------------------------------------------------------------===//

#ifndef CGC_COMPILER_IMPORT_IMPORTERIMPL_H
#define CGC_COMPILER_IMPORT_IMPORTERIMPL_H

#include "cgc/IR/CGCOps.h"
#include "cgc/IR/CGCTypes.h"
#include "cgc_op/IR/CGCOpOps.h"
#include "compiler/Import/ConstantStore.h"
#include "compiler/Import/HostTensor.h"
#include "compiler/Import/Importer.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

#include "onnx/onnx_pb.h"

#include <map>
#include <memory>
#include <optional>

namespace onnx {
class OpSchema;
} // namespace onnx

namespace cgc::import {

class Importer;
class NodeContext;

/// ONNX domain -> opset version.
using OpsetMap = std::map<std::string, int>;

/// The ONNX value names visible while converting a graph, a subgraph or a
/// function body. A null Value marks an absent optional input.
struct Scope {
  llvm::StringMap<mlir::Value> values;
  /// The enclosing scope (subgraphs see outer values); null for the main
  /// graph and for function bodies, which are isolated.
  const Scope *parent = nullptr;
  /// Whether names here are those of the main graph (whose ONNX-inferred
  /// types the importer checks its results against).
  bool isMainGraph = false;

  std::optional<mlir::Value> lookup(llvm::StringRef name) const {
    for (const Scope *scope = this; scope; scope = scope->parent) {
      auto it = scope->values.find(name);
      if (it != scope->values.end())
        return it->second;
    }
    return std::nullopt;
  }
};

/// ONNX sequence and optional values. cgc's IR holds tensors only, so these
/// exist only while importing, as compile-time aggregates of tensor values:
/// an `unrealized_conversion_cast` marked with kAggregateAttr whose operands
/// are the items and whose result (a tuple) stands for the aggregate in
/// scopes. Sequence ops rearrange the items; graph outputs expand them into
/// tensor results (`y[0]`, `y[1]`, ...); nothing else may read them, and
/// the casts are gone by the end of the import.
struct Aggregate {
  enum class Kind { Sequence, Optional };
  Kind kind = Kind::Sequence;
  /// A sequence's tensors in order; an optional's value (a tensor or a
  /// sequence), or none when it holds no value.
  llvm::SmallVector<mlir::Value> items;
  /// A sequence whose length is decided at run time (what a Loop steered at
  /// run time appends to): its value is the first `count` items (int64,
  /// rank 0). Null: all of them. Only the ops that opt in read such a
  /// sequence (NodeContext::sequenceInput).
  mlir::Value count;
};
inline constexpr llvm::StringLiteral kAggregateAttr = "cgc.onnx_aggregate";
/// On a sequence whose last operand is its run-time length (Aggregate::count).
inline constexpr llvm::StringLiteral kAggregateCountAttr = "cgc.onnx_counted";
/// The aggregate `value` stands for, if it is one.
std::optional<Aggregate> getAggregate(mlir::Value value);
/// "a sequence", "an optional" or "a tensor", for diagnostics.
std::string describeValueKind(mlir::Value value);

/// A converter: builds the ops of one ONNX node and sets ctx.outputs.
using ConverterFn = mlir::LogicalResult (*)(NodeContext &ctx);

class ConverterRegistry {
public:
  void add(llvm::StringRef opType, ConverterFn fn, llvm::StringRef domain = "");
  ConverterFn lookup(llvm::StringRef domain, llvm::StringRef opType) const;

private:
  llvm::StringMap<ConverterFn> converters;
};

/// All converters (built once).
const ConverterRegistry &getConverters();

void registerElementwiseConverters(ConverterRegistry &registry);
void registerTensorConverters(ConverterRegistry &registry);
void registerNNConverters(ConverterRegistry &registry);
void registerReductionConverters(ConverterRegistry &registry);
void registerRNNConverters(ConverterRegistry &registry);
void registerControlFlowConverters(ConverterRegistry &registry);
void registerQuantizationConverters(ConverterRegistry &registry);
void registerEinsumConverter(ConverterRegistry &registry);
void registerTrainingConverters(ConverterRegistry &registry);
void registerLinearAlgebraConverters(ConverterRegistry &registry);
void registerTextConverters(ConverterRegistry &registry);
void registerDetectionConverters(ConverterRegistry &registry);
void registerSequenceConverters(ConverterRegistry &registry);
/// Whether ops of `opType` (default domain) take sequence and optional
/// values (the sequence and optional ops, Identity, If, Loop); every other
/// op is refused them at the node.
bool takesAggregates(llvm::StringRef opType);

/// Computes the results of `op` on constant operands (null for an absent
/// optional operand). Returns failure, without a diagnostic, for ops or
/// element types the folder does not evaluate.
mlir::LogicalResult foldOperation(mlir::Operation *op,
                                  llvm::ArrayRef<const HostTensor *> operands,
                                  llvm::SmallVectorImpl<HostTensor> &results);

/// The name diagnostics and the names of imported constants give a node:
/// its name, else its first named output, else "<unnamed>".
std::string nodeLabel(const onnx::NodeProto &node);

/// The CGC element type for an ONNX TensorProto.DataType, or null.
mlir::Type getElementTypeForONNX(mlir::MLIRContext *context, int dataType);
/// The name of an ONNX TensorProto.DataType ("FLOAT", "STRING", ...).
std::string getONNXDataTypeName(int dataType);

/// A layer norm written out op by op (FoldLayerNorm.cpp): the graph's nodes
/// `nodes` compute LayerNormalization(x, scale, bias) over the last axis,
/// which `fused` is.
struct LayerNormFold {
  /// The first node (a ReduceMean): where `fused` is converted.
  size_t first = 0;
  std::vector<size_t> nodes;
  onnx::NodeProto fused;
  std::string x, scale, bias;
  /// The length of scale and bias: x's last dimension must equal it.
  int64_t length = 0;
};
/// The decomposed layer norms of `graph` (disjoint).
std::vector<LayerNormFold> findDecomposedLayerNorms(const onnx::GraphProto &graph);

/// Decodes an ONNX tensor held in memory (raw_data or the typed fields; not
/// external data) into a HostTensor. Returns an error message, empty on
/// success.
std::string decodeTensorProto(const onnx::TensorProto &tensor,
                              HostTensor &result);

/// Where a constant's data lives.
struct ConstantInfo {
  /// Its name: a ConstantStore entry (`inStore`) or a name reserved for one.
  std::string name;
  bool inStore = false;
  /// The values, when known on the host (folded results, small constants);
  /// filled lazily from the store for small entries.
  std::shared_ptr<const HostTensor> host;
};

/// The import of one model.
class Importer {
public:
  Importer(mlir::MLIRContext *context, const ImportOptions &options,
           llvm::StringRef path, onnx::ModelProto &model,
           ConstantStore &store);

  /// Converts the (validated, shape-bound) main graph.
  mlir::FailureOr<mlir::OwningOpRef<ModuleOp>> run();

  //===--------------------------------------------------------------------===//
  // Used by converters
  //===--------------------------------------------------------------------===//

  mlir::MLIRContext *getContext() const { return context; }
  mlir::OpBuilder &getBuilder() { return builder; }
  const ImportOptions &getOptions() const { return options; }
  llvm::StringRef getPath() const { return path; }

  /// The location of `node`.
  mlir::Location getNodeLoc(const onnx::NodeProto &node) const;

  /// A `cgc.constant` for store entry `name` (one per name).
  mlir::Value getStoreConstant(llvm::StringRef name, mlir::Location loc);
  /// A new constant holding `value`, named after `nameHint`.
  mlir::Value createConstant(HostTensor value, llvm::StringRef nameHint,
                             mlir::Location loc);
  /// The values of `value` if it is a constant with at most `limit`
  /// elements (default: the fold limit), else null.
  const HostTensor *getConstantValue(mlir::Value value,
                                     int64_t limit = -1);
  bool isConstant(mlir::Value value) const {
    return constants.count(value) != 0;
  }

  /// Builds `opName` with the inferred result types and verifies it; folds
  /// it into constants when every operand is a small constant. Returns
  /// failure after a diagnostic at `loc`.
  mlir::LogicalResult
  buildOp(mlir::Location loc, llvm::StringRef opName, mlir::ValueRange operands,
          llvm::ArrayRef<mlir::NamedAttribute> attributes, unsigned numResults,
          llvm::SmallVectorImpl<mlir::Value> &results);

  /// Converts one node in `scope` under `opsets`, binding its outputs in
  /// `scope`. `locOverride` locates the ops (nodes of a function body take
  /// the location of the node that called it).
  mlir::LogicalResult convertNode(const onnx::NodeProto &node, Scope &scope,
                                  const OpsetMap &opsets,
                                  std::optional<mlir::Location> locOverride);
  /// Expands the function body of ctx's node (a model-local function or the
  /// op schema's body).
  mlir::LogicalResult expandFunction(NodeContext &ctx);
  /// Converts the nodes of `graph` (a subgraph of an If/Loop/Scan, already
  /// validated) in `scope`.
  mlir::LogicalResult convertSubgraphNodes(const onnx::GraphProto &graph,
                                           Scope &scope,
                                           const OpsetMap &opsets,
                                           std::optional<mlir::Location> loc);
  /// Converts `graph` once more (an If branch, a loop iteration) in a new
  /// scope nested in `parent`, its inputs bound to `inputs`; returns its
  /// outputs. Constants it creates are named `prefix`/...
  mlir::FailureOr<llvm::SmallVector<mlir::Value>>
  inlineSubgraph(const onnx::GraphProto &graph, const Scope &parent,
                 llvm::ArrayRef<mlir::Value> inputs, const OpsetMap &opsets,
                 std::optional<mlir::Location> loc, llvm::StringRef prefix);

  /// A value standing for `aggregate` (see Aggregate).
  mlir::Value createAggregate(const Aggregate &aggregate, mlir::Location loc);

  /// The names of the graph inputs `value` is computed from (for the
  /// --freeze-input hint).
  llvm::SmallVector<std::string> getGraphInputsFeeding(mlir::Value value);

  /// Whether folded results with `numElements` elements are kept on the
  /// host.
  int64_t getFoldLimit() const { return options.foldLimit; }
  /// The name for constants created while converting the current node.
  llvm::StringRef getNameHint() const { return nameHint; }

  /// Records that `rows` (a result whose dimension `axis` is an upper bound)
  /// holds `count` valid entries along it at run time (rank-0 int64): `rows`
  /// may only reach graph outputs through ops computing entry by entry
  /// (propagateRows), with the extent on dimension 0, and those outputs
  /// return `count` beside them. `hint` ends the errors that refuse it (the
  /// way to compute it at compile time instead).
  void addDataDependentRows(mlir::Value rows, mlir::Value count, llvm::StringRef what,
                            int64_t axis = 0, llvm::StringRef hint = {}) {
    dataDependentRows.push_back({rows, count, what.str(), hint.str(), axis});
  }
  /// The count recorded for `value` (through Identity ops), or null.
  mlir::Value getRowCount(mlir::Value value) const;
  /// The dimension of `value` whose extent getRowCount gives.
  int64_t getRowsAxis(mlir::Value value) const;

  /// The model-local function for (domain, name), or null.
  const onnx::FunctionProto *getLocalFunction(llvm::StringRef domain,
                                              llvm::StringRef name) const;

private:
  mlir::LogicalResult createEntryPoint();
  mlir::LogicalResult bindOutputs();
  mlir::LogicalResult checkAgainstONNXType(NodeContext &ctx,
                                           llvm::StringRef name,
                                           mlir::Value value);
  void finalize();
  std::string reserveName(llvm::StringRef base);
  mlir::Value insertConstantOp(llvm::StringRef name, TensorType type,
                               mlir::Location loc);

  mlir::MLIRContext *context;
  const ImportOptions &options;
  std::string path;
  onnx::ModelProto &model;
  ConstantStore &store;
  mlir::OpBuilder builder;

  mlir::OwningOpRef<ModuleOp> module;
  EntryPointOp entryPoint;
  /// The last cgc.constant at the top of the entry block (new constants go
  /// after it), or null.
  mlir::Operation *lastConstant = nullptr;
  llvm::DenseMap<mlir::Value, ConstantInfo> constants;
  llvm::StringMap<mlir::Value> storeConstants;
  llvm::StringSet<> reservedNames;
  /// Entry block argument -> ONNX input name.
  llvm::SmallVector<std::string> argumentNames;
  Scope mainScope;
  OpsetMap modelOpsets;
  /// Types ONNX shape inference found for main-graph values.
  llvm::StringMap<const onnx::TypeProto *> onnxTypes;
  llvm::StringMap<const onnx::FunctionProto *> localFunctions;
  /// Name given to constants folded while converting the current node.
  std::string nameHint;
  /// Prefix of names inside function bodies ("node/").
  std::string namePrefix;
  unsigned functionDepth = 0;
  struct DataDependentRows {
    mlir::Value rows, count;
    std::string what, hint;
    int64_t axis;
  };
  llvm::SmallVector<DataDependentRows> dataDependentRows;
  /// Every value holding data-dependent rows, with its count: the recorded
  /// ones and the results of ops computing row by row from them
  /// (propagateRows).
  llvm::DenseMap<mlir::Value, mlir::Value> rowCounts;
  /// The dimension holding the rows, for those not on dimension 0.
  llvm::DenseMap<mlir::Value, int64_t> rowAxes;
  mlir::LogicalResult propagateRows();
};

/// What a converter sees of one ONNX node.
class NodeContext {
public:
  NodeContext(Importer &importer, const onnx::NodeProto &node, int opset,
              mlir::Location loc, const onnx::OpSchema *schema, Scope &scope,
              const OpsetMap &opsets, llvm::SmallVector<mlir::Value> inputs);

  Importer &importer;
  const onnx::NodeProto &node;
  /// The opset version of the node's domain.
  int opset;
  mlir::Location loc;
  /// The ONNX schema for the node at `opset`, or null (local functions).
  const onnx::OpSchema *schema;
  /// Set when the node belongs to a function body: every op (of nested
  /// subgraphs too) takes this location, that of the calling node.
  std::optional<mlir::Location> locOverride;
  Scope &scope;
  const OpsetMap &opsets;
  /// One per node input; null where an optional input is absent.
  llvm::SmallVector<mlir::Value> inputs;
  /// Set by the converter: one per node output (null where the output is
  /// not requested).
  llvm::SmallVector<mlir::Value> outputs;

  llvm::StringRef getOpType() const { return node.op_type(); }
  mlir::MLIRContext *getContext() const { return importer.getContext(); }
  mlir::OpBuilder &getBuilder() const { return importer.getBuilder(); }

  //===--- Inputs and outputs ----------------------------------------------===//

  unsigned getNumInputs() const { return inputs.size(); }
  bool hasInput(unsigned i) const { return i < inputs.size() && inputs[i]; }
  mlir::Value input(unsigned i) const {
    return i < inputs.size() ? inputs[i] : mlir::Value();
  }
  TensorType inputType(unsigned i) const {
    return llvm::cast<TensorType>(inputs[i].getType());
  }
  unsigned getNumOutputs() const { return node.output_size(); }
  bool hasOutput(unsigned i) const {
    return static_cast<int>(i) < node.output_size() && !node.output(i).empty();
  }
  /// Input `i` as a sequence's tensors; a diagnostic if it is not a
  /// sequence.
  /// A sequence input's tensors. A sequence whose length is decided at run
  /// time is an error unless `count` is given, which then receives its count
  /// (null for a sequence of known length).
  mlir::FailureOr<llvm::SmallVector<mlir::Value>> sequenceInput(unsigned i,
                                                                mlir::Value *count = nullptr);
  /// Sets output `i` to a new sequence or optional.
  mlir::LogicalResult setAggregateOutput(unsigned i, const Aggregate &aggregate);

  /// The formal name of input `i` in the schema ("X", "shape", ...).
  std::string getInputName(unsigned i) const;

  /// The input's values if it is a small constant, else null.
  const HostTensor *constantInput(unsigned i) const;
  /// The input's values; a diagnostic (with a --freeze-input hint) if it is
  /// not known at import time.
  mlir::FailureOr<const HostTensor *> requireConstantInput(unsigned i);
  /// A constant input read as a list of integers (a scalar gives one).
  mlir::FailureOr<llvm::SmallVector<int64_t>> requireIntsInput(unsigned i);
  /// A constant scalar (or one-element) input as a double.
  mlir::FailureOr<double> requireScalarInput(unsigned i);

  //===--- Attributes ------------------------------------------------------===//

  const onnx::AttributeProto *getAttr(llvm::StringRef name) const;
  bool hasAttr(llvm::StringRef name) const { return getAttr(name); }
  int64_t getInt(llvm::StringRef name, int64_t defaultValue) const;
  float getFloat(llvm::StringRef name, float defaultValue) const;
  std::string getString(llvm::StringRef name,
                        llvm::StringRef defaultValue = "") const;
  llvm::SmallVector<int64_t> getInts(llvm::StringRef name) const;
  llvm::SmallVector<float> getFloats(llvm::StringRef name) const;
  std::vector<std::string> getStrings(llvm::StringRef name) const;
  const onnx::TensorProto *getTensor(llvm::StringRef name) const;
  const onnx::GraphProto *getGraph(llvm::StringRef name) const;

  //===--- Diagnostics -----------------------------------------------------===//

  mlir::InFlightDiagnostic emitError() const;
  mlir::LogicalResult fail(const llvm::Twine &message) const;
  /// "<what> is not supported" at the node.
  mlir::LogicalResult unsupported(const llvm::Twine &what) const;
  /// Normalizes a possibly negative axis against `rank`.
  mlir::FailureOr<int64_t> normalizeAxis(int64_t axis, int64_t rank,
                                         llvm::StringRef what = "axis") const;

  //===--- Building ops ----------------------------------------------------===//

  template <typename OpTy>
  mlir::Value create(mlir::ValueRange operands,
                     llvm::ArrayRef<mlir::NamedAttribute> attributes = {}) {
    llvm::SmallVector<mlir::Value, 1> results;
    if (mlir::failed(importer.buildOp(loc, OpTy::getOperationName(), operands,
                                      attributes, 1, results)))
      return {};
    return results.front();
  }
  template <typename OpTy>
  mlir::FailureOr<llvm::SmallVector<mlir::Value>>
  createN(mlir::ValueRange operands,
          llvm::ArrayRef<mlir::NamedAttribute> attributes, unsigned count) {
    llvm::SmallVector<mlir::Value> results;
    if (mlir::failed(importer.buildOp(loc, OpTy::getOperationName(), operands,
                                      attributes, count, results)))
      return mlir::failure();
    return results;
  }

  mlir::NamedAttribute named(llvm::StringRef name, mlir::Attribute value) const;
  mlir::Attribute i64(int64_t value) const;
  mlir::Attribute i64s(llvm::ArrayRef<int64_t> values) const;
  mlir::Attribute f32(double value) const;
  mlir::Attribute f32s(llvm::ArrayRef<float> values) const;
  mlir::Attribute f64(double value) const;
  mlir::Attribute boolean(bool value) const;
  mlir::Attribute str(llvm::StringRef value) const;

  /// A constant holding `value`.
  mlir::Value constant(HostTensor value);
  /// A rank-0 constant of `kind` holding `value`.
  mlir::Value scalar(ElementKind kind, double value);
  /// A rank-0 constant of the element type of `like`.
  mlir::Value scalarLike(mlir::Value like, double value);

  /// Common compositions (each returns null after a diagnostic).
  mlir::Value reshape(mlir::Value value, llvm::ArrayRef<int64_t> shape);
  mlir::Value cast(mlir::Value value, ElementKind kind);
  mlir::Value transpose(mlir::Value value, llvm::ArrayRef<int64_t> perm);
  mlir::Value slice(mlir::Value value, int64_t axis, int64_t start, int64_t end,
                    int64_t step = 1);
  /// Broadcasting arithmetic for decompositions (null if an operand is).
  mlir::Value add(mlir::Value a, mlir::Value b);
  mlir::Value sub(mlir::Value a, mlir::Value b);
  mlir::Value mul(mlir::Value a, mlir::Value b);
  mlir::Value div(mlir::Value a, mlir::Value b);

  /// Sets output 0 (for single-output converters); fails on a null value.
  mlir::LogicalResult setOutput(mlir::Value value) {
    if (!value)
      return mlir::failure();
    outputs.assign(1, value);
    return mlir::success();
  }

  /// Imports the node through its function body instead (the schema's or a
  /// model-local function).
  mlir::LogicalResult expandFunctionBody() {
    return importer.expandFunction(*this);
  }

private:
  llvm::StringMap<const onnx::AttributeProto *> attributes;
};

/// The element kind of a cgc tensor value.
inline ElementKind kindOf(mlir::Value value) {
  return getElementKind(value.getType());
}
inline llvm::ArrayRef<int64_t> shapeOf(mlir::Value value) {
  return llvm::cast<TensorType>(value.getType()).getShape();
}
inline int64_t rankOf(mlir::Value value) { return shapeOf(value).size(); }
/// The element count of a static shape the importer has already checked
/// (its products fit in int64).
inline int64_t product(llvm::ArrayRef<int64_t> values) {
  int64_t result = 1;
  for (int64_t value : values)
    result *= value;
  return result;
}

} // namespace cgc::import

#endif // CGC_COMPILER_IMPORT_IMPORTERIMPL_H
