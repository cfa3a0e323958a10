// `isletune measure CONFIG (--random N | --exhaustive) -o FILE`: measures settings of the
// configured space with the configured evaluator and records every measurement in one
// dataset file (format "isletune-dataset", docs/trace.md) that `--backend replay` reads.
// Only valid settings of the space are drawn (the CUDA evaluator's codegen builds every one);
// replay answers only the settings it recorded.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "cli/args.hpp"
#include "cli/commands.hpp"
#include "common/error.hpp"
#include "common/rng.hpp"
#include "common/text.hpp"
#include "config/config.hpp"
#include "ga/records.hpp"
#include "run/setup.hpp"
#include "run/signals.hpp"
#include "space/values_taken.hpp"
#include "trace/rank_writer.hpp"
#include "trace/run_directory.hpp"
#include "trace/run_writer.hpp"

namespace isletune::cli {
namespace {

using run::make_evaluator;
using run::make_space;
using run::recorded_candidates;
using run::short_setting;

constexpr const char* kUsage =
    "isletune measure CONFIG (--random N | --exhaustive) -o FILE [--backend cuda|replay] "
    "[--batch B] [--seed S] [--overwrite]";

constexpr const char* kHelp =
    "usage: isletune measure CONFIG (--random N | --exhaustive) -o FILE [--backend cuda|replay]\n"
    "                        [--batch B] [--seed S] [--overwrite]\n"
    "\n"
    "Measures settings of CONFIG's space on this machine's GPU (or replays them) and writes\n"
    "every measurement to FILE, a dataset that `evaluator.backend: replay` can answer from.\n"
    "With cuda every valid setting of the space can be drawn (the code generator builds\n"
    "every optimization combination: streaming, retiming, prefetch, merging, temporal\n"
    "blocking); with replay only the recorded settings that lie in the space.\n"
    "  --random N     N distinct uniformly random measurable settings (seeded; with cuda the\n"
    "                 naive-equivalent setting first)\n"
    "  --exhaustive   every measurable setting (refused above 1,000,000)\n"
    "  -o FILE        the dataset to write, a new file (a symbolic link is refused)\n"
    "  --overwrite    replaces an existing -o FILE\n"
    "  --batch B      settings per evaluator batch (default 64); the file is flushed after each;\n"
    "                 SIGTERM or SIGINT ends the command after the current batch, file complete\n"
    "  --seed S       overrides the config's seed\n";

constexpr double kExhaustiveLimit = 1e6;

// The part of the configured space a backend can measure: the space and, for replay, the
// recorded settings that lie in it.
struct Measurable {
  Space space;
  std::optional<std::vector<Setting>> recorded;
};

// cuda: the configured space as it is (codegen builds every valid setting: no probing).
// replay: the recorded settings inside the space.
Measurable measurable_space(const Evaluator& evaluator, const Space& space) {
  if (evaluator.name() != "cuda")
    return {space, recorded_candidates(evaluator, space)};
  return {space, std::nullopt};
}

// The settings to measure, in measurement order.
std::vector<Setting> choose_settings(const Measurable& m, const ParsedArgs& parsed,
                                     std::uint64_t seed) {
  std::vector<Setting> out;
  if (parsed.has("--exhaustive")) {
    if (m.recorded)
      return *m.recorded;
    const double size = m.space.size(seed);
    if (size > kExhaustiveLimit) {
      throw InputError("isletune measure --exhaustive: the configured space holds about " +
                       std::to_string(static_cast<long long>(size)) +
                       " valid settings, more than 1000000; narrow `space` in the config or use "
                       "--random N.");
    }
    m.space.for_each_valid(-1, [&](const Setting& s) { out.push_back(s); });
    return out;
  }
  const unsigned long long n = parse_unsigned("--random", *parsed.option("--random"));
  Rng rng(seed, 0x6d656173);  // stream "meas"
  if (m.recorded) {
    // A uniformly random ordered subset of the recorded settings (partial Fisher-Yates).
    std::vector<Setting> pool = *m.recorded;
    const std::size_t take = std::min<std::size_t>(pool.size(), n);
    for (std::size_t i = 0; i < take; ++i)
      std::swap(pool[i], pool[i + rng.below(pool.size() - i)]);
    out.assign(pool.begin(), pool.begin() + static_cast<std::ptrdiff_t>(take));
  } else {
    // The naive-equivalent setting first (when valid), so the dataset holds the naive time.
    std::set<Setting> seen;
    if (const Setting naive = naive_setting(m.space.dims()); n > 0 && m.space.valid(naive)) {
      seen.insert(naive);
      out.push_back(naive);
    }
    for (unsigned long long tries = 0; out.size() < n && tries < 20 * n + 1000; ++tries) {
      const auto s = m.space.random_setting(rng);
      if (!s)
        break;
      if (seen.insert(*s).second)
        out.push_back(*s);
    }
  }
  if (out.size() < n) {
    std::fprintf(stderr,
                 "isletune measure: only %zu distinct measurable settings found (asked %llu)\n",
                 out.size(), n);
  }
  return out;
}

std::string command_line(const Args& args) {
  std::string c = "isletune measure";
  for (const auto& a : args)
    c += " " + a;
  return c;
}

}  // namespace

int measure_command(const Args& args) {
  const ParsedArgs parsed =
      parse_args("measure", args, {"--random", "-o", "--backend", "--batch", "--seed"},
                 {"--exhaustive", "--overwrite"});
  if (parsed.help) {
    return print_help(kHelp);
  }
  expect_positional(parsed, 1, kUsage);
  if (parsed.has("--exhaustive") == parsed.option("--random").has_value()) {
    throw InputError("isletune measure needs exactly one of --random N and --exhaustive (usage: " +
                     std::string(kUsage) + ").");
  }
  const auto out_file = parsed.option("-o");
  if (!out_file)
    throw InputError("isletune measure needs -o FILE (usage: " + std::string(kUsage) + ").");

  Config config = load_config(parsed.positional[0]);
  if (const auto b = parsed.option("--backend")) {
    if (*b == "cuda") {
      config.evaluator.backend = Backend::cuda;
    } else if (*b == "replay") {
      config.evaluator.backend = Backend::replay;
    } else {
      throw InputError("option --backend of `isletune measure` must be cuda or replay, not '" + *b +
                       "'.");
    }
  }
  if (const auto s = parsed.option("--seed"))
    config.seed = parse_unsigned("--seed", *s);
  const int batch = parsed.option("--batch")
                        ? static_cast<int>(parse_unsigned("--batch", *parsed.option("--batch")))
                        : 64;
  if (batch < 1)
    throw InputError("option --batch of `isletune measure` must be at least 1.");

  // -o must not replace what this command reads (its config, stencil, replay dataset and
  // the rank files of a trace used as one) or a run's trace: measure writes datasets only.
  std::vector<CommandInput> inputs{{parsed.positional[0], "its configuration"}};
  if (config.stencil.source == StencilSource::file)
    inputs.push_back({config.stencil.file, "its stencil file"});
  if (config.evaluator.backend == Backend::replay) {
    for (const auto& f : trace_input_files(config.evaluator.dataset))
      inputs.push_back({f, "its replay dataset"});
  }
  refuse_overwriting_inputs("measure", *out_file, inputs);
  if (const std::string format = file_format(*out_file);
      format == kTraceFormat || format == kRankFormat) {
    throw InputError(
        *out_file + " is a run's " + (format == kTraceFormat ? "trace" : "rank file") +
        "; measure writes a dataset and never replaces a run: choose another -o FILE.");
  }
  // An existing -o needs --overwrite; a link is never written through.
  const bool overwrite = parsed.has("--overwrite");
  refuse_unsafe_output("-o", *out_file, overwrite);

  const Stencil stencil = resolve_stencil(config);
  EnvironmentInfo env;
  std::unique_ptr<Evaluator> evaluator = make_evaluator(config, 0, env);
  env.limits = evaluator->limits();
  const Measurable m =
      measurable_space(*evaluator, make_space(config, stencil, evaluator->limits()));
  const Space& space = m.space;
  const std::vector<Setting> settings = choose_settings(m, parsed, config.seed);

  clear_output("-o", *out_file, overwrite);  // then created exclusively
  RunTraceWriter dataset = RunTraceWriter::create_dataset(
      *out_file, RunInfo{command_line(args), config.seed, "", version()});
  dataset.write_config(to_yaml(config));
  dataset.write_stencil(stencil);
  dataset.write_space(values_taken(stencil, space));
  dataset.write_environment(env);
  RankTraceWriter rank = dataset.inline_rank(0);

  std::printf("isletune measure: %s %dx%dx%d on %s (%s backend), %zu settings in batches of %d\n",
              stencil.name().c_str(), config.grid.nx, config.grid.ny, config.grid.nz,
              printable(env.gpu_name, 80).c_str(), evaluator->name().c_str(), settings.size(),
              batch);
  ResultInfo best;
  std::array<int, kStatusCount> by_status{};
  std::int64_t id = 0;
  for (std::size_t first = 0; first < settings.size(); first += batch) {
    const std::size_t end = std::min(settings.size(), first + static_cast<std::size_t>(batch));
    const std::span<const Setting> part(settings.data() + first, end - first);
    const std::vector<Measurement> got = evaluator->evaluate(part);
    for (std::size_t i = 0; i < got.size(); ++i) {
      EvaluationRecord r;
      r.eval_id = id++;
      r.generation = static_cast<int>(first / batch);
      r.setting = part[i];
      r.measurement = got[i];
      r.wall_s = evaluator->clock_s();
      rank.evaluation(r);
      ++by_status[static_cast<int>(got[i].status)];
      if (got[i].ok() && (best.best_key.empty() || got[i].median_ms < best.median_ms)) {
        best.best = part[i];
        best.best_key = canonical_key(part[i]);
        best.median_ms = got[i].median_ms;
      }
    }
    rank.flush();
    std::printf("  %zu/%zu measured, %d ok, best %.4g ms (%.1f GCells/s), %.0f s\n", end,
                settings.size(), by_status[0], best.median_ms,
                best.best_key.empty() ? 0.0 : gcells_per_s(config.grid, best.median_ms),
                evaluator->clock_s());
    std::fflush(stdout);
    // SIGTERM/SIGINT (e.g. `timeout`): stop after the batch; what is measured is kept.
    if (run::termination_requested() && end < settings.size()) {
      std::printf("isletune measure: stopped by signal after %zu of %zu settings\n", end,
                  settings.size());
      break;
    }
  }
  if (!best.best_key.empty()) {
    best.gcells_per_s = gcells_per_s(config.grid, best.median_ms);
    best.stop_reason = "measured";
    best.evaluations = id;
    best.wall_s = evaluator->clock_s();
    best.source = evaluator->source(best.best);
    dataset.write_result(best);
  }
  dataset.flush();
  std::printf("wrote %s: %lld evaluations", out_file->c_str(), static_cast<long long>(id));
  for (int s = 0; s < kStatusCount; ++s) {
    if (by_status[s] > 0)
      std::printf(", %d %s", by_status[s],
                  std::string(status_name(static_cast<Status>(s))).c_str());
  }
  std::printf("\n");
  return 0;
}

}  // namespace isletune::cli
