// RunTraceWriter: trace.h5 (or a dataset file) with everything but the rank tables.
#include "trace/run_writer.hpp"

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <functional>
#include <regex>
#include <system_error>
#include <type_traits>

#include "common/error.hpp"
#include "kernel/registry.hpp"
#include "trace/h5.hpp"
#include "trace/rank_writer.hpp"
#include "trace/tables.hpp"

namespace isletune {

struct RunTraceWriter::Impl {
  // Shared with the inline rank writer of a dataset, which reopens the file after each
  // commit (see RankTraceWriter::commit); every use goes through file->get().
  std::shared_ptr<h5::File> file = std::make_shared<h5::File>();
  std::filesystem::path path;
  bool dataset = false;
};

// Current UTC time as ISO 8601 with microseconds: two runs started in the same second still
// get different stamps (a rank file names its run by it).
std::string utc_now_iso() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  const long long us =
      std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count() %
      1000000;
  std::tm tm{};
  gmtime_r(&t, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &tm);
  char full[48];
  std::snprintf(full, sizeof full, "%s.%06lldZ", text, us);
  return full;
}

namespace {

// Creates a file with the root attributes of a trace or dataset (a trace exclusively: it
// fails when the file exists, so two runs never write one trace).
h5::File create_file(const std::filesystem::path& path, const char* format, const RunInfo& info,
                     bool exclusive) {
  h5::File file = trace_detail::create_trace_file(path, exclusive, "trace file", "a writable path");
  try {
    h5::Group root(H5_CHECK(H5Gopen2(file.get(), "/", H5P_DEFAULT)));
    h5::write_attr(root.get(), "format", std::string_view(format));
    h5::write_attr(root.get(), "version", static_cast<std::int32_t>(kTraceVersion));
    h5::write_attr(root.get(), "created",
                   std::string_view(info.created.empty() ? utc_now_iso() : info.created));
    h5::write_attr(root.get(), "command", std::string_view(info.command));
    h5::write_attr(root.get(), "isletune_version", std::string_view(info.isletune_version));
    h5::write_attr(root.get(), "seed", info.seed);
  } catch (const h5::Error& e) {
    // Abandoned without closing, as RankTraceWriter::commit does.
    static_cast<void>(new h5::File(std::move(file)));
    throw TraceWriteError(write_failure_sentence(path, e));
  }
  return file;
}

// Writes a dataset of `n0 x n1` (n1 = 0: 1-D) values of mem_type, stored as file_type.
void write_array(hid_t loc, const char* name, hid_t file_type, hid_t mem_type, const void* data,
                 hsize_t n0, hsize_t n1 = 0) {
  if (h5::exists(loc, name))
    H5_CHECK(H5Ldelete(loc, name, H5P_DEFAULT));
  const hsize_t dims[2] = {n0, n1};
  h5::Dataspace space(H5_CHECK(H5Screate_simple(n1 == 0 ? 1 : 2, dims, nullptr)));
  h5::Dataset ds(H5_CHECK(
      H5Dcreate2(loc, name, file_type, space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)));
  if (n0 > 0 && data != nullptr) {
    H5_CHECK(H5Dwrite(ds.get(), mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data));
  }
}

// Group `name` under loc, replacing an existing one.
h5::Group fresh_group(hid_t loc, const char* name) {
  if (h5::exists(loc, name))
    H5_CHECK(H5Ldelete(loc, name, H5P_DEFAULT));
  return h5::open_or_create_group(loc, name);
}

using trace_detail::FeatureRow;
using trace_detail::OcRow;
using trace_detail::ParameterRow;
using trace_detail::rank_digits;

}  // namespace

std::string stencil_shape(std::string_view name) {
  static const std::regex pattern("(star|box|cross)[23]d[1-9]r");
  std::cmatch m;
  if (std::regex_match(name.begin(), name.end(), m, pattern))
    return m[1].str();
  return "custom";
}

RunTraceWriter::RunTraceWriter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
RunTraceWriter::RunTraceWriter(RunTraceWriter&&) noexcept = default;
RunTraceWriter& RunTraceWriter::operator=(RunTraceWriter&&) noexcept = default;
RunTraceWriter::~RunTraceWriter() {
  if (impl_ && impl_->file->valid())
    H5Fflush(impl_->file->get(), H5F_SCOPE_LOCAL);
}

RunTraceWriter RunTraceWriter::create_trace(const std::filesystem::path& dir, const RunInfo& info) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    throw InputError(dir.string() + ": cannot create the output directory (" + ec.message() +
                     "); expected a writable path for output.");
  }
  auto impl = std::make_unique<Impl>();
  impl->path = dir / kTraceFile;
  *impl->file = create_file(dir / kTraceFile, kTraceFormat, info, true);
  return RunTraceWriter(std::move(impl));
}

