// The uniform and roofline predictors (formula documented in predictor.hpp) and the
// rank correlation that measures how well a predictor orders settings.
#include "sample/predictor.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "common/error.hpp"
#include "kernel/kernel_plan.hpp"

namespace isletune {

double plain_step_intensity(int flops_per_cell) {
  return static_cast<double>(flops_per_cell) / 16.0;
}

bool issue_term_applies(int flops_per_cell, const DeviceLimits& limits) {
  const double ridge = limits.fp64_gflops / limits.memory_bandwidth_gbs;
  return plain_step_intensity(flops_per_cell) >= kIssueTermRidgeFraction * ridge;
}

// Keeps what the roofline formula needs from the problem and the device.
RooflinePredictor::RooflinePredictor(const Stencil& stencil, const Grid& grid,
                                     const DeviceLimits& limits, IssueTerm issue)
    : shape_(shape_of(stencil, grid)),
      grid_(grid),
      limits_(limits),
      issue_term_(
          issue == IssueTerm::on ||
          (issue == IssueTerm::gated && issue_term_applies(stencil.flops_per_cell(), limits))) {}

std::optional<KernelPlan> RooflinePredictor::plan_of(const Setting& s) const {
  auto planned = plan_or_violation(shape_, s, limits_);
  if (!std::holds_alternative<KernelPlan>(planned))
    return std::nullopt;
  return std::get<KernelPlan>(std::move(planned));
}

namespace {

// The roofline formula's terms of one plan (see the header).
struct RooflineTerms {
  double bytes = 0;  // per cell-step
  long long blocks = 0;
  double occupancy = 0;
  double waves = 0;  // threads in the grid / resident threads
  double time_ms = RooflinePredictor::kUnfit;
};

RooflineTerms roofline_terms(const KernelPlan& plan, const Grid& grid, const DeviceLimits& limits,
                             bool issue_term) {
  RooflineTerms t;
  const long long threads = plan.threads_per_block;
  // The plan's read is the whole loaded region per useful cell-step; the useful part of it
  // is 1 / tdeg. Without a shared-memory stage the halo part is re-read through L1/L2 and
  // costs half of a DRAM read.
  const bool staged = plan.shared_bytes > 0;
  const double useful = 1.0 / plan.tdeg;
  double read = plan.global_read_doubles;
  if (!staged)
    read = useful + (read - useful) * 0.5;
  const double spread = std::min(4, std::max(1, plan.x_spread));
  const double coalesce = std::max(1.0, spread / plan.x_vector);
  const int warp_x = std::min(std::max(1, plan.block[0]), 32);
  const double segment = 1.0 + (32.0 / warp_x - 1.0) / 4.0;
  t.bytes = 8.0 * (read + plan.global_write_doubles) * coalesce * segment;
  const double staging = staged ? 1.1 : 1.0;

  long long blocks =
      std::min<long long>(limits.max_blocks_per_sm, limits.max_threads_per_sm / threads);
  if (plan.shared_bytes > 0)
    blocks = std::min<long long>(blocks, limits.shared_per_sm / plan.shared_bytes);
  // Register tiles of a compute-bound stencil: the estimated registers limit the blocks per SM
  // (allocated in steps of 8); beyond what a thread of this block may hold, ptxas spills;
  // coefficients in constant memory cost kTileConstantCost.
  const bool tile_terms = issue_term && plan.registers > 0;
  double tile_cost = 1;
  if (tile_terms) {
    const long long cap = std::min<long long>(limits.max_registers_per_thread,
                                              limits.registers_per_sm / threads / 8 * 8);
    if (cap <= 0)
      return t;
    tile_cost = std::max(1.0, static_cast<double>(plan.registers) / static_cast<double>(cap)) *
                (plan.constant_coefficients ? kTileConstantCost : 1.0);
    const long long regs = (std::min<long long>(plan.registers, cap) + 7) / 8 * 8;
    blocks = std::min<long long>(blocks, limits.registers_per_sm / (threads * regs));
  }
  t.blocks = blocks;
  if (blocks <= 0)
    return t;
  t.occupancy = static_cast<double>(blocks * threads) / limits.max_threads_per_sm;
  const bool tensor = plan.tensor_flops_per_cell > 0;
  const double efficiency = std::min(1.0, t.occupancy / (tensor       ? kTensorSaturatingOccupancy
                                                         : tile_terms ? kTileSaturatingOccupancy
                                                                      : 0.5));

  const double cells = static_cast<double>(grid.cells());
  const double launched = static_cast<double>(plan.grid[0]) * static_cast<double>(plan.grid[1]) *
                          static_cast<double>(plan.grid[2]) * static_cast<double>(threads);
  const double resident = static_cast<double>(limits.sm_count) * blocks * threads;
  t.waves = launched / resident;
  const double parallel = std::min(1.0, t.waves / (tensor ? 1.0 : 4.0));

  const double t_mem_ms = cells * t.bytes / (limits.memory_bandwidth_gbs * 1e9) * 1e3;
  // The FP64 pipe takes one multiply-add (2 flops) per two issue slots; each other
  // instruction takes one slot (counted only for a compute-bound stencil).
  const double flops = plan.flops_per_cell * plan.redundancy;
  const double issue = issue_term ? std::max(flops, flops / 2 + plan.other_instructions) : flops;
  // The tensor-core family's MMAs (padding included) run on the DMMA pipe instead.
  const double t_flop_ms =
      plan.tensor_flops_per_cell > 0
          ? cells * plan.tensor_flops_per_cell / (limits.fp64_tensor_gflops * 1e9) * 1e3
          : cells * issue / (limits.fp64_gflops * 1e9) * 1e3;
  // A register tile's loads: each 8-byte input through L1 (kL1BytesPerFp64Flop; a warp whose
  // loads spread over more lines costs more, as in `bytes`: coalesce, segment), and from L2
  // the block's loaded region once, plus, for global loads (no shared stage), the share of the
  // other loads that the resident blocks' regions do not leave room for in L1.
  double t_cache_ms = 0;
  if (tile_terms && plan.loads_per_cell > 0) {
    const double t_l1_ms = cells * plan.loads_per_cell * 8.0 * coalesce * segment /
                           (kL1BytesPerFp64Flop * limits.fp64_gflops * 1e9) * 1e3;
    const double region = static_cast<double>(plan.loaded[0]) * plan.loaded[1] * plan.loaded[2];
    const double tile = static_cast<double>(plan.tile[0]) * plan.tile[1] * plan.tile[2];
    const double footprint = static_cast<double>(blocks) * region * 8.0;
    const double missed =
        staged || footprint <= kL1BytesPerSm ? 0 : std::sqrt(1 - kL1BytesPerSm / footprint);
    const double l2_doubles =
        region / tile + missed * std::max(0.0, plan.loads_per_cell - region / tile);
    const double t_l2_ms =
        cells * l2_doubles * 8.0 / (kL2OverDram * limits.memory_bandwidth_gbs * 1e9) * 1e3;
    t_cache_ms = std::max(t_l1_ms, t_l2_ms);
  }
  // The family's doubles through the L1/shared-memory path (the streaming family's shared
  // reads, stores and global accesses; plan.l1_doubles), at the same L1 bandwidth.
  if (plan.l1_doubles > 0) {
    t_cache_ms = std::max(t_cache_ms, cells * plan.l1_doubles * 8.0 /
                                          (kL1BytesPerFp64Flop * limits.fp64_gflops * 1e9) * 1e3);
  }
  t.time_ms = std::max({t_mem_ms, t_flop_ms, t_cache_ms}) * staging * tile_cost /
                  (efficiency * parallel) * plan.cost_factor +
              0.005 / plan.tdeg;
  return t;
}

}  // namespace

// Analytic time per step of a setting from its kernel plan (see the header for the model).
double RooflinePredictor::predict_ms(const Setting& s) const {
  const auto planned = plan_of(s);
  return planned ? roofline_terms(*planned, grid_, limits_, issue_term_).time_ms : kUnfit;
}

// The plan's numbers as the online model's continuous features (order: the header's).
std::vector<double> RooflinePredictor::features(const Setting& s) const {
  std::vector<double> f(kFeatures, 0.0);
  const auto planned = plan_of(s);
  if (!planned)
    return f;
  const KernelPlan& plan = *planned;
  const RooflineTerms t = roofline_terms(plan, grid_, limits_, issue_term_);
  if (t.blocks <= 0)
    return f;
  const double tdeg = std::log2(static_cast<double>(plan.tdeg));
  f[0] = tdeg;
  f[1] = tdeg * tdeg;
  f[2] = std::log(t.bytes);
  f[3] = std::log(plan.redundancy);
  f[4] = t.occupancy;
  f[5] = std::log2(static_cast<double>(plan.threads_per_block));
  f[6] = std::log2(1.0 + static_cast<double>(plan.shared_bytes) / 1024.0);
  f[7] = std::log2(t.waves);
  f[8] = plan.async_planes;
  f[9] = plan.stream_len > 0 ? std::log2(static_cast<double>(plan.stream_len)) : 0.0;
  f[10] = std::log2(static_cast<double>(plan.unroll[0]) * plan.unroll[1] * plan.unroll[2]);
  f[11] = std::log2(static_cast<double>(plan.merged_points));
  return f;
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
