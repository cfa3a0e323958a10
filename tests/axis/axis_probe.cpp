// Built twice (tests/axis/CMakeLists.txt): axis_probe without the template's own parameter
// (the production core) and axis_probe_appended with it (ISLETUNE_TEST_TEMPLATE_AXIS).
//   axis_probe write DIR  writes DIR/facts.txt (for the registered families: counts per OC,
//                         drawn kernels with their keys and hashes), DIR/saved.txt (the keys of
//                         the settings saved), DIR/checkpoint.bin (a checkpoint whose migrants
//                         and strategy cache hold them) and DIR/migrants.bin (a migrant batch)
//   axis_probe read DIR   decodes DIR's checkpoint and batch and prints the settings' keys
//                         (what saved.txt holds); a blob it cannot read: the sentence on
//                         stderr, exit 1
// axis_probe.sh compares the two builds.
#include <algorithm>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

#include "ga/state_codec.hpp"
#include "ring/migrant_codec.hpp"
#include "run/checkpoint.hpp"
#include "space/space.hpp"
#include "stencil/typical.hpp"

namespace isletune {
namespace {

struct Problem {
  const char* stencil;
  Grid grid;
};
constexpr Problem kProblems[] = {{"star2d1r", {512, 512, 1}}, {"box3d1r", {64, 64, 64}}};

std::string hex(std::uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

// Counts per OC (exact and Monte-Carlo) and ten drawn kernels per OC, for each problem.
std::vector<Setting> facts(std::ostream& out) {
  std::vector<Setting> drawn;
  for (const Problem& pr : kProblems) {
    const Stencil st = typical_stencil(pr.stencil);
    const Space space(st, pr.grid, DeviceLimits{}, Space::default_values(st.dims(), pr.grid));
    for (const OcCount& c : space.count_per_oc(1, 2e4)) {
      out << pr.stencil << " oc " << c.oc << " " << c.count << " " << c.kernels
          << (c.exact ? "" : "~") << "\n";
      Rng rng(11, static_cast<std::uint64_t>(c.oc));
      for (int i = 0; i < 10; ++i) {
        const auto s = space.random_kernel_in_oc(c.oc, rng);
        if (!s)
          continue;
        out << "  " << canonical_key(*s) << " " << hex(setting_hash(*s)) << "\n";
        drawn.push_back(*s);
      }
    }
  }
  return drawn;
}

Measurement measured(double ms) {
  Measurement m;
  m.median_ms = ms;
  m.times_ms = {ms};
  return m;
}

std::vector<std::uint8_t> slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void spill(const std::filesystem::path& p, const std::vector<std::uint8_t>& bytes) {
  std::ofstream out(p, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
}

int write(const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  std::ofstream facts_out(dir / "facts.txt");
  const std::vector<Setting> drawn = facts(facts_out);
  std::vector<Setting> saved(drawn.begin(),
                             drawn.begin() + std::min<std::size_t>(drawn.size(), 40));
  run::RankState state;
  std::vector<std::pair<Setting, Measurement>> rows;
  ring::MigrantBatch batch;
  for (std::size_t i = 0; i < saved.size(); ++i) {
    const Migrant m{saved[i], measured(0.5 + static_cast<double>(i)), 1, 7};
    state.last_sent.push_back(m);
    batch.migrants.push_back(m);
    rows.emplace_back(saved[i], m.measurement);
  }
  ByteWriter cache;
  state_codec::put_cache(cache, rows);
  state.search.strategy = cache.bytes;
  spill(dir / "checkpoint.bin", run::encode_checkpoint(run::RankCheckpoint{state, {}}));
  spill(dir / "migrants.bin", ring::encode_batch(batch));
  // What `read` prints: the migrants, the cache (sorted by setting), the batch.
  std::ofstream keys(dir / "saved.txt");
  std::vector<Setting> sorted = saved;
  std::sort(sorted.begin(), sorted.end());
  for (const auto* list : {&saved, &sorted, &saved}) {
    for (const Setting& s : *list)
      keys << canonical_key(s) << " " << hex(setting_hash(s)) << "\n";
  }
  return 0;
}

int read(const std::filesystem::path& dir) {
  try {
    const run::RankCheckpoint c = run::decode_checkpoint(slurp(dir / "checkpoint.bin"));
    ByteReader r = state_codec::reader_of(c.current.search.strategy);
    const auto rows = state_codec::get_cache(r);
    const ring::MigrantBatch batch = ring::decode_batch(slurp(dir / "migrants.bin"));
    for (const Migrant& m : c.current.last_sent)
      std::cout << canonical_key(m.setting) << " " << hex(setting_hash(m.setting)) << "\n";
    for (const auto& [s, m] : rows)
      std::cout << canonical_key(s) << " " << hex(setting_hash(s)) << "\n";
    for (const Migrant& m : batch.migrants)
      std::cout << canonical_key(m.setting) << " " << hex(setting_hash(m.setting)) << "\n";
  } catch (const std::exception& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace isletune

int main(int argc, char** argv) {
  const std::string mode = argc == 3 ? argv[1] : "";
  if (mode == "write")
    return isletune::write(argv[2]);
  if (mode == "read")
    return isletune::read(argv[2]);
  std::cerr << "usage: axis_probe write|read DIR\n";
  return 2;
}
