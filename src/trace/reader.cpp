// TraceReader: format/version checks, run-level data, and rank tables via links.
#include "trace/reader.hpp"

#include <cmath>

#include <algorithm>
#include <cstdio>
#include <set>
#include <type_traits>

#include "common/error.hpp"
#include "common/text.hpp"
#include "setting/oc.hpp"
#include "trace/h5.hpp"
#include "trace/rank_writer.hpp"
#include "trace/run_writer.hpp"
#include "trace/tables.hpp"

namespace isletune {

struct TraceReader::Impl {
  std::filesystem::path path;
  h5::File file;
  std::string format;
  int version = 0;

  // Opens /ranks/NNNN (following an external link relative to the trace's directory) and
  // checks, once per rank, that the rank file belongs here and has this schema.
  [[nodiscard]] h5::Object rank_group(int rank) const;
  // The schema checks of rank_group: the rank attribute, the `committed` row counts, the
  // evaluations row type (values as kParamCount ints, status an integer).
  void check_rank_schema(int rank, hid_t group) const;
  // Evaluation rows hold only known statuses.
  void check_evaluations(int rank, const std::vector<EvaluationRecord>& evals) const;
  // "FILE: rank file rank-NNNN.h5" for messages.
  [[nodiscard]] std::string rank_where(int rank) const;
  // `value` when it is a plain name (common/text.hpp: the rule the config applies), else
  // InputError naming the file and `what` (e.g. "the name attribute of /stencil"): names
  // read back from a trace or dataset reach generated code and terminals (issue 50).
  [[nodiscard]] std::string plain_name(std::string value, const std::string& what) const;
  mutable std::set<int> checked_ranks;
  // Runs f, turning HDF5 failures into one sentence about `what`.
  template <typename F>
  auto guarded(const std::string& what, F&& f) const {
    try {
      return f();
    } catch (const h5::Error& e) {
      // HDF5's reason, not the call and source line of e.what(): the message is the user's.
      throw InputError(display_path(path) + ": cannot read " + what +
                       (e.reason().empty() ? "" : " (" + printable(e.reason(), 120) + ")") +
                       "; the trace is damaged or incomplete.");
    }
  }
};

namespace {

using trace_detail::FeatureRow;
using trace_detail::OcRow;
using trace_detail::ParameterRow;
using trace_detail::rank_digits;

// Reads a whole numeric dataset (any shape) as mem_type into a flat vector.
template <typename T>
std::vector<T> read_flat(hid_t loc, const char* name, hid_t mem_type) {
  h5::Dataset ds(H5_CHECK(H5Dopen2(loc, name, H5P_DEFAULT)));
  h5::Dataspace space(H5_CHECK(H5Dget_space(ds.get())));
  std::vector<T> values(
      static_cast<std::size_t>(H5_CHECK(H5Sget_simple_extent_npoints(space.get()))));
  if (!values.empty()) {
    H5_CHECK(H5Dread(ds.get(), mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()));
  }
  return values;
}

std::string attr_or_empty(hid_t obj, const char* name) {
  return h5::has_attr(obj, name) ? h5::read_attr_string(obj, name) : std::string();
}

}  // namespace

h5::Object TraceReader::Impl::rank_group(int rank) const {
  const std::string link = "ranks/" + rank_digits(rank);
  const bool present = guarded(
      "/ranks", [&] { return h5::exists(file.get(), "ranks") && h5::exists(file.get(), link); });
  if (!present) {
    throw InputError(display_path(path) + ": rank " + std::to_string(rank) +
                     " is not in this trace (no /" + link + ").");
  }
  // External links resolve against the trace's own directory, wherever the reader runs.
  h5::PropList lapl(H5_CHECK(H5Pcreate(H5P_LINK_ACCESS)));
  const std::string prefix = path.parent_path().empty() ? "." : path.parent_path().string();
  H5_CHECK(H5Pset_elink_prefix(lapl.get(), (prefix + "/").c_str()));
  h5::Object group(H5Oopen(file.get(), link.c_str(), lapl.get()));
  if (!group.valid()) {
    H5Eclear2(H5E_DEFAULT);
    throw InputError(display_path(path) + ": rank file " + RankTraceWriter::file_name(rank) +
                     " linked from /" + link +
                     " is missing, truncated or not an HDF5 file; expected it next to " +
                     path.filename().string() + ".");
  }
  if (!checked_ranks.contains(rank)) {
    check_rank_schema(rank, group.get());
    checked_ranks.insert(rank);
  }
  return group;
}

std::string TraceReader::Impl::plain_name(std::string value, const std::string& what) const {
  if (!is_plain_name(value)) {
    throw InputError(display_path(path) + ": " + what + " is not " + kPlainNameRule +
                     " (the file is damaged or was not written by isletune).");
  }
  return value;
}

std::string TraceReader::Impl::rank_where(int rank) const {
  return display_path(path) + ": " +
         (format == kDatasetFormat ? "/" + ("ranks/" + rank_digits(rank))
                                   : "rank file " + RankTraceWriter::file_name(rank));
}

void TraceReader::Impl::check_rank_schema(int rank, hid_t group) const {
  const std::string where = rank_where(rank);
  guarded("/ranks/" + rank_digits(rank), [&] {
    if (h5::has_attr(group, "rank")) {
      const auto recorded = h5::read_attr_int(group, "rank");
      if (recorded != rank) {
        throw InputError(where + " says it is rank " + std::to_string(recorded) +
                         "; expected rank " + std::to_string(rank) +
                         " (a rank file copied from elsewhere?).");
      }
    }
    // A rank file that records the creation time of its run's trace.h5 must match it.
    if (h5::has_attr(group, "run_created") && h5::has_attr(file.get(), "created")) {
      const std::string mine = h5::read_attr_string(group, "run_created");
      const std::string run = h5::read_attr_string(file.get(), "created");
      if (mine != run) {
        throw InputError(where + " belongs to a run created " + quote_value(mine) +
                         ", not to this one (created " + quote_value(run) +
                         "); expected the rank files this run wrote.");
      }
    }
    if (h5::has_attr(group, "committed")) {
      for (const std::int64_t n : h5::read_attr_ints64(group, "committed")) {
        if (n < 0) {
          throw InputError(where + " has a negative committed row count " + std::to_string(n) +
                           "; expected counts >= 0 (the file is damaged).");
        }
      }
    }
    if (!h5::exists(group, "evaluations")) {
      throw InputError(where + " has no evaluations table; expected an isletune rank trace.");
    }
    // A committed count past a table's rows: rows the file claims but does not hold.
    if (h5::has_attr(group, "committed")) {
      const auto committed = h5::read_attr_ints64(group, "committed");
      const char* tables[] = {"evaluations", "generations", "migrations"};
      for (std::size_t i = 0; i < committed.size() && i < 3; ++i) {
        if (!h5::exists(group, tables[i]))
          continue;
        h5::Dataset t(H5_CHECK(H5Dopen2(group, tables[i], H5P_DEFAULT)));
        h5::Dataspace space(H5_CHECK(H5Dget_space(t.get())));
        const auto rows = H5_CHECK(H5Sget_simple_extent_npoints(space.get()));
        if (committed[i] > rows) {
          throw InputError(where + " says " + std::to_string(committed[i]) + " rows of " +
                           tables[i] + " are committed but holds " + std::to_string(rows) +
                           " (the file is damaged).");
        }
      }
    }
    h5::Dataset table(H5_CHECK(H5Dopen2(group, "evaluations", H5P_DEFAULT)));
    h5::Datatype type(H5_CHECK(H5Dget_type(table.get())));
    auto member = [&](const char* name) -> h5::Datatype {
      if (H5Tget_class(type.get()) != H5T_COMPOUND || H5Tget_member_index(type.get(), name) < 0) {
        H5Eclear2(H5E_DEFAULT);
        throw InputError(where + ": the evaluations table has no column " + name +
                         "; expected the isletune evaluation row.");
      }
      return h5::Datatype(
          H5_CHECK(H5Tget_member_type(type.get(), H5Tget_member_index(type.get(), name))));
    };
    // The settings columns are mapped by the names the table stores (tables.hpp:
    // ParamColumns), so their number may differ from this build's; the names must match it.
    const h5::Datatype values = member("values");
    hsize_t width = 0;
    if (H5Tget_class(values.get()) != H5T_ARRAY || H5Tget_array_ndims(values.get()) != 1 ||
        H5Tget_array_dims2(values.get(), &width) != 1 || width < 1) {
      throw InputError(where +
                       ": the evaluations column values is not an integer per parameter "
                       "(a 1-D array); expected the isletune evaluation row.");
    }
    h5::Dataset table_ds(H5_CHECK(H5Dopen2(group, "evaluations", H5P_DEFAULT)));
    const std::vector<std::string> names = h5::has_attr(table_ds.get(), "parameters")
                                               ? h5::read_attr_strings(table_ds.get(), "parameters")
                                               : trace_detail::parameter_names();
    if (names.size() != width) {
      throw InputError(where + ": the evaluations column values has " + std::to_string(width) +
                       " integers per row but its parameters attribute names " +
                       std::to_string(names.size()) + " (the file is damaged).");
    }
    (void)trace_detail::param_columns(names, where + ": the evaluations table");
    if (H5Tget_class(member("status").get()) != H5T_INTEGER) {
      throw InputError(where + ": the evaluations column status is not an integer.");
    }
    return 0;
  });
}

void TraceReader::Impl::check_evaluations(int rank,
                                          const std::vector<EvaluationRecord>& evals) const {
  for (std::size_t row = 0; row < evals.size(); ++row) {
    const EvaluationRecord& e = evals[row];
    const int status = static_cast<int>(e.measurement.status);
    if (status < 0 || status >= kStatusCount) {
      throw InputError(rank_where(rank) + ": evaluation row " + std::to_string(row) +
                       " has status " + std::to_string(status) + "; expected 0 to " +
                       std::to_string(kStatusCount - 1) + " (the file is damaged).");
    }
    // A verified measurement has a time: NaN, infinite, zero or negative is damage.
    const double median = e.measurement.median_ms;
    if (e.measurement.status == Status::ok && !(std::isfinite(median) && median > 0)) {
      throw InputError(rank_where(rank) + ": evaluation row " + std::to_string(row) +
                       " is ok with a median of " + std::to_string(median) +
                       " ms; expected a positive time (the file is damaged).");
    }
  }
}

TraceReader::TraceReader(const std::filesystem::path& path) : impl_(std::make_unique<Impl>()) {
  h5::quiet_errors();

  std::filesystem::path file = path;
  if (std::filesystem::is_directory(path))
    file = path / RunTraceWriter::kTraceFile;
  impl_->path = file;
  if (!std::filesystem::exists(file)) {
    throw InputError(display_path(file) +
                     ": no such trace; expected a run directory with trace.h5 or an .h5 dataset.");
  }
  if (H5Fis_hdf5(file.c_str()) <= 0) {
    H5Eclear2(H5E_DEFAULT);
    throw InputError(display_path(file) +
                     ": not an HDF5 file (or truncated); expected an isletune " +
                     "trace or dataset.");
  }
  impl_->file = h5::File(H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT));
  if (!impl_->file.valid()) {
    H5Eclear2(H5E_DEFAULT);
    throw InputError(display_path(file) + ": cannot open the HDF5 file (truncated or locked by a " +
                     "running writer).");
  }
  const hid_t root = impl_->file.get();
  impl_->format =
      impl_->guarded("the root attributes", [&] { return attr_or_empty(root, "format"); });
  if (impl_->format == kRankFormat) {
    throw InputError(display_path(file) + ": is a per-rank file; open the run's trace.h5 instead.");
  }
  if (impl_->format != kTraceFormat && impl_->format != kDatasetFormat) {
    throw InputError(display_path(file) + ": root attribute format is " +
                     quote_value(impl_->format) + ", expected '" + kTraceFormat + "' or '" +
                     kDatasetFormat + "'.");
  }
  impl_->version = static_cast<int>(impl_->guarded("the version", [&] {
    return h5::has_attr(root, "version") ? h5::read_attr_int(root, "version") : -1;
  }));
  if (impl_->version != kTraceVersion) {
    throw InputError(
        display_path(file) + ": trace format version " + std::to_string(impl_->version) +
        " is not supported; this isletune reads version " + std::to_string(kTraceVersion) + ".");
  }
}

