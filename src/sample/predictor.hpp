// Predictors score a setting before anything is compiled: the sampler (docs/architecture.md, "The
// sampler") rewards the OC whose draw holds the best predicted setting. `uniform` scores every
// setting the same (pure stratified sampling); `roofline` is an analytic time per step.
//
// Roofline model (per time step, double precision). Every geometry and cost input comes from
// the kernel plan (make_plan, src/kernel/kernel_plan.hpp, the one home of these numbers); a
// setting with a plan_violation, or a block that cannot be resident, predicts kUnfit.
//   read     = plan.global_read_doubles: the block's whole loaded region (tile + halo x tdeg)
//              per useful cell-step, i.e. halo and temporal redundancy included; its useful
//              part is 1/tdeg. Without a shared-memory stage (plan.shared_bytes == 0: tiled,
//              tdeg 1, use_shared off) the halo part is re-read through L1/L2 and counts half:
//              read = 1/tdeg + (read - 1/tdeg)/2.
//   coalesce = min(mfx, 4) / plan.x_vector (at least 1) for block merging along x (each thread
//              owns mfx adjacent x points, so one warp load spreads over mfx 32-byte sectors;
//              double2 pairs, x_vector 2, over half as many), else 1. Measured on 668 star3d2r
//              rows (H100, 512^3): Spearman 0.139 without the x_vector division, 0.506 with it.
//   segment  = 1 + (32 / min(plan.block.x, 32) - 1) / 4: a warp narrower than 32 x points
//              reads several short row segments.
//   bytes    = 8 (read + plan.global_write_doubles) * coalesce * segment     per cell-step
//   staging  = 1.1 with a shared-memory stage (the extra pass through shared memory, barriers)
//   occupancy: blocks/SM = min(max_blocks_per_sm, max_threads_per_sm / plan.threads_per_block,
//              shared_per_sm / plan.shared_bytes); occ = blocks * threads / max_threads_per_sm;
//              efficiency = min(1, occ / 0.5) (bandwidth saturates near half occupancy).
//              Registers are not known before compilation and are left out.
//   parallel = min(1, threads in the plan's grid / (4 * resident threads)): with fewer than
//              four waves of threads (many merged points per thread, long streams) latency is
//              not hidden.
//   t_mem    = cells * bytes / bandwidth;  t_flop = cells * issue / fp64_peak with
//              F = plan.flops_per_cell * plan.redundancy and, for a compute-bound stencil
//              (issue_term_applies), issue = max(F, F / 2 + plan.other_instructions): the
//              FP64 pipe takes one multiply-add (2 flops) per two issue slots, every load and
//              coefficient move takes one slot (the family's estimate: a register-tile chunk
//              shares its footprint's loads and its coefficients); else issue = F.
//   tile terms (compute-bound stencil, plan.registers > 0: the tiled family at tdeg 1):
//              blocks/SM also <= registers_per_sm / (threads * registers rounded up to 8), with
//              registers = min(plan.registers, cap), cap = min(255, registers_per_sm / threads);
//              tile_cost = max(1, plan.registers / cap) (spills), x kTileConstantCost with
//              use_constant; efficiency = min(1, occ / 0.3);
//              t_cache = max(t_l1, t_l2): t_l1 = cells * loads_per_cell * 8 B * coalesce * segment
//              / L1 bandwidth, t_l2 = cells * 8 B * (loaded / tile + missed * (loads_per_cell -
//              loaded / tile)) / L2 bandwidth, missed = sqrt(the share of the resident blocks'
//              loaded regions beyond L1) (0 for a staged tile); constants below; else
//              tile_cost = 1, t_cache = 0;
//              the family's L1 doubles (plan.l1_doubles, the streaming family: shared reads
//              with bank conflicts, shared stores, global loads and stores per useful cell-step)
//              raise t_cache to at least cells * l1_doubles * 8 B / L1 bandwidth.
//   time_ms  = max(t_mem, t_flop, t_cache) * staging * tile_cost / (efficiency * parallel) *
//              f_stream
//              + launches
//              f_stream = plan.family->cost_factor(s) (streaming: 0.95 for retiming and 0.95
//              for prefetch, multiplied; tiled: 1); launches = 0.005 ms / tdeg.
// Temporal blocking therefore pays through the plan: DRAM traffic per step falls roughly as
// 1/tdeg while redundancy (flops) and shared memory (occupancy) grow.
// Measured rank correlation with real H200 times: printed by
// unit.RooflineOnRecordedData.RanksSettingsLikeTheGpu for every dataset in tests/data.
// Only the ordering matters to the sampler; the absolute figures are rough.
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kernel/family.hpp"
#include "setting/device_limits.hpp"
#include "setting/setting.hpp"
#include "stencil/stencil.hpp"

