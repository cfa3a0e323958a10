// RankTraceWriter: one rank's tables and checkpoint, in its own file or inline.
#include "trace/rank_writer.hpp"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "common/error.hpp"
#include "trace/h5.hpp"
#include "trace/tables.hpp"

namespace isletune {

namespace {

// Writes the root attributes that identify a rank file.
// `run_created` is the `created` stamp of the run's trace.h5: a reader refuses a rank file
// whose stamp differs (a rank file copied in from another run).
void describe_rank_file(hid_t root, int rank, const std::string& run_created) {
  h5::write_attr(root, "format", std::string_view(kRankFormat));
  h5::write_attr(root, "version", static_cast<std::int32_t>(kTraceVersion));
  h5::write_attr(root, "rank", static_cast<std::int32_t>(rank));
  if (!run_created.empty())
    h5::write_attr(root, "run_created", std::string_view(run_created));
}

}  // namespace

RankTraceWriter::RankTraceWriter(std::unique_ptr<Impl> impl, int rank)
    : impl_(std::move(impl)), rank_(rank) {}
RankTraceWriter::RankTraceWriter(RankTraceWriter&&) noexcept = default;
RankTraceWriter& RankTraceWriter::operator=(RankTraceWriter&&) noexcept = default;

std::string write_failure_sentence(const std::filesystem::path& path, const std::exception& error) {
  const std::string what = error.what();
  const auto at = what.find("errno = ");
  if (at != std::string::npos) {
    const int code = std::atoi(what.c_str() + at + 8);
    if (code > 0)
      return "cannot write " + path.string() + ": " + std::strerror(code);
  }
  return "cannot write " + path.string() + " (" + what + ")";
}

h5::File trace_detail::create_trace_file(const std::filesystem::path& path, bool exclusive,
                                         const std::string& kind, const std::string& expected) {
  h5::quiet_errors();
  std::error_code ec;
  const bool existed = std::filesystem::exists(path, ec);
  if (existed && exclusive) {
    throw InputError(path.string() + " already exists: another run is writing into " +
                     path.parent_path().string() + "; use another output directory.");
  }
  errno = 0;
  h5::File file(
      H5Fcreate(path.c_str(), exclusive ? H5F_ACC_EXCL : H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT));
  if (file.valid())
    return file;
  const std::string reason = h5::last_system_error(errno);
  if (!existed)
    std::filesystem::remove(path, ec);
  if (!reason.empty())
    throw TraceWriteError("cannot create " + path.string() + ": " + reason);
  throw InputError(path.string() + ": cannot create the " + kind + "; expected " + expected + ".");
}

RankTraceWriter::~RankTraceWriter() {
  if (!impl_)
    return;
  try {
    impl_->tables.flush();
  } catch (...) {
    // Nothing sensible to do in a destructor; everything flushed earlier is on disk.
  }
}

std::string RankTraceWriter::file_name(int rank) {
  char name[32];
  std::snprintf(name, sizeof name, "rank-%04d.h5", rank);
  return name;
}

RankTraceWriter RankTraceWriter::create(const std::filesystem::path& dir, int rank,
                                        const std::string& run_created) {
  return create(dir, rank, dir / file_name(rank), true, run_created);
}

RankTraceWriter RankTraceWriter::create(const std::filesystem::path& dir, int rank,
                                        const std::filesystem::path& path, bool exclusive,
                                        const std::string& run_created) {
  (void)dir;
  h5::File file = trace_detail::create_trace_file(path, exclusive, "rank trace file",
                                                  "a writable output directory");
  std::optional<trace_detail::RankTables> tables;
  try {
    h5::Group root(H5_CHECK(H5Gopen2(file.get(), "/", H5P_DEFAULT)));
    describe_rank_file(root.get(), rank, run_created);
    tables.emplace(trace_detail::RankTables::create(std::move(root), true));
  } catch (const h5::Error& e) {
    // Abandoned without closing, as commit() does: closing would retry the failed writes.
    static_cast<void>(new h5::File(std::move(file)));
    throw TraceWriteError(write_failure_sentence(path, e));
  }
  return RankTraceWriter(std::make_unique<Impl>(Impl{std::make_shared<h5::File>(std::move(file)),
                                                     std::move(*tables), path}),
                         rank);
}

RankTraceWriter RankTraceWriter::reopen(const std::filesystem::path& dir, int rank,
                                        int keep_through) {
  h5::quiet_errors();
  const std::filesystem::path path = dir / file_name(rank);
  // Read what the interrupted run committed, through keep_through ...
  std::vector<EvaluationRecord> evaluations;
  std::vector<GenerationRecord> generations;
  std::vector<MigrationRecord> migrations;
  std::optional<Checkpoint> checkpoint;
  std::string run_created;  // carried into the fresh file
  {
    h5::File old(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT));
    if (!old.valid()) {
      throw InputError(path.string() + ": cannot reopen the rank trace file to resume; " +
                       "expected an existing, readable rank-NNNN.h5 of this run.");
    }
    try {
      h5::Group root(H5_CHECK(H5Gopen2(old.get(), "/", H5P_DEFAULT)));
      evaluations = trace_detail::read_evaluations(root.get());
      generations = trace_detail::read_generations(root.get());
      migrations = trace_detail::read_migrations(root.get());
      checkpoint = trace_detail::read_checkpoint(root.get());
      if (h5::has_attr(root.get(), "run_created"))
        run_created = h5::read_attr_string(root.get(), "run_created");
    } catch (const h5::Error&) {
      throw InputError(path.string() + " is damaged: its tables or checkpoint cannot be read; " +
                       "rank " + std::to_string(rank) +
                       " cannot be resumed (nothing was changed).");
    }
  }
  // ... and write it into a fresh file that replaces the old one (rename is atomic): a
  // kill during an interrupted commit may have left metadata past the file's end that
  // appending to the old file would trip over.
  const std::filesystem::path fresh = dir / (file_name(rank) + ".resume");
  // The old rank file is untouched until the rename below: a failure here (a full disk)
  // loses nothing.
  const auto unchanged = [&](const std::exception& e) {
    std::error_code ec;
    std::filesystem::remove(fresh, ec);
    std::string reason = e.what();
    if (reason.ends_with("."))
      reason.pop_back();
    return InputError(reason + "; " + path.string() +
                      " is unchanged: free space, then resume again.");
  };
  std::optional<RankTraceWriter> copy;
  try {
    // Created exclusively (H5F_ACC_EXCL: no file, no link followed); a stale copy of an
    // earlier resume, or a link someone planted, is removed first, not written through.
    std::error_code ec;
    std::filesystem::remove(fresh, ec);
    copy.emplace(create(dir, rank, fresh, true, run_created));
    for (const auto& r : evaluations)
      if (r.generation <= keep_through)
        copy->evaluation(r);
    for (const auto& r : generations)
      if (r.generation <= keep_through)
        copy->generation(r);
    for (const auto& r : migrations)
      if (r.generation <= keep_through)
        copy->migration(r);
    if (checkpoint)
      copy->write_checkpoint(checkpoint->generation, checkpoint->bytes);
    else
      copy->flush();
  } catch (const InputError& e) {
    throw unchanged(e);
  } catch (const TraceWriteError& e) {
    throw unchanged(e);
  }
  RankTraceWriter writer = std::move(*copy);
  std::error_code ec;
  std::filesystem::rename(fresh, path, ec);
  if (ec) {
    throw InputError(path.string() + ": cannot replace the rank trace file to resume (" +
                     ec.message() + "); expected a writable run directory.");
  }
  writer.impl_->path = path;  // the open handle follows the renamed file
  return writer;
}

