//===- Importer.cpp - The conversion of an ONNX graph to Input IR ---------===//
//
// Walks a validated, shape-bound ONNX graph (ModelLoader.cpp prepares it) and
// builds the entry point: graph inputs become arguments, initializers
// `cgc.constant`s, each node the cgc_op ops of its converter or of its
// expanded function body.
//
//===----------------------------------------------------------------------===//

#include "compiler/Import/ImporterImpl.h"

#include "compiler/Import/Locations.h"
#include "compiler/Import/OnnxGlue.h"
#include "cgc/checked.h"

#include "mlir/IR/Verifier.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/STLExtras.h"
#include <set>

using namespace mlir;

namespace cgc::import {

//===----------------------------------------------------------------------===//
// Converter registry
//===----------------------------------------------------------------------===//

static std::string registryKey(StringRef domain, StringRef opType) {
  return (domain + "::" + opType).str();
}

void ConverterRegistry::add(StringRef opType, ConverterFn fn,
                            StringRef domain) {
  converters[registryKey(domain, opType)] = fn;
}

ConverterFn ConverterRegistry::lookup(StringRef domain,
                                      StringRef opType) const {
  auto it = converters.find(registryKey(domain, opType));
  return it == converters.end() ? nullptr : it->second;
}

const ConverterRegistry &getConverters() {
  static const ConverterRegistry registry = [] {
    ConverterRegistry r;
    registerElementwiseConverters(r);
    registerTensorConverters(r);
    registerNNConverters(r);
    registerReductionConverters(r);
    registerRNNConverters(r);
    registerControlFlowConverters(r);
    registerQuantizationConverters(r);
    registerEinsumConverter(r);
    registerTrainingConverters(r);
    registerLinearAlgebraConverters(r);
    registerTextConverters(r);
    registerDetectionConverters(r);
    registerSequenceConverters(r);
    return r;
  }();
  return registry;
}

//===----------------------------------------------------------------------===//
// Element types
//===----------------------------------------------------------------------===//

Type getElementTypeForONNX(MLIRContext *context, int dataType) {
  switch (dataType) {
  case onnx::TensorProto::FLOAT:
  case onnx::TensorProto::UINT8:
  case onnx::TensorProto::INT8:
  case onnx::TensorProto::UINT16:
  case onnx::TensorProto::INT16:
  case onnx::TensorProto::INT32:
  case onnx::TensorProto::INT64:
  case onnx::TensorProto::BOOL:
  case onnx::TensorProto::FLOAT16:
  case onnx::TensorProto::DOUBLE:
  case onnx::TensorProto::UINT32:
  case onnx::TensorProto::UINT64:
  case onnx::TensorProto::BFLOAT16:
    // cgc::ElementKind uses ONNX's numbering.
    return cgc::getElementType(context, static_cast<ElementKind>(dataType));
  default:
    return {};
  }
}

std::string getONNXDataTypeName(int dataType) {
  if (onnx::TensorProto::DataType_IsValid(dataType))
    return onnx::TensorProto::DataType_Name(
        static_cast<onnx::TensorProto::DataType>(dataType));
  return "data type " + std::to_string(dataType);
}

/// Reads the typed-field or raw_data payload of a tensor into `result`.
std::string decodeTensorProto(const onnx::TensorProto &tensor,
                              HostTensor &result) {
  int dataType = tensor.data_type();
  switch (dataType) {
  case onnx::TensorProto::FLOAT:
  case onnx::TensorProto::UINT8:
  case onnx::TensorProto::INT8:
  case onnx::TensorProto::UINT16:
  case onnx::TensorProto::INT16:
  case onnx::TensorProto::INT32:
  case onnx::TensorProto::INT64:
  case onnx::TensorProto::BOOL:
  case onnx::TensorProto::FLOAT16:
  case onnx::TensorProto::DOUBLE:
  case onnx::TensorProto::UINT32:
  case onnx::TensorProto::UINT64:
  case onnx::TensorProto::BFLOAT16:
    break;
  default:
    return "tensor '" + tensor.name() + "' has element type " +
           getONNXDataTypeName(dataType) + ", which cgc does not support";
  }
  auto kind = static_cast<ElementKind>(dataType);
  SmallVector<int64_t> shape(tensor.dims().begin(), tensor.dims().end());
  size_t elementSize = getByteSize(kind);
  std::optional<uint64_t> bytes = tensorBytes(shape, elementSize);
  if (!bytes)
    return "tensor '" + tensor.name() + "': " +
           tensorSizeError(shape, elementSize);
  int64_t count = *bytes / elementSize;
  if (tensor.data_location() == onnx::TensorProto::EXTERNAL)
    return "tensor '" + tensor.name() + "' holds external data";
  if (tensor.has_raw_data() || !tensor.raw_data().empty()) {
    const std::string &raw = tensor.raw_data();
    if (raw.size() != *bytes)
      return "tensor '" + tensor.name() + "' has " +
             std::to_string(raw.size()) + " bytes of raw data but its shape "
             "and type need " + std::to_string(*bytes);
    result = HostTensor::fromBytes(
        kind, shape,
        ArrayRef<uint8_t>(reinterpret_cast<const uint8_t *>(raw.data()),
                          raw.size()));
    return "";
  }
  auto sizeError = [&](int64_t have) {
    return "tensor '" + tensor.name() + "' has " + std::to_string(have) +
           " values but its shape needs " + std::to_string(count);
  };
  // The typed field's length is checked before anything is allocated: the
  // shape alone may claim terabytes.
  int64_t have = 0;
  switch (dataType) {
  case onnx::TensorProto::FLOAT: have = tensor.float_data_size(); break;
  case onnx::TensorProto::DOUBLE: have = tensor.double_data_size(); break;
  case onnx::TensorProto::INT64: have = tensor.int64_data_size(); break;
  case onnx::TensorProto::UINT32:
  case onnx::TensorProto::UINT64: have = tensor.uint64_data_size(); break;
  default: have = tensor.int32_data_size(); break;
  }
  if (have != count)
    return sizeError(have);
  result = HostTensor(kind, shape);
  switch (dataType) {
  case onnx::TensorProto::FLOAT:
    if (tensor.float_data_size() != count)
      return sizeError(tensor.float_data_size());
    for (int64_t i = 0; i < count; ++i)
      result.setFloat(i, tensor.float_data(i));
    return "";
  case onnx::TensorProto::DOUBLE:
    if (tensor.double_data_size() != count)
      return sizeError(tensor.double_data_size());
    for (int64_t i = 0; i < count; ++i)
      result.setFloat(i, tensor.double_data(i));
    return "";
  case onnx::TensorProto::INT64:
    if (tensor.int64_data_size() != count)
      return sizeError(tensor.int64_data_size());
    for (int64_t i = 0; i < count; ++i)
      result.setInt(i, tensor.int64_data(i));
    return "";
  case onnx::TensorProto::UINT32:
  case onnx::TensorProto::UINT64:
    if (tensor.uint64_data_size() != count)
      return sizeError(tensor.uint64_data_size());
    for (int64_t i = 0; i < count; ++i)
      result.setInt(i, static_cast<int64_t>(tensor.uint64_data(i)));
    return "";
  case onnx::TensorProto::FLOAT16:
  case onnx::TensorProto::BFLOAT16: {
    if (tensor.int32_data_size() != count)
      return sizeError(tensor.int32_data_size());
    std::vector<uint8_t> bytes(count * 2);
    for (int64_t i = 0; i < count; ++i) {
      uint16_t bits = static_cast<uint16_t>(tensor.int32_data(i));
      bytes[2 * i] = bits & 0xff;
      bytes[2 * i + 1] = bits >> 8;
    }
    result = HostTensor::fromBytes(kind, shape, bytes);
    return "";
  }
  default:
    // INT32, INT16, INT8, UINT16, UINT8, BOOL live in int32_data.
    if (tensor.int32_data_size() != count)
      return sizeError(tensor.int32_data_size());
    for (int64_t i = 0; i < count; ++i)
      result.setInt(i, tensor.int32_data(i));
    return "";
  }
}

//===----------------------------------------------------------------------===//
// Importer: constants and op building
//===----------------------------------------------------------------------===//

static std::string normalizeDomain(StringRef domain) {
  return domain == "ai.onnx" ? "" : domain.str();
}

Importer::Importer(MLIRContext *context, const ImportOptions &options,
                   StringRef path, onnx::ModelProto &model,
                   ConstantStore &store)
    : context(context), options(options), path(path.str()), model(model),
      store(store), builder(context) {}

Location Importer::getNodeLoc(const onnx::NodeProto &node) const {
  std::string name = node.name();
  if (name.empty()) {
    for (const std::string &output : node.output())
      if (!output.empty()) {
        name = output;
        break;
      }
  }
  if (name.empty())
    name = "<unnamed>";
  return getONNXNodeLoc(context, name, node.op_type(), path);
}

std::string Importer::reserveName(StringRef base) {
  std::string candidate = base.empty() ? "constant" : base.str();
  for (unsigned suffix = 1;
       store.contains(candidate) || reservedNames.contains(candidate);
       ++suffix)
    candidate = (base + "_" + Twine(suffix)).str();
  reservedNames.insert(candidate);
  return candidate;
}

Value Importer::insertConstantOp(StringRef name, TensorType type,
                                 Location loc) {
  OpBuilder::InsertionGuard guard(builder);
  Block &block = entryPoint.getBody().front();
  if (lastConstant)
    builder.setInsertionPointAfter(lastConstant);
  else
    builder.setInsertionPointToStart(&block);
  OperationState state(loc, ConstantOp::getOperationName());
  state.addAttribute("name", builder.getStringAttr(name));
  state.addTypes(type.withConstant(true));
  Operation *op = builder.create(state);
  lastConstant = op;
  return op->getResult(0);
}

Value Importer::getStoreConstant(StringRef name, Location loc) {
  auto it = storeConstants.find(name);
  if (it != storeConstants.end())
    return it->second;
  const ConstantStore::Entry *entry = store.lookup(name);
  assert(entry && "no such constant in the store");
  Type element = getElementTypeForONNX(context, entry->dtype);
  auto type = TensorType::get(entry->shape, element, true);
  Value value = insertConstantOp(name, type, loc);
  ConstantInfo info;
  info.name = name.str();
  info.inStore = true;
  constants[value] = std::move(info);
  storeConstants[name] = value;
  return value;
}

Value Importer::createConstant(HostTensor value, StringRef nameHint,
                               Location loc) {
  std::string name = reserveName(nameHint);
  Type element = cgc::getElementType(context, value.getKind());
  auto type = TensorType::get(value.getShape(), element, true);
  Value result = insertConstantOp(name, type, loc);
  ConstantInfo info;
  info.name = name;
  info.host = std::make_shared<HostTensor>(std::move(value));
  constants[result] = std::move(info);
  return result;
}

const HostTensor *Importer::getConstantValue(Value value, int64_t limit) {
  if (limit < 0)
    limit = options.foldLimit;
  auto it = constants.find(value);
  if (it == constants.end())
    return nullptr;
  ConstantInfo &info = it->second;
  if (info.host)
    return info.host->getNumElements() <= limit ? info.host.get() : nullptr;
  const ConstantStore::Entry *entry = store.lookup(info.name);
  if (!entry || entry->getNumElements() > limit)
    return nullptr;
  info.host = std::make_shared<HostTensor>(HostTensor::fromBytes(
      static_cast<ElementKind>(entry->dtype), entry->shape, entry->getBytes()));
  return info.host.get();
}

LogicalResult Importer::buildOp(Location loc, StringRef opName,
                                ValueRange operands,
                                ArrayRef<NamedAttribute> attributes,
                                unsigned numResults,
                                SmallVectorImpl<Value> &results) {
  for (Value operand : operands)
    if (!operand)
      return failure(); // an earlier step failed and reported why
  OperationState state(loc, opName);
  state.addOperands(operands);
  state.addAttributes(attributes);
  state.addTypes(SmallVector<Type>(numResults, builder.getNoneType()));
  Operation *op = Operation::create(state);
  auto inferable = dyn_cast<InferTypeOpInterface>(op);
  assert(inferable && "cgc_op ops infer their result types");
  SmallVector<Type> types;
  if (failed(inferable.inferReturnTypes(
          context, loc, op->getOperands(), op->getRawDictionaryAttrs(),
          op->getPropertiesStorage(), op->getRegions(), types))) {
    op->destroy();
    return failure();
  }
  if (types.size() != numResults) {
    op->destroy();
    return emitError(loc) << "internal error: " << opName << " infers "
                          << types.size() << " results, expected "
                          << numResults;
  }
  for (auto [index, type] : llvm::enumerate(types)) {
    auto tensor = cast<TensorType>(type);
    size_t elementSize = getByteSize(tensor.getElementKind());
    if (!tensorBytes(tensor.getShape(), elementSize)) {
      op->destroy();
      return emitError(loc) << "result " << index << " of " << opName
                            << ": "
                            << tensorSizeError(tensor.getShape(), elementSize);
    }
  }
  for (auto [result, type] : llvm::zip(op->getResults(), types))
    result.setType(type);
  builder.insert(op);
  if (failed(mlir::verify(op))) {
    op->erase();
    return failure();
  }

  // Fold when every operand is a small constant and the results are small.
  bool foldable = llvm::all_of(op->getResultTypes(), [&](Type type) {
    return cast<TensorType>(type).getNumElements() <= options.foldLimit;
  });
  for (Value operand : operands)
    foldable = foldable && getConstantValue(operand);
  SmallVector<const HostTensor *> hostOperands;
  SmallVector<HostTensor> folded;
  if (foldable) {
    for (Value operand : operands)
      hostOperands.push_back(getConstantValue(operand));
    if (succeeded(foldOperation(op, hostOperands, folded))) {
      for (HostTensor &value : folded)
        results.push_back(createConstant(std::move(value), nameHint, loc));
      op->erase();
      return success();
    }
  }
  llvm::append_range(results, op->getResults());
  return success();
}

SmallVector<std::string> Importer::getGraphInputsFeeding(Value value) {
  std::set<std::string> names;
  llvm::DenseSet<Value> seen;
  SmallVector<Value> worklist{value};
  while (!worklist.empty()) {
    Value current = worklist.pop_back_val();
    if (!seen.insert(current).second)
      continue;
    if (auto argument = dyn_cast<BlockArgument>(current)) {
      if (argument.getArgNumber() < argumentNames.size())
        names.insert(argumentNames[argument.getArgNumber()]);
      continue;
    }
    if (Operation *op = current.getDefiningOp())
      llvm::append_range(worklist, op->getOperands());
  }
  return SmallVector<std::string>(names.begin(), names.end());
}

const onnx::FunctionProto *Importer::getLocalFunction(StringRef domain,
                                                      StringRef name) const {
  auto it = localFunctions.find(registryKey(normalizeDomain(domain), name));
  return it == localFunctions.end() ? nullptr : it->second;
}

//===----------------------------------------------------------------------===//
// Importer: nodes and function bodies
//===----------------------------------------------------------------------===//

/// "float[1,3,224,224]", "float[N,?]", "sequence", ...
static std::string describeONNXType(const onnx::TypeProto &type) {
  if (!type.has_tensor_type())
    return type.has_sequence_type() ? "a sequence"
           : type.has_optional_type() ? "an optional"
           : type.has_map_type()      ? "a map"
                                      : "an unknown type";
  std::string text = getONNXDataTypeName(type.tensor_type().elem_type());
  for (char &c : text)
    c = static_cast<char>(std::tolower(c));
  if (!type.tensor_type().has_shape())
    return text + "[...]";
  text += "[";
  bool first = true;
  for (const auto &dim : type.tensor_type().shape().dim()) {
    if (!first)
      text += ",";
    first = false;
    if (dim.has_dim_value())
      text += std::to_string(dim.dim_value());
    else if (dim.has_dim_param())
      text += dim.dim_param();
    else
      text += "?";
  }
  return text + "]";
}

/// Whether `type` differs from the ONNX tensor type `onnx` in element type,
/// rank or a known dimension; with `boundedRows`, dimension 0 is an upper
/// bound (data-dependent rows) and not compared.
static bool differsFromONNXType(const onnx::TypeProto::Tensor &onnx, TensorType type,
                                std::optional<int64_t> boundedAxis) {
  if (onnx.elem_type() != 0 && onnx.elem_type() != static_cast<int>(type.getElementKind()))
    return true;
  if (!onnx.has_shape())
    return false;
  const auto &dims = onnx.shape().dim();
  if (dims.size() != type.getRank())
    return true;
  for (int i = 0; i < dims.size(); ++i)
    if (i != boundedAxis && dims[i].has_dim_value() &&
        dims[i].dim_value() != type.getShape()[i])
      return true;
  return false;
}

Value Importer::getRowCount(Value value) const {
  auto propagated = rowCounts.find(value);
  if (propagated != rowCounts.end())
    return propagated->second;
  while (auto identity = value.getDefiningOp<op::IdentityOp>())
    value = identity.getInput();
  for (const DataDependentRows &entry : dataDependentRows)
    if (entry.rows == value)
      return entry.count;
  return {};
}

int64_t Importer::getRowsAxis(Value value) const {
  auto propagated = rowAxes.find(value);
  if (propagated != rowAxes.end())
    return propagated->second;
  while (auto identity = value.getDefiningOp<op::IdentityOp>())
    value = identity.getInput();
  for (const DataDependentRows &entry : dataDependentRows)
    if (entry.rows == value)
      return entry.axis;
  return 0;
}

LogicalResult Importer::checkAgainstONNXType(NodeContext &ctx, StringRef name,
                                             Value value) {
  auto it = onnxTypes.find(name);
  if (it == onnxTypes.end())
    return success();
  if (getAggregate(value)) {
    if (!it->second->has_tensor_type())
      return success();
    return ctx.fail("output '" + name + "' computes to " + describeValueKind(value) +
                    " but ONNX shape inference gives " + describeONNXType(*it->second));
  }
  if (!it->second->has_tensor_type())
    return success();
  auto type = cast<TensorType>(value.getType());
  std::optional<int64_t> rowsAxis;
  if (getRowCount(value))
    rowsAxis = getRowsAxis(value);
  if (!differsFromONNXType(it->second->tensor_type(), type, rowsAxis))
    return success();
  std::string computed;
  llvm::raw_string_ostream os(computed);
  os << Type(type.withConstant(false));
  return ctx.fail("output '" + name + "' computes to " + computed +
                  " but ONNX shape inference gives " +
                  describeONNXType(*it->second));
}

LogicalResult Importer::convertNode(const onnx::NodeProto &node, Scope &scope,
                                    const OpsetMap &opsets,
                                    std::optional<Location> locOverride) {
  Location loc = locOverride ? *locOverride : getNodeLoc(node);
  std::string domain = normalizeDomain(node.domain());
  auto opsetIt = opsets.find(domain);
  if (opsetIt == opsets.end())
    return emitError(loc) << "op domain '" << domain
                          << "' is not imported by the model (opset_import)";
  int opset = opsetIt->second;

  SmallVector<Value> inputs;
  for (const std::string &name : node.input()) {
    if (name.empty()) {
      inputs.push_back(Value());
      continue;
    }
    std::optional<Value> value = scope.lookup(name);
    if (!value)
      return emitError(loc) << "input '" << name << "' is not defined";
    inputs.push_back(*value);
  }

  if (!domain.empty() || !takesAggregates(node.op_type()))
    for (auto [index, value] : llvm::enumerate(inputs))
      if (value && getAggregate(value))
        return emitError(loc) << "input '" << node.input(index) << "' is "
                              << describeValueKind(value) << ", which "
                              << node.op_type()
                              << " does not take (it takes tensors)";

  const onnx::OpSchema *schema =
      onnx_glue::lookupSchema(node.op_type(), domain, opset);
  NodeContext ctx(*this, node, opset, loc, schema, scope, opsets,
                  std::move(inputs));
  ctx.locOverride = locOverride;

  std::string savedHint = nameHint;
  nameHint.clear();
  for (const std::string &output : node.output())
    if (!output.empty()) {
      nameHint = namePrefix + output;
      break;
    }
  LogicalResult converted = failure();
  if (getLocalFunction(domain, node.op_type())) {
    converted = expandFunction(ctx);
  } else if (ConverterFn converter =
                 getConverters().lookup(domain, node.op_type())) {
    converted = converter(ctx);
  } else if (schema && onnx_glue::hasFunctionBody(*schema)) {
    converted = expandFunction(ctx);
  } else {
    converted = ctx.fail("op '" +
                         (domain.empty() ? "" : domain + ".") +
                         node.op_type() + "' (opset " + Twine(opset) +
                         ") is not supported");
  }
  nameHint = savedHint;
  if (failed(converted))
    return failure();

  for (int i = 0; i < node.output_size(); ++i) {
    const std::string &name = node.output(i);
    if (name.empty())
      continue;
    Value value = static_cast<size_t>(i) < ctx.outputs.size()
                      ? ctx.outputs[i]
                      : Value();
    if (!value)
      return ctx.fail("output #" + Twine(i) + " ('" + name + "') of " +
                      node.op_type() + " is not supported by the importer");
    if (scope.isMainGraph && options.onnxShapeInference &&
        failed(checkAgainstONNXType(ctx, name, value)))
      return failure();
    scope.values[name] = value;
  }
  return success();
}

/// The ONNX type of a cgc tensor value.
static onnx::TypeProto toONNXType(Value value) {
  onnx::TypeProto type;
  auto tensor = cast<TensorType>(value.getType());
  auto *tensorType = type.mutable_tensor_type();
  tensorType->set_elem_type(static_cast<int>(tensor.getElementKind()));
  auto *shape = tensorType->mutable_shape();
  for (int64_t dim : tensor.getShape())
    shape->add_dim()->set_dim_value(dim);
  return type;
}

LogicalResult Importer::expandFunction(NodeContext &ctx) {
  const onnx::NodeProto &node = ctx.node;
  if (functionDepth >= 32)
    return ctx.fail("function bodies nest more than 32 deep");

  onnx::FunctionProto built;
  const onnx::FunctionProto *body =
      getLocalFunction(node.domain(), node.op_type());
  if (!body) {
    if (!ctx.schema || !onnx_glue::hasFunctionBody(*ctx.schema))
      return ctx.fail("op '" + node.op_type() +
                      "' has no function body to expand");
    std::vector<onnx::TypeProto> inputTypes;
    for (Value input : ctx.inputs)
      inputTypes.push_back(input ? toONNXType(input) : onnx::TypeProto());
    std::string error =
        onnx_glue::buildFunctionBody(*ctx.schema, node, inputTypes, built);
    if (!error.empty())
      return ctx.fail("cannot build the function body of " + node.op_type() +
                      ": " + error);
    body = &built;
  }

  OpsetMap bodyOpsets = ctx.opsets;
  for (const auto &opset : body->opset_import())
    bodyOpsets[normalizeDomain(opset.domain())] =
        static_cast<int>(opset.version());

  Scope functionScope;
  for (int i = 0; i < body->input_size(); ++i)
    functionScope.values[body->input(i)] = ctx.input(i);

  // Attribute values visible to the body: the node's, then the defaults.
  std::map<std::string, onnx::AttributeProto> attributeValues;
  for (const onnx::AttributeProto &attribute : node.attribute())
    attributeValues[attribute.name()] = attribute;
  if (ctx.schema && !getLocalFunction(node.domain(), node.op_type()))
    for (onnx::AttributeProto &attribute :
         onnx_glue::getSignature(*ctx.schema).defaults)
      attributeValues.emplace(attribute.name(), attribute);

  std::string nodeName = node.name();
  if (nodeName.empty() && node.output_size() > 0)
    nodeName = node.output(0);
  std::string savedPrefix = namePrefix;
  namePrefix = namePrefix + nodeName + "/";
  ++functionDepth;
  LogicalResult result = success();
  for (const onnx::NodeProto &bodyNode : body->node()) {
    onnx::NodeProto inner = bodyNode;
    inner.clear_attribute();
    for (const onnx::AttributeProto &attribute : bodyNode.attribute()) {
      if (attribute.ref_attr_name().empty()) {
        *inner.add_attribute() = attribute;
        continue;
      }
      auto it = attributeValues.find(attribute.ref_attr_name());
      if (it == attributeValues.end())
        continue; // an unset optional attribute
      onnx::AttributeProto *copy = inner.add_attribute();
      *copy = it->second;
      copy->set_name(attribute.name());
    }
    if (failed(convertNode(inner, functionScope, bodyOpsets, ctx.loc))) {
      result = failure();
      break;
    }
  }
  --functionDepth;
  namePrefix = savedPrefix;
  if (failed(result))
    return failure();

  ctx.outputs.assign(node.output_size(), Value());
  for (int i = 0; i < node.output_size(); ++i) {
    if (!ctx.hasOutput(i))
      continue;
    if (i >= body->output_size())
      return ctx.fail("the function body of " + node.op_type() + " has " +
                      Twine(body->output_size()) + " outputs; output #" +
                      Twine(i) + " is requested");
    std::optional<Value> value = functionScope.lookup(body->output(i));
    if (!value || !*value)
      return ctx.fail("the function body of " + node.op_type() +
                      " does not define its output '" + body->output(i) + "'");
    ctx.outputs[i] = *value;
  }
  return success();
}

LogicalResult Importer::convertSubgraphNodes(const onnx::GraphProto &graph,
                                             Scope &scope,
                                             const OpsetMap &opsets,
                                             std::optional<Location> loc) {
  for (const onnx::TensorProto &initializer : graph.initializer()) {
    HostTensor value;
    std::string error = decodeTensorProto(initializer, value);
    if (!error.empty())
      return emitError(loc ? *loc : getONNXFileLoc(context, path)) << error;
    scope.values[initializer.name()] =
        createConstant(std::move(value), namePrefix + initializer.name(),
                       loc ? *loc : getONNXFileLoc(context, path));
  }
  for (const onnx::NodeProto &node : graph.node())
    if (failed(convertNode(node, scope, opsets, loc)))
      return failure();
  return success();
}

FailureOr<SmallVector<Value>>
Importer::inlineSubgraph(const onnx::GraphProto &graph, const Scope &parent,
                         ArrayRef<Value> inputs, const OpsetMap &opsets,
                         std::optional<Location> loc, StringRef prefix) {
  Location where = loc ? *loc : getONNXFileLoc(context, path);
  if (static_cast<size_t>(graph.input_size()) != inputs.size())
    return emitError(where) << "subgraph '" << graph.name() << "' has "
                            << graph.input_size() << " inputs but "
                            << inputs.size() << " are bound";
  Scope scope;
  scope.parent = &parent;
  for (auto [index, input] : llvm::enumerate(graph.input()))
    scope.values[input.name()] = inputs[index];
  std::string savedPrefix = namePrefix;
  namePrefix = (namePrefix + prefix + "/").str();
  LogicalResult converted = convertSubgraphNodes(graph, scope, opsets, loc);
  namePrefix = savedPrefix;
  if (failed(converted))
    return failure();
  SmallVector<Value> outputs;
  for (const onnx::ValueInfoProto &output : graph.output()) {
    std::optional<Value> value = scope.lookup(output.name());
    if (!value || !*value)
      return emitError(where) << "subgraph '" << graph.name()
                              << "' does not compute its output '"
                              << output.name() << "'";
    outputs.push_back(*value);
  }
  return outputs;
}

//===----------------------------------------------------------------------===//
// Importer: the main graph
//===----------------------------------------------------------------------===//

LogicalResult Importer::createEntryPoint() {
  const onnx::GraphProto &graph = model.graph();
  llvm::StringSet<> constantNames;
  for (const onnx::TensorProto &initializer : graph.initializer())
    constantNames.insert(initializer.name());

  SmallVector<Type> argumentTypes;
  for (const onnx::ValueInfoProto &input : graph.input()) {
    if (constantNames.contains(input.name()))
      continue;
    const onnx::TypeProto::Tensor &tensor = input.type().tensor_type();
    SmallVector<int64_t> shape;
    for (const auto &dim : tensor.shape().dim())
      shape.push_back(dim.dim_value());
    Type element = getElementTypeForONNX(context, tensor.elem_type());
    argumentTypes.push_back(TensorType::get(shape, element));
    argumentNames.push_back(input.name());
  }

  {
    OpBuilder detached(context);
    module = ModuleOp::create(detached, getONNXFileLoc(context, path));
  }
  builder.setInsertionPointToEnd(module->getBody());
  OperationState state(getONNXFileLoc(context, path),
                       EntryPointOp::getOperationName());
  EntryPointOp::build(builder, state, "main",
                      builder.getFunctionType(argumentTypes, {}));
  entryPoint = cast<EntryPointOp>(builder.create(state));
  Block &block = entryPoint.addEntryBlock(getONNXFileLoc(context, path));
  for (auto [index, name] : llvm::enumerate(argumentNames)) {
    block.getArgument(index).setLoc(getONNXValueLoc(context, name, path));
    cast<FunctionOpInterface>(entryPoint.getOperation())
        .setArgAttr(index, "cgc.name", builder.getStringAttr(name));
    mainScope.values[name] = block.getArgument(index);
  }
  builder.setInsertionPointToEnd(&block);
  return success();
}

/// Where `op` computes its result row by row from its operands
/// `rowsOperands`, whose dimension `axis` holds a run's rows (the rest, up
/// to the bound, unspecified): row i of the result then reads only row i of
/// those operands, the result's returned dimension holds the same rows, and
/// the rows past the count never reach a row before it. Elementwise ops,
/// slices and reductions that keep the rows' dimension whole, a gather of
/// the rows' data along another axis or of other data at the rows' indices,
/// a concatenation of such along another axis, a reshape keeping the rows'
/// dimension apart, a transpose, an expand that keeps the rows' dimension, a
/// softmax or arg-reduction along another axis, and a matmul of the rows by a
/// matrix. None otherwise.
static std::optional<int64_t> preservedRowsAxis(Operation *op, ArrayRef<unsigned> rowsOperands,
                                                int64_t axis) {
  if (op->getNumResults() != 1 || op->getNumRegions() != 0 ||
      !isa<TensorType>(op->getResult(0).getType()))
    return std::nullopt;
  ArrayRef<int64_t> result = cast<TensorType>(op->getResult(0).getType()).getShape();
  auto shape = [&](unsigned i) {
    return cast<TensorType>(op->getOperand(i).getType()).getShape();
  };
  if (result.empty())
    return std::nullopt;
  for (unsigned i : rowsOperands)
    if (int64_t(shape(i).size()) <= axis)
      return std::nullopt;
  auto only = [&](unsigned i) { return rowsOperands.size() == 1 && rowsOperands[0] == i; };
  auto normalized = [](int64_t a, int64_t rank) { return a < 0 ? a + rank : a; };
  const int64_t rank = shape(rowsOperands.front()).size();
  if (op->hasTrait<op::OpTrait::ElementwiseOp>()) {
    if (llvm::all_of(rowsOperands,
                     [&](unsigned i) { return shape(i).size() == result.size(); }))
      return axis;
    return std::nullopt;
  }
  if (auto slice = dyn_cast<op::SliceOp>(op)) {
    auto starts = slice.getStarts(), ends = slice.getEnds(), steps = slice.getSteps();
    if (int64_t(starts.size()) > axis && cast<IntegerAttr>(starts[axis]).getInt() == 0 &&
        cast<IntegerAttr>(steps[axis]).getInt() == 1 &&
        cast<IntegerAttr>(ends[axis]).getInt() >= shape(0)[axis])
      return axis;
    return std::nullopt;
  }
  if (auto gather = dyn_cast<op::GatherOp>(op)) {
    int64_t along = normalized(gather.getAxis(), shape(0).size());
    if (only(0) && along != axis)
      return along < axis ? axis - 1 + int64_t(shape(1).size()) : axis;
    if (only(1))
      return along + axis;
    return std::nullopt;
  }
  if (auto concat = dyn_cast<op::ConcatOp>(op)) {
    if (rowsOperands.size() == op->getNumOperands() &&
        normalized(concat.getAxis(), result.size()) != axis)
      return axis;
    return std::nullopt;
  }
  if (isa<op::ReshapeOp>(op)) {
    // The rows' dimension stays one dimension of the result, with the same
    // extent and the same elements before it.
    ArrayRef<int64_t> in = shape(0);
    int64_t before = 1;
    for (int64_t d = 0; d < axis; ++d)
      before *= in[d];
    int64_t seen = 1;
    for (int64_t d = 0; d < int64_t(result.size()); ++d) {
      if (seen == before && result[d] == in[axis])
        return d;
      seen *= result[d];
      if (seen > before)
        break;
    }
    return std::nullopt;
  }
  if (isa<op::ExpandOp>(op)) {
    if (shape(0).size() == result.size() && result[axis] == shape(0)[axis])
      return axis;
    return std::nullopt;
  }
  if (auto transpose = dyn_cast<op::TransposeOp>(op)) {
    auto perm = transpose.getPerm();
    for (auto [j, entry] : llvm::enumerate(perm))
      if (cast<IntegerAttr>(entry).getInt() == axis)
        return int64_t(j);
    return std::nullopt;
  }
  if (isa<op::SoftmaxOp, op::LogSoftmaxOp, op::HardmaxOp, op::ArgMaxOp, op::ArgMinOp>(op)) {
    int64_t along = normalized(op->getAttrOfType<IntegerAttr>("axis").getInt(), rank);
    bool keepdims = !op->hasAttr("keepdims") || op->getAttrOfType<BoolAttr>("keepdims").getValue();
    if (along == axis || (!keepdims && rank == 1))
      return std::nullopt;
    return !keepdims && along < axis ? axis - 1 : axis;
  }
  if (op->getName().getStringRef().starts_with("cgc_op.reduce_")) {
    auto axes = op->getAttrOfType<ArrayAttr>("axes");
    auto keep = op->getAttrOfType<BoolAttr>("keepdims");
    bool keepdims = !keep || keep.getValue();
    if (!axes || axes.empty())
      return std::nullopt;
    int64_t shift = 0;
    for (Attribute entry : axes) {
      int64_t along = normalized(cast<IntegerAttr>(entry).getInt(), rank);
      if (along == axis)
        return std::nullopt;
      shift += !keepdims && along < axis;
    }
    return axis - shift;
  }
  if (isa<op::MatMulOp>(op)) {
    if (only(0) && shape(0).size() == result.size() && axis + 1 < rank)
      return axis;
    return std::nullopt;
  }
  return std::nullopt;
}

LogicalResult Importer::propagateRows() {
  for (const DataDependentRows &entry : dataDependentRows) {
    rowCounts[entry.rows] = entry.count;
    rowAxes[entry.rows] = entry.axis;
  }
  if (rowCounts.empty())
    return success();
  // The entry block is in program order: each op's operands are settled
  // before it.
  for (Operation &op : entryPoint.getBody().front()) {
    SmallVector<unsigned> rowsOperands;
    Value count;
    int64_t axis = 0;
    bool mixed = false;
    for (auto [i, operand] : llvm::enumerate(op.getOperands())) {
      auto it = rowCounts.find(operand);
      if (it == rowCounts.end())
        continue;
      int64_t operandAxis = rowAxes.lookup(operand);
      mixed = mixed || (count && (count != it->second || axis != operandAxis));
      rowsOperands.push_back(i);
      count = it->second;
      axis = operandAxis;
    }
    if (rowsOperands.empty())
      continue;
    if (std::optional<int64_t> resultAxis =
            mixed ? std::nullopt : preservedRowsAxis(&op, rowsOperands, axis)) {
      rowCounts[op.getResult(0)] = count;
      rowAxes[op.getResult(0)] = *resultAxis;
      continue;
    }
    const DataDependentRows *origin = &dataDependentRows.front();
    for (const DataDependentRows &entry : dataDependentRows)
      if (entry.count == count)
        origin = &entry;
    std::optional<ONNXNodeLocInfo> reader = getONNXNodeLocInfo(op.getLoc());
    std::string by = reader && !reader->node.empty()
                         ? "node '" + reader->node.str() + "' (" + reader->opType.str() + ")"
                         : op.getName().getStringRef().str();
    return emitError(origin->rows.getLoc())
           << origin->what
           << " has a data-dependent number of rows, which cgc returns as graph outputs "
              "and through ops that compute row by row; here "
           << by
           << (mixed ? " reads rows of two different counts"
                     : " would read across its rows (docs/importer.md, \"Data-dependent "
                       "rows\")")
           << origin->hint;
  }
  return success();
}

LogicalResult Importer::bindOutputs() {
  const onnx::GraphProto &graph = model.graph();
  if (failed(propagateRows()))
    return failure();
  SmallVector<Value> results;
  SmallVector<std::string> names;
  // Outputs with data-dependent rows: (result index, its count).
  SmallVector<std::pair<unsigned, Value>> rowOutputs;
  for (const onnx::ValueInfoProto &output : graph.output()) {
    Location loc = getONNXValueLoc(context, output.name(), path);
    std::optional<Value> found = mainScope.lookup(output.name());
    if (!found || !*found)
      return emitError(loc) << "graph output '" << output.name()
                            << "' is not computed by the graph";
    // A sequence output is one result per tensor, `y[0]`, `y[1]`, ...; an
    // optional one is its value (a tensor `y`, or a sequence's tensors), or
    // no result when it holds none.
    SmallVector<std::pair<std::string, Value>> pieces;
    std::optional<Aggregate> aggregate = getAggregate(*found);
    bool declaredTensor = output.type().has_tensor_type();
    if (!aggregate)
      pieces.push_back({output.name(), *found});
    else if (declaredTensor)
      return emitError(loc) << "graph output '" << output.name() << "' is declared as "
                            << describeONNXType(output.type()) << " but computes to "
                            << describeValueKind(*found);
    if (aggregate && aggregate->kind == Aggregate::Kind::Optional &&
        !aggregate->items.empty()) {
      Value held = aggregate->items.front();
      aggregate = getAggregate(held);
      if (!aggregate)
        pieces.push_back({output.name(), held});
    }
    if (aggregate && aggregate->count) {
      std::string freeze;
      for (const std::string &input : getGraphInputsFeeding(aggregate->count))
        freeze += " --freeze-input " + input + "=FILE.pb";
      return emitError(loc) << "graph output '" << output.name()
                            << "' is a sequence whose length is decided at run time (appended "
                               "to by a Loop steered at run time); return it stacked "
                               "(ConcatFromSequence along axis 0) instead"
                            << (freeze.empty() ? ""
                                               : ", or unroll the loop exactly by binding what "
                                                 "steers it with" + freeze);
    }
    if (aggregate && aggregate->kind == Aggregate::Kind::Sequence)
      for (auto [i, item] : llvm::enumerate(aggregate->items))
        pieces.push_back({output.name() + "[" + std::to_string(i) + "]", item});
    for (auto &[name, piece] : pieces) {
      Value value = piece;
      if (cast<TensorType>(value.getType()).getIsConstant()) {
        // Results are never `constant`; copy the constant out.
        OperationState state(loc, op::IdentityOp::getOperationName());
        state.addOperands(value);
        state.addTypes(cast<TensorType>(value.getType()).withConstant(false));
        value = builder.create(state)->getResult(0);
      }
      auto type = cast<TensorType>(value.getType());
      Value rowCount = getRowCount(value);
      std::optional<int64_t> rowsAxis;
      if (rowCount) {
        rowsAxis = getRowsAxis(value);
        if (*rowsAxis != 0) {
          const DataDependentRows *origin = &dataDependentRows.front();
          for (const DataDependentRows &entry : dataDependentRows)
            if (entry.count == rowCount)
              origin = &entry;
          return emitError(origin->rows.getLoc())
                 << origin->what << " reaches graph output '" << output.name()
                 << "' with its data-dependent extent on dimension " << *rowsAxis
                 << "; cgc returns data-dependent extents on dimension 0 (transposed, as "
                    "torch.nonzero exports it)"
                 << origin->hint;
        }
        rowOutputs.push_back({static_cast<unsigned>(results.size()), rowCount});
      }
      if (declaredTensor &&
          differsFromONNXType(output.type().tensor_type(), type, rowsAxis))
        return emitError(loc) << "graph output '" << output.name() << "' is declared as "
                              << describeONNXType(output.type()) << " but computes to "
                              << Type(type);
      results.push_back(value);
      names.push_back(name);
    }
  }
  // Each count is an output of its own, after the model's outputs.
  size_t numModelResults = names.size();
  for (auto [index, count] : rowOutputs) {
    std::string name = names[index] + ".rows";
    while (llvm::is_contained(names, name))
      name += "_";
    results.push_back(count);
    names.push_back(name);
  }
  OperationState state(getONNXFileLoc(context, path),
                       ReturnOp::getOperationName());
  state.addOperands(results);
  builder.create(state);
  entryPoint.setFunctionType(builder.getFunctionType(
      entryPoint.getFunctionType().getInputs(), ValueRange(results).getTypes()));
  auto function = cast<FunctionOpInterface>(entryPoint.getOperation());
  for (auto [index, name] : llvm::enumerate(names))
    function.setResultAttr(index, "cgc.name", builder.getStringAttr(name));
  for (auto [i, entry] : llvm::enumerate(rowOutputs))
    function.setResultAttr(entry.first, "cgc.rows_from",
                           builder.getStringAttr(names[numModelResults + i]));
  return success();
}

void Importer::finalize() {
  Block &block = entryPoint.getBody().front();
  // Drop what nothing uses (dead ONNX nodes, constants only folding read).
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(block)))
    if (op.use_empty() && !op.hasTrait<OpTrait::IsTerminator>() &&
        isMemoryEffectFree(&op))
      op.erase();

  // Register the constants computed at import time; keep only what the IR
  // names.
  llvm::StringSet<> used;
  for (ConstantOp constant : block.getOps<ConstantOp>()) {
    used.insert(constant.getName());
    const ConstantInfo &info = constants[constant.getResult()];
    if (info.inStore)
      continue;
    auto type = cast<TensorType>(constant.getType());
    store.add(info.name, static_cast<cgc_dtype_t>(type.getElementKind()),
              type.getShape(), info.host->toBytes());
  }
  store.retain([&](const ConstantStore::Entry &entry) {
    return used.contains(entry.name);
  });
}

