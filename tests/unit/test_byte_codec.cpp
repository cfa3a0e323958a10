// The byte codec shared by ring messages and checkpoints: every field survives a round
// trip, and a short or corrupt buffer reaches the caller's error, never reads past the end.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <stdexcept>

#include "eval/byte_codec.hpp"

namespace isletune {
namespace {

Measurement full_measurement() {
  Measurement m;
  m.status = Status::wrong_result;
  m.median_ms = 0.125;
  m.times_ms = {0.12, 0.125, 0.13};
  m.compile_ms = 91.5;
  m.verify_ms = 12.25;
  m.run_ms = 3.5;
  m.registers = 72;
  m.shared_bytes = 12288;
  m.occupancy = 0.75;
  m.error_l2 = 3.5e-5;
  m.error_max = std::numeric_limits<double>::quiet_NaN();
  m.message = "rel L2 3.5e-05 > 1e-12";
  return m;
}

struct Corrupt : std::runtime_error {
  Corrupt() : std::runtime_error("corrupt") {}
};

TEST(ByteCodec, EveryFieldOfSettingAndMeasurementRoundTrips) {
  Setting s;
  for (std::size_t i = 0; i < kParamCount; ++i)
    s.values[i] = static_cast<int>(3 * i + 1);
  const Measurement m = full_measurement();
  ByteWriter w;
  w.put_setting(s);
  w.put_measurement(m);
  w.put_ints({4, -2, 9});
  w.put_string("");
  ByteReader r(w.bytes, [] { throw Corrupt(); });
  EXPECT_EQ(r.get_setting(), s);
  const Measurement back = r.get_measurement();
  EXPECT_EQ(back.status, m.status);
  EXPECT_EQ(back.median_ms, m.median_ms);
  EXPECT_EQ(back.times_ms, m.times_ms);
  EXPECT_EQ(back.compile_ms, m.compile_ms);
  EXPECT_EQ(back.verify_ms, m.verify_ms);
  EXPECT_EQ(back.run_ms, m.run_ms);
  EXPECT_EQ(back.registers, m.registers);
  EXPECT_EQ(back.shared_bytes, m.shared_bytes);
  EXPECT_EQ(back.occupancy, m.occupancy);
  EXPECT_EQ(back.error_l2, m.error_l2);
  EXPECT_TRUE(std::isnan(back.error_max));
  EXPECT_EQ(back.message, m.message);
  EXPECT_EQ(r.get_ints(), (std::vector<int>{4, -2, 9}));
  EXPECT_EQ(r.get_string(), "");
  EXPECT_TRUE(r.done());
}

TEST(ByteCodec, EveryTruncationAndABadStatusReachTheCallersError) {
  ByteWriter w;
  w.put_setting(Setting{});
  w.put_measurement(full_measurement());
  for (std::size_t n = 0; n < w.bytes.size(); ++n) {
    const std::vector<std::uint8_t> cut(w.bytes.begin(), w.bytes.begin() + n);
    ByteReader r(cut, [] { throw Corrupt(); });
    EXPECT_THROW(
        {
          (void)r.get_setting();
          (void)r.get_measurement();
        },
        Corrupt)
        << "cut at " << n;
  }
  std::vector<std::uint8_t> bad = w.bytes;
  bad[(1 + kParamCount) * sizeof(std::int32_t)] = kStatusCount;  // the status byte (after
                                                                 // the count and the values)
  ByteReader r(bad, [] { throw Corrupt(); });
  (void)r.get_setting();
  EXPECT_THROW((void)r.get_measurement(), Corrupt);
}

// A setting carries its parameter count: without one (a blob of before the count) it reads
// as the base parameters; fewer than the base parameters is corrupt; more than this build
// knows is one sentence naming both counts (docs/decisions.md#family-ocs).
TEST(ByteCodec, ASettingReadsWithoutItsCountAndOneOfMoreParametersIsRefused) {
  Setting s;
  for (std::size_t i = 0; i < kParamCount; ++i)
    s.values[i] = static_cast<int>(2 * i);
  ByteWriter w;
  w.put_setting(s);
  ASSERT_EQ(w.bytes.size(), (1 + kParamCount) * sizeof(std::int32_t));
  ByteReader counted(w.bytes, [] { throw Corrupt(); });
  EXPECT_EQ(counted.get_setting(), s);

  const std::vector<std::uint8_t> bare(
      w.bytes.begin() + sizeof(std::int32_t),
      w.bytes.begin() + static_cast<std::ptrdiff_t>((1 + kBaseParamCount) * sizeof(std::int32_t)));
  ByteReader old(bare, [] { throw Corrupt(); });
  const Setting back = old.get_setting();
  EXPECT_TRUE(old.done());
  for (std::size_t i = 0; i < kParamCount; ++i) {
    EXPECT_EQ(back.values[i], i < kBaseParamCount ? s.values[i] : neutral_value(param_at(i)))
        << param_name(param_at(i));
  }

  auto with_count = [&](std::int32_t count) {
    std::vector<std::uint8_t> b = w.bytes;
    std::memcpy(b.data(), &count, sizeof count);
    b.resize(b.size() + sizeof(std::int32_t) * 4, 0);  // room for a longer setting
    return b;
  };
  const auto fewer = with_count(-static_cast<std::int32_t>(kBaseParamCount) + 1);
  ByteReader corrupt(fewer, [] { throw Corrupt(); });
  EXPECT_THROW((void)corrupt.get_setting(), Corrupt);
  const auto more = with_count(-static_cast<std::int32_t>(kParamCount) - 1);
  ByteReader newer(more, [] { throw Corrupt(); });
  try {
    (void)newer.get_setting();
    FAIL() << "a setting of more parameters than this build knows was read";
  } catch (const InputError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(std::to_string(kParamCount + 1) + " parameters"), std::string::npos) << msg;
    EXPECT_NE(msg.find("knows " + std::to_string(kParamCount)), std::string::npos) << msg;
  }
}

}  // namespace
}  // namespace isletune
