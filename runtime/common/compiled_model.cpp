//===- compiled_model.cpp - The compiled model, without MLIR --------------===//

#include "cgc/compiled_model.h"

#include "cgc/checked.h"
#include "cgc/precompiled_program.h"
#include "cgc/version.h"
#include "json_int.h"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <stdexcept>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace cgc {

using json = nlohmann::json;

//===----------------------------------------------------------------------===//
// Plan structs
//===----------------------------------------------------------------------===//

const char *planBufferName(PlanBuffer buffer) {
  switch (buffer) {
  case PlanBuffer::Input: return "input";
  case PlanBuffer::Output: return "output";
  case PlanBuffer::Scratch: return "scratch";
  case PlanBuffer::Constants: return "constants";
  }
  return "?";
}

bool PlanRange::operator==(const PlanRange &o) const {
  return buffer == o.buffer && index == o.index && offset == o.offset &&
         bytes == o.bytes;
}
bool PlanTensor::operator==(const PlanTensor &o) const {
  return name == o.name && dtype == o.dtype && shape == o.shape &&
         bytes == o.bytes && rowsFrom == o.rowsFrom;
}
bool PlanConstant::operator==(const PlanConstant &o) const {
  return name == o.name && offset == o.offset && bytes == o.bytes &&
         dtype == o.dtype && shape == o.shape;
}
bool PlanProgram::operator==(const PlanProgram &o) const {
  return name == o.name && target == o.target && kind == o.kind &&
         part == o.part && bindPointsPart == o.bindPointsPart &&
         kernelPart == o.kernelPart && precompiledPart == o.precompiledPart;
}
bool PlanCommand::operator==(const PlanCommand &o) const {
  return kind == o.kind && program == o.program && ranges == o.ranges;
}
bool ExecutionPlan::operator==(const ExecutionPlan &o) const {
  return version == o.version && inputs == o.inputs && outputs == o.outputs &&
         scratchBytes == o.scratchBytes &&
         scratchAlignment == o.scratchAlignment &&
         constantsBytes == o.constantsBytes &&
         constantsAlignment == o.constantsAlignment &&
         constantsPart == o.constantsPart && constants == o.constants &&
         programs == o.programs && commands == o.commands &&
         footprint == o.footprint && lowerBound == o.lowerBound &&
         naive == o.naive && dispatchCount == o.dispatchCount &&
         barrierCount == o.barrierCount;
}

//===----------------------------------------------------------------------===//
// JSON
//===----------------------------------------------------------------------===//

