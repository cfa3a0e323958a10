// `isletune export DIR|FILE [--best -o best.cu] [--kernel-tuner-cache cache.json]`: the best
// verified kernel of a run (or of a measured dataset) as a standalone .cu with a main that
// verifies it against a naive kernel and times it (builds with plain
// `nvcc -arch=sm_90 -O3 -o best best.cu`), and/or every measured evaluation as a Kernel
// Tuner cache file (docs/analysis.md "Kernel Tuner"), written with nlohmann/json; this is
// the project's only Kernel Tuner writer (`isletune-analyze export-kt` runs it).
// Needs no CUDA toolkit: the code generator (isletune_cuda) is plain C++.
#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "cli/args.hpp"
#include "cli/commands.hpp"
#include "common/error.hpp"
#include "common/text.hpp"
#include "config/config.hpp"
#include "eval/cuda/codegen.hpp"
#include "eval/cuda/standalone.hpp"
#include "eval/replay/replay_evaluator.hpp"
#include "run/setup.hpp"
#include "trace/reader.hpp"
#include "trace/run_directory.hpp"

namespace isletune::cli {
namespace {

using Json = nlohmann::ordered_json;

constexpr const char* kUsage =
    "isletune export DIR|FILE [--best -o best.cu] [--kernel-tuner-cache cache.json] "
    "[--overwrite]";

constexpr const char* kHelp =
    "usage: isletune export DIR|FILE [--best -o best.cu] [--kernel-tuner-cache cache.json]\n"
    "                       [--overwrite]\n"
    "\n"
    "  --best -o FILE   writes the fastest verified kernel of a run directory (its /result,\n"
    "                   else its fastest ok evaluation) or of a dataset as a standalone CUDA\n"
    "                   file: the kernel, a naive reference kernel and a main that initialises\n"
    "                   random inputs, verifies the kernel (48 and 7 steps, relative L2 <=\n"
    "                   1e-12, max relative <= 1e-10) and prints the time per step and\n"
    "                   GCells/s. Build it with: nvcc -arch=sm_90 -O3 -o best best.cu\n"
    "  --kernel-tuner-cache FILE\n"
    "                   writes every measured evaluation (cache hits and migrants left out)\n"
    "                   as a Kernel Tuner cache file (JSON), one entry per distinct setting,\n"
    "                   named after the recorded GPU, as Kernel Tuner expects (the file\n"
    "                   `isletune-analyze export-kt` writes: it runs this exporter).\n"
    "  --overwrite      replaces an existing output file (without it an existing file is\n"
    "                   refused); a symbolic link is refused either way.\n"
    "At least one of the two; both may be given.\n";

struct Best {
  Setting setting;
  double median_ms = std::numeric_limits<double>::infinity();
  bool found = false;
};

// The run's result, else the fastest ok evaluation over every rank.
Best find_best(const TraceReader& reader) {
  Best best;
  if (const auto r = reader.result(); r && !r->best_key.empty()) {
    best.setting = r->best;
    best.median_ms = r->median_ms;
    best.found = true;
    return best;
  }
  for (int rank : reader.ranks()) {
    for (const EvaluationRecord& e : reader.evaluations(rank)) {
      if (e.measurement.ok() && e.measurement.median_ms < best.median_ms) {
        best.setting = e.setting;
        best.median_ms = e.measurement.median_ms;
        best.found = true;
      }
    }
  }
  return best;
}

// The configuration recorded in the trace (its grid is the kernels' grid).
Config recorded_config(const TraceReader& reader, const std::filesystem::path& in) {
  const std::string yaml = reader.config_yaml();
  if (yaml.empty()) {
    throw InputError(in.string() + ": has no /config, so the grid of its kernels is unknown.");
  }
  return parse_config(yaml, in.string() + ":/config", in.parent_path());
}

// A run that replayed a dataset of another problem (before replay refused one) holds
// times that are not its kernel's: --best must not write them into the kernel's header.
void refuse_replayed_other_problem(const Config& config, const Stencil& stencil,
                                   const std::filesystem::path& in) {
  if (config.evaluator.backend != Backend::replay || config.evaluator.dataset.empty())
    return;
  std::error_code ec;
  if (!std::filesystem::exists(config.evaluator.dataset, ec))
    return;
  const TraceReader dataset(config.evaluator.dataset);
  if (const auto why = run::replay_problem_mismatch(config, stencil, dataset)) {
    throw InputError(in.string() + ": its times were replayed from " +
                     display_path(config.evaluator.dataset) + ", which " + *why +
                     "; --best exports no kernel with another problem's time.");
  }
}

// The replay dataset a run or dataset was recorded from ("" when none or unknown).
std::filesystem::path recorded_dataset(const TraceReader& reader) {
  try {
    const std::string yaml = reader.config_yaml();
    if (yaml.empty())
      return {};
    const Config config = parse_config(yaml, reader.path().string(), reader.path().parent_path());
    return config.evaluator.backend == Backend::replay ? config.evaluator.dataset
                                                       : std::filesystem::path();
  } catch (const InputError&) {
    return {};  // an unreadable /config is reported by the export itself
  }
}

// Writes text to the output `path` of `option` as a new file (run_directory.hpp:
// clear_output, write_new_file: never through a link); InputError when it cannot.
void write_file(const std::string& option, const std::string& path, const std::string& text,
                bool overwrite) {
  clear_output(option, path, overwrite);
  if (const int error = write_new_file(path, text); error != 0) {
    throw InputError("cannot write " + display_path(path) + " (" + std::strerror(error) +
                     "); nothing was written.");
  }
}

// --best -o FILE: the standalone .cu of the fastest verified kernel.
void export_best(const TraceReader& reader, const std::filesystem::path& in, const std::string& out,
                 bool overwrite) {
  const StencilInfo si = reader.stencil();
  const Stencil stencil = [&] {
    try {
      return Stencil::make(si.name, si.dims, si.offsets, si.coefficients);
    } catch (const InputError& e) {
      std::string why = e.what();
      if (why.ends_with("."))
        why.pop_back();
      throw InputError(in.string() + ": its /stencil is not a valid stencil (" + why + ").");
    }
  }();
  const Config config = recorded_config(reader, in);
  refuse_replayed_other_problem(config, stencil, in);
  const Best best = find_best(reader);
  if (!best.found) {
    throw InputError(in.string() +
                     ": no evaluation passed verification (status ok): nothing to export.");
  }
  if (const auto why = cuda::unsupported_reason(stencil, config.grid, best.setting)) {
    throw InputError(in.string() +
                     ": the best setting cannot be generated by this isletune: " + *why + ".");
  }
  const cuda::KernelSource kernel =
      cuda::generate_export_kernel(stencil, config.grid, best.setting);
  cuda::StandaloneInfo info;
  info.setting_key = canonical_key(best.setting);
  info.recorded_ms = best.median_ms;
  const auto env = reader.environment();
  if (!env.empty())
    info.recorded_on = printable(env.front().gpu_name, 80);  // into a comment: escaped
  if (const std::filesystem::path dataset = recorded_dataset(reader); !dataset.empty())
    info.replayed = printable(replayed_label(dataset.string()), 300);
  write_file("-o", out, cuda::write_standalone_cu(stencil, config.grid, kernel, info), overwrite);
  std::printf(
      "wrote %s: %s %dx%dx%d, %s, recorded %.4g ms per step (%.1f GCells/s)\n"
      "build: nvcc -arch=sm_90 -O3 -o best %s\n",
      out.c_str(), stencil.name().c_str(), config.grid.nx, config.grid.ny, config.grid.nz,
      info.setting_key.c_str(), best.median_ms, gcells_per_s(config.grid, best.median_ms),
      out.c_str());
}

// ---- Kernel Tuner cache: the one writer (`isletune-analyze export-kt` runs this) ----

// Kernel Tuner's error class for a failed isletune status.
const char* kt_error(Status s) {
  switch (s) {
    case Status::invalid:
      return "InvalidConfig";
    case Status::compile_error:
      return "CompilationFailedConfig";
    default:
      return "RuntimeFailedConfig";
  }
}

using Micros = std::chrono::sys_time<std::chrono::microseconds>;

// An ISO 8601 time "YYYY-MM-DDTHH:MM:SS[.ffffff][Z|±HH:MM]" as a UTC instant; nullopt when
// it does not parse.
std::optional<Micros> parse_iso(const std::string& text) {
  int y, mo, d, h, mi, s, n = 0;
  if (std::sscanf(text.c_str(), "%4d-%2d-%2d%*1[T ]%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &s, &n) <
          6 ||
      n == 0) {
    return std::nullopt;
  }
  std::size_t at = static_cast<std::size_t>(n);
  long long frac_us = 0;
  if (at < text.size() && text[at] == '.') {
    long long scale = 100000;
    for (++at; at < text.size() && std::isdigit(static_cast<unsigned char>(text[at])); ++at) {
      frac_us += (text[at] - '0') * scale;
      scale /= 10;
    }
  }
  int offset_min = 0;
  if (const std::string rest = text.substr(at); !rest.empty() && rest != "Z") {
    int oh, om;
    char sign;
    if (std::sscanf(rest.c_str(), "%c%2d:%2d", &sign, &oh, &om) != 3 ||
        (sign != '+' && sign != '-')) {
      return std::nullopt;
    }
    offset_min = (sign == '-' ? -1 : 1) * (oh * 60 + om);
  }
  using namespace std::chrono;
  const year_month_day ymd{year{y}, month{static_cast<unsigned>(mo)},
                           day{static_cast<unsigned>(d)}};
  if (!ymd.ok())
    return std::nullopt;
  return sys_days(ymd) + hours(h) + minutes(mi - offset_min) + seconds(s) + microseconds(frac_us);
}

// A timestamp as Kernel Tuner writes its own (`str(datetime.now(timezone.utc))`):
// "YYYY-MM-DD HH:MM:SS.ffffff+00:00".
std::string kt_timestamp(Micros t) {
  const auto whole = std::chrono::floor<std::chrono::seconds>(t);
  return fmt::format("{:%Y-%m-%d %H:%M:%S}.{:06d}+00:00", whole, (t - whole).count());
}

// A usable measurement: status ok with a positive finite median.
bool kt_ok(const Measurement& m) {
  return m.status == Status::ok && std::isfinite(m.median_ms) && m.median_ms > 0;
}

// A JSON number; non-finite values, which JSON cannot hold, become 0.
double finite(double x) {
  return std::isfinite(x) ? x : 0.0;
}

// One cache entry: the parameters, the time (or Kernel Tuner's error class) and the costs.
Json kt_entry(const EvaluationRecord& e, Micros base) {
  const Measurement& m = e.measurement;
  Json entry = Json::object();
  for (std::size_t i = 0; i < kParamCount; ++i)
    entry[std::string(param_name(param_at(i)))] = e.setting.values[i];
  if (kt_ok(m)) {
    entry["time"] = m.median_ms;
    Json times = Json::array();
    for (double t : m.times_ms)
      times.push_back(finite(t));
    entry["times"] = times;
  } else {
    const std::string error = kt_error(m.status == Status::ok ? Status::crashed : m.status);
    entry["time"] = error;
    entry["__error__"] = error;
  }
  entry["compile_time"] = finite(m.compile_ms);
  entry["verification_time"] = finite(m.verify_ms);
  // Kernel Tuner's benchmark_time is the wall time of benchmarking one configuration
  // (warm-up and timed runs), not the sum of the per-step times: isletune's run_ms.
  entry["benchmark_time"] = finite(m.run_ms);
  entry["strategy_time"] = 0;
  entry["framework_time"] = 0;
  const auto offset = std::chrono::microseconds(
      std::llround(std::isfinite(e.wall_s) && e.wall_s > 0 ? e.wall_s * 1e6 : 0.0));
  entry["timestamp"] = kt_timestamp(base + offset);
  return entry;
}

// The Kernel Tuner cache document of a trace or dataset (Kernel Tuner's `store_cache`
// layout): one entry per distinct measured setting (cache hits and migrants left out),
// keyed by its values joined with ","; a setting measured more than once keeps its fastest
// ok measurement, else its first failure (rows ordered by evaluator clock, rank, eval_id).
Json kt_document(const TraceReader& reader, const std::filesystem::path& in) {
  std::map<int, std::vector<EvaluationRecord>> by_rank;
  std::vector<std::pair<int, const EvaluationRecord*>> rows;
  for (int rank : reader.ranks())
    by_rank[rank] = reader.evaluations(rank);
  for (const auto& [rank, evals] : by_rank) {
    for (const EvaluationRecord& e : evals) {
      if (!e.cached && !e.migrant)
        rows.emplace_back(rank, &e);
    }
  }
  if (rows.empty())
    throw InputError(in.string() +
                     ": holds no measured evaluations: no Kernel Tuner cache to write.");
  std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
    if (a.second->wall_s != b.second->wall_s)
      return a.second->wall_s < b.second->wall_s;
    if (a.first != b.first)
      return a.first < b.first;
    return a.second->eval_id < b.second->eval_id;
  });
  // The parameters of the cache: those the trace's build recorded (/space/parameters) that this
  // build knows, in this build's order, so a trace written before a family appended its own
  // keeps its keys; every parameter when the trace lists none.
  std::vector<std::size_t> kept;
  {
    std::set<std::size_t> recorded;
    for (const auto& p : reader.space_parameters()) {
      if (const auto known = param_from_name(p.name))
        recorded.insert(index_of(*known));
    }
    for (std::size_t i = 0; i < kParamCount; ++i) {
      if (recorded.empty() || recorded.count(i) != 0)
        kept.push_back(i);
    }
  }
  std::vector<std::string> keys;  // first-seen order
  std::unordered_map<std::string, const EvaluationRecord*> chosen;
  for (const auto& [rank, e] : rows) {
    std::vector<int> values;
    for (const std::size_t i : kept)
      values.push_back(e->setting.values[i]);
    const std::string key = fmt::format("{}", fmt::join(values, ","));
    const auto it = chosen.find(key);
    if (it == chosen.end()) {
      keys.push_back(key);
      chosen.emplace(key, e);
    } else if (kt_ok(e->measurement) &&
               (!kt_ok(it->second->measurement) ||
                e->measurement.median_ms < it->second->measurement.median_ms)) {
      it->second = e;
    }
  }

