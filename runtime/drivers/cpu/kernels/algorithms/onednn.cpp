//===- onednn.cpp - oneDNN plumbing for the CPU kernels -------------===//

#include "onednn.h"
#include "prepared.h"

#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cfloat>

namespace cgc::cpu::onednn {

using dt = dnnl::memory::data_type;

dnnl::engine &engine() {
  static dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  return eng;
}

namespace {
struct OmpApi {
  void (*setNumThreads)(int) = nullptr;
  int (*getMaxThreads)() = nullptr;
  OmpApi() {
    // libgomp comes with libdnnl; look the entry points up in the process
    // instead of linking an OpenMP runtime of our own.
    setNumThreads = reinterpret_cast<void (*)(int)>(dlsym(RTLD_DEFAULT, "omp_set_num_threads"));
    getMaxThreads = reinterpret_cast<int (*)()>(dlsym(RTLD_DEFAULT, "omp_get_max_threads"));
  }
};
const OmpApi &omp() {
  static OmpApi api;
  return api;
}
} // namespace

ThreadScope::ThreadScope(int threads) {
  const OmpApi &api = omp();
  previous_ = api.getMaxThreads ? api.getMaxThreads() : 1;
  if (api.setNumThreads && previous_ != threads)
    api.setNumThreads(threads);
}

ThreadScope::~ThreadScope() {
  const OmpApi &api = omp();
  if (api.setNumThreads && api.getMaxThreads && api.getMaxThreads() != previous_)
    api.setNumThreads(previous_);
}

bool dataType(cgc_dtype_t dtype, dt &out) {
  switch (dtype) {
  case CGC_DTYPE_FLOAT32: out = dt::f32; return true;
  case CGC_DTYPE_BFLOAT16: out = dt::bf16; return true;
  case CGC_DTYPE_FLOAT16: out = dt::f16; return true;
  case CGC_DTYPE_INT8: out = dt::s8; return true;
  case CGC_DTYPE_UINT8: out = dt::u8; return true;
  case CGC_DTYPE_INT32: out = dt::s32; return true;
  default: return false;
  }
}

dnnl::memory::desc plainDesc(const std::vector<int64_t> &shape,
                             const std::vector<int64_t> &strides, dt type) {
  dnnl::memory::dims dims(shape.begin(), shape.end());
  dnnl::memory::dims st(strides.begin(), strides.end());
  if (dims.empty()) {
    dims = {1};
    st = {1};
  }
  return dnnl::memory::desc(dims, type, st);
}

bool plainDesc(const KernelOperand &operand, dnnl::memory::desc &out) {
  dt type;
  if (!dataType(operand.dtype, type))
    return false;
  std::vector<int64_t> strides = operand.effectiveStrides();
  for (int64_t s : strides)
    if (s < 0)
      return false;
  out = plainDesc(operand.shape, strides, type);
  return true;
}

namespace {
struct Eltwise {
  dnnl::algorithm alg;
  float alpha, beta;
};
} // namespace

bool PostOps::appendEltwise(dnnl::algorithm alg, float alpha, float beta, std::string &reason) {
  auto conflicts = [&](dnnl::algorithm a, float x, float y) {
    for (const auto &[ua, ux, uy] : eltwiseUsed)
      if (ua == a && (ux != x || uy != y))
        return true;
    return false;
  };
  if (conflicts(alg, alpha, beta)) {
    if (alg == dnnl::algorithm::eltwise_linear && beta == 0.f &&
        !conflicts(dnnl::algorithm::eltwise_pow, alpha, 1.f)) {
      alg = dnnl::algorithm::eltwise_pow;
      beta = 1.f;
    } else {
      reason = "oneDNN 2.6 cannot chain two eltwise post-ops of one algorithm with different "
               "parameters";
      return false;
    }
  }
  ops.append_eltwise(1.0f, alg, alpha, beta);
  eltwiseUsed.emplace_back(alg, alpha, beta);
  return true;
}

bool buildPostOps(const std::vector<KernelDesc> &chain, const std::vector<int64_t> &outShape,
                  cgc_dtype_t dtype, PostOps &out, std::string &reason) {
  using A = dnnl::algorithm;
  dt type;
  if (!dataType(dtype, type) || (type != dt::f32 && type != dt::bf16)) {
    reason = cat("post-ops need a float32 or bfloat16 result, got ", dtypeName(dtype));
    return false;
  }
  bool ok = true;
  for (const KernelDesc &op : chain) {
    DescReader r(op);
    auto eltwise = [&](std::initializer_list<Eltwise> list, const char *name) {
      for (const Eltwise &e : list)
        if (ok && !out.appendEltwise(e.alg, e.alpha, e.beta, reason)) {
          reason = cat(op.op, ": ", reason);
          ok = false;
        }
      out.summary += cat("+", name);
    };
    const std::string &name = op.op;
    if (op.inputs.empty() || !op.inputs[0]) {
      reason = cat(name, ": missing input 0");
      return false;
    }
    const KernelOperand &running = *op.inputs[0];
    if (running.dtype != dtype || running.shape != outShape) {
      reason = cat(name, ": input 0 (", dtypeName(running.dtype), " ", shapeStr(running.shape),
                   ") is not the anchor's result (", dtypeName(dtype), " ", shapeStr(outShape),
                   ")");
      return false;
    }
    if (op.outputs.size() != 1 || op.outputs[0].dtype != dtype || op.outputs[0].shape != outShape) {
      reason = cat(name, ": its result is not ", dtypeName(dtype), " ", shapeStr(outShape));
      return false;
    }
    size_t expectedInputs = 1;
    if (opKindOf(name) == OpKind::Relu) {
      eltwise({{A::eltwise_relu, 0.f, 0.f}}, "relu");
    } else if (opKindOf(name) == OpKind::LeakyRelu) {
      eltwise({{A::eltwise_relu, float(r.getFloat("alpha", 0.01)), 0.f}}, "leaky_relu");
    } else if (opKindOf(name) == OpKind::Elu) {
      eltwise({{A::eltwise_elu, float(r.getFloat("alpha", 1.0)), 0.f}}, "elu");
    } else if (opKindOf(name) == OpKind::Selu) {
      float alpha = float(r.getFloat("alpha", 1.67326319217681884765625));
      float gamma = float(r.getFloat("gamma", 1.05070102214813232421875));
      eltwise({{A::eltwise_elu, alpha, 0.f}, {A::eltwise_linear, gamma, 0.f}}, "selu");
    } else if (opKindOf(name) == OpKind::Celu) {
      float alpha = float(r.getFloat("alpha", 1.0));
      if (alpha == 0) {
        reason = "celu with alpha 0";
        return false;
      }
      eltwise({{A::eltwise_linear, 1.0f / alpha, 0.f},
               {A::eltwise_elu, 1.0f, 0.f},
               {A::eltwise_linear, alpha, 0.f}},
              "celu");
    } else if (opKindOf(name) == OpKind::Tanh) {
      eltwise({{A::eltwise_tanh, 0.f, 0.f}}, "tanh");
    } else if (opKindOf(name) == OpKind::Sigmoid) {
      eltwise({{A::eltwise_logistic, 0.f, 0.f}}, "sigmoid");
    } else if (opKindOf(name) == OpKind::Swish) {
      eltwise({{A::eltwise_swish, 1.f, 0.f}}, "swish");
    } else if (opKindOf(name) == OpKind::Gelu) {
      bool tanhApprox = r.getString("approximate", "none", {"none", "tanh"}) == "tanh";
      eltwise({{tanhApprox ? A::eltwise_gelu_tanh : A::eltwise_gelu_erf, 0.f, 0.f}}, "gelu");
    } else if (opKindOf(name) == OpKind::Clip) {
      std::optional<double> lo = r.getOptionalFloat("min"), hi = r.getOptionalFloat("max");
      eltwise({{A::eltwise_clip_v2, lo ? float(*lo) : -FLT_MAX, hi ? float(*hi) : FLT_MAX}}, "clip");
    } else if (opKindOf(name) == OpKind::HardSwish) {
      eltwise({{A::eltwise_hardswish, 0.f, 0.f}}, "hard_swish");
    } else if (opKindOf(name) == OpKind::HardSigmoid) {
      eltwise({{A::eltwise_linear, float(r.getFloat("alpha", 0.2)), float(r.getFloat("beta", 0.5))},
               {A::eltwise_clip_v2, 0.f, 1.f}},
              "hard_sigmoid");
    } else if (opKindOf(name) == OpKind::Exp) {
      eltwise({{A::eltwise_exp, 0.f, 0.f}}, "exp");
    } else if (opKindOf(name) == OpKind::Log) {
      eltwise({{A::eltwise_log, 0.f, 0.f}}, "log");
    } else if (opKindOf(name) == OpKind::Sqrt) {
      eltwise({{A::eltwise_sqrt, 0.f, 0.f}}, "sqrt");
    } else if (opKindOf(name) == OpKind::Abs) {
      eltwise({{A::eltwise_abs, 0.f, 0.f}}, "abs");
    } else if (opKindOf(name) == OpKind::Neg) {
      eltwise({{A::eltwise_linear, -1.f, 0.f}}, "neg");
    } else if (opKindOf(name) == OpKind::Softplus) {
      eltwise({{A::eltwise_soft_relu, 0.f, 0.f}}, "softplus");
    } else if (opKindOf(name) == OpKind::Mish) {
      eltwise({{A::eltwise_mish, 0.f, 0.f}}, "mish");
    } else if (opKindOf(name) == OpKind::Round) {
      eltwise({{A::eltwise_round, 0.f, 0.f}}, "round");
    } else if (opKindOf(name) == OpKind::Reciprocal) {
      eltwise({{A::eltwise_pow, 1.f, -1.f}}, "reciprocal");
    } else if (opKindOf(name) == OpKind::Identity) {
      out.summary += "+identity";
    } else if (opKindOf(name) == OpKind::Add || opKindOf(name) == OpKind::Sub || opKindOf(name) == OpKind::Mul ||
               opKindOf(name) == OpKind::Div || opKindOf(name) == OpKind::Max || opKindOf(name) == OpKind::Min) {
      expectedInputs = 2;
      if (op.inputs.size() != 2 || !op.inputs[1]) {
        reason = cat(name, ": expected 2 inputs");
        return false;
      }
      const KernelOperand &other = *op.inputs[1];
      if (other.dtype != dtype) {
        reason = cat(name, ": the second operand is ", dtypeName(other.dtype));
        return false;
      }
      std::vector<int64_t> b;
      if (!broadcastShapes(other.shape, outShape, b) || b != outShape) {
        reason = cat(name, ": the second operand ", shapeStr(other.shape),
                     " does not broadcast to the result ", shapeStr(outShape));
        return false;
      }
      // The operand as a rank-matched view with size-1 broadcast dims.
      std::vector<int64_t> dims(outShape.size(), 1), strides(outShape.size(), 0);
      std::vector<int64_t> own = other.effectiveStrides();
      size_t offset = outShape.size() - other.shape.size();
      for (size_t i = 0; i < other.shape.size(); ++i) {
        dims[offset + i] = other.shape[i];
        strides[offset + i] = own[i];
        if (own[i] < 0) {
          reason = cat(name, ": the second operand has negative strides");
          return false;
        }
      }
      // Strides of size-1 dims do not matter; give them dense values so the
      // descriptor is a plain layout.
      int64_t dense = 1;
      for (size_t i = dims.size(); i-- > 0;) {
        if (dims[i] == 1)
          strides[i] = dense;
        dense = std::max(dense, strides[i] * dims[i]);
      }
      A alg = opKindOf(name) == OpKind::Add   ? A::binary_add
              : opKindOf(name) == OpKind::Sub ? A::binary_sub
              : opKindOf(name) == OpKind::Mul ? A::binary_mul
              : opKindOf(name) == OpKind::Div ? A::binary_div
              : opKindOf(name) == OpKind::Max ? A::binary_max
                                     : A::binary_min;
      dnnl::memory::desc desc = plainDesc(dims, strides, type);
      int index = out.ops.len();
      out.ops.append_binary(alg, desc);
      out.extraArgs.push_back(DNNL_ARG_ATTR_MULTIPLE_POST_OP(index) | DNNL_ARG_SRC_1);
      out.extraDescs.push_back(desc);
      out.summary += cat("+", name.substr(7));
    } else {
      reason = cat(name, " has no oneDNN post-op form");
      return false;
    }
    if (!ok)
      return false;
    if (op.inputs.size() != expectedInputs) {
      reason = cat(name, ": expected ", expectedInputs, " input(s), got ", op.inputs.size());
      return false;
    }
  }
  return true;
}

bool sgemmOps(const dnnl::post_ops &ops, std::vector<SgemmOp> &out) {
  using A = dnnl::algorithm;
  using Kind = SgemmOp::Kind;
  int binaries = 0;
  for (int i = 0; i < ops.len(); ++i) {
    SgemmOp op;
    if (ops.kind(i) == dnnl::primitive::kind::eltwise) {
      float scale;
      A alg;
      ops.get_params_eltwise(i, scale, alg, op.alpha, op.beta);
      if (scale != 1.0f)
        return false;
      if (alg == A::eltwise_relu)
        op.kind = Kind::Relu;
      else if (alg == A::eltwise_clip || alg == A::eltwise_clip_v2)
        op.kind = Kind::Clip;
      else if (alg == A::eltwise_linear)
        op.kind = Kind::Linear;
      else if (alg == A::eltwise_pow && op.beta == 1.0f)
        op.kind = Kind::Scale; // alpha * x^1
      else
        return false;
    } else if (ops.kind(i) == dnnl::primitive::kind::binary) {
      A alg;
      dnnl::memory::desc unused;
      ops.get_params_binary(i, alg, unused);
      op.operand = binaries++;
      if (alg == A::binary_add)
        op.kind = Kind::Add;
      else if (alg == A::binary_sub)
        op.kind = Kind::Sub;
      else if (alg == A::binary_mul)
        op.kind = Kind::Mul;
      else if (alg == A::binary_div)
        op.kind = Kind::Div;
      else
        return false;
    } else {
      return false;
    }
    out.push_back(op);
  }
  return true;
}

void execute(const dnnl::primitive &prim, size_t scratchpadBytes,
             std::unordered_map<int, dnnl::memory> &args) {
  ThreadScope single(1); // oneDNN runs inline; the ThreadPool splits work
  Scratch scratch;
  if (scratchpadBytes) {
    scratch.allocate(scratchpadBytes);
    dnnl::memory::desc desc({int64_t(scratchpadBytes)}, dt::u8, dnnl::memory::format_tag::a);
    args[DNNL_ARG_SCRATCHPAD] = dnnl::memory(desc, engine(), scratch.data());
  }
  // One CPU stream per thread (a stream is not shared between threads).
  thread_local dnnl::stream stream(engine());
  prim.execute(stream, args);
  stream.wait();
}

void SourcePageOut::release(const PlainOperand &operand, const void *base) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (std::find(released_.begin(), released_.end(), base) != released_.end())
      return;
    released_.push_back(base);
  }
