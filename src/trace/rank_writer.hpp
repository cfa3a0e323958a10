// RankTraceWriter: the TraceSink of one MPI rank (docs/trace.md, /ranks/NNNN). Each rank
// writes its own rank-NNNN.h5 (serial HDF5, no rank waits on another); a dataset recorded
// by `isletune measure` gets the same tables inline (RunTraceWriter::inline_rank).
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>

#include "ga/records.hpp"
#include "trace/trace_types.hpp"

namespace isletune {

namespace trace_detail {
class RankTables;
struct CheckpointView;
}  // namespace trace_detail

// Writing a trace file failed (a full disk, an I/O error): what() is one sentence naming
// the file and the system's reason. The writer that threw has abandoned its file (see
// RankTraceWriter::commit); what was committed before stays readable and resumable.
class TraceWriteError : public std::runtime_error {
 public:
  explicit TraceWriteError(const std::string& sentence) : std::runtime_error(sentence) {}
};

// "cannot write PATH: No space left on device": the sentence of a failed HDF5 write,
// with the errno HDF5 reports in its message when there is one.
[[nodiscard]] std::string write_failure_sentence(const std::filesystem::path& path,
                                                 const std::exception& error);

class RankTraceWriter final : public TraceSink {
 public:
  // Creates DIR/rank-NNNN.h5 with empty tables; throws InputError when it already exists
  // (exclusive create: two runs never write one file). `run_created` is the `created` stamp
  // of the run's trace.h5, recorded so a reader can refuse a rank file of another run.
  static RankTraceWriter create(const std::filesystem::path& dir, int rank,
                                const std::string& run_created = {});
  // Reopens DIR/rank-NNNN.h5 to continue a run (resume): its committed rows through
  // keep_through and its checkpoint are copied into a fresh file that replaces it, so
  // replaying later generations does not duplicate them and a commit cut short by a
  // kill leaves nothing behind.
  static RankTraceWriter reopen(const std::filesystem::path& dir, int rank, int keep_through);
  // File name of a rank's trace: "rank-0003.h5".
  [[nodiscard]] static std::string file_name(int rank);

  RankTraceWriter(RankTraceWriter&&) noexcept;
  RankTraceWriter& operator=(RankTraceWriter&&) noexcept;
  // Flushes buffered rows (errors ignored: destructors never throw).
  ~RankTraceWriter() override;

  // TraceSink: rows are buffered in memory until flush().
  void evaluation(const EvaluationRecord& r) override;
  void generation(const GenerationRecord& r) override;
  void migration(const MigrationRecord& r) override;
  // Appends the buffered rows to the tables and flushes the file to disk. Throws
  // TraceWriteError when the file cannot be written; the writer is then inert (every
  // later call does nothing) and the file keeps its last complete commit.
  void flush() override;

  // Stores the island's serialised state for resume in the same commit as the buffered
  // rows (call it instead of flush() at the end of a generation: one commit, not two).
  // Two alternating slots and the commit markers make a kill during this call leave the
  // previous commit's rows and checkpoint readable.
  void write_checkpoint(int generation, std::span<const std::uint8_t> bytes);
  // The latest complete checkpoint, or nullopt when none was written.
  [[nodiscard]] std::optional<Checkpoint> read_checkpoint() const;

  [[nodiscard]] int rank() const { return rank_; }

 private:
  friend class RunTraceWriter;
  struct Impl;
  explicit RankTraceWriter(std::unique_ptr<Impl> impl, int rank);
  // Creates a rank file of `rank` at `path` (failing if it exists when `exclusive`).
  static RankTraceWriter create(const std::filesystem::path& dir, int rank,
                                const std::filesystem::path& path, bool exclusive,
                                const std::string& run_created);
  // Writes the buffered rows (and the checkpoint, if any) as one commit, then reopens the
  // file so the next commit never rewrites committed data.
  // A write error abandons the file (see TraceWriteError).
  void commit(const trace_detail::CheckpointView* checkpoint);
  // The commit itself; throws h5::Error.
  void commit_now(const trace_detail::CheckpointView* checkpoint);

  std::unique_ptr<Impl> impl_;
  int rank_ = 0;
};

}  // namespace isletune
