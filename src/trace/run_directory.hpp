// The run directory as a whole (docs/trace.md, "Run directory"): who may use it (an
// exclusive lock held for a run's life), what state it is in (empty, being created,
// started, resumable, finished), the marker written last at creation, checks that
// nothing a run reads lives in the files it would replace, and the per-generation
// status file a live run can be monitored through.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace isletune {

// The states of a run directory, in the order a run passes through them.
enum class RunDirState {
  empty,      // no trace.h5 and no rank file
  creating,   // trace or rank files, no creation marker, no committed generation anywhere
  started,    // created (marker), no rank committed a generation yet
  resumable,  // some rank committed a generation; no final /result (or stopped by a signal)
  finished,   // /result with a stop reason other than `signal`
};

// "empty", "creating", ... (for messages and `jobs/`).
[[nodiscard]] const char* run_dir_state_name(RunDirState state);

// What a user does next with a run directory that a failure left behind, by its state:
// "`isletune resume DIR` continues it ..." once the run was created, "nothing was
// created: start it again with `isletune run CONFIG --out DIR`" before (issue 50: the
// advice matches the state). Never throws.
[[nodiscard]] std::string next_step_advice(const std::filesystem::path& dir);

// An exclusive lock on DIR/.lock (flock), held while the object lives: two processes
// never run or resume into the same directory at once. The descriptor is close-on-exec,
// so no child (the CUDA worker) keeps the lock alive.
class RunDirectoryLock {
 public:
  // Creates DIR if needed and takes the lock without waiting. Throws InputError naming
  // DIR when another process holds it or the directory cannot be created.
  static RunDirectoryLock acquire(const std::filesystem::path& dir);
  RunDirectoryLock(RunDirectoryLock&& other) noexcept;
  RunDirectoryLock& operator=(RunDirectoryLock&& other) noexcept;
  RunDirectoryLock(const RunDirectoryLock&) = delete;
  RunDirectoryLock& operator=(const RunDirectoryLock&) = delete;
  ~RunDirectoryLock();

 private:
  explicit RunDirectoryLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

// Name of the creation marker, written last when a run directory is created.
inline constexpr const char* kCreatedMarker = ".created";
// Name of the live status file (rewritten atomically after every generation).
inline constexpr const char* kStatusFile = "status.txt";

// Classifies DIR (see RunDirState). A directory without the marker whose rank files hold
// committed generations (written before markers existed) counts as resumable.
[[nodiscard]] RunDirState run_directory_state(const std::filesystem::path& dir);

// Writes the creation marker atomically (after trace.h5 and every rank file exist).
void mark_run_created(const std::filesystem::path& dir);

// True when `a` and `b` name one file: the same device and inode (st_dev, st_ino) when
// both exist, else the same path once resolved (symlinks, `.` and `..` followed), so an
// output that does not exist yet is still recognised.
[[nodiscard]] bool same_file(const std::filesystem::path& a, const std::filesystem::path& b);

// A file a command reads, with what it is to the command ("its replay dataset").
struct CommandInput {
  std::filesystem::path path;
  std::string role;
};

// The files that reading the trace or dataset `path` reads: the file itself and, for a
// run's trace.h5 (or its directory), the rank files it links. Never throws.
[[nodiscard]] std::vector<std::filesystem::path> trace_input_files(
    const std::filesystem::path& path);

// The root `format` attribute of an HDF5 file (kTraceFormat, kDatasetFormat, kRankFormat),
// or "" when it is not a readable HDF5 file with one. Never throws.
[[nodiscard]] std::string file_format(const std::filesystem::path& path);

// Writes `text` into a new file `path`, created exclusively and without following a
// link (O_CREAT|O_EXCL|O_NOFOLLOW): a file or link someone planted there makes it fail,
// never redirects the write. Returns 0, or the errno of the failure (the partial file
// removed). Every file isletune writes by itself goes through here or through an
// exclusive HDF5 create (issue 50).
[[nodiscard]] int write_new_file(const std::filesystem::path& path, std::string_view text);

// Whether `dir` has room for a run to start over in it: a probe file of kStartRoomBytes is
// written there and removed. Throws InputError (one sentence, "nothing was changed") when it
// cannot be, so a resume on a full disk leaves the run as it was instead of setting it aside.
inline constexpr std::size_t kStartRoomBytes = 8u << 20;
void check_room_to_start(const std::filesystem::path& dir);

// The one rule for a file a command writes where the user says (`measure -o`, `export -o`,
// `--kernel-tuner-cache`): refuses a symbolic link (dangling or not; isletune writes
// through none), anything but a regular file, and, without `overwrite`, any existing
// file. Throws InputError naming `option`; nothing has been written when it throws.
void refuse_unsafe_output(const std::string& option, const std::filesystem::path& output,
                          bool overwrite);

// Right before the write: checks `output` again (refuse_unsafe_output) and removes the
// regular file there when `overwrite`, so the caller's exclusive create (write_new_file,
// an HDF5 create with H5F_ACC_EXCL) makes a new file.
void clear_output(const std::string& option, const std::filesystem::path& output, bool overwrite);

// The one check every writing command makes before it writes `output`: throws InputError
// ("OUTPUT is ROLE (PATH): `isletune COMMAND` never writes onto what it reads; ...") when
// `output` is the same file as one of `inputs`. Nothing has been written when it throws.
void refuse_overwriting_inputs(const std::string& command, const std::filesystem::path& output,
                               const std::vector<CommandInput>& inputs);

// Rank 0 of `isletune run`, holding the lock: makes DIR ready for a new run. Refuses a
// directory that holds a run (unless `overwrite`), or whose files to be replaced include
// one of `inputs` (e.g. the replay dataset); then removes the old run's files (a
// directory that never finished creation is cleaned without --overwrite) and checks that
// DIR is writable. Throws InputError with one sentence; nothing is removed when it throws.
void prepare_new_run(const std::filesystem::path& dir, bool overwrite,
                     const std::vector<std::filesystem::path>& inputs);

// Removes trace.h5, every rank-NNNN.h5, the marker and the status file of DIR.
void remove_run_files(const std::filesystem::path& dir);

// Moves trace.h5, the rank files, the marker and the status file of DIR into a new
// subdirectory DIR/earlier-N (N = 1, 2, ...) and returns it: `resume` starting over
// never deletes what an earlier attempt recorded. Throws InputError when it cannot.
std::filesystem::path set_aside_run_files(const std::filesystem::path& dir);

// Throws InputError naming DIR/rank-NNNN.h5 when it is missing, unreadable or damaged
// (no checkpoint group, or a current checkpoint that cannot be read); `isletune resume`
// calls it before anything is changed.
void check_rank_file(const std::filesystem::path& dir, int rank);

// Committed generation rows of DIR/rank-NNNN.h5 (0 when the file has none or is missing).
[[nodiscard]] long long committed_generations(const std::filesystem::path& dir, int rank);

// Replaces DIR/status.txt atomically (write a temporary file, rename) with `text`;
// failures are ignored (the status file is a convenience, the trace is the record).
void write_status_file(const std::filesystem::path& dir, const std::string& text);

}  // namespace isletune
