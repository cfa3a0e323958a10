// Resume support: checkpoint blobs round-trip every field, damaged blobs are one
// sentence, and the recording decorators forward calls and restore the ring state.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "common/error.hpp"
#include "run/checkpoint.hpp"
#include "run/recording.hpp"

namespace isletune::run {
namespace {

Measurement measurement(double ms, Status status = Status::ok) {
  Measurement m;
  m.status = status;
  m.median_ms = ms;
  m.times_ms = {ms, ms * 1.5, ms * 0.9};
  m.compile_ms = 120.5;
  m.verify_ms = 7.25;
  m.run_ms = 3.5;
  m.registers = 38;
  m.shared_bytes = 4096;
  m.occupancy = 0.75;
  m.error_l2 = 1e-16;
  m.error_max = 2e-15;
  m.message = status == Status::ok ? "" : "bad kernel";
  return m;
}

Setting setting(int k) {
  Setting s;
  for (std::size_t i = 0; i < kParamCount; ++i)
    s.values[i] = static_cast<int>(i) * k + 1;
  return s;
}

RankState state(int generation) {
  RankState s;
  s.search.generation = generation;
  s.search.evaluations = 55;
  s.search.rows = 61;
  s.search.elapsed_s = 12.5;
  s.search.stopped = StopReason::none;
  s.search.strategy = {1, 2, 3, 0, 255, static_cast<std::uint8_t>(generation)};
  s.sends = 9;
  s.last_sent = {Migrant{setting(3), measurement(0.2), 2, generation}};
  s.votes = generation + 1;
  s.last_wish = StopReason::mcr;
  return s;
}

void expect_same(const Measurement& a, const Measurement& b) {
  EXPECT_EQ(a.status, b.status);
  if (std::isnan(a.median_ms)) {
    EXPECT_TRUE(std::isnan(b.median_ms));
  } else {
    EXPECT_EQ(a.median_ms, b.median_ms);
  }
  EXPECT_EQ(a.times_ms.size(), b.times_ms.size());
  EXPECT_EQ(a.compile_ms, b.compile_ms);
  EXPECT_EQ(a.verify_ms, b.verify_ms);
  EXPECT_EQ(a.run_ms, b.run_ms);
  EXPECT_EQ(a.registers, b.registers);
  EXPECT_EQ(a.shared_bytes, b.shared_bytes);
  EXPECT_EQ(a.occupancy, b.occupancy);
  EXPECT_EQ(a.message, b.message);
}

TEST(CliCheckpoint, RoundTripsEveryField) {
  RankCheckpoint c{state(5), {state(4)}};
  const RankCheckpoint back = decode_checkpoint(encode_checkpoint(c));
  ASSERT_EQ(back.earlier.size(), 1u);
  EXPECT_EQ(back.earlier[0].search.generation, 4);
  EXPECT_EQ(back.earlier[0].search.strategy, c.earlier[0].search.strategy);
  const RankState& s = back.current;
  EXPECT_EQ(s.search.generation, 5);
  EXPECT_EQ(s.search.evaluations, 55);
  EXPECT_EQ(s.search.rows, 61);
  EXPECT_EQ(s.search.elapsed_s, 12.5);
  EXPECT_EQ(s.search.stopped, StopReason::none);
  EXPECT_EQ(s.search.strategy, c.current.search.strategy);
  EXPECT_EQ(s.sends, 9);
  ASSERT_EQ(s.last_sent.size(), 1u);
  EXPECT_EQ(s.last_sent[0].setting, setting(3));
  EXPECT_EQ(s.last_sent[0].source_rank, 2);
  expect_same(s.last_sent[0].measurement, c.current.last_sent[0].measurement);
  EXPECT_EQ(s.votes, 6);
  EXPECT_EQ(s.last_wish, StopReason::mcr);
  EXPECT_EQ(back.at(4)->search.generation, 4);
  EXPECT_FALSE(back.at(3).has_value());
}

TEST(CliCheckpoint, DamagedBlobIsAnInputError) {
  auto bytes = encode_checkpoint(RankCheckpoint{state(1), {}});
  bytes.resize(bytes.size() / 2);
  EXPECT_THROW((void)decode_checkpoint(bytes), InputError);
  EXPECT_THROW((void)decode_checkpoint({1, 2, 3}), InputError);
}

// A checkpoint written before settings carried their parameter count (format 4: the same
// blob, the format field 4 and no count before a setting) still reads, every setting as it
// was; one whose settings hold more parameters than this build knows is refused in one
// sentence (docs/decisions.md#family-ocs).
TEST(CliCheckpoint, AFormat4CheckpointReadsAndANewerSettingIsRefused) {
  const RankCheckpoint c{state(5), {state(4)}};
  const std::vector<std::uint8_t> now = encode_checkpoint(c);
  std::int32_t tag = -static_cast<std::int32_t>(kParamCount);
  std::uint8_t tag_bytes[sizeof tag];
  std::memcpy(tag_bytes, &tag, sizeof tag);
  std::vector<std::uint8_t> old(now.begin(), now.begin() + 8);  // magic, format
  const std::uint32_t format4 = 4;
  std::memcpy(&old[4], &format4, sizeof format4);
  std::vector<std::size_t> tags;  // where a setting's count starts
  for (std::size_t i = 8; i < now.size();) {
    if (i + sizeof tag <= now.size() && std::equal(tag_bytes, tag_bytes + sizeof tag, &now[i])) {
      tags.push_back(i);
      i += sizeof tag;
      // Format 4 held the base parameters only: the appended ones' values go too.
      old.insert(old.end(), now.begin() + static_cast<std::ptrdiff_t>(i),
                 now.begin() + static_cast<std::ptrdiff_t>(i + kBaseParamCount * sizeof tag));
      i += kParamCount * sizeof tag;
      continue;
    }
    old.push_back(now[i++]);
  }
  ASSERT_EQ(tags.size(), 2u) << "one migrant setting per state, each with its count";
  const RankCheckpoint back = decode_checkpoint(old);
  Setting base = setting(3);  // as format 4 knew it: the appended parameters read neutral
  for (std::size_t i = kBaseParamCount; i < kParamCount; ++i)
    base.values[i] = neutral_value(param_at(i));
  ASSERT_EQ(back.current.last_sent.size(), 1u);
  EXPECT_EQ(back.current.last_sent[0].setting, base);
  EXPECT_EQ(back.current.search.strategy, c.current.search.strategy);
  EXPECT_EQ(back.at(4)->last_sent.at(0).setting, base);

  std::vector<std::uint8_t> newer = now;
  const std::int32_t more = tag - 1;
  std::memcpy(&newer[tags[0]], &more, sizeof more);
  try {
    (void)decode_checkpoint(newer);
    FAIL() << "a setting of more parameters than this build knows was read";
  } catch (const InputError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(std::to_string(kParamCount + 1) + " parameters"), std::string::npos) << msg;
    EXPECT_NE(msg.find("newer isletune"), std::string::npos) << msg;
  }
}

// A migrator/vote that records what reaches it.
struct FakeRing final : Migrator, StopVote {
  int neighbours() const override { return 2; }
  void send(const std::vector<Migrant>& m) override { sent.push_back(m); }
  std::vector<Migrant> receive() override { return {}; }
  StopReason vote(int, StopReason local) override {
    wishes.push_back(local);
    return StopReason::none;
  }
  std::vector<std::vector<Migrant>> sent;
  std::vector<StopReason> wishes;
};

TEST(CliCheckpoint, RecordersForwardAndRestoreTheRingState) {
  FakeRing ring;
  RecordingMigrator migrator(ring);
  RecordingVote vote(ring);
  const std::vector<Migrant> batch = {Migrant{setting(4), measurement(0.3), 0, 2}};
  migrator.send(batch);
  (void)vote.vote(0, StopReason::max_generations);
  EXPECT_EQ(migrator.sends(), 1);
  EXPECT_EQ(migrator.last_sent()[0].setting, setting(4));
  EXPECT_EQ(vote.last_wish(), StopReason::max_generations);
  ASSERT_EQ(ring.sent.size(), 1u);

  FakeRing fresh;
  RecordingMigrator m2(fresh);
  RecordingVote v2(fresh);
  m2.restore(migrator.sends(), migrator.last_sent());
  v2.restore(3, StopReason::signal, 7);
  ASSERT_EQ(fresh.sent.size(), 1u);  // the undelivered batch goes out again
  EXPECT_EQ(fresh.sent[0][0].setting, setting(4));
  ASSERT_EQ(fresh.wishes.size(), 1u);
  EXPECT_EQ(fresh.wishes[0], StopReason::none);  // a signal does not survive a restart
  FakeRing untouched;
  RecordingMigrator m3(untouched);
  m3.restore(0, {});
  EXPECT_TRUE(untouched.sent.empty());  // nothing was sent before: nothing to repeat
}

// Ranks may end up to three commits apart (checkpoint.hpp: a rank whose commit of g fails
// while the others commit through g + 2): a checkpoint keeps four generations, so resume
// finds the generation every rank has.
TEST(CliCheckpoint, KeepsTheNewestFourGenerationsForRanksThatEndedApart) {
  RankCheckpoint c{state(1), {}};
  for (int g = 2; g <= 9; ++g)
    c = c.then(state(g));
  const RankCheckpoint back = decode_checkpoint(encode_checkpoint(c));
  EXPECT_EQ(back.current.search.generation, 9);
  ASSERT_EQ(back.earlier.size(), static_cast<std::size_t>(kKeptStates - 1));
  for (int g = 9; g > 9 - kKeptStates; --g)
    EXPECT_TRUE(back.at(g).has_value()) << "generation " << g;
  EXPECT_FALSE(back.at(9 - kKeptStates).has_value());
}

}  // namespace
}  // namespace isletune::run
