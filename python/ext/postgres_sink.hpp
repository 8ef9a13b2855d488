// The Python object holding a core PostgresSink; the streaming query takes
// it and hands it the source rows.
#pragma once

#include <memory>

#include "common.hpp"
#include "kwire/source/postgres_sink.hpp"

namespace kwire::python {

struct PyPostgresSink {
  PyPostgresSink(const nb::dict& options, std::optional<std::string> value_schema_ddl,
                 std::optional<std::vector<std::string>> kafka_columns);
  ~PyPostgresSink();
  source::PostgresSink& get();
  std::unique_ptr<source::PostgresSink> sink_;
};

}  // namespace kwire::python
