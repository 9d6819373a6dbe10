//===- prepared.h - Prepared constants, computed or recorded offline -------===//
//
// Kernels derive data from their constant operands once per address
// (packed GEMM panels, Winograd-transformed filters, oneDNN's reordered
// weights): "prepared constants". Normally the driver computes them when
// the runtime declares a program's constants final
// (CompiledProgram::prepareConstants). With a precompiled database that
// holds them (docs/precompilation.md) they are computed offline instead, by
// the compiler plugin running the same preparation in record mode, and
// mapped at load: nothing is transformed.
//
// What identifies a prepared block within one program: the preparation
// site that made it (numbered in kernel-construction order, which is
// deterministic for one kernel program, configuration and machine: see
// Signature), the content identity of the constants it was derived from
// (the digest the runtime gives for each constant binding, and the offset
// of the source within it) and its size. A Context holds, for one
// prepareConstants call, the constant bindings with their digests and
// either the blocks available for them (replay) or the blocks made (record).
//
// Sites ask Context::active() for the context whose constant bindings hold
// their source; there is none outside a prepareConstants call with digests,
// and they then prepare as before.
//
//===----------------------------------------------------------------------===//

#ifndef CGC_CPU_KERNELS_PREPARED_H
#define CGC_CPU_KERNELS_PREPARED_H

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace cgc::cpu::prepared {

using Digest = std::array<uint8_t, 16>;

/// While alive on a thread, numbers the preparation sites of the kernels it
/// constructs from 0 (CompiledProgram::create).
class SiteNumbering {
public:
  SiteNumbering();
  ~SiteNumbering();
  SiteNumbering(const SiteNumbering &) = delete;
  SiteNumbering &operator=(const SiteNumbering &) = delete;

private:
  int previous_;
};
/// The next site number of the active numbering, or -1 outside one.
int nextSite();

/// What else decides prepared layouts: the kernel configuration, the
/// threads a program runs on and the instruction sets the kernels use.
std::string signature(const std::string &configText, size_t threads);

struct Range {
  const uint8_t *base = nullptr;
  size_t bytes = 0;
  Digest digest = {};
};

/// One prepareConstants call's prepared constants.
class Context {
public:
  enum class Mode { Replay, Record };
  Context(Mode mode, std::vector<Range> ranges);
  ~Context();
  Context(const Context &) = delete;
  Context &operator=(const Context &) = delete;

  /// The block key of site `site`'s block of `bytes` in `layout` (the
  /// site's own name for it when one site makes several; may be empty)
  /// derived from `source` (and `secondary`, may be null), or "" if `source`
  /// is not in one of the ranges.
  std::string key(int site, const std::string &layout, const void *source,
                  const void *secondary, size_t bytes) const;

  /// Replay: a mapped block made offline (read-only, page-aligned), or null.
  const void *find(const std::string &key, size_t bytes);
  void add(const std::string &key, const void *data, size_t bytes);
  /// Record: a block a site computed (copied).
  void record(const std::string &key, const void *data, size_t bytes);
  Mode mode() const { return mode_; }

  struct Block {
    std::string key;
    std::vector<uint8_t> data;
  };
  /// Record mode: the blocks made, in key order.
  std::vector<Block> takeRecorded();

  /// Blocks taken from `find` and computed by the sites, with their bytes.
  std::atomic<uint64_t> mapped{0}, mappedBytes{0}, computed{0}, computedBytes{0};

  /// The context whose ranges hold `source`, or null. Contexts are
  /// registered while they live.
  static Context *active(const void *source);

private:
  const Range *rangeOf(const void *p) const;
  Mode mode_;
  std::vector<Range> ranges_;
  std::mutex mutex_;
  std::unordered_map<std::string, std::pair<const void *, size_t>> available_;
  std::vector<Block> recorded_;
};

/// What every preparation site does: with a context for `source`, returns a
/// block made offline (replay) or null and sets `key` (the site then
/// computes it and calls done()); without one, null and an empty key.
const void *lookup(int site, const std::string &layout, const void *source,
                   const void *secondary, size_t bytes, Context *&context, std::string &key);
/// After a site computed a block that lookup did not have.
void done(Context *context, const std::string &key, const void *data, size_t bytes);

} // namespace cgc::cpu::prepared

#endif // CGC_CPU_KERNELS_PREPARED_H
