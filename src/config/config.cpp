// YAML -> Config with validation, Config -> YAML, command-line overrides.
#include "config/config.hpp"

#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "common/error.hpp"
#include "common/text.hpp"
#include "config/stencil_library.hpp"
#include "space/values_taken.hpp"

namespace isletune {
namespace fs = std::filesystem;

namespace {

// The largest configuration text read (the largest inline stencil, 17^3 points, is ~200 KB).
constexpr std::size_t kMaxConfigBytes = std::size_t{4} << 20;
constexpr std::string_view kStrategies[] = {"island-ga", "random", "sampled-random", "global-ga"};
constexpr std::string_view kPredictors[] = {"uniform", "roofline"};
constexpr std::string_view kBackends[] = {"cuda", "replay"};

// Joins names as "a, b, c".
template <typename Range>
std::string join(const Range& names) {
  std::string out;
  for (const auto& n : names) {
    if (!out.empty())
      out += ", ";
    out += std::string(n);
  }
  return out;
}

// Shortest text that reads back as the same double.
std::string real_text(double v) {
  char buf[64];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc() ? std::string(buf, end) : std::to_string(v);
}

// Reads YAML nodes of one config source; every failure is one sentence naming the file,
// the key path, the line and what was expected.
class Parser {
 public:
  Parser(std::string origin, fs::path base_dir)
      : origin_(std::move(origin)), base_dir_(std::move(base_dir)) {}

  const std::string& origin() const { return origin_; }

  // Throws "<file>: <key> (line N) <problem>."
  [[noreturn]] void fail(const YAML::Node& node, const std::string& key,
                         const std::string& problem) const {
    std::string where = origin_ + ": " + key;
    if (node.IsDefined() && node.Mark().line >= 0) {
      where += " (line " + std::to_string(node.Mark().line + 1) + ")";
    }
    throw InputError(where + " " + problem + ".");
  }

  // The node must be a mapping whose keys are all in `allowed`, each given once.
  void check_keys(const YAML::Node& node, const std::string& key,
                  std::initializer_list<std::string_view> allowed) const {
    if (!node.IsMap()) {
      if (key.empty()) {
        throw InputError(origin_ + ": the top level must be a mapping with keys " + join(allowed) +
                         got(node) + ".");
      }
      fail(node, key, "must be a mapping with keys " + join(allowed));
    }
    check_plain_keys(node, key);
    for (const auto& entry : node) {
      const std::string name = entry.first.Scalar();
      if (std::find(allowed.begin(), allowed.end(), name) == allowed.end()) {
        // The allowed keys for a name that could be a typo of one (short, plain); a long
        // or binary name gets the sentence alone, so the message stays one short line.
        const bool plain =
            name.size() <= 24 && std::all_of(name.begin(), name.end(), [](unsigned char c) {
              return std::isalnum(c) || c == '_' || c == '-' || c == '.';
            });
        fail(entry.first, child(key, name),
             plain ? "is not a known key; allowed keys: " + join(allowed) : "is not a known key");
      }
    }
  }

  // Every key of the mapping is a plain name given once (yaml-cpp keeps duplicates and
  // returns the first, so a repeated key would silently lose its second value).
  void check_plain_keys(const YAML::Node& node, const std::string& key) const {
    std::map<std::string, int> lines;
    for (const auto& entry : node) {
      if (!entry.first.IsScalar()) {
        fail(entry.first, key.empty() ? "the top level" : key,
             "has a key that is a list or mapping; expected plain key names");
      }
      const std::string name = entry.first.Scalar();
      const int line = entry.first.Mark().line + 1;
      if (const auto [it, fresh] = lines.emplace(name, line); !fresh) {
        fail(entry.first, child(key, name),
             "appears twice (first on line " + std::to_string(it->second) +
                 "); expected each key once");
      }
    }
  }

  // "parent.name" with the name made printable.
  static std::string child(const std::string& parent, const std::string& name) {
    const std::string shown = printable(name, 24);  // the message stays one short line
    return parent.empty() ? shown : parent + "." + shown;
  }

  // An integer in [lo, hi].
  std::int64_t integer(const YAML::Node& node, const std::string& key, std::int64_t lo,
                       std::int64_t hi, const std::string& expected) const {
    std::int64_t v = 0;
    if (!node.IsScalar() || !convert(node, v))
      fail(node, key, "must be " + expected + got(node));
    if (v < lo || v > hi)
      fail(node, key, "must be " + expected + ", got " + std::to_string(v));
    return v;
  }

  // A finite real in [lo, hi] (lo excluded when open_low).
  double real(const YAML::Node& node, const std::string& key, double lo, double hi, bool open_low,
              const std::string& expected) const {
    double v = 0;
    if (!node.IsScalar() || !convert(node, v) || !std::isfinite(v)) {
      fail(node, key, "must be " + expected + got(node));
    }
    if (v < lo || v > hi || (open_low && v == lo)) {
      fail(node, key, "must be " + expected + ", got " + real_text(v));
    }
    return v;
  }

  bool flag(const YAML::Node& node, const std::string& key) const {
    bool v = false;
    if (!node.IsScalar() || !convert(node, v))
      fail(node, key, "must be true or false" + got(node));
    return v;
  }

  std::string text(const YAML::Node& node, const std::string& key) const {
    if (!node.IsScalar() || node.Scalar().empty())
      fail(node, key, "must be a non-empty string");
    return node.Scalar();
  }

  // One of `names`; returns its index.
  template <std::size_t N>
  int choice(const YAML::Node& node, const std::string& key,
             const std::string_view (&names)[N]) const {
    if (node.IsScalar()) {
      for (std::size_t i = 0; i < N; ++i) {
        if (node.Scalar() == names[i])
          return static_cast<int>(i);
      }
    }
    fail(node, key, "must be one of " + join(names) + got(node));
  }

  // A path; relative paths resolve against the config file's directory.
  fs::path path(const YAML::Node& node, const std::string& key) const {
    const fs::path p = text(node, key);
    return (p.is_absolute() ? p : base_dir_ / p).lexically_normal();
  }

