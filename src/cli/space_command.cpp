// `isletune space CONFIG`: what the configured search space holds — every parameter's
// values, the explicit constraints, the OCs with their valid settings and distinct kernels.
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/args.hpp"
#include "cli/commands.hpp"
#include "config/config.hpp"
#include "run/setup.hpp"
#include "space/space.hpp"
#include "space/values_taken.hpp"

namespace isletune::cli {
namespace {

constexpr const char* kHelp =
    "usage: isletune space CONFIG [--json]\n"
    "\n"
    "Prints the search space of CONFIG: the values of every parameter (defaults with the\n"
    "config's `space` overrides), the explicit constraints, each optimization combination\n"
    "(OC) with its number of valid settings and of distinct kernels (settings that differ\n"
    "only in parameters their kernel family does not read build one kernel; the search\n"
    "samples and measures each kernel once), exact by enumeration or a seeded Monte-Carlo\n"
    "estimate marked ~, and the size of the space. Device limits are those of the replay\n"
    "dataset's GPU with backend replay (a dataset of another problem is refused, as `run`\n"
    "refuses it), else of an H100 (the CUDA evaluator's own limits apply during a run).\n"
    "\n"
    "  --json   print the same as one JSON document on stdout\n";

// A parameter's values as JSON (merge kinds by name).
nlohmann::ordered_json values_json(Param p, const std::vector<int>& list) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (int v : list) {
    if (p == Param::merge)
      out.push_back(std::string(merge_name(static_cast<MergeKind>(v))));
    else
      out.push_back(v);
  }
  return out;
}

// --json: the text output's numbers as one document.
void print_json(const Config& config, const Stencil& stencil, const Space& space,
                const Space::Values& taken, const std::vector<OcCount>& counts) {
  using Json = nlohmann::ordered_json;
  Json doc;
  doc["stencil"] = {{"name", stencil.name()},
                    {"dims", stencil.dims()},
                    {"order", stencil.order()},
                    {"points", stencil.size()}};
  doc["grid"] = {config.grid.nx, config.grid.ny, config.grid.nz};
  doc["limits"] = space.limits().name;
  Json params = Json::object();
  for (std::size_t i = 0; i < kParamCount; ++i) {
    const Param p = param_at(i);
    params[std::string(param_name(p))] = {{"values", values_json(p, space.values(p))},
                                          {"taken", values_json(p, taken[i])}};
  }
  doc["parameters"] = params;
  doc["constraints"] = Space::constraints();
  Json ocs = Json::array();
  double total = 0, kernels = 0;
  bool exact = true;
  for (const OcCount& c : counts) {
    ocs.push_back({{"oc", c.oc},
                   {"name", Space::oc_name(c.oc)},
                   {"rule", find_oc(c.oc) != nullptr ? find_oc(c.oc)->oc->rule() : ""},
                   {"valid_settings", c.count},
                   {"distinct_kernels", c.kernels},
                   {"exact", c.exact}});
    total += c.count;
    kernels += c.kernels;
    exact = exact && c.exact;
  }
  doc["ocs"] = ocs;
  doc["size"] = {{"valid_settings", total},
                 {"distinct_kernels", kernels},
                 {"exact", exact},
                 {"ocs", counts.size()}};
  std::fputs((doc.dump(1) + "\n").c_str(), stdout);
}

}  // namespace

int space_command(const Args& args) {
  const ParsedArgs parsed = parse_args("space", args, {}, {"--json"});
  if (parsed.help) {
    return print_help(kHelp);
  }
  expect_positional(parsed, 1, "isletune space CONFIG [--json]");
  const Config config = load_config(parsed.positional[0]);
  const Stencil stencil = resolve_stencil(config);
  const Space space(stencil, config.grid, run::configured_limits(config, stencil),
                    space_values(config));
  const Space::Values taken = values_taken(stencil, space);
  const auto counts = space.count_per_oc(config.seed);
  if (parsed.has("--json")) {
    print_json(config, stencil, space, taken, counts);
    return 0;
  }
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