/// Whether `fold` may replace its nodes where its first node is converted:
/// x, scale and bias are defined by then, and x is a float tensor whose
/// last dimension is the scale's and bias's length (else the nodes
/// broadcast in a way LayerNormalization does not). Otherwise they are
/// converted one by one.
static bool foldApplies(const LayerNormFold &fold, const Scope &scope) {
  std::optional<Value> x = scope.lookup(fold.x), scale = scope.lookup(fold.scale),
                       bias = scope.lookup(fold.bias);
  if (!x || !*x || !scale || !*scale || !bias || !*bias)
    return false;
  auto type = dyn_cast<TensorType>(x->getType());
  if (!type || type.getShape().empty() || type.getShape().back() != fold.length)
    return false;
  return isFloatKind(type.getElementKind());
}

FailureOr<OwningOpRef<ModuleOp>> Importer::run() {
  const onnx::GraphProto &graph = model.graph();
  for (const onnx::FunctionProto &function : model.functions())
    localFunctions[registryKey(normalizeDomain(function.domain()),
                               function.name())] = &function;
  for (const onnx::OperatorSetIdProto &opset : model.opset_import())
    modelOpsets[normalizeDomain(opset.domain())] =
        static_cast<int>(opset.version());
  if (!modelOpsets.count(""))
    modelOpsets[""] = 1; // IR version 1 models default to opset 1
  for (const onnx::ValueInfoProto &info : graph.value_info())
    onnxTypes[info.name()] = &info.type();

  if (failed(createEntryPoint()))
    return failure();
  mainScope.isMainGraph = true;
  for (const onnx::TensorProto &initializer : graph.initializer())
    mainScope.values[initializer.name()] = getStoreConstant(
        initializer.name(), getONNXValueLoc(context, initializer.name(), path));
  // Layer norms written out op by op become one op each where x's last
  // dimension is the length of their scale and bias.
  std::map<size_t, const LayerNormFold *> foldAt;
  std::vector<LayerNormFold> folds = findDecomposedLayerNorms(graph);
  for (const LayerNormFold &fold : folds)
    foldAt[fold.first] = &fold;
  std::set<size_t> folded;
  for (int i = 0; i < graph.node_size(); ++i) {
    if (folded.count(size_t(i)))
      continue;
    auto fold = foldAt.find(size_t(i));
    if (fold != foldAt.end() && foldApplies(*fold->second, mainScope)) {
      if (failed(convertNode(fold->second->fused, mainScope, modelOpsets, std::nullopt)))
        return failure();
      folded.insert(fold->second->nodes.begin(), fold->second->nodes.end());
      continue;
    }
    if (failed(convertNode(graph.node(i), mainScope, modelOpsets, std::nullopt)))
      return failure();
  }
  if (failed(bindOutputs()))
    return failure();
  finalize();
  if (failed(mlir::verify(*module)))
    return failure();
  return std::move(module);
}

