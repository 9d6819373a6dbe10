//===- ContainerStreamTest.cpp - Streamed containers and incremental MD5 --===//

#include "cgc/container.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

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

// Any split of the input gives the one-shot digest.
TEST(MD5Hasher, PiecesEqualOneShot) {
  std::vector<uint8_t> data(1000);
  for (size_t i = 0; i < data.size(); ++i)
    data[i] = uint8_t(i * 31 + 7);
  uint8_t whole[16];
  cgc::md5(data.data(), data.size(), whole);
  for (size_t split : {0, 1, 55, 63, 64, 65, 127, 128, 500, 999, 1000}) {
    for (size_t second : {0, 1, 64, 200}) {
      cgc::MD5Hasher hasher;
      size_t b = std::min(data.size(), split + second);
      hasher.update(data.data(), split);
      hasher.update(data.data() + split, b - split);
      hasher.update(data.data() + b, data.size() - b);
      uint8_t pieces[16];
      hasher.final(pieces);
      EXPECT_EQ(hex(pieces), hex(whole)) << split << "+" << second;
    }
  }
  uint8_t empty[16];
  cgc::MD5Hasher().final(empty);
  EXPECT_EQ(hex(empty), "d41d8cd98f00b204e9800998ecf8427e");
}

// A part gathered from referenced segments is the same container as one
// copied in; streaming gives the same bytes as finish().
TEST(ContainerWriter, ReferencedSegmentsAndStreaming) {
  std::string a = "first segment", b(5000, 'x'), c = "last";
  std::string joined = a + b + c;
  cgc::ContainerWriter copied, referenced;
  for (cgc::ContainerWriter *w : {&copied, &referenced})
    w->addPart(cgc::parts::kPlan, "{}");
  copied.addAlignedPart(cgc::parts::kConstants, joined.data(), joined.size(),
                        4096);
  referenced.addAlignedPartRef(
      cgc::parts::kConstants,
      {{reinterpret_cast<const uint8_t *>(a.data()), a.size()},
       {reinterpret_cast<const uint8_t *>(b.data()), b.size()},
       {nullptr, 0},
       {reinterpret_cast<const uint8_t *>(c.data()), c.size()}},
      4096);
  std::vector<uint8_t> one = copied.finish(), two = referenced.finish();
  EXPECT_EQ(one, two);
  std::vector<uint8_t> streamed;
  ASSERT_TRUE(referenced.writeTo([&](const void *data, size_t size) {
    const uint8_t *bytes = static_cast<const uint8_t *>(data);
    streamed.insert(streamed.end(), bytes, bytes + size);
    return true;
  }));
  EXPECT_EQ(streamed, one);

  cgc::ContainerReader reader;
  std::string error;
  ASSERT_TRUE(reader.open(two.data(), two.size(), error)) << error;
  cgc::ByteView payload;
  ASSERT_TRUE(cgc::ContainerReader::alignedPayload(
      *reader.find(cgc::parts::kConstants).front(), payload, error));
  EXPECT_EQ(payload.str(), joined);
  EXPECT_EQ((payload.data - two.data()) % 4096, 0u);

  // A failing sink stops the stream.
  unsigned calls = 0;
  EXPECT_FALSE(referenced.writeTo([&](const void *, size_t) {
    ++calls;
    return false;
  }));
  EXPECT_EQ(calls, 1u);
}

} // namespace
