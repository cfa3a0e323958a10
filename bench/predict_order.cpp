// The roofline predictor's ordering of a problem's settings, with and without its issue term
// (src/sample/predictor.hpp: loads and coefficient moves beside the multiply-adds, counted for
// compute-bound stencils only), without a GPU.
//
//   isletune-predict-order STENCIL NX NY [NZ] [--csv FILE]...
//
// Without --csv: enumerates every valid setting of the default space's tiled tdeg-1 OCs
// (H100 limits; distinct kernels: canonical settings) and prints, for the predictor with the
// issue term as gated, forced off and forced on: the best predicted time, how many kernels
// tie at it and how many of those unroll one point, the best kernel per unroll size (points
// per register chunk) and, over the whole default space (sampled: up to 4,096 settings per
// OC), how many settings tie at the best prediction and how many of those stream or are tiled
// with one point per chunk.
// With --csv FILE (a measured-rows CSV of docs/bench: columns stencil, gcells, setting and
// optionally grid as NXxNYxNZ): the Spearman rank correlation of the predicted time with the
// measured time (1 / gcells) over the rows of this stencil and grid with gcells > 0; with
// PREDICT_ROWS=1 in the environment also one line per row (measured and predicted ms, setting).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <unordered_set>
#include <vector>

#include "common/rng.hpp"
#include "kernel/kernel_plan.hpp"
#include "kernel/registry.hpp"
#include "sample/predictor.hpp"
#include "setting/oc.hpp"
#include "space/space.hpp"
#include "stencil/typical.hpp"

using namespace isletune;

namespace {

using Mode = RooflinePredictor::IssueTerm;
constexpr std::array<Mode, 3> kModes{Mode::gated, Mode::off, Mode::on};
constexpr std::array<const char*, 3> kModeNames{"gated", "off", "on"};

// One CSV line split at commas outside double quotes (quotes and a line end's CR removed).
std::vector<std::string> csv_fields(const std::string& line) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (const char c : line) {
    if (c == '\r')
      continue;
    if (c == '"')
      quoted = !quoted;
    else if (c == ',' && !quoted)
      out.emplace_back();
    else
      out.back() += c;
  }
  return out;
}

int unroll_points(const KernelPlan& plan) {
  return plan.unroll[0] * plan.unroll[1] * plan.unroll[2];
}

