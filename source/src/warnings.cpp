#include "kwire/source/warnings.hpp"

#include <cstdio>
#include <memory>
#include <mutex>
#include <utility>

namespace kwire::source {

namespace {

std::mutex& handler_mutex() {
  static std::mutex m;
  return m;
}

std::shared_ptr<const WarningHandler>& handler_slot() {
  static std::shared_ptr<const WarningHandler> slot;
  return slot;
}

void to_stderr(const std::string& text) noexcept { std::fprintf(stderr, "WARN %s\n", text.c_str()); }

}  // namespace

WarningHandler set_warning_handler(WarningHandler handler) {
  auto next = handler ? std::make_shared<const WarningHandler>(std::move(handler)) : nullptr;
  std::lock_guard<std::mutex> lock(handler_mutex());
  auto previous = std::exchange(handler_slot(), std::move(next));
  return previous ? *previous : WarningHandler();
}

void log_warning(const std::string& text) noexcept {
  std::shared_ptr<const WarningHandler> handler;
  {
    std::lock_guard<std::mutex> lock(handler_mutex());
    handler = handler_slot();
  }
  if (!handler) {
    to_stderr(text);
    return;
  }
  try {
    (*handler)(text);
  } catch (...) {
    to_stderr(text);
  }
}

}  // namespace kwire::source