  const Micros base = parse_iso(reader.run_info().created)
                          .value_or(std::chrono::time_point_cast<std::chrono::microseconds>(
                              std::chrono::system_clock::now()));
  std::string device = "unknown";
  for (const EnvironmentInfo& e : reader.environment()) {
    if (e.rank == by_rank.begin()->first && !e.gpu_name.empty())
      device = recorded_gpu_name(e.gpu_name);
  }
  const StencilInfo stencil = reader.stencil();
  std::vector<int> problem_size;
  if (!reader.config_yaml().empty()) {
    const Config config = recorded_config(reader, in);
    problem_size = {config.grid.nx, config.grid.ny};
    if (stencil.dims == 3)
      problem_size.push_back(config.grid.nz);
  }
  // Each parameter's values: those the cached settings take. Kernel Tuner builds its
  // search space as the product of these lists (restricted to the recorded settings in
  // simulation mode), so no list is longer than the cache needs.
  std::array<std::set<int>, kParamCount> seen;
  for (const auto& [key, e] : chosen) {
    for (const std::size_t i : kept)
      seen[i].insert(e->setting.values[i]);
  }

  Json doc;
  doc["schema_version"] = "1.0.0";
  doc["device_name"] = device;
  doc["kernel_name"] = stencil.name.empty() ? "isletune_stencil" : stencil.name;
  doc["problem_size"] = problem_size;
  Json names = Json::array(), tune = Json::object();
  for (const std::size_t i : kept) {
    const std::string name(param_name(param_at(i)));
    names.push_back(name);
    tune[name] = std::vector<int>(seen[i].begin(), seen[i].end());
  }
  doc["tune_params_keys"] = names;
  doc["tune_params"] = tune;
  doc["objective"] = "time";
  Json cache = Json::object();
  for (const std::string& key : keys)
    cache[key] = kt_entry(*chosen.at(key), base);
  doc["cache"] = cache;
  return doc;
}

// --kernel-tuner-cache FILE.
void export_kernel_tuner_cache(const TraceReader& reader, const std::filesystem::path& in,
                               const std::string& out, bool overwrite) {
  const Json doc = kt_document(reader, in);
  write_file("--kernel-tuner-cache", out, doc.dump(1) + "\n", overwrite);
  std::size_t ok = 0;
  for (const auto& [key, entry] : doc["cache"].items())
    ok += entry["time"].is_number() ? 1 : 0;
  fmt::print("wrote {}: Kernel Tuner cache, {} entries ({} ok, {} failed), device {}\n", out,
             doc["cache"].size(), ok, doc["cache"].size() - ok,
             printable(doc["device_name"].get<std::string>(), 80));
}

}  // namespace

