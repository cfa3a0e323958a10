// The byte codec shared by ring messages and checkpoints: every field survives a round
// trip, and a short or corrupt buffer reaches the caller's error, never reads past the end.
#include <gtest/gtest.h>

#include <cmath>
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
  bad[kParamCount * sizeof(std::int32_t)] = kStatusCount;  // the status byte
  ByteReader r(bad, [] { throw Corrupt(); });
  (void)r.get_setting();
  EXPECT_THROW((void)r.get_measurement(), Corrupt);
}

}  // namespace
}  // namespace isletune
