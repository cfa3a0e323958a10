// Building the pieces of a run from its configuration (see setup.hpp).
#include "run/setup.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <tuple>

#include "common/error.hpp"
#include "common/text.hpp"
#include "eval/cuda/compile_cpus.hpp"
#include "eval/replay/replay_evaluator.hpp"
#include "kernel/registry.hpp"
#include "sample/predictor.hpp"
#include "sample/sampler.hpp"
#include "sample/setting_source.hpp"
#include "trace/replay_dataset.hpp"
#ifdef ISLETUNE_HAVE_CUDA
#include "eval/cuda/cuda_evaluator.hpp"
#endif

namespace isletune::run {

namespace {

bool fs_exists(const std::filesystem::path& p) {
  std::error_code ec;
  return std::filesystem::exists(p, ec);
}

// "star2d1r on 4096x4096 over 48 steps"
std::string describe_problem(const std::string& stencil, const Grid& grid, int steps) {
  std::string g = std::to_string(grid.nx) + "x" + std::to_string(grid.ny);
  if (grid.nz > 1)
    g += "x" + std::to_string(grid.nz);
  return stencil + " on " + g + " over " + std::to_string(steps) + " steps";
}

// The offsets of a stencil in a canonical order. The time of a kernel depends on its
// points, not on their coefficients' values (a dataset may use other coefficients).
std::vector<std::tuple<int, int, int>> points_of(const std::vector<Offset>& offsets) {
  std::vector<std::tuple<int, int, int>> points;
  for (const Offset& o : offsets)
    points.emplace_back(o.x, o.y, o.z);
  std::sort(points.begin(), points.end());
  return points;
}

}  // namespace

std::optional<std::string> replay_problem_mismatch(const Config& config, const Stencil& stencil,
                                                   const TraceReader& dataset) {
  const std::string path = display_path(dataset.path());
  const RecordedProblem recorded = recorded_problem(dataset.config_yaml());
  if (!recorded.grid || !recorded.steps)
    return "records no grid in /config, so which problem its times are of is unknown";
  const StencilInfo theirs = dataset.stencil();
  const bool same_stencil =
      theirs.dims == stencil.dims() && points_of(theirs.offsets) == points_of(stencil.offsets());
  if (same_stencil && *recorded.grid == config.grid && *recorded.steps == config.steps)
    return std::nullopt;
  std::string mine = stencil.name();
  if (theirs.name == stencil.name() && !same_stencil)
    mine += " (other points)";
  return "holds times of " +
         describe_problem(printable(theirs.name), *recorded.grid, *recorded.steps) + ", not of " +
         config.origin + "'s " + describe_problem(mine, config.grid, config.steps);
}

void check_replay_problem(const Config& config, const Stencil& stencil,
                          const TraceReader& dataset) {
  if (const auto why = replay_problem_mismatch(config, stencil, dataset)) {
    throw InputError(display_path(dataset.path()) + " " + *why +
                     "; replay answers only the problem it recorded: use a dataset of this " +
                     "problem (record one with `isletune measure`).");
  }
}

namespace {

// Backend replay: the checks of the dataset every command makes before using it (named, and
// holding this config's problem when it exists; load_replay (trace/replay_dataset.hpp) and
// TraceReader say what is wrong with a missing or unreadable file).
void check_replay_dataset(const Config& config, const Stencil& stencil) {
  if (config.evaluator.dataset.empty()) {
    throw InputError(config.origin +
                     ": evaluator.dataset is required with backend replay (a dataset or "
                     "trace file to replay).");
  }
  if (fs_exists(config.evaluator.dataset))
    check_replay_problem(config, stencil, TraceReader(config.evaluator.dataset));
}

}  // namespace

DeviceLimits configured_limits(const Config& config, const Stencil& stencil) {
  if (config.evaluator.backend != Backend::replay)
    return DeviceLimits{};
  check_replay_dataset(config, stencil);
  if (!fs_exists(config.evaluator.dataset)) {
    throw InputError(display_path(config.evaluator.dataset) +
                     ": replay dataset not found (expected an isletune dataset or a trace "
                     "written by `isletune measure` or `isletune run`).");
  }
  return recorded_limits(TraceReader(config.evaluator.dataset).environment());
}

std::unique_ptr<Evaluator> make_evaluator(const Config& config, int gpu, EnvironmentInfo& env,
                                          int node_rank, int node_ranks, bool bindings_overlap) {
  if (config.evaluator.backend == Backend::replay) {
    check_replay_dataset(config, resolve_stencil(config));
    auto replay = std::make_unique<ReplayEvaluator>(load_replay(config.evaluator.dataset));
    // ISLETUNE_REPLAY_DELAY_S slows replay to a GPU-like pace (Slurm time-limit tests); with
    // ISLETUNE_REPLAY_DELAY_RANK only that rank (a slow island among fast ones).
    if (const char* delay = std::getenv("ISLETUNE_REPLAY_DELAY_S")) {
      const char* only = std::getenv("ISLETUNE_REPLAY_DELAY_RANK");
      if (only == nullptr || std::atoi(only) == env.rank)
        replay->set_delay_s(std::atof(delay));
    }
    // evaluator.compile_threads: the NVRTC threads replay's queue simulates (0: the
    // recording's), e.g. to replay a serial recording with compiles that overlap.
    if (config.evaluator.compile_threads > 0)
      replay->set_compile_threads(config.evaluator.compile_threads);
    // evaluator.race_factor: the GPU time replay's queue gives a kernel that loses the race.
    replay->set_race_factor(config.evaluator.race_factor);
    // evaluator.settle_spread: the same for a kernel whose first runs settle.
    replay->set_settle_spread(config.evaluator.settle_spread);
    // evaluator.compile_scale: the recorded compile times scaled (a faster or slower host).
    replay->set_compile_scale(config.evaluator.compile_scale);
    // The recording GPU's name as it is (Kernel Tuner matches caches by it); that the run
    // was replayed is in its config (evaluator.backend) and driver_version "none".
    env.gpu_name = replay->limits().name;
    env.gpu_uuid = "";
    env.sm_count = replay->limits().sm_count;
    env.driver_version = "none";
    env.cuda_version = "none";
    env.compile_threads = replay->compile_threads();
    // Nothing compiles in replay; the share a CUDA worker would compile on here is recorded
    // all the same, so a replayed job shows how its ranks split each node's CPUs.
    env.compile_cpus =
        cuda::cpu_list_text(cuda::probe_compile_cpus({node_rank, node_ranks, bindings_overlap}));
    return replay;
  }
#ifdef ISLETUNE_HAVE_CUDA
  cuda::CudaOptions options;
  options.device = gpu;
  options.timeout_s = config.evaluator.timeout_s;
  options.compile_timeout_s = config.evaluator.compile_timeout_s;
  options.slow_factor = config.evaluator.slow_factor;
  options.race_factor = config.evaluator.race_factor;
  options.settle_spread = config.evaluator.settle_spread;
  options.full_verification = config.evaluator.full_verification;
  options.seed = config.seed;
  options.cache_dir = config.evaluator.cache_dir;
  options.compile_threads = config.evaluator.compile_threads;
  options.node_share = {node_rank, node_ranks, bindings_overlap};
  auto evaluator = std::make_unique<cuda::CudaEvaluator>(config.problem(), options);
  const cuda::GpuEnvironment& g = evaluator->environment();
  env.gpu_name = g.name;
  env.gpu_uuid = g.uuid;
  env.sm_count = evaluator->limits().sm_count;
  env.sm_clock_mhz = g.sm_clock_mhz;
  env.memory_clock_mhz = g.mem_clock_mhz;
  env.driver_version = std::to_string(g.driver_version);
  env.cuda_version = std::to_string(g.runtime_version) + " (NVRTC " + g.nvrtc_version + ")";
  env.compile_threads = g.compile_threads;
  env.compile_cpus = g.compile_cpus;
  return evaluator;
#else
  (void)gpu;
  (void)node_rank;
  (void)node_ranks;
  (void)bindings_overlap;
  throw InputError(config.origin +
                   ": evaluator.backend cuda is not available: this isletune was built without "
                   "the CUDA evaluator (ISLETUNE_WITH_CUDA); use --backend replay.");
#endif
}

Space make_space(const Config& config, const Stencil& stencil, const DeviceLimits& limits) {
  return Space(stencil, config.grid, limits, space_values(config));
}

std::optional<std::vector<Setting>> recorded_candidates(const Evaluator& evaluator,
                                                        const Space& space) {
  const Recording* recorded = evaluator.recording();
  if (recorded == nullptr)
    return std::nullopt;
  std::vector<Setting> inside;
  for (const Setting& s : recorded->candidates) {
    if (space.valid(s))
      inside.push_back(s);
  }
  if (inside.empty()) {
    throw InputError(recorded->origin + ": none of its " +
                     std::to_string(recorded->candidates.size()) +
                     " recorded settings lies in the configured space (check stencil, grid "
                     "and `space` against the dataset).");
  }
  return inside;
}

SampledSet sample_settings(const Config& config, const Stencil& stencil, const Space& space,
                           const std::optional<std::vector<Setting>>& candidates) {
  const auto predictor =
      make_predictor(predictor_name(config.predictor), stencil, config.grid, space.limits());
  SampledSet set;
  if (candidates) {
    ListSource source(space.shape(), *candidates);
    set = sample(source, *predictor, config.sampler, config.seed).set;
  } else {
    SpaceSource source(space);
    set = sample(source, *predictor, config.sampler, config.seed).set;
  }
  refine_sample(set, space, *predictor, /*whole_space=*/!candidates);
  const auto naive = naive_seed(space, candidates ? &*candidates : nullptr);
  if (naive && std::find(set.settings.begin(), set.settings.end(), *naive) == set.settings.end()) {
    set.add(*naive, space.oc_of(*naive), predictor->predict_ms(*naive));
  }
  return set;
}

EpochSampler refill_source(const Config& config, const Stencil& stencil, const Space& space,
                           const std::optional<std::vector<Setting>>& candidates, int rank,
                           std::size_t sampled) {
  const double all = candidates ? static_cast<double>(candidates->size()) : space.size(config.seed);
  if (static_cast<double>(sampled) >= all)
    return {};
  std::shared_ptr<const Predictor> predictor =
      make_predictor(predictor_name(config.predictor), stencil, config.grid, space.limits());
  std::function<std::unique_ptr<SettingSource>()> make_source;
  if (candidates) {
    make_source = [&candidates, &space] {
      return std::make_unique<ListSource>(space.shape(), *candidates);
    };
  } else {
    make_source = [&space] { return std::make_unique<SpaceSource>(space); };
  }
  return epoch_sampler(std::move(make_source), std::move(predictor), config.sampler, config.seed,
                       rank);
}

SampleData to_sample_data(const SampledSet& s) {
  return SampleData{s.settings, s.oc, s.predicted_ms};
}

SampledSet to_sampled_set(const SampleData& d) {
  SampledSet s;
  s.settings = d.settings;
  s.oc = d.oc;
  s.predicted_ms = d.predicted;
  return s;
}

std::string short_setting(const Setting& s) {
  std::string out;
  // The parameters the setting's family does not read: another family's own (the tensor-core
  // family's outside it), the base parameters it does not read (KernelFamily::reads_base),
  // those another family reads alone (sd and sb outside the streaming family) and those its
  // form rules set (the tiled family's retiming and prefetch).
  const KernelFamily* family = find_family(s);
  auto unread = [&](Param p) {
    if (family == nullptr)
      return false;
    if (is_appended(p) ? !family->owns(p) : !family->reads_base(p))
      return true;
    const KernelFamily* reader = registered_ocs().alone_reader(p);
    if (reader != nullptr && reader != family)
      return true;
    const auto rules = family->rules();
    return std::any_of(rules.begin(), rules.end(),
                       [p](const FamilyRule& r) { return r.form && r.stage == p; });
  };
  for (std::size_t i = 0; i < kParamCount; ++i) {
    const Param p = param_at(i);
    const int v = s.values[i];
    if (unread(p))
      continue;
    if ((p == Param::tbz || p == Param::mfz || p == Param::ufz) && v == 1)
      continue;
    if (!out.empty())
      out += ' ';
    out += std::string(param_name(p)) + '=';
    out +=
        p == Param::merge ? std::string(merge_name(static_cast<MergeKind>(v))) : std::to_string(v);
  }
  return out;
}

}  // namespace isletune::run
