// `isletune space CONFIG`: what the configured search space holds — every parameter's
// values, the explicit constraints, the OCs with their valid settings and distinct kernels.
#include <cstdio>
#include <string>

#include "cli/args.hpp"
#include "cli/commands.hpp"
#include "config/config.hpp"
#include "space/space.hpp"
#include "space/values_taken.hpp"

namespace isletune::cli {
namespace {

constexpr const char* kHelp =
    "usage: isletune space CONFIG\n"
    "\n"
    "Prints the search space of CONFIG: the values of every parameter (defaults with the\n"
    "config's `space` overrides), the explicit constraints, each optimization combination\n"
    "(OC) with its number of valid settings and of distinct kernels (settings that differ\n"
    "only in parameters their kernel family does not read build one kernel; the search\n"
    "samples and measures each kernel once), exact by enumeration or a seeded Monte-Carlo\n"
    "estimate marked ~, and the size of the space. Device limits are those of an H100\n"
    "(the evaluator's own limits apply during a run).\n";

}  // namespace

int space_command(const Args& args) {
  const ParsedArgs parsed = parse_args("space", args, {}, {});
  if (parsed.help) {
    std::fputs(kHelp, stdout);
    return 0;
  }
  expect_positional(parsed, 1, "isletune space CONFIG");
  const Config config = load_config(parsed.positional[0]);
  const Stencil stencil = resolve_stencil(config);
  const Space space(stencil, config.grid, DeviceLimits{}, space_values(config));
  std::printf("stencil %s (%d-D, order %d, %d points), grid %dx%dx%d, limits: %s\n",
              stencil.name().c_str(), stencil.dims(), stencil.order(), stencil.size(),
              config.grid.nx, config.grid.ny, config.grid.nz, space.limits().name.c_str());
  // Values as text ("none block" for merge).
  auto text = [](Param p, const std::vector<int>& list) {
    std::string out;
    for (int v : list) {
      if (!out.empty())
        out += ' ';
      out += p == Param::merge ? std::string(merge_name(static_cast<MergeKind>(v)))
                               : std::to_string(v);
    }
    return out;
  };
  const Space::Values taken = values_taken(stencil, space);
  double listed = 1, taken_product = 1;
  std::printf("\nparameters (values; where some differ, those a valid setting takes):\n");
  for (std::size_t i = 0; i < kParamCount; ++i) {
    const Param p = param_at(i);
    listed *= static_cast<double>(space.values(p).size());
    taken_product *= static_cast<double>(taken[i].size());
    const std::string all = text(p, space.values(p)), used = text(p, taken[i]);
    std::printf("  %-13s %s%s\n", std::string(param_name(p)).c_str(), all.c_str(),
                used == all ? "" : ("  (taken: " + used + ")").c_str());
  }
  std::printf("combinations of the lists: %.6g; of the values taken: %.6g\n", listed,
              taken_product);
  std::printf("\nconstraints:\n");
  for (const std::string& c : Space::constraints())
    std::printf("  - %s\n", c.c_str());
  std::printf("\noptimization combinations (valid settings, distinct kernels):\n");
  double total = 0, kernels = 0;
  bool all_exact = true;
  const auto counts = space.count_per_oc(config.seed);
  for (const OcCount& c : counts) {
    std::printf("  %2d %-40s %s%12.0f %s%12.0f\n", c.oc, Space::oc_name(c.oc).c_str(),
                c.exact ? " " : "~", c.count, c.exact ? " " : "~", c.kernels);
    total += c.count;
    kernels += c.kernels;
    all_exact = all_exact && c.exact;
  }
  std::printf("\nspace size: %s%.6g valid settings, %s%.6g distinct kernels in %zu OCs\n",
              all_exact ? "" : "~", total, all_exact ? "" : "~", kernels, counts.size());
  return 0;
}

}  // namespace isletune::cli
