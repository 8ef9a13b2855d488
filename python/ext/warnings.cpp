// The core's warnings (failOnDataLoss=false data loss, option warnings,
// retried look-ups) go to Python's logging, logger "kwire", level WARNING,
// instead of straight to stderr: applications and hosts (Spark's Python
// workers) route them with the rest of their logs. Without any logging
// configuration Python prints WARNING records on stderr, as before.
#include <atomic>
#include <stdexcept>

#include <nanobind/stl/string.h>

#include "common.hpp"
#include "kwire/source/warnings.hpp"

namespace kwire::python {

namespace {

std::atomic<bool> to_logging{false};

void log_warning(const std::string& text) {
  // While the interpreter shuts down, the default (stderr) takes over.
  if (!to_logging.load() || !Py_IsInitialized()) throw std::runtime_error("no interpreter");
  nb::gil_scoped_acquire gil;
  try {
    nb::module_::import_("logging").attr("getLogger")("kwire").attr("warning")("%s", text);
  } catch (const nb::python_error&) {
    throw std::runtime_error("logging failed");  // written on stderr instead
  }
}

// True: warnings go to logging "kwire"; False: stderr ("WARN <text>").
void set_python_warnings(bool enabled) {
  to_logging = enabled;
  source::set_warning_handler(enabled ? source::WarningHandler(log_warning) : source::WarningHandler());
}

}  // namespace

void register_warnings(nb::module_& m) {
  m.def("set_python_warnings", &set_python_warnings, nb::arg("enabled"),
        "Route the core's warnings to logging.getLogger('kwire') (True) or stderr (False).");
}

}  // namespace kwire::python