RunTraceWriter RunTraceWriter::create_dataset(const std::filesystem::path& file,
                                              const RunInfo& info) {
  auto impl = std::make_unique<Impl>();
  // Exclusive like a trace: no file or link there is written through (the CLI removed a
  // file it was told to --overwrite).
  *impl->file = create_file(file, kDatasetFormat, info, true);
  impl->path = file;
  impl->dataset = true;
  return RunTraceWriter(std::move(impl));
}

RunTraceWriter RunTraceWriter::reopen_trace(const std::filesystem::path& dir) {
  h5::quiet_errors();
  const std::filesystem::path path = dir / kTraceFile;
  auto impl = std::make_unique<Impl>();
  impl->path = path;
  *impl->file = h5::File(H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT));
  if (!impl->file->valid()) {
    throw InputError(path.string() + ": cannot reopen the trace to resume; expected a " +
                     "writable trace.h5 of an earlier run.");
  }
  return RunTraceWriter(std::move(impl));
}

void RunTraceWriter::write_config(std::string_view yaml) {
  guarded([&] { write_config_now(yaml); });
}

void RunTraceWriter::write_config_now(std::string_view yaml) {
  h5::Group group = h5::open_or_create_group(impl_->file->get(), "config");
  h5::write_attr(group.get(), "yaml", yaml);
}

void RunTraceWriter::write_replay_fingerprint(std::string_view fingerprint) {
  guarded([&] {
    h5::Group group = h5::open_or_create_group(impl_->file->get(), "config");
    h5::write_attr(group.get(), "replay_fingerprint", fingerprint);
  });
}

void RunTraceWriter::write_stencil(const Stencil& stencil,
                                   const std::vector<StencilFeature>& features) {
  guarded([&] { write_stencil_now(stencil, features); });
}

void RunTraceWriter::write_stencil_now(const Stencil& stencil,
                                       const std::vector<StencilFeature>& features) {
  h5::Group group = fresh_group(impl_->file->get(), "stencil");
  const hid_t g = group.get();
  h5::write_attr(g, "name", std::string_view(stencil.name()));
  h5::write_attr(g, "dims", static_cast<std::int32_t>(stencil.dims()));
  h5::write_attr(g, "order", static_cast<std::int32_t>(stencil.order()));
  h5::write_attr(g, "shape", std::string_view(stencil_shape(stencil.name())));
  std::vector<std::int32_t> offsets;
  for (const Offset& o : stencil.offsets())
    offsets.insert(offsets.end(), {o.x, o.y, o.z});
  write_array(g, "offsets", H5T_STD_I32LE, H5T_NATIVE_INT32, offsets.data(),
              stencil.offsets().size(), 3);
  write_array(g, "coefficients", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, stencil.coefficients().data(),
              stencil.coefficients().size());

  const h5::Datatype row = trace_detail::feature_row_type();
  std::vector<FeatureRow> rows;
  for (const auto& f : features)
    rows.push_back({const_cast<char*>(f.name.c_str()), f.value});
  write_array(g, "features", row.get(), row.get(), rows.data(), rows.size());
}

void RunTraceWriter::write_space(const Space::Values& values) {
  guarded([&] { write_space_now(values); });
}

void RunTraceWriter::write_space_now(const Space::Values& values) {
  h5::Group group = h5::open_or_create_group(impl_->file->get(), "space");
  const h5::Datatype row = trace_detail::parameter_row_type();
  std::vector<std::string> names = trace_detail::parameter_names();
  std::vector<std::string> kinds;
  for (std::size_t i = 0; i < kParamCount; ++i)
    kinds.emplace_back(param_kind_name(param_kind(param_at(i))));
  std::vector<ParameterRow> rows;
  for (std::size_t i = 0; i < kParamCount; ++i) {
    rows.push_back({const_cast<char*>(names[i].c_str()), const_cast<char*>(kinds[i].c_str()),
                    hvl_t{values[i].size(), const_cast<int*>(values[i].data())}});
  }
  write_array(group.get(), "parameters", row.get(), row.get(), rows.data(), rows.size());
  std::vector<std::int32_t> neutral;
  for (std::size_t i = 0; i < kParamCount; ++i)
    neutral.push_back(neutral_value(param_at(i)));
  h5::Dataset parameters(H5_CHECK(H5Dopen2(group.get(), "parameters", H5P_DEFAULT)));
  h5::write_attr(parameters.get(), "neutral", neutral);

  // The OC table the kernel families declare (kernel/registry.hpp), so that readers keep no
  // copy of it: each OC's rule, and the legacy flag columns.
  const h5::Datatype oc_row = trace_detail::oc_row_type();
  std::vector<std::string> rules;
  for (const OcEntry& e : oc_table())
    rules.push_back(e.oc->rule());
  std::vector<OcRow> ocs;
  for (std::size_t i = 0; i < oc_table().size(); ++i) {
    const Oc& oc = *oc_table()[i].oc;
    const OcFlags f = flags_of(oc);
    ocs.push_back({oc.id, const_cast<char*>(oc.name.c_str()), f.streaming, f.merge, f.retiming,
                   f.prefetch, f.temporal, const_cast<char*>(rules[i].c_str())});
  }
  write_array(group.get(), "ocs", oc_row.get(), oc_row.get(), ocs.data(), ocs.size());
  h5::Dataset table(H5_CHECK(H5Dopen2(group.get(), "ocs", H5P_DEFAULT)));
  h5::write_attr(
      table.get(), "rule",
      std::string_view("a setting's OC is the row whose rule it meets: every name=value of the "
                       "rule, and tdeg>1 or tdeg=1; a parameter after the first 18 that other "
                       "rows name (a family's selector) is at its neutral value in a row that "
                       "does not name it (the flag columns: that row's streaming, merge, "
                       "retiming and prefetch, and temporal = tdeg > 1)"));
}