//===----------------------------------------------------------------------===//
// NodeContext
//===----------------------------------------------------------------------===//

NodeContext::NodeContext(Importer &importer, const onnx::NodeProto &node,
                         int opset, Location loc,
                         const onnx::OpSchema *schema, Scope &scope,
                         const OpsetMap &opsets, SmallVector<Value> inputs)
    : importer(importer), node(node), opset(opset), loc(loc), schema(schema),
      scope(scope), opsets(opsets), inputs(std::move(inputs)) {
  for (const onnx::AttributeProto &attribute : node.attribute())
    attributes[attribute.name()] = &attribute;
}

std::string NodeContext::getInputName(unsigned i) const {
  std::string name = schema ? onnx_glue::getInputName(*schema, i) : "";
  return name.empty() ? "#" + std::to_string(i) : name;
}

FailureOr<SmallVector<Value>> NodeContext::sequenceInput(unsigned i, Value *count) {
  std::optional<Aggregate> aggregate =
      hasInput(i) ? getAggregate(inputs[i]) : std::nullopt;
  if (!aggregate || aggregate->kind != Aggregate::Kind::Sequence) {
    (void)fail("input '" + getInputName(i) + "' must be a sequence, got " +
               (hasInput(i) ? describeValueKind(inputs[i]) : std::string("none")));
    return failure();
  }
  if (count)
    *count = aggregate->count;
  else if (aggregate->count) {
    (void)fail("input '" + getInputName(i) + "' is a sequence whose length is decided at "
               "run time (appended to by a Loop steered at run time), which " +
               getOpType() + " cannot read: ConcatFromSequence along axis 0 and "
               "SequenceLength can");
    return failure();
  }
  return aggregate->items;
}

