//===- config.cpp - The CPU driver's kernel and scheduling choices --===//

#include "config.h"

#include <cstdlib>
#include <string>

namespace cgc::cpu {

namespace {

/// A setting: its name, meaning and where it lives in the struct.
struct Field {
  const char *name;
  const char *help;
  enum Kind { Bool, Int, Text } kind;
  bool KernelConfig::*flag = nullptr;
  int KernelConfig::*number = nullptr;
  std::string KernelConfig::*text = nullptr;
  int min = 0, max = 0;
};

Field flag(const char *name, const char *help, bool KernelConfig::*member) {
  Field f{name, help, Field::Bool};
  f.flag = member;
  return f;
}

Field number(const char *name, const char *help, int KernelConfig::*member, int min, int max) {
  Field f{name, help, Field::Int};
  f.number = member;
  f.min = min;
  f.max = max;
  return f;
}

const std::vector<Field> &fields() {
  static const std::vector<Field> all = [] {
    std::vector<Field> f;
    f.push_back(flag("winograd", "oneDNN's Winograd kernels for 3x3 stride-1 convolutions",
                     &KernelConfig::winograd));
    f.push_back(flag("winograd-channel-blocks",
                     "a Winograd convolution split by output channels across threads",
                     &KernelConfig::winogradChannelBlocks));
    f.push_back(number("winograd-gemm",
                       "Winograd on the packed GEMM: 0 off, 1 where it pays, 2 (or 'all') "
                       "wherever it can run",
                       &KernelConfig::winogradGemm, 0, 2));
    f.push_back(flag("subsampled-pointwise", "strided 1x1 convolutions on the packed GEMM",
                     &KernelConfig::subsampledPointwise));
    f.push_back(flag("channels-last-depthwise", "the direct channels-last depthwise kernel",
                     &KernelConfig::channelsLastDepthwise));
    f.push_back(flag("depthwise-pool", "a convolution fused with the global pool of its result",
                     &KernelConfig::depthwisePool));
    f.push_back(flag("stem-convolution",
                     "the direct kernel for convolutions of few input channels",
                     &KernelConfig::stemConvolution));
    f.push_back(flag("stem-depthwise", "a stem convolution fused into the depthwise one after it",
                     &KernelConfig::stemDepthwise));
    f.push_back(flag("expand-depthwise", "a 1x1 expansion fused into the depthwise convolution",
                     &KernelConfig::expandDepthwise));
    f.push_back(flag("depthwise-project", "a depthwise convolution fused with its projection",
                     &KernelConfig::depthwiseProject));
    f.push_back(flag("direct-deconvolution",
                     "conv_transpose with stride = kernel as one block per input position",
                     &KernelConfig::directDeconvolution));
    f.push_back(flag("patch-convolution",
                     "a convolution with stride = kernel (a patch embedding) as one product "
                     "of its gathered patches on the packed GEMM",
                     &KernelConfig::patchConvolution));
    f.push_back(flag("direct-pool", "small and channels-last float32 2-D pools on direct kernels (off: oneDNN)",
                     &KernelConfig::directPool));
    f.push_back(flag("packed-gemm", "the AVX-512 packed GEMM (off: oneDNN)",
                     &KernelConfig::packedGemm));
    f.push_back(flag("strassen", "one Strassen level for large products",
                     &KernelConfig::strassen));
    f.push_back(flag("gemm-balanced-rows", "rows spread evenly over the GEMM's register tiles",
                     &KernelConfig::gemmBalancedRows));
    f.push_back(flag("gemm-row-blocks",
                     "the GEMM passes every panel over a block of rows at a time where A is "
                     "the large operand",
                     &KernelConfig::gemmRowBlocks));
    f.push_back(flag("gemm-k-pairs", "K in pairs for narrow products",
                     &KernelConfig::gemmKPairs));
    f.push_back(flag("gemm-gelu", "erf GELU in the packed GEMM's epilogue",
                     &KernelConfig::gemmGelu));
    f.push_back(flag("batched-gemm", "batched products on the packed GEMM",
                     &KernelConfig::batchedGemm));
    f.push_back(flag("row-product",
                     "one-row products with B stored N x K (a Linear layer at batch 1) as row "
                     "dot products over B as stored, without a packed copy",
                     &KernelConfig::rowProduct));
    f.push_back(flag("separable-resize", "resize as one pass per dimension",
                     &KernelConfig::separableResize));
    f.push_back(flag("elementwise-chains",
                     "an elementwise op and the elementwise ops after it in one pass",
                     &KernelConfig::elementwiseChains));
    f.push_back(flag("weight-arena", "prepared weights in one shared arena",
                     &KernelConfig::weightArena));
    f.push_back(flag("prepare-constants",
                     "constants prepared when the runtime declares them final (at load: one run "
                     "over private memory) rather than on the first run",
                     &KernelConfig::prepareConstants));
    f.push_back(flag("bound-temporaries",
                     "temporaries of internal bind points live in the bound bytes, where the "
                     "compiler planned them (0: in the driver's per-run memory)",
                     &KernelConfig::boundTemporaries));
    f.push_back(number("threads", "worker threads (0: one per core)", &KernelConfig::threads, 0,
                       1024));
    f.push_back(number("spin-us", "microseconds an idle worker spins before it sleeps",
                       &KernelConfig::spinUs, 0, 1000000));
    Field profile{"profile", "per-step profile at exit: 1 (stderr) or a file appended to",
                  Field::Text};
    profile.text = &KernelConfig::profile;
    f.push_back(profile);
    Field evaluator{"evaluator",
                    "what evaluates the ops: kernels (this library, fused) or reference (each "
                    "op alone on the plain reference evaluator)",
                    Field::Text};
    evaluator.text = &KernelConfig::evaluator;
    f.push_back(evaluator);
    return f;
  }();
  return all;
}

const Field *find(std::string_view name) {
  for (const Field &f : fields())
    if (name == f.name)
      return &f;
  return nullptr;
}

std::string trim(std::string_view s) {
  size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
  return b == std::string_view::npos ? std::string() : std::string(s.substr(b, e - b + 1));
}

std::string variableOf(const char *name) {
  std::string v = "CGC_CPU_";
  for (const char *c = name; *c; ++c)
    v += *c == '-' ? '_' : char(std::toupper(static_cast<unsigned char>(*c)));
  return v;
}

thread_local const KernelConfig *active = nullptr;

} // namespace

const std::vector<KernelConfig::Setting> &KernelConfig::settings() {
  static const std::vector<Setting> all = [] {
    std::vector<Setting> s;
    for (const Field &f : fields())
      s.push_back({f.name, f.help});
    return s;
  }();
  return all;
}

bool KernelConfig::set(std::string_view name, std::string_view value, std::string &error) {
  const Field *f = find(name);
  if (!f) {
    error = "unknown setting '" + std::string(name) + "' (known:";
    for (const Field &known : fields())
      error += std::string(" ") + known.name;
    error += ")";
    return false;
  }
  const std::string v = trim(value);
  switch (f->kind) {
  case Field::Bool:
    if (v == "1" || v == "on" || v == "true")
      this->*(f->flag) = true;
    else if (v == "0" || v == "off" || v == "false")
      this->*(f->flag) = false;
    else {
      error = std::string(f->name) + "='" + v + "': expected 0 or 1 (on/off, true/false)";
      return false;
    }
    return true;
  case Field::Int: {
    if (f->number == &KernelConfig::winogradGemm && v == "all") {
      winogradGemm = 2;
      return true;
    }
    char *end = nullptr;
    long n = std::strtol(v.c_str(), &end, 10);
    if (v.empty() || *end || n < f->min || n > f->max) {
      error = std::string(f->name) + "='" + v + "': expected a whole number from " +
              std::to_string(f->min) + " to " + std::to_string(f->max);
      return false;
    }
    this->*(f->number) = int(n);
    return true;
  }
  case Field::Text:
    if (f->text == &KernelConfig::evaluator) {
      if (v != "kernels" && v != "reference") {
        error = std::string(f->name) + "='" + v + "': expected kernels or reference";
        return false;
      }
      evaluator = v;
      return true;
    }
    this->*(f->text) = v == "0" ? "" : v;
    return true;
  }
  return false;
}

bool KernelConfig::apply(std::string_view text, std::string &error) {
  KernelConfig updated = *this;
  size_t at = 0;
  while (at <= text.size()) {
    size_t comma = text.find(',', at);
    std::string_view item =
        text.substr(at, comma == std::string_view::npos ? std::string_view::npos : comma - at);
    at = comma == std::string_view::npos ? text.size() + 1 : comma + 1;
    if (trim(item).empty())
      continue;
    size_t eq = item.find('=');
    if (eq == std::string_view::npos) {
      error = "'" + trim(item) + "': expected name=value";
      return false;
    }
    if (!updated.set(trim(item.substr(0, eq)), item.substr(eq + 1), error))
      return false;
  }
  *this = std::move(updated);
  return true;
}

std::string KernelConfig::get(std::string_view name) const {
  const Field *f = find(name);
  if (!f)
    return "";
  switch (f->kind) {
  case Field::Bool: return this->*(f->flag) ? "1" : "0";
  case Field::Int: return std::to_string(this->*(f->number));
  case Field::Text: return this->*(f->text);
  }
  return "";
}

std::string KernelConfig::describe() const {
  const KernelConfig defaults;
  std::string text;
  for (const Field &f : fields())
    if (get(f.name) != defaults.get(f.name))
      text += (text.empty() ? "" : ",") + std::string(f.name) + "=" + get(f.name);
  return text.empty() ? "defaults" : text;
}

bool KernelConfig::operator==(const KernelConfig &other) const {
  for (const Field &f : fields())
    if (get(f.name) != other.get(f.name))
      return false;
  return true;
}

/// (setting, value) of every CGC_CPU_<NAME> set: the one place the
/// driver reads its environment, once per process.
static const std::vector<std::pair<const Field *, std::string>> &overrides() {
  static const std::vector<std::pair<const Field *, std::string>> all = [] {
    std::vector<std::pair<const Field *, std::string>> found;
    for (const Field &f : fields())
      if (const char *value = std::getenv(variableOf(f.name).c_str()))
        found.emplace_back(&f, value);
    return found;
  }();
  return all;
}

const std::string &KernelConfig::environment() {
  static const std::string text = [] {
    std::string joined;
    for (const auto &[f, value] : overrides())
      joined += (joined.empty() ? "" : ",") + std::string(f->name) + "=" + value;
    return joined;
  }();
  return text;
}

bool KernelConfig::applyEnvironment(std::string &error) {
  KernelConfig updated = *this;
  for (const auto &[f, value] : overrides())
    if (!updated.set(f->name, value, error)) {
      error = variableOf(f->name) + "='" + value + "': " + error.substr(error.find(':') + 2);
        return false;
      }
  *this = std::move(updated);
  return true;
}

const KernelConfig &KernelConfig::process() {
  static const KernelConfig config = [] {
    KernelConfig c;
    std::string ignored;
    c.applyEnvironment(ignored);
    return c;
  }();
  return config;
}

const KernelConfig &activeConfig() { return active ? *active : KernelConfig::process(); }

ConfigScope::ConfigScope(const KernelConfig &config) : previous_(active) { active = &config; }

ConfigScope::~ConfigScope() { active = previous_; }

} // namespace cgc::cpu
