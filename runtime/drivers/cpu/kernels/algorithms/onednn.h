//===- onednn.h - oneDNN plumbing for the CPU kernels -----*- C++ -*-===//
//
// Debian's libdnnl 2.6 is built with the OpenMP CPU runtime (libgomp;
// DNNL_CPU_RUNTIME == OMP, no threadpool interop). An OpenMP team beside the
// ThreadPool would oversubscribe the cores (libgomp's workers spin for a
// while after every parallel region, while the pool's threads run the next
// kernel), so the kernels never let oneDNN start one: every primitive is
// created and executed with the calling thread's OpenMP thread count set to
// 1 (ThreadScope), which makes oneDNN run its work inline, and the kernels
// split their work into pieces that the ThreadPool runs. OpenMP entry points
// are resolved from the process (libgomp is loaded as libdnnl's dependency),
// so no second OpenMP runtime is linked in.
//
// Primitives run with a user scratchpad allocated per call, so one
// primitive may execute concurrently on several threads.
//
//===----------------------------------------------------------------------===//

#ifndef CGC_CPU_KERNELS_ONEDNN_H
#define CGC_CPU_KERNELS_ONEDNN_H

#include "common.h"
#include "sgemm.h"

#include <dnnl.hpp>

#include <algorithm>
#include <functional>
#include <tuple>
#include <map>
#include <mutex>
#include <unordered_map>

namespace cgc::cpu::onednn {

dnnl::engine &engine();

/// Sets the calling thread's OpenMP thread count for its lifetime and
/// restores the previous value after.
class ThreadScope {
public:
  explicit ThreadScope(int threads);
  ~ThreadScope();
  ThreadScope(const ThreadScope &) = delete;
  ThreadScope &operator=(const ThreadScope &) = delete;

private:
  int previous_;
};

/// oneDNN's data type for a dtype; false if it has none.
bool dataType(cgc_dtype_t dtype, dnnl::memory::data_type &out);

/// A plain memory descriptor with the operand's strides (elements); false
/// for negative strides.
bool plainDesc(const KernelOperand &operand, dnnl::memory::desc &out);
dnnl::memory::desc plainDesc(const std::vector<int64_t> &shape,
                             const std::vector<int64_t> &strides,
                             dnnl::memory::data_type type);

/// A plain operand as oneDNN sees it: dims and element strides (rank-matched
/// to the product's batch dims + 2).
struct PlainOperand {
  std::vector<int64_t> dims, strides;
  dnnl::memory::data_type type = dnnl::memory::data_type::f32;
  dnnl::memory::desc desc() const { return onednn::plainDesc(dims, strides, type); }
  /// The sub-operand of `len` entries from `start` along `dim` (nothing
  /// changes on a broadcast dimension or when dim < 0); `offset` receives the
  /// element offset of the sub-operand.
  PlainOperand slice(int dim, int64_t start, int64_t len, int64_t &offset) const {
    PlainOperand r = *this;
    offset = 0;
    if (dim >= 0 && dims[size_t(dim)] != 1) {
      r.dims[size_t(dim)] = len;
      offset = start * strides[size_t(dim)];
    }
    r.normalize();
    return r;
  }
  /// Elements from the first to one past the last addressed one (equal to
  /// the element count when the operand is dense).
  int64_t spanElements() const {
    int64_t last = 0;
    for (size_t d = 0; d < dims.size(); ++d)
      last += (dims[d] - 1) * strides[d];
    return last + 1;
  }
  /// Gives size-1 dimensions the stride a dense layout would have (the
  /// extent of the dimensions after them), so that a slice that is dense
  /// (a channel range of one image) is recognized as such by oneDNN.
  void normalize() {
    for (size_t d = 0; d < dims.size(); ++d) {
      if (dims[d] != 1)
        continue;
      int64_t inner = 1;
      for (size_t e = d + 1; e < dims.size(); ++e)
        if (dims[e] != 1)
          inner = std::max(inner, strides[e] * dims[e]);
      strides[d] = inner;
    }
  }
};

inline PlainOperand plainOperand(const dnnl::memory::desc &d) {
  PlainOperand p;
  p.dims = d.dims();
  const dnnl_memory_desc_t &c = d.data;
  p.strides.assign(c.format_desc.blocking.strides, c.format_desc.blocking.strides + c.ndims);
  p.type = d.data_type();
  return p;
}

/// One epilogue chain as oneDNN post-ops. Extra operands (binary post-ops)
/// come in epilogue order; `extraArgs[i]` is the execution argument id of
/// extra operand i, `extraDescs[i]` its memory descriptor.
struct PostOps {
  dnnl::post_ops ops;
  std::vector<int> extraArgs;
  std::vector<dnnl::memory::desc> extraDescs;
  std::string summary; // "+relu+add"
  /// Eltwise algorithms used so far with their parameters: oneDNN 2.6's
  /// post-op injectors give every eltwise post-op of one algorithm the
  /// parameters of the first (measured: linear(0.25), add, linear(2)
  /// computes linear(0.25) twice), so a second use must have the same
  /// parameters or take another form.
  std::vector<std::tuple<dnnl::algorithm, float, float>> eltwiseUsed;

