//===- precompiled_program.cpp - Precompiled MLIR programs ----------------===//

#include "cgc/precompiled_program.h"
#include "cgc/version.h"
#include "json_int.h"

#include <nlohmann/json.hpp>

#include <cstdio>

namespace cgc {

using json = nlohmann::json;

bool PrecompiledKey::operator==(const PrecompiledKey &o) const {
  return format == o.format && compiler == o.compiler &&
         partitionDigest == o.partitionDigest;
}

Md5Digest digestBytecode(ByteView bytecode) {
  Md5Digest digest;
  md5(bytecode.data, bytecode.size, digest.data());
  return digest;
}

std::string digestHex(const Md5Digest &digest) {
  static const char hex[] = "0123456789abcdef";
  std::string text;
  for (uint8_t byte : digest) {
    text += hex[byte >> 4];
    text += hex[byte & 15];
  }
  return text;
}

static bool parseDigestHex(const std::string &text, Md5Digest &digest) {
  if (text.size() != 32)
    return false;
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9')
      return c - '0';
    if (c >= 'a' && c <= 'f')
      return c - 'a' + 10;
    return -1;
  };
  for (size_t i = 0; i < 16; ++i) {
    int hi = nibble(text[2 * i]), lo = nibble(text[2 * i + 1]);
    if (hi < 0 || lo < 0)
      return false;
    digest[i] = uint8_t(hi << 4 | lo);
  }
  return true;
}

std::vector<uint8_t>
writePrecompiledProgram(const PrecompiledKey &key,
                        const std::vector<std::pair<uint32_t, std::string>> &parts) {
  json j = {{"format", key.format},
            {"compiler", key.compiler},
            {"partition_md5", digestHex(key.partitionDigest)}};
  ContainerWriter writer;
  writer.addPart(parts::kPrecompiledKey, j.dump());
  for (const auto &[fourCC, payload] : parts)
    writer.addPart(fourCC, payload);
  return writer.finish();
}

bool readPrecompiledProgram(const void *blob, size_t size, ContainerReader &reader,
                            PrecompiledKey &key, std::string &error) {
  key = PrecompiledKey();
  if (!blob || !size) {
    error = "the precompiled program is empty";
    return false;
  }
  if (!reader.open(blob, size, error)) {
    error = "the precompiled program is not a valid DX container: " + error;
    return false;
  }
  std::vector<const ContainerReader::Part *> keys = reader.find(parts::kPrecompiledKey);
  if (keys.size() != 1) {
    error = "the precompiled program has " + std::to_string(keys.size()) +
            " 'CGPK' key parts; exactly one is needed";
    return false;
  }
  try {
    json j = json::parse(keys[0]->data.str());
    if (!j.is_object() || !j.contains("format") || !j.at("format").is_number_unsigned())
      throw std::runtime_error("no unsigned integer \"format\"");
    key.format = j.at("format").get<JsonInt<uint32_t>>();
    if (key.format != PrecompiledKey::kFormat)
      return true; // another format: well formed as far as this reader knows
    key.compiler = j.at("compiler").get<std::string>();
    std::string digest = j.at("partition_md5").get<std::string>();
    if (!parseDigestHex(digest, key.partitionDigest))
      throw std::runtime_error("\"partition_md5\" is not 32 lowercase hex digits: '" + digest +
                               "'");
    if (key.compiler.empty())
      throw std::runtime_error("\"compiler\" is empty");
  } catch (const std::exception &e) {
    key = PrecompiledKey();
    error = std::string("the precompiled program's key ('CGPK') is malformed: ") + e.what();
    return false;
  }
  return true;
}

std::string describeKeyMismatch(const PrecompiledKey &found, const PrecompiledKey &expected) {
  if (found.format != expected.format)
    return "its key has format " + std::to_string(found.format) + ", this driver reads format " +
           std::to_string(expected.format);
  if (found.compiler != expected.compiler)
    return "it was made by compiler '" + found.compiler + "', this driver's compiler is '" +
           expected.compiler + "'";
  if (found.partitionDigest != expected.partitionDigest)
    return "it was made from other bytecode (partition MD5 " + digestHex(found.partitionDigest) +
           ", this program's is " + digestHex(expected.partitionDigest) + ")";
  return "matches";
}

std::string precompiledValueKey(std::string_view adapterFamily, const Md5Digest &partition) {
  return std::string(adapterFamily) + "/mlir-program/" + digestHex(partition);
}

uint64_t compilerVersionNumber(std::string_view identity) {
  if (identity.rfind("src:") == std::string_view::npos)
    return 0;
  // All of the identity (the sources' digest and the MLIR version the
  // compiler was built against) decides the build and revision parts.
  uint8_t digest[16];
  md5(identity.data(), identity.size(), digest);
  uint64_t bits = uint64_t(digest[0]) << 24 | uint64_t(digest[1]) << 16 |
                  uint64_t(digest[2]) << 8 | uint64_t(digest[3]);
  // CGC_PROJECT_VERSION_STRING "major.minor.patch".
  unsigned major = 0, minor = 0, patch = 0;
  std::sscanf(CGC_PROJECT_VERSION_STRING, "%u.%u.%u", &major, &minor, &patch);
  return uint64_t(major & 0xFFFF) << 48 | uint64_t(minor & 0xFFFF) << 32 | bits;
}

} // namespace cgc
