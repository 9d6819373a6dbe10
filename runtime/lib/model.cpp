//===- model.cpp - Loading a compiled model -------------------------------===//
//
// Validate the file (cgc/compiled_model.h), create every program in
// parallel (CreateStateObject for MLIR programs, with their precompiled
// program as a cached blob when they have one; CreateComputePipelineState
// for fallback kernel programs), and map the constants in place.
//
//===----------------------------------------------------------------------===//

#include "internal.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>

#include <sys/mman.h>
#include <unistd.h>

using namespace cgc;
using namespace cgc::rt;

cgc_model_s::Mapping::~Mapping() {
  if (data)
    munmap(data, size);
}

/// Sorts a reader's message into a status code.
static cgc_status_code_t classifyLoadError(const std::string &message) {
  if (message.find("cannot open") != std::string::npos)
    return message.find("No such file") != std::string::npos ? CGC_STATUS_NOT_FOUND
                                                              : CGC_STATUS_INVALID_ARGUMENT;
  if (message.find("newer than this runtime") != std::string::npos ||
      message.find("unsupported DX container version") != std::string::npos ||
      message.find("is not the supported version") != std::string::npos)
    return CGC_STATUS_INCOMPATIBLE;
  return CGC_STATUS_DATA_LOSS;
}

static std::wstring widen(const std::string &text) {
  return std::wstring(text.begin(), text.end());
}

/// Faults the pages of [data, data + size) of a read-only file mapping into
/// the process's page tables (MADV_POPULATE_READ; one read per page where
/// the kernel lacks it): what a first run would otherwise do one fault at a
/// time.
static void populatePages(const uint8_t *data, uint64_t size) {
  if (!size)
    return;
  const uintptr_t page = uintptr_t(sysconf(_SC_PAGESIZE));
  const uintptr_t begin = uintptr_t(data) & ~(page - 1);
  const uintptr_t end = (uintptr_t(data) + size + page - 1) & ~(page - 1);
#ifdef MADV_POPULATE_READ
  if (madvise(reinterpret_cast<void *>(begin), end - begin, MADV_POPULATE_READ) == 0)
    return;
#endif
  volatile uint8_t sink = 0;
  for (uintptr_t at = std::max(begin, uintptr_t(data)); at < uintptr_t(data) + size; at += page)
    sink = sink + *reinterpret_cast<const volatile uint8_t *>(at);
  (void)sink;
}

/// The bindings of `program` that a run reads densely: all but those only
/// read as the data of a gather (an embedding table, read at the rows its
/// indices name), whose pages a run touches sparsely.
static std::vector<bool> denselyReadBindings(const KernelProgram &program) {
  std::vector<bool> dense(program.bindings.size(), false), gathered(dense.size(), false);
  for (const KernelDesc &kernel : program.kernels)
    for (size_t i = 0; i < kernel.inputs.size(); ++i) {
      const std::optional<KernelOperand> &operand = kernel.inputs[i];
      if (!operand || operand->storage != KernelOperand::Storage::Binding ||
          operand->index >= dense.size())
        continue;
      const bool sparse = i == 0 && (kernel.kind() == OpKind::Gather ||
                                     kernel.kind() == OpKind::GatherElements);
      (sparse ? gathered : dense)[operand->index] = true;
    }
  for (size_t b = 0; b < dense.size(); ++b)
    dense[b] = dense[b] || !gathered[b];
  return dense;
}

static std::vector<uint8_t> kernelContainer(const KernelProgram &program) {
  ContainerWriter writer;
  writer.addPart(parts::kKernelProgram, serializeKernelProgram(program));
  return writer.finish();
}

