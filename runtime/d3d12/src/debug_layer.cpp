//===- debug_layer.cpp - Validation of dispatches (debug layer) -----------===//
//
// Runs only on devices created with the debug layer: the record path of a
// device without it never calls into this file.
//
//===----------------------------------------------------------------------===//

#include "internal.h"

namespace cgc::d3d12 {

static std::string describe(const ProgramInfo &program, UINT index) {
  const BindPoint &bp = program.bindPoints[index];
  return "bind point " + std::to_string(index) + " '" + bp.name + "' (" +
         bindPointKindName(bp.kind) + ", " + std::to_string(bp.bytes) + " bytes)";
}

static std::string stateName(D3D12_RESOURCE_STATES state) {
  switch (state) {
  case D3D12_RESOURCE_STATE_COMMON: return "COMMON";
  case D3D12_RESOURCE_STATE_UNORDERED_ACCESS: return "UNORDERED_ACCESS";
  case D3D12_RESOURCE_STATE_GENERIC_READ: return "GENERIC_READ";
  case D3D12_RESOURCE_STATE_COPY_DEST: return "COPY_DEST";
  case D3D12_RESOURCE_STATE_COPY_SOURCE: return "COPY_SOURCE";
  case D3D12_RESOURCE_STATE_NON_PIXEL_SHADER_RESOURCE: return "NON_PIXEL_SHADER_RESOURCE";
  default: return hex(uint32_t(state));
  }
}

std::string bindingProblem(const ResourceRegistry::Entry &resource, D3D12_RESOURCE_STATES state) {
  std::string which = "the resource" + (resource.name.empty() ? "" : " '" + resource.name + "'") +
                      " at " + hex(resource.start);
  if (!resource.unorderedAccess)
    return which + " was created without D3D12_RESOURCE_FLAG_ALLOW_UNORDERED_ACCESS (MLIR "
                   "program bindings are buffers with unordered access)";
  if (resource.heapType == D3D12_HEAP_TYPE_UPLOAD || resource.heapType == D3D12_HEAP_TYPE_READBACK)
    return which + " lives in an " +
           (resource.heapType == D3D12_HEAP_TYPE_UPLOAD ? "UPLOAD" : "READBACK") +
           " heap, which allows no unordered access; use a DEFAULT heap or a CUSTOM heap "
           "with a CPU page property";
  if (state != D3D12_RESOURCE_STATE_COMMON && state != D3D12_RESOURCE_STATE_UNORDERED_ACCESS)
    return which + " is in state " + stateName(state) +
           "; MLIR program bindings must be in D3D12_RESOURCE_STATE_COMMON or "
           "UNORDERED_ACCESS (ResourceBarrier transition it first)";
  return "";
}

/// Among the live resources holding [start, +size), one a binding may use;
/// else an error for the innermost. False if no resource holds the range.
static bool findBindable(Device &device, uint64_t start, uint64_t size,
                         const BindingProblemFn &problemOf,
                         ResourceRegistry::Entry &resource, std::string &problem) {
  std::vector<ResourceRegistry::Entry> all = device.resources().findAll(start, size);
  if (all.empty())
    return false;
  problem.clear();
  for (const ResourceRegistry::Entry &candidate : all) {
    std::string why = problemOf(candidate);
    if (why.empty()) {
      resource = candidate;
      problem.clear();
      return true;
    }
    if (problem.empty()) {
      resource = candidate;
      problem = why;
    }
  }
  return true;
}

/// The largest live resource holding `address`, for messages.
static bool largestHolding(Device &device, uint64_t address, ResourceRegistry::Entry &resource) {
  std::vector<ResourceRegistry::Entry> all = device.resources().findAll(address, 0);
  if (all.empty())
    return false;
  resource = all.back();
  return true;
}

std::vector<std::string> validateDispatchGraph(
    Device &device, const ProgramInfo *program, const D3D12_DISPATCH_GRAPH_DESC &desc,
    const BindingProblemFn &problemOf) {
  std::vector<std::string> errors;
  if (!program) {
    errors.push_back("DispatchGraph: no MLIR program is set on the command list (call SetProgram "
                     "with an identifier from GetProgramIdentifier first)");
    return errors;
  }
  const std::string prefix = "DispatchGraph (program '" + program->name + "'): ";
  const D3D12_MLIR_PROGRAM_BINDINGS &b = desc.MlirProgramBindings;
  const size_t count = program->bindPoints.size();
  if (b.NumBindings && !b.pBindings) {
    errors.push_back(prefix + "pBindings is null with NumBindings = " +
                     std::to_string(b.NumBindings));
    return errors;
  }
  if (b.NumBindings != count)
    errors.push_back(prefix + "NumBindings is " + std::to_string(b.NumBindings) +
                     " but the program has " + std::to_string(count) +
                     " bind points (MLIR programs have no optional bindings)");
  std::vector<int> boundBy(count, -1);
  for (UINT i = 0; i < b.NumBindings; ++i) {
    const D3D12_MLIR_PROGRAM_BINDING &binding = b.pBindings[i];
    const std::string which = "binding #" + std::to_string(i);
    if (binding.BindPointIndex >= count) {
      errors.push_back(prefix + which + " has BindPointIndex " +
                       std::to_string(binding.BindPointIndex) + ", but the program has " +
                       std::to_string(count) + " bind points");
      continue;
    }
    const UINT index = binding.BindPointIndex;
    const BindPoint &bp = program->bindPoints[index];
    const std::string target = describe(*program, index);
    if (boundBy[index] >= 0) {
      errors.push_back(prefix + target + " is bound twice (bindings #" +
                       std::to_string(boundBy[index]) + " and #" + std::to_string(i) + ")");
      continue;
    }
    boundBy[index] = int(i);
    if (binding.Flags != D3D12_MLIR_PROGRAM_BINDING_FLAG_NONE)
      errors.push_back(prefix + target + ": Flags must be D3D12_MLIR_PROGRAM_BINDING_FLAG_NONE");
    if (binding.Type == D3D12_MLIR_PROGRAM_BINDING_TYPE_CPU) {
      if (device.tier() < D3D12_MLIR_PROGRAMS_TIER_2_0) {
        errors.push_back(prefix + target + ": CPU bindings need D3D12_MLIR_PROGRAMS_TIER_2_0");
        continue;
      }
      if (!binding.CpuBinding.pData) {
        errors.push_back(prefix + target + " is bound to null CPU data");
        continue;
      }
      if (binding.CpuBinding.DataSizeInBytes < bp.bytes)
        errors.push_back(prefix + target + ": the CPU data holds " +
                         std::to_string(binding.CpuBinding.DataSizeInBytes) +
                         " bytes, fewer than the bind point's " + std::to_string(bp.bytes));
      continue;
    }
    if (binding.Type != D3D12_MLIR_PROGRAM_BINDING_TYPE_GPU) {
      errors.push_back(prefix + target + " has an unknown binding type " +
                       std::to_string(int(binding.Type)));
      continue;
    }
    const uint64_t start = binding.GpuBinding.StartAddress;
    const uint64_t size = binding.GpuBinding.SizeInBytes;
    if (start == 0) {
      errors.push_back(prefix + target + " is bound to a null GPU virtual address");
      continue;
    }
    // A resource must hold the whole bound range (SizeInBytes 0: the bind
    // point's bytes from the address); placed resources may alias, so the
    // one that does is looked for, not the first holding the address.
    ResourceRegistry::Entry resource;
    std::string problem;
    if (!findBindable(device, start, size ? size : bp.bytes, problemOf, resource, problem)) {
      if (!largestHolding(device, start, resource))
        errors.push_back(prefix + target + ": GPU virtual address " + hex(start) +
                         " is not inside any live resource of this device");
      else if (size)
        errors.push_back(prefix + target + ": the range [" + hex(start) + ", +" +
                         std::to_string(size) + ") runs past the end of the " +
                         std::to_string(resource.size) + "-byte resource at " +
                         hex(resource.start));
      else
        errors.push_back(prefix + target + ": the bound range [" + hex(start) + ", +" +
                         std::to_string(resource.start + resource.size - start) +
                         ") is smaller than the bind point's " + std::to_string(bp.bytes) +
                         " bytes");
      continue;
    }
    if (!problem.empty())
      errors.push_back(prefix + target + ": " + problem);
    if (size && size < bp.bytes)
      errors.push_back(prefix + target + ": the bound range [" + hex(start) + ", +" +
                       std::to_string(size) + ") is smaller than the bind point's " +
                       std::to_string(bp.bytes) + " bytes");
    if (bp.alignment > 1 && start % bp.alignment)
      errors.push_back(prefix + target + ": GPU virtual address " + hex(start) +
                       " is not aligned to the bind point's " + std::to_string(bp.alignment) +
                       " bytes");
  }
  for (size_t i = 0; i < count; ++i)
    if (boundBy[i] < 0)
      errors.push_back(prefix + describe(*program, UINT(i)) + " is not bound");
  return errors;
}

std::vector<std::string> validateDispatch(
    Device &device, const PipelineState *pipeline,
    const std::vector<D3D12_GPU_VIRTUAL_ADDRESS> &views, UINT x, UINT y, UINT z,
    const BindingProblemFn &problemOf) {
  std::vector<std::string> errors;
  if (!pipeline) {
    errors.push_back("Dispatch: no compute pipeline state is set");
    return errors;
  }
  if (x != 1 || y != 1 || z != 1)
    errors.push_back("Dispatch(" + std::to_string(x) + ", " + std::to_string(y) + ", " +
                     std::to_string(z) + "): a kernel program runs as a whole; dispatch (1, 1, 1)");
  const auto &bindings = pipeline->bindings();
  for (size_t i = 0; i < bindings.size(); ++i) {
    const std::string target = "Dispatch: root UAV " + std::to_string(i) + " (binding '" +
                               bindings[i].name + "', " + std::to_string(bindings[i].bytes) +
                               " bytes)";
    uint64_t address = i < views.size() ? views[i] : 0;
    if (!address) {
      errors.push_back(target + " is not set");
      continue;
    }
    ResourceRegistry::Entry resource;
    std::string problem;
    if (!findBindable(device, address, bindings[i].bytes, problemOf, resource, problem)) {
      if (!largestHolding(device, address, resource))
        errors.push_back(target + ": GPU virtual address " + hex(address) +
                         " is not inside any live resource of this device");
      else
        errors.push_back(target + ": only " +
                         std::to_string(resource.start + resource.size - address) +
                         " bytes remain in the resource from " + hex(address));
      continue;
    }
    if (!problem.empty())
      errors.push_back(target + ": " + problem);
  }
  // Root UAVs past the program's bindings are not an error: as on D3D12, root
  // arguments persist across SetPipelineState, so a pipeline with fewer
  // bindings than the previous one sees stale ones it does not use.
  return errors;
}

} // namespace cgc::d3d12