LogicalResult NodeContext::setAggregateOutput(unsigned i, const Aggregate &aggregate) {
  if (outputs.size() <= i)
    outputs.resize(i + 1);
  outputs[i] = importer.createAggregate(aggregate, loc);
  return success();
}

std::optional<Aggregate> getAggregate(Value value) {
  auto cast = value ? value.getDefiningOp<UnrealizedConversionCastOp>() : nullptr;
  if (!cast)
    return std::nullopt;
  auto kind = cast->getAttrOfType<StringAttr>(kAggregateAttr);
  if (!kind)
    return std::nullopt;
  Aggregate aggregate;
  aggregate.kind = kind.getValue() == "sequence" ? Aggregate::Kind::Sequence
                                                 : Aggregate::Kind::Optional;
  llvm::append_range(aggregate.items, cast.getInputs());
  if (cast->hasAttr(kAggregateCountAttr)) {
    aggregate.count = aggregate.items.back();
    aggregate.items.pop_back();
  }
  return aggregate;
}

std::string describeValueKind(Value value) {
  std::optional<Aggregate> aggregate = getAggregate(value);
  if (!aggregate)
    return "a tensor";
  if (aggregate->kind == Aggregate::Kind::Sequence)
    return "a sequence";
  return aggregate->items.empty() ? "an empty optional" : "an optional";
}

