// The Python object holding a core KafkaSink; the streaming query takes it.
#pragma once

#include <memory>

#include "common.hpp"
#include "kwire/source/kafka_sink.hpp"

namespace kwire::python {

struct PyKafkaSink {
  explicit PyKafkaSink(const nb::dict& options);
  ~PyKafkaSink();
  source::KafkaSink& get();
  std::unique_ptr<source::KafkaSink> sink_;
};

}  // namespace kwire::python