namespace {

[[noreturn]] void fail(const std::string &message) {
  throw std::runtime_error(message);
}

bool isPowerOfTwo(uint64_t v) { return v && !(v & (v - 1)); }

json rangeToJson(const PlanRange &r) {
  return json{{"buffer", planBufferName(r.buffer)},
              {"index", r.index},
              {"offset", r.offset},
              {"bytes", r.bytes}};
}

PlanRange rangeFromJson(const json &j) {
  PlanRange r;
  std::string buffer = j.at("buffer").get<std::string>();
  if (buffer == "input")
    r.buffer = PlanBuffer::Input;
  else if (buffer == "output")
    r.buffer = PlanBuffer::Output;
  else if (buffer == "scratch")
    r.buffer = PlanBuffer::Scratch;
  else if (buffer == "constants")
    r.buffer = PlanBuffer::Constants;
  else
    fail("unknown buffer '" + buffer + "'");
  r.index = j.at("index").get<JsonInt<uint32_t>>();
  r.offset = j.at("offset").get<JsonInt<uint64_t>>();
  r.bytes = j.at("bytes").get<JsonInt<uint64_t>>();
  return r;
}

json tensorToJson(const PlanTensor &t) {
  json j{{"name", t.name},
         {"dtype", cgc_dtype_name(t.dtype) ? cgc_dtype_name(t.dtype) : ""},
         {"shape", t.shape},
         {"bytes", t.bytes}};
  if (t.rowsFrom >= 0)
    j["rows_from"] = t.rowsFrom;
  return j;
}

cgc_dtype_t dtypeFromJson(const json &j, const std::string &what) {
  std::string name = j.get<std::string>();
  cgc_dtype_t dtype = cgc_dtype_from_name(name.c_str());
  if (dtype == CGC_DTYPE_INVALID)
    fail(what + " has unknown dtype '" + name + "'");
  return dtype;
}

uint64_t denseBytes(cgc_dtype_t dtype, const std::vector<int64_t> &shape,
                    const std::string &what) {
  std::optional<uint64_t> bytes = cgc::tensorBytes(shape, cgc_dtype_size(dtype));
  if (!bytes)
    fail(what + ": " + cgc::tensorSizeError(shape, cgc_dtype_size(dtype)));
  return *bytes;
}

PlanTensor tensorFromJson(const json &j, const std::string &what) {
  PlanTensor t;
  t.name = j.at("name").get<std::string>();
  t.dtype = dtypeFromJson(j.at("dtype"), what + " '" + t.name + "'");
  t.shape = jsonInts<int64_t>(j.at("shape"));
  t.bytes = j.at("bytes").get<JsonInt<uint64_t>>();
  if (t.bytes != denseBytes(t.dtype, t.shape, what + " '" + t.name + "'"))
    fail(what + " '" + t.name + "' has " + std::to_string(t.bytes) +
         " bytes, which does not match its dtype and shape");
  if (j.contains("rows_from")) {
    if (what != "output")
      fail(what + " '" + t.name + "' has rows_from; only outputs do");
    t.rowsFrom = j.at("rows_from").get<JsonInt<uint32_t>>();
  }
  return t;
}

/// An output with data-dependent rows names another output, one int64,
/// which itself has all its rows; and has a dimension 0 to bound.
void checkRowsFrom(const ExecutionPlan &plan) {
  for (size_t i = 0; i < plan.outputs.size(); ++i) {
    const PlanTensor &t = plan.outputs[i];
    if (t.rowsFrom < 0)
      continue;
    const std::string what = "output '" + t.name + "'";
    if (size_t(t.rowsFrom) >= plan.outputs.size() || size_t(t.rowsFrom) == i)
      fail(what + " takes its rows from output " + std::to_string(t.rowsFrom) +
           ", which is not another output of the model");
    const PlanTensor &count = plan.outputs[size_t(t.rowsFrom)];
    if (count.dtype != CGC_DTYPE_INT64 || count.bytes != 8 || count.rowsFrom >= 0)
      fail(what + " takes its rows from output '" + count.name +
           "', which is not one int64 of fixed size");
    if (t.shape.empty())
      fail(what + " has data-dependent rows but no dimension 0");
  }
}

std::string describe(const PlanRange &r) {
  std::string text = planBufferName(r.buffer);
  if (r.buffer == PlanBuffer::Input || r.buffer == PlanBuffer::Output)
    text += " #" + std::to_string(r.index);
  std::optional<uint64_t> end = cgc::checkedAdd(r.offset, r.bytes);
  return text + " [" + std::to_string(r.offset) + ", " +
         (end ? std::to_string(*end) : "beyond 2^64") + ")";
}

/// Checks that `r` lies inside the buffer it names.
void checkRange(const ExecutionPlan &plan, const PlanRange &r,
                const std::string &where) {
  uint64_t size = 0;
  switch (r.buffer) {
  case PlanBuffer::Input:
    if (r.index >= plan.inputs.size())
      fail(where + " refers to input #" + std::to_string(r.index) +
           " but the model has " + std::to_string(plan.inputs.size()));
    size = plan.inputs[r.index].bytes;
    break;
  case PlanBuffer::Output:
    if (r.index >= plan.outputs.size())
      fail(where + " refers to output #" + std::to_string(r.index) +
           " but the model has " + std::to_string(plan.outputs.size()));
    size = plan.outputs[r.index].bytes;
    break;
  case PlanBuffer::Scratch:
    size = plan.scratchBytes;
    break;
  case PlanBuffer::Constants:
    size = plan.constantsBytes;
    break;
  }
  if (r.offset > size || r.bytes > size - r.offset)
    fail(where + " " + describe(r) + " lies outside its " +
         std::to_string(size) + "-byte buffer");
}

} // namespace