 private:
  template <typename T>
  static bool convert(const YAML::Node& node, T& out) {
    try {
      out = node.as<T>();
      return true;
    } catch (const YAML::Exception&) {
      return false;
    }
  }
  static std::string got(const YAML::Node& node) {
    if (node.IsScalar())
      return ", got " + quote_value(node.Scalar());
    if (node.IsSequence())
      return ", got a list";
    if (node.IsMap())
      return ", got a mapping";
    return ", got nothing";
  }

  std::string origin_;
  fs::path base_dir_;
};

// Library names: (star|box|cross)(2|3)d(order)r.
std::optional<int> library_dims(const std::string& name) {
  static const std::regex pattern("(star|box|cross)([23])d([1-9])r");
  std::smatch m;
  if (!std::regex_match(name, m, pattern))
    return std::nullopt;
  return m[2].str()[0] - '0';
}

// Runs a stencil loader, prefixing its message with the config file and key.
template <typename F>
Stencil load_stencil_for(const std::string& origin, const std::string& key, F&& load) {
  try {
    return load();
  } catch (const InputError& e) {
    std::string what = e.what();
    if (what.rfind(origin + ":", 0) == 0)
      throw;  // already names the config file
    throw InputError(origin + ": " + key + ": " + what);
  }
}

StencilSpec parse_stencil(const Parser& p, const YAML::Node& node) {
  StencilSpec s;
  if (node.IsScalar()) {
    s.source = StencilSource::library;
    s.name = node.Scalar();
    const auto dims = library_dims(s.name);
    if (!dims) {
      p.fail(node, "stencil",
             "must be a typical-library name ({star,box,cross}{2d,3d}{1..4}r such as star2d2r), "
             "a mapping with name, dims and points, or a mapping with file, got " +
                 quote_value(s.name));
    }
    s.dims = *dims;
    return s;
  }
  if (node.IsMap() && node["file"]) {
    p.check_keys(node, "stencil", {"file"});
    s.source = StencilSource::file;
    s.file = p.path(node["file"], "stencil.file");
    if (std::error_code ec; !fs::is_regular_file(s.file, ec)) {
      p.fail(node["file"], "stencil.file",
             "names " + display_path(s.file) + ", which is not a readable file" +
                 (ec ? " (" + ec.message() + ")" : std::string()));
    }
    s.name = s.file.stem().string();
    return s;
  }
  p.check_keys(node, "stencil", {"name", "dims", "points", "file"});
  s.source = StencilSource::points;
  s.name = node["name"] ? p.text(node["name"], "stencil.name") : "custom";
  if (!is_plain_name(s.name)) {
    p.fail(node["name"], "stencil.name",
           std::string("must be ") + kPlainNameRule + ", got " + quote_value(s.name));
  }
  if (!node["dims"])
    p.fail(node, "stencil", "must give dims (2 or 3) with its points");
  s.dims = static_cast<int>(p.integer(node["dims"], "stencil.dims", 2, 3, "2 or 3"));
  const YAML::Node points = node["points"];
  if (!points || !points.IsSequence() || points.size() == 0) {
    p.fail(points ? points : node, "stencil.points",
           "must be a non-empty list of [dx, dy" + std::string(s.dims == 3 ? ", dz" : "") +
               ", coefficient] rows");
  }
  for (std::size_t i = 0; i < points.size(); ++i) {
    const std::string key = "stencil.points[" + std::to_string(i) + "]";
    const YAML::Node row = points[i];
    if (!row.IsSequence() || row.size() != static_cast<std::size_t>(s.dims + 1)) {
      p.fail(row, key,
             "must be a row of " + std::to_string(s.dims + 1) + " numbers [dx, dy" +
                 (s.dims == 3 ? ", dz" : "") + ", coefficient]");
    }
    std::vector<double> values;
    for (std::size_t j = 0; j < row.size(); ++j) {
      values.push_back(p.real(row[j], key, -std::numeric_limits<double>::max(),
                              std::numeric_limits<double>::max(), false, "a number"));
    }
    s.points.push_back(std::move(values));
  }
  return s;
}

// Bounds on the grid: every extent below 2^30 (the space's power-of-two arithmetic stays
// inside int) and at most 2^31 cells (several double grids must fit in GPU memory).
constexpr std::int64_t kMaxGridExtent = std::int64_t{1} << 30;
constexpr std::int64_t kMaxGridCells = std::int64_t{1} << 31;

Grid parse_grid(const Parser& p, const YAML::Node& node, int dims) {
  const std::string shape = dims == 3 ? "[nx, ny, nz]" : "[nx, ny]";
  if (!node.IsSequence() || (node.size() != 2 && node.size() != 3)) {
    p.fail(node, "grid", "must be a list [nx, ny] or [nx, ny, nz] of positive integers");
  }
  if (static_cast<int>(node.size()) != dims) {
    p.fail(node, "grid",
           "has " + std::to_string(node.size()) + " extents but the stencil is " +
               std::to_string(dims) + "-D; expected " + shape);
  }
  int extents[3] = {1, 1, 1};
  for (std::size_t i = 0; i < node.size(); ++i) {
    extents[i] =
        static_cast<int>(p.integer(node[i], "grid[" + std::to_string(i) + "]", 1,
                                   kMaxGridExtent - 1, "a positive integer extent below 2^30"));
  }
  const Grid grid{extents[0], extents[1], extents[2]};
  if (grid.cells() > kMaxGridCells) {
    p.fail(node, "grid",
           "holds " + std::to_string(grid.cells()) +
               " cells; expected at most 2^31 = " + std::to_string(kMaxGridCells) +
               " (each double grid then takes 16 GiB of GPU memory, and the evaluator holds "
               "several)");
  }
  return grid;
}

// One value of a parameter list: merge by name, flags as true/false or 0/1.
int parse_value(const Parser& p, const YAML::Node& node, Param param, const std::string& key) {
  if (param == Param::merge) {
    if (node.IsScalar()) {
      if (const auto m = merge_from_name(node.Scalar()))
        return static_cast<int>(*m);
      if (node.Scalar() == "0" || node.Scalar() == "1" || node.Scalar() == "2")
        return node.Scalar()[0] - '0';
    }
    p.fail(node, key, "must hold merge kinds none, block or cyclic (or 0, 1, 2)");
  }
  if (node.IsScalar() && (node.Scalar() == "true" || node.Scalar() == "false")) {
    return node.Scalar() == "true" ? 1 : 0;
  }
  return static_cast<int>(p.integer(node, key, 0, 1 << 20, "a list of non-negative integers"));
}

std::vector<int> parse_values(const Parser& p, const YAML::Node& node, Param param,
                              const std::string& key) {
  if (!node.IsSequence())
    p.fail(node, key, "must be a list of values");
  std::vector<int> values;
  for (std::size_t i = 0; i < node.size(); ++i) {
    values.push_back(parse_value(p, node[i], param, key + "[" + std::to_string(i) + "]"));
  }
  return values;
}

std::vector<SpaceOverride> parse_space(const Parser& p, const YAML::Node& node) {
  std::vector<std::string> names;
  for (std::size_t i = 0; i < kParamCount; ++i)
    names.emplace_back(param_name(param_at(i)));
  if (!node.IsMap())
    p.fail(node, "space", "must be a mapping from parameter names to changes");
  p.check_plain_keys(node, "space");
  std::map<int, SpaceOverride> by_param;
  for (const auto& entry : node) {
    const std::string name = entry.first.Scalar();
    const auto param = param_from_name(name);
    if (!param) {
      p.fail(entry.first, "space." + printable(name, 40),
             "is not a parameter; allowed: " + join(names));
    }
    const std::string key = "space." + name;
    const YAML::Node spec = entry.second;
    p.check_keys(spec, key, {"values", "add", "remove"});
    SpaceOverride o;
    o.param = *param;
    if (spec["values"]) {
      if (spec["add"] || spec["remove"]) {
        p.fail(spec, key, "must give either values or add/remove, not both");
      }
      o.values = parse_values(p, spec["values"], *param, key + ".values");
      if (o.values->empty())
        p.fail(spec["values"], key + ".values", "must not be empty");
    }
    if (spec["add"])
      o.add = parse_values(p, spec["add"], *param, key + ".add");
    if (spec["remove"])
      o.remove = parse_values(p, spec["remove"], *param, key + ".remove");
    by_param[static_cast<int>(*param)] = std::move(o);
  }
  std::vector<SpaceOverride> out;
  for (auto& [_, o] : by_param)
    out.push_back(std::move(o));
  return out;
}

void parse_sampler(const Parser& p, const YAML::Node& node, Config& c) {
  p.check_keys(node, "sampler",
               {"predictor", "sample_ratio", "max_samples", "round_ratio", "adjust", "floor"});
  SamplerSettings& s = c.sampler;
  if (node["predictor"]) {
    c.predictor =
        static_cast<PredictorKind>(p.choice(node["predictor"], "sampler.predictor", kPredictors));
  }
  if (node["sample_ratio"]) {
    s.sample_ratio =
        p.real(node["sample_ratio"], "sampler.sample_ratio", 0, 1, true, "a ratio in (0, 1]");
  }
  if (node["max_samples"]) {
    s.max_samples = static_cast<int>(p.integer(node["max_samples"], "sampler.max_samples", 1,
                                               std::numeric_limits<int>::max(), "an integer >= 1"));
  }
  if (node["round_ratio"]) {
    s.round_ratio =
        p.real(node["round_ratio"], "sampler.round_ratio", 0, 1, true, "a ratio in (0, 1]");
  }
  if (node["adjust"]) {
    s.adjust = p.real(node["adjust"], "sampler.adjust", 0, 1, true, "a ratio in (0, 1]");
  }
  if (node["floor"]) {
    s.floor = p.real(node["floor"], "sampler.floor", 0, 1, true,
                     "a ratio in (0, 1] of a round (capped per OC at 0.5 / active OCs)");
  }
  if (s.floor > s.adjust) {
    p.fail(
        node["floor"] ? node["floor"] : node, "sampler.floor",
        "must not exceed sampler.adjust (" + real_text(s.adjust) + "), got " + real_text(s.floor));
  }
}

void parse_ga(const Parser& p, const YAML::Node& node, GaSettings& ga) {
  p.check_keys(node, "ga",
               {"population", "rows", "cols", "crossover_rate", "mutation_rate", "encoding", "gray",
                "migration", "mcr_threshold", "candidates", "model_picks", "model_policy",
                "model_trees", "predicted_seeds", "pipeline"});
  if (node["population"] || node["rows"] || node["cols"])
    ga.auto_population = false;
  constexpr int kBig = 1 << 20;
  if (node["rows"]) {
    ga.rows = static_cast<int>(p.integer(node["rows"], "ga.rows", 1, kBig, "an integer >= 1"));
  }
  if (node["cols"]) {
    ga.cols = static_cast<int>(p.integer(node["cols"], "ga.cols", 1, kBig, "an integer >= 1"));
  }
  // rows x cols in 64 bits: two extents up to 2^20 overflow int.
  const std::int64_t cells = std::int64_t{ga.rows} * ga.cols;
  if (!node["population"] && (cells < 2 || cells > kBig)) {
    p.fail(node[node["rows"] ? "rows" : "cols"], "ga.rows",
           "x ga.cols is the population and must be in [2, 2^20], got " + std::to_string(ga.rows) +
               " x " + std::to_string(ga.cols) + " = " + std::to_string(cells));
  }
  if (node["population"]) {
    ga.population = static_cast<int>(
        p.integer(node["population"], "ga.population", 2, kBig, "an integer in [2, 2^20]"));
  } else if (node["rows"] || node["cols"]) {
    ga.population = static_cast<int>(cells);
  }
  if (ga.population != cells) {
    p.fail(node["population"] ? node["population"] : node, "ga.population",
           "must equal ga.rows x ga.cols = " + std::to_string(ga.rows) + " x " +
               std::to_string(ga.cols) + " = " + std::to_string(cells) + ", got " +
               std::to_string(ga.population));
  }
  if (node["crossover_rate"]) {
    ga.crossover_rate =
        p.real(node["crossover_rate"], "ga.crossover_rate", 0, 1, false, "a probability in [0, 1]");
  }
  if (node["mutation_rate"]) {
    ga.mutation_rate =
        p.real(node["mutation_rate"], "ga.mutation_rate", 0, 1, false, "a probability in [0, 1]");
  }
  if (node["encoding"]) {
    constexpr std::string_view kEncodings[] = {"index", "parameters"};
    ga.encoding = static_cast<Encoding>(p.choice(node["encoding"], "ga.encoding", kEncodings));
  }
  if (node["gray"])
    ga.gray = p.flag(node["gray"], "ga.gray");
  if (const YAML::Node m = node["migration"]) {
    p.check_keys(m, "ga.migration", {"interval", "count", "lag", "drift", "fill"});
    if (m["lag"]) {
      ga.migration_lag = static_cast<int>(p.integer(m["lag"], "ga.migration.lag", 0, 1, "0 or 1"));
    }
    if (m["drift"]) {
      if (m["drift"].IsScalar() && m["drift"].Scalar() == "async") {
        ga.migration_drift = GaSettings::kDriftAsync;
      } else {
        ga.migration_drift = static_cast<int>(
            p.integer(m["drift"], "ga.migration.drift", -1, GaSettings::kMaxDrift,
                      "an integer in [0, " + std::to_string(GaSettings::kMaxDrift) +
                          "], async (islands that never wait), or -1 (off)"));
      }
      if (ga.migration_drift >= 0 && ga.migration_lag != 0) {
        p.fail(m["drift"], "ga.migration.drift",
               "excludes ga.migration.lag " + std::to_string(ga.migration_lag) +
                   ": expected either lag (the deterministic ring) or drift (islands that wait "
                   "only when drift generations apart)");
      }
    }
    if (m["fill"]) {
      ga.fill_picks = static_cast<int>(p.integer(
          m["fill"], "ga.migration.fill", 0, GaSettings::kMaxFillPicks,
          "an integer in [0, " + std::to_string(GaSettings::kMaxFillPicks) + "] (0: wait)"));
    }
    if (m["interval"]) {
      ga.migration_interval = static_cast<int>(
          p.integer(m["interval"], "ga.migration.interval", 0, kBig, "an integer >= 0 (0: never)"));
    }
    if (m["count"]) {
      ga.migration_count = static_cast<int>(
          p.integer(m["count"], "ga.migration.count", 0, ga.population,
                    "an integer in [0, population = " + std::to_string(ga.population) + "]"));
    }
  }
  if (ga.migration_count > ga.population) {
    p.fail(node, "ga.migration.count",
           "must be at most ga.population = " + std::to_string(ga.population) + ", got " +
               std::to_string(ga.migration_count));
  }
  if (node["mcr_threshold"]) {
    ga.mcr_threshold = p.real(node["mcr_threshold"], "ga.mcr_threshold", 0, 1, false,
                              "a ratio in [0, 1] (0: no MCR stop, budgets only)");
  }
  if (node["candidates"]) {
    ga.candidates = static_cast<int>(p.integer(node["candidates"], "ga.candidates", 1, 64,
                                               "an integer in [1, 64] (1: no surrogate)"));
  }
  if (node["model_picks"]) {
    ga.model_picks = static_cast<int>(
        p.integer(node["model_picks"], "ga.model_picks", -1, ga.population,
                  "an integer in [0, population = " + std::to_string(ga.population) +
                      "] (-1: half the population, five eighths with several islands)"));
  }
  if (node["model_policy"]) {
    ga.model_policy = static_cast<ModelPolicy>(
        p.choice(node["model_policy"], "ga.model_policy", kModelPolicyNames));
  }
  if (node["pipeline"]) {
    ga.pipeline =
        static_cast<int>(p.integer(node["pipeline"], "ga.pipeline", 0, GaSettings::kMaxPipeline,
                                   GaSettings::pipeline_expected()));
  }
  if (node["model_trees"]) {
    ga.model_trees =
        static_cast<int>(p.integer(node["model_trees"], "ga.model_trees", -1,
                                   GaSettings::kMaxModelTrees, GaSettings::model_trees_expected()));
  }
  if (node["predicted_seeds"]) {
    ga.predicted_seeds = static_cast<int>(
        p.integer(node["predicted_seeds"], "ga.predicted_seeds", -1, ga.population,
                  "an integer in [0, population = " + std::to_string(ga.population) +
                      "] (-1: population / 4)"));
  }
}

void parse_budget(const Parser& p, const YAML::Node& node, GaSettings& ga) {
  p.check_keys(node, "budget", {"max_generations", "max_evaluations", "time_budget_s"});
  if (node["max_generations"]) {
    ga.max_generations = static_cast<int>(
        p.integer(node["max_generations"], "budget.max_generations", 0,
                  std::numeric_limits<int>::max(), "an integer >= 0 (0: unlimited)"));
  }
  if (node["max_evaluations"]) {
    ga.max_evaluations =
        p.integer(node["max_evaluations"], "budget.max_evaluations", 0,
                  std::numeric_limits<std::int64_t>::max(), "an integer >= 0 (0: unlimited)");
  }
  if (node["time_budget_s"]) {
    ga.time_budget_s =
        p.real(node["time_budget_s"], "budget.time_budget_s", 0, std::numeric_limits<double>::max(),
               false, "seconds >= 0 (0: unlimited)");
  }
  // An explicit evaluation or time budget is spent (converged islands restart): the
  // generation limit then applies only when it is given too.
  if (!node["max_generations"] && ga.explicit_budget())
    ga.max_generations = 0;
  if (ga.max_generations == 0 && ga.max_evaluations == 0 && ga.time_budget_s == 0) {
    p.fail(node, "budget",
           "sets every limit to 0 (unlimited); expected at least one of max_generations, "
           "max_evaluations or time_budget_s above 0");
  }
}

void parse_evaluator(const Parser& p, const YAML::Node& node, EvaluatorConfig& e) {
  p.check_keys(
      node, "evaluator",
      {"backend", "dataset", "timeout_s", "compile_timeout_s", "slow_factor", "race_factor",
       "settle_spread", "full_verification", "compile_threads", "compile_scale", "cache_dir"});
  if (node["backend"]) {
    e.backend = static_cast<Backend>(p.choice(node["backend"], "evaluator.backend", kBackends));
  }
  if (node["dataset"]) {
    e.dataset = p.path(node["dataset"], "evaluator.dataset");
    if (std::error_code ec; !fs::is_regular_file(e.dataset, ec)) {
      p.fail(node["dataset"], "evaluator.dataset",
             "names " + display_path(e.dataset) + ", which is not a file" +
                 (ec ? " (" + ec.message() + ")" : std::string()) +
                 "; expected a recorded trace.h5 or dataset");
    }
  }
  if (node["timeout_s"]) {
    e.timeout_s =
        p.real(node["timeout_s"], "evaluator.timeout_s", 0, 86400, true, "seconds in (0, 86400]");
  }
  if (node["compile_timeout_s"]) {
    e.compile_timeout_s = p.real(node["compile_timeout_s"], "evaluator.compile_timeout_s", 0, 86400,
                                 true, "seconds in (0, 86400]");
  }
  if (node["slow_factor"]) {
    e.slow_factor = p.real(node["slow_factor"], "evaluator.slow_factor", 0, 1e6, false,
                           "a factor in [1, 1e6], or 0 to verify and time every kernel");
    if (e.slow_factor > 0 && e.slow_factor < 1) {
      p.fail(node["slow_factor"], "evaluator.slow_factor",
             "must be a factor in [1, 1e6], or 0 to verify and time every kernel, got " +
                 real_text(e.slow_factor));
    }
  }
  if (node["race_factor"]) {
    constexpr std::string_view expected =
        "a factor in [1.1, 100], or 0 to time every kernel with every run";
    e.race_factor =
        p.real(node["race_factor"], "evaluator.race_factor", 0, 100, false, std::string(expected));
    if (e.race_factor > 0 && e.race_factor < 1.1) {
      p.fail(node["race_factor"], "evaluator.race_factor",
             "must be " + std::string(expected) + ", got " + real_text(e.race_factor));
    }
  }
  if (node["settle_spread"]) {
    e.settle_spread = p.real(node["settle_spread"], "evaluator.settle_spread", 0, 0.1, false,
                             "a relative spread in [0, 0.1] (0: time every kernel with every run)");
  }
  if (node["full_verification"])
    e.full_verification = p.flag(node["full_verification"], "evaluator.full_verification");
  if (node["compile_threads"]) {
    e.compile_threads =
        static_cast<int>(p.integer(node["compile_threads"], "evaluator.compile_threads", 0, 1024,
                                   "an integer in [0, 1024] (0: one per core)"));
  }
  if (node["compile_scale"]) {
    e.compile_scale = p.real(node["compile_scale"], "evaluator.compile_scale", 0, 100, true,
                             "a factor in (0, 100] on the recorded compile times (replay)");
  }
  if (node["cache_dir"]) {
    e.cache_dir = node["cache_dir"].IsScalar() ? node["cache_dir"].Scalar() : "";
    if (!node["cache_dir"].IsScalar()) {
      p.fail(node["cache_dir"], "evaluator.cache_dir", "must be a directory path");
    }
  }
}

// Checks that need several sections (replay needs a dataset).
void validate_cross(const Config& c, const YAML::Node& root, const Parser& p) {
  const YAML::Node evaluator_node = root["evaluator"] ? root["evaluator"] : root;
  if (c.evaluator.backend != Backend::replay && c.evaluator.compile_scale != 1) {
    p.fail(evaluator_node["compile_scale"] ? evaluator_node["compile_scale"] : evaluator_node,
           "evaluator.compile_scale",
           "scales recorded compile times and applies to the replay backend only; expected 1 "
           "(or no key) with backend " +
               std::string(backend_name(c.evaluator.backend)));
  }
  if (c.evaluator.backend == Backend::replay && c.evaluator.dataset.empty()) {
    p.fail(evaluator_node, "evaluator.dataset",
           "is missing; the replay backend needs a recorded trace.h5 or dataset");
  }
}

// Emits a list of numbers in flow style.
void emit_flow(YAML::Emitter& out, const std::vector<int>& values, Param param) {
  out << YAML::Flow << YAML::BeginSeq;
  for (int v : values) {
    if (param == Param::merge) {
      out << std::string(merge_name(static_cast<MergeKind>(v)));
    } else {
      out << v;
    }
  }
  out << YAML::EndSeq;
}

}  // namespace

std::string_view strategy_name(Strategy s) {
  return kStrategies[static_cast<int>(s)];
}
std::string_view predictor_name(PredictorKind p) {
  return kPredictors[static_cast<int>(p)];
}
std::string_view backend_name(Backend b) {
  return kBackends[static_cast<int>(b)];
}

bool operator==(const Config& a, const Config& b) {
  const auto& sa = a.sampler;
  const auto& sb = b.sampler;
  const auto& ga = a.ga;
  const auto& gb = b.ga;
  return a.stencil == b.stencil && a.grid == b.grid && a.steps == b.steps && a.warmup == b.warmup &&
         a.repeats == b.repeats && a.space == b.space && a.predictor == b.predictor &&
         sa.sample_ratio == sb.sample_ratio && sa.max_samples == sb.max_samples &&
         sa.round_ratio == sb.round_ratio && sa.adjust == sb.adjust && sa.floor == sb.floor &&
         sa.max_redraws == sb.max_redraws && a.strategy == b.strategy &&
         ga.population == gb.population && ga.rows == gb.rows && ga.cols == gb.cols &&
         ga.crossover_rate == gb.crossover_rate && ga.mutation_rate == gb.mutation_rate &&
         ga.encoding == gb.encoding && ga.gray == gb.gray &&
         ga.migration_interval == gb.migration_interval &&
         ga.migration_count == gb.migration_count && ga.migration_lag == gb.migration_lag &&
         ga.migration_drift == gb.migration_drift && ga.fill_picks == gb.fill_picks &&
         ga.mcr_threshold == gb.mcr_threshold && ga.model_policy == gb.model_policy &&
         ga.candidates == gb.candidates && ga.model_picks == gb.model_picks &&
         ga.model_trees == gb.model_trees && ga.predicted_seeds == gb.predicted_seeds &&
         ga.pipeline == gb.pipeline && ga.auto_population == gb.auto_population &&
         ga.max_generations == gb.max_generations && ga.max_evaluations == gb.max_evaluations &&
         ga.time_budget_s == gb.time_budget_s && a.evaluator == b.evaluator && a.seed == b.seed &&
         a.output == b.output;
}

namespace {

// The one YAML document of a configuration. Text that cannot be a configuration is one
// sentence saying why (too large, not text, a second document) rather than yaml-cpp's
// position in it.
YAML::Node load_one_document(std::string_view yaml, const std::string& origin) {
  if (yaml.size() > kMaxConfigBytes) {
    throw InputError(origin + " holds " + std::to_string(yaml.size()) +
                     " bytes; a configuration is YAML text of at most " +
                     std::to_string(kMaxConfigBytes >> 20) + " MiB.");
  }
  if (const auto nul = yaml.find('\0'); nul != std::string_view::npos) {
    throw InputError(origin + " is not a text file (a NUL byte at offset " + std::to_string(nul) +
                     "); expected a YAML configuration.");
  }
  // Control bytes (YAML allows none but tab, LF, CR) in text that is not one document:
  // binary input, whatever yaml-cpp makes of it.
  const bool control_bytes = std::any_of(yaml.begin(), yaml.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return (u < 0x20 && c != '\n' && c != '\r' && c != '\t') || u == 0x7f;
  });
  const auto not_text = [&] {
    return InputError(origin + " is not a text file (it holds control bytes); expected a YAML " +
                      "configuration.");
  };
  std::vector<YAML::Node> documents;
  try {
    documents = YAML::LoadAll(std::string(yaml));
  } catch (const YAML::DeepRecursion& e) {
    // yaml-cpp's message for its depth limit is "bad file": say what it means.
    throw InputError(origin + ": at line " + std::to_string(e.mark.line + 1) +
                     " the YAML is nested deeper than yaml-cpp reads; a configuration nests a "
                     "few levels.");
  } catch (const YAML::ParserException& e) {
    if (control_bytes)
      throw not_text();
    throw InputError(origin + ": invalid YAML at line " + std::to_string(e.mark.line + 1) +
                     ", column " + std::to_string(e.mark.column + 1) + ": " + printable(e.msg, 80) +
                     ".");
  }
  // An empty document after the first (a trailing `---`) holds nothing to ignore.
  while (documents.size() > 1 && documents.back().IsNull())
    documents.pop_back();
  if (documents.size() > 1) {
    if (control_bytes)
      throw not_text();
    throw InputError(origin + " holds " + std::to_string(documents.size()) +
                     " YAML documents (separated by ---); a configuration is one document.");
  }
  return documents.empty() ? YAML::Node() : documents.front();
}

}  // namespace

