// What a rank stores every generation so `isletune resume` continues exactly where the
// run was: the search loop's state (with the strategy's own bytes, for every strategy) plus the
// little ring state that is not in it (the last batch of emigrants, which the neighbours had not
// integrated yet, and the last stop wish, whose collective answer was still in flight).
//
// The newest kept_states(depth) generations are kept (4 by default), because ranks may end up
// to 3 commits apart: a rank commits generation g after its stop vote of g, which waits only for
// every rank's vote of g - 1 (the vote is pipelined one generation), so a rank that freezes
// after voting g - 1 and before committing it has g - 2 while the others commit g (2 apart);
// a rank whose commit of g fails (a full disk) wishes to stop in g + 1, which the vote agrees
// in g + 2, so the others commit up to g + 2 while it has g - 1 (3 apart). Resume restarts
// every rank from the newest generation they all have. With ga.migration.drift D the vote is
// pipelined D + 1 generations, so each of those distances grows by D: D + 3 apart at most.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "ga/ga_settings.hpp"
#include "ga/migrator.hpp"
#include "ga/search.hpp"

namespace isletune::run {

// One rank's resumable state after one generation.
struct RankState {
  SearchState search;
  std::int64_t sends = 0;                   // migrator send() calls so far
  std::vector<Migrant> last_sent;           // the batch of the last send() (empty if none)
  int votes = 0;                            // stop votes cast so far
  StopReason last_wish = StopReason::none;  // the wish of the last vote
};

// Generations a checkpoint blob keeps (see above).
// `vote_depth`: GaSettings::vote_depth(), the stop vote's pipeline depth.
constexpr int kept_states(int vote_depth) {
  return vote_depth + 3;
}
inline constexpr int kKeptStates = kept_states(1);  // the deterministic ring's
inline constexpr int kMaxKeptStates = kept_states(GaSettings::kMaxDrift + 1);

// The checkpoint blob: the newest state and up to kept_states(depth) - 1 before it.
struct RankCheckpoint {
  RankState current;
  std::vector<RankState> earlier;  // newest first, consecutive generations

  // The state of generation `g`, or nullopt when none kept is of that generation.
  [[nodiscard]] std::optional<RankState> at(int generation) const;
  // The checkpoint after one more generation: `next` becomes current, the oldest kept
  // state is dropped.
  [[nodiscard]] RankCheckpoint then(RankState next, int keep = kKeptStates) const;
};

// Serialises a checkpoint into bytes (format versioned; same binary reads it back).
[[nodiscard]] std::vector<std::uint8_t> encode_checkpoint(const RankCheckpoint& c);
// Inverse of encode_checkpoint; throws InputError when the blob is damaged or of
// another format version.
[[nodiscard]] RankCheckpoint decode_checkpoint(const std::vector<std::uint8_t>& bytes);

}  // namespace isletune::run
