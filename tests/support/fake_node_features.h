#pragma once
// The nfd.k8s-sigs.io/v1alpha1 NodeFeatures of the fake API server (fake_api_server.h registers
// these routes on its HTTP server), and the Pods GFD's owner lookup reads. NodeFeatures: get,
// create (409 when the name is taken), update (resourceVersion required and checked: 409 on a
// stale one) and delete, per namespace. Every body received is checked against NFD's CRD schema
// (node_feature_schema.h): a malformed one gets 422 and is counted, so tests fail on it. Switches
// for what goes wrong in clusters: the CRD not installed (every path 404, as the API server
// answers for an unknown resource), RBAC missing (403), the next writes failing with a status.
// Pods: put_pod() stores one for GET /api/v1/namespaces/<ns>/pods/<name>; pods_forbidden() 403s.
#include <httplib.h>

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/node_feature_schema.h"

namespace kgpu::test {

class FakeNodeFeatures {
 public:
  struct Counts {
    int gets = 0, creates = 0, updates = 0, deletes = 0;
    int rejected = 0;   // bodies that failed the schema (422)
    int conflicts = 0;  // 409s answered
    int refused = 0;    // 403 / 404-for-no-CRD / injected failures answered
  };

  explicit FakeNodeFeatures(httplib::Server& server) {
    const std::string item = R"(/apis/nfd\.k8s-sigs\.io/v1alpha1/namespaces/([^/]+)/nodefeatures/([^/]+))";
    const std::string collection = R"(/apis/nfd\.k8s-sigs\.io/v1alpha1/namespaces/([^/]+)/nodefeatures)";
    server.Get(item, [this](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard lock(mu_);
      ++counts_.gets;
      cv_.notify_all();
      if (refuse(res, false)) return;
      auto it = objects_.find(key(req));
      if (it == objects_.end()) return status(res, 404, "NotFound", "nodefeatures \"" + std::string(req.matches[2]) + "\" not found");
      res.set_content(it->second.dump(), "application/json");
    });
    server.Post(collection, [this](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard lock(mu_);
      ++counts_.creates;
      cv_.notify_all();
      if (refuse(res, true)) return;
      auto body = checked(req, res);
      if (body.is_null()) return;
      if (body["metadata"].contains("resourceVersion")) return status(res, 400, "BadRequest", "resourceVersion should not be set on objects to be created");
      const std::string k = std::string(req.matches[1]) + "/" + body["metadata"]["name"].get<std::string>();
      if (objects_.contains(k)) {
        ++counts_.conflicts;
        return status(res, 409, "AlreadyExists", "nodefeatures already exists");
      }
      body["metadata"]["namespace"] = std::string(req.matches[1]);
      body["metadata"]["uid"] = "nf-" + std::to_string(++uids_);
      store(k, std::move(body));
      res.status = 201;
      res.set_content(objects_[k].dump(), "application/json");
    });
    server.Put(item, [this](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard lock(mu_);
      ++counts_.updates;
      cv_.notify_all();
      if (refuse(res, true)) return;
      auto body = checked(req, res);
      if (body.is_null()) return;
      auto it = objects_.find(key(req));
      if (it == objects_.end()) return status(res, 404, "NotFound", "not found");
      if (body["metadata"].value("resourceVersion", "") != it->second["metadata"]["resourceVersion"]) {
        ++counts_.conflicts;
        return status(res, 409, "Conflict", "the object has been modified; please apply your changes to the latest version");
      }
      body["metadata"]["uid"] = it->second["metadata"]["uid"];
      store(key(req), std::move(body));
      res.set_content(objects_[key(req)].dump(), "application/json");
    });
    server.Delete(item, [this](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard lock(mu_);
      ++counts_.deletes;
      cv_.notify_all();
      if (refuse(res, true)) return;
      if (objects_.erase(key(req)) == 0) return status(res, 404, "NotFound", "not found");
      res.set_content(R"({"kind":"Status","status":"Success"})", "application/json");
    });
    server.Get(R"(/api/v1/namespaces/([^/]+)/pods/([^/]+))", [this](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard lock(mu_);
      ++pod_gets_;
      if (pods_forbidden_) return status(res, 403, "Forbidden", "pods is forbidden");
      auto it = pods_.find(key(req));
      if (it == pods_.end()) return status(res, 404, "NotFound", "pods not found");
      res.set_content(it->second.dump(), "application/json");
    });
  }