Config parse_config(std::string_view yaml, const std::string& origin, const fs::path& base_dir) {
  const Parser p(origin, base_dir);
  const YAML::Node root = load_one_document(yaml, origin);
  p.check_keys(root, "",
               {"stencil", "grid", "steps", "warmup", "repeats", "space", "sampler", "strategy",
                "ga", "budget", "evaluator", "seed", "output"});
  Config c;
  c.origin = origin;
  if (!root["stencil"])
    p.fail(root, "stencil", "is missing; expected a library name or points");
  if (!root["grid"])
    p.fail(root, "grid", "is missing; expected [nx, ny] or [nx, ny, nz]");
  c.stencil = parse_stencil(p, root["stencil"]);
  if (c.stencil.source == StencilSource::file) {
    c.stencil.dims = load_stencil_for(origin, "stencil.file", [&] {
                       return load_stencil_file(c.stencil.file.string());
                     }).dims();
  }
  c.grid = parse_grid(p, root["grid"], c.stencil.dims);
  constexpr int kBig = 1 << 20;
  if (root["steps"]) {
    c.steps = static_cast<int>(p.integer(root["steps"], "steps", 1, kBig, "an integer >= 1"));
  }
  if (root["warmup"]) {
    c.warmup = static_cast<int>(p.integer(root["warmup"], "warmup", 0, kBig, "an integer >= 0"));
  }
  if (root["repeats"]) {
    c.repeats = static_cast<int>(p.integer(root["repeats"], "repeats", 1, kBig, "an integer >= 1"));
  }
  if (root["space"])
    c.space = parse_space(p, root["space"]);
  if (root["sampler"])
    parse_sampler(p, root["sampler"], c);
  if (root["strategy"]) {
    c.strategy = static_cast<Strategy>(p.choice(root["strategy"], "strategy", kStrategies));
  }
  if (root["ga"])
    parse_ga(p, root["ga"], c.ga);
  if (root["budget"])
    parse_budget(p, root["budget"], c.ga);
  if (root["evaluator"])
    parse_evaluator(p, root["evaluator"], c.evaluator);
  if (root["seed"]) {
    const YAML::Node s = root["seed"];
    const std::string expected = "must be a non-negative integer below 2^64";
    if (!s.IsScalar() || s.Scalar().starts_with("-"))
      p.fail(s, "seed", expected);
    try {
      c.seed = s.as<std::uint64_t>();
    } catch (const YAML::Exception&) {
      p.fail(s, "seed", expected + ", got " + quote_value(s.Scalar()));
    }
  }
  if (root["output"])
    c.output = p.text(root["output"], "output");
  validate_cross(c, root, p);

  // The stencil must load, and the grid must leave an interior.
  const Stencil stencil = resolve_stencil(c);
  const int extents[3] = {c.grid.nx, c.grid.ny, c.grid.nz};
  for (int axis = 0; axis < c.stencil.dims; ++axis) {
    if (extents[axis] <= 2 * stencil.radius(axis)) {
      p.fail(root["grid"], "grid[" + std::to_string(axis) + "]",
             "must exceed twice the stencil radius " + std::to_string(stencil.radius(axis)) +
                 " on that axis, got " + std::to_string(extents[axis]));
    }
  }
  // Overrides must leave every parameter a value, and every value must be one the space
  // takes (the space's own range checks, here with the file named).
  const Space::Values values =
      apply_space_overrides(Space::default_values(c.stencil.dims, c.grid), c.space, origin);
  std::optional<Space> space;
  try {
    space.emplace(stencil, c.grid, DeviceLimits{}, values);
  } catch (const InputError& e) {
    std::string why = e.what();
    if (!why.empty() && why.back() == '.')
      why.pop_back();
    p.fail(root["space"] ? root["space"] : root, "space", "is not valid: " + why);
  }
  if (!has_valid_setting(*space)) {
    p.fail(root["space"] ? root["space"] : root, "space",
           "leaves no valid setting (every combination of its values breaks a constraint; "
           "`isletune space` lists them); expected values that combine into at least one");
  }
  return c;
}