std::string serializeExecutionPlan(const ExecutionPlan &plan) {
  json j;
  j["version"] = plan.version;
  j["inputs"] = json::array();
  for (const PlanTensor &t : plan.inputs)
    j["inputs"].push_back(tensorToJson(t));
  j["outputs"] = json::array();
  for (const PlanTensor &t : plan.outputs)
    j["outputs"].push_back(tensorToJson(t));
  j["scratch"] = {{"bytes", plan.scratchBytes},
                  {"alignment", plan.scratchAlignment}};
  json entries = json::array();
  for (const PlanConstant &c : plan.constants)
    entries.push_back(
        {{"name", c.name},
         {"offset", c.offset},
         {"bytes", c.bytes},
         {"dtype", cgc_dtype_name(c.dtype) ? cgc_dtype_name(c.dtype) : ""},
         {"shape", c.shape}});
  j["constants"] = {{"bytes", plan.constantsBytes},
                    {"alignment", plan.constantsAlignment},
                    {"part", plan.constantsPart},
                    {"entries", entries}};
  j["programs"] = json::array();
  for (const PlanProgram &p : plan.programs) {
    json program = {{"name", p.name},
                    {"target", p.target},
                    {"kind", p.kind == PlanProgram::Kind::Mlir ? "mlir" : "kernel"},
                    {"part", p.part},
                    {"bind_points_part", p.bindPointsPart}};
    if (p.kind == PlanProgram::Kind::Kernel)
      program["kernel_part"] = p.kernelPart;
    if (p.precompiledPart)
      program["precompiled_part"] = *p.precompiledPart;
    j["programs"].push_back(program);
  }
  j["commands"] = json::array();
  for (const PlanCommand &c : plan.commands) {
    json ranges = json::array();
    for (const PlanRange &r : c.ranges)
      ranges.push_back(rangeToJson(r));
    if (c.kind == PlanCommand::Kind::Dispatch)
      j["commands"].push_back({{"dispatch", c.program}, {"bindings", ranges}});
    else
      j["commands"].push_back({{"barrier", ranges}});
  }
  j["memory"] = {{"footprint", plan.footprint},
                 {"lower_bound", plan.lowerBound},
                 {"naive", plan.naive}};
  j["schedule"] = {{"dispatches", plan.dispatchCount},
                   {"barriers", plan.barrierCount}};
  return j.dump(1);
}