Value Importer::createAggregate(const Aggregate &aggregate, Location loc) {
  OperationState state(loc, UnrealizedConversionCastOp::getOperationName());
  state.addOperands(aggregate.items);
  if (aggregate.count) {
    state.addOperands(aggregate.count);
    state.addAttribute(kAggregateCountAttr, builder.getUnitAttr());
  }
  state.addTypes(TupleType::get(context, ValueRange(state.operands).getTypes()));
  state.addAttribute(kAggregateAttr,
                     builder.getStringAttr(aggregate.kind == Aggregate::Kind::Sequence
                                               ? "sequence"
                                               : "optional"));
  return builder.create(state)->getResult(0);
}

const HostTensor *NodeContext::constantInput(unsigned i) const {
  if (!hasInput(i))
    return nullptr;
  return importer.getConstantValue(inputs[i]);
}

FailureOr<const HostTensor *> NodeContext::requireConstantInput(unsigned i) {
  if (!hasInput(i)) {
    (void)fail("input '" + getInputName(i) + "' is required");
    return failure();
  }
  if (const HostTensor *value = constantInput(i))
    return value;
  InFlightDiagnostic diag = emitError();
  diag << "input '" << getInputName(i) << "' of node '"
       << nodeLabel(node) << "' ("
       << node.op_type() << ") must be known at compile time";
  if (importer.isConstant(inputs[i])) {
    diag << " but it is a constant of "
         << llvm::cast<TensorType>(inputs[i].getType()).getNumElements()
         << " elements, more than the import-time limit of "
         << importer.getFoldLimit();
    return failure();
  }
  SmallVector<std::string> feeding = importer.getGraphInputsFeeding(inputs[i]);
  if (feeding.empty()) {
    diag << "; it is computed by ops the importer cannot evaluate";
    return failure();
  }
  bool isArgument = llvm::isa<BlockArgument>(inputs[i]);
  diag << "; " << (isArgument ? "bind it" : "it is computed from graph input");
  if (!isArgument) {
    diag << (feeding.size() > 1 ? "s " : " ");
    llvm::interleaveComma(feeding, diag,
                          [&](const std::string &n) { diag << "'" << n << "'"; });
    diag << ": bind " << (feeding.size() > 1 ? "them" : "it");
  }
  diag << " with";
  for (const std::string &name : feeding)
    diag << " --freeze-input " << name << "=FILE.pb";
  return failure();
}

