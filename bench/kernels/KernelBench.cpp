//===- KernelBench.cpp - GFLOP/s of the CPU kernels -----------------===//
//
// Times the kernels on the convolution shapes of ResNet-50 (batch 1,
// 224x224) and the matrix products of one BERT-base encoder layer (sequence
// 128), at 1 and 2 threads, and prints achieved GFLOP/s per shape and for
// the whole network (layers weighted by how often they occur). Weights are
// marked constant, as the driver does for constant memrefs, so they are
// prepared once. A few memory-bound kernels are reported in GB/s. Where a
// kernel replaced another (depthwise convolutions on channels-last
// activations), both are timed in alternating batches and reported as
// old -> new (min/median ms).
//
//   bench-kernels [--threads 1,2] [--min-time 0.3] [--filter substring] [--cpu-time]
//
// --cpu-time times with the process CPU clock instead of the wall clock: on
// a shared, loaded machine it measures the time the kernel actually ran
// (meaningful at 1 thread; at more threads it sums the threads' time).
//
//===----------------------------------------------------------------------===//

#include "kernels.h"
#include "config.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <initializer_list>
#include <memory>
#include <new>
#include <random>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

using namespace cgc;
using namespace cgc::cpu;

namespace {

/// Benches whose name and group do not contain it are not built.
std::string gFilter;
/// Measure process CPU time instead of wall time (for comparisons on a
/// loaded machine at 1 thread: time the process actually ran).
bool gCpuTime = false;

double now() {
  if (gCpuTime) {
    timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

bool selected(const std::string &name, const std::string &group) {
  return gFilter.empty() || name.find(gFilter) != std::string::npos ||
         group.find(gFilter) != std::string::npos;
}

/// 64-byte aligned storage, as the driver's memory plan aligns every tensor
/// (an unaligned buffer splits every vector load of a channels-last
/// convolution across two cache lines: 30% slower, measured).
template <class T> struct Aligned64 {
  using value_type = T;
  Aligned64() = default;
  template <class U> Aligned64(const Aligned64<U> &) {}
  T *allocate(size_t n) {
    void *p = std::aligned_alloc(64, (n * sizeof(T) + 63) / 64 * 64);
    if (!p)
      throw std::bad_alloc();
    return static_cast<T *>(p);
  }
  void deallocate(T *p, size_t) { std::free(p); }
  template <class U> bool operator==(const Aligned64<U> &) const { return true; }
  template <class U> bool operator!=(const Aligned64<U> &) const { return false; }
};

struct Buffer {
  std::vector<float, Aligned64<float>> data;
  KernelOperand operand;
};

Buffer buffer(std::vector<int64_t> shape, std::mt19937 &rng, float scale = 1.0f) {
  Buffer b;
  b.operand.dtype = CGC_DTYPE_FLOAT32;
  b.operand.shape = shape;
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  b.data.resize(size_t(n));
  std::uniform_real_distribution<float> dist(-scale, scale);
  for (float &v : b.data)
    v = dist(rng);
  return b;
}

struct Bench {
  std::string name;
  double flops = 0; // per run (0: report GB/s)
  double bytes = 0;
  int count = 1;    // occurrences in the network
  std::string group;
  std::unique_ptr<Kernel> kernel;
  /// The kernel `kernel` replaces, timed interleaved with it (batches
  /// alternate) and reported as old -> new, min and median of the batches.
  std::unique_ptr<Kernel> baseline;
  std::vector<Buffer> inputs, outputs;
  /// Other copies of input 1 (constant weights at other addresses): runs
  /// cycle through them, so their packed copies stream from memory instead
  /// of staying in cache, as a whole model's weights do.
  std::vector<Buffer> weightCopies;
};

/// `b` with `copies` - 1 more copies of its weights (input 1), so that its
/// runs stream them from memory as a model's do (a bench not selected has
/// no kernel and gets none).
Bench withWeightCopies(Bench b, int copies, std::mt19937 &rng) {
  for (int c = 1; b.kernel && c < copies; ++c)
    b.weightCopies.push_back(buffer(b.inputs[1].operand.shape, rng, 0.1f));
  return b;
}

double timeRuns(const Bench &b, ThreadPool &pool, double minTime) {
  std::vector<const void *> in;
  std::vector<void *> out;
  for (const Buffer &x : b.inputs)
    in.push_back(x.data.data());
  for (const Buffer &x : b.outputs)
    out.push_back(const_cast<float *>(x.data.data()));
  KernelArgs args{in.data(), out.data()};
  size_t runs = 0;
  auto runOnce = [&] {
    if (!b.weightCopies.empty())
      in[1] = runs % (b.weightCopies.size() + 1) == 0
                  ? b.inputs[1].data.data()
                  : b.weightCopies[runs % (b.weightCopies.size() + 1) - 1].data.data();
    ++runs;
    b.kernel->run(args, pool);
  };
  // Warm up: primitives, prepared weights (every copy).
  for (size_t i = 0; i < std::max<size_t>(2, b.weightCopies.size() + 1); ++i)
    runOnce();
  // Best of several timed batches (the machine may be shared).
  double best = 1e30;
  double start = now();
  do {
    int reps = 0;
    double t0 = now(), elapsed;
    do {
      runOnce();
      ++reps;
      elapsed = now() - t0;
    } while (elapsed < minTime / 5);
    best = std::min(best, elapsed / reps);
  } while (now() - start < minTime);
  return best;
}

/// Median and minimum of per-run times of `kernel` and `baseline` over
/// alternating batches (each about minTime / 40), so both see the same
/// machine load.
struct PairTimes {
  double newMin, newMedian, oldMin, oldMedian;
};

PairTimes timePair(const Bench &b, ThreadPool &pool, double minTime) {
  std::vector<const void *> in;
  std::vector<void *> out;
  for (const Buffer &x : b.inputs)
    in.push_back(x.data.data());
  for (const Buffer &x : b.outputs)
    out.push_back(const_cast<float *>(x.data.data()));
  KernelArgs args{in.data(), out.data()};
  const Kernel *kernels[2] = {b.kernel.get(), b.baseline.get()};
  for (const Kernel *k : kernels) {
    k->run(args, pool); // warm up: primitives, prepared weights
    k->run(args, pool);
  }
  std::vector<double> times[2];
  double start = now();
  do {
    for (int which = 0; which < 2; ++which) {
      int reps = 0;
      double t0 = now(), elapsed;
      do {
        kernels[which]->run(args, pool);
        ++reps;
        elapsed = now() - t0;
      } while (elapsed < minTime / 40);
      times[which].push_back(elapsed / reps);
    }
  } while (now() - start < 2 * minTime);
  for (auto &t : times)
    std::sort(t.begin(), t.end());
  return {times[0].front(), times[0][times[0].size() / 2], times[1].front(),
          times[1][times[1].size() / 2]};
}

KernelDesc convDesc(const Buffer &x, const Buffer &w, const Buffer &b, const Buffer &y,
                    int64_t stride, int64_t pad, int64_t groups) {
  KernelDesc d;
  d.op = "cgc_op.convolution";
  d.inputs = {x.operand, w.operand, b.operand};
  d.outputs = {y.operand};
  d.setAttr("strides", AttrValue::ofInts({stride, stride}));
  d.setAttr("dilations", AttrValue::ofInts({1, 1}));
  d.setAttr("start_padding", AttrValue::ofInts({pad, pad}));
  d.setAttr("end_padding", AttrValue::ofInts({pad, pad}));
  d.setAttr("groups", AttrValue::ofInt(groups));
  return d;
}

Bench conv(const std::string &group, int count, int64_t c, int64_t hw, int64_t m, int64_t k,
           int64_t stride, bool relu, std::mt19937 &rng, int64_t groups = 1) {
  Bench b;
  b.group = group;
  b.count = count;
  int64_t pad = k / 2;
  int64_t out = (hw + 2 * pad - k) / stride + 1;
  b.flops = 2.0 * double(m) * double(c / groups) * double(k * k) * double(out * out);
  std::ostringstream name;
  name << "conv " << c << "->" << m << " " << k << "x" << k << " s" << stride << " @" << hw;
  if (groups > 1)
    name << " dw";
  if (relu)
    name << " +relu";
  b.name = name.str();
  if (!selected(b.name, group)) {
    b.inputs.clear();
    b.outputs.clear();
    return b;
  }
  b.inputs.push_back(buffer({1, c, hw, hw}, rng));
  b.inputs.push_back(buffer({m, c / groups, k, k}, rng, 0.1f));
  b.inputs.push_back(buffer({m}, rng));
  b.outputs.push_back(buffer({1, m, out, out}, rng));
  KernelDesc d = convDesc(b.inputs[0], b.inputs[1], b.inputs[2], b.outputs[0], stride, pad, groups);
  KernelOptions options;
  options.constantInputs = {false, true, true};
  std::string error;
  if (relu) {
    KernelDesc r;
    r.op = "cgc_op.relu";
    r.inputs = {b.outputs[0].operand};
    r.outputs = {b.outputs[0].operand};
    b.kernel = createFusedKernel(d, {r}, options, error);
  } else {
    b.kernel = createKernel(d, options, error);
  }
  if (!b.kernel) {
    std::fprintf(stderr, "%s: %s\n", b.name.c_str(), error.c_str());
    std::exit(1);
  }
  return b;
}

/// Channels-last (NHWC strides) view of an N x C x H x W buffer.
void makeChannelsLast(Buffer &b) {
  const std::vector<int64_t> &s = b.operand.shape;
  b.operand.strides = {s[1] * s[2] * s[3], 1, s[3] * s[1], s[1]};
}

/// Creates `b.kernel` (`d` fused with `chain`, or alone when it is empty,
/// its weights and bias constant) with environment variable `knob` at `kernelValue` (null: as
/// it is) and `b.baseline` with `knob` at `baselineValue` (kernel choices
/// are read when kernels are created), then restores `knob`. Exits naming
/// the case if either cannot be created.
void createPair(Bench &b, const KernelDesc &d, const std::vector<KernelDesc> &chain,
                const char *knob, const char *kernelValue, const char *baselineValue) {
  KernelOptions options;
  options.constantInputs = {false, true, true};
  // The knob is a CGC_CPU_<SETTING> variable; the driver reads its
  // environment once per process, so each kernel is created under a
  // configuration of its own instead (kernelValue null: the process's).
  std::string setting = std::string(knob).substr(std::strlen("CGC_CPU_"));
  for (char &ch : setting)
    ch = ch == '_' ? '-' : char(std::tolower(static_cast<unsigned char>(ch)));
  auto create = [&](const char *value) -> std::unique_ptr<Kernel> {
    KernelConfig config = KernelConfig::process();
    std::string error;
    if (value && !config.set(setting, value, error)) {
      std::fprintf(stderr, "%s: %s\n", b.name.c_str(), error.c_str());
      std::exit(1);
    }
    ConfigScope scope(config);
    std::unique_ptr<Kernel> kernel = chain.empty() ? createKernel(d, options, error)
                                                   : createFusedKernel(d, chain, options, error);
    if (!kernel) {
      std::fprintf(stderr, "%s: %s\n", b.name.c_str(), error.c_str());
      std::exit(1);
    }
    return kernel;
  };
  b.kernel = create(kernelValue);
  b.baseline = create(baselineValue);
}

/// An unpadded NCHW convolution + relu small enough that oneDNN's fixed
/// cost per run is much of its time (LeNet's): the patch kernel, which
/// gathers the overlapping windows straight into the packed GEMM's B,
/// against the kernel chosen without it (CGC_CPU_PATCH_CONVOLUTION=0).
Bench smallConv(const std::string &group, int64_t c, int64_t hw, int64_t m, int64_t k,
                int64_t stride, std::mt19937 &rng) {
  Bench b;
  b.group = group;
  const int64_t out = (hw - k) / stride + 1;
  b.flops = 2.0 * double(m) * double(c) * double(k * k) * double(out * out);
  std::ostringstream name;
  name << "conv " << c << "->" << m << " " << k << "x" << k << " s" << stride << " @" << hw
       << " unpadded +relu";
  b.name = name.str();
  if (!selected(b.name, group))
    return b;
  b.inputs.push_back(buffer({1, c, hw, hw}, rng));
  b.inputs.push_back(buffer({m, c, k, k}, rng, 0.1f));
  b.inputs.push_back(buffer({m}, rng));
  b.outputs.push_back(buffer({1, m, out, out}, rng));
  KernelDesc d = convDesc(b.inputs[0], b.inputs[1], b.inputs[2], b.outputs[0], stride, 0, 1);
  KernelDesc r;
  r.op = "cgc_op.relu";
  r.inputs = {b.outputs[0].operand};
  r.outputs = {b.outputs[0].operand};
  createPair(b, d, {r}, "CGC_CPU_PATCH_CONVOLUTION", nullptr, "0");
  return b;
}

/// A 2-D max or average pool (k x k, stride s, padding `pad`) on N x C x
/// hw x hw, NCHW or channels-last in and out: the direct gather kernel
/// against oneDNN's (CGC_CPU_DIRECT_POOL=0).
Bench smallPool(const std::string &group, const char *op, int64_t c, int64_t hw, int64_t k,
                int64_t stride, int64_t pad, bool channelsLast, std::mt19937 &rng) {
  Bench b;
  b.group = group;
  const int64_t out = (hw + 2 * pad - k) / stride + 1;
  std::ostringstream name;
  name << (std::strcmp(op, "cgc_op.max_pool") == 0 ? "max" : "avg") << " pool " << k << "x" << k
       << " s" << stride << " p" << pad << " " << c << " x " << hw << "x" << hw
       << (channelsLast ? " channels-last" : "");
  b.name = name.str();
  if (!selected(b.name, group))
    return b;
  b.inputs.push_back(buffer({1, c, hw, hw}, rng));
  b.outputs.push_back(buffer({1, c, out, out}, rng));
  b.bytes = 4.0 * double(c) * double(hw * hw + out * out);
  if (channelsLast) {
    makeChannelsLast(b.inputs[0]);
    makeChannelsLast(b.outputs[0]);
  }
  KernelDesc d;
  d.op = op;
  d.inputs = {b.inputs[0].operand};
  d.outputs = {b.outputs[0].operand};
  d.setAttr("kernel_shape", AttrValue::ofInts({k, k}));
  d.setAttr("strides", AttrValue::ofInts({stride, stride}));
  d.setAttr("dilations", AttrValue::ofInts({1, 1}));
  d.setAttr("start_padding", AttrValue::ofInts({pad, pad}));
  d.setAttr("end_padding", AttrValue::ofInts({pad, pad}));
  createPair(b, d, {}, "CGC_CPU_DIRECT_POOL", nullptr, "0");
  return b;
}

/// A depthwise convolution (C channels, k x k, padding k / 2) on
/// channels-last activations followed by `act` (clip(0, 6) for
/// MobileNetV2's relu6, swish for EfficientNet), as the driver runs it
/// inside a compiled CNN: the direct channels-last kernel against oneDNN's
/// nhwc depthwise kernel (CGC_CPU_CHANNELS_LAST_DEPTHWISE=0 while the
/// baseline is created).
Bench depthwiseChannelsLast(const std::string &group, int count, int64_t c, int64_t hw, int64_t k,
                            int64_t stride, const char *act, std::mt19937 &rng) {
  Bench b;
  b.group = group;
  b.count = count;
  int64_t pad = k / 2;
  int64_t out = (hw + 2 * pad - k) / stride + 1;
  b.flops = 2.0 * double(c) * double(k * k) * double(out * out);
  std::ostringstream name;
  name << "dw " << c << " " << k << "x" << k << " s" << stride << " @" << hw << " +"
       << std::string(act).substr(7);
  b.name = name.str();
  if (!selected(b.name, group))
    return b;
  b.inputs.push_back(buffer({1, c, hw, hw}, rng));
  b.inputs.push_back(buffer({c, 1, k, k}, rng, 0.3f));
  b.inputs.push_back(buffer({c}, rng));
  b.outputs.push_back(buffer({1, c, out, out}, rng));
  makeChannelsLast(b.inputs[0]);
  makeChannelsLast(b.outputs[0]);
  KernelDesc d = convDesc(b.inputs[0], b.inputs[1], b.inputs[2], b.outputs[0], stride, pad, c);
  KernelDesc a;
  a.op = act;
  a.inputs = {b.outputs[0].operand};
  a.outputs = {b.outputs[0].operand};
  if (a.op == "cgc_op.clip") {
    a.setAttr("min", AttrValue::ofFloat(0));
    a.setAttr("max", AttrValue::ofFloat(6));
  }
  createPair(b, d, {a}, "CGC_CPU_CHANNELS_LAST_DEPTHWISE", nullptr, "0");
  return b;
}

/// A 3x3 stride-1 convolution (padding 1) on channels-last activations,
/// fused with ReLU, as inside a compiled CNN: Winograd's F(4x4,3x3) on the
/// packed GEMM (winograd.h, created with CGC_CPU_WINOGRAD_GEMM=all so
/// that it runs whatever the shape) against the kernel the driver would
/// pick without it (CGC_CPU_WINOGRAD_GEMM=0: oneDNN's, Winograd or
/// direct).
Bench winogradChannelsLast(const std::string &group, int count, int64_t c, int64_t hw, int64_t m,
                           std::mt19937 &rng) {
  Bench b;
  b.group = group;
  b.count = count;
  b.flops = 2.0 * double(m) * double(c) * 9.0 * double(hw * hw);
  std::ostringstream name;
  name << "conv " << c << "->" << m << " 3x3 @" << hw << " +relu";
  b.name = name.str();
  if (!selected(b.name, group))
    return b;
  b.inputs.push_back(buffer({1, c, hw, hw}, rng));
  b.inputs.push_back(buffer({m, c, 3, 3}, rng, 0.1f));
  b.inputs.push_back(buffer({m}, rng));
  b.outputs.push_back(buffer({1, m, hw, hw}, rng));
  makeChannelsLast(b.inputs[0]);
  makeChannelsLast(b.outputs[0]);
  KernelDesc d = convDesc(b.inputs[0], b.inputs[1], b.inputs[2], b.outputs[0], 1, 1, 1);
  KernelDesc r;
  r.op = "cgc_op.relu";
  r.inputs = {b.outputs[0].operand};
  r.outputs = {b.outputs[0].operand};
  createPair(b, d, {r}, "CGC_CPU_WINOGRAD_GEMM", "all", "0");
  return b;
}

Bench matmul(const std::string &group, int count, std::vector<int64_t> a, std::vector<int64_t> w,
             bool constantB, bool transposeB, const char *epilogue, std::mt19937 &rng,
             const std::string &label) {
  Bench b;
  b.group = group;
  b.count = count;
  b.name = label;
  if (!selected(label, group))
    return b;
  b.inputs.push_back(buffer(a, rng));
  b.inputs.push_back(buffer(w, rng, 0.1f));
  int64_t k = a.back();
  int64_t n = transposeB ? w[w.size() - 2] : w.back();
  std::vector<int64_t> out(a.begin(), a.end() - 1);
  out.push_back(n);
  // Batch dims of b broadcast into out.
  if (w.size() > a.size()) {
    out.assign(w.begin(), w.end() - 2);
    out.push_back(a[a.size() - 2]);
    out.push_back(n);
  }
  b.outputs.push_back(buffer(out, rng));
  int64_t rows = 1;
  for (size_t i = 0; i + 1 < out.size(); ++i)
    rows *= out[i];
  b.flops = 2.0 * double(rows) * double(n) * double(k);
  KernelDesc d;
  d.op = "cgc_op.matmul";
  d.inputs = {b.inputs[0].operand, b.inputs[1].operand};
  d.outputs = {b.outputs[0].operand};
  if (transposeB)
    d.setAttr("transpose_b", AttrValue::ofBool(true));
  KernelOptions options;
  options.constantInputs = {false, constantB};
  std::string error;
  if (epilogue) {
    // + bias (per column) + epilogue
    b.inputs.push_back(buffer({n}, rng));
    KernelDesc add;
    add.op = "cgc_op.add";
    add.inputs = {b.outputs[0].operand, b.inputs[2].operand};
    add.outputs = {b.outputs[0].operand};
    KernelDesc act;
    act.op = epilogue;
    act.inputs = {b.outputs[0].operand};
    act.outputs = {b.outputs[0].operand};
    options.constantInputs.push_back(true);
    b.kernel = createFusedKernel(d, {add, act}, options, error);
  } else {
    b.kernel = createKernel(d, options, error);
  }
  if (!b.kernel) {
    std::fprintf(stderr, "%s: %s\n", b.name.c_str(), error.c_str());
    std::exit(1);
  }
  return b;
}

/// Attention's two batched products as the BERT encoder runs them: Q, K and
/// V are views of [1, seq, heads * 64] projections (heads split by strides,
/// K transposed), the scores get the 1 / sqrt(64) scale, the mask and the
/// softmax as their fused chain, and the context is written through a view
/// that merges the heads back into rows.
Bench attention(const std::string &group, bool scores, int64_t batch, int64_t heads, int64_t seq,
                int64_t d, std::mt19937 &rng, const std::string &label) {
  Bench b;
  b.group = group;
  b.name = label;
  if (!selected(label, group))
    return b;
  const int64_t width = heads * d;
  // A [batch, seq, width] projection viewed as [batch, heads, seq, d]
  // (transposed: [batch, heads, d, seq]).
  auto heads4 = [&](const Buffer &x, bool transposed) {
    KernelOperand o = x.operand;
    o.shape = transposed ? std::vector<int64_t>{batch, heads, d, seq}
                         : std::vector<int64_t>{batch, heads, seq, d};
    o.strides = transposed ? std::vector<int64_t>{seq * width, d, 1, width}
                           : std::vector<int64_t>{seq * width, d, width, 1};
    return o;
  };
  b.flops = 2.0 * double(batch * heads) * double(seq) * double(seq) * double(d);
  KernelDesc mm;
  mm.op = "cgc_op.matmul";
  std::string error;
  if (scores) {
    b.inputs.push_back(buffer({batch, seq, width}, rng));
    b.inputs.push_back(buffer({batch, seq, width}, rng));
    b.inputs.push_back(buffer({}, rng));
    b.inputs[2].data[0] = float(std::sqrt(double(d)));
    b.inputs.push_back(buffer({1, 1, 1, seq}, rng));
    b.outputs.push_back(buffer({batch, heads, seq, seq}, rng));
    const KernelOperand &out = b.outputs[0].operand;
    mm.inputs = {heads4(b.inputs[0], false), heads4(b.inputs[1], true)};
    mm.outputs = {out};
    KernelDesc div, add, softmax;
    div.op = "cgc_op.div";
    div.inputs = {out, b.inputs[2].operand};
    div.outputs = {out};
    add.op = "cgc_op.add";
    add.inputs = {out, b.inputs[3].operand};
    add.outputs = {out};
    softmax.op = "cgc_op.softmax";
    softmax.inputs = {out};
    softmax.outputs = {out};
    softmax.setAttr("axis", AttrValue::ofInt(3));
    b.kernel = createFusedKernel(mm, {div, add, softmax}, error);
  } else {
    b.inputs.push_back(buffer({batch, heads, seq, seq}, rng));
    b.inputs.push_back(buffer({batch, seq, width}, rng));
    b.outputs.push_back(buffer({batch, seq, width}, rng));
    mm.inputs = {b.inputs[0].operand, heads4(b.inputs[1], false)};
    mm.outputs = {heads4(b.outputs[0], false)};
    b.kernel = createKernel(mm, error);
  }
  if (!b.kernel)
    std::fprintf(stderr, "%s: not fused here (%s)\n", label.c_str(), error.c_str());
  return b;
}

Bench memoryBound(const std::string &op, std::vector<int64_t> shape, std::mt19937 &rng,
                  const std::string &label) {
  Bench b;
  b.group = "memory-bound";
  b.name = label;
  if (!selected(label, b.group))
    return b;
  b.inputs.push_back(buffer(shape, rng));
  b.outputs.push_back(buffer(shape, rng));
  KernelDesc d;
  d.op = op;
  d.inputs = {b.inputs[0].operand};
  d.outputs = {b.outputs[0].operand};
  if (op == "cgc_op.softmax")
    d.setAttr("axis", AttrValue::ofInt(int64_t(shape.size()) - 1));
  if (op == "cgc_op.transpose") {
    // [1, 128, 12, 64] -> [1, 12, 64, 128] (BERT keys, transposed for Q.K^T)
    d.setAttr("perm", AttrValue::ofInts({0, 2, 3, 1}));
    d.outputs[0].shape = {shape[0], shape[2], shape[3], shape[1]};
  }
  if (op == "cgc_op.reduce_mean") {
    d.setAttr("axes", AttrValue::ofInts({int64_t(shape.size()) - 1}));
    d.outputs[0].shape.back() = 1;
  }
  if (op == "cgc_op.add") {
    b.inputs.push_back(buffer({shape.back()}, rng));
    d.inputs.push_back(b.inputs[1].operand);
  }
  if (op == "cgc_op.layer_norm") {
    b.inputs.push_back(buffer({shape.back()}, rng));
    b.inputs.push_back(buffer({shape.back()}, rng));
    d.inputs.push_back(b.inputs[1].operand);
    d.inputs.push_back(b.inputs[2].operand);
    d.setAttr("axis", AttrValue::ofInt(int64_t(shape.size()) - 1));
  }
  double n = double(b.inputs[0].data.size());
  b.bytes = (op == "cgc_op.reduce_mean" ? 1 : 2) * 4 * n;
  std::string error;
  b.kernel = createKernel(d, error);
  if (!b.kernel) {
    std::fprintf(stderr, "%s: %s\n", label.c_str(), error.c_str());
    std::exit(1);
  }
  return b;
}

std::vector<Bench> benches(std::mt19937 &rng) {
  std::vector<Bench> all;
  // ResNet-50 v1.5 (torchvision), batch 1: every convolution shape with the
  // number of times it occurs. Bottleneck convs are fused with ReLU as the
  // driver fuses them (the residual adds are left out).
  const std::string r = "ResNet-50";
  all.push_back(conv(r, 1, 3, 224, 64, 7, 2, true, rng));
  all.push_back(conv(r, 1, 64, 56, 64, 1, 1, true, rng));
  all.push_back(conv(r, 3, 64, 56, 64, 3, 1, true, rng));
  all.push_back(conv(r, 4, 64, 56, 256, 1, 1, false, rng)); // 3 expand + 1 downsample
  all.push_back(conv(r, 2, 256, 56, 64, 1, 1, true, rng));
  all.push_back(conv(r, 1, 256, 56, 128, 1, 1, true, rng));
  all.push_back(conv(r, 1, 128, 56, 128, 3, 2, true, rng));
  all.push_back(conv(r, 4, 128, 28, 512, 1, 1, false, rng));
  all.push_back(conv(r, 1, 256, 56, 512, 1, 2, false, rng));
  all.push_back(conv(r, 3, 512, 28, 128, 1, 1, true, rng));
  all.push_back(conv(r, 3, 128, 28, 128, 3, 1, true, rng));
  all.push_back(conv(r, 1, 512, 28, 256, 1, 1, true, rng));
  all.push_back(conv(r, 1, 256, 28, 256, 3, 2, true, rng));
  all.push_back(conv(r, 6, 256, 14, 1024, 1, 1, false, rng));
  all.push_back(conv(r, 1, 512, 28, 1024, 1, 2, false, rng));
  all.push_back(conv(r, 5, 1024, 14, 256, 1, 1, true, rng));
  all.push_back(conv(r, 5, 256, 14, 256, 3, 1, true, rng));
  all.push_back(conv(r, 1, 1024, 14, 512, 1, 1, true, rng));
  all.push_back(conv(r, 1, 512, 14, 512, 3, 2, true, rng));
  all.push_back(conv(r, 3, 512, 7, 2048, 1, 1, false, rng));
  all.push_back(conv(r, 1, 1024, 14, 2048, 1, 2, false, rng));
  all.push_back(conv(r, 2, 2048, 7, 512, 1, 1, true, rng));
  all.push_back(conv(r, 2, 512, 7, 512, 3, 1, true, rng));
  all.push_back(matmul(r, 1, {1, 2048}, {1000, 2048}, true, true, nullptr, rng, "fc 2048->1000"));
  // MobileNetV2-style depthwise and pointwise layers.
  const std::string mb = "MobileNetV2 (sample)";
  all.push_back(conv(mb, 1, 32, 112, 32, 3, 1, true, rng, 32));
  all.push_back(conv(mb, 1, 144, 56, 144, 3, 2, true, rng, 144));
  all.push_back(conv(mb, 1, 144, 56, 24, 1, 1, false, rng));
  all.push_back(conv(mb, 1, 960, 7, 960, 3, 1, true, rng, 960));
  // Every depthwise layer of MobileNetV2 (relu6) and EfficientNet-B0
  // (swish), channels-last as inside the compiled models: oneDNN's nhwc
  // kernel (old) vs the direct channels-last kernel (new).
  const std::string mdw = "MobileNetV2 depthwise, channels-last";
  all.push_back(depthwiseChannelsLast(mdw, 1, 32, 112, 3, 1, "cgc_op.clip", rng));
  all.push_back(depthwiseChannelsLast(mdw, 1, 96, 112, 3, 2, "cgc_op.clip", rng));
  all.push_back(depthwiseChannelsLast(mdw, 1, 144, 56, 3, 1, "cgc_op.clip", rng));
  all.push_back(depthwiseChannelsLast(mdw, 1, 144, 56, 3, 2, "cgc_op.clip", rng));
  all.push_back(depthwiseChannelsLast(mdw, 2, 192, 28, 3, 1, "cgc_op.clip", rng));
  all.push_back(depthwiseChannelsLast(mdw, 1, 192, 28, 3, 2, "cgc_op.clip", rng));
  all.push_back(depthwiseChannelsLast(mdw, 4, 384, 14, 3, 1, "cgc_op.clip", rng));
  all.push_back(depthwiseChannelsLast(mdw, 2, 576, 14, 3, 1, "cgc_op.clip", rng));
  all.push_back(depthwiseChannelsLast(mdw, 1, 576, 14, 3, 2, "cgc_op.clip", rng));
  all.push_back(depthwiseChannelsLast(mdw, 3, 960, 7, 3, 1, "cgc_op.clip", rng));
  const std::string edw = "EfficientNet-B0 depthwise, channels-last";
  all.push_back(depthwiseChannelsLast(edw, 1, 32, 112, 3, 1, "cgc_op.swish", rng));
  all.push_back(depthwiseChannelsLast(edw, 1, 96, 112, 3, 2, "cgc_op.swish", rng));
  all.push_back(depthwiseChannelsLast(edw, 1, 144, 56, 3, 1, "cgc_op.swish", rng));
  all.push_back(depthwiseChannelsLast(edw, 1, 144, 56, 5, 2, "cgc_op.swish", rng));
  all.push_back(depthwiseChannelsLast(edw, 1, 240, 28, 5, 1, "cgc_op.swish", rng));
  all.push_back(depthwiseChannelsLast(edw, 1, 240, 28, 3, 2, "cgc_op.swish", rng));
  all.push_back(depthwiseChannelsLast(edw, 2, 480, 14, 3, 1, "cgc_op.swish", rng));
  all.push_back(depthwiseChannelsLast(edw, 1, 480, 14, 5, 1, "cgc_op.swish", rng));
  all.push_back(depthwiseChannelsLast(edw, 2, 672, 14, 5, 1, "cgc_op.swish", rng));
  all.push_back(depthwiseChannelsLast(edw, 1, 672, 14, 5, 2, "cgc_op.swish", rng));
  all.push_back(depthwiseChannelsLast(edw, 3, 1152, 7, 5, 1, "cgc_op.swish", rng));
  all.push_back(depthwiseChannelsLast(edw, 1, 1152, 7, 3, 1, "cgc_op.swish", rng));
  // 3x3 convolutions, channels-last: ResNet-50's (layers 1-4), a VGG-16's,
  // FCN ResNet-50's head and its undilated 256->256.
  const std::string wg = "3x3 convolutions, channels-last (Winograd on the packed GEMM)";
  all.push_back(winogradChannelsLast(wg, 3, 64, 56, 64, rng));
  all.push_back(winogradChannelsLast(wg, 3, 128, 28, 128, rng));
  all.push_back(winogradChannelsLast(wg, 5, 256, 14, 256, rng));
  all.push_back(winogradChannelsLast(wg, 2, 512, 7, 512, rng));
  all.push_back(winogradChannelsLast(wg, 2, 256, 56, 256, rng));
  all.push_back(winogradChannelsLast(wg, 2, 512, 28, 512, rng));
  all.push_back(winogradChannelsLast(wg, 1, 256, 28, 256, rng));
  all.push_back(winogradChannelsLast(wg, 1, 2048, 28, 512, rng));
  // Fewer channels: SqueezeNet 1.1's fire expansions, DenseNet-121's
  // growth convolutions, U-Net-like planes.
  all.push_back(winogradChannelsLast(wg, 2, 16, 55, 64, rng));
  all.push_back(winogradChannelsLast(wg, 2, 32, 27, 128, rng));
  all.push_back(winogradChannelsLast(wg, 2, 48, 13, 192, rng));
  all.push_back(winogradChannelsLast(wg, 6, 128, 56, 32, rng));
  all.push_back(winogradChannelsLast(wg, 12, 128, 28, 32, rng));
  all.push_back(winogradChannelsLast(wg, 1, 32, 56, 32, rng));
  all.push_back(winogradChannelsLast(wg, 1, 16, 112, 16, rng));
  all.push_back(winogradChannelsLast(wg, 1, 32, 28, 16, rng));
  // DBNet's FPN smoothing convolutions (few output channels, large planes:
  // the transformed tiles taken in chunks that stay in cache).
  all.push_back(winogradChannelsLast(wg, 1, 96, 160, 24, rng));
  all.push_back(winogradChannelsLast(wg, 1, 96, 80, 24, rng));
  // Small unpadded convolutions (LeNet-5's second, and sizes around it).
  const std::string sc = "Small unpadded convolutions, NCHW";
  all.push_back(smallConv(sc, 6, 14, 16, 5, 1, rng));
  all.push_back(smallConv(sc, 8, 16, 16, 3, 2, rng));
  all.push_back(smallConv(sc, 16, 16, 32, 3, 1, rng));
  all.push_back(smallConv(sc, 32, 14, 32, 3, 1, rng));
  all.push_back(smallConv(sc, 32, 14, 64, 3, 1, rng));
  all.push_back(smallConv(sc, 64, 8, 64, 3, 1, rng));
  all.push_back(smallConv(sc, 16, 28, 32, 5, 1, rng));
  all.push_back(smallConv(sc, 20, 12, 50, 5, 1, rng));
  all.push_back(smallConv(sc, 64, 48, 96, 1, 2, rng));
  all.push_back(smallConv(sc, 64, 28, 128, 3, 1, rng));
  // Pools: LeNet-5's two, GoogLeNet's and SqueezeNet's late ones, one on a
  // small image; NCHW and channels-last.
  const std::string sp = "Pools";
  all.push_back(smallPool(sp, "cgc_op.max_pool", 6, 28, 2, 2, 0, true, rng));
  all.push_back(smallPool(sp, "cgc_op.max_pool", 6, 28, 2, 2, 0, false, rng));
  all.push_back(smallPool(sp, "cgc_op.max_pool", 16, 10, 2, 2, 0, false, rng));
  all.push_back(smallPool(sp, "cgc_op.avg_pool", 16, 10, 2, 2, 0, false, rng));
  for (bool channelsLast : {false, true}) {
    all.push_back(smallPool(sp, "cgc_op.max_pool", 64, 16, 3, 2, 1, channelsLast, rng));
    all.push_back(smallPool(sp, "cgc_op.max_pool", 96, 13, 3, 2, 0, channelsLast, rng));
    all.push_back(smallPool(sp, "cgc_op.avg_pool", 128, 28, 2, 2, 0, channelsLast, rng));
    all.push_back(smallPool(sp, "cgc_op.max_pool", 256, 27, 3, 2, 0, channelsLast, rng));
  }
  // A ResNet's and SqueezeNet 1.1's stem pools, channels-last as the models
  // run them.
  all.push_back(smallPool(sp, "cgc_op.max_pool", 64, 112, 3, 2, 1, true, rng));
  all.push_back(smallPool(sp, "cgc_op.max_pool", 64, 111, 3, 2, 0, true, rng));
  // EfficientNet-B0 squeeze-excitation: 1x1 convolutions on 1x1 planes.
  all.push_back(conv("EfficientNet-B0 (sample)", 16, 480, 1, 20, 1, 1, false, rng));
  all.push_back(conv("EfficientNet-B0 (sample)", 16, 20, 1, 480, 1, 1, false, rng));
  // RegNetX-400MF's pointwise products as the channels-last model runs them
  // (positions x in -> out): its 32->32 @112 and 400->400 @7.
  const std::string rg = "RegNetX-400MF pointwise products";
  all.push_back(matmul(rg, 1, {1, 12544, 32}, {32, 32}, true, false, "cgc_op.relu", rng,
                       "32->32 @112 +relu (12544x32x32)"));
  all.push_back(matmul(rg, 11, {1, 49, 400}, {400, 400}, true, false, "cgc_op.relu", rng,
                       "400->400 @7 +relu (49x400x400)"));
  // BERT-base encoder layer, sequence 128 (12 layers in the model).
  const std::string bt = "BERT-base layer (seq 128)";
  all.push_back(matmul(bt, 3, {1, 128, 768}, {768, 768}, true, false, nullptr, rng, "q/k/v proj 768x768"));
  all.push_back(matmul(bt, 1, {1, 12, 128, 64}, {1, 12, 64, 128}, false, false, nullptr, rng,
                       "scores 12x(128x64 . 64x128)"));
  all.push_back(matmul(bt, 1, {1, 12, 128, 128}, {1, 12, 128, 64}, false, false, nullptr, rng,
                       "context 12x(128x128 . 128x64)"));
  all.push_back(matmul(bt, 1, {1, 128, 768}, {768, 768}, true, false, nullptr, rng, "attn out 768x768"));
  all.push_back(matmul(bt, 1, {1, 128, 768}, {768, 3072}, true, false, "cgc_op.gelu", rng,
                       "ffn1 768x3072 +bias+gelu"));
  all.push_back(matmul(bt, 1, {1, 128, 3072}, {3072, 768}, true, false, nullptr, rng, "ffn2 3072x768"));
  all.push_back(memoryBound("cgc_op.softmax", {1, 12, 128, 128}, rng, "softmax 12x128x128"));
  // Attention with the encoder's strides and its chain: the scores fused
  // with their scale, mask and softmax, the context written into the rows.
  const std::string att = "BERT-base attention as the encoder runs it";
  all.push_back(attention(att, true, 1, 12, 128, 64, rng, "scores+scale+mask+softmax"));
  all.push_back(attention(att, false, 1, 12, 128, 64, rng, "context into rows"));
  // ViT-B/16's 197 tokens; Swin-T's first stage (64 windows of 49 tokens,
  // 3 heads of 32).
  const std::string otherAtt = "Other attention shapes";
  all.push_back(attention(otherAtt, true, 1, 12, 197, 64, rng, "ViT 197 scores+scale+mask+softmax"));
  all.push_back(attention(otherAtt, false, 1, 12, 197, 64, rng, "ViT 197 context into rows"));
  all.push_back(attention(otherAtt, true, 64, 3, 49, 32, rng, "Swin 64x3x49 scores+scale+mask+softmax"));
  all.push_back(attention(otherAtt, false, 64, 3, 49, 32, rng, "Swin 64x3x49 context into rows"));
  all.push_back(memoryBound("cgc_op.softmax", {64, 3, 49, 49}, rng, "Swin softmax 64x3x49x49"));
  all.push_back(memoryBound("cgc_op.layer_norm", {1, 128, 768}, rng, "layer_norm 128x768"));
  all.push_back(memoryBound("cgc_op.gelu", {1, 128, 3072}, rng, "gelu 128x3072"));
  all.push_back(memoryBound("cgc_op.relu", {1, 256, 56, 56}, rng, "relu 256x56x56"));
  all.push_back(memoryBound("cgc_op.add", {1, 128, 3072}, rng, "add bias 128x3072"));
  all.push_back(memoryBound("cgc_op.reduce_mean", {1, 128, 768}, rng, "reduce_mean 128x768 (last)"));
  all.push_back(memoryBound("cgc_op.erf", {1, 128, 3072}, rng, "erf 128x3072"));
  all.push_back(memoryBound("cgc_op.transpose", {1, 128, 12, 64}, rng, "transpose 0,2,3,1 128x12x64"));
  // NCHW -> NHWC, as ConvNeXt permutes around each block.
  all.push_back(memoryBound("cgc_op.transpose", {1, 96, 56, 56}, rng, "transpose 0,2,3,1 96x56x56"));
  // Products M x K x N of a group, each with `copies` copies of its weights.
  using Shape = std::tuple<const char *, int64_t, int64_t, int64_t>;
  auto streamedProducts = [&](const std::string &group, int copies,
                              std::initializer_list<Shape> shapes) {
    for (auto [label, m, k, n] : shapes) {
      Bench b = matmul(group, 1, {1, m, k}, {k, n}, true, false, nullptr, rng, label);
      all.push_back(withWeightCopies(std::move(b), copies, rng));
    }
  };
  // The same projections with 40 copies of their weights (2.4 / 9.4 MB
  // each, packed): in a model every product's weights come from DRAM.
  streamedProducts("BERT-base projections, weights from DRAM (40 copies)", 40,
                   {{"768x768 (dram)", 128, 768, 768},
                    {"768x3072 (dram)", 128, 768, 3072},
                    {"3072x768 (dram)", 128, 3072, 768}});
  // Other transformers' projections (ViT-B/16's 197 tokens, BERT at 512,
  // a wider model), weights from DRAM as above: at 1 thread those whose K
  // and N suit it run Strassen with CGC_CPU_STRASSEN=1 (off by default).
  streamedProducts("Other transformer projections, weights from DRAM (8 copies)", 8,
                   {{"ViT-B 197x768x3072", 197, 768, 3072},
                    {"ViT-B 197x3072x768", 197, 3072, 768},
                    {"BERT seq 512 512x768x768", 512, 768, 768},
                    {"1024 wide 128x1024x4096", 128, 1024, 4096}});
  // ResNet-50's 1x1 convolutions as the products they are (channels-last:
  // positions x in -> out), weights from DRAM as in the model.
  streamedProducts("ResNet-50 pointwise products, weights from DRAM (40 copies)", 40,
                   {{"64->256 @56 (3136x64x256)", 3136, 64, 256},
                    {"256->64 @56 (3136x256x64)", 3136, 256, 64},
                    {"128->512 @28 (784x128x512)", 784, 128, 512},
                    {"512->128 @28 (784x512x128)", 784, 512, 128},
                    {"256->1024 @14 (196x256x1024)", 196, 256, 1024},
                    {"1024->256 @14 (196x1024x256)", 196, 1024, 256},
                    {"512->2048 @7 (49x512x2048)", 49, 512, 2048},
                    {"2048->512 @7 (49x2048x512)", 49, 2048, 512}});
  // Few tokens (ViT-B/32's 50, BERT at 32): each panel of weights serves
  // a handful of row tiles, so the products stream their weights from DRAM
  // at about the rate they compute.
  streamedProducts("Few-token projections, weights from DRAM (40 copies)", 40,
                   {{"ViT-B/32 50x768x2304", 50, 768, 2304},
                    {"ViT-B/32 50x768x3072", 50, 768, 3072},
                    {"ViT-B/32 50x3072x768", 50, 3072, 768},
                    {"BERT seq 32 32x768x768", 32, 768, 768},
                    {"BERT seq 32 32x3072x768", 32, 3072, 768}});
  // Classifiers at batch 1 (a Linear layer: gemm with transposed B, rows
  // of dot products), weights from DRAM as in a model: ResNet's, DenseNet's
  // and MobileNetV2's / EfficientNet's last layers.
  const std::string fc = "Classifiers at batch 1, weights from DRAM (40 copies)";
  for (auto [label, k] : {std::pair<const char *, int64_t>{"fc 2048->1000 (dram)", 2048},
                          {"fc 1280->1000 (dram)", 1280},
                          {"fc 1024->1000 (dram)", 1024}}) {
    Bench b = matmul(fc, 1, {1, k}, {1000, k}, true, true, nullptr, rng, label);
    all.push_back(withWeightCopies(std::move(b), 40, rng));
  }
  return all;
}

} // namespace

int main(int argc, char **argv) {
  std::vector<int> threads = {1, 2};
  double minTime = 0.3;
  std::string filter;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--threads" && i + 1 < argc) {
      threads.clear();
      std::stringstream ss(argv[++i]);
      std::string t;
      while (std::getline(ss, t, ','))
        threads.push_back(std::atoi(t.c_str()));
    } else if (a == "--min-time" && i + 1 < argc) {
      minTime = std::atof(argv[++i]);
    } else if (a == "--cpu-time") {
      gCpuTime = true;
    } else if (a == "--filter" && i + 1 < argc) {
      filter = argv[++i];
    } else {
      std::fprintf(stderr, "usage: %s [--threads 1,2] [--min-time s] [--filter text] [--cpu-time]\n", argv[0]);
      return 2;
    }
  }
  std::mt19937 rng(1);
  gFilter = filter;
  std::vector<Bench> all = benches(rng);
  std::printf("%-34s %-8s", "kernel", "count");
  for (int t : threads)
    std::printf("  %2d thr: %8s %10s", t, "ms", "GFLOP/s");
  std::printf("\n");
  std::string group;
  std::vector<std::vector<double>> groupTime(threads.size());
  struct Total {
    std::string group;
    std::vector<double> flops, time;
    std::vector<double> oldTime; // baseline kernels (medians), where compared
  };
  std::vector<Total> totals;
  for (Bench &b : all) {
    if (!b.kernel)
      continue;
    if (b.group != group) {
      group = b.group;
      std::printf("-- %s\n", group.c_str());
      totals.push_back({group, std::vector<double>(threads.size()), std::vector<double>(threads.size()),
                        std::vector<double>(threads.size())});
    }
    std::printf("%-34s x%-7d", b.name.c_str(), b.count);
    if (b.baseline) {
      // old -> new: min and median ms of interleaved batches.
      for (size_t i = 0; i < threads.size(); ++i) {
        ThreadPool pool(threads[i]);
        PairTimes t = timePair(b, pool, minTime);
        std::printf("  %d thr: old %.4f/%.4f new %.4f/%.4f ms (%.2fx)", threads[i], t.oldMin * 1e3,
                    t.oldMedian * 1e3, t.newMin * 1e3, t.newMedian * 1e3,
                    t.oldMedian / t.newMedian);
        totals.back().flops[i] += b.flops * b.count;
        totals.back().time[i] += t.newMedian * b.count;
        totals.back().oldTime[i] += t.oldMedian * b.count;
      }
      std::printf("\n      old: %s\n      new: %s\n", b.baseline->describe().c_str(),
                  b.kernel->describe().c_str());
      continue;
    }
    for (size_t i = 0; i < threads.size(); ++i) {
      ThreadPool pool(threads[i]);
      double t = timeRuns(b, pool, minTime);
      if (b.flops > 0) {
        std::printf("  %2d thr: %8.3f %10.1f", threads[i], t * 1e3, b.flops / t * 1e-9);
        totals.back().flops[i] += b.flops * b.count;
        totals.back().time[i] += t * b.count;
      } else {
        std::printf("  %2d thr: %8.3f %7.1f GB/s", threads[i], t * 1e3, b.bytes / t * 1e-9);
      }
    }
    std::printf("   %s\n", b.kernel->describe().c_str());
  }
  std::printf("\n");
  for (const Total &t : totals) {
    if (t.flops[0] == 0)
      continue;
    std::printf("%-34s", (t.group + " total").c_str());
    for (size_t i = 0; i < threads.size(); ++i) {
      std::printf("  %2d thr: %8.2f ms %7.1f GFLOP/s", threads[i], t.time[i] * 1e3,
                  t.flops[i] / t.time[i] * 1e-9);
      if (t.oldTime[i] > 0)
        std::printf(" (old %.2f ms, medians)", t.oldTime[i] * 1e3);
    }
    std::printf("\n");
  }
  return 0;
}