bool parseExecutionPlan(std::string_view text, ExecutionPlan &plan,
                        std::string &error) {
  try {
    json j = json::parse(text);
    plan = ExecutionPlan();
    plan.version = j.at("version").get<JsonInt<uint32_t>>();
    if (plan.version != ExecutionPlan::kVersion)
      fail("plan version " + std::to_string(plan.version) +
           " is not the supported version " +
           std::to_string(ExecutionPlan::kVersion));
    for (const json &t : j.at("inputs"))
      plan.inputs.push_back(tensorFromJson(t, "input"));
    for (const json &t : j.at("outputs"))
      plan.outputs.push_back(tensorFromJson(t, "output"));
    checkRowsFrom(plan);
    plan.scratchBytes = j.at("scratch").at("bytes").get<JsonInt<uint64_t>>();
    plan.scratchAlignment = j.at("scratch").at("alignment").get<JsonInt<uint64_t>>();
    const json &constants = j.at("constants");
    plan.constantsBytes = constants.at("bytes").get<JsonInt<uint64_t>>();
    plan.constantsAlignment = constants.at("alignment").get<JsonInt<uint64_t>>();
    plan.constantsPart = constants.at("part").get<JsonInt<uint32_t>>();
    if (!isPowerOfTwo(plan.scratchAlignment) ||
        !isPowerOfTwo(plan.constantsAlignment) ||
        plan.scratchAlignment > cgc::kMaxAlignment ||
        plan.constantsAlignment > cgc::kMaxAlignment)
      fail("the scratch and constants alignments must be powers of two of at "
           "most " + std::to_string(cgc::kMaxAlignment));
    if (plan.scratchBytes > cgc::kMaxTensorBytes ||
        plan.constantsBytes > cgc::kMaxTensorBytes)
      fail("the scratch (" + std::to_string(plan.scratchBytes) +
           " bytes) and constants (" + std::to_string(plan.constantsBytes) +
           " bytes) must each be at most " + cgc::maxTensorBytesText());
    for (const json &c : constants.at("entries")) {
      PlanConstant entry;
      entry.name = c.at("name").get<std::string>();
      std::string what = "constant '" + entry.name + "'";
      entry.offset = c.at("offset").get<JsonInt<uint64_t>>();
      entry.bytes = c.at("bytes").get<JsonInt<uint64_t>>();
      entry.dtype = dtypeFromJson(c.at("dtype"), what);
      entry.shape = jsonInts<int64_t>(c.at("shape"));
      if (entry.bytes != denseBytes(entry.dtype, entry.shape, what))
        fail(what + " has " + std::to_string(entry.bytes) +
             " bytes, which does not match its dtype and shape");
      if (entry.offset % plan.constantsAlignment)
        fail(what + " at offset " + std::to_string(entry.offset) +
             " is not aligned to " + std::to_string(plan.constantsAlignment));
      if (entry.offset > plan.constantsBytes ||
          entry.bytes > plan.constantsBytes - entry.offset)
        fail(what + " lies outside the " + std::to_string(plan.constantsBytes) +
             "-byte constants buffer");
      plan.constants.push_back(std::move(entry));
    }
    for (const json &p : j.at("programs")) {
      PlanProgram program;
      program.name = p.at("name").get<std::string>();
      program.target = p.at("target").get<std::string>();
      std::string kind = p.at("kind").get<std::string>();
      if (kind == "mlir")
        program.kind = PlanProgram::Kind::Mlir;
      else if (kind == "kernel")
        program.kind = PlanProgram::Kind::Kernel;
      else
        fail("program '" + program.name + "' has unknown kind '" + kind + "'");
      program.part = p.at("part").get<JsonInt<uint32_t>>();
      program.bindPointsPart = p.at("bind_points_part").get<JsonInt<uint32_t>>();
      if (program.kind == PlanProgram::Kind::Kernel)
        program.kernelPart = p.at("kernel_part").get<JsonInt<uint32_t>>();
      if (p.contains("precompiled_part")) {
        if (program.kind != PlanProgram::Kind::Mlir)
          fail("program '" + program.name +
               "' is a kernel program with a precompiled part; only MLIR programs are "
               "precompiled");
        program.precompiledPart = p.at("precompiled_part").get<JsonInt<uint32_t>>();
      }
      plan.programs.push_back(std::move(program));
    }
    for (const json &c : j.at("commands")) {
      PlanCommand command;
      if (c.contains("dispatch")) {
        command.kind = PlanCommand::Kind::Dispatch;
        command.program = c.at("dispatch").get<JsonInt<uint32_t>>();
        if (command.program >= plan.programs.size())
          fail("command #" + std::to_string(plan.commands.size()) +
               " dispatches program #" + std::to_string(command.program) +
               " of " + std::to_string(plan.programs.size()));
        for (const json &r : c.at("bindings"))
          command.ranges.push_back(rangeFromJson(r));
        ++plan.dispatchCount;
      } else if (c.contains("barrier")) {
        command.kind = PlanCommand::Kind::Barrier;
        for (const json &r : c.at("barrier"))
          command.ranges.push_back(rangeFromJson(r));
        if (command.ranges.empty())
          fail("command #" + std::to_string(plan.commands.size()) +
               " is a barrier on no range");
        ++plan.barrierCount;
      } else {
        fail("command #" + std::to_string(plan.commands.size()) +
             " is neither a dispatch nor a barrier");
      }
      std::string where = "command #" + std::to_string(plan.commands.size());
      for (size_t i = 0; i < command.ranges.size(); ++i)
        checkRange(plan, command.ranges[i],
                   where + (command.kind == PlanCommand::Kind::Dispatch
                                ? " binding #" + std::to_string(i)
                                : " barrier range"));
      plan.commands.push_back(std::move(command));
    }
    plan.footprint = j.at("memory").at("footprint").get<JsonInt<uint64_t>>();
    plan.lowerBound = j.at("memory").at("lower_bound").get<JsonInt<uint64_t>>();
    plan.naive = j.at("memory").at("naive").get<JsonInt<uint64_t>>();
    if (plan.footprint > plan.scratchBytes)
      fail("the footprint exceeds the scratch buffer");
    if (j.at("schedule").at("dispatches").get<JsonInt<uint32_t>>() != plan.dispatchCount ||
        j.at("schedule").at("barriers").get<JsonInt<uint32_t>>() != plan.barrierCount)
      fail("the schedule's dispatch and barrier counts do not match the "
           "commands");
  } catch (const std::exception &e) {
    error = std::string("malformed execution plan: ") + e.what();
    return false;
  }
  return true;
}