RecordedProblem recorded_problem(std::string_view yaml) {
  RecordedProblem out;
  try {
    const std::vector<YAML::Node> documents = YAML::LoadAll(std::string(yaml));
    if (documents.size() != 1 || !documents.front().IsMap())
      return out;
    const YAML::Node& root = documents.front();
    const YAML::Node grid = root["grid"];
    if (grid && grid.IsSequence() && (grid.size() == 2 || grid.size() == 3)) {
      Grid g;
      g.nx = grid[0].as<int>();
      g.ny = grid[1].as<int>();
      g.nz = grid.size() == 3 ? grid[2].as<int>() : 1;
      out.grid = g;
      out.steps = root["steps"] ? root["steps"].as<int>() : Config{}.steps;
    }
    const YAML::Node evaluator = root["evaluator"];
    if (evaluator && evaluator.IsMap() && evaluator["backend"] &&
        evaluator["backend"].as<std::string>() == backend_name(Backend::replay)) {
      out.replayed_from = evaluator["dataset"] ? evaluator["dataset"].as<std::string>() : "";
    }
  } catch (const YAML::Exception&) {
    return RecordedProblem{};
  }
  return out;
}

Config load_config(const fs::path& path) {
  const std::string shown = display_path(path);
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) {
    const bool directory = !ec && fs::is_directory(path, ec);
    throw InputError(shown + ": cannot read the config file (" +
                     (directory ? std::string("it is a directory")
                      : ec      ? ec.message()
                                : std::string("no such file")) +
                     "); expected a readable YAML file.");
  }
  if (const auto size = fs::file_size(path, ec); !ec && size > kMaxConfigBytes) {
    throw InputError(shown + " holds " + std::to_string(size) +
                     " bytes; a configuration is YAML text of at most " +
                     std::to_string(kMaxConfigBytes >> 20) + " MiB.");
  }
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  if (in)
    text << in.rdbuf();
  if (!in || in.bad()) {
    throw InputError(shown + ": cannot read the config file; expected a readable YAML file.");
  }
  const fs::path dir = fs::absolute(path, ec).parent_path();
  return parse_config(text.str(), shown, dir);
}

