#include "rpc/mailbox.h"

#include <sys/eventfd.h>

namespace kgpu::rpc {

bool Mailbox::post(Task task) {
  bool wake = false;
  {
    std::lock_guard lock(mu_);
    if (closed_) return false;
    tasks_.push_back(std::move(task));
    if (std::this_thread::get_id() != loop_thread_ && !wake_pending_) wake = wake_pending_ = true;
  }
  if (wake) ::eventfd_write(eventfd_, 1);
  return true;
}

std::vector<Mailbox::Task> Mailbox::take() {
  std::lock_guard lock(mu_);
  wake_pending_ = false;
  return std::exchange(tasks_, {});
}

void Mailbox::close() {
  std::lock_guard lock(mu_);
  closed_ = true;
  tasks_.clear();
}

void Mailbox::set_loop_thread(std::thread::id id) {
  std::lock_guard lock(mu_);
  loop_thread_ = id;
}

bool Mailbox::on_loop_thread() const {
  std::lock_guard lock(mu_);
  return std::this_thread::get_id() == loop_thread_;
}

}  // namespace kgpu::rpc