TraceReader::TraceReader(TraceReader&&) noexcept = default;
TraceReader& TraceReader::operator=(TraceReader&&) noexcept = default;
TraceReader::~TraceReader() = default;

const std::filesystem::path& TraceReader::path() const {
  return impl_->path;
}
std::string TraceReader::format() const {
  return impl_->format;
}
int TraceReader::version() const {
  return impl_->version;
}

RunInfo TraceReader::run_info() const {
  return impl_->guarded("the root attributes", [&] {
    const hid_t root = impl_->file.get();
    RunInfo info;
    info.command = attr_or_empty(root, "command");
    info.created = attr_or_empty(root, "created");
    info.isletune_version = attr_or_empty(root, "isletune_version");
    info.seed = h5::has_attr(root, "seed") ? h5::read_attr_uint(root, "seed") : 0;
    return info;
  });
}

std::string TraceReader::config_yaml() const {
  return impl_->guarded("/config", [&]() -> std::string {
    if (!h5::exists(impl_->file.get(), "config"))
      return {};
    h5::Group g(H5_CHECK(H5Gopen2(impl_->file.get(), "config", H5P_DEFAULT)));
    return attr_or_empty(g.get(), "yaml");
  });
}

std::string TraceReader::replay_fingerprint() const {
  return impl_->guarded("/config", [&]() -> std::string {
    if (!h5::exists(impl_->file.get(), "config"))
      return {};
    h5::Group g(H5_CHECK(H5Gopen2(impl_->file.get(), "config", H5P_DEFAULT)));
    return attr_or_empty(g.get(), "replay_fingerprint");
  });
}

