// The evaluators' queue (evaluator.hpp): the synchronous form's default and AsyncEvaluator's
// evaluate() over its queue.
#include "eval/evaluator.hpp"

#include <algorithm>
#include <stdexcept>

namespace isletune {

Ticket Evaluator::submit(const Setting& s) {
  queued_.emplace_back(next_ticket_, s);
  return next_ticket_++;
}

// The whole queue as one evaluate() batch, then its measurements one per call.
std::optional<Completion> Evaluator::next() {
  if (measured_.empty() && !queued_.empty()) {
    std::vector<Setting> batch;
    batch.reserve(queued_.size());
    for (const auto& q : queued_)
      batch.push_back(q.second);
    const double submitted = clock_s();
    std::vector<Measurement> results = evaluate(batch);
    if (results.size() != batch.size()) {
      throw std::runtime_error("Evaluator '" + name() + "' returned " +
                               std::to_string(results.size()) + " results for " +
                               std::to_string(batch.size()) + " settings");
    }
    const double done = clock_s();
    for (std::size_t i = 0; i < results.size(); ++i)
      measured_.push_back({queued_[i].first, std::move(results[i]), {submitted, {}, done}});
  }
  if (measured_.empty())
    return std::nullopt;
  Completion c = std::move(measured_.front());
  measured_.erase(measured_.begin());
  queued_.erase(std::find_if(queued_.begin(), queued_.end(),
                             [&](const auto& q) { return q.first == c.ticket; }));
  return c;
}

Ticket AsyncEvaluator::submit(const Setting& s) {
  const Ticket t = next_ticket_++;
  ++outstanding_;
  enqueue(t, s);
  return t;
}

std::optional<Completion> AsyncEvaluator::next() {
  if (outstanding_ == 0)
    return std::nullopt;
  --outstanding_;
  if (!kept_.empty()) {
    Completion c = std::move(kept_.front());
    kept_.erase(kept_.begin());
    return c;
  }
  return wait_one();
}

std::vector<Measurement> AsyncEvaluator::evaluate(std::span<const Setting> batch) {
  const Ticket first = next_ticket_;
  for (const Setting& s : batch) {
    ++outstanding_;
    enqueue(next_ticket_++, s);
  }
  std::vector<Measurement> out(batch.size());
  for (std::size_t left = batch.size(); left > 0;) {
    Completion c = wait_one();
    if (c.ticket >= first && c.ticket < first + static_cast<Ticket>(batch.size())) {
      out[static_cast<std::size_t>(c.ticket - first)] = std::move(c.measurement);
      --outstanding_;
      --left;
    } else {
      kept_.push_back(std::move(c));
    }
  }
  return out;
}

}  // namespace isletune