void cgc_model_s::load(const cgc_model_options_t *options) {
  uint64_t start = nowNs();
  const ExecutionPlan &p = plan();
  ID3D12Device14 *d3d = device->d3d.Get();

  // Programs, in parallel.
  programs.resize(p.programs.size());
  std::mutex progressMutex;
  uint32_t done = 0;
  const char *noPrecompiled = std::getenv("CGC_NO_PRECOMPILED");
  bool ignorePrecompiled = (options && options->ignore_precompiled) ||
                           (noPrecompiled && *noPrecompiled && std::strcmp(noPrecompiled, "0"));
  std::atomic<uint32_t> precompiled{0}, compiled{0}, rejected{0}, fromDatabase{0},
      staleInDatabase{0};
  bool anyPrecompiled = false;
  uint64_t compileStart = nowNs();
  parallelFor(device->compileThreads, p.programs.size(), [&](size_t i) {
    const PlanProgram &planned = p.programs[i];
    Program &program = programs[i];
    program.name = planned.name;
    program.kind = planned.kind;
    std::string what = where() + "program " + std::to_string(i) + " '" + planned.name + "'" +
                       (planned.target.empty() ? "" : " (target " + planned.target + ")");
    uint64_t mark = device->messageMark();
    if (planned.kind == PlanProgram::Kind::Mlir) {
      std::vector<uint8_t> bytecode = file.buildProgramContainer(i);
      std::wstring name = widen(planned.name);
      D3D12_MLIR_PROGRAM_DESC desc = {name.c_str(), bytecode.data(), bytecode.size()};
      ByteView blob = file.getPrecompiledProgram(i);
      D3D12_CACHED_MLIR_PROGRAM_CGC cached = {name.c_str(), {blob.data, blob.size}};
      D3D12_STATE_SUBOBJECT subs[] = {
          {D3D12_STATE_SUBOBJECT_TYPE_MLIR_PROGRAM, &desc},
          {D3D12_STATE_SUBOBJECT_TYPE_CACHED_MLIR_PROGRAM_CGC, &cached}};
      bool withBlob = blob.size && !ignorePrecompiled;
      D3D12_STATE_OBJECT_DESC so = {D3D12_STATE_OBJECT_TYPE_EXECUTABLE, withBlob ? 2u : 1u, subs};
      HRESULT hr = d3d->CreateStateObject(&so, IID_PPV_ARGS(&program.stateObject));
      if (FAILED(hr)) {
        std::string why = CGCD3D12GetLastError();
        std::string more = device->messagesSince(mark, planned.name);
        fail(hr == E_NOTIMPL ? CGC_STATUS_UNIMPLEMENTED : CGC_STATUS_INTERNAL,
             what + ": CreateStateObject failed (" + hresultText(hr) + "): " +
                 (more.empty() ? why : more) +
                 (withBlob ? " (it was given the model's precompiled program; "
                             "CGC_NO_PRECOMPILED=1 has the driver compile the bytecode instead)"
                           : ""));
      }
      ComPtr<ID3D12StateObjectProperties1> properties;
      if (FAILED(program.stateObject->QueryInterface(IID_PPV_ARGS(&properties))))
        fail(CGC_STATUS_INTERNAL, what + ": the state object has no properties");
      program.id = properties->GetProgramIdentifier(name.c_str());
      CGC_D3D12_CACHED_MLIR_PROGRAM_STATUS status = CGC_D3D12_CACHED_MLIR_PROGRAM_STATUS_NONE;
      // Without a blob the driver may have found the program in a
      // registered precompiled database: ask (a driver that cannot say
      // compiled it).
      if (!withBlob &&
          FAILED(CGCD3D12GetCachedMlirProgramStatus(program.stateObject.Get(), name.c_str(),
                                                    &status)))
        status = CGC_D3D12_CACHED_MLIR_PROGRAM_STATUS_NONE;
      if (withBlob) {
        hr = CGCD3D12GetCachedMlirProgramStatus(program.stateObject.Get(), name.c_str(), &status);
        // A driver that does not report it takes no cached blobs: it compiled.
        if (hr == E_NOTIMPL)
          status = CGC_D3D12_CACHED_MLIR_PROGRAM_STATUS_MISMATCH;
        else if (FAILED(hr))
          fail(CGC_STATUS_INTERNAL, what + ": the driver does not say whether it used the "
                                           "precompiled program (" +
                                       hresultText(hr) + "): " + CGCD3D12GetLastError());
      }
      if (status == CGC_D3D12_CACHED_MLIR_PROGRAM_STATUS_HIT) {
        ++precompiled;
      } else if (status == CGC_D3D12_CACHED_MLIR_PROGRAM_STATUS_DATABASE_HIT) {
        ++fromDatabase;
      } else {
        if (status == CGC_D3D12_CACHED_MLIR_PROGRAM_STATUS_DATABASE_STALE)
          ++staleInDatabase;
        ++compiled;
        if (status == CGC_D3D12_CACHED_MLIR_PROGRAM_STATUS_MISMATCH)
          ++rejected;
      }
    } else {
      std::vector<uint8_t> shader = kernelContainer(file.getKernelProgram(i));
      D3D12_COMPUTE_PIPELINE_STATE_DESC desc = {};
      desc.CS.pShaderBytecode = shader.data();
      desc.CS.BytecodeLength = shader.size();
      HRESULT hr = d3d->CreateComputePipelineState(&desc, IID_PPV_ARGS(&program.pipeline));
      if (FAILED(hr)) {
        std::string why = CGCD3D12GetLastError();
        std::string more = device->messagesSince(mark);
        fail(hr == E_NOTIMPL ? CGC_STATUS_UNIMPLEMENTED : CGC_STATUS_INTERNAL,
             what + ": CreateComputePipelineState failed (" + hresultText(hr) + "): " +
                 (more.empty() ? why : more));
      }
    }
    std::lock_guard<std::mutex> lock(progressMutex);
    ++done;
    if (options && options->progress)
      options->progress(options->progress_user_data, done, uint32_t(p.programs.size()),
                        planned.name.c_str());
  });
  stats.compile_ns = nowNs() - compileStart;
  for (size_t i = 0; i < p.programs.size(); ++i)
    anyPrecompiled |= file.getPrecompiledProgram(i).size != 0;
  stats.precompiled_programs = precompiled;
  stats.compiled_programs = compiled;
  stats.precompiled_rejected = rejected;
  stats.database_programs = fromDatabase;
  stats.database_stale = staleInDatabase;
  stats.precompiled_ignored = ignorePrecompiled && anyPrecompiled;

  // Constants: in place when the file put them at a page boundary.
  ByteView bytes = file.getConstants();
  stats.constants_bytes = p.constantsBytes;
  if (p.constantsBytes) {
    if (bytes.size < p.constantsBytes)
      fail(CGC_STATUS_DATA_LOSS, where() + "the constants part holds " +
                                     std::to_string(bytes.size) + " bytes, the plan needs " +
                                     std::to_string(p.constantsBytes));
    uint64_t page = uint64_t(sysconf(_SC_PAGESIZE));
    uint64_t address = reinterpret_cast<uint64_t>(bytes.data);
    uint64_t span = (p.constantsBytes + page - 1) / page * page;
    bool inPlace = address % page == 0;
    if (inPlace) {
      HRESULT hr = d3d->OpenExistingHeapFromAddress1(bytes.data, span,
                                                     IID_PPV_ARGS(&constantsHeap));
      if (FAILED(hr))
        fail(CGC_STATUS_INTERNAL, where() + "OpenExistingHeapFromAddress1 over the constants "
                                            "failed (" +
                                      hresultText(hr) + "): " + CGCD3D12GetLastError());
      D3D12_RESOURCE_DESC desc = {};
      desc.Dimension = D3D12_RESOURCE_DIMENSION_BUFFER;
      desc.Width = span;
      desc.Height = desc.DepthOrArraySize = desc.MipLevels = 1;
      desc.SampleDesc.Count = 1;
      desc.Layout = D3D12_TEXTURE_LAYOUT_ROW_MAJOR;
      desc.Flags = D3D12_RESOURCE_FLAG_ALLOW_UNORDERED_ACCESS; // MLIR programs bind it
      hr = d3d->CreatePlacedResource(constantsHeap.Get(), 0, &desc, D3D12_RESOURCE_STATE_COMMON,
                                     nullptr, IID_PPV_ARGS(&constants));
      if (FAILED(hr))
        fail(CGC_STATUS_INTERNAL, where() + "CreatePlacedResource over the constants failed (" +
                                      hresultText(hr) + ")");
    } else {
      constants = createBuffer(device.get(), p.constantsBytes, "the constants");
      void *dst = nullptr;
      if (FAILED(constants->Map(0, nullptr, &dst)))
        fail(CGC_STATUS_INTERNAL, "cannot map the constants buffer");
      std::memcpy(dst, bytes.data, p.constantsBytes);
    }
    constantsAddress = constants->GetGPUVirtualAddress();
    stats.constants_in_place = inPlace;
    stats.constants_address = constantsAddress;
  }

  // Empty constants that a dispatch still binds need a valid address.
  if (!constants)
    for (const PlanCommand &command : p.commands)
      for (const PlanRange &range : command.ranges)
        if (range.buffer == PlanBuffer::Constants && !constants) {
          constants = createBuffer(device.get(), 64, "the (empty) constants");
          constantsAddress = constants->GetGPUVirtualAddress();
        }

  // The constants are in place and never change while the model lives: the
  // driver may prepare what it derives from them (packed or transformed
  // weights) now, so that the first run does no lazy work. Per dispatch of
  // an MLIR program with constants (the driver skips a set it prepared).
  const std::array<uint8_t, 16> modelDigest = file.getDigest();
  uint64_t prepareStart = nowNs();
  for (const PlanCommand &command : p.commands) {
    if (command.kind != PlanCommand::Kind::Dispatch)
      continue;
    const Program &program = programs.at(command.program);
    if (program.kind != PlanProgram::Kind::Mlir) {
      // A compute pipeline's constants have no preparation step: fault
      // their pages of the mapped file in now rather than in its first run,
      // except a table a gather reads at a few rows (BERT's 94 MB of word
      // embeddings would otherwise all become resident).
      if (stats.constants_in_place) {
        std::vector<bool> dense = denselyReadBindings(file.getKernelProgram(command.program));
        for (size_t i = 0; i < command.ranges.size(); ++i)
          if (command.ranges[i].buffer == PlanBuffer::Constants && i < dense.size() && dense[i])
            populatePages(bytes.data + command.ranges[i].offset, command.ranges[i].bytes);
      }
      continue;
    }
    std::vector<D3D12_MLIR_PROGRAM_BINDING> bound;
    std::vector<CGC_D3D12_CONSTANT_DIGEST> digests;
    for (size_t i = 0; i < command.ranges.size(); ++i) {
      const PlanRange &range = command.ranges[i];
      if (range.buffer != PlanBuffer::Constants)
        continue;
      D3D12_MLIR_PROGRAM_BINDING b = {};
      b.BindPointIndex = UINT(i);
      b.Flags = D3D12_MLIR_PROGRAM_BINDING_FLAG_NONE;
      b.Type = D3D12_MLIR_PROGRAM_BINDING_TYPE_GPU;
      b.GpuBinding.StartAddress = constantsAddress + range.offset;
      b.GpuBinding.SizeInBytes = range.bytes;
      bound.push_back(b);
      // What the bytes are (the file's verified digest, the range): a
      // precompiled database may hold them prepared (cgc-soc prepare).
      CGC_D3D12_CONSTANT_DIGEST d;
      auto digest = constantDigest(modelDigest, range.offset, range.bytes);
      std::memcpy(d.Digest, digest.data(), 16);
      digests.push_back(d);
    }
    if (bound.empty())
      continue;
    std::wstring name = widen(program.name);
    uint64_t mark = device->messageMark();
    CGC_D3D12_PREPARED_CONSTANTS_STATISTICS prepared = {};
    HRESULT hr = CGCD3D12PrepareMlirProgramConstantsWithDigests(
        program.stateObject.Get(), name.c_str(), UINT(bound.size()), bound.data(), digests.data(),
        &prepared);
    stats.prepared_blocks_mapped += prepared.BlocksMapped;
    stats.prepared_bytes_mapped += prepared.BytesMapped;
    stats.prepared_blocks_computed += prepared.BlocksComputed;
    stats.prepared_bytes_computed += prepared.BytesComputed;
    if (FAILED(hr)) {
      // Sequential: every message since the mark is about this program
      // (the runtime's own, a database's corruption, come without its name).
      std::string more = device->messagesSince(mark);
      fail(CGC_STATUS_INTERNAL, where() + "program '" + program.name +
                                    "': the driver refused its constants (" + hresultText(hr) +
                                    "): " + (more.empty() ? CGCD3D12GetLastError() : more));
    }
  }

  stats.prepare_ns = nowNs() - prepareStart;
  for (const PlanProgram &program : p.programs)
    ++(program.kind == PlanProgram::Kind::Mlir ? stats.mlir_programs : stats.kernel_programs);
  for (const PlanCommand &command : p.commands)
    ++(command.kind == PlanCommand::Kind::Dispatch ? stats.dispatches : stats.barriers);
  stats.scratch_bytes = p.scratchBytes;
  stats.load_ns = nowNs() - start;
}