StencilInfo TraceReader::stencil() const {
  return impl_->guarded("/stencil", [&] {
    h5::Group group(H5_CHECK(H5Gopen2(impl_->file.get(), "stencil", H5P_DEFAULT)));
    const hid_t g = group.get();
    StencilInfo s;
    s.name = impl_->plain_name(h5::read_attr_string(g, "name"), "the name attribute of /stencil");
    s.dims = static_cast<int>(h5::read_attr_int(g, "dims"));
    s.order = static_cast<int>(h5::read_attr_int(g, "order"));
    s.shape =
        impl_->plain_name(h5::read_attr_string(g, "shape"), "the shape attribute of /stencil");
    const auto offsets = read_flat<int>(g, "offsets", H5T_NATIVE_INT);
    for (std::size_t i = 0; i + 2 < offsets.size(); i += 3) {
      s.offsets.push_back({offsets[i], offsets[i + 1], offsets[i + 2]});
    }
    s.coefficients = read_flat<double>(g, "coefficients", H5T_NATIVE_DOUBLE);
    // Impossible shapes are damage, not a stencil to report or export (issue 50).
    if (s.dims != 2 && s.dims != 3) {
      throw InputError(display_path(impl_->path) + ": /stencil has dims " + std::to_string(s.dims) +
                       "; expected 2 or 3 (the file is damaged).");
    }
    if (offsets.size() % 3 != 0 || offsets.size() / 3 != s.coefficients.size()) {
      throw InputError(display_path(impl_->path) + ": /stencil/offsets holds " +
                       std::to_string(offsets.size()) + " integers and /stencil/coefficients " +
                       std::to_string(s.coefficients.size()) +
                       " numbers; expected 3 integers and one coefficient per point (the file "
                       "is damaged).");
    }
    const h5::Datatype row = trace_detail::feature_row_type();
    auto rows = read_flat<FeatureRow>(g, "features", row.get());
    for (const auto& r : rows)
      s.features.push_back({r.name != nullptr ? r.name : "", r.value});
    h5::reclaim(row.get(), rows.data(), rows.size());
    for (const StencilFeature& f : s.features)
      (void)impl_->plain_name(f.name, "a feature name in /stencil/features");
    return s;
  });
}

