// The per-rank tables (evaluations, generations, migrations) and the checkpoint slots
// as HDF5 objects under one group: the row structs, their compound types (built with
// HOFFSET, so they match the structs by construction), reading and appending.
// Internal to src/trace.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ga/records.hpp"
#include "trace/h5.hpp"
#include "trace/rank_writer.hpp"
#include "trace/trace_types.hpp"

namespace isletune::trace_detail {

// "0003": the 4-digit rank of /ranks/NNNN, /environment/rank_NNNN and rank-NNNN.h5.
[[nodiscard]] std::string rank_digits(int rank);

// One /stencil/features row, and its compound type.
struct FeatureRow {
  char* name;
  double value;
};
[[nodiscard]] h5::Datatype feature_row_type();

// One /space/parameters row, and its compound type.
struct ParameterRow {
  char* name;
  char* kind;
  hvl_t values;
};
[[nodiscard]] h5::Datatype parameter_row_type();

// One /space/ocs row (the OC table the kernel families declare, kernel/registry.hpp), and its
// compound type: id, name, the legacy flag columns (what the tiled and streaming families'
// OCs give streaming, merge, retiming and prefetch, and tdeg > 1) and the OC's rule
// (Oc::rule, e.g. "streaming=1,merge=2,retiming=0,prefetch=0,tdeg>1"). `with_rule` false:
// the type without the rule, for traces written before it.
struct OcRow {
  std::int32_t oc;
  char* name;
  std::int32_t streaming;
  std::int32_t merge;
  std::int32_t retiming;
  std::int32_t prefetch;
  std::int32_t temporal;
  char* rule;
};
[[nodiscard]] h5::Datatype oc_row_type(bool with_rule = true);

// The compound row types, created once per use.
struct RowTypes {
  h5::Datatype string;
  h5::Datatype evaluation;
  h5::Datatype generation;
  h5::Datatype migration;
  RowTypes();
};

// Every row of one table, read from the rank group `loc`.
[[nodiscard]] std::vector<EvaluationRecord> read_evaluations(hid_t loc);
[[nodiscard]] std::vector<GenerationRecord> read_generations(hid_t loc);
[[nodiscard]] std::vector<MigrationRecord> read_migrations(hid_t loc);
// The first generation whose evaluation rows did not all reach the file (a writer
// killed during a flush), or INT_MAX when every row reads back. The read_* functions
// drop that generation and later ones, so the tables agree on complete generations.
[[nodiscard]] int evaluations_incomplete_from(hid_t loc);
// The current checkpoint under loc, or nullopt when none was written.
[[nodiscard]] std::optional<Checkpoint> read_checkpoint(hid_t loc);

// A checkpoint blob to store with a commit (the bytes stay the caller's).
struct CheckpointView {
  int generation = 0;
  std::span<const std::uint8_t> bytes;
};

// Writes the tables of one rank under a group (a rank file's root, or /ranks/NNNN of a
// dataset). Rows are buffered until flush(), which appends them and flushes the file.
class RankTables {
 public:
  // Creates the three tables under group (which it keeps open) and, when
  // `checkpoint_slots`, the empty checkpoint group and slots (current = -1: none yet).
  static RankTables create(h5::Group group, bool checkpoint_slots);
  // Opens existing tables and drops every row of a generation after keep_through.
  static RankTables open(h5::Group group, int keep_through);

  void add(const EvaluationRecord& r) { evaluations_.push_back(r); }
  void add(const GenerationRecord& r) { generations_.push_back(r); }
  void add(const MigrationRecord& r) { migrations_.push_back(r); }
  // One commit: appends the buffered rows and, when `checkpoint` is given, writes it into
  // the checkpoint slot that is not current; flushes; then updates the markers readers
  // trust (`committed` row counts, the checkpoint's `current` slot) and flushes again.
  // A kill before the second flush leaves the previous commit's markers, which refer
  // only to data that the first flush did not touch.
  void flush(const CheckpointView* checkpoint = nullptr);
  // Closes the group and tables (so the file can be closed and reopened) ...
  void release();
  // ... and opens them again under `group`.
  void attach(h5::Group group);
  [[nodiscard]] hid_t group() const { return group_.get(); }

 private:
  RankTables() = default;
  // Rows of the evaluations, generations and migrations tables now.
  [[nodiscard]] std::vector<std::int64_t> row_counts() const;
  // Writes the `committed` attribute (not flushed).
  void mark_committed();
  // Writes a checkpoint blob into the slot that is not current; returns that slot.
  int write_slot(const CheckpointView& checkpoint);
  // Makes `slot` the current checkpoint of `generation` (attributes, not flushed).
  void mark_slot(int slot, int generation);

  std::unique_ptr<RowTypes> types_;
  h5::Group group_;
  h5::Table evaluation_table_;
  h5::Table generation_table_;
  h5::Table migration_table_;
  std::vector<EvaluationRecord> evaluations_;
  std::vector<GenerationRecord> generations_;
  std::vector<MigrationRecord> migrations_;
};

}  // namespace isletune::trace_detail

namespace isletune {

// The state behind a RankTraceWriter (shared by rank_writer.cpp and run_writer.cpp).
struct RankTraceWriter::Impl {
  // The open file: the rank file, or a dataset file shared with its RunTraceWriter (both
  // see the new handle after a reopen).
  std::shared_ptr<h5::File> file;
  trace_detail::RankTables tables;
  std::filesystem::path path;  // the file, to reopen it after each commit
  std::string group = "/";     // the rank group in it
};

}  // namespace isletune

namespace isletune::trace_detail {

// Creates the HDF5 file of a trace or dataset at `path`; `exclusive` (a run's trace) fails
// when the file exists, so two runs never write one file. A full disk (any reason the system
// gave) is a TraceWriteError; a path that cannot be created for no reason the system gave is
// an InputError: "PATH: cannot create the <kind>; expected <expected>." A create that failed
// half-way leaves nothing a later resume or run could mistake for a trace.
[[nodiscard]] h5::File create_trace_file(const std::filesystem::path& path, bool exclusive,
                                         const std::string& kind, const std::string& expected);

// Names of the 18 parameters in Param order (the `parameters` attribute).
[[nodiscard]] std::vector<std::string> parameter_names();

// How the columns of a stored settings array map to this build's parameters, by the names
// the file stores with them: column j holds parameter index param[j]. A parameter the file
// lacks (recorded before it existed) reads its neutral value (setting.hpp); a column this
// build does not know is an InputError naming it.
struct ParamColumns {
  std::vector<std::size_t> param;  // per file column
  [[nodiscard]] bool identity() const;
  // The setting of one row of param.size() values.
  [[nodiscard]] Setting setting(const int* row) const;
};
// From the names (`where` names the array in messages).
[[nodiscard]] ParamColumns param_columns(const std::vector<std::string>& names,
                                         const std::string& where);

}  // namespace isletune::trace_detail
