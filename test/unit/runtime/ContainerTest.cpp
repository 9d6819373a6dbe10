//===- ContainerTest.cpp - DX container reader/writer ---------------------===//

#include "cgc/container.h"

#include <gtest/gtest.h>

#include <cstring>

using namespace cgc;

namespace {

std::string hex(const uint8_t digest[16]) {
  static const char *digits = "0123456789abcdef";
  std::string text;
  for (int i = 0; i < 16; ++i) {
    text += digits[digest[i] >> 4];
    text += digits[digest[i] & 15];
  }
  return text;
}

std::string md5Hex(const std::string &text) {
  uint8_t digest[16];
  md5(text.data(), text.size(), digest);
  return hex(digest);
}

TEST(MD5, RFC1321TestSuite) {
  EXPECT_EQ(md5Hex(""), "d41d8cd98f00b204e9800998ecf8427e");
  EXPECT_EQ(md5Hex("a"), "0cc175b9c0f1b6a831c399e269772661");
  EXPECT_EQ(md5Hex("abc"), "900150983cd24fb0d6963f7d28e17f72");
  EXPECT_EQ(md5Hex("message digest"), "f96b697d7cb7938d525a2f31aaf161d0");
  EXPECT_EQ(md5Hex("abcdefghijklmnopqrstuvwxyz"),
            "c3fcd3d76192e4007dfb496cca67e13b");
  EXPECT_EQ(md5Hex("12345678901234567890123456789012345678901234567890123456789"
                   "012345678901234567890"),
            "57edf4a22be3c955ac49da2e2107b67a");
}

TEST(Guid, SpecValuesPrintAndParse) {
  EXPECT_EQ(interfaces::kInput.str(), "{7FC4F23F-2474-4AE8-AE7A-2722118B350E}");
  EXPECT_EQ(interfaces::kSubgraphSpecialization.str(),
            "{F90A981E-0FCD-46D8-8AA1-166994C4DE02}");
  for (const Guid *g :
       {&interfaces::kInput, &interfaces::kOutput,
        &interfaces::kSubgraphPartition,
        &interfaces::kSubgraphDeclarationRequest,
        &interfaces::kSubgraphDeclaration,
        &interfaces::kSubgraphSpecializationRequest,
        &interfaces::kSubgraphSpecialization}) {
    std::optional<Guid> parsed = Guid::parse(g->str());
    ASSERT_TRUE(parsed);
    EXPECT_EQ(*parsed, *g);
    EXPECT_TRUE(interfaces::isKnown(*g));
  }
  EXPECT_STREQ(interfaces::name(interfaces::kOutput), "CGC_OUTPUT");
  Guid unknown = interfaces::kInput;
  unknown.data4[7] ^= 1;
  EXPECT_FALSE(interfaces::isKnown(unknown));
  EXPECT_FALSE(Guid::parse("{7FC4F23F-2474-4AE8-AE7A-2722118B350}"));
  EXPECT_FALSE(Guid::parse("7FC4F23F-2474-4AE8-AE7A-2722118B35XY"));
}

std::vector<uint8_t> sampleContainer() {
  ContainerWriter writer;
  writer.addMLIRPart(interfaces::kOutput, "bytecode");
  writer.addPart(parts::kPlan, std::string_view("{\"x\":1}"));
  std::vector<uint8_t> blob(100, 7);
  writer.addAlignedPart(parts::kConstants, blob.data(), blob.size(), 4096);
  writer.addPart(parts::kResponse, nullptr, 0);
  return writer.finish();
}

TEST(Container, RoundTripsWithDXILLayout) {
  std::vector<uint8_t> bytes = sampleContainer();
  ASSERT_GE(bytes.size(), 32u);
  EXPECT_EQ(std::memcmp(bytes.data(), "DXBC", 4), 0);
  ContainerReader reader;
  std::string error;
  ASSERT_TRUE(reader.open(bytes.data(), bytes.size(), error)) << error;
  ASSERT_EQ(reader.getParts().size(), 4u);
  // The first part starts right after the 4-entry offset table.
  EXPECT_EQ(reader.getParts()[0].offset, 32u + 4 * 4);

  Guid guid;
  ByteView bytecode;
  ASSERT_TRUE(ContainerReader::splitMLIRPart(reader.getParts()[0], guid,
                                             bytecode, error));
  EXPECT_EQ(guid, interfaces::kOutput);
  EXPECT_EQ(bytecode.str(), "bytecode");
  EXPECT_EQ(reader.find(parts::kPlan).at(0)->data.str(), "{\"x\":1}");

  ByteView constants;
  ASSERT_TRUE(ContainerReader::alignedPayload(*reader.find(parts::kConstants)[0],
                                              constants, error));
  EXPECT_EQ(constants.size, 100u);
  EXPECT_EQ((constants.data - bytes.data()) % 4096, 0);
  EXPECT_EQ(constants.data[99], 7);
  EXPECT_EQ(reader.find(parts::kResponse).at(0)->data.size, 0u);
}

TEST(Container, RejectsTruncation) {
  std::vector<uint8_t> bytes = sampleContainer();
  ContainerReader reader;
  std::string error;
  EXPECT_FALSE(reader.open(bytes.data(), 20, error));
  EXPECT_NE(error.find("truncated"), std::string::npos) << error;
  EXPECT_FALSE(reader.open(bytes.data(), bytes.size() - 1, error));
  EXPECT_NE(error.find("size field"), std::string::npos) << error;
}

TEST(Container, RejectsTampering) {
  std::vector<uint8_t> bytes = sampleContainer();
  bytes[bytes.size() - 200] ^= 0x40; // inside the constants
  ContainerReader reader;
  std::string error;
  EXPECT_FALSE(reader.open(bytes.data(), bytes.size(), error));
  EXPECT_NE(error.find("digest mismatch"), std::string::npos) << error;
}

TEST(Container, RejectsBadMagicAndVersion) {
  std::vector<uint8_t> bytes = sampleContainer();
  ContainerReader reader;
  std::string error;
  std::vector<uint8_t> wrongMagic = bytes;
  wrongMagic[0] = 'X';
  EXPECT_FALSE(reader.open(wrongMagic.data(), wrongMagic.size(), error));
  EXPECT_NE(error.find("'DXBC'"), std::string::npos) << error;
  std::vector<uint8_t> newer = bytes;
  newer[20] = 2;
  EXPECT_FALSE(reader.open(newer.data(), newer.size(), error));
  EXPECT_NE(error.find("unsupported DX container version 2.0"),
            std::string::npos)
      << error;
}

TEST(Container, RejectsGapsAndOverruns) {
  std::vector<uint8_t> bytes = sampleContainer();
  ContainerReader reader;
  std::string error;
  // Move part 1's offset forward by 4: a gap. Recompute the digest so only
  // the layout check can object.
  std::vector<uint8_t> gap = bytes;
  gap[32 + 4] += 4;
  md5(gap.data() + 20, gap.size() - 20, gap.data() + 4);
  EXPECT_FALSE(reader.open(gap.data(), gap.size(), error));
  EXPECT_NE(error.find("gaps"), std::string::npos) << error;
  // Make part 0 claim more bytes than the container has.
  std::vector<uint8_t> overrun = bytes;
  size_t part0 = 32 + 16;
  overrun[part0 + 4 + 3] = 0x7f;
  md5(overrun.data() + 20, overrun.size() - 20, overrun.data() + 4);
  EXPECT_FALSE(reader.open(overrun.data(), overrun.size(), error));
  EXPECT_NE(error.find("runs past the end"), std::string::npos) << error;
}

TEST(Container, ReportsUnknownParts) {
  std::vector<uint8_t> bytes = sampleContainer();
  ContainerReader reader;
  std::string error;
  ASSERT_TRUE(reader.open(bytes.data(), bytes.size(), error)) << error;
  EXPECT_TRUE(reader.checkKnownParts({parts::kMLIR, parts::kPlan,
                                      parts::kConstants, parts::kResponse},
                                     error));
  EXPECT_FALSE(reader.checkKnownParts({parts::kMLIR, parts::kPlan}, error));
  EXPECT_NE(error.find("unknown part 'CGCN'"), std::string::npos) << error;
}

} // namespace