std::vector<ParameterInfo> TraceReader::space_parameters() const {
  return impl_->guarded("/space/parameters", [&] {
    h5::Group group(H5_CHECK(H5Gopen2(impl_->file.get(), "space", H5P_DEFAULT)));
    const h5::Datatype row = trace_detail::parameter_row_type();
    auto rows = read_flat<ParameterRow>(group.get(), "parameters", row.get());
    std::vector<ParameterInfo> params;
    for (const auto& r : rows) {
      const int* v = static_cast<const int*>(r.values.p);
      params.push_back({r.name != nullptr ? r.name : "", r.kind != nullptr ? r.kind : "",
                        v == nullptr ? std::vector<int>{} : std::vector<int>(v, v + r.values.len)});
    }
    h5::reclaim(row.get(), rows.data(), rows.size());
    for (const ParameterInfo& p : params) {
      (void)impl_->plain_name(p.name, "a parameter name in /space/parameters");
      (void)impl_->plain_name(p.kind, "a parameter kind in /space/parameters");
    }
    return params;
  });
}

std::vector<int> TraceReader::space_neutral_values() const {
  return impl_->guarded("/space/parameters", [&]() -> std::vector<int> {
    h5::Group group(H5_CHECK(H5Gopen2(impl_->file.get(), "space", H5P_DEFAULT)));
    h5::Dataset parameters(H5_CHECK(H5Dopen2(group.get(), "parameters", H5P_DEFAULT)));
    if (!h5::has_attr(parameters.get(), "neutral"))
      return {};
    const auto v = h5::read_attr_ints(parameters.get(), "neutral");
    return {v.begin(), v.end()};
  });
}

