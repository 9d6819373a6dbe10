//===- onednn.h - oneDNN plumbing for the reference kernels -----*- C++ -*-===//
//
// Debian's libdnnl 2.6 is built with the OpenMP CPU runtime (libgomp;
// DNNL_CPU_RUNTIME == OMP). oneDNN sizes its parallel regions with
// omp_get_max_threads() of the calling thread, and several implementations
// fix their work split when the primitive is *created*. So the kernels
// create one primitive per thread count they run with (availableThreads():
// the pool's size, or 1 inside a pool task) and set the calling thread's
// OpenMP thread count to it around creation and execution. OpenMP entry
// points are resolved from the process (libgomp is loaded as libdnnl's
// dependency), so no second OpenMP runtime is linked in.
//
// Primitives run with a user scratchpad allocated per call, so one
// primitive may execute concurrently on several threads.
//
//===----------------------------------------------------------------------===//

#ifndef CGC_REFERENCE_KERNELS_ONEDNN_H
#define CGC_REFERENCE_KERNELS_ONEDNN_H

#include "common.h"

#include <dnnl.hpp>

#include <functional>
#include <tuple>
#include <map>
#include <mutex>
#include <unordered_map>

namespace cgc::ref::onednn {

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

/// Executes `prim` with a scratchpad of `scratchpadBytes` allocated for this
/// call.
void execute(const dnnl::primitive &prim, size_t scratchpadBytes,
             std::unordered_map<int, dnnl::memory> &args);

/// Wraps a pointer as a dnnl::memory without copying.
inline dnnl::memory wrap(const dnnl::memory::desc &desc, const void *ptr) {
  return dnnl::memory(desc, engine(), const_cast<void *>(ptr));
}

/// A lazily built object per thread count (primitives are thread-count
/// specific; see above). Thread-safe.
template <class T> class PerThreads {
public:
  const T &get(int threads, const std::function<std::unique_ptr<T>(int)> &make) const {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = items_.find(threads);
    if (it == items_.end()) {
      ThreadScope scope(threads);
      it = items_.emplace(threads, make(threads)).first;
    }
    return *it->second;
  }

private:
  mutable std::mutex mutex_;
  mutable std::map<int, std::unique_ptr<T>> items_;
};

/// Constant inputs prepared once per address (e.g. weights reordered to the
/// layout a primitive chose). Thread-safe; entries live as long as the
/// kernel.
class PreparedCache {
public:
  /// The prepared copy of the constant at `key`, made by `make` on first use.
  std::shared_ptr<AlignedBuffer> get(const void *key, size_t bytes,
                                     const std::function<void(void *)> &make) const;

private:
  mutable std::mutex mutex_;
  mutable std::map<const void *, std::shared_ptr<AlignedBuffer>> items_;
};

} // namespace cgc::ref::onednn

#endif // CGC_REFERENCE_KERNELS_ONEDNN_H
