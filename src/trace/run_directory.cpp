// The run directory: lock, states, creation marker, safe replacement, status file.
#include "trace/run_directory.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "common/error.hpp"
#include "common/text.hpp"
#include "trace/h5.hpp"
#include "trace/rank_writer.hpp"
#include "trace/reader.hpp"
#include "trace/run_writer.hpp"
#include "trace/tables.hpp"

namespace isletune {

namespace fs = std::filesystem;

namespace {

constexpr const char* kLockFile = ".lock";

// True for the files a run consists of: trace.h5 and rank-NNNN.h5 (and a resume's
// rank-NNNN.h5.resume left by a kill).
bool is_run_file(const std::string& name) {
  return name == RunTraceWriter::kTraceFile ||
         (name.starts_with("rank-") && (name.ends_with(".h5") || name.ends_with(".h5.resume")));
}

// The run files present in dir.
std::vector<fs::path> run_files(const fs::path& dir) {
  std::vector<fs::path> files;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (is_run_file(entry.path().filename().string()))
      files.push_back(entry.path());
  }
  return files;
}

// The rank numbers of the rank-NNNN.h5 files in dir.
std::vector<int> rank_numbers(const fs::path& dir) {
  std::vector<int> ranks;
  for (const auto& f : run_files(dir)) {
    const std::string name = f.filename().string();
    if (name.starts_with("rank-") && name.ends_with(".h5") && name.size() == 12)
      ranks.push_back(std::atoi(name.substr(5, 4).c_str()));
  }
  return ranks;
}

// True when some rank file of dir holds a committed generation.
bool any_committed_generation(const fs::path& dir) {
  for (int rank : rank_numbers(dir)) {
    if (committed_generations(dir, rank) > 0)
      return true;
  }
  return false;
}

}  // namespace

const char* run_dir_state_name(RunDirState state) {
  switch (state) {
    case RunDirState::empty:
      return "empty";
    case RunDirState::creating:
      return "creating";
    case RunDirState::started:
      return "started";
    case RunDirState::resumable:
      return "resumable";
    case RunDirState::finished:
      return "finished";
  }
  return "unknown";
}

std::string next_step_advice(const fs::path& dir) {
  RunDirState state = RunDirState::empty;
  try {
    state = run_directory_state(dir);
  } catch (const std::exception&) {
    // An unreadable directory: resume says what is wrong with it.
    state = RunDirState::resumable;
  }
  if (state == RunDirState::empty || state == RunDirState::creating) {
    return "the run was not created yet: start it again with `isletune run CONFIG --out " +
           display_path(dir) + "`";
  }
  return "the trace keeps every committed generation: `isletune resume " + display_path(dir) +
         "` continues it";
}

RunDirectoryLock RunDirectoryLock::acquire(const fs::path& dir) {
  std::error_code ec;
  if (fs::is_symlink(dir, ec) && !fs::exists(dir, ec)) {
    throw InputError("output " + dir.string() +
                     " is a symbolic link to a directory that does not exist; create the "
                     "directory it points to, or remove the link.");
  }
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec))
    throw InputError("output " + dir.string() + " exists and is not a directory.");
  fs::create_directories(dir, ec);
  if (ec) {
    throw InputError("cannot create output directory " + dir.string() + ": " + ec.message() + ".");
  }
  const fs::path path = dir / kLockFile;
  // O_NOFOLLOW: a link planted as DIR/.lock must not make the run open another file.
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0 && errno == ELOOP) {
    throw InputError(path.string() + " is a symbolic link; isletune never opens its lock " +
                     "through a link (someone else may write into " + dir.string() +
                     "): remove it or use another --out.");
  }
  if (fd < 0) {
    throw InputError("output directory " + dir.string() + " is not writable (cannot create " +
                     path.string() + ": " + std::strerror(errno) + ").");
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    ::close(fd);
    if (error == EWOULDBLOCK) {
      throw InputError("output directory " + dir.string() +
                       " is in use by another isletune run or resume (" + path.string() +
                       " is locked); wait for it to end or use another --out.");
    }
    throw InputError("cannot lock " + path.string() + ": " + std::strerror(error) + ".");
  }
  return RunDirectoryLock(fd);
}

