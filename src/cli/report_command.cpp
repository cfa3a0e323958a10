// `isletune report DIR|FILE [--json] [--top K]`: a run's (or a dataset's) best setting, its
// per-generation convergence table summed over the ranks, each rank's time (compiles, waiting
// for the others), the K fastest distinct settings, and its failures by status with their
// most frequent messages. --json prints the same numbers as one JSON document
// (nlohmann/json) for scripts.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/args.hpp"
#include "cli/commands.hpp"
#include "common/error.hpp"
#include "common/text.hpp"
#include "config/config.hpp"
#include "eval/evaluator.hpp"
#include "eval/race.hpp"
#include "eval/replay/replay_evaluator.hpp"
#include "run/setup.hpp"
#include "trace/reader.hpp"

namespace isletune::cli {
namespace {

using run::short_setting;
using Json = nlohmann::ordered_json;

constexpr const char* kUsage = "isletune report DIR|FILE [--json] [--top K]";

constexpr const char* kHelp =
    "usage: isletune report DIR|FILE [--json] [--top K]\n"
    "\n"
    "Summarises a run directory (its trace.h5), a trace.h5 or a dataset: the best verified\n"
    "setting, one line per generation over all ranks (generation 0 is the initial\n"
    "population; new measurements, cache hits, best ms, GCells/s, mean MCR, longest wait),\n"
    "each rank's generations, new measurements (and how many of them it made while it would\n"
    "have waited, ga.migration.fill), compile seconds, seconds waiting for the other ranks\n"
    "(this host's; a replayed run's simulated clock does not advance while a rank waits, so\n"
    "its waiting share is `-`), its clock, the share of it its GPU measured (verify + timing)\n"
    "and its NVRTC threads compiled, and the mean number of settings in its evaluator's\n"
    "queue, the GPU's share and the queue by tenth of the clock; the evaluations by status\n"
    "and, for each failed status, its most frequent messages.\n"
    "The numbers agree with `isletune-analyze summary` on the same trace.\n"
    "\n"
    "  --top K   also list the K fastest distinct verified settings (default 0)\n"
    "  --json    print everything as one JSON document on stdout instead of text\n";

// Failure messages listed per failed status.
constexpr std::size_t kMessagesPerStatus = 3;

// One generation over all ranks.
struct Row {
  int ranks = 0;
  long long evaluations = 0;
  long long cache_hits = 0;
  double best_ms = std::numeric_limits<double>::infinity();
  double mcr_sum = 0;
  double wait_max = 0;
  double wall_max = 0;
};

// One rank's time: where a multi-GPU run's ranks waited for the slowest one.
struct RankTime {
  int generations = 0;  // after the initial population, as /result counts them
  long long measured = 0;
  long long fills = 0;   // of measured: while it would wait for the others (ga.migration.fill)
  int restarts = 0;      // generations that restarted the island on a fresh sample
  double compile_s = 0;  // its new measurements' compile times, summed (compiles run in parallel)
  double wait_s = 0;     // wall seconds in the ring's collectives (GenerationRecord::wait_s)
  double clock_s = 0;    // the evaluator clock at its last generation (simulated in replay)
  double gpu_s = 0;      // its new measurements' verify and timing seconds, summed
  int threads = 0;       // its NVRTC threads (0: not recorded)
  std::string cpus;      // the CPUs they ran on ("" : not recorded)
  std::string node;      // its node, its place among the node's ranks and its GPU there
  int node_rank = 0;     // ("", 0 of 0, "": not recorded)
  int node_ranks = 0;
  std::string gpu_device;
  // Shares of its clock: the GPU measuring, the compile threads compiling; and the mean
  // number of settings in the evaluator's queue (Little's law; 0 without timelines).
  [[nodiscard]] double gpu_busy() const { return clock_s > 0 ? gpu_s / clock_s : 0.0; }
  [[nodiscard]] double threads_busy() const {
    return clock_s > 0 && threads > 0 ? compile_s / (clock_s * threads) : 0.0;
  }
  [[nodiscard]] double queue_depth() const {
    if (!(clock_s > 0))
      return 0.0;
    double queued_s = 0;  // seconds its measurements spent queued (submit to finish), summed
    for (const Span& q : queue_spans)
      queued_s += q.seconds;
    return queued_s / clock_s;
  }