  // ---- switches ----
  // false: the CRD is not installed (every NodeFeature request answers 404 with no object named).
  void set_served(bool served) {
    std::lock_guard lock(mu_);
    served_ = served;
  }
  // true: every NodeFeature request answers 403 (the service account lacks the RBAC).
  void set_forbidden(bool forbidden) {
    std::lock_guard lock(mu_);
    forbidden_ = forbidden;
  }
  // The next `times` writes (POST, PUT, DELETE) answer `status`.
  void fail_writes(int status, int times = 1) {
    std::lock_guard lock(mu_);
    write_failure_ = status;
    write_failures_ = times;
  }
  // A Pod for the owner lookup: metadata.name/namespace/uid, owned by a DaemonSet when `daemonset` is set.
  void put_pod(const std::string& ns, const std::string& name, const std::string& uid, const std::string& daemonset = "",
               const std::string& daemonset_uid = "") {
    nlohmann::json pod{{"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", {{"name", name}, {"namespace", ns}, {"uid", uid}}}};
    if (!daemonset.empty())
      pod["metadata"]["ownerReferences"] = {{{"apiVersion", "apps/v1"}, {"kind", "DaemonSet"}, {"name", daemonset},
                                             {"uid", daemonset_uid}, {"controller", true}, {"blockOwnerDeletion", true}}};
    std::lock_guard lock(mu_);
    pods_[ns + "/" + name] = std::move(pod);
  }
  void pods_forbidden(bool forbidden) {
    std::lock_guard lock(mu_);
    pods_forbidden_ = forbidden;
  }
  // Someone else wrote the object: a new resourceVersion (a writer holding the old one conflicts).
  void touch(const std::string& ns, const std::string& name) {
    std::lock_guard lock(mu_);
    auto it = objects_.find(ns + "/" + name);
    if (it == objects_.end()) return;
    it->second["metadata"]["annotations"]["touched-by"] = "someone-else";
    it->second["metadata"]["resourceVersion"] = std::to_string(++rv_);
    cv_.notify_all();
  }
  // Stores an object as another writer would (no schema check).
  void put(const std::string& ns, nlohmann::json object) {
    std::lock_guard lock(mu_);
    const std::string k = ns + "/" + object["metadata"]["name"].get<std::string>();
    store(k, std::move(object));
  }

  // ---- what happened ----
  Counts counts() const {
    std::lock_guard lock(mu_);
    return counts_;
  }
  std::vector<std::string> rejections() const {
    std::lock_guard lock(mu_);
    return rejections_;
  }
  int pod_gets() const {
    std::lock_guard lock(mu_);
    return pod_gets_;
  }
  // Every stored object by "namespace/name".
  std::map<std::string, nlohmann::json> objects() const {
    std::lock_guard lock(mu_);
    return objects_;
  }
  // Blocks until `pred(objects)` holds, re-checked on every request; false after the timeout.
  // `pred` runs under the lock: it must not call this object.
  template <typename Pred>
  bool wait(Pred pred, std::chrono::milliseconds timeout) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return pred(objects_); });
  }
  // Blocks until `pred(counts)` holds; false after the timeout.
  template <typename Pred>
  bool wait_counts(Pred pred, std::chrono::milliseconds timeout) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return pred(counts_); });
  }

 private:
  static std::string key(const httplib::Request& req) { return std::string(req.matches[1]) + "/" + std::string(req.matches[2]); }

  static void status(httplib::Response& res, int code, const std::string& reason, const std::string& message) {
    res.status = code;
    res.set_content(nlohmann::json{{"kind", "Status"}, {"apiVersion", "v1"}, {"status", "Failure"}, {"message", message},
                                   {"reason", reason}, {"code", code}}
                        .dump(),
                    "application/json");
  }

  // mu_ held. Answers for a missing CRD, missing RBAC or an injected write failure; true if it did.
  bool refuse(httplib::Response& res, bool write) {
    if (!served_) {
      ++counts_.refused;
      status(res, 404, "NotFound", "the server could not find the requested resource");
      return true;
    }
    if (forbidden_) {
      ++counts_.refused;
      status(res, 403, "Forbidden",
             "nodefeatures.nfd.k8s-sigs.io is forbidden: User \"system:serviceaccount:kube-system:kgpu\" cannot "
             "access nodefeatures");
      return true;
    }
    if (write && write_failures_ > 0) {
      --write_failures_;
      ++counts_.refused;
      if (write_failure_ == 409) ++counts_.conflicts;
      status(res, write_failure_, "Injected", "injected failure");
      return true;
    }
    return false;
  }

  // mu_ held. The body as JSON when it passes the schema; null after answering 400 / 422.
  nlohmann::json checked(const httplib::Request& req, httplib::Response& res) {
    auto body = nlohmann::json::parse(req.body, nullptr, false);
    if (body.is_discarded()) {
      status(res, 400, "BadRequest", "not JSON");
      return nullptr;
    }
    if (req.get_header_value("Content-Type") != "application/json") {
      status(res, 415, "UnsupportedMediaType", "application/json only");
      return nullptr;
    }
    std::string problem = node_feature_schema_problem(body);
    if (problem.empty() && body["metadata"].value("namespace", std::string(req.matches[1])) != std::string(req.matches[1]))
      problem = "metadata.namespace does not match the request's namespace";
    if (problem.empty() && req.matches.size() > 2 && body["metadata"]["name"] != std::string(req.matches[2]))
      problem = "metadata.name does not match the request's name";
    if (!problem.empty()) {
      ++counts_.rejected;
      rejections_.push_back(problem);
      status(res, 422, "Invalid", problem);
      return nullptr;
    }
    return body;
  }

  void store(const std::string& k, nlohmann::json object) {
    object["metadata"]["resourceVersion"] = std::to_string(++rv_);
    objects_[k] = std::move(object);
    cv_.notify_all();
  }

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, nlohmann::json> objects_;  // by namespace/name
  std::map<std::string, nlohmann::json> pods_;     // by namespace/name
  Counts counts_;
  std::vector<std::string> rejections_;
  bool served_ = true, forbidden_ = false, pods_forbidden_ = false;
  int write_failure_ = 0, write_failures_ = 0;
  int pod_gets_ = 0;
  size_t rv_ = 5000, uids_ = 0;
};

}  // namespace kgpu::test
