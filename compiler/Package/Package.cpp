//===- Package.cpp - Output IR -> compiled model --------------------------===//

#include "compiler/Package/Package.h"

#include "compiler/Pipeline/Isolation.h"
#include "compiler/Pipeline/SubgraphMatcher.h"
#include "compiler/Targets/Common/KernelLowering.h"
#include "compiler/Targets/Fallback/FallbackTarget.h"
#include "compiler/Targets/Registry.h"
#include "cgc/checked.h"
#include "cgc/version.h"

#include "mlir/Bytecode/BytecodeWriter.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Parallel.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cstring>

using namespace mlir;

namespace cgc {

namespace {

uint64_t alignTo(uint64_t value, uint64_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

/// The buffer a program-level memref is in, and where.
struct Location {
  PlanBuffer buffer = PlanBuffer::Scratch;
  uint32_t index = 0;
  uint64_t offset = 0;
  std::string constant; // for PlanBuffer::Constants
};

/// What the plan is built from, kept for the packager.
struct PlanContext {
  ExecutionPlan plan;
  SmallVector<PartitionOp> partitions; // program index -> partition
  std::vector<std::vector<BindPoint>> bindPoints;
  llvm::StringMap<size_t> constantIndex;
};

std::string nameOf(FunctionOpInterface function, unsigned arg,
                   const std::string &fallback) {
  if (auto name = function.getArgAttrOfType<StringAttr>(arg, kNameAttr))
    return name.getValue().str();
  return fallback;
}

cgc_dtype_t dtypeOf(TensorLikeType type) {
  return static_cast<cgc_dtype_t>(type.getElementKind());
}

/// The partition arguments a partition writes (outputs of its invokes).
llvm::SmallBitVector writtenArguments(PartitionOp partition) {
  llvm::SmallBitVector written(partition.getNumArguments());
  partition.walk([&](InvokeOp invoke) {
    auto subgraph = SymbolTable::lookupNearestSymbolFrom<SubgraphOp>(
        invoke, invoke.getCalleeAttr());
    if (!subgraph || !subgraph.getFunctionalDefinition())
      return;
    unsigned inputs =
        subgraph.getFunctionalDefinition().getArgumentTypes().size();
    for (auto [index, operand] : llvm::enumerate(invoke.getOperands())) {
      if (index < inputs)
        continue;
      Value root = operand;
      while (auto view = root.getDefiningOp<ViewMemRefOp>())
        root = view.getSource();
      if (auto argument = dyn_cast<BlockArgument>(root))
        written.set(argument.getArgNumber());
    }
  });
  return written;
}

FailureOr<PlanContext> buildPlan(ModuleOp module) {
  PlanContext context;
  ExecutionPlan &plan = context.plan;
  ProgramOp program = module.getProgram();
  if (!program)
    return module.emitOpError("has no cgc.program; a compiled model is made "
                              "from Output IR");
  Block &body = program.getBody().front();
  SymbolTable symbols(module);

  // The program's arguments: scratch (viewed), outputs (written), inputs.
  unsigned numArgs = program.getNumArguments();
  llvm::SmallBitVector viewed(numArgs), written(numArgs);
  for (auto view : body.getOps<ViewMemRefOp>())
    if (auto argument = dyn_cast<BlockArgument>(view.getSource()))
      viewed.set(argument.getArgNumber());
  for (auto invoke : body.getOps<InvokeOp>()) {
    auto partition = symbols.lookup<PartitionOp>(invoke.getCallee());
    if (!partition)
      return invoke.emitOpError("invokes '")
             << invoke.getCallee() << "', which is not a partition";
    llvm::SmallBitVector writes = writtenArguments(partition);
    for (auto [index, operand] : llvm::enumerate(invoke.getOperands())) {
      if (!writes.test(index))
        continue;
      Value root = operand;
      while (auto view = root.getDefiningOp<ViewMemRefOp>())
        root = view.getSource();
      if (auto argument = dyn_cast<BlockArgument>(root))
        written.set(argument.getArgNumber());
      else
        return invoke.emitOpError("operand #")
               << index << " is written by partition '" << invoke.getCallee()
               << "' but is not a view of a program argument";
    }
  }
  if (viewed.count() > 1)
    return program.emitOpError("views more than one argument; a compiled "
                               "model has one scratch buffer");
  DenseMap<Value, Location> locations;
  int scratchArg = viewed.any() ? viewed.find_first() : -1;
  for (unsigned i = 0; i < numArgs; ++i) {
    auto type = cast<MemRefType>(program.getArgumentTypes()[i]);
    Value argument = body.getArgument(i);
    if (static_cast<int>(i) == scratchArg) {
      plan.scratchBytes = type.getByteSpan();
      locations[argument] = {PlanBuffer::Scratch, 0, 0, ""};
      continue;
    }
    if (!type.isContiguous())
      return program.emitOpError("argument #")
             << i << " is not contiguous; model inputs and outputs are dense";
    bool isOutput = written.test(i);
    std::vector<PlanTensor> &list = isOutput ? plan.outputs : plan.inputs;
    PlanTensor tensor;
    tensor.name = nameOf(program, i,
                         (isOutput ? "output" : "input") +
                             std::to_string(list.size()));
    tensor.dtype = dtypeOf(type);
    tensor.shape.assign(type.getShape().begin(), type.getShape().end());
    tensor.bytes = type.getByteSpan();
    locations[argument] = {isOutput ? PlanBuffer::Output : PlanBuffer::Input,
                           static_cast<uint32_t>(list.size()), 0, ""};
    list.push_back(std::move(tensor));
  }
  // Outputs with data-dependent rows name the output holding the count.
  for (unsigned i = 0; i < numArgs; ++i) {
    auto rows = program.getArgAttrOfType<StringAttr>(i, kRowsFromAttr);
    if (!rows)
      continue;
    std::string name = nameOf(program, i, "");
    auto output = llvm::find_if(plan.outputs, [&](const PlanTensor &t) { return t.name == name; });
    auto count = llvm::find_if(plan.outputs, [&](const PlanTensor &t) {
      return t.name == rows.getValue();
    });
    if (output == plan.outputs.end() || count == plan.outputs.end())
      return program.emitOpError("argument #")
             << i << " takes its rows from '" << rows.getValue()
             << "', which is not an output of the model";
    output->rowsFrom = count - plan.outputs.begin();
  }

  // The memory plan's figures, when the pipeline made the program.
  uint64_t alignment = 64;
  if (auto memory = program->getAttrOfType<DictionaryAttr>(kMemoryAttr)) {
    auto get = [&](StringRef key) -> uint64_t {
      auto value = memory.getAs<IntegerAttr>(key);
      return value ? value.getInt() : 0;
    };
    alignment = std::max<uint64_t>(get("alignment"), 1);
    plan.footprint = get("footprint");
    plan.lowerBound = get("lower_bound");
    plan.naive = get("naive");
  } else {
    plan.footprint = plan.scratchBytes;
  }
  plan.scratchAlignment = alignment;
  plan.constantsAlignment = std::max<uint64_t>(alignment, 64);

  // Constants, in order of appearance, each aligned.
  for (auto constant : body.getOps<ConstantOp>()) {
    auto type = cast<MemRefType>(constant.getType());
    std::string name = constant.getName().str();
    auto [it, inserted] =
        context.constantIndex.try_emplace(name, plan.constants.size());
    if (inserted) {
      PlanConstant entry;
      entry.name = name;
      entry.bytes = type.getByteSpan();
      std::optional<uint64_t> offset =
          checkedAlignUp(plan.constantsBytes, plan.constantsAlignment);
      std::optional<uint64_t> end =
          offset ? checkedAdd(*offset, entry.bytes) : std::nullopt;
      if (!end || *end > kMaxTensorBytes)
        return constant.emitOpError("constant '")
               << name << "' (" << entry.bytes
               << " bytes) does not fit in a constants buffer of at most "
               << maxTensorBytesText();
      entry.offset = *offset;
      entry.dtype = dtypeOf(type);
      entry.shape.assign(type.getShape().begin(), type.getShape().end());
      plan.constantsBytes = *end;
      plan.constants.push_back(std::move(entry));
    }
    const PlanConstant &entry = plan.constants[it->second];
    locations[constant] = {PlanBuffer::Constants, 0, entry.offset, name};
  }
  for (auto view : body.getOps<ViewMemRefOp>()) {
    auto source = locations.find(view.getSource());
    if (source == locations.end() ||
        source->second.buffer != PlanBuffer::Scratch)
      return view.emitOpError("must view the scratch argument");
    if (static_cast<uint64_t>(view.getOffset()) % alignment)
      return view.emitOpError("offset ")
             << view.getOffset() << " is not aligned to the plan's "
             << alignment << " bytes";
    locations[view] = {PlanBuffer::Scratch, 0,
                       static_cast<uint64_t>(view.getOffset()), ""};
  }

  // Programs (one per partition, in order of first dispatch) and commands.
  DenseMap<Operation *, uint32_t> programOf;
  auto rangeOf = [&](Value value) -> std::optional<PlanRange> {
    auto it = locations.find(value);
    if (it == locations.end())
      return std::nullopt;
    PlanRange range;
    range.buffer = it->second.buffer;
    range.index = it->second.index;
    range.offset = it->second.offset;
    range.bytes = cast<MemRefType>(value.getType()).getByteSpan();
    return range;
  };
  for (Operation &op : body) {
    if (auto barrier = dyn_cast<BarrierOp>(op)) {
      PlanCommand command;
      command.kind = PlanCommand::Kind::Barrier;
      for (auto [buffer, offset, size] :
           llvm::zip(barrier.getBuffers(), barrier.getOffsets(),
                     barrier.getSizes())) {
        std::optional<PlanRange> range = rangeOf(buffer);
        if (!range)
          return barrier.emitOpError("names a buffer that is not a program "
                                     "argument");
        range->offset = offset;
        range->bytes = size;
        command.ranges.push_back(*range);
      }
      plan.commands.push_back(std::move(command));
      ++plan.barrierCount;
      continue;
    }
    auto invoke = dyn_cast<InvokeOp>(op);
    if (!invoke)
      continue;
    auto partition = symbols.lookup<PartitionOp>(invoke.getCallee());
    auto [it, inserted] = programOf.try_emplace(partition, plan.programs.size());
    if (inserted) {
      // Which target implements the partition decides how it runs.
      std::string target;
      bool kernel = false, mixed = false;
      int64_t required = 1;
      partition.walk([&](InvokeOp inner) {
        auto subgraph = symbols.lookup<SubgraphOp>(inner.getCallee());
        if (!subgraph)
          return;
        if (target.empty())
          target = subgraph.getOrigin().str();
        else if (target != subgraph.getOrigin())
          mixed = true;
        if (auto a = subgraph->getAttrOfType<IntegerAttr>(kAlignmentAttr))
          required = std::max(required, a.getInt());
      });
      if (mixed)
        return partition.emitOpError("invokes subgraphs of more than one "
                                     "target; a partition is compiled by one");
      if (target.empty())
        return partition.emitOpError("invokes no subgraph");
      kernel = target == kFallbackTargetName;
      PlanProgram entry;
      entry.name = partition.getSymName().str();
      entry.target = target;
      entry.kind = kernel ? PlanProgram::Kind::Kernel : PlanProgram::Kind::Mlir;
      plan.programs.push_back(entry);
      context.partitions.push_back(partition);

      std::vector<BindPoint> points;
      for (unsigned i = 0; i < partition.getNumArguments(); ++i) {
        auto type = cast<MemRefType>(partition.getArgumentTypes()[i]);
        BindPoint point;
        point.name = nameOf(partition, i, "bp" + std::to_string(i));
        std::optional<PlanRange> range = rangeOf(invoke.getOperand(i));
        if (!range)
          return invoke.emitOpError("operand #")
                 << i << " is neither a program argument, a constant nor a "
                 << "view of scratch";
        switch (range->buffer) {
        case PlanBuffer::Input:
          point.kind = BindPointKind::Argument;
          break;
        case PlanBuffer::Output:
          point.kind = BindPointKind::Output;
          break;
        case PlanBuffer::Scratch:
          point.kind = BindPointKind::Scratch;
          break;
        case PlanBuffer::Constants:
          point.kind = BindPointKind::Constant;
          break;
        }
        point.bytes = type.getByteSpan();
        point.dtype = dtypeOf(type);
        point.shape.assign(type.getShape().begin(), type.getShape().end());
        uint64_t elementBytes = getByteSize(type.getElementKind());
        point.alignment =
            range->buffer == PlanBuffer::Scratch ? alignment
            : range->buffer == PlanBuffer::Constants
                ? plan.constantsAlignment
                : std::max<uint64_t>(elementBytes, required);
        points.push_back(std::move(point));
      }
      context.bindPoints.push_back(std::move(points));
    }
    PlanCommand command;
    command.kind = PlanCommand::Kind::Dispatch;
    command.program = it->second;
    const std::vector<BindPoint> &points = context.bindPoints[it->second];
    for (auto [index, operand] : llvm::enumerate(invoke.getOperands())) {
      std::optional<PlanRange> range = rangeOf(operand);
      if (!range)
        return invoke.emitOpError("operand #")
               << index << " is neither a program argument, a constant nor "
               << "a view of scratch";
      if (index < points.size()) {
        bool agrees =
            (points[index].kind == BindPointKind::Argument &&
             range->buffer == PlanBuffer::Input) ||
            (points[index].kind == BindPointKind::Output &&
             range->buffer == PlanBuffer::Output) ||
            (points[index].kind == BindPointKind::Scratch &&
             range->buffer == PlanBuffer::Scratch) ||
            (points[index].kind == BindPointKind::Constant &&
             range->buffer == PlanBuffer::Constants);
        if (!agrees)
          return invoke.emitOpError("binds bind point #")
                 << index << " of '" << invoke.getCallee()
                 << "' to another kind of buffer than its first dispatch";
      }
      command.ranges.push_back(*range);
    }
    plan.commands.push_back(std::move(command));
    ++plan.dispatchCount;
  }
  return context;
}

std::string bytecodeOf(Operation *op) {
  std::string bytes;
  llvm::raw_string_ostream os(bytes);
  BytecodeWriterConfig config;
  (void)writeBytecodeToFile(op, os, config);
  return bytes;
}

} // namespace

FailureOr<ExecutionPlan> buildExecutionPlan(ModuleOp module) {
  FailureOr<PlanContext> context = buildPlan(module);
  if (failed(context))
    return failure();
  return std::move(context->plan);
}

bool PackagedModel::writeTo(llvm::raw_ostream &os, std::string &error) const {
  bool ok = writer.writeTo(
      [&](const void *data, size_t size) -> bool {
        os.write(static_cast<const char *>(data), size);
        return true;
      },
      &error);
  if (!ok && error.empty())
    error = "write error";
  return ok;
}

bool PackagedModel::writeToFile(llvm::StringRef path, std::string &error) const {
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_None);
  if (ec) {
    error = ec.message();
    return false;
  }
  uint8_t digest[16];
  bool ok = writer.writeToOnePass(
      [&](const void *data, size_t size) -> bool {
        os.write(static_cast<const char *>(data), size);
        return !os.has_error();
      },
      digest, &error);
  if (ok) {
    os.seek(4);
    os.write(reinterpret_cast<const char *>(digest), sizeof(digest));
  }
  os.close();
  if (os.has_error()) {
    error = os.error().message();
    os.clear_error();
    return false;
  }
  if (!ok && error.empty())
    error = "write error";
  return ok;
}

std::vector<uint8_t> PackagedModel::getBytes() const { return writer.finish(); }

FailureOr<PackagedModel>
packageCompiledModel(ModuleOp module, const ConstantBytes &constants,
                     const PackageOptions &options) {
  FailureOr<PlanContext> contextOr = buildPlan(module);
  if (failed(contextOr))
    return failure();
  PlanContext &context = *contextOr;
  PackagedModel model;
  ExecutionPlan &plan = model.plan;
  plan = context.plan;
  ProgramOp program = module.getProgram();

  // The constants, gathered in place: each where the store keeps it, zeros
  // between them.
  static const uint8_t zeros[4096] = {};
  std::vector<ByteView> segments;
  uint64_t position = 0;
  for (const PlanConstant &entry : plan.constants) {
    std::optional<ConstantData> data = constants(entry.name);
    if (!data) {
      program.emitOpError("uses constant '")
          << entry.name << "', which has no data";
      return failure();
    }
    if (data->dtype != entry.dtype ||
        !llvm::equal(data->shape, entry.shape) ||
        data->bytes.size() != entry.bytes) {
      program.emitOpError("uses constant '")
          << entry.name << "' as " << cgc_dtype_name(entry.dtype) << " with "
          << entry.bytes << " bytes, but its data is "
          << (cgc_dtype_name(data->dtype) ? cgc_dtype_name(data->dtype) : "?")
          << " with " << data->bytes.size() << " bytes";
      return failure();
    }
    for (uint64_t gap = entry.offset - position; gap;) {
      uint64_t take = std::min<uint64_t>(gap, sizeof(zeros));
      segments.push_back({zeros, static_cast<size_t>(take)});
      gap -= take;
    }
    segments.push_back({data->bytes.data(), data->bytes.size()});
    position = entry.offset + entry.bytes;
  }

  ContainerWriter &writer = model.writer;
  uint32_t part = 0;
  writer.addPart(parts::kVersions,
                 std::string("{\"ir_version\": \"") +
                     std::to_string(CGC_IR_VERSION_MAJOR) + "." +
                     std::to_string(CGC_IR_VERSION_MINOR) + "." +
                     std::to_string(CGC_IR_VERSION_PATCH) +
                     "\", \"compiler\": \"" CGC_PROJECT_VERSION_STRING "\"}");
  ++part;
  writer.addMLIRPart(interfaces::kOutput, bytecodeOf(module));
  ++part;
  // Partition IR, and the precompiled programs of the targets that have an
  // offline compiler (in parallel: each compiles in a context of its own).
  size_t count = context.partitions.size();
  std::vector<std::string> partitionBytecode(count);
  std::vector<PrecompileFn> precompilers(count);
  for (auto [index, partition] : llvm::enumerate(context.partitions)) {
    OwningOpRef<ModuleOp> isolated = isolatePartition(module, partition);
    partitionBytecode[index] = bytecodeOf(*isolated);
    if (options.precompile && plan.programs[index].kind == PlanProgram::Kind::Mlir)
      precompilers[index] = findPrecompiler(plan.programs[index].target);
  }
  std::vector<std::vector<uint8_t>> precompiled(count);
  std::vector<std::string> precompileErrors(count);
  llvm::parallelFor(0, count, [&](size_t index) {
    if (!precompilers[index])
      return;
    const std::string &bytes = partitionBytecode[index];
    ByteView bytecode{reinterpret_cast<const uint8_t *>(bytes.data()), bytes.size()};
    if (!precompilers[index](bytecode, precompiled[index], precompileErrors[index]) &&
        precompileErrors[index].empty())
      precompileErrors[index] = "unknown error";
  });
  for (size_t index = 0; index < count; ++index)
    if (!precompileErrors[index].empty()) {
      context.partitions[index].emitOpError("cannot be precompiled by target '")
          << plan.programs[index].target << "': " << precompileErrors[index];
      return failure();
    }

  for (auto [index, partition] : llvm::enumerate(context.partitions)) {
    PlanProgram &entry = plan.programs[index];
    writer.addMLIRPart(interfaces::kSubgraphPartition, partitionBytecode[index]);
    std::string().swap(partitionBytecode[index]);
    entry.part = part++;
    writer.addPart(parts::kBindPoints,
                   serializeBindPoints(context.bindPoints[index]));
    entry.bindPointsPart = part++;
    if (entry.kind == PlanProgram::Kind::Kernel) {
      FailureOr<KernelProgram> kernel = lowerPartitionToKernelProgram(partition);
      if (failed(kernel))
        return failure();
      writer.addPart(parts::kKernelProgram, serializeKernelProgram(*kernel));
      entry.kernelPart = part++;
    }
    if (precompilers[index]) {
      writer.addPart(parts::kPrecompiledProgram, precompiled[index].data(),
                     precompiled[index].size());
      std::vector<uint8_t>().swap(precompiled[index]);
      entry.precompiledPart = part++;
    }
  }
  plan.constantsPart = part + 1; // after the plan
  writer.addPart(parts::kPlan, serializeExecutionPlan(plan));
  ++part;
  writer.addAlignedPartRef(parts::kConstants, std::move(segments),
                           options.pageAlignment);
  // Checksums the runtime verifies on every core instead of the MD5 digest
  // (cgc/container.h): loading a 400 MB model checked its digest for 1 s.
  writer.addChecksums();
  return model;
}

} // namespace cgc