void RunTraceWriter::write_sample(const SampleData& sample) {
  guarded([&] { write_sample_now(sample); });
}

void RunTraceWriter::write_sample_now(const SampleData& sample) {
  const std::size_t n = sample.settings.size();
  if (sample.oc.size() != n || sample.predicted.size() != n) {
    throw std::invalid_argument("write_sample: settings, oc and predicted differ in length");
  }
  h5::Group group = fresh_group(impl_->file->get(), "sample");
  std::vector<std::int32_t> flat;
  flat.reserve(n * kParamCount);
  for (const Setting& s : sample.settings)
    flat.insert(flat.end(), s.values.begin(), s.values.end());
  write_array(group.get(), "settings", H5T_STD_I32LE, H5T_NATIVE_INT32, flat.data(), n,
              kParamCount);
  h5::Dataset settings(H5_CHECK(H5Dopen2(group.get(), "settings", H5P_DEFAULT)));
  h5::write_attr(settings.get(), "parameters", trace_detail::parameter_names());
  write_array(group.get(), "oc", H5T_STD_I32LE, H5T_NATIVE_INT, sample.oc.data(), n);
  write_array(group.get(), "predicted", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, sample.predicted.data(),
              n);
}

void RunTraceWriter::write_environment(const EnvironmentInfo& env) {
  guarded([&] { write_environment_now(env); });
}

void RunTraceWriter::write_environment_now(const EnvironmentInfo& env) {
  h5::Group all = h5::open_or_create_group(impl_->file->get(), "environment");
  h5::Group group = h5::open_or_create_group(all.get(), "rank_" + rank_digits(env.rank));
  const hid_t g = group.get();
  h5::write_attr(g, "rank", static_cast<std::int32_t>(env.rank));
  h5::write_attr(g, "host", std::string_view(env.host));
  h5::write_attr(g, "gpu_name", std::string_view(env.gpu_name));
  h5::write_attr(g, "gpu_uuid", std::string_view(env.gpu_uuid));
  h5::write_attr(g, "sm_count", static_cast<std::int32_t>(env.sm_count));
  h5::write_attr(g, "sm_clock_mhz", static_cast<std::int32_t>(env.sm_clock_mhz));
  h5::write_attr(g, "memory_clock_mhz", static_cast<std::int32_t>(env.memory_clock_mhz));
  h5::write_attr(g, "driver_version", std::string_view(env.driver_version));
  h5::write_attr(g, "cuda_version", std::string_view(env.cuda_version));
  h5::write_attr(g, "mpi_library", std::string_view(env.mpi_library));
  h5::write_attr(g, "compile_threads", static_cast<std::int32_t>(env.compile_threads));
  h5::write_attr(g, "compile_cpus", std::string_view(env.compile_cpus));
  h5::write_attr(g, "node", std::string_view(env.node));
  h5::write_attr(g, "node_rank", static_cast<std::int32_t>(env.node_rank));
  h5::write_attr(g, "node_ranks", static_cast<std::int32_t>(env.node_ranks));
  h5::write_attr(g, "gpu_device", std::string_view(env.gpu_device));
  if (env.limits) {
    const DeviceLimits& d = *env.limits;
    h5::Group limits = h5::open_or_create_group(g, "device_limits");
    const hid_t l = limits.get();
    for_each_field(d, [&](const char* name, const auto& v) {
      using T = std::decay_t<decltype(v)>;
      if constexpr (std::is_same_v<T, std::string>) {
        h5::write_attr(l, name, std::string_view(v));
      } else if constexpr (std::is_same_v<T, int>) {
        h5::write_attr(l, name, static_cast<std::int32_t>(v));
      } else if constexpr (std::is_same_v<T, double>) {
        h5::write_attr(l, name, v);
      } else {
        h5::write_attr_in_place(l, name, std::vector<std::int64_t>(v.begin(), v.end()));
      }
    });
  }
}

