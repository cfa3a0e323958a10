// The replay sweep's wall clock (bench/sweep.cpp, "wall 5% s"): when each island of a run
// ends each of its generations, from its busy time per generation and the waits of the
// product's search loop. Pure C++, header-only (tests/unit/test_wall_clock.cpp).
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

namespace isletune {

// When each island ends each of its generations on the run's wall clock, rebuilt from its
// busy time per generation (`busy[r][g]`: its replay clock's advance in that step) and the
// waits of the product's loop: generation g of island r starts once r has ended g - 1, its
// two ring neighbours have ended g - 1 - lag (the migrants it receives), every island has
// ended g - 2 (the pipelined stop vote) and, for g = 1, every island has ended generation 0
// (the gather of generation 0). On 4 H100s this model puts a 4-rank run's 48-50
// generations at 60.7-60.9 s from the ranks' recorded busy times, against 62.0-62.3 s
// measured (docs/studies/2026-11-27-islands-4xh100-completion-order.md).
inline std::vector<std::vector<double>> wall_ends(const std::vector<std::vector<double>>& busy,
                                                  int lag, bool gather_first) {
  const int n = static_cast<int>(busy.size());
  std::vector<std::vector<double>> end(busy.size());
  std::size_t longest = 0;
  for (const auto& b : busy)
    longest = std::max(longest, b.size());
  // The end of island r's generation g, or of its last one when it has stopped before g.
  const auto ended = [&](int r, long long g) {
    const auto& e = end[static_cast<std::size_t>(r)];
    if (g < 0 || e.empty())
      return 0.0;
    return e[std::min<std::size_t>(static_cast<std::size_t>(g), e.size() - 1)];
  };
  for (std::size_t g = 0; g < longest; ++g) {
    for (int r = 0; r < n; ++r) {
      const auto& b = busy[static_cast<std::size_t>(r)];
      if (g >= b.size())
        continue;
      const auto gi = static_cast<long long>(g);
      double start = ended(r, gi - 1);
      if (n > 1) {
        for (const int d : {n - 1, 1})
          start = std::max(start, ended((r + d) % n, gi - 1 - lag));
        for (int q = 0; q < n; ++q)
          start = std::max(start, ended(q, gi - 2));
        if (g == 1 && gather_first) {
          for (int q = 0; q < n; ++q)
            start = std::max(start, ended(q, 0));
        }
      }
      end[static_cast<std::size_t>(r)].push_back(start + b[g]);
    }
  }
  return end;
}

}  // namespace isletune
