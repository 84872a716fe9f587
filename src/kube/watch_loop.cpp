#include "kube/watch_loop.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <exception>

namespace kgpu::kube {

namespace {

// The start of an error answer, on one line, for the log.
std::string excerpt(const std::string& body) {
  std::string out = body.substr(0, 200);
  std::replace_if(out.begin(), out.end(), [](char c) { return c == '\n' || c == '\r'; }, ' ');
  return out.empty() ? out : ": " + out;
}

}  // namespace

WatchLoop::WatchLoop(const ApiClient& api, Interrupter& interrupter, WatchTarget target, WatchHandlers handlers,
                     WatchTiming timing)
    : api_(api),
      interrupter_(interrupter),
      target_(std::move(target)),
      handlers_(std::move(handlers)),
      timing_(timing) {}

std::string WatchLoop::watch_url(const std::string& resource_version) const {
  const char separator = target_.watch_path.find('?') == std::string::npos ? '?' : '&';
  std::string url = target_.watch_path + separator + "watch=1" +
                    (target_.bookmarks ? "&allowWatchBookmarks=true" : "") +
                    "&timeoutSeconds=" + std::to_string(timing_.watch_seconds.count());
  if (!resource_version.empty()) url += "&resourceVersion=" + resource_version;
  return url;
}

std::string api_status_problem(const std::string& request, const ApiAnswer& answer, const std::string& rbac) {
  std::string hint;
  if (answer.status == 401) hint = " (the service-account token was refused: expired or revoked?)";
  if (answer.status == 403) hint = " (RBAC: the service account needs " + rbac + ")";
  return request + ": HTTP " + std::to_string(answer.status) + hint + excerpt(answer.body);
}

std::optional<std::string> WatchLoop::get(std::string& resource_version) {
  auto answer = api_.get(target_.get_path, timing_.get_deadline, target_.max_bytes);
  if (!answer) return "GET " + target_.get_path + ": " + answer.error().message;
  if (answer->status != 200) return api_status_problem("GET " + target_.get_path, *answer, target_.rbac);
  auto from = handlers_.on_get(answer->body);
  if (!from) return "GET " + target_.get_path + ": " + from.error().message;
  resource_version = *from;
  return std::nullopt;
}

void WatchLoop::run(std::string rv) {
  std::chrono::milliseconds backoff = timing_.first_backoff;
  std::string logged_problem;  // the problem last logged; empty while watching normally
  while (!interrupter_.stopped()) {
    std::optional<std::string> problem;
    bool progressed = false;
    // Thread entry: nothing may escape (a throwing handler would std::terminate the daemon).
    try {
      if (rv.empty()) problem = get(rv);
      if (!problem) {
        auto watched = watch_once(rv);
        problem = std::move(watched.problem);
        progressed = watched.progressed;
        if (!problem && !progressed)
          problem = "the API server ended the watch of " + target_.what + " without sending anything";
      }
    } catch (const std::exception& e) {
      problem = std::string("unexpected failure: ") + e.what();
      rv.clear();
    } catch (...) {
      problem = "unexpected failure";
      rv.clear();
    }
    if (interrupter_.stopped()) return;
    if (!problem) {
      if (!logged_problem.empty()) spdlog::info("{}: watching {} again", target_.log_prefix, target_.what);
      logged_problem.clear();
      backoff = timing_.first_backoff;
      continue;
    }
    if (*problem != logged_problem) {
      spdlog::warn("{}: {}; retrying with backoff", target_.log_prefix, *problem);
      logged_problem = *problem;
    }
    if (progressed) backoff = timing_.first_backoff;
    if (!interrupter_.sleep_for(backoff)) return;
    backoff = std::min(backoff * 2, timing_.max_backoff);
  }
}

WatchLoop::WatchResult WatchLoop::watch_once(std::string& resource_version) {
  WatchResult result;
  const auto started = std::chrono::steady_clock::now();
  const std::string what = "watch of " + target_.what;
  // The deadline leaves the server time to end the watch itself first.
  const auto deadline = std::chrono::duration_cast<std::chrono::milliseconds>(timing_.watch_seconds) +
                        std::chrono::seconds(30);
  auto answer = api_.stream_lines(watch_url(resource_version), deadline, target_.max_bytes, [&](std::string_view line) {
    auto event = handlers_.on_event(line);
    if (!event) {
      // The event might have been the change we follow: start again from a GET rather than skip it.
      result.problem = what + ": " + event.error().message;
      resource_version.clear();
      return false;
    }
    if (event->type == "ERROR") {
      // 410 Gone: our resourceVersion is too old. Either way a fresh GET is the way back.
      resource_version.clear();
      if (event->error_code != 410)
        result.problem = what + ": ERROR event (code " + std::to_string(event->error_code) + ")";
      else
        result.progressed = result.progressed || std::chrono::steady_clock::now() - started >= timing_.min_quiet_watch;
      return false;
    }
    result.progressed = true;
    if (!event->resource_version.empty()) resource_version = event->resource_version;
    return true;
  });
  if (!answer) {
    if (!result.problem) result.problem = what + ": " + answer.error().message;
    return result;
  }
  if (answer->status != 200) {
    if (answer->status == 410) resource_version.clear();
    result.problem = api_status_problem(what, *answer, target_.rbac);
    return result;
  }
  if (std::chrono::steady_clock::now() - started >= timing_.min_quiet_watch) result.progressed = true;
  if (!result.progressed && !result.problem && resource_version.empty()) result.problem = what + ": 410 Gone at once";
  return result;
}

}  // namespace kgpu::kube