std::vector<OcInfo> TraceReader::space_ocs() const {
  return impl_->guarded("/space/ocs", [&]() -> std::vector<OcInfo> {
    h5::Group group(H5_CHECK(H5Gopen2(impl_->file.get(), "space", H5P_DEFAULT)));
    if (!h5::exists(group.get(), "ocs"))
      return {};
    // A trace written before the rule column has only the flags: its rule is theirs.
    const h5::Dataset table(H5_CHECK(H5Dopen2(group.get(), "ocs", H5P_DEFAULT)));
    const h5::Datatype file_type(H5_CHECK(H5Dget_type(table.get())));
    const bool has_rule = H5Tget_member_index(file_type.get(), "rule") >= 0;
    const h5::Datatype row = trace_detail::oc_row_type(has_rule);
    auto rows = read_flat<OcRow>(group.get(), "ocs", row.get());
    std::vector<OcInfo> ocs;
    for (const auto& r : rows) {
      const OcFlags flags{r.streaming, r.merge, r.retiming, r.prefetch, r.temporal};
      ocs.push_back({r.oc, r.name != nullptr ? r.name : "", r.streaming, r.merge, r.retiming,
                     r.prefetch, r.temporal,
                     has_rule ? (r.rule != nullptr ? r.rule : "") : flag_oc(flags).rule()});
    }
    h5::reclaim(row.get(), rows.data(), rows.size());
    for (const OcInfo& oc : ocs) {
      (void)impl_->plain_name(oc.name, "an OC name in /space/ocs");
      (void)impl_->plain_name(oc.rule, "an OC rule in /space/ocs");
    }
    return ocs;
  });
}

Space::Values TraceReader::space_values() const {
  Space::Values values;
  for (const ParameterInfo& p : space_parameters()) {
    const auto param = param_from_name(p.name);
    if (!param) {
      throw InputError(display_path(impl_->path) +
                       ": /space/parameters names an unknown parameter " + quote_value(p.name) +
                       ".");
    }
    values[index_of(*param)] = p.values;
  }
  return values;
}

