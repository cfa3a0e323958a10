// RunTraceWriter: the run-level part of a trace, written by rank 0 (docs/trace.md):
// DIR/trace.h5 with root attributes, /config, /stencil, /space, /sample, /environment,
// external links /ranks/NNNN -> rank-NNNN.h5 and /result. The same class writes an
// `isletune measure` dataset: one file, rank tables inline under /ranks/NNNN.
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <string_view>
#include <vector>

#include "space/space.hpp"
#include "stencil/stencil.hpp"
#include "trace/rank_writer.hpp"
#include "trace/trace_types.hpp"

namespace isletune {

class RunTraceWriter {
 public:
  // Creates DIR/trace.h5 (DIR is created if missing); throws InputError when trace.h5
  // already exists (exclusive create).
  static RunTraceWriter create_trace(const std::filesystem::path& dir, const RunInfo& info);
  // Creates a dataset file (format "isletune-dataset") at `file`.
  static RunTraceWriter create_dataset(const std::filesystem::path& file, const RunInfo& info);
  // Reopens DIR/trace.h5 of an earlier run (resume) to add environment and the result.
  static RunTraceWriter reopen_trace(const std::filesystem::path& dir);
  // Name of the run-level file in a run directory.
  static constexpr const char* kTraceFile = "trace.h5";

  RunTraceWriter(RunTraceWriter&&) noexcept;
  RunTraceWriter& operator=(RunTraceWriter&&) noexcept;
  ~RunTraceWriter();

  // /config attr yaml: the effective configuration text.
  void write_config(std::string_view yaml);
  // /config attr replay_fingerprint: which measurements a replay run answers from (resume
  // refuses a dataset whose fingerprint differs).
  void write_replay_fingerprint(std::string_view fingerprint);
  // /stencil: attributes, offsets, coefficients and features.
  void write_stencil(const Stencil& stencil, const std::vector<StencilFeature>& features = {});
  // /space/parameters: the allowed values of every parameter (attribute `neutral`: each
  // row's neutral value), and /space/ocs: the OC table of setting/oc.hpp (id, name, flags).
  void write_space(const Space::Values& values);
  // /sample: the sampled settings with their OC ids and predicted scores.
  void write_sample(const SampleData& sample);
  // /environment/rank_NNNN.
  void write_environment(const EnvironmentInfo& env);
  // Trace only: external links /ranks/NNNN -> rank-NNNN.h5 for ranks 0..count-1.
  void link_ranks(int count);
  // Dataset only: a TraceSink writing /ranks/NNNN inline in this file.
  [[nodiscard]] RankTraceWriter inline_rank(int rank);
  // /result (replaced when written again). Throws TraceWriteError when the file cannot
  // be written (the writer is then abandoned, see RankTraceWriter::flush).
  void write_result(const ResultInfo& result);
  // Makes everything written so far durable; throws TraceWriteError like write_result.
  void flush();

 private:
  // The writes themselves (each public one runs its own through guarded()).
  void write_config_now(std::string_view yaml);
  void write_stencil_now(const Stencil& stencil, const std::vector<StencilFeature>& features);
  void write_space_now(const Space::Values& values);
  void write_sample_now(const SampleData& sample);
  void write_environment_now(const EnvironmentInfo& env);
  void link_ranks_now(int count);
  // Runs `write`; an HDF5 error abandons the file and becomes a TraceWriteError.
  void guarded(const std::function<void()>& write);
  void write_result_now(const ResultInfo& result);
  struct Impl;
  explicit RunTraceWriter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// "star", "box" or "cross" for a typical-library name such as "box3d1r", else "custom".
[[nodiscard]] std::string stencil_shape(std::string_view name);
// Kind of a parameter in /space/parameters: "flag", "enum", "axis" or "int".
[[nodiscard]] std::string parameter_kind(Param p);

}  // namespace isletune