namespace isletune {

class Predictor {
 public:
  virtual ~Predictor() = default;
  // Predicted time per step in ms (smaller is better).
  [[nodiscard]] virtual double predict_ms(const Setting& s) const = 0;
  // "uniform" or "roofline".
  [[nodiscard]] virtual std::string name() const = 0;
  // Continuous features of a setting for the online model (OnlineModel's plan features),
  // feature_count() of them, or none (the default).
  [[nodiscard]] virtual std::size_t feature_count() const { return 0; }
  [[nodiscard]] virtual std::vector<double> features(const Setting&) const { return {}; }
};

// Every setting scores 1 ms: every round's predictions tie, the sampler rewards no OC and
// keeps the initial (stratified) OC proportions.
class UniformPredictor final : public Predictor {
 public:
  [[nodiscard]] double predict_ms(const Setting&) const override { return 1.0; }
  [[nodiscard]] std::string name() const override { return "uniform"; }
};

// Flops per DRAM byte of a plain step (no temporal blocking, no re-reads): flops_per_cell
// over 16 bytes (one double read, one written per cell).
[[nodiscard]] double plain_step_intensity(int flops_per_cell);

// The roofline's issue term (loads and coefficient moves beside the multiply-adds) acts only
// on a compute-bound stencil: one whose plain_step_intensity reaches kIssueTermRidgeFraction
// of the device's ridge point, fp64_gflops / memory_bandwidth_gbs (H100 33,500 / 2,990 = 11.2
// flop/B, H200 33,500 / 4,210 = 8.0). Below it a stencil is memory bound at tdeg 1; there the
// term acts only on deep temporal settings (their redundant flops and point-by-point loads)
// and made the replay searches on box2d2r, star2d2r and star3d1r worse
// (docs/decisions.md#roofline-issue-term). Half the ridge: in are box3d2r (15.6 flop/B, 1.39 / 1.96
// of the ridge on H100 / H200), box3d3r, box3d4r, box2d4r (0.90 / 1.26), box2d3r (0.54 / 0.76: its
// measured H100 register tiles rank 0.28 without the term, 0.81 with it) and cross3d4r on the H200
// (0.51); out box3d1r (0.30 / 0.42), box2d2r and star3d4r (0.27 / 0.38) and every smaller stencil,
// i.e. every stencil of the replay datasets.
inline constexpr double kIssueTermRidgeFraction = 0.5;

// The register-tile terms of a compute-bound stencil (where the issue term applies and the plan
// estimates registers and loads: the tiled family at tdeg 1). sm_90 figures: L1 serves 128 bytes
// per clock per SM and the FP64 pipes 128 flops (64 multiply-adds), so one L1 byte per FP64 flop;
// L1 and shared memory share 256 KiB per SM; L2 serves about twice the DRAM copy bandwidth. A
// compute-bound tile saturates at a lower occupancy than a memory-bound kernel (its 16-32
// accumulators are its parallelism): box3d2r's fastest tiles run 3 blocks of 256 threads at
// 74 registers (37.5 %). Fitted on the 3-D boxes' measured tiles
// (docs/decisions.md#roofline-register-tiles).
inline constexpr double kL1BytesPerFp64Flop = 1.0;
inline constexpr double kL1BytesPerSm = 256.0 * 1024;
inline constexpr double kL2OverDram = 2.0;
inline constexpr double kTileSaturatingOccupancy = 0.3;
// The tensor-core family's kernels (KernelPlan::tensor_flops_per_cell > 0) keep their MMAs in
// flight with few warps and stream 128 planes a block: 16 warps an SM (occupancy 0.25) issue
// 91 % of the DMMA peak on box3d4r, and one wave of resident blocks keeps every SM busy (H100,
// docs/studies/2026-12-05-dmma-pair-tiled-window.md). Their efficiency saturates at this
// occupancy, and their launch needs one wave, not four.
inline constexpr double kTensorSaturatingOccupancy = 0.25;
// A register tile with its coefficients in `__constant__` memory (use_constant): the median
// cost of 54 box3d2r tiles measured both ways on the H100 (literal coefficients faster on 45:
// more registers, 80-128 against 74-110; docs/bench/narrow-tiled-box3d2r-global-*.csv).
inline constexpr double kTileConstantCost = 1.18;
[[nodiscard]] bool issue_term_applies(int flops_per_cell, const DeviceLimits& limits);

class RooflinePredictor final : public Predictor {
 public:
  // Predicted time of a block that cannot be launched at all.
  static constexpr double kUnfit = 1e9;
  // Whether t_flop counts the issue of loads and coefficient moves: `gated` (the product)
  // where issue_term_applies, `off` never (the traffic-and-flops roofline), `on` always.
  enum class IssueTerm { gated, off, on };

