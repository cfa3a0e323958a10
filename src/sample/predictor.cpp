// The uniform and roofline predictors (formula documented in predictor.hpp).
#include "sample/predictor.hpp"

#include <algorithm>
#include <cmath>

#include "common/error.hpp"

namespace isletune {

// Keeps what the roofline formula needs from the problem and the device.
RooflinePredictor::RooflinePredictor(const Stencil& stencil, const Grid& grid,
                                     const DeviceLimits& limits)
    : dims_(stencil.dims()),
      order_(stencil.order()),
      radius_{stencil.radius(0), stencil.radius(1), stencil.radius(2)},
      flops_per_cell_(stencil.flops_per_cell()),
      grid_(grid),
      limits_(limits) {}

// Analytic time per step of a setting (see the header for the model).
double RooflinePredictor::predict_ms(const Setting& s) const {
  const int tb[3] = {s[Param::tbx], s[Param::tby], s[Param::tbz]};
  const int mf[3] = {s[Param::mfx], s[Param::mfy], s[Param::mfz]};
  const bool streaming = s[Param::streaming] != 0;
  const int sd = streaming ? s[Param::sd] : -1;
  const int tdeg = std::max(1, s[Param::tdeg]);
  const bool shared = s[Param::use_shared] != 0;

  const long long threads = 1LL * std::max(1, tb[0]) * std::max(1, tb[1]) * std::max(1, tb[2]);
  if (threads > limits_.max_threads_per_block || threads <= 0)
    return kUnfit;

  double halo = 1.0;
  double tile_min = 1e30;
  double shared_cells = 1.0;
  for (int d = 0; d < dims_; ++d) {
    const double tile = d == sd ? std::max(1, s[Param::sb])
                                : static_cast<double>(std::max(1, tb[d]) * std::max(1, mf[d]));
    halo *= 1.0 + 2.0 * radius_[d] / tile;
    tile_min = std::min(tile_min, tile);
    shared_cells *= d == sd ? 2.0 * radius_[d] + 1.0 : tile + 2.0 * radius_[d];
  }
  const double reread = shared ? 1.0 : 1.25;
  const double bytes = 8.0 + 8.0 * halo * reread;
  const double redundancy = 1.0 + 2.0 * order_ * tdeg / tile_min;

  const double shared_bytes = shared ? 8.0 * shared_cells : 0.0;
  if (shared_bytes > limits_.shared_per_block_optin)
    return kUnfit;
  long long blocks =
      std::min<long long>(limits_.max_blocks_per_sm, limits_.max_threads_per_sm / threads);
  if (shared_bytes > 0) {
    blocks =
        std::min<long long>(blocks, static_cast<long long>(limits_.shared_per_sm / shared_bytes));
  }
  if (blocks <= 0)
    return kUnfit;
  const double occupancy = static_cast<double>(blocks * threads) / limits_.max_threads_per_sm;
  const double efficiency = std::min(1.0, occupancy / 0.5);

  const double cells = static_cast<double>(grid_.cells());
  const double t_mem_ms =
      cells * bytes * redundancy / tdeg / (limits_.memory_bandwidth_gbs * 1e9) * 1e3;
  const double t_flop_ms = cells * flops_per_cell_ * redundancy / (limits_.fp64_gflops * 1e9) * 1e3;
  double f_stream = 1.0;
  if (streaming && s[Param::retiming] != 0)
    f_stream *= 0.95;
  if (streaming && s[Param::prefetch] != 0)
    f_stream *= 0.95;
  return std::max(t_mem_ms, t_flop_ms) / efficiency * f_stream + 0.005 / tdeg;
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