void RankTraceWriter::evaluation(const EvaluationRecord& r) {
  if (impl_)
    impl_->tables.add(r);
}
void RankTraceWriter::generation(const GenerationRecord& r) {
  if (impl_)
    impl_->tables.add(r);
}
void RankTraceWriter::migration(const MigrationRecord& r) {
  if (impl_)
    impl_->tables.add(r);
}
void RankTraceWriter::flush() {
  commit(nullptr);
}

void RankTraceWriter::write_checkpoint(int generation, std::span<const std::uint8_t> bytes) {
  const trace_detail::CheckpointView checkpoint{generation, bytes};
  commit(&checkpoint);
}

void RankTraceWriter::commit(const trace_detail::CheckpointView* checkpoint) {
  if (!impl_)
    return;  // abandoned after a write error
  try {
    commit_now(checkpoint);
  } catch (const h5::Error& e) {
    const std::filesystem::path path = impl_->path;
    // Abandon the file on purpose, without closing it: closing (here, or in HDF5's own
    // shutdown) would retry the failed writes, and after ENOSPC that crashed inside
    // H5F__close_cb. The file keeps its last complete commit; the OS closes it at exit.
    static_cast<void>(impl_.release());
    throw TraceWriteError(write_failure_sentence(path, e));
  }
}

void RankTraceWriter::commit_now(const trace_detail::CheckpointView* checkpoint) {
  impl_->tables.flush(checkpoint);
  // Close and reopen the file: HDF5 then puts the next commit's variable-length data into
  // new heap collections and never rewrites those of committed rows, so a kill during a
  // later commit cannot damage rows that are already committed.
  impl_->tables.release();
  h5::File& file = *impl_->file;
  file.reset();
  file = h5::File(H5_CHECK(H5Fopen(impl_->path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT)));
  impl_->tables.attach(
      h5::Group(H5_CHECK(H5Gopen2(file.get(), impl_->group.c_str(), H5P_DEFAULT))));
}

std::optional<Checkpoint> RankTraceWriter::read_checkpoint() const {
  if (!impl_)
    return std::nullopt;
  return trace_detail::read_checkpoint(impl_->tables.group());
}

}  // namespace isletune
