// The HDF5 helpers of src/trace: error reporting, types, attributes, extendible tables.
#include "trace/h5.hpp"

#include <algorithm>

#include <cstdlib>
#include <cstring>
#include <mutex>

namespace isletune::h5 {
namespace {

// HDF5 must not close files itself at exit: a file abandoned after a write error (see
// RankTraceWriter::commit) would be flushed again, which after ENOSPC crashed inside
// H5F__close_cb. Every writer closes its files itself; what is left open at exit is the
// abandoned file, whose last complete commit is on disk. H5dont_atexit only works before
// the library initialises, hence a static initialiser.
const bool g_no_atexit_close = [] {
  H5dont_atexit();
  return true;
}();

// Collects the innermost HDF5 error description (the most specific one).
herr_t last_description(unsigned, const H5E_error2_t* e, void* data) {
  auto* text = static_cast<std::string*>(data);
  if (e->desc != nullptr && e->desc[0] != '\0')
    *text = e->desc;
  return 0;
}

// Creates or reopens an attribute of the given type and shape for writing.
Attribute fresh_attr(hid_t obj, const char* name, hid_t type, hid_t space) {
  if (H5_CHECK(H5Aexists(obj, name)) > 0)
    H5_CHECK(H5Adelete(obj, name));
  return Attribute(H5_CHECK(H5Acreate2(obj, name, type, space, H5P_DEFAULT, H5P_DEFAULT)));
}

// Writes a scalar attribute, in place when it already exists.
void write_scalar(hid_t obj, const char* name, hid_t file_type, hid_t mem_type, const void* value) {
  Attribute attr;
  if (H5_CHECK(H5Aexists(obj, name)) > 0) {
    attr = Attribute(H5_CHECK(H5Aopen(obj, name, H5P_DEFAULT)));
  } else {
    Dataspace space(H5_CHECK(H5Screate(H5S_SCALAR)));
    attr = Attribute(
        H5_CHECK(H5Acreate2(obj, name, file_type, space.get(), H5P_DEFAULT, H5P_DEFAULT)));
  }
  H5_CHECK(H5Awrite(attr.get(), mem_type, value));
}

// Number of elements of an attribute's dataspace.
hsize_t attr_elements(hid_t attr) {
  Dataspace space(H5_CHECK(H5Aget_space(attr)));
  return static_cast<hsize_t>(H5_CHECK(H5Sget_simple_extent_npoints(space.get())));
}

// Collects every description of the HDF5 error stack.
herr_t all_descriptions(unsigned, const H5E_error2_t* e, void* data) {
  if (e->desc != nullptr)
    *static_cast<std::string*>(data) += std::string(e->desc) + "\n";
  return 0;
}

}  // namespace

std::string last_system_error(int saved_errno) {
  std::string stack;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, all_descriptions, &stack);
  H5Eclear2(H5E_DEFAULT);
  const auto at = stack.find("errno = ");
  const int code = at != std::string::npos ? std::atoi(stack.c_str() + at + 8) : saved_errno;
  return code > 0 ? std::strerror(code) : std::string();
}

void fail(const char* call, const char* file, int line) {
  std::string detail;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, last_description, &detail);
  H5Eclear2(H5E_DEFAULT);
  throw Error(std::string("HDF5 call ") + call + " failed at " + file + ":" + std::to_string(line) +
                  (detail.empty() ? "" : ": " + detail),
              detail);
}

void quiet_errors() {
  static std::once_flag once;
  std::call_once(once, [] { H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); });
}

Datatype string_type() {
  Datatype t(H5_CHECK(H5Tcopy(H5T_C_S1)));
  H5_CHECK(H5Tset_size(t.get(), H5T_VARIABLE));
  H5_CHECK(H5Tset_cset(t.get(), H5T_CSET_UTF8));
  return t;
}

Datatype vlen_type(hid_t base) {
  return Datatype(H5_CHECK(H5Tvlen_create(base)));
}

Datatype array_type(hid_t base, hsize_t n) {
  return Datatype(H5_CHECK(H5Tarray_create2(base, 1, &n)));
}

bool exists(hid_t loc, const std::string& name) {
  return H5_CHECK(H5Lexists(loc, name.c_str(), H5P_DEFAULT)) > 0;
}

Group open_or_create_group(hid_t loc, const std::string& name) {
  if (exists(loc, name))
    return Group(H5_CHECK(H5Gopen2(loc, name.c_str(), H5P_DEFAULT)));
  return Group(H5_CHECK(H5Gcreate2(loc, name.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)));
}

void write_attr(hid_t obj, const char* name, std::string_view value) {
  const std::string text(value);
  const char* ptr = text.c_str();
  Datatype type = string_type();
  write_scalar(obj, name, type.get(), type.get(), &ptr);
}

