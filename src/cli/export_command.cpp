// `isletune export DIR|FILE [--best -o best.cu] [--kernel-tuner-cache cache.json]`: the best
// verified kernel of a run (or of a measured dataset) as a standalone .cu with a main that
// verifies it against a naive kernel and times it (builds with plain
// `nvcc -arch=sm_90 -O3 -o best best.cu`), and/or every measured evaluation as a Kernel
// Tuner cache file (ARCHITECTURE §9), in the format of analysis/isletune_analysis/kt.py.
// Needs no CUDA toolkit: the code generator (isletune_cuda) is plain C++.
#include <algorithm>
#include <array>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include "cli/args.hpp"
#include "cli/commands.hpp"
#include "common/error.hpp"
#include "common/text.hpp"
#include "config/config.hpp"
#include "eval/cuda/codegen.hpp"
#include "eval/cuda/standalone.hpp"
#include "run/setup.hpp"
#include "trace/reader.hpp"
#include "trace/run_directory.hpp"

namespace isletune::cli {
namespace {

constexpr const char* kUsage =
    "isletune export DIR|FILE [--best -o best.cu] [--kernel-tuner-cache cache.json]";

constexpr const char* kHelp =
    "usage: isletune export DIR|FILE [--best -o best.cu] [--kernel-tuner-cache cache.json]\n"
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
    "                   the same file `isletune-analyze export-kt` writes.\n"
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

// Writes text to a file; InputError when it cannot.
void write_file(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
  f.close();
  if (!f)
    throw InputError("cannot write " + path + ".");
}

// --best -o FILE: the standalone .cu of the fastest verified kernel.
void export_best(const TraceReader& reader, const std::filesystem::path& in,
                 const std::string& out) {
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
  const cuda::KernelSource kernel = cuda::generate_kernel(stencil, config.grid, best.setting);
  cuda::StandaloneInfo info;
  info.setting_key = canonical_key(best.setting);
  info.recorded_ms = best.median_ms;
  const auto env = reader.environment();
  if (!env.empty())
    info.recorded_on = env.front().gpu_name;
  write_file(out, cuda::write_standalone_cu(stencil, config.grid, kernel, info));
  std::printf(
      "wrote %s: %s %dx%dx%d, %s, recorded %.4g ms per step (%.1f GCells/s)\n"
      "build: nvcc -arch=sm_90 -O3 -o best %s\n",
      out.c_str(), stencil.name().c_str(), config.grid.nx, config.grid.ny, config.grid.nz,
      info.setting_key.c_str(), best.median_ms, gcells_per_s(config.grid, best.median_ms),
      out.c_str());
}

// ---- Kernel Tuner cache (kept consistent with analysis/isletune_analysis/kt.py) ----

// A JSON string literal: quotes, backslashes and control characters escaped; other bytes
// (UTF-8) as they are.
std::string json_string(std::string_view s) {
  std::string out = "\"";
  for (const char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned char>(c));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

// A JSON number with full precision (shortest text that reads back as the same double);
// non-finite values, which JSON cannot hold, become 0 as kt.py's `_finite` makes them.
std::string json_number(double x) {
  if (!std::isfinite(x))
    x = 0.0;
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, x);
  std::string text(buf, r.ptr);
  if (text.find_first_of(".e") == std::string::npos)
    text += ".0";  // stays a float for readers that tell 1 from 1.0
  return text;
}

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

// Microseconds since the Unix epoch and the UTC offset (minutes) of an ISO 8601 time
// "YYYY-MM-DDTHH:MM:SS[.ffffff][Z|±HH:MM]"; nullopt when it does not parse.
struct Instant {
  long long us = 0;
  int offset_min = 0;
};
std::optional<Instant> parse_iso(const std::string& text) {
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
  int offset = 0;
  const std::string rest = text.substr(at);
  if (rest == "Z" || rest.empty()) {
    offset = 0;
  } else {
    int oh, om;
    char sign;
    if (std::sscanf(rest.c_str(), "%c%2d:%2d", &sign, &oh, &om) != 3 ||
        (sign != '+' && sign != '-')) {
      return std::nullopt;
    }
    offset = (sign == '-' ? -1 : 1) * (oh * 60 + om);
  }
  using namespace std::chrono;
  const year_month_day ymd{year{y}, month{static_cast<unsigned>(mo)},
                           day{static_cast<unsigned>(d)}};
  if (!ymd.ok())
    return std::nullopt;
  const long long days = sys_days(ymd).time_since_epoch().count();
  return Instant{((days * 24 + h) * 60 + mi) * 60'000'000LL + s * 1'000'000LL + frac_us, offset};
}

// Python's str() of an aware datetime: "YYYY-MM-DD HH:MM:SS[.ffffff]+HH:MM" (local time of
// the offset; microseconds only when non-zero).
std::string python_time(const Instant& t) {
  using namespace std::chrono;
  const long long us = t.us;
  const long long day_us = 86'400'000'000LL;
  long long days = us / day_us, rem = us % day_us;
  if (rem < 0) {
    rem += day_us;
    --days;
  }
  const year_month_day ymd{sys_days{std::chrono::days{days}}};
  const long long secs = rem / 1'000'000, micro = rem % 1'000'000;
  char buf[80];
  int n = std::snprintf(buf, sizeof buf, "%04d-%02u-%02u %02lld:%02lld:%02lld",
                        static_cast<int>(ymd.year()), static_cast<unsigned>(ymd.month()),
                        static_cast<unsigned>(ymd.day()), secs / 3600, secs / 60 % 60, secs % 60);
  if (micro != 0)
    n += std::snprintf(buf + n, sizeof buf - n, ".%06lld", micro);
  const int off = std::abs(t.offset_min);
  std::snprintf(buf + n, sizeof buf - n, "%c%02d:%02d", t.offset_min < 0 ? '-' : '+', off / 60,
                off % 60);
  return buf;
}

// Microseconds of Python's `timedelta(seconds=x)`: whole seconds and whole microseconds
// exactly, the remaining fraction of a microsecond rounded half to even.
long long python_microseconds(double x) {
  double whole_s = 0, whole_us = 0;
  const double frac_s = std::modf(x, &whole_s);
  const double left = std::modf(frac_s * 1e6, &whole_us);
  long long us = static_cast<long long>(whole_s) * 1'000'000 + static_cast<long long>(whole_us);
  double rounded = std::round(left);
  if (std::fabs(rounded - left) == 0.5) {  // a tie: to the even total
    const double lo = std::floor(left), hi = std::ceil(left);
    rounded = (us + static_cast<long long>(lo)) % 2 == 0 ? lo : hi;
  }
  return us + static_cast<long long>(rounded);
}

// One evaluation row with the rank it came from.
struct KtRow {
  int rank = 0;
  const EvaluationRecord* e = nullptr;
};

// kt.py `ok_mask`: status ok with a usable median.
bool kt_ok(const Measurement& m) {
  return m.status == Status::ok && std::isfinite(m.median_ms) && m.median_ms > 0;
}

// The JSON text of one cache entry (kt.py `cache_document`, one row).
std::string kt_entry(const EvaluationRecord& e, bool good, const Instant& base,
                     const std::string& indent) {
  const Measurement& m = e.measurement;
  std::ostringstream o;
  const std::string in = indent + " ";
  o << "{\n";
  for (std::size_t i = 0; i < kParamCount; ++i)
    o << in << json_string(param_name(param_at(i))) << ": " << e.setting.values[i] << ",\n";
  if (good) {
    o << in << "\"time\": " << json_number(m.median_ms) << ",\n" << in << "\"times\": [";
    for (std::size_t i = 0; i < m.times_ms.size(); ++i)
      o << (i ? ",\n" : "\n") << in << " " << json_number(m.times_ms[i]);
    o << (m.times_ms.empty() ? "" : "\n" + in) << "],\n";
  } else {
    const std::string error =
        json_string(kt_error(m.status == Status::ok ? Status::crashed : m.status));
    o << in << "\"time\": " << error << ",\n" << in << "\"__error__\": " << error << ",\n";
  }
  // Kernel Tuner's benchmark_time is the wall time of benchmarking one configuration
  // (warm-up and timed runs), not the sum of the per-step times: isletune's run_ms.
  const double benchmark = m.run_ms;
  Instant stamp = base;
  stamp.us += python_microseconds(std::isfinite(e.wall_s) ? e.wall_s : 0.0);
  o << in << "\"compile_time\": " << json_number(m.compile_ms) << ",\n"
    << in << "\"verification_time\": " << json_number(m.verify_ms) << ",\n"
    << in << "\"benchmark_time\": " << json_number(benchmark) << ",\n"
    << in << "\"strategy_time\": 0,\n"
    << in << "\"framework_time\": 0,\n"
    << in << "\"timestamp\": " << json_string(python_time(stamp)) << "\n"
    << indent << "}";
  return o.str();
}

// The Kernel Tuner cache document of a trace or dataset (kt.py `cache_document`): one
// entry per distinct measured setting, keyed by its values joined with ","; a setting
// measured more than once keeps its fastest ok measurement, else its first failure.
std::string kt_document(const TraceReader& reader, const std::filesystem::path& in, int& entries,
                        int& ok_entries) {
  std::map<int, std::vector<EvaluationRecord>> by_rank;
  std::vector<KtRow> rows;
  std::array<std::set<int>, kParamCount> seen;
  for (int rank : reader.ranks())
    by_rank[rank] = reader.evaluations(rank);
  for (const auto& [rank, evals] : by_rank) {
    for (const EvaluationRecord& e : evals) {
      for (std::size_t i = 0; i < kParamCount; ++i)
        seen[i].insert(e.setting.values[i]);
      if (!e.cached && !e.migrant)
        rows.push_back({rank, &e});
    }
  }
  if (std::all_of(by_rank.begin(), by_rank.end(), [](const auto& r) { return r.second.empty(); })) {
    throw InputError(in.string() + ": holds no evaluations: no Kernel Tuner cache to write.");
  }
  // kt.py orders by wall_s, then rank, then eval_id (numpy lexsort, stable).
  std::stable_sort(rows.begin(), rows.end(), [](const KtRow& a, const KtRow& b) {
    if (a.e->wall_s != b.e->wall_s)
      return a.e->wall_s < b.e->wall_s;
    if (a.rank != b.rank)
      return a.rank < b.rank;
    return a.e->eval_id < b.e->eval_id;
  });

  // Keys in first-seen order; each keeps the row chosen for it.
  std::vector<std::string> keys;
  std::unordered_map<std::string, const EvaluationRecord*> chosen;
  for (const KtRow& r : rows) {
    std::string key;
    for (std::size_t i = 0; i < kParamCount; ++i)
      key += (i ? "," : "") + std::to_string(r.e->setting.values[i]);
    const bool good = kt_ok(r.e->measurement);
    const auto it = chosen.find(key);
    if (it == chosen.end()) {
      keys.push_back(key);
      chosen.emplace(key, r.e);
    } else if (good && (!kt_ok(it->second->measurement) ||
                        r.e->measurement.median_ms < it->second->measurement.median_ms)) {
      it->second = r.e;
    }
  }

  const RunInfo info = reader.run_info();
  Instant base;
  if (const auto t = parse_iso(info.created)) {
    base = *t;
  } else {
    base.us = std::chrono::duration_cast<std::chrono::microseconds>(
                  std::chrono::system_clock::now().time_since_epoch())
                  .count();
  }
  std::string device = "unknown";
  const std::vector<EnvironmentInfo> env = reader.environment();
  if (!by_rank.empty()) {
    for (const EnvironmentInfo& e : env) {
      if (e.rank == by_rank.begin()->first && !e.gpu_name.empty())
        device = e.gpu_name;
    }
  }
  const StencilInfo stencil = reader.stencil();
  std::vector<int> problem_size;
  if (!reader.config_yaml().empty()) {
    const Config config = recorded_config(reader, in);
    problem_size = {config.grid.nx, config.grid.ny};
    if (stencil.dims == 3)
      problem_size.push_back(config.grid.nz);
  }
  std::map<std::string, std::vector<int>> space;
  for (const ParameterInfo& p : reader.space_parameters())
    space[p.name] = p.values;

  std::ostringstream o;
  o << "{\n \"schema_version\": \"1.0.0\",\n"
    << " \"device_name\": " << json_string(device) << ",\n"
    << " \"kernel_name\": " << json_string(stencil.name.empty() ? "isletune_stencil" : stencil.name)
    << ",\n \"problem_size\": [";
  for (std::size_t i = 0; i < problem_size.size(); ++i)
    o << (i ? "," : "") << "\n  " << problem_size[i];
  o << (problem_size.empty() ? "" : "\n ") << "],\n \"tune_params_keys\": [";
  for (std::size_t i = 0; i < kParamCount; ++i)
    o << (i ? "," : "") << "\n  " << json_string(param_name(param_at(i)));
  o << "\n ],\n \"tune_params\": {";
  for (std::size_t i = 0; i < kParamCount; ++i) {
    const std::string name(param_name(param_at(i)));
    std::set<int> values = seen[i];
    if (const auto it = space.find(name); it != space.end())
      values.insert(it->second.begin(), it->second.end());
    o << (i ? "," : "") << "\n  " << json_string(name) << ": [";
    bool first = true;
    for (int v : values) {
      o << (first ? "" : ",") << "\n   " << v;
      first = false;
    }
    o << (values.empty() ? "" : "\n  ") << "]";
  }
  o << "\n },\n \"objective\": \"time\",\n \"cache\": {";
  entries = 0;
  ok_entries = 0;
  for (const std::string& key : keys) {
    const EvaluationRecord* e = chosen.at(key);
    const bool good = kt_ok(e->measurement);
    o << (entries ? "," : "") << "\n  " << json_string(key) << ": "
      << kt_entry(*e, good, base, "  ");
    ++entries;
    ok_entries += good ? 1 : 0;
  }
  o << (entries ? "\n " : "") << "}\n}\n";
  return o.str();
}

// --kernel-tuner-cache FILE.
void export_kernel_tuner_cache(const TraceReader& reader, const std::filesystem::path& in,
                               const std::string& out) {
  int entries = 0, ok_entries = 0;
  const std::string text = kt_document(reader, in, entries, ok_entries);
  write_file(out, text);
  std::printf("wrote %s: Kernel Tuner cache, %d entries (%d ok, %d failed)\n", out.c_str(), entries,
              ok_entries, entries - ok_entries);
}

}  // namespace

int export_command(const Args& args) {
  const ParsedArgs parsed = parse_args("export", args, {"-o", "--kernel-tuner-cache"}, {"--best"});
  if (parsed.help) {
    std::fputs(kHelp, stdout);
    return 0;
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
  if (kt)
    export_kernel_tuner_cache(reader, in, *kt);
  if (best)
    export_best(reader, in, *out);
  return 0;
}

}  // namespace isletune::cli
