// The uniform and roofline predictors (formula documented in predictor.hpp) and the
// rank correlation that measures how well a predictor orders settings.
#include "sample/predictor.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "common/error.hpp"

namespace isletune {

// Tile, halo-inclusive reads and redundancy of one setting (stand-in for make_plan).
PlanCost plan_cost_until_make_plan(const Stencil& stencil, const Setting& s) {
  PlanCost p;
  const int tb[3] = {s[Param::tbx], s[Param::tby], s[Param::tbz]};
  const int mf[3] = {s[Param::mfx], s[Param::mfy], s[Param::mfz]};
  const bool streaming = s[Param::streaming] != 0;
  const int tdeg = std::max(1, s[Param::tdeg]);
  p.stream_axis = streaming ? s[Param::sd] : -1;
  p.threads_per_block = std::max(1, tb[0]) * std::max(1, tb[1]) * std::max(1, tb[2]);
  double tile_cells = 1, loaded_cells = 1, shared_cells = 1, computed = 0;
  for (int d = 0; d < stencil.dims(); ++d) {
    const int r = stencil.radius(d);
    if (d == p.stream_axis) {
      p.stream_len = std::max(1, s[Param::sb]);
      p.tile[d] = static_cast<int>(p.stream_len);
      shared_cells *= 2.0 * r + 1.0;
    } else {
      p.tile[d] = std::max(1, tb[d]) * std::max(1, mf[d]);
      shared_cells *= p.tile[d] + 2.0 * r * tdeg;
    }
    tile_cells *= p.tile[d];
    loaded_cells *= p.tile[d] + 2.0 * r * tdeg;
  }
  // Redundancy: step k of tdeg fused steps computes the tile grown by r (tdeg-1-k) per side.
  for (int k = 0; k < tdeg; ++k) {
    double cells = 1;
    for (int d = 0; d < stencil.dims(); ++d)
      cells *= p.tile[d] + 2.0 * stencil.radius(d) * (tdeg - 1 - k);
    computed += cells;
  }
  p.redundancy = computed / (tile_cells * tdeg);
  p.global_read_doubles = loaded_cells / tile_cells / tdeg;
  p.global_write_doubles = 1.0 / tdeg;
  p.flops_per_cell = stencil.flops_per_cell();
  p.shared_bytes = s[Param::use_shared] != 0 ? static_cast<long long>(8.0 * shared_cells) : 0;
  return p;
}

// Keeps what the roofline formula needs from the problem and the device.
RooflinePredictor::RooflinePredictor(const Stencil& stencil, const Grid& grid,
                                     const DeviceLimits& limits)
    : stencil_(stencil), grid_(grid), limits_(limits) {}

// Analytic time per step of a setting (see the header for the model).
double RooflinePredictor::predict_ms(const Setting& s) const {
  const PlanCost plan = plan_cost_until_make_plan(stencil_, s);
  const long long threads = plan.threads_per_block;
  if (threads > limits_.max_threads_per_block || threads <= 0)
    return kUnfit;
  if (plan.shared_bytes > limits_.shared_per_block_optin)
    return kUnfit;
  const int tdeg = std::max(1, s[Param::tdeg]);
  const bool shared = s[Param::use_shared] != 0;

  double read = plan.global_read_doubles;
  if (!shared)
    read = 1.0 / tdeg + (read - 1.0 / tdeg) * 0.5;
  const bool block_x = static_cast<MergeKind>(s[Param::merge]) == MergeKind::block;
  const double coalesce = block_x ? std::min(4, std::max(1, s[Param::mfx])) : 1.0;
  const int warp_x = std::min(std::max(1, s[Param::tbx]), 32);
  const double segment = 1.0 + (32.0 / warp_x - 1.0) / 4.0;
  const double bytes = 8.0 * (read + plan.global_write_doubles) * coalesce * segment;
  const double staging = shared ? 1.1 : 1.0;

  long long blocks =
      std::min<long long>(limits_.max_blocks_per_sm, limits_.max_threads_per_sm / threads);
  if (plan.shared_bytes > 0)
    blocks = std::min<long long>(blocks, limits_.shared_per_sm / plan.shared_bytes);
  if (blocks <= 0)
    return kUnfit;
  const double occupancy = static_cast<double>(blocks * threads) / limits_.max_threads_per_sm;
  const double efficiency = std::min(1.0, occupancy / 0.5);

  const double cells = static_cast<double>(grid_.cells());
  const int mf[3] = {s[Param::mfx], s[Param::mfy], s[Param::mfz]};
  double points_per_thread = 1;
  for (int d = 0; d < stencil_.dims(); ++d) {
    points_per_thread *=
        d == plan.stream_axis ? static_cast<double>(plan.stream_len) : std::max(1, mf[d]);
  }
  const double resident = static_cast<double>(limits_.sm_count) * blocks * threads;
  const double parallel = std::min(1.0, cells / points_per_thread / (4.0 * resident));

  const double t_mem_ms = cells * bytes / (limits_.memory_bandwidth_gbs * 1e9) * 1e3;
  const double t_flop_ms =
      cells * plan.flops_per_cell * plan.redundancy / (limits_.fp64_gflops * 1e9) * 1e3;
  double f_stream = 1.0;
  if (s[Param::streaming] != 0 && s[Param::retiming] != 0)
    f_stream *= 0.95;
  if (s[Param::streaming] != 0 && s[Param::prefetch] != 0)
    f_stream *= 0.95;
  return std::max(t_mem_ms, t_flop_ms) * staging / (efficiency * parallel) * f_stream +
         0.005 / tdeg;
}

namespace {

// Ranks 1..n, ties sharing their average rank.
std::vector<double> ranks(std::span<const double> v) {
  std::vector<std::size_t> order(v.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](auto a, auto b) { return v[a] < v[b]; });
  std::vector<double> r(v.size());
  for (std::size_t i = 0; i < order.size();) {
    std::size_t j = i;
    while (j + 1 < order.size() && v[order[j + 1]] == v[order[i]])
      ++j;
    for (std::size_t k = i; k <= j; ++k)
      r[order[k]] = 0.5 * static_cast<double>(i + j) + 1.0;
    i = j + 1;
  }
  return r;
}

}  // namespace

// Pearson correlation of the ranks.
double rank_correlation(std::span<const double> a, std::span<const double> b) {
  if (a.size() != b.size() || a.size() < 2)
    return 0;
  const std::vector<double> ra = ranks(a), rb = ranks(b);
  const double n = static_cast<double>(a.size());
  const double mean = (n + 1) / 2;
  double sab = 0, saa = 0, sbb = 0;
  for (std::size_t i = 0; i < ra.size(); ++i) {
    sab += (ra[i] - mean) * (rb[i] - mean);
    saa += (ra[i] - mean) * (ra[i] - mean);
    sbb += (rb[i] - mean) * (rb[i] - mean);
  }
  return saa > 0 && sbb > 0 ? sab / std::sqrt(saa * sbb) : 0.0;
}

// Predictor by its configuration name.
std::unique_ptr<Predictor> make_predictor(std::string_view name, const Stencil& stencil,
                                          const Grid& grid, const DeviceLimits& limits,
                                          std::string_view key) {
  if (name == "uniform")
    return std::make_unique<UniformPredictor>();
  if (name == "roofline")
    return std::make_unique<RooflinePredictor>(stencil, grid, limits);
  throw InputError(std::string(key) + ": unknown predictor '" + std::string(name) +
                   "'; expected uniform or roofline.");
}

}  // namespace isletune
