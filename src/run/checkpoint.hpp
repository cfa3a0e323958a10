// What a rank stores every generation so `isletune resume` continues exactly where the
// run was: the search loop's state (with the strategy's own bytes, for every strategy) plus the
// little ring state that is not in it (the last batch of emigrants, which the neighbours had not
// integrated yet, and the last stop wish, whose collective answer was still in flight). Two
// consecutive generations are kept because ranks may be one checkpoint apart when a run is killed;
// resume restarts every rank from the newest generation they all have.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

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

// The checkpoint blob: the newest state and the one before it (if any).
struct RankCheckpoint {
  RankState current;
  std::optional<RankState> previous;

  // The state of generation `g`, or nullopt when neither is of that generation.
  [[nodiscard]] std::optional<RankState> at(int generation) const;
};

// Serialises a checkpoint into bytes (format versioned; same binary reads it back).
[[nodiscard]] std::vector<std::uint8_t> encode_checkpoint(const RankCheckpoint& c);
// Inverse of encode_checkpoint; throws InputError when the blob is damaged or of
// another format version.
[[nodiscard]] RankCheckpoint decode_checkpoint(const std::vector<std::uint8_t>& bytes);

}  // namespace isletune::run
