// The sampled set: the settings the GA may visit (docs/architecture.md, "The sampler"), with their
// OC ids and predicted times, plus which per-OC counts behind the sampling were estimates.
#pragma once

#include <cstddef>
#include <vector>

#include "setting/setting.hpp"

namespace isletune {

struct SampledSet {
  std::vector<Setting> settings;
  std::vector<int> oc;               // OC id of settings[i]
  std::vector<double> predicted_ms;  // predictor score of settings[i]
  std::vector<int> estimated_ocs;    // OCs whose valid count was a Monte-Carlo estimate

  // One more setting with its OC and prediction (the three lists stay in step).
  void add(const Setting& s, int oc_id, double predicted) {
    settings.push_back(s);
    oc.push_back(oc_id);
    predicted_ms.push_back(predicted);
  }
  [[nodiscard]] std::size_t size() const { return settings.size(); }
  [[nodiscard]] bool empty() const { return settings.empty(); }
};

}  // namespace isletune