std::optional<SampleData> TraceReader::sample() const {
  return impl_->guarded("/sample", [&]() -> std::optional<SampleData> {
    if (!h5::exists(impl_->file.get(), "sample"))
      return std::nullopt;
    h5::Group group(H5_CHECK(H5Gopen2(impl_->file.get(), "sample", H5P_DEFAULT)));
    SampleData s;
    const auto flat = read_flat<int>(group.get(), "settings", H5T_NATIVE_INT);
    h5::Dataset settings(H5_CHECK(H5Dopen2(group.get(), "settings", H5P_DEFAULT)));
    const trace_detail::ParamColumns columns =
        trace_detail::param_columns(h5::has_attr(settings.get(), "parameters")
                                        ? h5::read_attr_strings(settings.get(), "parameters")
                                        : trace_detail::parameter_names(),
                                    display_path(impl_->path) + ": /sample/settings");
    const std::size_t width = columns.param.size();
    if (width == 0 || flat.size() % width != 0) {
      throw InputError(display_path(impl_->path) + ": /sample/settings holds " +
                       std::to_string(flat.size()) + " integers, not rows of " +
                       std::to_string(width) + " (one per parameter; the file is damaged).");
    }
    for (std::size_t i = 0; i + width <= flat.size(); i += width)
      s.settings.push_back(columns.setting(flat.data() + i));
    s.oc = read_flat<int>(group.get(), "oc", H5T_NATIVE_INT);
    s.predicted = read_flat<double>(group.get(), "predicted", H5T_NATIVE_DOUBLE);
    return s;
  });
}

std::vector<EnvironmentInfo> TraceReader::environment() const {
  return impl_->guarded("/environment", [&] {
    std::vector<EnvironmentInfo> envs;
    if (!h5::exists(impl_->file.get(), "environment"))
      return envs;
    h5::Group all(H5_CHECK(H5Gopen2(impl_->file.get(), "environment", H5P_DEFAULT)));
    H5G_info_t info;
    H5_CHECK(H5Gget_info(all.get(), &info));
    const hsize_t n = info.nlinks;
    for (hsize_t i = 0; i < n; ++i) {
      char name[64] = {};
      H5_CHECK(H5Lget_name_by_idx(all.get(), ".", H5_INDEX_NAME, H5_ITER_INC, i, name, sizeof name,
                                  H5P_DEFAULT));
      h5::Group g(H5_CHECK(H5Gopen2(all.get(), name, H5P_DEFAULT)));
      const hid_t id = g.get();
      EnvironmentInfo e;
      e.rank = static_cast<int>(h5::read_attr_int(id, "rank"));
      e.host = h5::read_attr_string(id, "host");
      e.gpu_name = h5::read_attr_string(id, "gpu_name");
      e.gpu_uuid = h5::read_attr_string(id, "gpu_uuid");
      e.sm_count = static_cast<int>(h5::read_attr_int(id, "sm_count"));
      e.sm_clock_mhz = static_cast<int>(h5::read_attr_int(id, "sm_clock_mhz"));
      e.memory_clock_mhz = static_cast<int>(h5::read_attr_int(id, "memory_clock_mhz"));
      e.driver_version = h5::read_attr_string(id, "driver_version");
      e.cuda_version = h5::read_attr_string(id, "cuda_version");
      e.mpi_library = h5::read_attr_string(id, "mpi_library");
      if (h5::has_attr(id, "compile_threads"))  // absent in older traces
        e.compile_threads = static_cast<int>(h5::read_attr_int(id, "compile_threads"));
      if (h5::has_attr(id, "compile_cpus"))  // absent in older traces
        e.compile_cpus = h5::read_attr_string(id, "compile_cpus");
      if (h5::has_attr(id, "node")) {  // absent in older traces
        e.node = h5::read_attr_string(id, "node");
        e.node_rank = static_cast<int>(h5::read_attr_int(id, "node_rank"));
        e.node_ranks = static_cast<int>(h5::read_attr_int(id, "node_ranks"));
        e.gpu_device = h5::read_attr_string(id, "gpu_device");
      }
      if (h5::exists(id, "device_limits")) {
        h5::Group limits(H5_CHECK(H5Gopen2(id, "device_limits", H5P_DEFAULT)));
        const hid_t l = limits.get();
        DeviceLimits d;
        for_each_field(d, [&](const char* field, auto& v) {
          using T = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<T, std::string>) {
            v = h5::read_attr_string(l, field);
          } else if constexpr (std::is_same_v<T, int>) {
            v = static_cast<int>(h5::read_attr_int(l, field));
          } else if constexpr (std::is_same_v<T, double>) {
            if (h5::has_attr(l, field))  // fp64_tensor_gflops came later: its default stays
              v = h5::read_attr_double(l, field);
          } else if (h5::has_attr(l, field)) {  // the block and grid limits came later
            const std::vector<std::int64_t> got = h5::read_attr_ints64(l, field);
            if (got.size() == v.size())
              std::copy(got.begin(), got.end(), v.begin());
          }
        });
        e.limits = d;
      }
      envs.push_back(std::move(e));
    }
    return envs;
  });
}

