// Per-rank tables and checkpoint slots: compound row layouts, append, read, truncate.
#include "trace/tables.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>

#include "common/error.hpp"

namespace isletune::trace_detail {

std::string rank_digits(int rank) {
  char text[16];
  std::snprintf(text, sizeof text, "%04d", rank);
  return text;
}

h5::Datatype feature_row_type() {
  h5::Datatype str = h5::string_type();
  h5::Datatype row(H5_CHECK(H5Tcreate(H5T_COMPOUND, sizeof(FeatureRow))));
  H5_CHECK(H5Tinsert(row.get(), "name", HOFFSET(FeatureRow, name), str.get()));
  H5_CHECK(H5Tinsert(row.get(), "value", HOFFSET(FeatureRow, value), H5T_NATIVE_DOUBLE));
  return row;
}

h5::Datatype parameter_row_type() {
  h5::Datatype str = h5::string_type();
  h5::Datatype ints = h5::vlen_type(H5T_NATIVE_INT);
  h5::Datatype row(H5_CHECK(H5Tcreate(H5T_COMPOUND, sizeof(ParameterRow))));
  H5_CHECK(H5Tinsert(row.get(), "name", HOFFSET(ParameterRow, name), str.get()));
  H5_CHECK(H5Tinsert(row.get(), "kind", HOFFSET(ParameterRow, kind), str.get()));
  H5_CHECK(H5Tinsert(row.get(), "values", HOFFSET(ParameterRow, values), ints.get()));
  return row;
}

h5::Datatype oc_row_type(bool with_rule) {
  h5::Datatype str = h5::string_type();
  h5::Datatype row(H5_CHECK(H5Tcreate(H5T_COMPOUND, sizeof(OcRow))));
  H5_CHECK(H5Tinsert(row.get(), "oc", HOFFSET(OcRow, oc), H5T_NATIVE_INT32));
  H5_CHECK(H5Tinsert(row.get(), "name", HOFFSET(OcRow, name), str.get()));
  H5_CHECK(H5Tinsert(row.get(), "streaming", HOFFSET(OcRow, streaming), H5T_NATIVE_INT32));
  H5_CHECK(H5Tinsert(row.get(), "merge", HOFFSET(OcRow, merge), H5T_NATIVE_INT32));
  H5_CHECK(H5Tinsert(row.get(), "retiming", HOFFSET(OcRow, retiming), H5T_NATIVE_INT32));
  H5_CHECK(H5Tinsert(row.get(), "prefetch", HOFFSET(OcRow, prefetch), H5T_NATIVE_INT32));
  H5_CHECK(H5Tinsert(row.get(), "temporal", HOFFSET(OcRow, temporal), H5T_NATIVE_INT32));
  if (with_rule)
    H5_CHECK(H5Tinsert(row.get(), "rule", HOFFSET(OcRow, rule), str.get()));
  return row;
}

namespace {

// In-memory layout of one /ranks/NNNN/evaluations row.
struct EvaluationRow {
  std::int64_t eval_id;
  std::int32_t generation;
  std::int32_t cell;
  hvl_t genes;  // int
  int values[kParamCount];
  char* key;
  std::int8_t status;
  double median_ms;
  hvl_t times_ms;  // double
  double compile_ms;
  double verify_ms;
  double run_ms;
  std::int32_t registers;
  std::int32_t shared_bytes;
  double occupancy;
  double error_l2;
  double error_max;
  double wall_s;
  std::int8_t cached;
  std::int8_t migrant;
  char* message;
  double submit_s;  // the timeline (EvaluationRecord::timeline)
  double start_s;
  double finish_s;
};

// The timeline columns of the evaluations table (absent from traces written before them).
struct TimelineColumns {
  double submit_s;
  double start_s;
  double finish_s;
};

// In-memory layout of one /ranks/NNNN/generations row.
struct GenerationRow {
  std::int32_t generation;
  double wall_s;
  double wait_s;
  double best_ms;
  double mean_fitness;
  double mcr;
  std::int32_t unique_genomes;
  std::int32_t evaluations;
  std::int32_t cache_hits;  // absent in traces written before it (read as 0)
  std::int32_t fills;       // absent in traces written before it (read as 0)
  std::int32_t restart;     // absent in traces written before it (read as 0)
};

// In-memory layout of one /ranks/NNNN/migrations row.
struct MigrationRow {
  std::int32_t generation;
  std::int32_t direction;
  std::int32_t peer;
  char* key;
  double median_ms;
};

// Only the generation column of any table (HDF5 reads compound members by name).
struct GenerationColumn {
  std::int32_t generation;
};

constexpr hsize_t kEvaluationChunk = 32;
constexpr hsize_t kGenerationChunk = 64;
constexpr hsize_t kMigrationChunk = 128;
constexpr hsize_t kCheckpointChunk = 8 * 1024;

#define INSERT(type, Row, field, member_type) \
  H5_CHECK(H5Tinsert((type), #field, HOFFSET(Row, field), (member_type)))

// Compound type of EvaluationRow (without the values member: for files whose settings
// columns differ from this build's, read apart by name). The timeline members are written
// and read apart (read_timeline_columns), so older traces read as they are.
h5::Datatype evaluation_type(hid_t str, bool with_values = true, bool with_timeline = false) {
  h5::Datatype t(H5_CHECK(H5Tcreate(H5T_COMPOUND, sizeof(EvaluationRow))));
  h5::Datatype genes = h5::vlen_type(H5T_NATIVE_INT);
  h5::Datatype values = h5::array_type(H5T_NATIVE_INT, kParamCount);
  h5::Datatype times = h5::vlen_type(H5T_NATIVE_DOUBLE);
  const hid_t id = t.get();
  INSERT(id, EvaluationRow, eval_id, H5T_NATIVE_INT64);
  INSERT(id, EvaluationRow, generation, H5T_NATIVE_INT32);
  INSERT(id, EvaluationRow, cell, H5T_NATIVE_INT32);
  INSERT(id, EvaluationRow, genes, genes.get());
  if (with_values)
    INSERT(id, EvaluationRow, values, values.get());
  INSERT(id, EvaluationRow, key, str);
  INSERT(id, EvaluationRow, status, H5T_NATIVE_INT8);
  INSERT(id, EvaluationRow, median_ms, H5T_NATIVE_DOUBLE);
  INSERT(id, EvaluationRow, times_ms, times.get());
  INSERT(id, EvaluationRow, compile_ms, H5T_NATIVE_DOUBLE);
  INSERT(id, EvaluationRow, verify_ms, H5T_NATIVE_DOUBLE);
  INSERT(id, EvaluationRow, run_ms, H5T_NATIVE_DOUBLE);
  INSERT(id, EvaluationRow, registers, H5T_NATIVE_INT32);
  INSERT(id, EvaluationRow, shared_bytes, H5T_NATIVE_INT32);
  INSERT(id, EvaluationRow, occupancy, H5T_NATIVE_DOUBLE);
  INSERT(id, EvaluationRow, error_l2, H5T_NATIVE_DOUBLE);
  INSERT(id, EvaluationRow, error_max, H5T_NATIVE_DOUBLE);
  INSERT(id, EvaluationRow, wall_s, H5T_NATIVE_DOUBLE);
  INSERT(id, EvaluationRow, cached, H5T_NATIVE_INT8);
  INSERT(id, EvaluationRow, migrant, H5T_NATIVE_INT8);
  INSERT(id, EvaluationRow, message, str);
  if (with_timeline) {
    INSERT(id, EvaluationRow, submit_s, H5T_NATIVE_DOUBLE);
    INSERT(id, EvaluationRow, start_s, H5T_NATIVE_DOUBLE);
    INSERT(id, EvaluationRow, finish_s, H5T_NATIVE_DOUBLE);
  }
  return t;
}

// Compound type of GenerationRow.
h5::Datatype generation_type() {
  h5::Datatype t(H5_CHECK(H5Tcreate(H5T_COMPOUND, sizeof(GenerationRow))));
  const hid_t id = t.get();
  INSERT(id, GenerationRow, generation, H5T_NATIVE_INT32);
  INSERT(id, GenerationRow, wall_s, H5T_NATIVE_DOUBLE);
  INSERT(id, GenerationRow, wait_s, H5T_NATIVE_DOUBLE);
  INSERT(id, GenerationRow, best_ms, H5T_NATIVE_DOUBLE);
  INSERT(id, GenerationRow, mean_fitness, H5T_NATIVE_DOUBLE);
  INSERT(id, GenerationRow, mcr, H5T_NATIVE_DOUBLE);
  INSERT(id, GenerationRow, unique_genomes, H5T_NATIVE_INT32);
  INSERT(id, GenerationRow, evaluations, H5T_NATIVE_INT32);
  INSERT(id, GenerationRow, cache_hits, H5T_NATIVE_INT32);
  INSERT(id, GenerationRow, fills, H5T_NATIVE_INT32);
  INSERT(id, GenerationRow, restart, H5T_NATIVE_INT32);
  return t;
}

// Compound type of MigrationRow.
h5::Datatype migration_type(hid_t str) {
  h5::Datatype t(H5_CHECK(H5Tcreate(H5T_COMPOUND, sizeof(MigrationRow))));
  const hid_t id = t.get();
  INSERT(id, MigrationRow, generation, H5T_NATIVE_INT32);
  INSERT(id, MigrationRow, direction, H5T_NATIVE_INT32);
  INSERT(id, MigrationRow, peer, H5T_NATIVE_INT32);
  INSERT(id, MigrationRow, key, str);
  INSERT(id, MigrationRow, median_ms, H5T_NATIVE_DOUBLE);
  return t;
}

#undef INSERT

// Borrowed (non-owning) char* for a string the caller keeps alive while writing.
char* borrow(const std::string& s) {
  return const_cast<char*>(s.c_str());
}

// hvl_t view of a vector the caller keeps alive while writing.
template <typename T>
hvl_t borrow(const std::vector<T>& v) {
  return hvl_t{v.size(), v.empty() ? nullptr : const_cast<T*>(v.data())};
}

// Copy of a vlen sequence read by HDF5.
template <typename T>
std::vector<T> copy_vlen(const hvl_t& v) {
  const T* p = static_cast<const T*>(v.p);
  return p == nullptr ? std::vector<T>{} : std::vector<T>(p, p + v.len);
}

std::string copy_string(const char* s) {
  return s != nullptr ? s : "";
}

// The `committed` attribute of a rank group: rows per table (evaluations, generations,
// migrations) as of the last completed flush. Rows past it belong to a flush that a kill
// interrupted and are never read.
constexpr const char* kCommitted = "committed";
constexpr const char* kTables[] = {"evaluations", "generations", "migrations"};

// Rows of table `name` under loc that a completed flush wrote.
hsize_t committed_rows(hid_t loc, const char* name, const h5::Table& table) {
  const hsize_t extent = table.rows();
  if (!h5::has_attr(loc, kCommitted))
    return extent;  // written before the marker existed
  const auto counts = h5::read_attr_ints64(loc, kCommitted);
  for (std::size_t i = 0; i < std::size(kTables) && i < counts.size(); ++i) {
    if (std::string_view(name) == kTables[i]) {
      return std::min(extent, static_cast<hsize_t>(std::max<std::int64_t>(0, counts[i])));
    }
  }
  return extent;
}

// The first n rows of a table that read back, as Row (vlen memory reclaimed by the
// caller): normally all n; if HDF5 fails on some, the longest readable prefix.
template <typename Row>
std::vector<Row> read_prefix(const h5::Table& table, hid_t type, hsize_t n) {
  std::vector<Row> rows(n);
  if (table.try_read(0, n, rows.data()))
    return rows;
  hsize_t good = 0;  // rows [0, good) read; rows [0, bad) do not
  hsize_t bad = n;
  while (bad - good > 1) {
    const hsize_t mid = good + (bad - good) / 2;
    std::vector<Row> probe(mid);
    if (table.try_read(0, mid, probe.data())) {
      h5::reclaim(type, probe.data(), mid);
      good = mid;
    } else {
      bad = mid;
    }
  }
  rows.assign(good, Row{});
  if (!table.try_read(0, good, rows.data()))
    rows.clear();
  return rows;
}

// The readable committed rows of table `name` under loc; `total` gets the number of
// committed rows.
template <typename Row>
std::vector<Row> read_rows(hid_t loc, const char* name, hid_t type, hsize_t* total = nullptr) {
  const h5::Table table = h5::Table::open(loc, name, type);
  const hsize_t n = committed_rows(loc, name, table);
  if (total != nullptr)
    *total = n;
  return read_prefix<Row>(table, type, n);
}

// The generation column of table `name` (fixed-size, never touches vlen data), as far as
// it reads back.
std::vector<GenerationColumn> generation_column(hid_t loc, const char* name) {
  h5::Datatype column(H5_CHECK(H5Tcreate(H5T_COMPOUND, sizeof(GenerationColumn))));
  H5_CHECK(H5Tinsert(column.get(), "generation", HOFFSET(GenerationColumn, generation),
                     H5T_NATIVE_INT32));
  return read_rows<GenerationColumn>(loc, name, column.get());
}

// The first generation to drop from table `name` of which `readable` of `total` rows
// read back: INT_MAX when all did; else the generation of the first unreadable row, or,
// when even that cannot be read, the last readable generation (it may be partial).
int incomplete_from(hid_t loc, const char* name, std::size_t readable, hsize_t total) {
  if (readable >= total)
    return std::numeric_limits<int>::max();
  const auto gens = generation_column(loc, name);
  if (readable < gens.size())
    return gens[readable].generation;
  return readable == 0 ? 0 : gens[readable - 1].generation;
}

// Number of leading rows of table `name` of generations up to keep_through.
hsize_t rows_through(hid_t loc, const char* name, int keep_through) {
  const auto gens = generation_column(loc, name);
  const auto it = std::find_if(gens.begin(), gens.end(), [&](const GenerationColumn& g) {
    return g.generation > keep_through;
  });
  return static_cast<hsize_t>(it - gens.begin());
}

// An empty checkpoint slot dataset under the checkpoint group g.
h5::Dataset create_slot(hid_t g, const char* name) {
  const hsize_t zero = 0;
  const hsize_t unlimited = H5S_UNLIMITED;
  h5::Dataspace space(H5_CHECK(H5Screate_simple(1, &zero, &unlimited)));
  h5::PropList dcpl(H5_CHECK(H5Pcreate(H5P_DATASET_CREATE)));
  H5_CHECK(H5Pset_chunk(dcpl.get(), 1, &kCheckpointChunk));
  return h5::Dataset(H5_CHECK(
      H5Dcreate2(g, name, H5T_STD_U8LE, space.get(), H5P_DEFAULT, dcpl.get(), H5P_DEFAULT)));
}

// Writes the table attributes that name the columns of `values` and the status codes.
void describe_evaluations(hid_t dataset) {
  h5::write_attr(dataset, "parameters", parameter_names());
  std::vector<std::string> statuses;
  for (int i = 0; i < kStatusCount; ++i) {
    statuses.emplace_back(status_name(static_cast<Status>(i)));
  }
  h5::write_attr(dataset, "status_names", statuses);
}

}  // namespace

int evaluations_incomplete_from(hid_t loc) {
  const RowTypes types;
  // Readability does not depend on the settings columns (their width may differ from ours).
  const h5::Datatype without_values = evaluation_type(types.string.get(), false);
  const hid_t type = without_values.get();
  const h5::Table table = h5::Table::open(loc, "evaluations", type);
  const hsize_t total = committed_rows(loc, "evaluations", table);
  const auto gens = generation_column(loc, "evaluations");
  if (gens.size() == total) {
    // Damage, if any, is in the last rows: reading the last generation's rows decides.
    if (total == 0)
      return std::numeric_limits<int>::max();
    hsize_t first = total - 1;
    while (first > 0 && gens[first - 1].generation == gens.back().generation)
      --first;
    std::vector<EvaluationRow> tail(total - first);
    if (table.try_read(first, tail.size(), tail.data())) {
      h5::reclaim(type, tail.data(), tail.size());
      return std::numeric_limits<int>::max();
    }
  }
  auto rows = read_prefix<EvaluationRow>(table, type, total);
  h5::reclaim(type, rows.data(), rows.size());
  return incomplete_from(loc, "evaluations", rows.size(), total);
}

RowTypes::RowTypes()
    : string(h5::string_type()),
      evaluation(evaluation_type(string.get(), true, true)),
      generation(generation_type()),
      migration(migration_type(string.get())) {}

std::vector<std::string> parameter_names() {
  std::vector<std::string> names;
  for (std::size_t i = 0; i < kParamCount; ++i)
    names.emplace_back(param_name(param_at(i)));
  return names;
}

bool ParamColumns::identity() const {
  if (param.size() != kParamCount)
    return false;
  for (std::size_t j = 0; j < param.size(); ++j) {
    if (param[j] != j)
      return false;
  }
  return true;
}

Setting ParamColumns::setting(const int* row) const {
  Setting s;
  for (std::size_t i = 0; i < kParamCount; ++i)
    s.values[i] = neutral_value(param_at(i));
  for (std::size_t j = 0; j < param.size(); ++j)
    s.values[param[j]] = row[j];
  return s;
}

ParamColumns param_columns(const std::vector<std::string>& names, const std::string& where) {
  ParamColumns c;
  for (const std::string& name : names) {
    const auto p = param_from_name(name);
    if (!p) {
      throw InputError(where + " has a parameter column '" + name +
                       "' this isletune does not know; expected parameters of " +
                       std::to_string(kParamCount) + " known names (a newer isletune wrote it).");
    }
    c.param.push_back(index_of(*p));
  }
  return c;
}

namespace {

// The parameter columns of the evaluations table under loc: by its `parameters` attribute,
// else (no attribute) this build's order when the width matches.
ParamColumns evaluation_columns(hid_t loc) {
  h5::Dataset table(H5_CHECK(H5Dopen2(loc, "evaluations", H5P_DEFAULT)));
  if (h5::has_attr(table.get(), "parameters"))
    return param_columns(h5::read_attr_strings(table.get(), "parameters"), "the evaluations table");
  ParamColumns c;
  for (std::size_t i = 0; i < kParamCount; ++i)
    c.param.push_back(i);
  return c;
}

// The values column of the first n rows of the evaluations table, `width` ints per row.
std::vector<int> read_values_column(hid_t loc, std::size_t width, hsize_t n) {
  h5::Datatype row(H5_CHECK(H5Tcreate(H5T_COMPOUND, width * sizeof(int))));
  h5::Datatype values = h5::array_type(H5T_NATIVE_INT, width);
  H5_CHECK(H5Tinsert(row.get(), "values", 0, values.get()));
  const h5::Table table = h5::Table::open(loc, "evaluations", row.get());
  std::vector<int> out(n * width);
  if (n > 0 && !table.try_read(0, n, out.data()))
    throw InputError("the evaluations table's values column does not read back.");
  return out;
}

// The timeline columns of the first n rows of the evaluations table; empty when the table
// has none (written before them).
std::vector<TimelineColumns> read_timeline_columns(hid_t loc, hsize_t n) {
  h5::Dataset dataset(H5_CHECK(H5Dopen2(loc, "evaluations", H5P_DEFAULT)));
  h5::Datatype file_type(H5_CHECK(H5Dget_type(dataset.get())));
  if (H5Tget_member_index(file_type.get(), "submit_s") < 0 ||
      H5Tget_member_index(file_type.get(), "finish_s") < 0 ||
      H5Tget_member_index(file_type.get(), "start_s") < 0)
    return {};
  h5::Datatype row(H5_CHECK(H5Tcreate(H5T_COMPOUND, sizeof(TimelineColumns))));
  H5_CHECK(H5Tinsert(row.get(), "submit_s", HOFFSET(TimelineColumns, submit_s), H5T_NATIVE_DOUBLE));
  H5_CHECK(H5Tinsert(row.get(), "start_s", HOFFSET(TimelineColumns, start_s), H5T_NATIVE_DOUBLE));
  H5_CHECK(H5Tinsert(row.get(), "finish_s", HOFFSET(TimelineColumns, finish_s), H5T_NATIVE_DOUBLE));
  const h5::Table table = h5::Table::open(loc, "evaluations", row.get());
  std::vector<TimelineColumns> out(n);
  if (n > 0 && !table.try_read(0, n, out.data()))
    return {};
  return out;
}

}  // namespace

std::vector<EvaluationRecord> read_evaluations(hid_t loc) {
  const RowTypes types;
  hsize_t total = 0;
  // A table whose settings columns are not this build's is read without its values member,
  // then its values column apart, mapped by name.
  const ParamColumns columns = evaluation_columns(loc);
  const bool by_name = !columns.identity();
  const h5::Datatype without_values = evaluation_type(types.string.get(), false);
  const h5::Datatype with_values = evaluation_type(types.string.get());
  auto rows = read_rows<EvaluationRow>(loc, "evaluations",
                                       by_name ? without_values.get() : with_values.get(), &total);
  const std::vector<TimelineColumns> timeline = read_timeline_columns(loc, rows.size());
  const std::vector<int> values =
      by_name ? read_values_column(loc, columns.param.size(), rows.size()) : std::vector<int>{};
  const int cut = incomplete_from(loc, "evaluations", rows.size(), total);
  std::vector<EvaluationRecord> records;
  records.reserve(rows.size());
  for (const EvaluationRow& row : rows) {
    if (row.generation >= cut)
      break;
    EvaluationRecord r;
    r.eval_id = row.eval_id;
    r.generation = row.generation;
    r.cell = row.cell;
    r.genes = copy_vlen<int>(row.genes);
    if (by_name) {
      const std::size_t at = static_cast<std::size_t>(&row - rows.data());
      r.setting = columns.setting(values.data() + at * columns.param.size());
    } else {
      std::copy(std::begin(row.values), std::end(row.values), r.setting.values.begin());
    }
    Measurement& m = r.measurement;
    m.status = static_cast<Status>(row.status);
    m.median_ms = row.median_ms;
    m.times_ms = copy_vlen<double>(row.times_ms);
    m.compile_ms = row.compile_ms;
    m.verify_ms = row.verify_ms;
    m.run_ms = row.run_ms;
    m.registers = row.registers;
    m.shared_bytes = row.shared_bytes;
    m.occupancy = row.occupancy;
    m.error_l2 = row.error_l2;
    m.error_max = row.error_max;
    m.message = copy_string(row.message);
    r.wall_s = row.wall_s;
    r.cached = row.cached != 0;
    r.migrant = row.migrant != 0;
    if (!timeline.empty()) {
      const TimelineColumns& t = timeline[static_cast<std::size_t>(&row - rows.data())];
      r.timeline = {t.submit_s, t.start_s, t.finish_s};
    }
    records.push_back(std::move(r));
  }
  h5::reclaim(by_name ? without_values.get() : with_values.get(), rows.data(), rows.size());
  return records;
}

std::vector<GenerationRecord> read_generations(hid_t loc) {
  const RowTypes types;
  hsize_t total = 0;
  const auto rows = read_rows<GenerationRow>(loc, "generations", types.generation.get(), &total);
  const int cut = std::min(incomplete_from(loc, "generations", rows.size(), total),
                           evaluations_incomplete_from(loc));
  std::vector<GenerationRecord> records;
  for (const GenerationRow& row : rows) {
    if (row.generation >= cut)
      break;
    records.push_back({row.generation, row.wall_s, row.wait_s, row.best_ms, row.mean_fitness,
                       row.mcr, row.unique_genomes, row.evaluations, row.cache_hits, row.fills,
                       row.restart});
  }
  return records;
}

std::vector<MigrationRecord> read_migrations(hid_t loc) {
  const RowTypes types;
  hsize_t total = 0;
  auto rows = read_rows<MigrationRow>(loc, "migrations", types.migration.get(), &total);
  const int cut = std::min(incomplete_from(loc, "migrations", rows.size(), total),
                           evaluations_incomplete_from(loc));
  std::vector<MigrationRecord> records;
  for (const MigrationRow& row : rows) {
    if (row.generation >= cut)
      break;
    records.push_back(
        {row.generation, row.direction, row.peer, copy_string(row.key), row.median_ms});
  }
  h5::reclaim(types.migration.get(), rows.data(), rows.size());
  return records;
}

std::optional<Checkpoint> read_checkpoint(hid_t loc) {
  if (!h5::exists(loc, "checkpoint"))
    return std::nullopt;
  h5::Group group(H5_CHECK(H5Gopen2(loc, "checkpoint", H5P_DEFAULT)));
  if (!h5::has_attr(group.get(), "current"))
    return std::nullopt;
  // One slot's blob, or nullopt when it cannot be read back whole.
  const auto read_slot = [&](int slot) -> std::optional<Checkpoint> {
    const std::string name = "slot" + std::to_string(slot);
    try {
      if (!h5::exists(group.get(), name))
        return std::nullopt;
      h5::Dataset data(H5_CHECK(H5Dopen2(group.get(), name.c_str(), H5P_DEFAULT)));
      h5::Dataspace space(H5_CHECK(H5Dget_space(data.get())));
      hsize_t n = 0;
      H5_CHECK(H5Sget_simple_extent_dims(space.get(), &n, nullptr));
      Checkpoint c;
      c.generation = static_cast<int>(h5::read_attr_int(data.get(), "generation"));
      c.bytes.resize(n);
      if (n > 0) {
        H5_CHECK(
            H5Dread(data.get(), H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, c.bytes.data()));
      }
      return c;
    } catch (const h5::Error&) {
      return std::nullopt;
    }
  };
  // A slot is trusted only when the rows it was committed with are committed: `current`
  // and the rank group's `committed` are updated in the same flush, and a kill during it
  // may have moved one without the other.
  const auto committed = h5::has_attr(loc, kCommitted) ? h5::read_attr_ints64(loc, kCommitted)
                                                       : std::vector<std::int64_t>{};
  const auto usable = [&](int slot) -> std::optional<Checkpoint> {
    auto c = read_slot(slot);
    if (!c || committed.empty())
      return c;
    const std::string name = "slot" + std::to_string(slot);
    h5::Dataset data(H5_CHECK(H5Dopen2(group.get(), name.c_str(), H5P_DEFAULT)));
    if (!h5::has_attr(data.get(), kCommitted))
      return c;
    const auto rows = h5::read_attr_ints64(data.get(), kCommitted);
    for (std::size_t i = 0; i < rows.size() && i < committed.size(); ++i) {
      if (rows[i] > committed[i])
        return std::nullopt;
    }
    return c;
  };
  // The current slot (-1: none yet); if it cannot be trusted, the other one (one
  // generation older).
  const int current = static_cast<int>(h5::read_attr_int(group.get(), "current"));
  if (current < 0)
    return std::nullopt;
  if (auto c = usable(current))
    return c;
  return usable(1 - current);
}

RankTables RankTables::create(h5::Group group, bool checkpoint_slots) {
  RankTables t;
  t.types_ = std::make_unique<RowTypes>();
  t.group_ = std::move(group);
  const hid_t g = t.group_.get();
  t.evaluation_table_ =
      h5::Table::create(g, "evaluations", t.types_->evaluation.get(), kEvaluationChunk);
  describe_evaluations(t.evaluation_table_.id());
  t.generation_table_ =
      h5::Table::create(g, "generations", t.types_->generation.get(), kGenerationChunk);
  t.migration_table_ =
      h5::Table::create(g, "migrations", t.types_->migration.get(), kMigrationChunk);
  if (checkpoint_slots) {
    // Every object and attribute a commit touches exists before the first commit, so no
    // commit creates one (a kill while a new object is being linked could leave a link
    // to an object that is not in the file).
    h5::Group checkpoint = h5::open_or_create_group(g, "checkpoint");
    for (const char* name : {"slot0", "slot1"}) {
      h5::Dataset slot = create_slot(checkpoint.get(), name);
      h5::write_attr(slot.get(), "generation", static_cast<std::int32_t>(-1));
      h5::write_attr_in_place(slot.get(), kCommitted, {0, 0, 0});
    }
    h5::write_attr(checkpoint.get(), "generation", static_cast<std::int32_t>(-1));
    h5::write_attr(checkpoint.get(), "current", static_cast<std::int32_t>(-1));
  }
  t.mark_committed();
  H5_CHECK(H5Fflush(g, H5F_SCOPE_LOCAL));
  return t;
}

RankTables RankTables::open(h5::Group group, int keep_through) {
  RankTables t;
  t.types_ = std::make_unique<RowTypes>();
  t.attach(std::move(group));
  const hid_t g = t.group_.get();
  // Keep the committed rows of generations up to keep_through; rows of an interrupted
  // flush past the `committed` marker are cut off and overwritten.
  for (auto [table, name] : {std::pair{&t.evaluation_table_, "evaluations"},
                             std::pair{&t.generation_table_, "generations"},
                             std::pair{&t.migration_table_, "migrations"}}) {
    const hsize_t committed = committed_rows(g, name, *table);
    table->resize(std::min(committed, rows_through(g, name, keep_through)));
  }
  t.mark_committed();
  H5_CHECK(H5Fflush(g, H5F_SCOPE_LOCAL));
  return t;
}

void RankTables::flush(const CheckpointView* checkpoint) {
  std::vector<EvaluationRow> eval_rows;
  eval_rows.reserve(evaluations_.size());
  for (const EvaluationRecord& r : evaluations_) {
    const Measurement& m = r.measurement;
    EvaluationRow row{};
    row.eval_id = r.eval_id;
    row.generation = r.generation;
    row.cell = r.cell;
    row.genes = borrow(r.genes);
    std::copy(r.setting.values.begin(), r.setting.values.end(), row.values);
    row.key = nullptr;  // set below, once the key strings are stable
    row.status = static_cast<std::int8_t>(m.status);
    row.median_ms = m.median_ms;
    row.times_ms = borrow(m.times_ms);
    row.compile_ms = m.compile_ms;
    row.verify_ms = m.verify_ms;
    row.run_ms = m.run_ms;
    row.registers = m.registers;
    row.shared_bytes = m.shared_bytes;
    row.occupancy = m.occupancy;
    row.error_l2 = m.error_l2;
    row.error_max = m.error_max;
    row.wall_s = r.wall_s;
    row.cached = r.cached ? 1 : 0;
    row.migrant = r.migrant ? 1 : 0;
    row.message = borrow(m.message);
    row.submit_s = r.timeline.submit_s;
    row.start_s = r.timeline.start_s;
    row.finish_s = r.timeline.finish_s;
    eval_rows.push_back(row);
  }
  std::vector<std::string> keys;
  keys.reserve(evaluations_.size());
  for (const EvaluationRecord& r : evaluations_)
    keys.push_back(canonical_key(r.setting));
  for (std::size_t i = 0; i < keys.size(); ++i)
    eval_rows[i].key = borrow(keys[i]);

  std::vector<GenerationRow> gen_rows;
  for (const GenerationRecord& r : generations_) {
    gen_rows.push_back({r.generation, r.wall_s, r.wait_s, r.best_ms, r.mean_fitness, r.mcr,
                        r.unique_genomes, r.evaluations, r.cache_hits, r.fills, r.restart});
  }
  std::vector<MigrationRow> mig_rows;
  for (const MigrationRecord& r : migrations_) {
    mig_rows.push_back({r.generation, r.direction, r.peer, borrow(r.key), r.median_ms});
  }

  evaluation_table_.append(eval_rows.data(), eval_rows.size());
  generation_table_.append(gen_rows.data(), gen_rows.size());
  migration_table_.append(mig_rows.data(), mig_rows.size());
  const int slot = checkpoint != nullptr ? write_slot(*checkpoint) : -1;
  // Rows and blob reach the file before any marker refers to them.
  H5_CHECK(H5Fflush(group_.get(), H5F_SCOPE_LOCAL));
  mark_committed();
  if (checkpoint != nullptr)
    mark_slot(slot, checkpoint->generation);
  H5_CHECK(H5Fflush(group_.get(), H5F_SCOPE_LOCAL));
  evaluations_.clear();
  generations_.clear();
  migrations_.clear();
}

std::vector<std::int64_t> RankTables::row_counts() const {
  return {static_cast<std::int64_t>(evaluation_table_.rows()),
          static_cast<std::int64_t>(generation_table_.rows()),
          static_cast<std::int64_t>(migration_table_.rows())};
}

void RankTables::mark_committed() {
  h5::write_attr_in_place(group_.get(), kCommitted, row_counts());
}

void RankTables::release() {
  evaluation_table_ = h5::Table();
  generation_table_ = h5::Table();
  migration_table_ = h5::Table();
  group_.reset();
}

void RankTables::attach(h5::Group group) {
  group_ = std::move(group);
  const hid_t g = group_.get();
  evaluation_table_ = h5::Table::open(g, "evaluations", types_->evaluation.get());
  generation_table_ = h5::Table::open(g, "generations", types_->generation.get());
  migration_table_ = h5::Table::open(g, "migrations", types_->migration.get());
}

int RankTables::write_slot(const CheckpointView& checkpoint) {
  h5::Group group = h5::open_or_create_group(group_.get(), "checkpoint");
  const hid_t g = group.get();
  // Write into the slot that is not current; `current` flips only in mark_slot.
  const int slot = h5::has_attr(g, "current") && h5::read_attr_int(g, "current") == 0 ? 1 : 0;
  const std::string name = "slot" + std::to_string(slot);
  const hsize_t n = checkpoint.bytes.size();
  h5::Dataset data = h5::exists(g, name)
                         ? h5::Dataset(H5_CHECK(H5Dopen2(g, name.c_str(), H5P_DEFAULT)))
                         : create_slot(g, name.c_str());
  H5_CHECK(H5Dset_extent(data.get(), &n));
  if (n > 0) {
    H5_CHECK(H5Dwrite(data.get(), H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT,
                      checkpoint.bytes.data()));
  }
  h5::write_attr(data.get(), "generation", static_cast<std::int32_t>(checkpoint.generation));
  // The row counts this commit marks: readers trust the slot only once they are committed.
  h5::write_attr_in_place(data.get(), kCommitted, row_counts());
  // Closing writes the blob's chunk: a full disk must fail this commit here, before any
  // marker moves to the slot (an unchecked close lost the blob and kept the markers).
  H5_CHECK(data.close());
  H5_CHECK(group.close());
  return slot;
}

void RankTables::mark_slot(int slot, int generation) {
  h5::Group group(H5_CHECK(H5Gopen2(group_.get(), "checkpoint", H5P_DEFAULT)));
  h5::write_attr(group.get(), "generation", static_cast<std::int32_t>(generation));
  h5::write_attr(group.get(), "current", static_cast<std::int32_t>(slot));
}

}  // namespace isletune::trace_detail