  RooflinePredictor(const Stencil& stencil, const Grid& grid, const DeviceLimits& limits,
                    IssueTerm issue = IssueTerm::gated);
  [[nodiscard]] double predict_ms(const Setting& s) const override;
  [[nodiscard]] std::string name() const override { return "roofline"; }

  // Plan features (the online model's continuous columns; a setting without a plan gets
  // every feature 0): in this order
  //   0 log2(tdeg)            1 log2(tdeg)^2 (an optimum between tdeg 1 and the largest)
  //   2 log(bytes per cell-step, the formula's `bytes`)   3 log(redundancy)
  //   4 occupancy (blocks * threads / max_threads_per_sm) 5 log2(threads per block)
  //   6 log2(1 + shared KB per block)  7 log2(waves: threads in the grid / resident threads)
  //   8 async_planes (input planes in flight ahead of use)  9 log2(stream_len) (0 tiled)
  //   10 log2(unroll product)  11 log2(merged points per thread)
  static constexpr std::size_t kFeatures = 12;
  [[nodiscard]] std::size_t feature_count() const override { return kFeatures; }
  [[nodiscard]] std::vector<double> features(const Setting& s) const override;

 private:
  // The setting's kernel plan, or nullopt where none can be planned.
  [[nodiscard]] std::optional<KernelPlan> plan_of(const Setting& s) const;

  ProblemShape shape_;  // built once: predict_ms runs for every sampled setting
  Grid grid_;
  DeviceLimits limits_;
  bool issue_term_ = false;  // t_flop counts the plan's other_instructions
};

// Spearman rank correlation of two equally long series (average ranks for ties); 0 when
// either is constant or shorter than 2. Used to check that a predictor ranks settings.
[[nodiscard]] double rank_correlation(std::span<const double> a, std::span<const double> b);

// Predictor by name; throws InputError naming `key` when the name is unknown.
[[nodiscard]] std::unique_ptr<Predictor> make_predictor(std::string_view name,
                                                        const Stencil& stencil, const Grid& grid,
                                                        const DeviceLimits& limits,
                                                        std::string_view key = "sample.predictor");

}  // namespace isletune