#ifdef MADV_PAGEOUT
  const int64_t span = operand.spanElements();
  const uintptr_t page = uintptr_t(sysconf(_SC_PAGESIZE));
  const uintptr_t begin = (uintptr_t(base) + page - 1) / page * page;
  const uintptr_t end =
      (uintptr_t(base) + uintptr_t(span) * dnnl::memory::data_type_size(operand.type)) / page *
      page;
  if (end > begin)
    madvise(reinterpret_cast<void *>(begin), end - begin, MADV_PAGEOUT);
#endif
}

std::string layoutText(const dnnl::memory::desc &desc) {
  const dnnl_memory_desc_t &d = desc.data;
  std::string text = "t" + std::to_string(int(d.data_type)) + "f" + std::to_string(int(d.format_kind));
  for (int i = 0; i < d.ndims; ++i)
    text += (i ? "x" : "d") + std::to_string(d.dims[i]) + "p" + std::to_string(d.padded_dims[i]);
  if (d.format_kind == dnnl_blocked) {
    const dnnl_blocking_desc_t &b = d.format_desc.blocking;
    for (int i = 0; i < d.ndims; ++i)
      text += (i ? "," : "s") + std::to_string(b.strides[i]);
    for (int i = 0; i < b.inner_nblks; ++i)
      text += "b" + std::to_string(b.inner_idxs[i]) + ":" + std::to_string(b.inner_blks[i]);
  } else {
    text += "?"; // an opaque layout: only the same primitive makes it
  }
  text += "e" + std::to_string(d.extra.flags);
  return text;
}