FailureOr<SmallVector<int64_t>> NodeContext::requireIntsInput(unsigned i) {
  FailureOr<const HostTensor *> value = requireConstantInput(i);
  if (failed(value))
    return failure();
  if ((*value)->getRank() > 1) {
    (void)fail("input '" + getInputName(i) + "' must be a scalar or 1-D, got rank " +
               Twine((*value)->getRank()));
    return failure();
  }
  return (*value)->getInts();
}

FailureOr<double> NodeContext::requireScalarInput(unsigned i) {
  FailureOr<const HostTensor *> value = requireConstantInput(i);
  if (failed(value))
    return failure();
  if ((*value)->getNumElements() != 1) {
    (void)fail("input '" + getInputName(i) + "' must hold one value, got " +
               Twine((*value)->getNumElements()));
    return failure();
  }
  return (*value)->getFloat(0);
}

const onnx::AttributeProto *NodeContext::getAttr(StringRef name) const {
  auto it = attributes.find(name);
  return it == attributes.end() ? nullptr : it->second;
}

int64_t NodeContext::getInt(StringRef name, int64_t defaultValue) const {
  const onnx::AttributeProto *attribute = getAttr(name);
  return attribute && attribute->has_i() ? attribute->i() : defaultValue;
}

float NodeContext::getFloat(StringRef name, float defaultValue) const {
  const onnx::AttributeProto *attribute = getAttr(name);
  return attribute && attribute->has_f() ? attribute->f() : defaultValue;
}

