#pragma once
// Work posted to the server's thread from anywhere (replies, stream messages, close requests).
// Wakes the thread through an eventfd only when the poster is another thread and no wake-up is
// pending: the thread drains its mailbox after every batch of socket events anyway.
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "rpc/server.h"

namespace kgpu::rpc {

class Mailbox {
 public:
  using Task = std::function<void(Server::Impl&)>;
  explicit Mailbox(int eventfd) : eventfd_(eventfd) {}

  bool post(Task task);  // false once closed: the task is dropped
  std::vector<Task> take();
  void close();
  void set_loop_thread(std::thread::id id);
  bool on_loop_thread() const;

 private:
  mutable std::mutex mu_;
  std::vector<Task> tasks_;
  bool closed_ = false;
  bool wake_pending_ = false;
  int eventfd_;
  std::thread::id loop_thread_;
};

}  // namespace kgpu::rpc