  // An amount of seconds spread evenly over a span of the clock.
  struct Span {
    double start_s, finish_s, seconds;
  };
  // When the GPU measured: each new measurement's verify and timing seconds over its span on
  // the GPU (start to finish); when settings were queued: each one's submit to finish (none
  // without a timeline).
  std::vector<Span> gpu_spans, queue_spans;
  static constexpr int kParts = 10;
  // The GPU's busy share in each tenth of the clock: where a run's GPU waited (e.g. for the
  // first generation's slowest compiles). Their mean is gpu_busy() when every measurement
  // has a timeline.
  [[nodiscard]] std::array<double, kParts> gpu_busy_by_part() const { return by_part(gpu_spans); }
  // The mean number of settings queued in each tenth (their mean is queue_depth()): with the
  // GPU busy by tenth, whether a tenth's GPU waited on a full queue (the compiles) or a
  // shallow one (the island did not propose enough).
  [[nodiscard]] std::array<double, kParts> queue_by_part() const { return by_part(queue_spans); }

 private:
  [[nodiscard]] std::array<double, kParts> by_part(const std::vector<Span>& spans) const {
    std::array<double, kParts> sum{};
    if (!(clock_s > 0))
      return sum;
    const double part = clock_s / kParts;
    for (const Span& g : spans) {
      const double span = g.finish_s - g.start_s;
      if (span <= 0) {  // an instant: its tenth takes it all
        if (g.start_s >= 0 && g.start_s < clock_s)
          sum[static_cast<std::size_t>(g.start_s / part)] += g.seconds;
        continue;
      }
      for (int i = 0; i < kParts; ++i) {
        const double lo = std::max(g.start_s, i * part), hi = std::min(g.finish_s, (i + 1) * part);
        if (hi > lo)
          sum[static_cast<std::size_t>(i)] += g.seconds * (hi - lo) / span;
      }
    }
    for (double& b : sum)
      b /= part;
    return sum;
  }
};

// A distinct verified setting: its fastest measurement.
struct Fast {
  std::string key;
  Setting setting;
  double median_ms = std::numeric_limits<double>::infinity();
  int rank = 0;
};

// Everything the report prints, gathered once for both the text and the JSON form.
struct Report {
  std::map<int, Row> rows;
  std::map<int, RankTime> ranks;
  std::array<long long, kStatusCount> by_status{};
  std::array<std::map<std::string, long long>, kStatusCount> messages;
  long long measured = 0, cache_hits = 0, migrants = 0;
  // Verified kernels by their number of timed runs, those that raced apart (eval/race.hpp: a
  // raced kernel says so in its message; a settled one keeps kSettleRuns, the others every run).
  std::map<std::size_t, long long> timed_runs;
  long long raced = 0;
  std::map<std::string, Fast> fastest;  // by key
  int last_generation = -1;
  double naive_ms = std::nan("");  // the naive-equivalent setting's time, when measured
  std::string naive_missing;       // why naive_ms is NaN (a sentence part), else empty
  double bandwidth_gbs = 0;        // the recorded copy bandwidth (0: unknown)
  std::string gpu;                 // the recording GPU (a replayed run: the dataset's)
  std::string replayed;            // "replayed from DATASET, clock simulated", or empty
};

// How the verified kernels were timed: every run (the most any kernel had), or cut short
// while another kernel waited (eval/race.hpp): raced (a worker's raced kernel keeps kRaceRuns,
// replay's its recorded runs; both say so), settled after kSettleRuns.
struct TimingShares {
  std::size_t runs = 0;  // the most timed runs of a kernel not raced (the config's repeats)
  long long full = 0, raced = 0, settled = 0, other = 0;
};
TimingShares timing_shares(const std::map<std::size_t, long long>& timed_runs, long long raced) {
  TimingShares t;
  t.raced = raced;
  if (timed_runs.empty())
    return t;
  t.runs = timed_runs.rbegin()->first;
  for (const auto& [runs, n] : timed_runs) {
    if (runs == t.runs)
      t.full += n;
    else if (runs == static_cast<std::size_t>(kSettleRuns))
      t.settled += n;
    else
      t.other += n;  // fewer runs than repeats otherwise: a trace of other settings merged in
  }
  return t;
}

// Why a trace holds no verified time of the naive setting: its failed measurement, or no
// row of it (for a replayed run: whether its dataset holds one; `dataset`: the trace is one).
std::string naive_missing_reason(const Setting& naive, const std::optional<Measurement>& failed,
                                 const RecordedProblem& recorded, bool dataset) {
  const std::string name = "naive setting (" + short_setting(naive) + ")";
  if (failed) {
    return name + " failed: " + std::string(status_name(failed->status)) +
           (failed->message.empty() ? "" : " (" + printable(failed->message, 120) + ")");
  }
  if (recorded.replayed_from && !recorded.replayed_from->empty()) {
    const std::string& dataset = *recorded.replayed_from;
    std::error_code ec;
    if (std::filesystem::exists(dataset, ec)) {
      try {
        const TraceReader data(dataset);
        bool recorded_there = false;
        for (int rank : data.ranks()) {
          for (const EvaluationRecord& e : data.evaluations(rank))
            recorded_there = recorded_there || e.setting == naive;
        }
        if (!recorded_there)
          return name + " not measured: its replay dataset " + dataset + " has no row of it";
      } catch (const InputError&) {
        // an unreadable dataset: say only what this trace lacks
      }
    }
  }
  if (dataset)
    return name + " not measured: this dataset has no row of it";
  return name + " not measured: no row of it in this trace (outside the searched space or " +
         "sample, or the search ended first)";
}

Report gather(const TraceReader& reader) {
  Report rep;
  const Setting naive = naive_setting(reader.stencil().dims);
  const auto environment = reader.environment();
  for (const auto& env : environment) {
    if (env.limits)
      rep.bandwidth_gbs = env.limits->memory_bandwidth_gbs;
    rep.ranks[env.rank].threads = env.compile_threads;
    rep.ranks[env.rank].cpus = printable(env.compile_cpus, 40);
    rep.ranks[env.rank].node = printable(env.node, 80);
    rep.ranks[env.rank].node_rank = env.node_rank;
    rep.ranks[env.rank].node_ranks = env.node_ranks;
    rep.ranks[env.rank].gpu_device = printable(env.gpu_device, 40);
  }
  if (!environment.empty())
    rep.gpu = printable(recorded_limits(environment).name, 80);
  const RecordedProblem recorded = recorded_problem(reader.config_yaml());
  if (recorded.replayed_from)
    rep.replayed = printable(replayed_label(*recorded.replayed_from), 300);
  std::optional<Measurement> naive_failed;
  for (int rank : reader.ranks()) {
    for (const EvaluationRecord& e : reader.evaluations(rank)) {
      if (e.setting == naive && e.measurement.ok())
        rep.naive_ms = e.measurement.median_ms;
      else if (e.setting == naive && !e.migrant && !e.cached)
        naive_failed = e.measurement;
      // A migrant is a migrant whether or not its setting was known (`cached`); traces of
      // older writers recorded cache hits as rows too (newer ones count them per generation).
      if (e.migrant) {
        ++rep.migrants;
        continue;
      }
      if (e.cached) {
        ++rep.cache_hits;
        ++rep.rows[e.generation].cache_hits;
        continue;
      }
      ++rep.measured;
      ++rep.ranks[rank].measured;
      RankTime& busy = rep.ranks[rank];
      busy.compile_s += e.measurement.compile_ms * 1e-3;
      const double gpu_s = (e.measurement.verify_ms + e.measurement.run_ms) * 1e-3;
      busy.gpu_s += gpu_s;
      if (std::isfinite(e.timeline.start_s) && std::isfinite(e.timeline.finish_s))
        busy.gpu_spans.push_back({e.timeline.start_s, e.timeline.finish_s, gpu_s});
      if (std::isfinite(e.timeline.submit_s) && std::isfinite(e.timeline.finish_s))
        busy.queue_spans.push_back(
            {e.timeline.submit_s, e.timeline.finish_s, e.timeline.finish_s - e.timeline.submit_s});
      const auto st = static_cast<std::size_t>(e.measurement.status);
      ++rep.by_status[st];
      if (!e.measurement.ok()) {
        ++rep.messages[st][e.measurement.message.empty() ? "(no message)" : e.measurement.message];
        continue;
      }
      if (says_raced(e.measurement.message))
        ++rep.raced;
      else
        ++rep.timed_runs[e.measurement.times_ms.size()];
      const std::string key = canonical_key(e.setting);
      Fast& f = rep.fastest[key];
      if (e.measurement.median_ms < f.median_ms) {
        f = {key, e.setting, e.measurement.median_ms, rank};
      }
    }
    for (const GenerationRecord& g : reader.generations(rank)) {
      Row& r = rep.rows[g.generation];
      ++r.ranks;
      r.evaluations += g.evaluations;
      r.cache_hits += g.cache_hits;
      rep.cache_hits += g.cache_hits;
      if (!std::isnan(g.best_ms))
        r.best_ms = std::min(r.best_ms, g.best_ms);
      r.mcr_sum += g.mcr;
      r.wait_max = std::max(r.wait_max, g.wait_s);
      r.wall_max = std::max(r.wall_max, g.wall_s);
      RankTime& t = rep.ranks[rank];
      t.generations = std::max(t.generations, g.generation);
      t.wait_s += g.wait_s;
      t.fills += g.fills;
      t.restarts += g.restart;
      t.clock_s = std::max(t.clock_s, g.wall_s);
      rep.last_generation = std::max(rep.last_generation, g.generation);
    }
  }
  if (std::isnan(rep.naive_ms))
    rep.naive_missing = naive_missing_reason(naive, naive_failed, recorded, reader.is_dataset());
  return rep;
}

// The best time against the naive kernel and the copy roofline (cells x 16 B at the recorded
// copy bandwidth): what both the text and the JSON print.
struct Versus {
  double speedup = std::nan("");     // naive ms / best ms
  double roof_ms = std::nan("");     // the copy roofline's time per step
  double copy_share = std::nan("");  // roof ms / best ms (above 1 with temporal blocking)
};

Versus versus(const Report& rep, double best_ms, double cells) {
  Versus v;
  v.speedup = rep.naive_ms / best_ms;
  if (rep.bandwidth_gbs > 0 && !std::isnan(cells))
    v.roof_ms = cells * 16.0 / (rep.bandwidth_gbs * 1e9) * 1e3;
  v.copy_share = v.roof_ms / best_ms;
  return v;
}

// The K fastest distinct settings, fastest first (ties by key).
std::vector<Fast> top(const Report& rep, std::size_t k) {
  std::vector<Fast> all;
  all.reserve(rep.fastest.size());
  for (const auto& [key, f] : rep.fastest)
    all.push_back(f);
  std::sort(all.begin(), all.end(), [](const Fast& a, const Fast& b) {
    return a.median_ms != b.median_ms ? a.median_ms < b.median_ms : a.key < b.key;
  });
  all.resize(std::min(k, all.size()));
  return all;
}

// The most frequent messages of one status, most frequent first.
std::vector<std::pair<std::string, long long>> frequent(const std::map<std::string, long long>& m) {
  std::vector<std::pair<std::string, long long>> v(m.begin(), m.end());
  std::stable_sort(v.begin(), v.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  v.resize(std::min(kMessagesPerStatus, v.size()));
  return v;
}

// A JSON number, or null for NaN/infinity (JSON has neither).
Json number(double x) {
  return std::isfinite(x) ? Json(x) : Json(nullptr);
}

Json setting_json(const Setting& s) {
  Json out = Json::object();
  for (std::size_t i = 0; i < kParamCount; ++i) {
    const Param p = param_at(i);
    out[std::string(param_name(p))] =
        p == Param::merge ? Json(std::string(merge_name(static_cast<MergeKind>(s.values[i]))))
                          : Json(s.values[i]);
  }
  return out;
}

Json report_json(const TraceReader& reader, const Report& rep, const std::vector<Fast>& best_k,
                 double cells) {
  const RunInfo info = reader.run_info();
  const StencilInfo stencil = reader.stencil();
  Json doc;
  doc["path"] = display_path(reader.path());
  doc["format"] = reader.format();
  doc["schema_version"] = reader.version();
  // Strings the trace holds: escaped and bounded as in the text report.
  doc["created"] = printable(info.created, 40);
  doc["command"] = printable(info.command, 300);
  doc["seed"] = info.seed;
  doc["stencil"] = {{"name", stencil.name},
                    {"dims", stencil.dims},
                    {"order", stencil.order},
                    {"points", stencil.offsets.size()}};
  doc["gpu"] = rep.gpu;
  // Replayed: the dataset the times are from (else null); the clock is then simulated.
  if (const RecordedProblem recorded = recorded_problem(reader.config_yaml());
      recorded.replayed_from) {
    doc["replayed"] = {
        {"dataset", *recorded.replayed_from}, {"clock", "simulated"}, {"label", rep.replayed}};
  } else {
    doc["replayed"] = nullptr;
  }
  Json env = Json::array();
  for (const auto& e : reader.environment())
    env.push_back({{"rank", e.rank},
                   {"gpu_name", printable(e.gpu_name, 80)},
                   {"host", printable(e.host, 80)}});
  doc["environment"] = env;
  doc["copy_bandwidth_gbs"] = rep.bandwidth_gbs > 0 ? Json(rep.bandwidth_gbs) : Json(nullptr);
  doc["naive"] = {{"median_ms", number(rep.naive_ms)},
                  {"missing", rep.naive_missing.empty() ? Json(nullptr) : Json(rep.naive_missing)}};
  Json gens = Json::array();
  for (const auto& [g, r] : rep.rows) {
    gens.push_back({{"generation", g},
                    {"ranks", r.ranks},
                    {"evaluations", r.evaluations},
                    {"cache_hits", r.cache_hits},
                    {"best_ms", number(r.best_ms)},
                    {"gcells_per_s", number(cells / (r.best_ms * 1e6))},
                    {"mean_mcr", number(r.mcr_sum / r.ranks)},
                    {"max_wait_s", r.wait_max},
                    {"clock_s", r.wall_max}});
  }
  doc["generations"] = gens;
  Json ranks = Json::array();
  for (const auto& [rank, t] : rep.ranks) {
    ranks.push_back({{"rank", rank},
                     {"generations", t.generations},
                     {"measured", t.measured},
                     {"fills", t.fills},
                     {"restarts", t.restarts},
                     {"compile_s", t.compile_s},
                     {"wait_s", t.wait_s},
                     {"clock_s", t.clock_s},
                     {"compile_threads", t.threads},
                     {"compile_cpus", t.cpus},
                     {"node", t.node},
                     {"node_rank", t.node_rank},
                     {"node_ranks", t.node_ranks},
                     {"gpu_device", t.gpu_device},
                     {"gpu_busy", t.gpu_busy()},
                     {"compile_threads_busy", t.threads_busy()},
                     {"queue_depth", t.queue_depth()},
                     {"gpu_busy_by_tenth", t.gpu_busy_by_part()},
                     {"queue_by_tenth", t.queue_by_part()}});
  }
  doc["ranks"] = ranks;
  doc["last_generation"] = rep.last_generation;
  Json by_status = Json::object(), failures = Json::array();
  for (int s = 0; s < kStatusCount; ++s) {
    const std::string name(status_name(static_cast<Status>(s)));
    by_status[name] = rep.by_status[static_cast<std::size_t>(s)];
    if (s == static_cast<int>(Status::ok) || rep.by_status[static_cast<std::size_t>(s)] == 0)
      continue;
    Json msgs = Json::array();
    for (const auto& [text, n] : frequent(rep.messages[static_cast<std::size_t>(s)]))
      msgs.push_back({{"message", printable(text, 160)}, {"count", n}});
    failures.push_back({{"status", name},
                        {"count", rep.by_status[static_cast<std::size_t>(s)]},
                        {"messages", msgs}});
  }
  const TimingShares timing = timing_shares(rep.timed_runs, rep.raced);
  doc["evaluations"] = {{"measured", rep.measured},
                        {"cache_hits", rep.cache_hits},
                        {"migrants", rep.migrants},
                        {"by_status", by_status},
                        {"timing",
                         {{"runs", timing.runs},
                          {"full", timing.full},
                          {"raced", timing.raced},
                          {"settled", timing.settled},
                          {"other", timing.other}}}};
  doc["failures"] = failures;
  Json topj = Json::array();
  for (const Fast& f : best_k) {
    topj.push_back({{"key", f.key},
                    {"median_ms", f.median_ms},
                    {"gcells_per_s", number(cells / (f.median_ms * 1e6))},
                    {"rank", f.rank},
                    {"setting", setting_json(f.setting)}});
  }
  doc["top"] = topj;
  if (const auto result = reader.result()) {
    Json r = {{"stop_reason", printable(result->stop_reason, 40)},
              {"generations", result->generations},
              {"evaluations", result->evaluations},
              {"clock_s", result->wall_s}};
    if (!result->best_key.empty()) {
      const Versus v = versus(rep, result->median_ms, cells);
      r["best"] = {
          {"key", printable(result->best_key, 200)},      {"median_ms", number(result->median_ms)},
          {"gcells_per_s", number(result->gcells_per_s)}, {"rank", result->best_rank},
          {"setting", setting_json(result->best)},        {"vs_naive", number(v.speedup)},
          {"copy_roofline_ms", number(v.roof_ms)},        {"copy_share", number(v.copy_share)}};
    }
    doc["result"] = r;
  } else {
    doc["result"] = nullptr;
  }
  return doc;
}

// The text report. Every string the trace holds is printed through printable() (escaped,
// bounded): a trace may come from anyone (issue 50).
void print_text(const TraceReader& reader, const Report& rep, const std::vector<Fast>& best_k,
                double cells) {
  const RunInfo info = reader.run_info();
  const StencilInfo stencil = reader.stencil();
  fmt::print("{} {} (schema {}), created {} by `{}`, seed {}\n", reader.format(),
             display_path(reader.path()), reader.version(), printable(info.created, 40),
             printable(info.command, 300), info.seed);
  fmt::print("stencil {} ({}-D, order {}, {} points)\n", stencil.name, stencil.dims, stencil.order,
             stencil.offsets.size());
  for (const auto& env : reader.environment()) {
    fmt::print("rank {}: {} on {}", env.rank, printable(env.gpu_name, 80), printable(env.host, 80));
    if (!env.node.empty() && env.node != env.host)
      fmt::print(" (node {})", printable(env.node, 80));
    if (!env.gpu_device.empty() && rep.replayed.empty())
      fmt::print(", GPU {}", printable(env.gpu_device, 40));
    if (env.node_ranks > 0)
      fmt::print(", node rank {} of {}", env.node_rank, env.node_ranks);
    // A replayed run compiles nothing: its CPUs are the share a CUDA worker would take there.
    if (!env.compile_cpus.empty() && rep.replayed.empty())
      fmt::print(", NVRTC {} threads on CPUs {}", env.compile_threads,
                 printable(env.compile_cpus, 40));
    else if (!env.compile_cpus.empty())
      fmt::print(", CPU share {}", printable(env.compile_cpus, 40));
    fmt::print("\n");
  }
  if (!rep.replayed.empty())
    fmt::print("{} (times measured on {})\n", rep.replayed, rep.gpu);

  if (!rep.rows.empty()) {
    fmt::print("\n gen ranks  evals cached   best ms    GCells/s  mean MCR  max wait s  clock s\n");
    for (const auto& [g, r] : rep.rows) {
      fmt::print("{:4d} {:5d} {:6d} {:6d} {:9.5f} {:11.2f} {:9.3f} {:11.4f} {:8.1f}\n", g, r.ranks,
                 r.evaluations, r.cache_hits, std::isfinite(r.best_ms) ? r.best_ms : std::nan(""),
                 cells / (r.best_ms * 1e6), r.ranks ? r.mcr_sum / r.ranks : std::nan(""),
                 r.wait_max, r.wall_max);
    }
  }

  if (!rep.ranks.empty()) {
    fmt::print(
        "\n rank  gens restarts measured  filled  compile s   wait s  clock s  waiting  GPU busy  "
        "threads busy  queue\n");
    for (const auto& [rank, t] : rep.ranks) {
      // The waits are this host's seconds: a share of a simulated clock would mix two clocks.
      const std::string waiting =
          !rep.replayed.empty()
              ? std::string("-")
              : fmt::format("{:.0f}%", t.clock_s > 0 ? 100 * t.wait_s / t.clock_s : 0.0);
      fmt::print(
          "{:5d} {:5d} {:8d} {:8d} {:7d} {:10.1f} {:8.1f} {:8.1f} {:>8} {:8.0f}% {:3d} {:4.0f}% "
          "{:6.1f}\n",
          rank, t.generations, t.restarts, t.measured, t.fills, t.compile_s, t.wait_s, t.clock_s,
          waiting, 100 * t.gpu_busy(), t.threads, 100 * t.threads_busy(), t.queue_depth());
    }
    if (!rep.replayed.empty())
      fmt::print(
          "(replayed: wait s are this host's seconds in the ring and the stop vote; the simulated\n"
          " clock does not advance while a rank waits, so no share of it is given)\n");
    for (const auto& [rank, t] : rep.ranks) {
      if (t.gpu_spans.empty())
        continue;
      std::string parts, queue;
      for (const double b : t.gpu_busy_by_part())
        parts += fmt::format(" {:3.0f}", 100 * b);
      for (const double q : t.queue_by_part())
        queue += fmt::format(" {:3.0f}", q);
      fmt::print("rank {} GPU busy by tenth of its clock (%):{}\n", rank, parts);
      fmt::print("rank {} settings queued by tenth (mean): {}\n", rank, queue);
    }
  }

  fmt::print("\nevaluations: {} measured, {} cache hits, {} migrants\n", rep.measured,
             rep.cache_hits, rep.migrants);
  for (int s = 0; s < kStatusCount; ++s) {
    const auto i = static_cast<std::size_t>(s);
    fmt::print("  {:<14} {:8d}\n", status_name(static_cast<Status>(s)), rep.by_status[i]);
    if (s == static_cast<int>(Status::ok))
      continue;
    for (const auto& [text, n] : frequent(rep.messages[i]))
      fmt::print("      {:6d} x {}\n", n, printable(text, 160));
  }
  if (const TimingShares t = timing_shares(rep.timed_runs, rep.raced); t.runs > 0) {
    fmt::print("timed: {} with all {} runs, {} raced, {} settled ({} runs)", t.full, t.runs,
               t.raced, t.settled, kSettleRuns);
    if (t.other > 0)
      fmt::print(", {} with other counts", t.other);
    fmt::print("\n");
  }

  if (!best_k.empty()) {
    fmt::print("\ntop {} distinct verified settings:\n", best_k.size());
    for (std::size_t i = 0; i < best_k.size(); ++i) {
      fmt::print("{:4d}. {:.5f} ms/step ({:.2f} GCells/s), rank {}: {}\n", i + 1,
                 best_k[i].median_ms, cells / (best_k[i].median_ms * 1e6), best_k[i].rank,
                 short_setting(best_k[i].setting));
    }
  }

  if (const auto result = reader.result()) {
    fmt::print(
        "\nresult: stop {} after {} generations (plus the initial population, generation 0), "
        "{} evaluations, {:.1f} s\n",
        printable(result->stop_reason, 40), result->generations, result->evaluations,
        result->wall_s);
    if (!result->best_key.empty()) {
      fmt::print("best: {:.5f} ms/step ({:.2f} GCells/s) on rank {}\n  {}\n  key: {}\n",
                 result->median_ms, result->gcells_per_s, result->best_rank,
                 short_setting(result->best), printable(result->best_key, 200));
      // Against the naive kernel (its setting's time in this trace) and the copy roofline.
      const Versus v = versus(rep, result->median_ms, cells);
      const std::string vs_naive =
          std::isnan(rep.naive_ms)
              ? rep.naive_missing
              : fmt::format("{:.2f}x (naive {:.5f} ms)", v.speedup, rep.naive_ms);
      const std::string vs_copy =
          std::isnan(v.roof_ms)
              ? std::string("unknown (no copy bandwidth recorded)")
              : fmt::format("{:.0f}% (copy {:.0f} GB/s)", 100 * v.copy_share, rep.bandwidth_gbs);
      fmt::print("  vs naive: {}; copy roofline: {}\n", vs_naive, vs_copy);
    }
  } else if (!rep.fastest.empty()) {
    const Fast f = top(rep, 1).front();
    fmt::print("\nno result recorded ({}); best measured: {:.5f} ms/step on rank {}\n  {}\n",
               reader.is_dataset() ? "a dataset" : "interrupted or still running", f.median_ms,
               f.rank, f.key);
  } else {
    fmt::print("\nno verified setting recorded\n");
  }
}

}  // namespace

int report_command(const Args& args) {
  const ParsedArgs parsed = parse_args("report", args, {"--top"}, {"--json"});
  if (parsed.help) {
    return print_help(kHelp);
  }
  expect_positional(parsed, 1, kUsage);
  std::size_t k = 0;
  if (const auto t = parsed.option("--top")) {
    k = static_cast<std::size_t>(parse_unsigned("--top", *t));
    if (k == 0)
      throw InputError("option --top of `isletune report` expects K >= 1, got '" + *t + "'.");
  }
  const TraceReader reader(parsed.positional[0]);
  const Report rep = gather(reader);
  const auto result = reader.result();
  // Cells per step (the grid is in the config): GCells/s of any time.
  double cells = std::nan("");
  if (const std::string yaml = reader.config_yaml(); !yaml.empty()) {
    try {
      cells = static_cast<double>(
          parse_config(yaml, reader.path().string() + ":/config", reader.path().parent_path())
              .grid.cells());
    } catch (const InputError&) {
      // a config this isletune cannot read (another version): GCells/s from the result
    }
  }
  if (std::isnan(cells) && result && result->median_ms > 0 && result->gcells_per_s > 0)
    cells = result->gcells_per_s * result->median_ms * 1e6;
  const std::vector<Fast> best_k = top(rep, k);
  if (parsed.has("--json")) {
    std::fputs(report_json(reader, rep, best_k, cells).dump(1).c_str(), stdout);
    std::fputs("\n", stdout);
  } else {
    print_text(reader, rep, best_k, cells);
  }
  return 0;
}

}  // namespace isletune::cli
