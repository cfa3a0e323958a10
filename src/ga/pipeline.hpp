// The pipeline between an island's proposals and the evaluator's queue (docs/architecture.md,
// "The pipeline"). A generation is a proposal (Brood) whose new settings are queued at once;
// while the oldest proposal's measurements come back, the pipeline proposes the next
// generations from the population as it stands, so the evaluator always holds enough settings
// to keep its compile threads and its GPU busy (target()). Proposals settle in order, each as
// one generation: the GA's operators, rows, migration and stop vote stay per generation; only
// the parents are up to `max_broods - 1` generations older than they would be one at a time
// (less: a measurement takes its cell as it comes back, Island::take_in), and the queue is
// shallow while the island knows little (DepthRamp).
// With `max_broods` 1, a synchronous evaluator, or one whose compiles do not overlap its
// measurements (compile_threads() 0: replay of a recording that does not name its threads)
// it is the one-batch-per-generation loop.
//
// A proposal whose last settings are slow to compile would hold every later one up: once
// nothing but its own settings is queued and no more proposals may be made, it settles
// without them, and they come back later as late measurements (Island::late). So it does
// when the queue is short of its target only because every proposal allowed is queued and
// no more than kLateTail of its settings are still out (5-35 % more measurements in 60 s of
// replay on the recordings with compile threads, no later to 5 % of the optimum:
// docs/studies/2026-12-06-proposals-behind-a-slow-compile.md).
//
// Every decision depends only on which measurements have come back, so with replay's
// simulated queue a run is reproducible; save()/restore() and requeue() carry the pipeline
// across a resume. Pure.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <vector>

#include "eval/byte_codec.hpp"
#include "eval/evaluator.hpp"
#include "ga/ga_settings.hpp"
#include "ga/island.hpp"

namespace isletune {

// Whether generations overlap on `evaluator` with up to `max_broods` queued at once: it must
// measure its queue on its own (asynchronous) and compile while it measures (threads known).
[[nodiscard]] inline bool overlaps_generations(const Evaluator& evaluator, int max_broods) {
  return max_broods > 1 && evaluator.asynchronous() && evaluator.compile_threads() > 0;
}

// How far the proposals may run ahead of what the island knows: while its online model is fit
// on few measurements, every setting queued is chosen without the measurements still to come,
// and those are worth most then. So the settings queued are at most the measurements of the
// island's settled generations (Pipeline::target: what it knows less what has come back of
// the proposals still queued) over kPerQueued (at least 2, one generation at a time or
// nearly), whatever the pace asks for; from 6 x the pace's target on (about 120 measurements
// on a compile-bound H100 recording) the pace alone decides. On the replay of box2d2r 8192²
// (compiles of most of a second against 40 ms on the GPU) the full depth from generation 1
// needed 80 measurements to within 5 % of the optimum (median of 100 seeds) against 57 one
// generation at a time; with this ramp (and measurements taking their cells as they come
// back, Island::take_in) 58.5, at 7.00 s of the clock to 5 % against 6.80 and 5 % fewer
// measurements in 60 s (R = 3, 4, 8, hard caps, and the ramp counting the queued proposals'
// measurements come back too, 62.0, measured worse; docs/studies/2026-12-06-pipeline-depth-ramp.md,
// 2026-12-06-ramp-on-settled-generations.md).
struct DepthRamp {
  static constexpr int kPerQueued = 6;
  [[nodiscard]] static int most(std::int64_t known) {
    return static_cast<int>(std::clamp<std::int64_t>(known / kPerQueued, 2, 1 << 20));
  }
};

// A proposal with what has come back of it.
struct QueuedBrood {
  Brood brood;
  std::vector<Ticket> tickets;                      // per fresh setting
  std::vector<std::optional<Measurement>> results;  // per fresh setting
  std::vector<Timeline> timelines;                  // per fresh setting
  [[nodiscard]] int open() const;
};

class Pipeline {
 public:
  // The most settings of the oldest proposal still out when it settles early because the
  // proposals allowed are all queued (take()).
  static constexpr int kLateTail = 2;

  // `max_broods`: proposals at once (1: one at a time).
  explicit Pipeline(int max_broods = 1) : max_broods_(std::max(1, max_broods)) {}

  // Queues `b`'s fresh settings.
  void push(Brood b, Evaluator& evaluator);
  // Proposals queued and not yet taken.
  [[nodiscard]] int broods() const { return static_cast<int>(queue_.size()); }
  // Settings queued and not yet come back (stragglers included).
  [[nodiscard]] int outstanding() const;
  // Measurements of the queued proposals that have come back (their generations not settled).
  [[nodiscard]] int returned() const;
  // Settings the pipeline will count as new measurements: every fresh setting of the queued
  // proposals (come back or not) and the stragglers (come back or not).
  [[nodiscard]] int owed() const;
  // Settings of settled proposals still queued.
  [[nodiscard]] int stragglers() const { return static_cast<int>(late_.size()); }
  // Their settings, and those of stragglers come back and not yet handed on.
  [[nodiscard]] std::vector<Setting> straggling() const;
  // Settings to keep queued: enough compiles to feed the GPU at the measured pace (1.5 x the
  // mean compile over the mean GPU time, for the compiles' spread), plus two compiled kernels
  // ready, at most the evaluator's compile threads plus four; at most DepthRamp::most of
  // what set_known() counts less returned(): the settled generations' measurements.
  [[nodiscard]] int target(const Evaluator& evaluator) const;