RunDirectoryLock::RunDirectoryLock(RunDirectoryLock&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)) {}

RunDirectoryLock& RunDirectoryLock::operator=(RunDirectoryLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0)
      ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

RunDirectoryLock::~RunDirectoryLock() {
  if (fd_ >= 0)
    ::close(fd_);  // releases the flock
}

long long committed_generations(const fs::path& dir, int rank) {
  const fs::path path = dir / RankTraceWriter::file_name(rank);
  std::error_code ec;
  if (!fs::exists(path, ec))
    return 0;
  h5::quiet_errors();
  h5::File file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT));
  if (!file.valid())
    return 0;
  try {
    h5::Group root(H5_CHECK(H5Gopen2(file.get(), "/", H5P_DEFAULT)));
    if (h5::has_attr(root.get(), "committed")) {
      const auto counts = h5::read_attr_ints64(root.get(), "committed");
      return counts.size() > 1 ? counts[1] : 0;
    }
    if (!h5::exists(root.get(), "generations"))
      return 0;
    h5::Dataset table(H5_CHECK(H5Dopen2(root.get(), "generations", H5P_DEFAULT)));
    h5::Dataspace space(H5_CHECK(H5Dget_space(table.get())));
    hsize_t n = 0;
    H5_CHECK(H5Sget_simple_extent_dims(space.get(), &n, nullptr));
    return static_cast<long long>(n);
  } catch (const h5::Error&) {
    return 0;
  }
}

RunDirState run_directory_state(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec) || run_files(dir).empty())
    return RunDirState::empty;
  const bool marked = fs::exists(dir / kCreatedMarker, ec);
  const bool committed = any_committed_generation(dir);
  if (!marked && !committed)
    return RunDirState::creating;
  try {
    const TraceReader reader(dir / RunTraceWriter::kTraceFile);
    if (const auto result = reader.result(); result && result->stop_reason != "signal")
      return RunDirState::finished;
  } catch (const std::exception&) {
    // An unreadable trace.h5 of a created run: resume says what is wrong with it.
  }
  return committed ? RunDirState::resumable : RunDirState::started;
}

void mark_run_created(const fs::path& dir) {
  // Written beside the marker, then renamed onto it: the marker appears whole or not at
  // all. The temporary is created exclusively without following links (a link planted in
  // a shared directory must not redirect the write): a stale one is removed first.
  const fs::path tmp = dir / (std::string(kCreatedMarker) + ".tmp");
  std::error_code ec;
  fs::remove(tmp, ec);
  if (const int error = write_new_file(
          tmp, "isletune run directory: trace.h5 and every rank file were created\n");
      error != 0) {
    throw TraceWriteError("cannot write " + tmp.string() + ": " + std::strerror(error));
  }
  fs::rename(tmp, dir / kCreatedMarker, ec);
  if (ec)
    throw TraceWriteError("cannot write " + (dir / kCreatedMarker).string() + ": " + ec.message());
}

void remove_run_files(const fs::path& dir) {
  std::error_code ec;
  for (const auto& f : run_files(dir))
    fs::remove(f, ec);
  fs::remove(dir / kCreatedMarker, ec);
  fs::remove(dir / kStatusFile, ec);
}

fs::path set_aside_run_files(const fs::path& dir) {
  fs::path kept;
  for (int n = 1;; ++n) {
    kept = dir / ("earlier-" + std::to_string(n));
    std::error_code ec;
    if (fs::create_directory(kept, ec))
      break;
    if (ec)
      throw InputError("cannot create " + kept.string() + ": " + ec.message() + ".");
  }
  std::vector<fs::path> files = run_files(dir);
  for (const char* name : {kCreatedMarker, kStatusFile}) {
    std::error_code ec;
    if (fs::exists(dir / name, ec))
      files.push_back(dir / name);
  }
  for (const auto& f : files) {
    std::error_code ec;
    fs::rename(f, kept / f.filename(), ec);
    if (ec)
      throw InputError("cannot move " + f.string() + " to " + kept.string() + ": " + ec.message() +
                       ".");
  }
  return kept;
}