void RunTraceWriter::link_ranks(int count) {
  guarded([&] { link_ranks_now(count); });
}

void RunTraceWriter::link_ranks_now(int count) {
  if (impl_->dataset)
    throw std::logic_error("link_ranks: a dataset stores its ranks inline");
  h5::Group ranks = h5::open_or_create_group(impl_->file->get(), "ranks");
  for (int r = 0; r < count; ++r) {
    const std::string name = rank_digits(r);
    if (h5::exists(ranks.get(), name))
      continue;
    H5_CHECK(H5Lcreate_external(RankTraceWriter::file_name(r).c_str(), "/", ranks.get(),
                                name.c_str(), H5P_DEFAULT, H5P_DEFAULT));
  }
  h5::write_attr(ranks.get(), "count", static_cast<std::int32_t>(count));
  flush();
}

RankTraceWriter RunTraceWriter::inline_rank(int rank) {
  if (!impl_->dataset)
    throw std::logic_error("inline_rank: a trace links rank files");
  h5::Group ranks = h5::open_or_create_group(impl_->file->get(), "ranks");
  const std::int32_t count =
      h5::has_attr(ranks.get(), "count")
          ? static_cast<std::int32_t>(h5::read_attr_int(ranks.get(), "count"))
          : 0;
  h5::write_attr(ranks.get(), "count", std::max(count, static_cast<std::int32_t>(rank + 1)));
  h5::Group group(H5_CHECK(
      H5Gcreate2(ranks.get(), rank_digits(rank).c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)));
  h5::write_attr(group.get(), "rank", static_cast<std::int32_t>(rank));
  ranks.reset();  // the rank writer must be able to close the file: no other open objects
  auto tables = trace_detail::RankTables::create(std::move(group), false);
  return RankTraceWriter(
      std::make_unique<RankTraceWriter::Impl>(RankTraceWriter::Impl{
          impl_->file, std::move(tables), impl_->path, "/ranks/" + rank_digits(rank)}),
      rank);
}

void RunTraceWriter::write_result(const ResultInfo& result) {
  guarded([&] { write_result_now(result); });
}

void RunTraceWriter::guarded(const std::function<void()>& write) {
  if (!impl_)
    throw TraceWriteError("the trace was abandoned after an earlier write error");
  try {
    write();
  } catch (const h5::Error& e) {
    const std::filesystem::path path = impl_->path;
    // Abandoned without closing, as RankTraceWriter::commit does: closing would retry
    // the failed writes.
    static_cast<void>(impl_.release());
    throw TraceWriteError(write_failure_sentence(path, e));
  }
}

void RunTraceWriter::write_result_now(const ResultInfo& result) {
  h5::Group group = fresh_group(impl_->file->get(), "result");
  const hid_t g = group.get();
  h5::write_attr(g, "best_key", std::string_view(result.best_key));
  h5::write_attr(g, "best_values",
                 std::vector<std::int32_t>(result.best.values.begin(), result.best.values.end()));
  h5::write_attr(g, "best_rank", static_cast<std::int32_t>(result.best_rank));
  h5::write_attr(g, "median_ms", result.median_ms);
  h5::write_attr(g, "gcells_per_s", result.gcells_per_s);
  h5::write_attr(g, "stop_reason", std::string_view(result.stop_reason));
  h5::write_attr(g, "generations", static_cast<std::int32_t>(result.generations));
  h5::write_attr(g, "evaluations", static_cast<std::int64_t>(result.evaluations));
  h5::write_attr(g, "wall_s", result.wall_s);
  h5::Datatype str = h5::string_type();
  h5::Dataspace scalar(H5_CHECK(H5Screate(H5S_SCALAR)));
  h5::Dataset source(H5_CHECK(
      H5Dcreate2(g, "source", str.get(), scalar.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)));
  const char* text = result.source.c_str();
  H5_CHECK(H5Dwrite(source.get(), str.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, &text));
  H5_CHECK(H5Fflush(impl_->file->get(), H5F_SCOPE_LOCAL));
}

void RunTraceWriter::flush() {
  guarded([&] { H5_CHECK(H5Fflush(impl_->file->get(), H5F_SCOPE_LOCAL)); });
}

}  // namespace isletune