std::string to_yaml(const Config& c) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  out << YAML::Key << "stencil";
  switch (c.stencil.source) {
    case StencilSource::library:
      out << YAML::Value << c.stencil.name;
      break;
    case StencilSource::file:
      out << YAML::Value << YAML::BeginMap << YAML::Key << "file" << YAML::Value
          << c.stencil.file.string() << YAML::EndMap;
      break;
    case StencilSource::points:
      out << YAML::Value << YAML::BeginMap;
      out << YAML::Key << "name" << YAML::Value << c.stencil.name;
      out << YAML::Key << "dims" << YAML::Value << c.stencil.dims;
      out << YAML::Key << "points" << YAML::Value << YAML::BeginSeq;
      for (const auto& row : c.stencil.points) {
        out << YAML::Flow << YAML::BeginSeq;
        for (double v : row)
          out << real_text(v);
        out << YAML::EndSeq;
      }
      out << YAML::EndSeq << YAML::EndMap;
      break;
  }
  out << YAML::Key << "grid" << YAML::Value << YAML::Flow << YAML::BeginSeq << c.grid.nx
      << c.grid.ny;
  if (c.stencil.dims == 3)
    out << c.grid.nz;
  out << YAML::EndSeq;
  out << YAML::Key << "steps" << YAML::Value << c.steps;
  out << YAML::Key << "warmup" << YAML::Value << c.warmup;
  out << YAML::Key << "repeats" << YAML::Value << c.repeats;

  out << YAML::Key << "space" << YAML::Value << YAML::BeginMap;
  for (const SpaceOverride& o : c.space) {
    out << YAML::Key << std::string(param_name(o.param)) << YAML::Value << YAML::BeginMap;
    if (o.values) {
      out << YAML::Key << "values" << YAML::Value;
      emit_flow(out, *o.values, o.param);
    }
    if (!o.add.empty()) {
      out << YAML::Key << "add" << YAML::Value;
      emit_flow(out, o.add, o.param);
    }
    if (!o.remove.empty()) {
      out << YAML::Key << "remove" << YAML::Value;
      emit_flow(out, o.remove, o.param);
    }
    out << YAML::EndMap;
  }
  out << YAML::EndMap;

  const SamplerSettings& s = c.sampler;
  out << YAML::Key << "sampler" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "predictor" << YAML::Value << std::string(predictor_name(c.predictor));
  out << YAML::Key << "sample_ratio" << YAML::Value << real_text(s.sample_ratio);
  out << YAML::Key << "max_samples" << YAML::Value << s.max_samples;
  out << YAML::Key << "round_ratio" << YAML::Value << real_text(s.round_ratio);
  out << YAML::Key << "adjust" << YAML::Value << real_text(s.adjust);
  out << YAML::Key << "floor" << YAML::Value << real_text(s.floor);
  out << YAML::EndMap;

  out << YAML::Key << "strategy" << YAML::Value << std::string(strategy_name(c.strategy));

  const GaSettings& g = c.ga;
  out << YAML::Key << "ga" << YAML::Value << YAML::BeginMap;
  if (!g.auto_population) {  // else split over the ranks (GaSettings::for_islands)
    out << YAML::Key << "population" << YAML::Value << g.population;
    out << YAML::Key << "rows" << YAML::Value << g.rows;
    out << YAML::Key << "cols" << YAML::Value << g.cols;
  }
  out << YAML::Key << "crossover_rate" << YAML::Value << real_text(g.crossover_rate);
  out << YAML::Key << "mutation_rate" << YAML::Value << real_text(g.mutation_rate);
  out << YAML::Key << "encoding" << YAML::Value << std::string(encoding_name(g.encoding));
  out << YAML::Key << "gray" << YAML::Value << g.gray;
  out << YAML::Key << "migration" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "interval" << YAML::Value << g.migration_interval;
  out << YAML::Key << "count" << YAML::Value << g.migration_count;
  out << YAML::Key << "lag" << YAML::Value << g.migration_lag;
  if (g.migration_drift != GaSettings::kDriftAuto)
    out << YAML::Key << "drift" << YAML::Value << g.drift_text();
  out << YAML::Key << "fill" << YAML::Value << g.fill_picks;
  out << YAML::EndMap;
  out << YAML::Key << "mcr_threshold" << YAML::Value << real_text(g.mcr_threshold);
  out << YAML::Key << "candidates" << YAML::Value << g.candidates;
  out << YAML::Key << "model_picks" << YAML::Value << g.model_picks;
  out << YAML::Key << "model_policy" << YAML::Value
      << std::string(model_policy_name(g.model_policy));
  out << YAML::Key << "model_trees" << YAML::Value << g.model_trees;
  out << YAML::Key << "pipeline" << YAML::Value << g.pipeline;
  out << YAML::Key << "predicted_seeds" << YAML::Value << g.predicted_seeds;
  out << YAML::EndMap;

  out << YAML::Key << "budget" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "max_generations" << YAML::Value << g.max_generations;
  out << YAML::Key << "max_evaluations" << YAML::Value << g.max_evaluations;
  out << YAML::Key << "time_budget_s" << YAML::Value << real_text(g.time_budget_s);
  out << YAML::EndMap;

  const EvaluatorConfig& e = c.evaluator;
  out << YAML::Key << "evaluator" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "backend" << YAML::Value << std::string(backend_name(e.backend));
  if (!e.dataset.empty())
    out << YAML::Key << "dataset" << YAML::Value << e.dataset.string();
  out << YAML::Key << "timeout_s" << YAML::Value << real_text(e.timeout_s);
  out << YAML::Key << "compile_timeout_s" << YAML::Value << real_text(e.compile_timeout_s);
  out << YAML::Key << "slow_factor" << YAML::Value << real_text(e.slow_factor);
  out << YAML::Key << "race_factor" << YAML::Value << real_text(e.race_factor);
  out << YAML::Key << "settle_spread" << YAML::Value << real_text(e.settle_spread);
  out << YAML::Key << "full_verification" << YAML::Value << e.full_verification;
  out << YAML::Key << "compile_threads" << YAML::Value << e.compile_threads;
  if (e.compile_scale != 1)
    out << YAML::Key << "compile_scale" << YAML::Value << real_text(e.compile_scale);
  if (!e.cache_dir.empty())
    out << YAML::Key << "cache_dir" << YAML::Value << e.cache_dir;
  out << YAML::EndMap;

  out << YAML::Key << "seed" << YAML::Value << c.seed;
  out << YAML::Key << "output" << YAML::Value << c.output.string();
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