bool same_file(const fs::path& a, const fs::path& b) {
  struct stat sa {};
  struct stat sb {};
  if (::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0)
    return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
  std::error_code ea, eb;
  const fs::path ra = fs::weakly_canonical(fs::absolute(a, ea), ea);
  const fs::path rb = fs::weakly_canonical(fs::absolute(b, eb), eb);
  return !ea && !eb && ra == rb;
}

std::vector<fs::path> trace_input_files(const fs::path& path) {
  std::error_code ec;
  const fs::path file = fs::is_directory(path, ec) ? path / RunTraceWriter::kTraceFile : path;
  std::vector<fs::path> files{file};
  try {
    const TraceReader reader(file);
    if (!reader.is_dataset()) {
      for (int rank : reader.ranks())
        files.push_back(file.parent_path() / RankTraceWriter::file_name(rank));
    }
  } catch (const std::exception&) {
    // Unreadable: the command itself reports it; the file is still an input.
  }
  return files;
}

std::string file_format(const fs::path& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec))
    return {};
  h5::quiet_errors();
  if (H5Fis_hdf5(path.c_str()) <= 0)
    return {};
  h5::File file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT));
  if (!file.valid())
    return {};
  try {
    h5::Group root(H5_CHECK(H5Gopen2(file.get(), "/", H5P_DEFAULT)));
    return h5::has_attr(root.get(), "format") ? h5::read_attr_string(root.get(), "format") : "";
  } catch (const h5::Error&) {
    return {};
  }
}

int write_new_file(const fs::path& path, std::string_view text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0)
    return errno;
  int error = 0;
  for (std::size_t at = 0; at < text.size() && error == 0;) {
    const ssize_t n = ::write(fd, text.data() + at, text.size() - at);
    if (n < 0 && errno != EINTR)
      error = errno;
    else if (n > 0)
      at += static_cast<std::size_t>(n);
  }
  if (::close(fd) != 0 && error == 0)
    error = errno;
  if (error != 0)
    ::unlink(path.c_str());  // the file this call created: half a file helps nobody
  return error;
}

void check_room_to_start(const fs::path& dir) {
  const fs::path probe = dir / ".isletune-room-test";
  std::error_code ec;
  fs::remove(probe, ec);  // never written through: a planted link is removed, not followed
  const int error = write_new_file(probe, std::string(kStartRoomBytes, '\0'));
  fs::remove(probe, ec);
  if (error != 0) {
    throw InputError("no room to start the run in " + dir.string() + " over (" +
                     std::strerror(error) +
                     "); nothing was changed: free some space and resume again.");
  }
}

void refuse_unsafe_output(const std::string& option, const fs::path& output, bool overwrite) {
  struct stat st {};
  if (::lstat(output.c_str(), &st) != 0)
    return;  // nothing there: the exclusive create makes it
  const std::string what = option + " " + display_path(output);
  if (S_ISLNK(st.st_mode)) {
    throw InputError(what +
                     " is a symbolic link; isletune never writes through a link (it could "
                     "point anywhere): remove it or write elsewhere (nothing was written).");
  }
  if (!S_ISREG(st.st_mode)) {
    throw InputError(what +
                     " exists and is not a regular file; expected a new file name "
                     "(nothing was written).");
  }
  if (!overwrite) {
    throw InputError(what +
                     " already exists; add --overwrite to replace it, or write "
                     "elsewhere (nothing was written).");
  }
}

void clear_output(const std::string& option, const fs::path& output, bool overwrite) {
  refuse_unsafe_output(option, output, overwrite);
  if (overwrite && ::unlink(output.c_str()) != 0 && errno != ENOENT) {
    throw InputError(option + " " + display_path(output) + ": cannot replace it (" +
                     std::strerror(errno) + "); nothing was written.");
  }
}