PreparedWeights::PreparedWeights(const KernelOperand &weights, bool constant)
    : constant_(constant), site_(prepared::nextSite()) {
  weights_.dims = weights.shape;
  weights_.strides = weights.effectiveStrides();
}

PreparedWeights::PreparedWeights(PlainOperand weights, bool constant)
    : weights_(std::move(weights)), constant_(constant), site_(prepared::nextSite()) {}

const float *PreparedWeights::get(const float *w, const float *b, size_t bytes, Scratch &scratch,
                                  FunctionRef<void(float *)> fill) const {
  if (!constant_) {
    scratch.allocate(bytes);
    fill(scratch.as<float>());
    return scratch.as<float>();
  }
  const float *ready;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const Entry &e : entries_)
      if (e.weights == w && e.bias == b)
        return e.ready;
    prepared::Context *context = nullptr;
    std::string key;
    if (const void *mapped = prepared::lookup(site_, "", w, b, bytes, context, key)) {
      // Made offline from these very bytes: the source is never read.
      entries_.push_back({w, b, nullptr, static_cast<const float *>(mapped)});
      return static_cast<const float *>(mapped);
    }
    auto data = std::make_shared<AlignedBuffer>(bytes);
    fill(static_cast<float *>(data->data()));
    prepared::done(context, key, data->data(), bytes);
    entries_.push_back({w, b, data, static_cast<const float *>(data->data())});
    ready = static_cast<const float *>(data->data());
  }
  // Only the prepared copy is read from now on.
  pageOut_.release(weights_, w);
  return ready;
}

} // namespace cgc::cpu::onednn