  /// Appends an eltwise post-op unless that would hit the problem above;
  /// a pure scale `linear(a, 0)` falls back to `pow(a, 1)`.
  bool appendEltwise(dnnl::algorithm alg, float alpha, float beta, std::string &reason);
};

/// Appends `chain` (elementwise ops on a result of `outShape` and `dtype`) to
/// `out` as post-ops (after any already there). Returns false with `reason`
/// naming the op that has no post-op form.
bool buildPostOps(const std::vector<KernelDesc> &chain, const std::vector<int64_t> &outShape,
                  cgc_dtype_t dtype, PostOps &out, std::string &reason);

/// `ops` as PackedSgemm epilogue ops, binary op i taking operand i (its
/// strides are left to the caller, which knows the result's geometry).
/// False if an op has no SgemmOp form.
bool sgemmOps(const dnnl::post_ops &ops, std::vector<SgemmOp> &out);

/// Executes `prim` on the calling thread only (OpenMP count 1) with a
/// scratchpad of `scratchpadBytes` allocated for this call.
void execute(const dnnl::primitive &prim, size_t scratchpadBytes,
             std::unordered_map<int, dnnl::memory> &args);

/// Wraps a pointer as a dnnl::memory without copying.
/// A memory descriptor's layout as text (dims, type, blocking): what tells
/// two prepared copies of one source apart (prepared.h).
std::string layoutText(const dnnl::memory::desc &desc);

inline dnnl::memory wrap(const dnnl::memory::desc &desc, const void *ptr) {
  return dnnl::memory(desc, engine(), const_cast<void *>(ptr));
}

/// Hands the pages of a constant operand back to the kernel once every
/// piece of a kernel reads a prepared (reordered or packed) copy of it: its
/// source is then only read again to prepare for another split.
/// MADV_PAGEOUT on the operand's whole pages: a file-backed mapping, such as
/// the compiled model's constants mapped in place, drops them and re-reads
/// them from the file if ever touched; anonymous memory keeps its contents.
/// So weights are not resident twice. Once per address.
class SourcePageOut {
public:
  void release(const PlainOperand &operand, const void *base);

private:
  std::mutex mutex_;
  std::vector<const void *> released_;
};

/// A direct kernel's weights (and bias) in the layout it reads. Constant
/// ones are prepared once per pair of source addresses (a constant is
/// immutable while bound at its address) and the source's pages handed
/// back (SourcePageOut); others into scratch on every call. A constant's
/// copy may instead come from a precompiled database (prepared.h): then the
/// source is not read at all. Safe for concurrent use.
class PreparedWeights {
public:
  PreparedWeights(const KernelOperand &weights, bool constant);
  PreparedWeights(PlainOperand weights, bool constant);
  bool constant() const { return constant_; }
  /// The prepared copy for weights `w` and bias `b` (may be null): `bytes`
  /// of 64-byte aligned memory filled by `fill`, from the per-address cache
  /// or `scratch`.
  const float *get(const float *w, const float *b, size_t bytes, Scratch &scratch,
                   FunctionRef<void(float *)> fill) const;

private:
  struct Entry {
    const void *weights, *bias;
    std::shared_ptr<AlignedBuffer> data; // null for a block mapped from a database
    const float *ready;
  };
  PlainOperand weights_; // for handing the source pages back
  bool constant_;
  int site_; // prepared::nextSite() at construction
  mutable std::mutex mutex_;
  mutable std::vector<Entry> entries_;
  mutable SourcePageOut pageOut_;
};

} // namespace cgc::cpu::onednn

#endif // CGC_CPU_KERNELS_ONEDNN_H
