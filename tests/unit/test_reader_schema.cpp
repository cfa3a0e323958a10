// unit.ReaderSchema.*: a trace or dataset of the wrong schema is one InputError sentence
// naming the file, never read silently as empty: /ranks missing, negative committed row
// counts, a values column of another width than its names, an unknown parameter name,
// statuses outside 0-6, a rank file that says it
// is another rank or belongs to another run. Damaged copies of the shipped synthetic
// dataset are made with h5py (the Debian python3-h5py the analysis tests use).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "common/error.hpp"
#include "trace/reader.hpp"

namespace isletune {
namespace {

namespace fs = std::filesystem;

const fs::path kSynthetic = fs::path(ISLETUNE_TEST_DATA) / "synthetic-star2d1r.h5";

class ReaderSchema : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("isletune-schema-" + std::to_string(::getpid()) + "-" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    file_ = dir_ / "damaged.h5";
    fs::copy_file(kSynthetic, file_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Runs Python `body` with `f` the copy opened read-write (h5py).
  void damage(const std::string& body) const {
    const fs::path script = dir_ / "damage.py";
    std::ofstream(script) << "import sys, h5py, numpy as np\nf = h5py.File(sys.argv[1], 'r+')\n"
                          << body << "\nf.close()\n";
    const std::string cmd = "/usr/bin/python3 " + script.string() + " " + file_.string();
    ASSERT_EQ(std::system(cmd.c_str()), 0) << body;
  }

  // The message of the InputError reading every table of rank 0 throws ("" when none).
  std::string read_error() const {
    try {
      const TraceReader reader(file_);
      for (int rank : reader.ranks()) {
        (void)reader.evaluations(rank);
        (void)reader.generations(rank);
      }
    } catch (const InputError& e) {
      return e.what();
    }
    return "";
  }

  void expect_names_file(const std::string& msg, const std::string& what) const {
    ASSERT_FALSE(msg.empty()) << "read silently: " << what;
    EXPECT_NE(msg.find("damaged.h5"), std::string::npos) << msg;
    EXPECT_NE(msg.find(what), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    EXPECT_LE(msg.size(), 300u) << msg;
  }

  fs::path dir_;
  fs::path file_;
};

TEST_F(ReaderSchema, TheUndamagedCopyReads) {
  EXPECT_EQ(read_error(), "");
}

TEST_F(ReaderSchema, MissingRanksGroup) {
  damage("del f['ranks']");
  expect_names_file(read_error(), "/ranks");
}

TEST_F(ReaderSchema, NegativeCommittedRowCount) {
  damage("f['ranks/0000'].attrs['committed'] = np.array([-3, 0, 0], dtype='i8')");
  expect_names_file(read_error(), "negative committed");
}

TEST_F(ReaderSchema, ValuesColumnOfAnotherWidth) {
  damage(R"py(g = f['ranks/0000']
ev = g['evaluations']
old = ev[()]
fields = [(n, (np.dtype(('<i4', (17,))) if n == 'values' else old.dtype.fields[n][0]))
          for n in old.dtype.names]
new = np.zeros(len(old), dtype=np.dtype(fields))
for n in old.dtype.names:
    if n != 'values':
        new[n] = old[n]
del g['evaluations']
g.create_dataset('evaluations', data=new, maxshape=(None,), chunks=True))py");
  expect_names_file(read_error(), "values");
}

// Rewrites rank 0's evaluations with the values columns `keep` (indices into the recorded
// ones, in this order) named as the recorded ones, or renamed by `rename`.
std::string rewrite_columns(const std::string& keep, const std::string& rename = "{}") {
  return R"py(g = f['ranks/0000']
ev = g['evaluations']
old = ev[()]
attrs = {k: ev.attrs[k] for k in ev.attrs}
keep = )py" +
         keep + R"py(
names = [attrs['parameters'][i] for i in keep]
names = [)py" +
         rename + R"py(.get(n.decode() if isinstance(n, bytes) else n, n) for n in names]
fields = [(n, (np.dtype(('<i4', (len(keep),))) if n == 'values' else old.dtype.fields[n][0]))
          for n in old.dtype.names]
new = np.zeros(len(old), dtype=np.dtype(fields))
for n in old.dtype.names:
    new[n] = old[n][:, keep] if n == 'values' else old[n]
del g['evaluations']
d = g.create_dataset('evaluations', data=new, maxshape=(None,), chunks=True)
for k, v in attrs.items():
    d.attrs[k] = v
d.attrs['parameters'] = np.array(names, dtype=h5py.string_dtype()))py";
}

// A dataset recorded before use_constant existed (17 columns, stored in another order) reads
// by the column names: every setting as recorded, use_constant at its neutral value 0.
TEST_F(ReaderSchema, SettingsColumnsAreMappedByNameAndAMissingParameterReadsNeutral) {
  const auto before = TraceReader(file_).evaluations(0);
  damage(rewrite_columns("list(reversed(range(17)))"));
  ASSERT_EQ(read_error(), "");
  const auto after = TraceReader(file_).evaluations(0);
  ASSERT_EQ(after.size(), before.size());
  int constant = 0;
  for (std::size_t i = 0; i < before.size(); ++i) {
    Setting expected = before[i].setting;
    constant += expected[Param::use_constant];
    expected[Param::use_constant] = 0;
    ASSERT_EQ(after[i].setting, expected) << i;
    EXPECT_EQ(after[i].measurement.status, before[i].measurement.status);
    EXPECT_EQ(after[i].measurement.times_ms, before[i].measurement.times_ms);
  }
  EXPECT_GT(constant, 0);  // the dropped column was not all neutral already
}

TEST_F(ReaderSchema, AnUnknownSettingsColumnIsNamed) {
  damage(rewrite_columns("list(range(18))", "{'use_constant': 'warp_tile'}"));
  expect_names_file(read_error(), "warp_tile");
}

TEST_F(ReaderSchema, StatusOutsideTheKnownCodes) {
  damage(R"py(ev = f['ranks/0000/evaluations']
row = ev[5]
row['status'] = 9
ev[5] = row)py");
  const std::string msg = read_error();
  expect_names_file(msg, "status 9");
  EXPECT_NE(msg.find("row 5"), std::string::npos) << msg;
}

TEST_F(ReaderSchema, RankFileOfAnotherRankOrRun) {
  damage("f['ranks/0000'].attrs['rank'] = np.int32(3)");
  expect_names_file(read_error(), "rank 3");
  fs::remove(file_);
  fs::copy_file(kSynthetic, file_);
  damage("f['ranks/0000'].attrs['run_created'] = '2020-01-01T00:00:00Z'");
  expect_names_file(read_error(), "belongs to a run created");
}

// Rows a file claims but does not hold and verified rows without a usable time are
// damage: one sentence, never replayed.
TEST_F(ReaderSchema, CommittedCountPastTheRows) {
  damage(R"py(g = f['ranks/0000']
g.attrs['committed'] = np.array([len(g['evaluations']) + 5, 0, 0], dtype=np.int64))py");
  const std::string msg = read_error();
  expect_names_file(msg, "are committed but holds");
}

TEST_F(ReaderSchema, VerifiedRowWithoutAPositiveTime) {
  for (const char* bad : {"np.nan", "-1.0", "0.0", "np.inf"}) {
    fs::remove(file_);
    fs::copy_file(kSynthetic, file_);
    damage(std::string(R"py(ev = f['ranks/0000/evaluations']
rows = ev[()]
i = int(np.flatnonzero(rows['status'] == 0)[2])
rows['median_ms'][i] = )py") +
           bad + "\nev[...] = rows");
    const std::string msg = read_error();
    expect_names_file(msg, "expected a positive time");
  }
}

}  // namespace
}  // namespace isletune