void refuse_overwriting_inputs(const std::string& command, const fs::path& output,
                               const std::vector<CommandInput>& inputs) {
  for (const CommandInput& input : inputs) {
    if (input.path.empty() || !same_file(output, input.path))
      continue;
    throw InputError(display_path(output) + " is " + input.role +
                     (output == input.path ? "" : " (" + display_path(input.path) + ")") +
                     ": `isletune " + command +
                     "` never writes onto what it reads; write to another file (nothing was "
                     "written).");
  }
}

void prepare_new_run(const fs::path& dir, bool overwrite, const std::vector<fs::path>& inputs) {
  const RunDirState state = run_directory_state(dir);
  if (state != RunDirState::empty && state != RunDirState::creating && !overwrite) {
    throw InputError("output directory " + dir.string() + " already holds a run (trace.h5, " +
                     run_dir_state_name(state) + "); use --overwrite to replace it, " +
                     "another --out, or `isletune resume " + dir.string() + "`.");
  }
  // Nothing that this run reads may be among the files it replaces.
  std::error_code ec;
  for (const auto& f : run_files(dir)) {
    for (const auto& input : inputs) {
      if (!input.empty() && fs::exists(input, ec) && same_file(input, f)) {
        throw InputError("cannot replace the run in " + dir.string() + ": " + f.string() +
                         " is an input of this run (" + input.string() +
                         "); copy it elsewhere first or use another --out.");
      }
    }
  }
  remove_run_files(dir);
  const fs::path probe = dir / ".isletune-write-test";
  fs::remove(probe, ec);  // never written through: a planted link is removed, not followed
  if (write_new_file(probe, "") != 0)
    throw InputError("output directory " + dir.string() + " is not writable.");
  fs::remove(probe, ec);
}

void check_rank_file(const fs::path& dir, int rank) {
  const fs::path path = dir / RankTraceWriter::file_name(rank);
  std::error_code ec;
  if (!fs::exists(path, ec)) {
    throw InputError(path.string() + " is missing; rank " + std::to_string(rank) +
                     " cannot be resumed (nothing was changed).");
  }
  h5::quiet_errors();
  h5::File file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT));
  if (!file.valid()) {
    throw InputError(path.string() + " is damaged: not a readable HDF5 file; rank " +
                     std::to_string(rank) + " cannot be resumed (nothing was changed).");
  }
  std::string problem;
  try {
    h5::Group root(H5_CHECK(H5Gopen2(file.get(), "/", H5P_DEFAULT)));
    if (!h5::exists(root.get(), "checkpoint")) {
      problem = "it has no /checkpoint group";
    } else {
      h5::Group group(H5_CHECK(H5Gopen2(root.get(), "checkpoint", H5P_DEFAULT)));
      if (!h5::has_attr(group.get(), "current")) {
        problem = "/checkpoint has no `current` attribute";
      } else if (h5::read_attr_int(group.get(), "current") >= 0 &&
                 !trace_detail::read_checkpoint(root.get())) {
        problem = "neither checkpoint slot can be read";
      }
    }
  } catch (const h5::Error&) {
    problem = "its checkpoint cannot be read";
  }
  if (!problem.empty()) {
    throw InputError(path.string() + " is damaged: " + problem + "; rank " + std::to_string(rank) +
                     " cannot be resumed (nothing was changed).");
  }
}

void write_status_file(const fs::path& dir, const std::string& text) {
  // As mark_run_created: an exclusive, link-refusing temporary renamed onto the file; a
  // failure (a full disk) keeps the previous status.
  const fs::path tmp = dir / (std::string(kStatusFile) + ".tmp");
  std::error_code ec;
  fs::remove(tmp, ec);
  if (write_new_file(tmp, text) != 0)
    return;
  fs::rename(tmp, dir / kStatusFile, ec);
}

}  // namespace isletune