// Spearman of the predictions with the measured times of the CSV's rows of this problem.
int rank_csv(const std::string& file, const Stencil& stencil, const Grid& grid,
             const DeviceLimits& limits) {
  std::ifstream in(file);
  std::string line;
  if (!in || !std::getline(in, line)) {
    std::fprintf(stderr, "%s: cannot read the CSV header.\n", file.c_str());
    return 2;
  }
  const std::vector<std::string> header = csv_fields(line);
  const auto column = [&](const char* name) {
    const auto it = std::find(header.begin(), header.end(), name);
    return it == header.end() ? -1 : static_cast<int>(it - header.begin());
  };
  const int c_stencil = column("stencil"), c_gcells = column("gcells"),
            c_setting = column("setting"), c_grid = column("grid");
  if (c_stencil < 0 || c_gcells < 0 || c_setting < 0) {
    std::fprintf(stderr, "%s: expected the columns stencil, gcells and setting.\n", file.c_str());
    return 2;
  }
  const std::string grid_text =
      std::to_string(grid.nx) + "x" + std::to_string(grid.ny) + "x" + std::to_string(grid.nz);
  std::vector<double> times;
  std::vector<std::vector<double>> predicted(kModes.size());
  std::vector<RooflinePredictor> models;
  const bool rows =
      std::getenv("PREDICT_ROWS") != nullptr;  // one line per row: measured, predicted
  for (const Mode m : kModes)
    models.emplace_back(stencil, grid, limits, m);
  while (std::getline(in, line)) {
    const std::vector<std::string> f = csv_fields(line);
    if (f.size() != header.size() || f[static_cast<std::size_t>(c_stencil)] != stencil.name())
      continue;
    if (c_grid >= 0 && f[static_cast<std::size_t>(c_grid)] != grid_text)
      continue;
    const double gcells = std::atof(f[static_cast<std::size_t>(c_gcells)].c_str());
    const auto s = setting_from_key(f[static_cast<std::size_t>(c_setting)]);
    if (gcells <= 0 || !s)
      continue;
    times.push_back(1.0 / gcells);
    for (std::size_t m = 0; m < kModes.size(); ++m)
      predicted[m].push_back(models[m].predict_ms(*s));
    if (rows)
      std::printf("row measured %.4f ms predicted %.4f ms %s\n", 1e-6 * grid.cells() / gcells,
                  predicted[0].back(), f[static_cast<std::size_t>(c_setting)].c_str());
  }
  std::printf("%s %s %s: %zu measured rows; Spearman with the measured time:", file.c_str(),
              stencil.name().c_str(), grid_text.c_str(), times.size());
  for (std::size_t m = 0; m < kModes.size(); ++m)
    std::printf(" %s %.3f", kModeNames[m], rank_correlation(predicted[m], times));
  std::printf("\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc), csvs;
  for (std::size_t i = 0; i + 1 < args.size();) {
    if (args[i] == "--csv") {
      csvs.push_back(args[i + 1]);
      args.erase(args.begin() + static_cast<long>(i), args.begin() + static_cast<long>(i) + 2);
    } else {
      ++i;
    }
  }
  if (args.size() < 3) {
    std::fprintf(stderr, "usage: %s STENCIL NX NY [NZ] [--csv FILE]...\n", argv[0]);
    return 2;
  }
  const Stencil stencil = typical_stencil(args[0]);
  const Grid grid{std::atoi(args[1].c_str()), std::atoi(args[2].c_str()),
                  args.size() > 3 ? std::atoi(args[3].c_str()) : 1};
  const DeviceLimits limits;
  std::printf("%s %dx%dx%d: %.1f flop/B per plain step, ridge %.1f flop/B, issue term %s\n",
              stencil.name().c_str(), grid.nx, grid.ny, grid.nz,
              plain_step_intensity(stencil.flops_per_cell()),
              limits.fp64_gflops / limits.memory_bandwidth_gbs,
              issue_term_applies(stencil.flops_per_cell(), limits) ? "on" : "off");
  if (!csvs.empty()) {
    for (const std::string& f : csvs) {
      if (const int rc = rank_csv(f, stencil, grid, limits); rc != 0)
        return rc;
    }
    return 0;
  }
  const Space space(stencil, grid, limits, Space::default_values(stencil.dims(), grid));
  std::vector<Setting> kernels;
  {
    std::unordered_set<Setting, SettingHash> seen;
    for (int oc = 0; oc < kOcCount; ++oc) {
      const OcFlags f = oc_flags(oc);
      if (f.streaming != 0 || f.temporal != 0)
        continue;
      space.for_each_valid(oc, [&](const Setting& s) {
        const Setting c = canonical(space.shape(), s);
        if (seen.insert(c).second)
          kernels.push_back(c);
      });
    }
  }
  std::printf("tiled tdeg-1 kernels of the default space: %zu\n", kernels.size());
  for (std::size_t m = 0; m < kModes.size(); ++m) {
    const RooflinePredictor model(stencil, grid, limits, kModes[m]);
    double best = RooflinePredictor::kUnfit;
    int ties = 0, ties_one = 0;
    std::map<int, std::pair<double, Setting>> per_chunk;
    for (const Setting& s : kernels) {
      const double ms = model.predict_ms(s);
      const int u = unroll_points(make_plan(space.shape(), s));
      if (ms < best) {
        best = ms;
        ties = ties_one = 0;
      }
      if (ms == best) {
        ++ties;
        ties_one += u == 1;
      }
      auto it = per_chunk.find(u);
      if (it == per_chunk.end() || ms < it->second.first)
        per_chunk[u] = {ms, s};
    }
    std::printf("%s: best %.4f ms/step, %d kernels tie at it, %d of them one point per chunk\n",
                kModeNames[m], best, ties, ties_one);
    for (const auto& [u, best_u] : per_chunk) {
      std::printf("  chunk of %2d points: best %.4f ms  %s\n", u, best_u.first,
                  canonical_key(best_u.second).c_str());
    }
    // The whole default space, sampled: how many settings tie at the best, and which kinds.
    Rng rng(1, 1);
    double all_best = RooflinePredictor::kUnfit;
    long long sampled = 0, all_ties = 0, ties_streaming = 0, ties_one_point = 0;
    for (int oc = 0; oc < kOcCount; ++oc) {
      for (int i = 0; i < 4096; ++i) {
        const auto s = space.random_in_oc(oc, rng, 2000);
        if (!s)
          break;
        ++sampled;
        const double ms = model.predict_ms(*s);
        if (ms < all_best) {
          all_best = ms;
          all_ties = ties_streaming = ties_one_point = 0;
        }
        if (ms == all_best) {
          ++all_ties;
          ties_streaming += (*s)[Param::streaming] != 0;
          ties_one_point +=
              (*s)[Param::streaming] == 0 && unroll_points(make_plan(space.shape(), *s)) == 1;
        }
      }
    }
    std::printf(
        "  whole space (%lld sampled settings): best %.4f ms, %lld tie at it (%lld streaming, "
        "%lld tiled with one point per chunk)\n",
        sampled, all_best, all_ties, ties_streaming, ties_one_point);
  }
  return 0;
}
