#include "kube/node_feature_sync.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <exception>

#include "core/thread_name.h"

namespace kgpu::kube {
namespace {

// The keys whose value differs between `before` and `after` (added, removed or changed), for the log.
std::string changed_keys(const std::map<std::string, std::string>& before,
                         const std::map<std::string, std::string>& after) {
  std::string out;
  auto note = [&](const std::string& key) { out += (out.empty() ? "" : ", ") + key; };
  for (const auto& [key, value] : after)
    if (auto it = before.find(key); it == before.end() || it->second != value) note(key);
  for (const auto& [key, value] : before)
    if (!after.contains(key)) note(key);
  return out;
}

std::string seconds(std::chrono::milliseconds d) {
  return std::to_string(d.count() / 1000) + (d.count() % 1000 ? "." + std::to_string(d.count() % 1000 / 100) : "") + "s";
}

}  // namespace

Result<std::unique_ptr<NodeFeatureSync>> NodeFeatureSync::start(const std::map<std::string, std::string>& env,
                                                                NodeFeatureTiming timing) {
  auto settings = node_feature_settings(env);
  if (!settings) return settings.error();
  auto server = find_api_server(env);
  if (!server) return Error::unavailable("flags.useNodeFeatureAPI needs the API server: " + server.error().message);
  return std::make_unique<NodeFeatureSync>(std::move(*server), std::move(*settings), timing);
}

NodeFeatureSync::NodeFeatureSync(ApiServer server, NodeFeatureSettings settings, NodeFeatureTiming timing)
    : place_(settings.place),
      timing_(timing),
      api_(std::move(server), interrupter_),
      client_(api_, std::move(settings), timing.request_deadline) {
  thread_ = std::thread([this] {
    name_this_thread("kgpu-nodefeat");
    run();
  });
}

NodeFeatureSync::~NodeFeatureSync() { stop(false, std::chrono::milliseconds(0)); }

void NodeFeatureSync::publish(std::map<std::string, std::string> labels) {
  std::lock_guard lock(mu_);
  // Always a new wish, even for the same labels: the thread reads the object again and restores it
  // if someone else changed or deleted it (as GFD does every interval).
  if (stopping_) return;
  wanted_ = std::move(labels);
  ever_published_ = true;
  ++wanted_generation_;
  cv_.notify_all();
}

void NodeFeatureSync::withdraw() {
  std::lock_guard lock(mu_);
  if (stopping_ || !ever_published_ || (!wanted_ && done_generation_ == wanted_generation_)) return;
  wanted_.reset();
  ++wanted_generation_;
  cv_.notify_all();
}

void NodeFeatureSync::stop(bool remove, std::chrono::milliseconds grace) {
  {
    std::unique_lock lock(mu_);
    if (!thread_.joinable()) return;
    // Written, or a first write in flight that may be creating it right now (one that retries
    // after failures is most likely failing again: not worth holding the exit for).
    if (remove && (written_ || (writing_ && failures_ == 0)) && !stopping_) {
      wanted_.reset();
      const uint64_t generation = ++wanted_generation_;
      cv_.notify_all();
      if (!done_cv_.wait_for(lock, grace, [&] { return done_generation_ >= generation; }))
        spdlog::warn("labels: could not delete {} within {} ({}); the garbage collector removes it with its owner",
                     place_.describe(), seconds(grace), last_problem_.empty() ? "no answer yet" : last_problem_);
    }
    stopping_ = true;
    cv_.notify_all();
  }
  interrupter_.stop();  // ends a request in flight and the retry wait at once
  thread_.join();
}

std::string NodeFeatureSync::attempt(const std::optional<std::map<std::string, std::string>>& wanted) {
  // Thread entry: nothing may escape (an exception would std::terminate the daemon).
  try {
    if (!wanted) {
      auto removed = client_.remove();
      if (!removed) return "cannot delete " + place_.describe() + ": " + removed.error().message;
      spdlog::info("labels: {} {}", *removed ? "deleted" : "no need to delete (already gone)", place_.describe());
      return "";
    }
    auto written = client_.write(*wanted);
    if (!written) return "cannot write " + place_.describe() + ": " + written.error().message;
    switch (written->outcome) {
      case NodeFeatureClient::Outcome::Created:
        spdlog::info("labels: created {} with {} labels", place_.describe(), wanted->size());
        break;
      case NodeFeatureClient::Outcome::Updated:
        spdlog::info("labels: updated {} ({} labels); changed: {}", place_.describe(), wanted->size(),
                     changed_keys(written->before, *wanted));
        break;
      case NodeFeatureClient::Outcome::Unchanged:
        spdlog::debug("labels: {} already holds these {} labels", place_.describe(), wanted->size());
        break;
    }
    return "";
  } catch (const std::exception& e) {
    return std::string("unexpected failure writing ") + place_.describe() + ": " + e.what();
  } catch (...) {
    return "unexpected failure writing " + place_.describe();
  }
}

std::chrono::milliseconds NodeFeatureSync::backoff() const {
  const int doublings = std::min(failures_ - 1, 16);
  return std::min(timing_.max_backoff, std::chrono::milliseconds(timing_.first_backoff.count() << doublings));
}

void NodeFeatureSync::run() {
  std::unique_lock lock(mu_);
  while (true) {
    cv_.wait(lock, [&] { return stopping_ || wanted_generation_ != done_generation_; });
    if (stopping_) return;
    const uint64_t generation = wanted_generation_;
    const auto wanted = wanted_;
    writing_ = wanted.has_value();
    lock.unlock();
    std::string problem = attempt(wanted);
    lock.lock();
    writing_ = false;
    if (problem.empty()) {
      if (failures_ > 0)
        spdlog::info("labels: {} is as wanted again, after {} failed attempt{}", place_.describe(), failures_,
                     failures_ == 1 ? "" : "s");
      failures_ = 0;
      last_problem_.clear();
      written_ = wanted.has_value();
      done_generation_ = std::max(done_generation_, generation);
      done_cv_.notify_all();
      continue;
    }
    if (stopping_ || interrupter_.stopped()) return;
    ++failures_;
    const auto delay = backoff();
    if (problem != last_problem_)
      spdlog::error("labels: {}; kgpu keeps running without it (the Node keeps the labels NFD last gave it) and "
                    "tries again in {}, then with a growing delay up to {}",
                    problem, seconds(delay), seconds(timing_.max_backoff));
    else
      spdlog::debug("labels: {} (attempt {}); again in {}", problem, failures_, seconds(delay));
    last_problem_ = std::move(problem);
    // Wait before trying again, unless something new is wanted or the daemon stops.
    cv_.wait_for(lock, delay, [&] { return stopping_ || wanted_generation_ != generation; });
  }
}

}  // namespace kgpu::kube