void write_attr(hid_t obj, const char* name, std::int32_t value) {
  write_scalar(obj, name, H5T_STD_I32LE, H5T_NATIVE_INT32, &value);
}

void write_attr(hid_t obj, const char* name, std::int64_t value) {
  write_scalar(obj, name, H5T_STD_I64LE, H5T_NATIVE_INT64, &value);
}

void write_attr(hid_t obj, const char* name, std::uint64_t value) {
  write_scalar(obj, name, H5T_STD_U64LE, H5T_NATIVE_UINT64, &value);
}

void write_attr(hid_t obj, const char* name, double value) {
  write_scalar(obj, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &value);
}

void write_attr(hid_t obj, const char* name, const std::vector<std::string>& values) {
  std::vector<const char*> ptrs;
  for (const auto& v : values)
    ptrs.push_back(v.c_str());
  const hsize_t n = values.size();
  Dataspace space(H5_CHECK(H5Screate_simple(1, &n, nullptr)));
  Datatype type = string_type();
  Attribute attr = fresh_attr(obj, name, type.get(), space.get());
  if (n > 0)
    H5_CHECK(H5Awrite(attr.get(), type.get(), ptrs.data()));
}

void write_attr(hid_t obj, const char* name, const std::vector<std::int32_t>& values) {
  const hsize_t n = values.size();
  Dataspace space(H5_CHECK(H5Screate_simple(1, &n, nullptr)));
  Attribute attr = fresh_attr(obj, name, H5T_STD_I32LE, space.get());
  if (n > 0)
    H5_CHECK(H5Awrite(attr.get(), H5T_NATIVE_INT32, values.data()));
}

void write_attr_in_place(hid_t obj, const char* name, const std::vector<std::int64_t>& values) {
  const hsize_t n = values.size();
  Attribute attr;
  if (H5_CHECK(H5Aexists(obj, name)) > 0) {
    attr = Attribute(H5_CHECK(H5Aopen(obj, name, H5P_DEFAULT)));
    if (attr_elements(attr.get()) != n) {
      attr.reset();
      H5_CHECK(H5Adelete(obj, name));
    }
  }
  if (!attr.valid()) {
    Dataspace space(H5_CHECK(H5Screate_simple(1, &n, nullptr)));
    attr = Attribute(
        H5_CHECK(H5Acreate2(obj, name, H5T_STD_I64LE, space.get(), H5P_DEFAULT, H5P_DEFAULT)));
  }
  if (n > 0)
    H5_CHECK(H5Awrite(attr.get(), H5T_NATIVE_INT64, values.data()));
}

bool has_attr(hid_t obj, const char* name) {
  return H5_CHECK(H5Aexists(obj, name)) > 0;
}

std::string read_attr_string(hid_t obj, const char* name) {
  Attribute attr(H5_CHECK(H5Aopen(obj, name, H5P_DEFAULT)));
  Datatype type = string_type();
  char* ptr = nullptr;
  H5_CHECK(H5Aread(attr.get(), type.get(), &ptr));
  std::string text = ptr != nullptr ? ptr : "";
  H5free_memory(ptr);
  return text;
}

std::int64_t read_attr_int(hid_t obj, const char* name) {
  Attribute attr(H5_CHECK(H5Aopen(obj, name, H5P_DEFAULT)));
  std::int64_t value = 0;
  H5_CHECK(H5Aread(attr.get(), H5T_NATIVE_INT64, &value));
  return value;
}

std::uint64_t read_attr_uint(hid_t obj, const char* name) {
  Attribute attr(H5_CHECK(H5Aopen(obj, name, H5P_DEFAULT)));
  std::uint64_t value = 0;
  H5_CHECK(H5Aread(attr.get(), H5T_NATIVE_UINT64, &value));
  return value;
}

double read_attr_double(hid_t obj, const char* name) {
  Attribute attr(H5_CHECK(H5Aopen(obj, name, H5P_DEFAULT)));
  double value = 0;
  H5_CHECK(H5Aread(attr.get(), H5T_NATIVE_DOUBLE, &value));
  return value;
}

std::vector<std::string> read_attr_strings(hid_t obj, const char* name) {
  Attribute attr(H5_CHECK(H5Aopen(obj, name, H5P_DEFAULT)));
  const hsize_t n = attr_elements(attr.get());
  std::vector<char*> ptrs(n, nullptr);
  Datatype type = string_type();
  if (n > 0)
    H5_CHECK(H5Aread(attr.get(), type.get(), ptrs.data()));
  std::vector<std::string> values;
  for (char* p : ptrs) {
    values.emplace_back(p != nullptr ? p : "");
    H5free_memory(p);
  }
  return values;
}