void apply_overrides(Config& c, const ConfigOverrides& o) {
  if (o.backend) {
    if (*o.backend == "cuda") {
      c.evaluator.backend = Backend::cuda;
    } else if (*o.backend == "replay") {
      c.evaluator.backend = Backend::replay;
    } else {
      throw InputError("--backend: expected cuda or replay, got " + quote_value(*o.backend) + ".");
    }
  }
  if (o.output) {
    if (o.output->empty())
      throw InputError("--out: expected a directory path, got ''.");
    c.output = *o.output;
  }
  if (o.seed)
    c.seed = *o.seed;
  if (c.evaluator.backend == Backend::replay && c.evaluator.dataset.empty()) {
    throw InputError(c.origin + ": evaluator.dataset is missing; --backend replay needs a " +
                     "recorded trace.h5 or dataset in the config.");
  }
  resolve_drift(c);
}

void resolve_drift(Config& c) {
  const bool automatic = c.ga.migration_drift == GaSettings::kDriftAuto;
  if (automatic) {
    const bool measured = c.evaluator.backend == Backend::cuda;
    c.ga.migration_drift = measured && c.ga.migration_lag == 0 ? GaSettings::kDriftAsync : -1;
  }
  // fill measures only while an island waits for a neighbour drift generations behind: a
  // fill without drift would silently do nothing.
  if (c.ga.fill_picks > 0 && c.ga.migration_drift < 0) {
    const std::string why = c.ga.migration_lag != 0 ? "ga.migration.lag 1 (the deterministic ring)"
                            : automatic             ? "the replay backend's default (no drift)"
                                                    : "ga.migration.drift -1 (off)";
    throw InputError(c.origin + ": ga.migration.fill " + std::to_string(c.ga.fill_picks) +
                     " measures only while an island waits with ga.migration.drift, which " + why +
                     " turns off, so it would do nothing; set ga.migration.drift (e.g. 1) or "
                     "remove fill.");
  }
}