//===----------------------------------------------------------------------===//
// CompiledModel
//===----------------------------------------------------------------------===//

struct CompiledModel::Impl {
  ContainerReader reader;
  ExecutionPlan plan;
  ByteView outputIR, constants;
  std::vector<ByteView> bytecode;
  std::vector<std::vector<BindPoint>> bindPoints;
  std::vector<KernelProgram> kernels; // empty for mlir programs
  std::vector<ByteView> precompiled;  // empty where there is none
  std::vector<const ContainerReader::Part *> mlirPart, bindPointsPart;
  std::string irVersion, compilerVersion;
  // The file mapping of openFile.
  void *mapping = nullptr;
  size_t mappingSize = 0;

  ~Impl() {
    if (mapping)
      munmap(mapping, mappingSize);
  }

  bool open(const void *data, size_t size, bool mappedFile, std::string &error);
};

CompiledModel::CompiledModel() : impl(std::make_unique<Impl>()) {}
CompiledModel::~CompiledModel() = default;
CompiledModel::CompiledModel(CompiledModel &&) noexcept = default;
CompiledModel &CompiledModel::operator=(CompiledModel &&) noexcept = default;

bool CompiledModel::open(const void *data, size_t size, std::string &error) {
  impl = std::make_unique<Impl>();
  return impl->open(data, size, /*mappedFile=*/false, error);
}

bool CompiledModel::openFile(const std::string &path, std::string &error) {
  impl = std::make_unique<Impl>();
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    error = path + ": cannot open: " + std::strerror(errno);
    return false;
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    error = path + ": cannot stat: " + std::strerror(errno);
    ::close(fd);
    return false;
  }
  if (!S_ISREG(st.st_mode) || st.st_size == 0) {
    error = path + (S_ISDIR(st.st_mode)    ? ": it is a directory, not a compiled model"
                    : !S_ISREG(st.st_mode) ? ": not a regular file"
                                           : ": the file is empty");
    ::close(fd);
    return false;
  }
  size_t size = static_cast<size_t>(st.st_size);
  void *mapping = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (mapping == MAP_FAILED) {
    error = path + ": cannot map: " + std::strerror(errno);
    return false;
  }
  impl->mapping = mapping;
  impl->mappingSize = size;
  if (!impl->open(mapping, size, /*mappedFile=*/true, error)) {
    error = path + ": " + error;
    return false;
  }
  return true;
}