// A 'CGCK' part: chunk checksums a reader verifies instead of the digest
// (cgc/container.h). Every writing path makes the same bytes, the digest
// still covers everything, and a flipped byte anywhere before the part is
// found and located.
TEST(Container, ChunkChecksumsReplaceTheDigestCheck) {
  ContainerWriter writer;
  writer.addPart(parts::kPlan, std::string_view("{\"x\":1}"));
  std::vector<uint8_t> blob(50000);
  for (size_t i = 0; i < blob.size(); ++i)
    blob[i] = uint8_t(i * 131 + 7);
  writer.addAlignedPart(parts::kConstants, blob.data(), blob.size(), 4096);
  writer.addChecksums(12); // 4 KiB chunks: 14 of them
  std::vector<uint8_t> bytes = writer.finish();
  std::vector<uint8_t> streamed;
  ASSERT_TRUE(writer.writeTo([&](const void *d, size_t n) {
    streamed.insert(streamed.end(), static_cast<const uint8_t *>(d),
                    static_cast<const uint8_t *>(d) + n);
    return true;
  }));
  std::vector<uint8_t> onePass;
  uint8_t digest[16];
  ASSERT_TRUE(writer.writeToOnePass(
      [&](const void *d, size_t n) {
        onePass.insert(onePass.end(), static_cast<const uint8_t *>(d),
                       static_cast<const uint8_t *>(d) + n);
        return true;
      },
      digest));
  std::memcpy(onePass.data() + 4, digest, 16);
  EXPECT_EQ(streamed, bytes);
  EXPECT_EQ(onePass, bytes);
  uint8_t md5Digest[16];
  md5(bytes.data() + 20, bytes.size() - 20, md5Digest);
  EXPECT_EQ(std::memcmp(md5Digest, bytes.data() + 4, 16), 0);

  ContainerReader reader;
  std::string error;
  ASSERT_TRUE(reader.open(bytes.data(), bytes.size(), error)) << error;
  EXPECT_TRUE(reader.verifiedByChecksums());
  EXPECT_EQ(reader.getParts().size(), 2u); // the 'CGCK' part is not listed
  for (size_t at : {size_t(24), size_t(5000), bytes.size() - 300}) {
    std::vector<uint8_t> bad = bytes;
    // Inside the covered bytes (the checksums part is the last ~150).
    ASSERT_LT(at, reader.bytes().size);
    bad[at] ^= 0x10;
    ContainerReader r;
    std::string why;
    if (at == 24) {
      EXPECT_FALSE(r.open(bad.data(), bad.size(), why)); // the size field
      continue;
    }
    EXPECT_FALSE(r.open(bad.data(), bad.size(), why));
    EXPECT_NE(why.find("checksum mismatch in bytes"), std::string::npos) << why;
  }
  // A malformed checksums part is an error, not a pass.
  std::vector<uint8_t> bad = bytes;
  bad[bad.size() - 8 * 14 - 20] ^= 1; // its chunk shift
  EXPECT_FALSE(reader.open(bad.data(), bad.size(), error));
  EXPECT_NE(error.find("malformed 'CGCK'"), std::string::npos) << error;
}
