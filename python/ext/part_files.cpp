// The file sinks' part files for Python: the one atomic file writer
// (checkpoint::AtomicFileWriter: a temp file beside the part file, fsync,
// rename, fsync of the folder; stale temp files of a killed process removed),
// and JSON Lines written by the one record writer (source::RecordJsonWriter).
#include <memory>
#include <string>
#include <string_view>

#include <nanobind/stl/string.h>

#include "common.hpp"
#include "kwire/checkpoint/checkpoint.hpp"
#include "kwire/source/json_writer.hpp"

namespace kwire::python {

namespace {

// A part file being written: a binary file object (write, tell, flush) that
// pyarrow and other writers can write to, made durable at `path` by commit().
class PyAtomicFile {
 public:
  explicit PyAtomicFile(const std::string& path) {
    nb::gil_scoped_release unlocked;
    file_ = std::make_unique<checkpoint::AtomicFileWriter>(path);
  }

  // Any object with the buffer protocol (bytes, bytearray, memoryview, pyarrow.Buffer).
  std::size_t write(nb::handle data) {
    Py_buffer view;
    if (PyObject_GetBuffer(data.ptr(), &view, PyBUF_SIMPLE) != 0) throw nb::python_error();
    struct Release {
      Py_buffer* view;
      ~Release() { PyBuffer_Release(view); }
    } release{&view};
    open().append(std::string_view(static_cast<const char*>(view.buf), static_cast<std::size_t>(view.len)));
    return static_cast<std::size_t>(view.len);
  }

  std::uint64_t tell() { return open().size(); }

  // Durable at its path on return; the object is closed.
  void commit() {
    auto file = std::move(open_file());
    nb::gil_scoped_release unlocked;
    file->commit();
  }

  // Deletes the temp file (if not committed); the object is closed.
  void abort() noexcept { file_.reset(); }

  bool closed() const noexcept { return file_ == nullptr; }

 private:
  checkpoint::AtomicFileWriter& open() { return *open_file(); }
  std::unique_ptr<checkpoint::AtomicFileWriter>& open_file() {
    if (!file_) throw nb::value_error("I/O operation on a closed part file (committed or aborted)");
    return file_;
  }
  std::unique_ptr<checkpoint::AtomicFileWriter> file_;
};

// Every row of `data` (anything with __arrow_c_stream__ or __arrow_c_array__)
// as a JSON line at `path`, made durable there; returns the rows written.
std::int64_t write_json_lines(const std::string& path, nb::handle data) {
  std::unique_ptr<checkpoint::AtomicFileWriter> file;
  {
    nb::gil_scoped_release unlocked;
    file = std::make_unique<checkpoint::AtomicFileWriter>(path);
  }
  const source::RecordJsonWriter writer;
  std::string lines;
  const std::int64_t rows =
      for_each_arrow_batch(data, "JsonLinesSink", [&](const ArrowSchema& schema, const ArrowArray& batch) {
        lines.clear();
        const std::int64_t n = writer.append_arrow_lines(lines, schema, batch);
        file->append(lines);
        return n;
      });
  nb::gil_scoped_release unlocked;
  file->commit();
  return rows;
}

}  // namespace

void register_part_files(nb::module_& m) {
  nb::class_<PyAtomicFile>(m, "AtomicFile",
                           "A part file written to a temp file beside `path` and made durable there by commit() "
                           "(checkpoint::AtomicFileWriter)")
      .def(nb::init<const std::string&>(), nb::arg("path"))
      .def("write", &PyAtomicFile::write, nb::arg("data"))
      .def("tell", &PyAtomicFile::tell)
      .def("flush", [](PyAtomicFile&) {})
      .def("commit", &PyAtomicFile::commit)
      .def("abort", &PyAtomicFile::abort)
      .def_prop_ro("closed", &PyAtomicFile::closed);
  m.def("write_json_lines", &write_json_lines, nb::arg("path"), nb::arg("data"),
        "Every row of an Arrow table or stream as a JSON line (Spark's JSON writer's rules) in a part file made "
        "durable at `path`; returns the rows written.");
  m.def(
      "remove_stale_temp_files",
      [](const std::string& dir) {
        nb::gil_scoped_release unlocked;
        checkpoint::remove_stale_temp_files(dir);
      },
      nb::arg("dir"), "Deletes the temp files a killed writer left in `dir` (not in its subfolders).");
}

}  // namespace kwire::python
