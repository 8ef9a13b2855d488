// The transaction calls the sender thread runs for the callers' threads.
#include <fmt/format.h>

#include "producer_sender.hpp"

namespace kwire::client {

void Sender::run_tasks() {
  for (;;) {
    std::unique_ptr<TxnTask> task;
    {
      std::lock_guard lock(mu_);
      if (tasks_.empty() || !task_ready(*tasks_.front())) return;
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    try {
      run_task(*task);
      task->done.set_value();
    } catch (...) {
      task->done.set_exception(std::current_exception());
    }
  }
}

bool Sender::task_ready(const TxnTask&) const { return true; }

void Sender::run_task(TxnTask&) { throw TransactionStateError("transactions are not available in this build"); }

}  // namespace kwire::client
