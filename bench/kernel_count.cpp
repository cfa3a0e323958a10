// Kernel census: how many distinct kernels the default space of a problem holds. Enumerates
// every valid setting of the default space of a typical stencil on a grid, generates its
// kernel (string building only, no NVRTC) and counts the valid settings, the canonical
// settings per OC (kernel/registry.hpp: what the space counts and samples) and the distinct
// kernel sources without comment lines (what the cubin cache keys on). Exit 1 when two
// settings with different canonical settings build the same source (a family's canonical()
// keeps a parameter its kernel does not read).
//
// With --sample N it also runs the sampler (roofline predictor, N settings) twice: drawing
// valid settings (as before canonical settings) and drawing distinct kernels (as now), and
// prints how many distinct kernels each sample holds.
//
//   isletune-kernel-count STENCIL NX NY [NZ] [--sample N]   e.g. ... star2d1r 8192 8192
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "eval/cuda/codegen.hpp"
#include "kernel/registry.hpp"
#include "kernel/source_text.hpp"
#include "sample/predictor.hpp"
#include "sample/sampler.hpp"
#include "sample/setting_source.hpp"
#include "space/space.hpp"
#include "stencil/typical.hpp"

using namespace isletune;

namespace {

// The sampler's source as it was before canonical settings: valid settings per OC.
class ValidSettingSource final : public SettingSource {
 public:
  explicit ValidSettingSource(const Space& space) : space_(space) {}
  [[nodiscard]] std::vector<OcCount> count_per_oc(std::uint64_t seed) const override {
    return space_.count_per_oc(seed);
  }
  std::optional<Setting> draw(int oc, Rng& rng) override { return space_.random_in_oc(oc, rng); }

 private:
  const Space& space_;
};

// Distinct kernels among the settings.
std::size_t kernels_in(const ProblemShape& shape, const std::vector<Setting>& settings) {
  std::unordered_set<Setting, SettingHash> k;
  for (const Setting& s : settings)
    k.insert(canonical(shape, s));
  return k.size();
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  int sample_n = 0;
  for (std::size_t i = 0; i + 1 < args.size(); ++i) {
    if (args[i] == "--sample") {
      sample_n = std::atoi(args[i + 1].c_str());
      args.erase(args.begin() + static_cast<long>(i), args.begin() + static_cast<long>(i) + 2);
      break;
    }
  }
  if (args.size() < 3) {
    std::fprintf(stderr, "usage: %s STENCIL NX NY [NZ] [--sample N]\n", argv[0]);
    return 2;
  }
  const Stencil stencil = typical_stencil(args[0]);
  const Grid grid{std::atoi(args[1].c_str()), std::atoi(args[2].c_str()),
                  args.size() > 3 ? std::atoi(args[3].c_str()) : 1};
  const Space space(stencil, grid, {}, Space::default_values(stencil.dims(), grid));
  const auto t0 = std::chrono::steady_clock::now();
  struct Row {
    long long valid = 0, canonical = 0;
  };
  std::vector<Row> rows(kOcCount);
  std::unordered_map<std::size_t, Setting> source_of;  // source hash -> canonical setting
  std::unordered_set<Setting, SettingHash> canonicals;
  long long valid = 0, collisions = 0;
  space.for_each_valid(-1, [&](const Setting& s) {
    ++valid;
    ++rows[static_cast<std::size_t>(Space::oc_of(s))].valid;
    const Setting c = canonical(space.shape(), s);
    if (canonicals.insert(c).second)
      ++rows[static_cast<std::size_t>(Space::oc_of(c))].canonical;
    const std::string text =
        without_comment_lines(cuda::generate_kernel(stencil, grid, s, space.limits()).source);
    const auto [it, fresh] = source_of.emplace(std::hash<std::string>{}(text), c);
    if (!fresh && it->second != c && collisions++ < 5) {
      std::printf("same source: %s\n          and %s\n", canonical_key(it->second).c_str(),
                  canonical_key(c).c_str());
    }
  });
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf(
      "%s %dx%dx%d: %lld valid settings, %zu canonical settings, %zu distinct "
      "kernel sources (%.1f s)\n",
      stencil.name().c_str(), grid.nx, grid.ny, grid.nz, valid, canonicals.size(), source_of.size(),
      seconds);
  std::printf("%-36s %10s %10s\n", "OC", "valid", "kernels");
  for (int oc = 0; oc < kOcCount; ++oc) {
    const Row& r = rows[static_cast<std::size_t>(oc)];
    if (r.valid > 0)
      std::printf("%-36s %10lld %10lld\n", Space::oc_name(oc).c_str(), r.valid, r.canonical);
  }
  if (sample_n > 0) {
    const RooflinePredictor roofline(stencil, grid, space.limits());
    SamplerSettings ss;
    ss.max_samples = sample_n;
    ValidSettingSource valid_source(space);
    SpaceSource kernel_source(space);
    const auto before = sample(valid_source, roofline, ss, 1).set.settings;
    const auto after = sample(kernel_source, roofline, ss, 1).set.settings;
    std::printf(
        "sampler, %d settings: drawing valid settings %zu sampled, %zu distinct kernels; "
        "drawing kernels %zu sampled, %zu distinct kernels\n",
        sample_n, before.size(), kernels_in(space.shape(), before), after.size(),
        kernels_in(space.shape(), after));
  }
  return collisions > 0 ? 1 : 0;
}