int export_command(const Args& args) {
  const ParsedArgs parsed =
      parse_args("export", args, {"-o", "--kernel-tuner-cache"}, {"--best", "--overwrite"});
  if (parsed.help) {
    return print_help(kHelp);
  }
  expect_positional(parsed, 1, kUsage);
  const bool best = parsed.has("--best");
  const auto out = parsed.option("-o");
  const auto kt = parsed.option("--kernel-tuner-cache");
  if (best != out.has_value()) {
    throw InputError(
        "isletune export: --best and -o FILE go together (usage: " + std::string(kUsage) + ").");
  }
  if (!best && !kt) {
    throw InputError(
        "isletune export needs --best -o FILE, --kernel-tuner-cache FILE or both "
        "(usage: " +
        std::string(kUsage) + ").");
  }
  const std::filesystem::path in = parsed.positional[0];
  const TraceReader reader(in);
  // Neither output may replace what export reads: the trace or dataset, a rank file, the
  // run's replay dataset; nor may the two outputs be one file.
  std::vector<CommandInput> inputs;
  for (const auto& f : trace_input_files(in))
    inputs.push_back(
        {f, f == reader.path() ? "the trace it exports from" : "a rank file it reads"});
  if (const auto dataset = recorded_dataset(reader); !dataset.empty()) {
    for (const auto& f : trace_input_files(dataset))
      inputs.push_back({f, "the run's replay dataset"});
  }
  if (out)
    refuse_overwriting_inputs("export", *out, inputs);
  if (kt) {
    refuse_overwriting_inputs("export", *kt, inputs);
    if (out)
      refuse_overwriting_inputs("export", *kt, {{*out, "also the --best output"}});
  }
  // An existing output needs --overwrite; a link is never written through.
  const bool overwrite = parsed.has("--overwrite");
  if (out)
    refuse_unsafe_output("-o", *out, overwrite);
  if (kt)
    refuse_unsafe_output("--kernel-tuner-cache", *kt, overwrite);
  if (kt)
    export_kernel_tuner_cache(reader, in, *kt, overwrite);
  if (best)
    export_best(reader, in, *out, overwrite);
  return 0;
}

}  // namespace isletune::cli