std::vector<std::int64_t> read_attr_ints64(hid_t obj, const char* name) {
  Attribute attr(H5_CHECK(H5Aopen(obj, name, H5P_DEFAULT)));
  std::vector<std::int64_t> values(attr_elements(attr.get()));
  if (!values.empty())
    H5_CHECK(H5Aread(attr.get(), H5T_NATIVE_INT64, values.data()));
  return values;
}

std::vector<std::int32_t> read_attr_ints(hid_t obj, const char* name) {
  Attribute attr(H5_CHECK(H5Aopen(obj, name, H5P_DEFAULT)));
  std::vector<std::int32_t> values(attr_elements(attr.get()));
  if (!values.empty())
    H5_CHECK(H5Aread(attr.get(), H5T_NATIVE_INT32, values.data()));
  return values;
}

Table Table::create(hid_t loc, const char* name, hid_t row_type, hsize_t chunk_rows) {
  const hsize_t zero = 0;
  const hsize_t unlimited = H5S_UNLIMITED;
  Dataspace space(H5_CHECK(H5Screate_simple(1, &zero, &unlimited)));
  PropList dcpl(H5_CHECK(H5Pcreate(H5P_DATASET_CREATE)));
  H5_CHECK(H5Pset_chunk(dcpl.get(), 1, &chunk_rows));
  Table t;
  t.dataset_ = Dataset(
      H5_CHECK(H5Dcreate2(loc, name, row_type, space.get(), H5P_DEFAULT, dcpl.get(), H5P_DEFAULT)));
  t.row_type_ = row_type;
  return t;
}

Table Table::open(hid_t loc, const char* name, hid_t row_type) {
  Table t;
  t.dataset_ = Dataset(H5_CHECK(H5Dopen2(loc, name, H5P_DEFAULT)));
  t.row_type_ = row_type;
  return t;
}

hsize_t Table::rows() const {
  Dataspace space(H5_CHECK(H5Dget_space(dataset_.get())));
  hsize_t n = 0;
  H5_CHECK(H5Sget_simple_extent_dims(space.get(), &n, nullptr));
  return n;
}

void Table::append(const void* rows_data, hsize_t n) {
  if (n == 0)
    return;
  const hsize_t old_rows = rows();
  const hsize_t new_rows = old_rows + n;
  H5_CHECK(H5Dset_extent(dataset_.get(), &new_rows));
  Dataspace file_space(H5_CHECK(H5Dget_space(dataset_.get())));
  H5_CHECK(H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, &old_rows, nullptr, &n, nullptr));
  Dataspace mem_space(H5_CHECK(H5Screate_simple(1, &n, nullptr)));
  // HDF5 allocates and zeroes its type-conversion buffer (1 MiB by default) on every write
  // of a compound with variable-length fields; sized to the rows at hand, a per-generation
  // append stops paying for a megabyte of memset.
  Datatype file_type(H5_CHECK(H5Dget_type(dataset_.get())));
  const std::size_t row_bytes = std::max(H5Tget_size(row_type_), H5Tget_size(file_type.get()));
  PropList transfer(H5_CHECK(H5Pcreate(H5P_DATASET_XFER)));
  H5_CHECK(
      H5Pset_buffer(transfer.get(), std::max<std::size_t>(4096, row_bytes * n), nullptr, nullptr));
  H5_CHECK(H5Dwrite(dataset_.get(), row_type_, mem_space.get(), file_space.get(), transfer.get(),
                    rows_data));
}

void Table::resize(hsize_t n) {
  H5_CHECK(H5Dset_extent(dataset_.get(), &n));
}

void Table::read_all(void* buf) const {
  if (rows() == 0)
    return;
  H5_CHECK(H5Dread(dataset_.get(), row_type_, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf));
}

bool Table::try_read(hsize_t first, hsize_t n, void* buf) const {
  if (n == 0)
    return true;
  const hid_t file_space = H5Dget_space(dataset_.get());
  const hid_t mem_space = H5Screate_simple(1, &n, nullptr);
  bool ok = file_space >= 0 && mem_space >= 0 &&
            H5Sselect_hyperslab(file_space, H5S_SELECT_SET, &first, nullptr, &n, nullptr) >= 0 &&
            H5Dread(dataset_.get(), row_type_, mem_space, file_space, H5P_DEFAULT, buf) >= 0;
  if (mem_space >= 0)
    H5Sclose(mem_space);
  if (file_space >= 0)
    H5Sclose(file_space);
  H5Eclear2(H5E_DEFAULT);
  return ok;
}

void reclaim(hid_t row_type, void* buf, hsize_t n) {
  if (n == 0)
    return;
  Dataspace space(H5_CHECK(H5Screate_simple(1, &n, nullptr)));
  H5Dvlen_reclaim(row_type, space.get(), H5P_DEFAULT, buf);
}

}  // namespace isletune::h5
