//===- FusionBench.cpp - Does a declared fusion pay off on the CPU? -------===//
//
// The measurements behind compiler/Targets/Cpu/patterns.mlir
// (docs/cpu-target.md). For each candidate fusion, the same layers are
// compiled by the CPU JIT twice, as the driver would receive them:
//
//   fused  one subgraph holding every layer (what a declared pattern gives);
//   split  one subgraph per layer, intermediates in bind points (what the
//          driver runs when the layers are not declared as one subgraph).
//
// and run with the driver's executor (runtime/drivers/cpu/program.cpp)
// on the same inputs; prints the median time of each and the ratio, and
// checks that both compute the same result.
//
//   ninja -C <build> cpu-fusion-bench
//   <build>/bin/cpu-fusion-bench [repetitions] [threads] [name filter]
//
// On a loaded machine, BENCH_CPU_TIME=1 OMP_NUM_THREADS=1 with threads = 1
// measures the process's CPU time instead of wall time.
//
//===----------------------------------------------------------------------===//

#include "compiler/InitAll.h"
#include "jit.h"
#include "program.h"

#include "mlir/Bytecode/BytecodeWriter.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <map>
#include <random>
#include <string>
#include <vector>

using namespace mlir;

namespace {

struct Value {
  std::string name;
  std::vector<int64_t> shape;
  bool constant = false;
};

struct Layer {
  std::string op;
  std::vector<std::string> inputs;
  std::string result;
  std::vector<int64_t> shape;
  std::string attrs; // "{...}" or ""
};

struct Case {
  std::string name;
  std::vector<Value> inputs; // partition inputs (weights: constant)
  std::vector<Layer> layers; // the last layer's result is the output
};

std::string dims(const std::vector<int64_t> &shape) {
  std::string s;
  for (int64_t d : shape)
    s += std::to_string(d) + "x";
  return s;
}
std::string tensor(const std::vector<int64_t> &shape, bool constant = false) {
  return "!cgc.tensor<" + std::string(constant ? "constant " : "") + dims(shape) +
         "!cgc.float32>";
}
std::string memref(const std::vector<int64_t> &shape, bool constant = false) {
  return "!cgc.memref<" + std::string(constant ? "constant " : "") + dims(shape) +
         "!cgc.float32>";
}

/// A subgraph holding `layers`, taking `ins` (in order) and returning the
/// last layer's result.
std::string subgraph(const std::string &name, const std::vector<Layer> &layers,
                     const std::vector<Value> &ins) {
  std::map<std::string, Value> values;
  std::string text = "  cgc.subgraph @" + name +
                     " attributes {origin = \"cpu\", pattern = \"bench\"} {\n"
                     "    cgc.functional_definition private @" +
                     name + "F(";
  for (size_t i = 0; i < ins.size(); ++i) {
    text += (i ? ", %" : "%") + ins[i].name + ": " + tensor(ins[i].shape, ins[i].constant);
    values[ins[i].name] = ins[i];
  }
  text += ") -> " + tensor(layers.back().shape) + " {\n";
  for (const Layer &l : layers) {
    text += "      %" + l.result + " = " + l.op + "(";
    std::string types;
    for (size_t i = 0; i < l.inputs.size(); ++i) {
      const Value &v = values.at(l.inputs[i]);
      text += (i ? ", %" : "%") + v.name;
      types += (i ? ", " : "") + tensor(v.shape, v.constant);
    }
    text += ") " + l.attrs + " : (" + types + ") -> " + tensor(l.shape) + "\n";
    values[l.result] = {l.result, l.shape, false};
  }
  text += "      cgc.return %" + layers.back().result + " : " + tensor(layers.back().shape) +
          "\n    }\n  }\n";
  return text;
}

/// Partition IR: bind points are the case's inputs, then (split only) one
/// per intermediate, then the output.
std::string partition(const Case &c, bool fused) {
  std::string text = "cgc.module {\n";
  std::vector<Value> args = c.inputs;
  std::map<std::string, Value> values;
  for (const Value &v : c.inputs)
    values[v.name] = v;
  std::vector<std::string> invokes;
  auto invoke = [&](const std::string &callee, const std::vector<Value> &ins,
                    const Value &out) {
    std::string line = "    cgc.invoke @" + callee + "(", types;
    for (const Value &v : ins) {
      line += "%" + v.name + ", ";
      types += memref(v.shape, v.constant) + ", ";
    }
    line += "%" + out.name + ") : " + types + memref(out.shape);
    invokes.push_back(line);
  };
  if (fused) {
    // Subgraph inputs: the partition inputs the layers use, in order.
    text += subgraph("all", c.layers, c.inputs);
    Value out = {c.layers.back().result, c.layers.back().shape, false};
    invoke("all", c.inputs, out);
    args.push_back(out);
  } else {
    for (size_t i = 0; i < c.layers.size(); ++i) {
      const Layer &l = c.layers[i];
      std::vector<Value> ins;
      for (const std::string &name : l.inputs)
        ins.push_back(values.at(name));
      std::string name = "s" + std::to_string(i);
      text += subgraph(name, {l}, ins);
      Value out = {l.result, l.shape, false};
      values[l.result] = out;
      args.push_back(out);
      invoke(name, ins, out);
    }
  }
  text += "  cgc.partition @p(";
  for (size_t i = 0; i < args.size(); ++i)
    text += (i ? ", %" : "%") + args[i].name + ": " + memref(args[i].shape, args[i].constant);
  text += ") {\n";
  for (const std::string &line : invokes)
    text += line + "\n";
  text += "    cgc.return\n  }\n}\n";
  return text;
}

std::string bytecodeOf(MLIRContext &context, const std::string &text) {
  ParserConfig config(&context);
  OwningOpRef<Operation *> module = parseSourceString(text, config);
  if (!module) {
    std::fprintf(stderr, "cannot parse:\n%s\n", text.c_str());
    std::exit(1);
  }
  std::string bytes;
  llvm::raw_string_ostream os(bytes);
  (void)writeBytecodeToFile(module.get(), os);
  return bytes;
}

int64_t elements(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

/// A compiled variant and its buffers.
struct Prepared {
  std::shared_ptr<const cgc::cpu::CompiledProgram> compiled;
  std::vector<std::vector<float>> buffers;
  std::vector<uint8_t *> bindings;
  std::vector<double> times;
};

Prepared prepare(MLIRContext &context, const Case &c, bool fused) {
  std::string bytes = bytecodeOf(context, partition(c, fused));
  cgc::KernelProgram program;
  std::string error;
  if (!cgc::cpu::getJitInterface()->compilePartition(bytes.data(), bytes.size(), program,
                                                     error)) {
    std::fprintf(stderr, "%s: %s\n", c.name.c_str(), error.c_str());
    std::exit(1);
  }
  Prepared p;
  p.compiled = cgc::cpu::CompiledProgram::create(program, error);
  if (!p.compiled) {
    std::fprintf(stderr, "%s: %s\n", c.name.c_str(), error.c_str());
    std::exit(1);
  }
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> dist(-1, 1);
  for (const auto &b : program.bindings) {
    p.buffers.emplace_back(b.bytes / 4);
    for (float &x : p.buffers.back())
      x = dist(rng) * 0.1f;
  }
  for (auto &b : p.buffers)
    p.bindings.push_back(reinterpret_cast<uint8_t *>(b.data()));
  return p;
}

double cpuMs() {
  timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/// Records wall time, or with `cpu` the process's CPU time (robust against
/// other load on a shared machine when everything runs on one thread:
/// OMP_NUM_THREADS=1 and a pool of 1).
void runOnce(Prepared &p, cgc::cpu::ThreadPool &pool, bool record, bool cpu) {
  auto start = std::chrono::steady_clock::now();
  double cpuStart = cpuMs();
  p.compiled->run(p.bindings, pool);
  double cpuEnd = cpuMs();
  auto end = std::chrono::steady_clock::now();
  if (record)
    p.times.push_back(cpu ? cpuEnd - cpuStart
                          : std::chrono::duration<double, std::milli>(end - start).count());
}

double minimum(const std::vector<double> &v) { return *std::min_element(v.begin(), v.end()); }
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

std::vector<Case> cases() {
  std::vector<Case> all;
  const std::string conv3 = "{start_padding = [1, 1], end_padding = [1, 1], strides = [1, "
                            "1], dilations = [1, 1]}";
  const std::string conv1 = "{start_padding = [0, 0], end_padding = [0, 0], strides = [1, "
                            "1], dilations = [1, 1]}";
  // ResNet-50 stage 1 / stage 4 bottleneck tails: conv + bias, relu, add.
  for (auto [c, hw] : {std::pair<int64_t, int64_t>{64, 56}, {256, 14}, {512, 7}}) {
    std::vector<int64_t> act = {1, c, hw, hw};
    all.push_back({"conv3x3 " + std::to_string(c) + "ch " + std::to_string(hw) +
                       "x" + std::to_string(hw) + " + relu + add",
                   {{"x", act}, {"w", {c, c, 3, 3}, true}, {"b", {c}, true}, {"r", act}},
                   {{"cgc_op.convolution", {"x", "w", "b"}, "c", act, conv3},
                    {"cgc_op.relu", {"c"}, "a", act, ""},
                    {"cgc_op.add", {"a", "r"}, "y", act, ""}}});
  }
  {
    std::vector<int64_t> in = {1, 256, 56, 56}, out = {1, 64, 56, 56};
    all.push_back({"conv1x1 256->64 56x56 + relu",
                   {{"x", in}, {"w", {64, 256, 1, 1}, true}, {"b", {64}, true}},
                   {{"cgc_op.convolution", {"x", "w", "b"}, "c", out, conv1},
                    {"cgc_op.relu", {"c"}, "y", out, ""}}});
  }
  {
    // ResNet-50 stage 1 bottleneck end: 1x1 expansion, residual add, relu
    // (3.2 MB activations: past the L2 cache).
    std::vector<int64_t> in = {1, 64, 56, 56}, out = {1, 256, 56, 56};
    all.push_back({"conv1x1 64->256 56x56 + add + relu",
                   {{"x", in}, {"w", {256, 64, 1, 1}, true}, {"b", {256}, true}, {"r", out}},
                   {{"cgc_op.convolution", {"x", "w", "b"}, "c", out, conv1},
                    {"cgc_op.add", {"c", "r"}, "s", out, ""},
                    {"cgc_op.relu", {"s"}, "y", out, ""}}});
  }
  // BERT-base FFN up-projection: matmul + bias + gelu.
  all.push_back({"matmul 128x768x3072 + bias + gelu",
                 {{"x", {1, 128, 768}}, {"w", {768, 3072}, true}, {"b", {3072}, true}},
                 {{"cgc_op.matmul", {"x", "w"}, "m", {1, 128, 3072}, ""},
                  {"cgc_op.add", {"m", "b"}, "s", {1, 128, 3072}, ""},
                  {"cgc_op.gelu", {"s"}, "y", {1, 128, 3072}, ""}}});
  all.push_back({"matmul 128x768x3072 + bias",
                 {{"x", {1, 128, 768}}, {"w", {768, 3072}, true}, {"b", {3072}, true}},
                 {{"cgc_op.matmul", {"x", "w"}, "m", {1, 128, 3072}, ""},
                  {"cgc_op.add", {"m", "b"}, "y", {1, 128, 3072}, ""}}});
  all.push_back({"matmul 128x768x3072 + gelu",
                 {{"x", {1, 128, 768}}, {"w", {768, 3072}, true}},
                 {{"cgc_op.matmul", {"x", "w"}, "m", {1, 128, 3072}, ""},
                  {"cgc_op.gelu", {"m"}, "y", {1, 128, 3072}, ""}}});
  all.push_back({"matmul 128x768x3072 + relu",
                 {{"x", {1, 128, 768}}, {"w", {768, 3072}, true}},
                 {{"cgc_op.matmul", {"x", "w"}, "m", {1, 128, 3072}, ""},
                  {"cgc_op.relu", {"m"}, "y", {1, 128, 3072}, ""}}});
  // Attention scores: Q . K^T, K transposed by the graph.
  all.push_back({"Q.K^T 12x128x64 (transpose folded)",
                 {{"q", {1, 12, 128, 64}}, {"k", {1, 12, 128, 64}}},
                 {{"cgc_op.transpose", {"k"}, "kt", {1, 12, 64, 128}, "{perm = [0, 1, 3, 2]}"},
                  {"cgc_op.matmul", {"q", "kt"}, "y", {1, 12, 128, 128}, ""}}});
  // Head split before attention: [1,128,12,64] -> [1,12,128,64] . V.
  all.push_back({"head split 128x12x64 -> P.V (transpose folded)",
                 {{"p", {1, 12, 128, 128}}, {"v", {1, 128, 12, 64}}},
                 {{"cgc_op.transpose", {"v"}, "vt", {1, 12, 128, 64}, "{perm = [0, 2, 1, 3]}"},
                  {"cgc_op.matmul", {"p", "vt"}, "y", {1, 12, 128, 64}, ""}}});
  // Candidates the kernels cannot fuse: is one subgraph any better?
  all.push_back({"matmul 12x128x64x128 + softmax (not fusable)",
                 {{"q", {1, 12, 128, 64}}, {"k", {1, 12, 64, 128}}},
                 {{"cgc_op.matmul", {"q", "k"}, "s", {1, 12, 128, 128}, ""},
                  {"cgc_op.softmax", {"s"}, "y", {1, 12, 128, 128}, "{axis = 3 : i64}"}}});
  all.push_back({"matmul 128x768x768 + bias + residual + layer_norm",
                 {{"x", {1, 128, 768}},
                  {"w", {768, 768}, true},
                  {"b", {768}, true},
                  {"r", {1, 128, 768}},
                  {"g", {768}, true},
                  {"beta", {768}, true}},
                 {{"cgc_op.matmul", {"x", "w"}, "m", {1, 128, 768}, ""},
                  {"cgc_op.add", {"m", "b"}, "s", {1, 128, 768}, ""},
                  {"cgc_op.add", {"s", "r"}, "t", {1, 128, 768}, ""},
                  {"cgc_op.layer_norm", {"t", "g", "beta"}, "y", {1, 128, 768},
                   "{axis = 2 : i64, epsilon = 9.99999996E-13 : f32}"}}});
  return all;
}

} // namespace

int main(int argc, char **argv) {
  int reps = argc > 1 ? std::atoi(argv[1]) : 30;
  int threads = argc > 2 ? std::atoi(argv[2]) : 2;
  std::string filter = argc > 3 ? argv[3] : "";
  bool cpu = std::getenv("BENCH_CPU_TIME") != nullptr;
  DialectRegistry registry;
  cgc::registerAllDialects(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  cgc::cpu::ThreadPool pool(threads);
  std::printf("%-50s %17s %17s %8s %s\n", "case", "split ms min/med", "fused ms min/med",
              "speedup", "steps split/fused, max |diff|");
  for (const Case &c : cases()) {
    if (c.name.find(filter) == std::string::npos)
      continue;
    Prepared split = prepare(context, c, false), fused = prepare(context, c, true);
    // Interleaved, so that load from elsewhere hits both alike.
    for (int r = 0; r < reps + 3; ++r) {
      runOnce(split, pool, r >= 3, cpu);
      runOnce(fused, pool, r >= 3, cpu);
    }
    const std::vector<float> &a = split.buffers.back(), &b = fused.buffers.back();
    double diff = 0;
    for (size_t i = 0; i < a.size(); ++i)
      diff = std::max(diff, double(std::fabs(a[i] - b[i])));
    std::printf("%-50s %8.3f/%8.3f %8.3f/%8.3f %7.2fx %zu/%zu, %.2g\n", c.name.c_str(),
                minimum(split.times), median(split.times), minimum(fused.times),
                median(fused.times), minimum(split.times) / minimum(fused.times),
                split.compiled->steps().size(), fused.compiled->steps().size(), diff);
  }
  return 0;
}