  // Waits for the oldest proposal and returns it; meanwhile proposes more with `propose`
  // (empty, or nullopt: no more now) while fewer than target() settings are queued and fewer
  // than max_broods proposals, and hands stragglers' measurements to `on_late`. `early`: it
  // may settle without its slowest settings (see the file comment). `spent` (while
  // generations overlap): once it says the time budget is spent, nothing more is proposed or
  // waited for and the proposal settles with what has come back (the run stops after this
  // generation; a slow compile would otherwise hold the stop up to seconds past the budget).
  // `quorum` >= 0 (while generations overlap): it settles once that many of its settings have
  // come back, whatever else is queued (0: at once, with what has come back; a restart's
  // population, whose slowest compiles would leave the GPU idle); -1: none. Requires a
  // proposal queued.
  QueuedBrood take(Evaluator& evaluator, const std::function<std::optional<Brood>()>& propose,
                   const std::function<void(const Setting&, const Completion&)>& on_late,
                   bool early = true, const std::function<bool()>& spent = {}, int quorum = -1);
  // While the island would wait for its neighbours or the stop vote: proposes more as take()
  // does and takes in one measurement that comes back (blocking until one does; a
  // straggler's waits for the next take()). False when the evaluator does not overlap
  // generations or nothing is queued or may be proposed.
  bool pump(Evaluator& evaluator, const std::function<std::optional<Brood>()>& propose);
  // Called with every measurement of a queued proposal (the proposal, the fresh setting's
  // index) as it comes back, before the proposal settles (the island's model, and while
  // generations overlap (`overlapping`) its population, take it at once: later proposals are
  // bred on it).
  using OnResult = std::function<void(const Brood&, std::size_t, const Measurement&, bool)>;
  void set_on_result(OnResult f) { on_result_ = std::move(f); }
  // The measurements the proposals are chosen on (the island's, with those of the queued
  // proposals it has taken in), for the DepthRamp; unset: the pace alone sets the target.
  void set_known(std::function<std::int64_t()> f) { known_ = std::move(f); }
  // Waits for every straggler (to `on_late`), or until `spent` says the time budget is spent.
  void drain_late(Evaluator& evaluator,
                  const std::function<void(const Setting&, const Completion&)>& on_late,
                  const std::function<bool()>& spent = {});

  // Forgets every proposal, straggler and the measured pace (a restore from a checkpoint
  // of before the pipeline); the depth and the result callback stay.
  void clear();

  void save(ByteWriter& w) const;
  // The proposals and stragglers of save(); their settings are adopted by `island`
  // (std::invalid_argument: a proposal that does not fit it).
  void restore(ByteReader& r, Island& island);
  // After restore(): `kept` the evaluator's queue was restored with its tickets; else every
  // setting still owed is queued anew.
  void requeue(Evaluator& evaluator, bool kept);

 private:
  // Hands the deferred stragglers' measurements to `on_late`.
  void deliver(const std::function<void(const Setting&, const Completion&)>& on_late);
  // Routes a completion to its proposal or straggler.
  void route(Completion c, const std::function<void(const Setting&, const Completion&)>& on_late,
             const Evaluator& evaluator);
  void learn_pace(const Measurement& m);
  [[nodiscard]] bool pipelined(const Evaluator& evaluator) const {
    return overlaps_generations(evaluator, max_broods_);
  }
  // Proposes while fewer than target() settings and fewer than max_broods proposals are
  // queued; false once `propose` has no more.
  bool top_up(Evaluator& evaluator, const std::function<std::optional<Brood>()>& propose);

  int max_broods_;
  std::vector<QueuedBrood> queue_;  // oldest first
  std::map<Ticket, Setting> late_;  // settled proposals' settings still queued
  // Stragglers' measurements that came back during pump(), handed on by the next take() (a
  // generation's rows are written while it settles, never between its record and the next).
  std::vector<std::pair<Setting, Completion>> deferred_;
  std::map<Ticket, std::pair<std::size_t, std::size_t>> where_;  // ticket -> (brood seq, slot)
  std::size_t first_seq_ = 0;  // sequence number of queue_.front()
  OnResult on_result_;
  std::function<std::int64_t()> known_;
  // The measured pace: sums of compile and GPU seconds over the measurements seen.
  double compile_s_ = 0, gpu_s_ = 0;
  std::int64_t paced_ = 0;
};

}  // namespace isletune