std::string NodeContext::getString(StringRef name,
                                   StringRef defaultValue) const {
  const onnx::AttributeProto *attribute = getAttr(name);
  return attribute && attribute->has_s() ? attribute->s() : defaultValue.str();
}

SmallVector<int64_t> NodeContext::getInts(StringRef name) const {
  const onnx::AttributeProto *attribute = getAttr(name);
  if (!attribute)
    return {};
  return SmallVector<int64_t>(attribute->ints().begin(),
                              attribute->ints().end());
}

SmallVector<float> NodeContext::getFloats(StringRef name) const {
  const onnx::AttributeProto *attribute = getAttr(name);
  if (!attribute)
    return {};
  return SmallVector<float>(attribute->floats().begin(),
                            attribute->floats().end());
}

std::vector<std::string> NodeContext::getStrings(StringRef name) const {
  const onnx::AttributeProto *attribute = getAttr(name);
  if (!attribute)
    return {};
  return std::vector<std::string>(attribute->strings().begin(),
                                  attribute->strings().end());
}

const onnx::TensorProto *NodeContext::getTensor(StringRef name) const {
  const onnx::AttributeProto *attribute = getAttr(name);
  return attribute && attribute->has_t() ? &attribute->t() : nullptr;
}

const onnx::GraphProto *NodeContext::getGraph(StringRef name) const {
  const onnx::AttributeProto *attribute = getAttr(name);
  return attribute && attribute->has_g() ? &attribute->g() : nullptr;
}

