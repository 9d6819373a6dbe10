//===- prepared.cpp - Prepared constants, computed or recorded offline ----===//

#include "prepared.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <shared_mutex>

#include <dnnl.hpp>

namespace cgc::cpu::prepared {

namespace {
thread_local int gNextSite = -1;

std::shared_mutex gContextsMutex;
std::vector<Context *> gContexts;

std::string hex(const Digest &d) {
  static const char digits[] = "0123456789abcdef";
  std::string s;
  for (uint8_t b : d) {
    s += digits[b >> 4];
    s += digits[b & 15];
  }
  return s;
}
} // namespace

SiteNumbering::SiteNumbering() : previous_(gNextSite) { gNextSite = 0; }
SiteNumbering::~SiteNumbering() { gNextSite = previous_; }

int nextSite() { return gNextSite < 0 ? -1 : gNextSite++; }

std::string signature(const std::string &configText, size_t threads) {
  bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
  char isa[32];
  std::snprintf(isa, sizeof isa, "%d", int(dnnl::get_effective_cpu_isa()));
  return "config " + configText + "; threads " + std::to_string(threads) + "; avx512 " +
         (avx512 ? "1" : "0") + "; onednn isa " + isa;
}

Context::Context(Mode mode, std::vector<Range> ranges) : mode_(mode), ranges_(std::move(ranges)) {
  std::unique_lock lock(gContextsMutex);
  gContexts.push_back(this);
}

Context::~Context() {
  std::unique_lock lock(gContextsMutex);
  gContexts.erase(std::find(gContexts.begin(), gContexts.end(), this));
}

const Range *Context::rangeOf(const void *p) const {
  const auto *b = static_cast<const uint8_t *>(p);
  for (const Range &r : ranges_)
    if (b >= r.base && b < r.base + r.bytes)
      return &r;
  return nullptr;
}

Context *Context::active(const void *source) {
  if (!source)
    return nullptr;
  std::shared_lock lock(gContextsMutex);
  for (Context *c : gContexts)
    if (c->rangeOf(source))
      return c;
  return nullptr;
}

std::string Context::key(int site, const std::string &layout, const void *source,
                         const void *secondary, size_t bytes) const {
  const Range *r = rangeOf(source);
  if (site < 0 || !r)
    return "";
  auto place = [&](const Range &range, const void *p) {
    return hex(range.digest) + "@" +
           std::to_string(static_cast<const uint8_t *>(p) - range.base);
  };
  std::string key = std::to_string(site) + (layout.empty() ? "" : "/" + layout) + ":" +
                    place(*r, source) + ":";
  if (secondary) {
    const Range *s = rangeOf(secondary);
    if (!s)
      return ""; // derived from something that is not a declared constant
    key += place(*s, secondary);
  } else {
    key += "-";
  }
  return key + ":" + std::to_string(bytes);
}

const void *Context::find(const std::string &key, size_t bytes) {
  std::lock_guard lock(mutex_);
  auto it = available_.find(key);
  if (it == available_.end() || it->second.second != bytes)
    return nullptr;
  ++mapped;
  mappedBytes += bytes;
  return it->second.first;
}

void Context::add(const std::string &key, const void *data, size_t bytes) {
  std::lock_guard lock(mutex_);
  available_[key] = {data, bytes};
}

void Context::record(const std::string &key, const void *data, size_t bytes) {
  std::lock_guard lock(mutex_);
  for (const Block &b : recorded_)
    if (b.key == key)
      return;
  const auto *p = static_cast<const uint8_t *>(data);
  recorded_.push_back({key, std::vector<uint8_t>(p, p + bytes)});
}

std::vector<Context::Block> Context::takeRecorded() {
  std::lock_guard lock(mutex_);
  std::vector<Block> blocks = std::move(recorded_);
  std::sort(blocks.begin(), blocks.end(),
            [](const Block &a, const Block &b) { return a.key < b.key; });
  return blocks;
}

const void *lookup(int site, const std::string &layout, const void *source,
                   const void *secondary, size_t bytes, Context *&context, std::string &key) {
  key.clear();
  context = site < 0 ? nullptr : Context::active(source);
  if (!context)
    return nullptr;
  key = context->key(site, layout, source, secondary, bytes);
  if (key.empty()) {
    context = nullptr;
    return nullptr;
  }
  return context->mode() == Context::Mode::Replay ? context->find(key, bytes) : nullptr;
}

void done(Context *context, const std::string &key, const void *data, size_t bytes) {
  if (!context || key.empty())
    return;
  ++context->computed;
  context->computedBytes += bytes;
  if (context->mode() == Context::Mode::Record)
    context->record(key, data, bytes);
}

} // namespace cgc::cpu::prepared
