// The run configuration (docs/config.md): one YAML file parsed once into a typed,
// validated Config. Nothing outside src/config sees yaml-cpp. Every error is an
// InputError of one sentence naming the file, the key path (e.g. ga.migration.interval)
// and what was expected. to_yaml writes the effective configuration back (stored in the
// trace as /config and re-parsed by `isletune resume`).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "eval/evaluator.hpp"
#include "eval/race.hpp"
#include "ga/ga_settings.hpp"
#include "sample/sampler.hpp"
#include "space/space.hpp"
#include "stencil/stencil.hpp"

namespace isletune {

// Where the stencil comes from: a typical-library name, inline points, or a stencil file.
enum class StencilSource { library, points, file };

struct StencilSpec {
  StencilSource source = StencilSource::library;
  std::string name;                         // library name, or the inline stencil's name
  int dims = 0;                             // 2 or 3 (known after parsing)
  std::vector<std::vector<double>> points;  // inline rows [dx, dy(, dz), c]
  std::filesystem::path file;               // stencil file (absolute)
  bool operator==(const StencilSpec&) const = default;
};

// How one parameter's values differ from Space::default_values: either replaced
// (`values`) or widened/narrowed (`add`, `remove`).
struct SpaceOverride {
  Param param = Param::streaming;
  std::optional<std::vector<int>> values;
  std::vector<int> add;
  std::vector<int> remove;
  bool operator==(const SpaceOverride&) const = default;
};

enum class Strategy { island_ga, random, sampled_random, global_ga };
enum class PredictorKind { uniform, roofline };
enum class Backend { cuda, replay };

[[nodiscard]] std::string_view strategy_name(Strategy s);
[[nodiscard]] std::string_view predictor_name(PredictorKind p);
[[nodiscard]] std::string_view backend_name(Backend b);

struct EvaluatorConfig {
  Backend backend = Backend::cuda;
  std::filesystem::path dataset;  // replay: recorded trace or dataset (absolute)
  double timeout_s = 120;         // cuda: watchdog per setting
  double compile_timeout_s = 60;  // cuda: NVRTC time per setting before it is a timeout
  // cuda: a kernel whose probe launch takes over slow_factor x the reference kernel's time per
  // step is a timeout, neither verified nor timed (0: every kernel is verified and timed).
  double slow_factor = kDefaultSlowFactor;
  // Racing (eval/race.hpp): a verified kernel whose first 3 timed runs have a median over
  // race_factor x the fastest kernel timed so far is timed by them alone while another compiled
  // kernel waits for the GPU; replay gives such a kernel the share of its recorded timing that
  // takes (0: every run timed).
  double race_factor = kDefaultRaceFactor;
  // Settling (eval/race.hpp): a verified kernel whose first 5 timed runs agree within
  // settle_spread of their median is timed by them alone while another compiled kernel waits;
  // replay gives such a kernel the share of its recorded timing that takes and the median of
  // its first 5 recorded runs (0: every run timed).
  double settle_spread = kDefaultSettleSpread;
  // cuda: the long verification run (T steps) for every kernel, not only for those whose
  // launches the 7-step run does not cover with a main and a tail launch (docs/kernels.md).
  bool full_verification = false;
  int compile_threads = 0;  // cuda: NVRTC threads (0: one per CPU of the share)
  // replay: every recorded compile time times this in the simulated queue and the answers (a
  // host that compiles faster or slower than the recording's; 1: as recorded).
  double compile_scale = 1;
  std::string cache_dir;  // cuda: cubin cache ("" = the evaluator's default)
  bool operator==(const EvaluatorConfig&) const = default;
};

struct Config {
  std::string origin;  // the file (or name) it was read from, for messages; not serialised
  StencilSpec stencil;
  Grid grid;
  int steps = 48;                    // T
  int warmup = 2;                    // untimed runs before timing
  int repeats = 10;                  // timed runs
  std::vector<SpaceOverride> space;  // in Param order, at most one per parameter
  PredictorKind predictor = PredictorKind::roofline;
  SamplerSettings sampler;  // YAML `sampler` (max_redraws is not a config key)
  Strategy strategy = Strategy::island_ga;
  GaSettings ga;  // YAML `ga` and `budget` (max_generations, max_evaluations, time_budget_s)
  EvaluatorConfig evaluator;
  std::uint64_t seed = 1;
  std::filesystem::path output = "isletune-out";

  [[nodiscard]] int dims() const { return stencil.dims; }
  // The problem every evaluation solves (stencil resolved through the library loader).
  [[nodiscard]] Problem problem() const;
};

// Equal effective configurations (origin ignored).
[[nodiscard]] bool operator==(const Config& a, const Config& b);

// Reads and validates a config file; relative paths inside resolve against its directory.
[[nodiscard]] Config load_config(const std::filesystem::path& path);
// Parses YAML text; `origin` names it in messages, `base_dir` resolves relative paths.
[[nodiscard]] Config parse_config(std::string_view yaml, const std::string& origin,
                                  const std::filesystem::path& base_dir);
// The effective configuration as YAML (every key, defaults filled in); parse_config of
// the text gives back an equal Config.
[[nodiscard]] std::string to_yaml(const Config& config);

// The problem a dataset's or trace's measurements solved, as its /config text records it
// (grid and steps; the stencil is in /stencil). Lenient: a field the text does not hold
// (or holds in a form parse_config would refuse) is nullopt; never throws.
struct RecordedProblem {
  std::optional<Grid> grid;
  std::optional<int> steps;  // the default (48) when the text has a grid but no steps
  // evaluator.dataset when evaluator.backend is replay: the run's (or dataset's) times are
  // that dataset's, its clock simulated (eval/replay/replay_evaluator.hpp: replayed_label).
  std::optional<std::string> replayed_from;
};
[[nodiscard]] RecordedProblem recorded_problem(std::string_view yaml);

// Overrides from the command line (`--backend`, `--out`, `--seed`).
struct ConfigOverrides {
  std::optional<std::string> backend;
  std::optional<std::filesystem::path> output;
  std::optional<std::uint64_t> seed;
};
// Applies the overrides and re-validates (e.g. --backend replay needs evaluator.dataset).
void apply_overrides(Config& config, const ConfigOverrides& overrides);
// ga.migration.drift not configured (GaSettings::kDriftAuto): async islands
// (GaSettings::kDriftAsync, docs/decisions.md#async-islands) on the CUDA backend unless
// ga.migration.lag is 1, else off (-1). apply_overrides ends with it, so a run's trace records
// the value it ran with.
void resolve_drift(Config& config);

// The stencil of the config: library, inline points or file, through the stencil loader.
[[nodiscard]] Stencil resolve_stencil(const Config& config);
// The space's value lists: Space::default_values for the config's dims and grid with the
// config's `space` overrides applied.
[[nodiscard]] Space::Values space_values(const Config& config);
// `base` with the overrides applied (sorted, distinct). Throws InputError naming
// space.<param> when a list would become empty or removes a value that is not there.
[[nodiscard]] Space::Values apply_space_overrides(Space::Values base,
                                                  const std::vector<SpaceOverride>& overrides,
                                                  const std::string& origin);

}  // namespace isletune
