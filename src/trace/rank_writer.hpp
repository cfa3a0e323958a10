// RankTraceWriter: the TraceSink of one MPI rank (docs/trace.md, /ranks/NNNN). Each rank
// writes its own rank-NNNN.h5 (serial HDF5, no rank waits on another); a dataset recorded
// by `isletune measure` gets the same tables inline (RunTraceWriter::inline_rank).
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "ga/records.hpp"
#include "trace/trace_types.hpp"

namespace isletune {

namespace trace_detail {
class RankTables;
struct CheckpointView;
}  // namespace trace_detail

class RankTraceWriter final : public TraceSink {
 public:
  // Creates DIR/rank-NNNN.h5 (replacing an existing file) with empty tables.
  static RankTraceWriter create(const std::filesystem::path& dir, int rank);
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
  // Appends the buffered rows to the tables and flushes the file to disk.
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
  // Creates a rank file of `rank` at `path`.
  static RankTraceWriter create(const std::filesystem::path& dir, int rank,
                                const std::filesystem::path& path);
  // Writes the buffered rows (and the checkpoint, if any) as one commit, then reopens the
  // file so the next commit never rewrites committed data.
  void commit(const trace_detail::CheckpointView* checkpoint);

  std::unique_ptr<Impl> impl_;
  int rank_ = 0;
};

}  // namespace isletune