std::vector<int> TraceReader::ranks() const {
  return impl_->guarded("/ranks", [&] {
    std::vector<int> ranks;
    if (!h5::exists(impl_->file.get(), "ranks")) {
      throw InputError(display_path(impl_->path) +
                       " has no /ranks group; expected an isletune trace or dataset with its "
                       "rank tables (the file is damaged or was not written by isletune).");
    }
    h5::Group all(H5_CHECK(H5Gopen2(impl_->file.get(), "ranks", H5P_DEFAULT)));
    H5G_info_t info;
    H5_CHECK(H5Gget_info(all.get(), &info));
    for (hsize_t i = 0; i < info.nlinks; ++i) {
      char name[64] = {};
      H5_CHECK(H5Lget_name_by_idx(all.get(), ".", H5_INDEX_NAME, H5_ITER_INC, i, name, sizeof name,
                                  H5P_DEFAULT));
      ranks.push_back(std::atoi(name));
    }
    std::sort(ranks.begin(), ranks.end());
    return ranks;
  });
}

std::vector<EvaluationRecord> TraceReader::evaluations(int rank) const {
  const h5::Object g = impl_->rank_group(rank);
  auto evals = impl_->guarded("/ranks/" + rank_digits(rank) + "/evaluations",
                              [&] { return trace_detail::read_evaluations(g.get()); });
  impl_->check_evaluations(rank, evals);
  return evals;
}

std::vector<GenerationRecord> TraceReader::generations(int rank) const {
  const h5::Object g = impl_->rank_group(rank);
  return impl_->guarded("/ranks/" + rank_digits(rank) + "/generations",
                        [&] { return trace_detail::read_generations(g.get()); });
}

std::vector<MigrationRecord> TraceReader::migrations(int rank) const {
  const h5::Object g = impl_->rank_group(rank);
  return impl_->guarded("/ranks/" + rank_digits(rank) + "/migrations",
                        [&] { return trace_detail::read_migrations(g.get()); });
}

std::optional<Checkpoint> TraceReader::checkpoint(int rank) const {
  const h5::Object g = impl_->rank_group(rank);
  return impl_->guarded("/ranks/" + rank_digits(rank) + "/checkpoint",
                        [&] { return trace_detail::read_checkpoint(g.get()); });
}

std::optional<ResultInfo> TraceReader::result() const {
  return impl_->guarded("/result", [&]() -> std::optional<ResultInfo> {
    if (!h5::exists(impl_->file.get(), "result"))
      return std::nullopt;
    h5::Group group(H5_CHECK(H5Gopen2(impl_->file.get(), "result", H5P_DEFAULT)));
    const hid_t g = group.get();
    ResultInfo r;
    r.best_key = h5::read_attr_string(g, "best_key");
    const auto values = h5::read_attr_ints(g, "best_values");
    std::copy_n(values.begin(), std::min(values.size(), kParamCount), r.best.values.begin());
    r.best_rank = static_cast<int>(h5::read_attr_int(g, "best_rank"));
    r.median_ms = h5::read_attr_double(g, "median_ms");
    r.gcells_per_s = h5::read_attr_double(g, "gcells_per_s");
    r.stop_reason = h5::read_attr_string(g, "stop_reason");
    r.generations = static_cast<int>(h5::read_attr_int(g, "generations"));
    r.evaluations = h5::read_attr_int(g, "evaluations");
    r.wall_s = h5::read_attr_double(g, "wall_s");
    h5::Dataset source(H5_CHECK(H5Dopen2(g, "source", H5P_DEFAULT)));
    h5::Datatype str = h5::string_type();
    char* text = nullptr;
    H5_CHECK(H5Dread(source.get(), str.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, &text));
    r.source = text != nullptr ? text : "";
    H5free_memory(text);
    return r;
  });
}

}  // namespace isletune
