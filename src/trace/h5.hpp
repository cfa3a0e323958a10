// Thin layer over the HDF5 C API used by the trace writer and reader (internal to
// src/trace): move-only owners per hid_t kind, H5_CHECK, attribute helpers and
// extendible compound tables. Nothing outside src/trace includes this header.
#pragma once

#include <hdf5.h>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace isletune::h5 {

// An HDF5 call failed: names the call, the source location and HDF5's own message.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what, std::string reason = {})
      : std::runtime_error(what), reason_(std::move(reason)) {}
  // HDF5's own description of the failure ("wrong B-tree signature"), without the call and
  // source line of what(): what a message to a user may quote.
  [[nodiscard]] const std::string& reason() const { return reason_; }

 private:
  std::string reason_;
};

// Throws Error when an HDF5 call returned a negative id or status; returns the value.
[[noreturn]] void fail(const char* call, const char* file, int line);
template <typename T>
T check(T value, const char* call, const char* file, int line) {
  if (value < 0)
    fail(call, file, line);
  return value;
}

#define H5_CHECK(call) ::isletune::h5::check((call), #call, __FILE__, __LINE__)

// The system's reason for the HDF5 call that just failed without an Error ("No space
// left on device"): the errno HDF5 recorded on its error stack, else `saved_errno`, else
// empty. Clears the stack.
[[nodiscard]] std::string last_system_error(int saved_errno);

// Turns off HDF5's printing of its error stack to stderr (errors become exceptions).
void quiet_errors();

// Move-only owner of one hid_t, closed with Close; closing never throws.
template <herr_t (*Close)(hid_t)>
class Handle {
 public:
  Handle() = default;
  explicit Handle(hid_t id) : id_(id) {}
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  Handle(Handle&& other) noexcept : id_(std::exchange(other.id_, H5I_INVALID_HID)) {}
  Handle& operator=(Handle&& other) noexcept {
    if (this != &other) {
      reset();
      id_ = std::exchange(other.id_, H5I_INVALID_HID);
    }
    return *this;
  }
  ~Handle() { reset(); }

  [[nodiscard]] hid_t get() const { return id_; }
  [[nodiscard]] bool valid() const { return id_ >= 0; }
  // Closes the handle now and returns Close's status: a close can perform a write HDF5
  // deferred to it (a chunk of a dataset), so a writer checks it (H5_CHECK(h.close())).
  [[nodiscard]] herr_t close() noexcept {
    const herr_t status = id_ >= 0 ? Close(id_) : 0;
    id_ = H5I_INVALID_HID;
    return status;
  }
  // Closes the handle now (no-throw; a failing close is ignored).
  void reset() noexcept {
    if (id_ >= 0)
      Close(id_);
    id_ = H5I_INVALID_HID;
  }

 private:
  hid_t id_ = H5I_INVALID_HID;
};

using File = Handle<H5Fclose>;
using Group = Handle<H5Gclose>;
using Dataset = Handle<H5Dclose>;
using Dataspace = Handle<H5Sclose>;
using Datatype = Handle<H5Tclose>;
using Attribute = Handle<H5Aclose>;
using PropList = Handle<H5Pclose>;
using Object = Handle<H5Oclose>;

// Types.
[[nodiscard]] Datatype string_type();  // variable-length UTF-8 string
[[nodiscard]] Datatype vlen_type(hid_t base);
[[nodiscard]] Datatype array_type(hid_t base, hsize_t n);

// True if `name` (a direct child path) exists under loc; intermediate groups must exist.
[[nodiscard]] bool exists(hid_t loc, const std::string& name);
// Opens group `name` under loc, creating it if missing.
[[nodiscard]] Group open_or_create_group(hid_t loc, const std::string& name);

// Attributes. Scalars are overwritten in place when present (a small atomic write);
// arrays are replaced.
void write_attr(hid_t obj, const char* name, std::string_view value);
void write_attr(hid_t obj, const char* name, std::int32_t value);
void write_attr(hid_t obj, const char* name, std::int64_t value);
void write_attr(hid_t obj, const char* name, std::uint64_t value);
void write_attr(hid_t obj, const char* name, double value);
void write_attr(hid_t obj, const char* name, const std::vector<std::string>& values);
void write_attr(hid_t obj, const char* name, const std::vector<std::int32_t>& values);
// An int64 array attribute overwritten in place when it exists with the same length (one
// small write: a reader sees the old or the new value, never a missing attribute).
void write_attr_in_place(hid_t obj, const char* name, const std::vector<std::int64_t>& values);

[[nodiscard]] bool has_attr(hid_t obj, const char* name);
[[nodiscard]] std::string read_attr_string(hid_t obj, const char* name);
[[nodiscard]] std::int64_t read_attr_int(hid_t obj, const char* name);
[[nodiscard]] std::uint64_t read_attr_uint(hid_t obj, const char* name);
[[nodiscard]] double read_attr_double(hid_t obj, const char* name);
[[nodiscard]] std::vector<std::string> read_attr_strings(hid_t obj, const char* name);
[[nodiscard]] std::vector<std::int32_t> read_attr_ints(hid_t obj, const char* name);
[[nodiscard]] std::vector<std::int64_t> read_attr_ints64(hid_t obj, const char* name);

// A chunked, extendible 1-D dataset of compound rows (the trace tables).
class Table {
 public:
  // Creates an empty table with unlimited rows.
  static Table create(hid_t loc, const char* name, hid_t row_type, hsize_t chunk_rows);
  // Opens an existing table; row_type is the in-memory row type.
  static Table open(hid_t loc, const char* name, hid_t row_type);

  [[nodiscard]] hsize_t rows() const;
  [[nodiscard]] hid_t id() const { return dataset_.get(); }
  // Appends n rows laid out as row_type.
  void append(const void* rows, hsize_t n);
  // Shrinks (or grows) the table to n rows.
  void resize(hsize_t n);
  // Reads every row into buf (rows() * sizeof(row)); vlen data must be reclaimed.
  void read_all(void* buf) const;
  // Reads rows [first, first + n) into buf; false (nothing thrown) when HDF5 cannot,
  // e.g. rows whose variable-length data a killed writer never finished writing.
  [[nodiscard]] bool try_read(hsize_t first, hsize_t n, void* buf) const;

 private:
  Dataset dataset_;
  hid_t row_type_ = H5I_INVALID_HID;  // borrowed: owned by the caller
};

// Frees the vlen memory HDF5 allocated while reading n rows of type row_type.
void reclaim(hid_t row_type, void* buf, hsize_t n);

}  // namespace isletune::h5
