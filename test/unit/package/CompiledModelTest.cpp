//===- CompiledModelTest.cpp - Packaging and reading compiled models ------===//
//
// The spec's example compiled to a model and read back with the MLIR-free
// reader: the plan is consistent (every binding lies in its buffer, is large
// enough and aligned as its bind point asks), the parts are where the plan
// says, and truncated, tampered or inconsistent containers are rejected with
// a message that names the problem.
//
//===----------------------------------------------------------------------===//

#include "compiler/InitAll.h"
#include "compiler/Package/Package.h"
#include "compiler/Pipeline/Pipeline.h"
#include "compiler/Targets/Common/Exchange.h"
#include "compiler/Targets/Cpu/PartitionCompiler.h"
#include "cgc/precompiled_program.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/MemoryBuffer.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <functional>
#include <map>

using namespace mlir;

namespace {

/// Deterministic bytes for a constant: the test's stand-in for weights.
std::vector<float> weightsFor(const std::string &name, size_t count) {
  std::vector<float> values(count);
  for (size_t i = 0; i < count; ++i)
    values[i] = float(name.size()) * 0.25f + float(i) * 0.5f - float(name[0] % 7);
  return values;
}

class CompiledModelTest : public ::testing::Test {
protected:
  CompiledModelTest() {
    DialectRegistry registry;
    cgc::registerAllDialects(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
    cgc::registerBuiltinTargets();
  }

  /// The spec's Input IR lowered with a target that declares only
  /// conv -> relu -> add (by default).
  OwningOpRef<cgc::ModuleOp> lowerSpecExample(
      std::vector<std::string> targets = {
          "patterns:" CGC_SOURCE_DIR
          "/test/compiler/Pipeline/Inputs/driver-conv-relu-add.mlir"}) {
    auto file = llvm::MemoryBuffer::getFile(CGC_SOURCE_DIR
                                            "/examples/spec/input-ir.mlir");
    EXPECT_TRUE(file);
    std::string error;
    OwningOpRef<cgc::ModuleOp> module =
        cgc::parseCGCModule(&context, (*file)->getBuffer(), error);
    EXPECT_TRUE(module) << error;
    PassManager pm(&context, cgc::ModuleOp::getOperationName());
    cgc::LowerToOutputIROptions options;
    options.targets = ArrayRef<std::string>(targets);
    options.verify = true;
    cgc::buildLowerToOutputIRPipeline(pm, options);
    EXPECT_TRUE(succeeded(pm.run(*module)));
    return module;
  }

  /// Packages `module` with weightsFor() as the constants' data.
  std::vector<uint8_t> package(cgc::ModuleOp module,
                               const cgc::PackageOptions &options = {}) {
    FailureOr<cgc::PackagedModel> packaged = cgc::packageCompiledModel(
        module,
        [&](StringRef name) -> std::optional<cgc::ConstantData> {
          auto constant = findConstant(module, name);
          if (!constant)
            return std::nullopt;
          auto type = cast<cgc::MemRefType>(constant.getType());
          std::vector<float> &data = storage[name.str()];
          data = weightsFor(name.str(), type.getNumElements());
          shapes[name.str()].assign(type.getShape().begin(),
                                    type.getShape().end());
          return cgc::ConstantData{
              ArrayRef<uint8_t>(reinterpret_cast<const uint8_t *>(data.data()),
                                data.size() * sizeof(float)),
              CGC_DTYPE_FLOAT32, shapes[name.str()]};
        },
        options);
    EXPECT_TRUE(succeeded(packaged));
    if (failed(packaged))
      return {};
    std::vector<uint8_t> bytes = packaged->getBytes();
    // Streaming writes the same bytes.
    std::string streamed, error;
    llvm::raw_string_ostream os(streamed);
    EXPECT_TRUE(packaged->writeTo(os, error)) << error;
    EXPECT_EQ(streamed, std::string(bytes.begin(), bytes.end()));
    // So does the one-pass file writer (digest patched in at the end).
    // One file per process: lit runs this binary's shards side by side.
    std::string path = ::testing::TempDir() + "/cgc-package-test-" + std::to_string(getpid()) +
                       ".cgc";
    EXPECT_TRUE(packaged->writeToFile(path, error)) << error;
    auto file = llvm::MemoryBuffer::getFile(path);
    EXPECT_TRUE(file && (*file)->getBuffer() ==
                            StringRef(reinterpret_cast<const char *>(bytes.data()),
                                      bytes.size()));
    std::remove(path.c_str());
    return bytes;
  }

  static cgc::ConstantOp findConstant(cgc::ModuleOp module, StringRef name) {
    cgc::ConstantOp found;
    module.walk([&](cgc::ConstantOp op) {
      if (op.getName() == name && isa<cgc::MemRefType>(op.getType()))
        found = op;
    });
    return found;
  }

  MLIRContext context;
  std::map<std::string, std::vector<float>> storage;
  std::map<std::string, std::vector<int64_t>> shapes;
};

/// Rewrites a container part by part: `edit` may change a part's payload
/// (return false to drop it); `extra` parts are appended. Aligned parts stay
/// aligned.
std::vector<uint8_t>
rebuild(const std::vector<uint8_t> &bytes,
        const std::function<bool(uint32_t fourCC, std::string &data)> &edit,
        std::vector<std::pair<uint32_t, std::string>> extra = {}) {
  cgc::ContainerReader reader;
  std::string error;
  EXPECT_TRUE(reader.open(bytes.data(), bytes.size(), error)) << error;
  cgc::ContainerWriter writer;
  for (const cgc::ContainerReader::Part &part : reader.getParts()) {
    if (part.fourCC == cgc::parts::kConstants) {
      cgc::ByteView payload;
      EXPECT_TRUE(cgc::ContainerReader::alignedPayload(part, payload, error));
      std::string data(payload.str());
      if (edit(part.fourCC, data))
        writer.addAlignedPart(part.fourCC, data.data(), data.size(), 4096);
      continue;
    }
    std::string data(part.data.str());
    if (edit(part.fourCC, data))
      writer.addPart(part.fourCC, data);
  }
  for (auto &[fourCC, data] : extra)
    writer.addPart(fourCC, data);
  return writer.finish();
}

/// Opens `bytes` and returns the error (empty if it opened).
std::string openError(const std::vector<uint8_t> &bytes) {
  cgc::CompiledModel model;
  std::string error;
  if (model.open(bytes.data(), bytes.size(), error))
    return "";
  EXPECT_FALSE(error.empty());
  return error;
}

TEST_F(CompiledModelTest, SpecExampleIsConsistent) {
  OwningOpRef<cgc::ModuleOp> module = lowerSpecExample();
  std::vector<uint8_t> bytes = package(*module);
  ASSERT_FALSE(bytes.empty());
  cgc::CompiledModel model;
  std::string error;
  ASSERT_TRUE(model.open(bytes.data(), bytes.size(), error)) << error;
  const cgc::ExecutionPlan &plan = model.getPlan();

  // Two programs: the driver's partition (an MLIR program) and the
  // fallback's upsample (a kernel program).
  ASSERT_EQ(plan.programs.size(), 2u);
  EXPECT_EQ(plan.programs[0].kind, cgc::PlanProgram::Kind::Mlir);
  EXPECT_EQ(plan.programs[0].target, "driverTarget");
  EXPECT_EQ(plan.programs[1].kind, cgc::PlanProgram::Kind::Kernel);
  EXPECT_EQ(plan.programs[1].target, "fallback");
  EXPECT_EQ(model.getKernelProgram(1).kernels.size(), 1u);
  EXPECT_EQ(model.getKernelProgram(1).kernels[0].op, "cgc_op.upsample");
  ASSERT_EQ(model.getBindPoints(0).size(), 7u);
  EXPECT_EQ(model.getBindPoints(0)[1].kind, cgc::BindPointKind::Constant);
  EXPECT_EQ(model.getBindPoints(0)[5].kind, cgc::BindPointKind::Scratch);
  EXPECT_EQ(model.getBindPoints(1)[1].kind, cgc::BindPointKind::Output);

  // Dispatch, barrier, dispatch; the counts agree with the IR's schedule.
  ASSERT_EQ(plan.commands.size(), 3u);
  EXPECT_EQ(plan.commands[0].kind, cgc::PlanCommand::Kind::Dispatch);
  EXPECT_EQ(plan.commands[1].kind, cgc::PlanCommand::Kind::Barrier);
  EXPECT_EQ(plan.commands[2].kind, cgc::PlanCommand::Kind::Dispatch);
  EXPECT_EQ(plan.dispatchCount, 2u);
  EXPECT_EQ(plan.barrierCount, 1u);
  EXPECT_EQ(plan.footprint, plan.scratchBytes);
  EXPECT_GE(plan.footprint, plan.lowerBound);
  EXPECT_LE(plan.footprint, plan.naive);

  // Every binding lies in its buffer, is large enough for its bind point and
  // aligned as the bind point asks.
  for (const cgc::PlanCommand &command : plan.commands) {
    for (const cgc::PlanRange &range : command.ranges) {
      uint64_t size = 0;
      switch (range.buffer) {
      case cgc::PlanBuffer::Input: size = plan.inputs.at(range.index).bytes; break;
      case cgc::PlanBuffer::Output: size = plan.outputs.at(range.index).bytes; break;
      case cgc::PlanBuffer::Scratch: size = plan.scratchBytes; break;
      case cgc::PlanBuffer::Constants: size = plan.constantsBytes; break;
      }
      EXPECT_LE(range.offset + range.bytes, size);
    }
    if (command.kind != cgc::PlanCommand::Kind::Dispatch)
      continue;
    const auto &points = model.getBindPoints(command.program);
    ASSERT_EQ(command.ranges.size(), points.size());
    for (size_t i = 0; i < points.size(); ++i) {
      EXPECT_GE(command.ranges[i].bytes, points[i].bytes);
      EXPECT_EQ(command.ranges[i].offset % points[i].alignment, 0u);
    }
  }
  // Two intermediates of one dispatch never share bytes.
  const cgc::PlanCommand &driver = plan.commands[0];
  EXPECT_NE(driver.ranges[5].offset, driver.ranges[6].offset);

  // The constants are where the plan says, with the data given, and mapped
  // at an aligned address.
  cgc::ByteView constants = model.getConstants();
  EXPECT_EQ((constants.data - bytes.data()) % 4096, 0u);
  ASSERT_EQ(plan.constants.size(), 4u);
  for (const cgc::PlanConstant &entry : plan.constants) {
    EXPECT_EQ(entry.offset % plan.constantsAlignment, 0u);
    const std::vector<float> &data = storage.at(entry.name);
    ASSERT_EQ(entry.bytes, data.size() * sizeof(float));
    EXPECT_EQ(std::memcmp(constants.data + entry.offset, data.data(),
                          entry.bytes),
              0)
        << entry.name;
  }

  // The plan round-trips; partition bytecode is the isolated Partition IR.
  cgc::ExecutionPlan again;
  ASSERT_TRUE(cgc::parseExecutionPlan(cgc::serializeExecutionPlan(plan), again,
                                      error))
      << error;
  EXPECT_EQ(again, plan);
  cgc::ByteView partition = model.getPartitionBytecode(0);
  OwningOpRef<cgc::ModuleOp> isolated =
      cgc::parseCGCModule(&context, partition.str(), error);
  ASSERT_TRUE(isolated) << error;
  EXPECT_EQ(llvm::range_size(isolated->getBody()->getOps<cgc::PartitionOp>()),
            1u);
  EXPECT_EQ(llvm::range_size(isolated->getBody()->getOps<cgc::SubgraphOp>()),
            1u);
  EXPECT_TRUE(isolated->getBody()->getOps<cgc::ProgramOp>().empty());
  // What CreateStateObject receives: the MLIR part and the bind points.
  std::vector<uint8_t> program = model.buildProgramContainer(0);
  cgc::ContainerReader reader;
  ASSERT_TRUE(reader.open(program.data(), program.size(), error)) << error;
  EXPECT_EQ(reader.find(cgc::parts::kMLIR).size(), 1u);
  EXPECT_EQ(reader.find(cgc::parts::kBindPoints).size(), 1u);
  EXPECT_EQ(model.getIRVersion(), "1.1.0");
}

TEST_F(CompiledModelTest, DamagedContainersAreRejected) {
  OwningOpRef<cgc::ModuleOp> module = lowerSpecExample();
  std::vector<uint8_t> bytes = package(*module);
  ASSERT_FALSE(bytes.empty());
  ASSERT_EQ(openError(bytes), "");

  // Truncated.
  EXPECT_NE(openError(std::vector<uint8_t>(bytes.begin(), bytes.begin() + 20)),
            "");
  std::vector<uint8_t> half(bytes.begin(), bytes.begin() + bytes.size() / 2);
  EXPECT_NE(openError(half).find("truncated"), std::string::npos)
      << openError(half);
  // Tampered: one byte flipped, in the 'CGCK' checksums at the end (the
  // file's checksums are what a reader verifies) and in the constants.
  std::vector<uint8_t> tampered = bytes;
  tampered[tampered.size() - 3] ^= 1;
  EXPECT_NE(openError(tampered).find("checksum mismatch in bytes [20, "), std::string::npos)
      << openError(tampered);
  cgc::ContainerReader reader;
  std::string error;
  ASSERT_TRUE(reader.open(bytes.data(), bytes.size(), error)) << error;
  EXPECT_TRUE(reader.verifiedByChecksums());
  const cgc::ByteView constants = reader.find(cgc::parts::kConstants).at(0)->data;
  tampered = bytes;
  tampered[size_t(constants.data - bytes.data()) + constants.size - 1] ^= 1;
  EXPECT_NE(openError(tampered).find("the contents were modified after they were written"),
            std::string::npos)
      << openError(tampered);
  // An unknown part.
  std::vector<uint8_t> unknown =
      rebuild(bytes, [](uint32_t, std::string &) { return true; },
              {{cgc::makeFourCC('Z', 'Z', 'Z', 'Z'), "?"}});
  EXPECT_NE(openError(unknown).find("ZZZZ"), std::string::npos)
      << openError(unknown);
  // The rebuilt container without changes still opens (the edits below are
  // the only reason for their errors).
  EXPECT_EQ(openError(rebuild(bytes, [](uint32_t, std::string &) {
              return true;
            })),
            "");
}

TEST_F(CompiledModelTest, InconsistentPlansAreRejected) {
  OwningOpRef<cgc::ModuleOp> module = lowerSpecExample();
  std::vector<uint8_t> bytes = package(*module);
  ASSERT_FALSE(bytes.empty());
  auto editPlan = [&](const std::function<void(cgc::ExecutionPlan &)> &change) {
    return rebuild(bytes, [&](uint32_t fourCC, std::string &data) {
      if (fourCC != cgc::parts::kPlan)
        return true;
      cgc::ExecutionPlan plan;
      std::string error;
      EXPECT_TRUE(cgc::parseExecutionPlan(data, plan, error)) << error;
      change(plan);
      data = cgc::serializeExecutionPlan(plan);
      return true;
    });
  };

  // A binding that runs past the scratch buffer.
  std::string error = openError(editPlan([](cgc::ExecutionPlan &plan) {
    plan.commands[0].ranges[5].offset = plan.scratchBytes;
  }));
  EXPECT_NE(error.find("lies outside its"), std::string::npos) << error;
  // A binding smaller than its bind point.
  error = openError(editPlan([](cgc::ExecutionPlan &plan) {
    plan.commands[0].ranges[0].bytes = 4;
  }));
  EXPECT_NE(error.find("needs 64 bytes"), std::string::npos) << error;
  // A misaligned scratch binding.
  error = openError(editPlan([](cgc::ExecutionPlan &plan) {
    plan.commands[0].ranges[5].offset = 4;
    plan.commands[0].ranges[5].bytes = 60;
  }));
  EXPECT_FALSE(error.empty());
  // A constant bind point bound to scratch.
  error = openError(editPlan([](cgc::ExecutionPlan &plan) {
    plan.commands[0].ranges[1].buffer = cgc::PlanBuffer::Scratch;
    plan.commands[0].ranges[1].offset = 0;
  }));
  EXPECT_NE(error.find("is a constant bind point bound to the scratch buffer"),
            std::string::npos)
      << error;
  // A program whose part is not its Partition IR.
  error = openError(editPlan([](cgc::ExecutionPlan &plan) {
    plan.programs[0].part = plan.programs[0].bindPointsPart;
  }));
  EXPECT_NE(error.find("which is not a 'MLIR' part"), std::string::npos)
      << error;
  // Too few bindings for the bind points.
  error = openError(editPlan([](cgc::ExecutionPlan &plan) {
    plan.commands[2].ranges.pop_back();
  }));
  EXPECT_NE(error.find("has 1 bindings for 2 bind points"), std::string::npos)
      << error;
  // A dispatch of a program that does not exist.
  error = openError(editPlan([](cgc::ExecutionPlan &plan) {
    plan.commands[2].program = 7;
  }));
  EXPECT_NE(error.find("dispatches program #7"), std::string::npos) << error;
  // A constant outside the constants buffer.
  error = openError(editPlan([](cgc::ExecutionPlan &plan) {
    uint64_t a = plan.constantsAlignment;
    plan.constants.back().offset = (plan.constantsBytes + a - 1) / a * a;
  }));
  EXPECT_NE(error.find("lies outside the"), std::string::npos) << error;

  // A newer IR version.
  std::vector<uint8_t> newer = rebuild(bytes, [](uint32_t fourCC,
                                                 std::string &data) {
    if (fourCC == cgc::parts::kVersions)
      data = "{\"ir_version\": \"2.0.0\", \"compiler\": \"9.9.9\"}";
    return true;
  });
  EXPECT_NE(openError(newer).find("newer than this runtime supports"),
            std::string::npos)
      << openError(newer);
  // No constants part.
  std::vector<uint8_t> noConstants =
      rebuild(bytes, [](uint32_t fourCC, std::string &) {
        return fourCC != cgc::parts::kConstants;
      });
  EXPECT_FALSE(openError(noConstants).empty());
}

TEST_F(CompiledModelTest, CpuPartitionsArePrecompiled) {
  OwningOpRef<cgc::ModuleOp> module = lowerSpecExample({"cpu"});
  std::vector<uint8_t> bytes = package(*module);
  ASSERT_FALSE(bytes.empty());
  cgc::CompiledModel model;
  std::string error;
  ASSERT_TRUE(model.open(bytes.data(), bytes.size(), error)) << error;
  const cgc::ExecutionPlan &plan = model.getPlan();
  size_t mlirPrograms = 0;
  for (size_t p = 0; p < plan.programs.size(); ++p) {
    const cgc::PlanProgram &program = plan.programs[p];
    if (program.kind != cgc::PlanProgram::Kind::Mlir) {
      EXPECT_FALSE(program.precompiledPart);
      EXPECT_EQ(model.getPrecompiledProgram(p).size, 0u);
      continue;
    }
    ++mlirPrograms;
    EXPECT_EQ(program.target, "cpu");
    ASSERT_TRUE(program.precompiledPart) << program.name;
    // The blob: keyed by the CPU driver's compiler identity and the
    // digest of the Partition IR stored beside it, holding what the JIT
    // makes of that Partition IR.
    cgc::ByteView blob = model.getPrecompiledProgram(p);
    cgc::ContainerReader reader;
    cgc::PrecompiledKey key;
    ASSERT_TRUE(cgc::readPrecompiledProgram(blob.data, blob.size, reader, key, error)) << error;
    EXPECT_EQ(key.compiler, cgc::cpu_target::compilerIdentity());
    EXPECT_EQ(key.compiler.rfind("cgc-cpu 0.1.0 mlir-22.", 0), 0u) << key.compiler;
    EXPECT_NE(key.compiler.find(" src:"), std::string::npos) << key.compiler;
    cgc::ByteView bytecode = model.getPartitionBytecode(p);
    EXPECT_EQ(key.partitionDigest, cgc::digestBytecode(bytecode));
    auto kernels = reader.find(cgc::parts::kKernelProgram);
    ASSERT_EQ(kernels.size(), 1u);
    cgc::KernelProgram stored, jit;
    ASSERT_TRUE(cgc::deserializeKernelProgram(kernels[0]->data.str(), stored, error)) << error;
    ASSERT_TRUE(cgc::cpu_target::compilePartition(bytecode.data, bytecode.size, jit, error))
        << error;
    EXPECT_EQ(stored, jit);
    EXPECT_EQ(stored.bindings.size(), model.getBindPoints(p).size());
  }
  EXPECT_GE(mlirPrograms, 1u);

  // Without precompilation: no 'CGPC' part, no reference to one.
  cgc::PackageOptions options;
  options.precompile = false;
  std::vector<uint8_t> plain = package(*module, options);
  cgc::CompiledModel plainModel;
  ASSERT_TRUE(plainModel.open(plain.data(), plain.size(), error)) << error;
  for (const cgc::PlanProgram &program : plainModel.getPlan().programs)
    EXPECT_FALSE(program.precompiledPart);
  cgc::ContainerReader reader;
  ASSERT_TRUE(reader.open(plain.data(), plain.size(), error));
  EXPECT_TRUE(reader.find(cgc::parts::kPrecompiledProgram).empty());

  // Other targets' partitions get none (the spec example's driverTarget).
  OwningOpRef<cgc::ModuleOp> other = lowerSpecExample();
  std::vector<uint8_t> otherBytes = package(*other);
  ASSERT_TRUE(reader.open(otherBytes.data(), otherBytes.size(), error));
  EXPECT_TRUE(reader.find(cgc::parts::kPrecompiledProgram).empty());
}

TEST_F(CompiledModelTest, InconsistentPrecompiledProgramsAreRejected) {
  OwningOpRef<cgc::ModuleOp> module = lowerSpecExample({"cpu"});
  std::vector<uint8_t> bytes = package(*module);
  ASSERT_FALSE(bytes.empty());
  ASSERT_EQ(openError(bytes), "");
  cgc::ExecutionPlan original;
  {
    cgc::CompiledModel model;
    std::string error;
    ASSERT_TRUE(model.open(bytes.data(), bytes.size(), error)) << error;
    original = model.getPlan();
  }
  size_t mlir = 0, kernel = original.programs.size();
  for (size_t p = 0; p < original.programs.size(); ++p)
    if (original.programs[p].kind == cgc::PlanProgram::Kind::Kernel)
      kernel = p;
  ASSERT_TRUE(original.programs[mlir].precompiledPart);
  auto editPlan = [&](const std::function<void(cgc::ExecutionPlan &)> &change) {
    return rebuild(bytes, [&](uint32_t fourCC, std::string &data) {
      if (fourCC != cgc::parts::kPlan)
        return true;
      cgc::ExecutionPlan plan;
      std::string error;
      EXPECT_TRUE(cgc::parseExecutionPlan(data, plan, error)) << error;
      change(plan);
      data = cgc::serializeExecutionPlan(plan);
      return true;
    });
  };
  auto editBlob = [&](const std::function<void(std::string &)> &change) {
    return rebuild(bytes, [&](uint32_t fourCC, std::string &data) {
      if (fourCC == cgc::parts::kPrecompiledProgram)
        change(data);
      return true;
    });
  };

  // The part a program names is not a precompiled program.
  std::string error = openError(editPlan([&](cgc::ExecutionPlan &plan) {
    plan.programs[mlir].precompiledPart = plan.programs[mlir].bindPointsPart;
  }));
  EXPECT_NE(error.find("precompiled program refers to part #"), std::string::npos) << error;
  EXPECT_NE(error.find("which is not a 'CGPC' part"), std::string::npos) << error;
  error = openError(editPlan([&](cgc::ExecutionPlan &plan) {
    plan.programs[mlir].precompiledPart = 999;
  }));
  EXPECT_NE(error.find("which is not a 'CGPC' part"), std::string::npos) << error;
  // A part no program refers to.
  error = openError(editPlan([&](cgc::ExecutionPlan &plan) {
    plan.programs[mlir].precompiledPart.reset();
  }));
  EXPECT_NE(error.find("that no program of the plan refers to"), std::string::npos) << error;
  // A kernel program with a precompiled program.
  if (kernel < original.programs.size()) {
    error = openError(editPlan([&](cgc::ExecutionPlan &plan) {
      plan.programs[kernel].precompiledPart = plan.programs[mlir].precompiledPart;
    }));
    EXPECT_NE(error.find("only MLIR programs are precompiled"), std::string::npos) << error;
  }
  // A blob that is not a precompiled program, or whose key is malformed (the
  // outer container re-digested: only the blob is wrong).
  error = openError(editBlob([](std::string &data) { data = "junk"; }));
  EXPECT_NE(error.find("precompiled program (part #"), std::string::npos) << error;
  EXPECT_NE(error.find("not a valid DX container"), std::string::npos) << error;
  error = openError(editBlob([](std::string &data) {
    cgc::ContainerWriter writer;
    writer.addPart(cgc::parts::kPrecompiledKey, "{\"format\": 1, \"compiler\": 7}");
    std::vector<uint8_t> blob = writer.finish();
    data.assign(blob.begin(), blob.end());
  }));
  EXPECT_NE(error.find("key ('CGPK') is malformed"), std::string::npos) << error;
  error = openError(editBlob([](std::string &data) { data[data.size() - 3] ^= 1; }));
  EXPECT_NE(error.find("digest"), std::string::npos) << error;
  // A blob of another compiler opens: whether it matches is the driver's call.
  EXPECT_EQ(openError(editBlob([](std::string &data) {
              cgc::PrecompiledKey key;
              key.compiler = "some other driver's compiler";
              std::vector<uint8_t> blob = cgc::writePrecompiledProgram(key, {});
              data.assign(blob.begin(), blob.end());
            })),
            "");
  // Two plan entries naming one blob: give the same MLIR program twice.
  error = openError(rebuild(
      bytes,
      [&](uint32_t fourCC, std::string &data) {
        if (fourCC != cgc::parts::kPlan)
          return true;
        cgc::ExecutionPlan plan;
        std::string why;
        EXPECT_TRUE(cgc::parseExecutionPlan(data, plan, why)) << why;
        plan.programs.push_back(plan.programs[mlir]);
        plan.programs.back().name += "_again";
        data = cgc::serializeExecutionPlan(plan);
        return true;
      }));
  EXPECT_NE(error.find("is another program's too"), std::string::npos) << error;
}

TEST_F(CompiledModelTest, MissingOrMistypedConstantsAreErrors) {
  OwningOpRef<cgc::ModuleOp> module = lowerSpecExample();
  std::string firstError = cgc::captureFirstError(&context, [&] {
    EXPECT_TRUE(failed(cgc::packageCompiledModel(
        *module,
        [](StringRef) -> std::optional<cgc::ConstantData> {
          return std::nullopt;
        })));
  });
  EXPECT_NE(firstError.find("uses constant 'w1', which has no data"),
            std::string::npos)
      << firstError;
  static const uint8_t few[4] = {};
  firstError = cgc::captureFirstError(&context, [&] {
    EXPECT_TRUE(failed(cgc::packageCompiledModel(
        *module, [](StringRef) -> std::optional<cgc::ConstantData> {
          return cgc::ConstantData{ArrayRef<uint8_t>(few), CGC_DTYPE_INT32, {}};
        })));
  });
  EXPECT_NE(firstError.find("but its data is int32 with 4 bytes"),
            std::string::npos)
      << firstError;
}

// The spec's own Output IR listing (hand-written, without the pipeline's
// attributes) packages too: inputs, outputs and scratch are told apart by how
// the program uses them.
TEST_F(CompiledModelTest, HandWrittenOutputIR) {
  auto file = llvm::MemoryBuffer::getFile(CGC_SOURCE_DIR
                                          "/examples/spec/output-ir.mlir");
  ASSERT_TRUE(file);
  std::string error;
  OwningOpRef<cgc::ModuleOp> module =
      cgc::parseCGCModule(&context, (*file)->getBuffer(), error);
  ASSERT_TRUE(module) << error;
  FailureOr<cgc::ExecutionPlan> plan = cgc::buildExecutionPlan(*module);
  ASSERT_TRUE(succeeded(plan));
  ASSERT_EQ(plan->inputs.size(), 1u);
  ASSERT_EQ(plan->outputs.size(), 1u);
  EXPECT_EQ(plan->outputs[0].bytes, 8u * 8 * 4);
  EXPECT_EQ(plan->scratchBytes, 128u);
  EXPECT_EQ(plan->programs[0].target, "driverTarget");
  EXPECT_EQ(plan->programs[1].target, "fallbackTarget");
  EXPECT_EQ(plan->dispatchCount, 2u);
  EXPECT_EQ(plan->barrierCount, 0u) << "the listing has no barrier op";
  std::vector<uint8_t> bytes = package(*module);
  EXPECT_EQ(openError(bytes), "");
}

} // namespace