Stencil resolve_stencil(const Config& c) {
  switch (c.stencil.source) {
    case StencilSource::library:
      return load_stencil_for(c.origin, "stencil",
                              [&] { return load_library_stencil(c.stencil.name); });
    case StencilSource::file:
      return load_stencil_for(c.origin, "stencil.file",
                              [&] { return load_stencil_file(c.stencil.file.string()); });
    case StencilSource::points:
      break;
  }
  return load_stencil_for(c.origin, "stencil.points", [&] {
    return stencil_from_points(c.stencil.name, c.stencil.dims, c.stencil.points,
                               c.origin + ": stencil.points");
  });
}

Problem Config::problem() const {
  return Problem{resolve_stencil(*this), grid, steps, warmup, repeats};
}

Space::Values space_values(const Config& c) {
  return apply_space_overrides(Space::default_values(c.stencil.dims, c.grid), c.space, c.origin);
}

Space::Values apply_space_overrides(Space::Values base, const std::vector<SpaceOverride>& overrides,
                                    const std::string& origin) {
  for (const SpaceOverride& o : overrides) {
    const std::string key = origin + ": space." + std::string(param_name(o.param));
    std::set<int> values(base[index_of(o.param)].begin(), base[index_of(o.param)].end());
    if (o.values)
      values = std::set<int>(o.values->begin(), o.values->end());
    values.insert(o.add.begin(), o.add.end());
    for (int v : o.remove) {
      if (values.erase(v) == 0) {
        throw InputError(key + ".remove lists " + std::to_string(v) +
                         ", which is not among the parameter's values; expected one of them.");
      }
    }
    if (values.empty()) {
      throw InputError(key + " leaves no value; expected at least one allowed value.");
    }
    base[index_of(o.param)].assign(values.begin(), values.end());
  }
  return base;
}

}  // namespace isletune