bool CompiledModel::Impl::open(const void *data, size_t size, bool mappedFile,
                               std::string &error) {
  if (!(mappedFile ? reader.openMappedFile(data, size, error)
                  : reader.open(data, size, error)))
    return false;
  if (!reader.checkKnownParts({parts::kMLIR, parts::kVersions,
                               parts::kBindPoints, parts::kPlan,
                               parts::kKernelProgram, parts::kConstants,
                               parts::kPrecompiledProgram},
                              error))
    return false;
  const std::vector<ContainerReader::Part> &all = reader.getParts();
  auto exactlyOne = [&](uint32_t fourCC) -> const ContainerReader::Part * {
    std::vector<const ContainerReader::Part *> found = reader.find(fourCC);
    if (found.size() != 1) {
      error = "a compiled model has exactly one '" + fourCCString(fourCC) +
              "' part, this one has " + std::to_string(found.size());
      return nullptr;
    }
    return found.front();
  };

  // Versions.
  const ContainerReader::Part *versions = exactlyOne(parts::kVersions);
  if (!versions)
    return false;
  try {
    json j = json::parse(versions->data.str());
    irVersion = j.at("ir_version").get<std::string>();
    compilerVersion = j.at("compiler").get<std::string>();
  } catch (const std::exception &e) {
    error = std::string("malformed versions part: ") + e.what();
    return false;
  }
  unsigned major = 0;
  if (std::sscanf(irVersion.c_str(), "%u.", &major) != 1) {
    error = "malformed IR version '" + irVersion + "'";
    return false;
  }
  if (major > CGC_IR_VERSION_MAJOR) {
    error = "the model's IR version " + irVersion +
            " is newer than this runtime supports (" +
            std::to_string(CGC_IR_VERSION_MAJOR) + ".x); rebuild the runtime";
    return false;
  }

  // MLIR parts: one Output IR, the rest Partition IR.
  std::vector<Guid> interfaceOf(all.size());
  unsigned outputs = 0;
  for (size_t i = 0; i < all.size(); ++i) {
    if (all[i].fourCC != parts::kMLIR)
      continue;
    ByteView bytes;
    if (!ContainerReader::splitMLIRPart(all[i], interfaceOf[i], bytes, error))
      return false;
    if (interfaceOf[i] == interfaces::kOutput) {
      ++outputs;
      outputIR = bytes;
    } else if (interfaceOf[i] != interfaces::kSubgraphPartition) {
      const char *name = interfaces::name(interfaceOf[i]);
      error = "part #" + std::to_string(i) + " is MLIR tagged " +
              (name ? std::string(name) : "with unknown interface " +
                                              interfaceOf[i].str()) +
              "; a compiled model holds CGC_OUTPUT and CGC_SUBGRAPH_PARTITION";
      return false;
    }
  }
  if (outputs != 1) {
    error = "a compiled model has exactly one CGC_OUTPUT part, this one has " +
            std::to_string(outputs);
    return false;
  }

  // The plan.
  const ContainerReader::Part *planPart = exactlyOne(parts::kPlan);
  if (!planPart || !parseExecutionPlan(planPart->data.str(), plan, error))
    return false;

  // Constants.
  if (plan.constantsPart >= all.size() ||
      all[plan.constantsPart].fourCC != parts::kConstants ||
      !exactlyOne(parts::kConstants)) {
    if (error.empty())
      error = "the plan's constants part #" +
              std::to_string(plan.constantsPart) + " is not the 'CGCN' part";
    return false;
  }
  if (!ContainerReader::alignedPayload(all[plan.constantsPart], constants,
                                       error))
    return false;
  if (constants.size != plan.constantsBytes) {
    error = "the constants part holds " + std::to_string(constants.size) +
            " bytes, the plan says " + std::to_string(plan.constantsBytes);
    return false;
  }
  size_t constantsOffset = constants.data - static_cast<const uint8_t *>(data);
  if (constantsOffset % plan.constantsAlignment) {
    error = "the constants start at file offset " +
            std::to_string(constantsOffset) + ", not aligned to " +
            std::to_string(plan.constantsAlignment);
    return false;
  }

  // Programs.
  auto partAt = [&](uint32_t index, uint32_t fourCC, const std::string &what)
      -> const ContainerReader::Part * {
    if (index >= all.size() || all[index].fourCC != fourCC) {
      error = what + " refers to part #" + std::to_string(index) +
              ", which is not a '" + fourCCString(fourCC) + "' part";
      return nullptr;
    }
    return &all[index];
  };
  size_t count = plan.programs.size();
  bytecode.resize(count);
  bindPoints.resize(count);
  kernels.resize(count);
  precompiled.resize(count);
  mlirPart.resize(count);
  bindPointsPart.resize(count);
  std::vector<bool> precompiledUsed(all.size(), false);
  for (size_t p = 0; p < count; ++p) {
    const PlanProgram &program = plan.programs[p];
    std::string what = "program '" + program.name + "'";
    mlirPart[p] = partAt(program.part, parts::kMLIR, what);
    if (!mlirPart[p])
      return false;
    if (interfaceOf[program.part] != interfaces::kSubgraphPartition) {
      error = what + "'s part #" + std::to_string(program.part) +
              " is not tagged CGC_SUBGRAPH_PARTITION";
      return false;
    }
    Guid ignored;
    if (!ContainerReader::splitMLIRPart(*mlirPart[p], ignored, bytecode[p],
                                        error))
      return false;
    bindPointsPart[p] = partAt(program.bindPointsPart, parts::kBindPoints, what);
    if (!bindPointsPart[p] ||
        !deserializeBindPoints(bindPointsPart[p]->data.str(), bindPoints[p],
                               error)) {
      if (bindPointsPart[p])
        error = what + ": " + error;
      return false;
    }
    if (program.kind == PlanProgram::Kind::Kernel) {
      const ContainerReader::Part *kernel =
          partAt(program.kernelPart, parts::kKernelProgram, what);
      if (!kernel)
        return false;
      if (!deserializeKernelProgram(kernel->data.str(), kernels[p], error)) {
        error = what + ": " + error;
        return false;
      }
      if (kernels[p].bindings.size() != bindPoints[p].size()) {
        error = what + "'s kernel program has " +
                std::to_string(kernels[p].bindings.size()) +
                " bindings for " + std::to_string(bindPoints[p].size()) +
                " bind points";
        return false;
      }
      for (size_t b = 0; b < bindPoints[p].size(); ++b)
        if (kernels[p].bindings[b].bytes > bindPoints[p][b].bytes) {
          error = what + "'s kernel program needs " +
                  std::to_string(kernels[p].bindings[b].bytes) +
                  " bytes at binding #" + std::to_string(b) +
                  ", more than its bind point's " +
                  std::to_string(bindPoints[p][b].bytes);
          return false;
        }
    }
    if (program.precompiledPart) {
      uint32_t index = *program.precompiledPart;
      const ContainerReader::Part *part =
          partAt(index, parts::kPrecompiledProgram, what + "'s precompiled program");
      if (!part)
        return false;
      if (precompiledUsed[index]) {
        error = what + "'s precompiled program (part #" + std::to_string(index) +
                ") is another program's too";
        return false;
      }
      precompiledUsed[index] = true;
      // The blob is the driver's to judge (it may be for another driver or
      // compiler); here only that it is one: a container with a key.
      ContainerReader blob;
      PrecompiledKey key;
      if (!readPrecompiledProgram(part->data.data, part->data.size, blob, key, error)) {
        error = what + "'s precompiled program (part #" + std::to_string(index) + "): " + error;
        return false;
      }
      precompiled[p] = part->data;
    }
  }
  for (size_t i = 0; i < all.size(); ++i)
    if (all[i].fourCC == parts::kPrecompiledProgram && !precompiledUsed[i]) {
      error = "part #" + std::to_string(i) +
              " is a precompiled program ('CGPC') that no program of the plan refers to";
      return false;
    }

  // Every dispatch binds each bind point to a range of the right buffer,
  // large enough and aligned as the bind point asks.
  for (size_t c = 0; c < plan.commands.size(); ++c) {
    const PlanCommand &command = plan.commands[c];
    if (command.kind != PlanCommand::Kind::Dispatch)
      continue;
    const std::vector<BindPoint> &points = bindPoints[command.program];
    std::string where = "command #" + std::to_string(c) + " (program '" +
                        plan.programs[command.program].name + "')";
    if (command.ranges.size() != points.size()) {
      error = where + " has " + std::to_string(command.ranges.size()) +
              " bindings for " + std::to_string(points.size()) +
              " bind points";
      return false;
    }
    for (size_t b = 0; b < points.size(); ++b) {
      const PlanRange &range = command.ranges[b];
      const BindPoint &point = points[b];
      PlanBuffer expected = PlanBuffer::Scratch;
      switch (point.kind) {
      case BindPointKind::Argument: expected = PlanBuffer::Input; break;
      case BindPointKind::Output: expected = PlanBuffer::Output; break;
      case BindPointKind::Scratch: expected = PlanBuffer::Scratch; break;
      case BindPointKind::Constant: expected = PlanBuffer::Constants; break;
      }
      std::string bp = where + " bind point #" + std::to_string(b) + " '" +
                       point.name + "'";
      if (range.buffer != expected) {
        error = bp + " is a " + bindPointKindName(point.kind) +
                " bind point bound to the " + planBufferName(range.buffer) +
                " buffer";
        return false;
      }
      if (range.bytes < point.bytes) {
        error = bp + " needs " + std::to_string(point.bytes) +
                " bytes, its binding " + describe(range) + " has " +
                std::to_string(range.bytes);
        return false;
      }
      if (range.offset % point.alignment) {
        error = bp + " needs " + std::to_string(point.alignment) +
                "-byte alignment, its binding starts at " +
                std::to_string(range.offset);
        return false;
      }
    }
  }
  return true;
}

