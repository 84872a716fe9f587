#pragma once
// The GET-then-watch loop a Kubernetes client runs for the objects it follows (the Node for its
// labels, the node's ResourceSlices), on its owner's thread: a GET for the resourceVersion to start
// from, then watch streams from there (the server ends each after timeoutSeconds and the loop
// reconnects), every event handed to the owner. After a 410 Gone, an ERROR event or a line that
// does not parse it starts again from a fresh GET, so no change is missed. Failures (refused, HTTP
// errors, garbage, a watch that ends at once) are retried with backoff and logged once per change
// of problem; a watch that ends without an event sooner than min_quiet_watch counts as one, so a
// server that closes every watch at once cannot make the thread spin. Every request is bounded
// (deadline, size) and ended at once by the owner's Interrupter. No exception leaves run().
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "core/result.h"
#include "kube/api_request.h"

namespace kgpu::kube {

struct WatchTiming {
  std::chrono::milliseconds get_deadline{10000};
  std::chrono::seconds watch_seconds{300};  // the server ends each watch after this; we reconnect
  std::chrono::milliseconds first_backoff{1000};
  std::chrono::milliseconds max_backoff{30000};
  std::chrono::milliseconds min_quiet_watch{10000};
};

// What the loop needs to know of one watch event; the owner parses the line (its own types).
struct WatchEventHead {
  std::string type;              // ADDED, MODIFIED, DELETED, BOOKMARK or ERROR
  std::string resource_version;  // the object's (empty for ERROR)
  int error_code = 0;            // ERROR: the Status code (410: the resource version is too old)
};

struct WatchTarget {
  std::string what;        // for the log: "Node n1", "ResourceSlices of node n1"
  std::string log_prefix;  // "node labels", "DRA slices"
  std::string get_path;    // a GET whose answer carries the resourceVersion to watch from
  // The collection and its selector, without the watch parameters:
  // "/api/v1/nodes?fieldSelector=metadata.name%3Dn1".
  std::string watch_path;
  std::string rbac;        // "get/watch on nodes", for the hint on a 403
  size_t max_bytes = 4 * 1024 * 1024;  // one GET answer or watch line
  // allowWatchBookmarks: the API server then sends a BOOKMARK about once a minute, which wakes the
  // watching thread although nothing changed. A watch that must cost nothing while idle asks for
  // none; it resumes from its last event's resourceVersion, or from a fresh GET after a 410.
  bool bookmarks = true;
};

struct WatchHandlers {
  // A 200 answer of the GET: the resourceVersion to watch from (the owner may report the object).
  std::function<Result<std::string>(const std::string& body)> on_get;
  // One watch line; the owner acts on the event. An error starts again from a GET.
  std::function<Result<WatchEventHead>(std::string_view line)> on_event;
};

// "<request>: HTTP <status>" with a hint for 401 and 403 (the RBAC `rbac` names) and the start of
// the answer's body, on one line.
std::string api_status_problem(const std::string& request, const ApiAnswer& answer, const std::string& rbac);

class WatchLoop {
 public:
  WatchLoop(const ApiClient& api, Interrupter& interrupter, WatchTarget target, WatchHandlers handlers,
            WatchTiming timing);
  // Until the Interrupter stops. `from`: a resourceVersion already read (empty: GET first).
  void run(std::string from = "");

 private:
  struct WatchResult {
    bool progressed = false;             // delivered an event, or lasted min_quiet_watch
    std::optional<std::string> problem;  // why it ended badly
  };
  std::optional<std::string> get(std::string& resource_version);
  WatchResult watch_once(std::string& resource_version);
  std::string watch_url(const std::string& resource_version) const;

  const ApiClient& api_;
  Interrupter& interrupter_;
  WatchTarget target_;
  WatchHandlers handlers_;
  WatchTiming timing_;
};

}  // namespace kgpu::kube