namespace cgc::rt {

Ref<cgc_model_s> loadModelFile(cgc_device_s *device, const char *path,
                               const cgc_model_options_t *options) {
  if (!path || !*path)
    fail(CGC_STATUS_INVALID_ARGUMENT, "cgc_model_load_file: the path is empty");
  uint64_t start = nowNs();
  auto model = Ref<cgc_model_s>::adopt(new cgc_model_s());
  model->device = Ref<cgc_device_s>::share(device);
  model->path = path;
  std::string error;
  if (!model->file.openFile(path, error))
    fail(classifyLoadError(error), error);
  model->load(options);
  model->stats.load_ns = nowNs() - start;
  return model;
}

Ref<cgc_model_s> loadModelMemory(cgc_device_s *device, const void *data, size_t size,
                                 const cgc_model_options_t *options) {
  if (!data || !size)
    fail(CGC_STATUS_INVALID_ARGUMENT, "cgc_model_load_memory: no data");
  uint64_t start = nowNs();
  auto model = Ref<cgc_model_s>::adopt(new cgc_model_s());
  model->device = Ref<cgc_device_s>::share(device);
  model->path = "<memory>";
  void *copy = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (copy == MAP_FAILED)
    fail(CGC_STATUS_RESOURCE_EXHAUSTED,
         "cgc_model_load_memory: cannot map " + std::to_string(size) + " bytes");
  model->copy.data = copy;
  model->copy.size = size;
  std::memcpy(copy, data, size);
  mprotect(copy, size, PROT_READ);
  std::string error;
  if (!model->file.open(copy, size, error))
    fail(classifyLoadError(error), "<memory>: " + error);
  model->load(options);
  model->stats.load_ns = nowNs() - start;
  return model;
}

} // namespace cgc::rt
