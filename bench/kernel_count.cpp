// Kernel census: how many distinct kernels the default space of a problem holds. Enumerates
// every valid setting of the default space of a typical stencil on a grid, generates its
// kernel (string building only, no NVRTC) and counts the valid settings, the canonical
// settings per OC (kernel/registry.hpp: what the space counts and samples) and the distinct
// kernel sources without comment lines (what the cubin cache keys on). Exit 1 when two
// settings with different canonical settings build the same source (a family's canonical()
// keeps a parameter its kernel does not read).
//
//   isletune-kernel-count STENCIL NX NY [NZ]      e.g. isletune-kernel-count star2d1r 8192 8192
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
#include "space/space.hpp"
#include "stencil/typical.hpp"

using namespace isletune;

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s STENCIL NX NY [NZ]\n", argv[0]);
    return 2;
  }
  const Stencil stencil = typical_stencil(argv[1]);
  const Grid grid{std::atoll(argv[2]), std::atoll(argv[3]), argc > 4 ? std::atoll(argv[4]) : 1};
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
    const Setting c = canonical(s);
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
      "%s %lldx%lldx%lld: %lld valid settings, %zu canonical settings, %zu distinct "
      "kernel sources (%.1f s)\n",
      stencil.name().c_str(), grid.nx, grid.ny, grid.nz, valid, canonicals.size(), source_of.size(),
      seconds);
  std::printf("%-36s %10s %10s\n", "OC", "valid", "kernels");
  for (int oc = 0; oc < kOcCount; ++oc) {
    const Row& r = rows[static_cast<std::size_t>(oc)];
    if (r.valid > 0)
      std::printf("%-36s %10lld %10lld\n", Space::oc_name(oc).c_str(), r.valid, r.canonical);
  }
  return collisions > 0 ? 1 : 0;
}
