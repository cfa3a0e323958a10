// Predictors score a setting before anything is compiled: the sampler (ARCHITECTURE §5)
// rewards the OC whose draw holds the best predicted setting. `uniform` scores every
// setting the same (pure stratified sampling); `roofline` is an analytic time per step.
//
// Roofline model (all quantities per time step, double precision):
//   tile_d   = tb_d * mf_d on every tiled axis d (x, y, and z in 3-D); while streaming,
//              the streamed axis sd is walked in columns of sb points instead (tile_sd = sb).
//   halo     = prod_d (1 + 2 r_d / tile_d) over the tiled axes plus, while streaming,
//              (1 + 2 r_sd / sb) for the column ends; r_d is the stencil radius on axis d.
//   reread   = 1 when the tile is staged in shared memory, otherwise 1.25 (neighbour
//              loads served partly by L1/L2 rather than once per tile).
//   bytes    = 8 (write) + 8 * halo * reread                                  per cell
//   redund   = 1 + 2 r tdeg / tile_min   (temporal blocking recomputes a halo that
//              grows by r per fused step; tile_min = smallest tile extent, r = order)
//   t_mem    = cells * bytes * redund / tdeg / bandwidth
//   t_flop   = cells * flops_per_cell * redund / fp64_peak
//   occupancy: blocks/SM = min(max_blocks_per_sm, max_threads_per_sm / threads,
//              shared_per_sm / shared) with shared = 8 B * prod over the tile with halo
//              (streaming: 2 r_sd + 1 planes of it) when use_shared, else 0;
//              occ = blocks * threads / max_threads_per_sm; efficiency = min(1, occ / 0.5)
//              (bandwidth saturates near half occupancy). A block that does not fit
//              (threads or shared) predicts kUnfit.
//   time_ms  = max(t_mem, t_flop) / efficiency * f_stream + launches
//              f_stream = 0.95 for retiming and 0.95 for prefetch (multiplied), else 1;
//              launches = 0.005 ms / tdeg (one launch per tdeg fused steps).
// Only the ordering matters to the sampler; the absolute figures are rough.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "space/device_limits.hpp"
#include "space/setting.hpp"
#include "stencil/stencil.hpp"

namespace isletune {

class Predictor {
 public:
  virtual ~Predictor() = default;
  // Predicted time per step in ms (smaller is better).
  [[nodiscard]] virtual double predict_ms(const Setting& s) const = 0;
  // "uniform" or "roofline".
  [[nodiscard]] virtual std::string name() const = 0;
};

// Every setting scores 1 ms: the sampler then keeps the initial OC proportions except
// for the reward it gives the first OC (ties go to the lowest OC id).
class UniformPredictor final : public Predictor {
 public:
  [[nodiscard]] double predict_ms(const Setting&) const override { return 1.0; }
  [[nodiscard]] std::string name() const override { return "uniform"; }
};

class RooflinePredictor final : public Predictor {
 public:
  // Predicted time of a block that cannot be launched at all.
  static constexpr double kUnfit = 1e9;

  RooflinePredictor(const Stencil& stencil, const Grid& grid, const DeviceLimits& limits);
  [[nodiscard]] double predict_ms(const Setting& s) const override;
  [[nodiscard]] std::string name() const override { return "roofline"; }

 private:
  int dims_;
  int order_;
  int radius_[3];
  double flops_per_cell_;
  Grid grid_;
  DeviceLimits limits_;
};

// Predictor by name; throws InputError naming `key` when the name is unknown.
[[nodiscard]] std::unique_ptr<Predictor> make_predictor(std::string_view name,
                                                        const Stencil& stencil, const Grid& grid,
                                                        const DeviceLimits& limits,
                                                        std::string_view key = "sample.predictor");

}  // namespace isletune
