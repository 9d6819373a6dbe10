//===- PrecompiledProgramTest.cpp - Precompiled-program blobs -------------===//
//
// cgc/precompiled_program.h: the key round-trips, another format is a
// well-formed miss, and every malformed blob is an error naming the problem.

#include "cgc/precompiled_program.h"

#include <gtest/gtest.h>

#include <cstring>

using namespace cgc;

namespace {

PrecompiledKey sampleKey() {
  PrecompiledKey key;
  key.compiler = "test-compiler src:0123456789abcdef";
  std::string bytecode = "ML\xefR some bytecode";
  key.partitionDigest =
      digestBytecode({reinterpret_cast<const uint8_t *>(bytecode.data()), bytecode.size()});
  return key;
}

/// A blob whose key part holds `keyJson` verbatim.
std::vector<uint8_t> blobWithKeyText(const std::string &keyJson) {
  ContainerWriter writer;
  writer.addPart(parts::kPrecompiledKey, keyJson);
  writer.addPart(parts::kKernelProgram, "{}");
  return writer.finish();
}

bool read(const std::vector<uint8_t> &blob, PrecompiledKey &key, std::string &error) {
  ContainerReader reader;
  return readPrecompiledProgram(blob.data(), blob.size(), reader, key, error);
}

TEST(PrecompiledProgram, KeyAndPartsRoundTrip) {
  PrecompiledKey key = sampleKey();
  std::vector<uint8_t> blob =
      writePrecompiledProgram(key, {{parts::kKernelProgram, "{\"kernels\": []}"}});
  ContainerReader reader;
  PrecompiledKey read;
  std::string error;
  ASSERT_TRUE(readPrecompiledProgram(blob.data(), blob.size(), reader, read, error)) << error;
  EXPECT_EQ(read, key);
  EXPECT_EQ(describeKeyMismatch(read, key), "matches");
  auto programs = reader.find(parts::kKernelProgram);
  ASSERT_EQ(programs.size(), 1u);
  EXPECT_EQ(programs[0]->data.str(), "{\"kernels\": []}");
}

TEST(PrecompiledProgram, DigestIsTheBytecodeMD5) {
  std::string abc = "abc";
  EXPECT_EQ(digestHex(digestBytecode({reinterpret_cast<const uint8_t *>(abc.data()), 3})),
            "900150983cd24fb0d6963f7d28e17f72");
}

TEST(PrecompiledProgram, MismatchesSayWhy) {
  PrecompiledKey mine = sampleKey();
  PrecompiledKey other = mine;
  other.compiler = "another src:ffff";
  EXPECT_NE(other, mine);
  EXPECT_NE(describeKeyMismatch(other, mine).find("made by compiler 'another src:ffff'"),
            std::string::npos);
  other = mine;
  other.partitionDigest[3] ^= 1;
  EXPECT_NE(other, mine);
  EXPECT_NE(describeKeyMismatch(other, mine).find("made from other bytecode"), std::string::npos);
}

TEST(PrecompiledProgram, AnotherFormatIsAWellFormedMiss) {
  PrecompiledKey key;
  std::string error;
  ASSERT_TRUE(read(blobWithKeyText("{\"format\": 7, \"whatever\": [1, 2]}"), key, error)) << error;
  EXPECT_EQ(key.format, 7u);
  EXPECT_NE(key, sampleKey());
  EXPECT_NE(describeKeyMismatch(key, sampleKey()).find("format 7"), std::string::npos);
}

TEST(PrecompiledProgram, MalformedBlobsAreErrors) {
  PrecompiledKey key;
  std::string error;
  auto expectError = [&](const std::vector<uint8_t> &blob, const std::string &needle) {
    error.clear();
    EXPECT_FALSE(read(blob, key, error)) << needle;
    EXPECT_NE(error.find(needle), std::string::npos) << error;
  };
  std::vector<uint8_t> junk(64, 0x5a);
  expectError(junk, "not a valid DX container");
  ContainerReader reader;
  EXPECT_FALSE(readPrecompiledProgram(nullptr, 0, reader, key, error));
  EXPECT_NE(error.find("empty"), std::string::npos);

  std::vector<uint8_t> good = writePrecompiledProgram(sampleKey(), {});
  std::vector<uint8_t> flipped = good;
  flipped.back() ^= 0x20; // inside the key JSON: the digest no longer matches
  expectError(flipped, "digest");

  ContainerWriter noKey;
  noKey.addPart(parts::kKernelProgram, "{}");
  expectError(noKey.finish(), "0 'CGPK' key parts");
  ContainerWriter twoKeys;
  twoKeys.addPart(parts::kPrecompiledKey, "{\"format\": 1}");
  twoKeys.addPart(parts::kPrecompiledKey, "{\"format\": 1}");
  expectError(twoKeys.finish(), "2 'CGPK' key parts");

  expectError(blobWithKeyText("not json"), "key ('CGPK') is malformed");
  expectError(blobWithKeyText("[1]"), "\"format\"");
  expectError(blobWithKeyText("{\"format\": -1}"), "\"format\"");
  expectError(blobWithKeyText("{\"format\": 1, \"partition_md5\": "
                              "\"900150983cd24fb0d6963f7d28e17f72\"}"),
              "compiler");
  expectError(blobWithKeyText("{\"format\": 1, \"compiler\": \"c\", \"partition_md5\": \"abc\"}"),
              "not 32 lowercase hex digits");
  expectError(blobWithKeyText("{\"format\": 1, \"compiler\": \"c\", \"partition_md5\": "
                              "\"900150983CD24FB0D6963F7D28E17F72\"}"),
              "not 32 lowercase hex digits");
  expectError(blobWithKeyText("{\"format\": 1, \"compiler\": \"\", \"partition_md5\": "
                              "\"900150983cd24fb0d6963f7d28e17f72\"}"),
              "\"compiler\" is empty");
  expectError(blobWithKeyText("{\"format\": 1, \"compiler\": 3, \"partition_md5\": "
                              "\"900150983cd24fb0d6963f7d28e17f72\"}"),
              "malformed");
}

} // namespace