InFlightDiagnostic NodeContext::emitError() const { return mlir::emitError(loc); }

LogicalResult NodeContext::fail(const Twine &message) const {
  return mlir::emitError(loc) << message;
}

LogicalResult NodeContext::unsupported(const Twine &what) const {
  return mlir::emitError(loc) << what << " is not supported";
}

FailureOr<int64_t> NodeContext::normalizeAxis(int64_t axis, int64_t rank,
                                              StringRef what) const {
  if (axis < -rank || axis >= std::max<int64_t>(rank, 1)) {
    (void)fail(what + " " + Twine(axis) + " is out of range for rank " +
               Twine(rank));
    return failure();
  }
  return axis < 0 ? axis + rank : axis;
}

NamedAttribute NodeContext::named(StringRef name, Attribute value) const {
  return NamedAttribute(StringAttr::get(getContext(), name), value);
}
Attribute NodeContext::i64(int64_t value) const {
  return getBuilder().getI64IntegerAttr(value);
}
Attribute NodeContext::i64s(ArrayRef<int64_t> values) const {
  return getBuilder().getI64ArrayAttr(values);
}
Attribute NodeContext::f32(double value) const {
  return getBuilder().getF32FloatAttr(static_cast<float>(value));
}
Attribute NodeContext::f32s(ArrayRef<float> values) const {
  return getBuilder().getF32ArrayAttr(values);
}
Attribute NodeContext::f64(double value) const {
  return getBuilder().getF64FloatAttr(value);
}
Attribute NodeContext::boolean(bool value) const {
  return getBuilder().getBoolAttr(value);
}
Attribute NodeContext::str(StringRef value) const {
  return getBuilder().getStringAttr(value);
}

Value NodeContext::constant(HostTensor value) {
  return importer.createConstant(std::move(value), importer.getNameHint(),
                                 loc);
}

Value NodeContext::scalar(ElementKind kind, double value) {
  HostTensor tensor(kind, {});
  tensor.setFloat(0, value);
  return constant(std::move(tensor));
}

Value NodeContext::scalarLike(Value like, double value) {
  return scalar(kindOf(like), value);
}

Value NodeContext::reshape(Value value, ArrayRef<int64_t> shape) {
  if (!value)
    return {};
  if (shapeOf(value) == shape && !importer.isConstant(value))
    return value;
  return create<op::ReshapeOp>(value, {named("shape", i64s(shape))});
}

namespace {
template <typename OpTy>
Value binary(NodeContext &ctx, Value a, Value b) {
  if (!a || !b)
    return {};
  return ctx.create<OpTy>({a, b});
}
} // namespace

Value NodeContext::add(Value a, Value b) { return binary<op::AddOp>(*this, a, b); }
Value NodeContext::sub(Value a, Value b) { return binary<op::SubOp>(*this, a, b); }
Value NodeContext::mul(Value a, Value b) { return binary<op::MulOp>(*this, a, b); }
Value NodeContext::div(Value a, Value b) { return binary<op::DivOp>(*this, a, b); }

Value NodeContext::cast(Value value, ElementKind kind) {
  if (!value)
    return {};
  if (kindOf(value) == kind)
    return value;
  return create<op::CastOp>(
      value,
      {named("to", TypeAttr::get(cgc::getElementType(getContext(), kind)))});
}

Value NodeContext::transpose(Value value, ArrayRef<int64_t> perm) {
  if (!value)
    return {};
  bool identity = static_cast<int64_t>(perm.size()) == rankOf(value);
  for (auto [index, p] : llvm::enumerate(perm))
    identity = identity && p == static_cast<int64_t>(index);
  if (identity)
    return value;
  return create<op::TransposeOp>(value, {named("perm", i64s(perm))});
}

Value NodeContext::slice(Value value, int64_t axis, int64_t start, int64_t end,
                         int64_t step) {
  if (!value)
    return {};
  ArrayRef<int64_t> shape = shapeOf(value);
  SmallVector<int64_t> starts(shape.size(), 0), ends(shape), steps(shape.size(), 1);
  starts[axis] = start;
  ends[axis] = end;
  steps[axis] = step;
  return create<op::SliceOp>(value, {named("starts", i64s(starts)),
                                     named("ends", i64s(ends)),
                                     named("steps", i64s(steps))});
}

} // namespace cgc::import
