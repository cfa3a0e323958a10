// Stop rules (docs/architecture.md, "Stopping") as small interfaces in the style of nvbench's
// stopping criteria: each looks at the island's progress and either says StopReason::none (go on)
// or why it wants to stop. The collective StopVote (migrator.hpp) turns the wishes of all islands
// into one decision.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "ga/migrator.hpp"

namespace isletune {

// What the rules look at, after a generation.
struct IslandProgress {
  int generation = 0;            // generations completed (0 = initial population)
  std::int64_t evaluations = 0;  // new measurements so far (cache hits and migrants excluded)
  double mcr = 0;                // offspring MCR: share of the generation's offspring that
                                 // repeat a setting the island already knew (Island::mcr)
  double elapsed_s = 0;          // evaluator clock since the search started
};

class StopRule {
 public:
  virtual ~StopRule() = default;
  [[nodiscard]] virtual StopReason check(const IslandProgress& p) const = 0;
};

// Stops once the island's offspring MCR >= threshold.
class McrStop final : public StopRule {
 public:
  explicit McrStop(double threshold) : threshold_(threshold) {}
  [[nodiscard]] StopReason check(const IslandProgress& p) const override {
    return p.mcr >= threshold_ ? StopReason::mcr : StopReason::none;
  }

 private:
  double threshold_;
};

// Stops once `limit` generations after the initial population have run.
class MaxGenerations final : public StopRule {
 public:
  explicit MaxGenerations(int limit) : limit_(limit) {}
  [[nodiscard]] StopReason check(const IslandProgress& p) const override {
    return p.generation >= limit_ ? StopReason::max_generations : StopReason::none;
  }

 private:
  int limit_;
};

// Stops once `limit` new measurements were made.
class MaxEvaluations final : public StopRule {
 public:
  explicit MaxEvaluations(std::int64_t limit) : limit_(limit) {}
  [[nodiscard]] StopReason check(const IslandProgress& p) const override {
    return p.evaluations >= limit_ ? StopReason::max_evaluations : StopReason::none;
  }

 private:
  std::int64_t limit_;
};

// Stops once `seconds` of evaluator clock have passed. Checked after a whole generation and
// voted on one generation later, so a run overshoots the budget by up to about two
// generations' clock (docs/architecture.md, "Stopping"); unlike MaxEvaluations no batch
// can be trimmed to it, since a measurement's cost is known only once it is made.
class TimeBudget final : public StopRule {
 public:
  explicit TimeBudget(double seconds) : seconds_(seconds) {}
  [[nodiscard]] StopReason check(const IslandProgress& p) const override {
    return p.elapsed_s >= seconds_ ? StopReason::time_budget : StopReason::none;
  }

 private:
  double seconds_;
};

// Any of several rules; when several fire, the smallest reason (the StopVote order).
class AnyOf final : public StopRule {
 public:
  AnyOf() = default;
  AnyOf& add(std::unique_ptr<StopRule> rule) {
    rules_.push_back(std::move(rule));
    return *this;
  }
  [[nodiscard]] StopReason check(const IslandProgress& p) const override {
    StopReason out = StopReason::none;
    for (const auto& r : rules_) {
      const StopReason why = r->check(p);
      if (why != StopReason::none && (out == StopReason::none || why < out))
        out = why;
    }
    return out;
  }
  [[nodiscard]] std::size_t size() const { return rules_.size(); }

 private:
  std::vector<std::unique_ptr<StopRule>> rules_;
};

}  // namespace isletune