const ExecutionPlan &CompiledModel::getPlan() const { return impl->plan; }
ByteView CompiledModel::getOutputIR() const { return impl->outputIR; }
ByteView CompiledModel::getConstants() const { return impl->constants; }

std::array<uint8_t, 16> CompiledModel::getDigest() const {
  std::array<uint8_t, 16> digest;
  std::memcpy(digest.data(), impl->reader.bytes().data + 4, 16);
  return digest;
}

std::array<uint8_t, 16> constantDigest(const std::array<uint8_t, 16> &model, uint64_t offset,
                                       uint64_t bytes) {
  std::string text = "cgc constants 1";
  text.append(reinterpret_cast<const char *>(model.data()), model.size());
  for (uint64_t v : {offset, bytes})
    for (int i = 0; i < 8; ++i)
      text += char(uint8_t(v >> (8 * i)));
  std::array<uint8_t, 16> digest;
  md5(text.data(), text.size(), digest.data());
  return digest;
}
ByteView CompiledModel::getPartitionBytecode(size_t index) const {
  return impl->bytecode.at(index);
}
const std::vector<BindPoint> &CompiledModel::getBindPoints(size_t index) const {
  return impl->bindPoints.at(index);
}
const KernelProgram &CompiledModel::getKernelProgram(size_t index) const {
  return impl->kernels.at(index);
}
const std::string &CompiledModel::getIRVersion() const {
  return impl->irVersion;
}
const std::string &CompiledModel::getCompilerVersion() const {
  return impl->compilerVersion;
}

ByteView CompiledModel::getPrecompiledProgram(size_t index) const {
  return impl->precompiled.at(index);
}

std::vector<uint8_t> CompiledModel::buildProgramContainer(size_t index) const {
  const ContainerReader::Part *mlir = impl->mlirPart.at(index);
  const ContainerReader::Part *points = impl->bindPointsPart.at(index);
  ContainerWriter writer;
  writer.addPart(parts::kMLIR, mlir->data.data, mlir->data.size);
  writer.addPart(parts::kBindPoints, points->data.data, points->data.size);
  return writer.finish();
}

} // namespace cgc
