#pragma once
// Keeps the node's NodeFeature object (flags.useNodeFeatureAPI) as the labellers want it, on a
// thread of its own, so that a slow or failing API server never holds the daemon's loop: publish()
// and withdraw() only record what is wanted. A failure is logged (once per distinct problem, with
// what happens next) and retried with a growing delay, and the daemon keeps serving meanwhile; the
// first success after failures is logged too. Used by `kgpu plugin --labels` and `kgpu labels --daemon`.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "core/result.h"
#include "kube/api_request.h"
#include "kube/node_feature_client.h"

namespace kgpu::kube {

struct NodeFeatureTiming {
  std::chrono::milliseconds first_backoff{1000};
  std::chrono::milliseconds max_backoff{60000};
  std::chrono::milliseconds request_deadline{10000};
};

class NodeFeatureSync {
 public:
  // The API server and the object's place from the environment (kube/api_server.h,
  // node_feature_settings); Error naming what is missing. Starts the thread.
  static Result<std::unique_ptr<NodeFeatureSync>> start(const std::map<std::string, std::string>& env,
                                                        NodeFeatureTiming timing = {});
  NodeFeatureSync(ApiServer server, NodeFeatureSettings settings, NodeFeatureTiming timing);
  ~NodeFeatureSync();
  NodeFeatureSync(const NodeFeatureSync&) = delete;
  NodeFeatureSync& operator=(const NodeFeatureSync&) = delete;

  // The object should exist and hold `labels`.
  void publish(std::map<std::string, std::string> labels);
  // The object should not exist (the feature was switched off).
  void withdraw();
  // Ends the thread. With `remove`, first deletes the object if this process wrote it (and has not
  // deleted it since), waiting up to `grace` (an API server that does not answer in time leaves it
  // to the garbage collector). An object never written (RBAC, no CRD) costs no wait at exit.
  void stop(bool remove, std::chrono::milliseconds grace);

  std::string describe() const { return place_.describe(); }

 private:
  void run();
  // One attempt at what `wanted` says (nullopt: delete); the problem, or "" on success (logged).
  std::string attempt(const std::optional<std::map<std::string, std::string>>& wanted);
  std::chrono::milliseconds backoff() const;  // mu_ held: the wait after failures_ failures

  NodeFeaturePlace place_;
  NodeFeatureTiming timing_;
  Interrupter interrupter_;
  ApiClient api_;
  NodeFeatureClient client_;  // the thread's only
  std::mutex mu_;
  std::condition_variable cv_;       // new wish or stop (wakes the thread)
  std::condition_variable done_cv_;  // a wish fulfilled (wakes stop())
  std::optional<std::map<std::string, std::string>> wanted_;  // nullopt: absent
  uint64_t wanted_generation_ = 0;
  uint64_t done_generation_ = 0;
  bool ever_published_ = false;
  bool written_ = false;  // the object exists as this process last wrote it
  bool writing_ = false;  // a write is in flight (it may create the object)
  bool stopping_ = false;
  std::string last_problem_;  // the problem last logged; "" while all is well
  int failures_ = 0;          // attempts failed in a row
  std::thread thread_;
};

}  // namespace kgpu::kube
