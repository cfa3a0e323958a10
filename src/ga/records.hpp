// What a search records, as plain values, and the TraceSink that receives them.
// The HDF5 trace (src/trace) implements TraceSink; tests use an in-memory one.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "eval/evaluator.hpp"
#include "setting/setting.hpp"

namespace isletune {

// One row of /ranks/NNNN/evaluations.
struct EvaluationRecord {
  std::int64_t eval_id = 0;  // per rank, 0, 1, 2, ... in evaluation order
  int generation = 0;        // 0 = initial population
  int cell = -1;             // population cell the individual was bred for (-1: none)
  std::vector<int> genes;    // the individual's genome (encoding-specific)
  Setting setting;           // parameter values
  Measurement measurement;
  double wall_s = 0;  // evaluator clock when the result was known
  // A new measurement's way through the evaluator's queue (search clock; NaN otherwise).
  Timeline timeline;
  bool cached = false;   // answered from the island's cache (not measured again)
  bool migrant = false;  // arrived from a neighbour with its measurement
};

// One row of /ranks/NNNN/generations.
struct GenerationRecord {
  int generation = 0;
  double wall_s = 0;        // evaluator clock at the end of the generation
  double wait_s = 0;        // wall seconds waiting in collectives (migration, vote, progress)
  double best_ms = 0;       // best-ever median ms per step on this island (NaN if none)
  double mean_fitness = 0;  // mean fitness of the population
  double mcr = 0;           // offspring MCR (share of the generation's children repeating a
                            // setting the island knew; Island::mcr)
  int unique_genomes = 0;
  int evaluations = 0;  // new measurements this generation (cache hits excluded)
  int cache_hits = 0;   // proposals answered from the cache (not written as evaluation rows)
  int fills = 0;        // of `evaluations`, measured while the island would wait (SearchLoop::fill)
  int restart = 0;      // 1: the island restarted on a fresh sample this generation
};

// One row of /ranks/NNNN/migrations.
struct MigrationRecord {
  int generation = 0;
  int direction = 0;  // +1 sent, -1 received
  int peer = 0;       // neighbour rank
  std::string key;    // canonical key of the migrant's setting
  double median_ms = 0;
};

class TraceSink {
 public:
  virtual ~TraceSink() = default;
  virtual void evaluation(const EvaluationRecord& r) = 0;
  virtual void generation(const GenerationRecord& r) = 0;
  virtual void migration(const MigrationRecord& r) = 0;
  // End of a generation: make everything so far durable.
  virtual void flush() = 0;
};

}  // namespace isletune
