#include "cli/labels_writer.h"

#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include <spdlog/spdlog.h>

#include "cli/stop_signal.h"
#include "core/thread_name.h"
#include "labels/context.h"
#include "labels/feature_file.h"

namespace kgpu::cli {

LabelsWriter::~LabelsWriter() { stop_watch(); }

void LabelsWriter::on_plan(const Config& config, const Inventory& inventory, const ResourcePlan& plan) {
  keep_on_exit_ = config.keep_labels_on_exit;
  if (!config.labels_enabled) {
    stop_watch();  // a reload switched labels off: stop keeping the file
    if (node_feature_ && node_feature_labels_) node_feature_->withdraw();
    node_feature_labels_.reset();
    return;
  }
  // The context's files (machine type, PCI classes) change only with the GPUs or the settings, not
  // with health: read them again only then, not on every XID.
  auto stamp = config.gfd_no_timestamp ? std::nullopt : start_time_;
  std::string key = config.gfd_machine_type_file + "|" + config.sysfs_root + "|" + (stamp ? "t" : "");
  for (const auto& g : inventory.gpus) key += "|" + g.pci_bus_id;
  if (!context_ || key != context_key_) {
    context_ = read_label_context(config, inventory, stamp);
    context_key_ = std::move(key);
  }
  auto labels = node_labels(config, inventory, plan, *context_);
  if (to_node_feature(config, labels)) return;
  {
    std::lock_guard lock(mu_);
    const bool same_file = path_ == config.gfd_output_file;
    path_ = config.gfd_output_file;
    wanted_ = std::move(labels);
    if (!same_file || !written_ || *written_ != *wanted_) write_locked(false);
  }
  watch_folder_of(config.gfd_output_file);
}

bool LabelsWriter::to_node_feature(const Config& config, const Labels& labels) {
  if (!config.use_node_feature_api) {
    if (node_feature_ && node_feature_labels_) {
      spdlog::info("labels: flags.useNodeFeatureAPI is off now: deleting {}; the labels go to {}",
                   node_feature_->describe(), config.gfd_output_file);
      node_feature_->withdraw();
    }
    node_feature_labels_.reset();
    return false;
  }
  if (!node_feature_) {
    auto started = kube::NodeFeatureSync::start(env_);
    if (!started) {
      if (started.error().message != node_feature_problem_)
        spdlog::error("labels: {}; writing the feature file {} instead", started.error().message,
                      config.gfd_output_file);
      node_feature_problem_ = started.error().message;
      return false;
    }
    node_feature_ = std::move(*started);
    spdlog::info("labels: writing {} (node-feature-discovery's NodeFeature API, flags.useNodeFeatureAPI) on every "
                 "change", node_feature_->describe());
  }
  stop_watch();  // the file is not kept while the NodeFeature holds the labels
  remove_file_for_node_feature();
  if (node_feature_labels_ != labels) {
    node_feature_->publish(labels);
    node_feature_labels_ = labels;
  }
  return true;
}

void LabelsWriter::remove_file_for_node_feature() {
  std::lock_guard lock(mu_);
  if (!ever_written_ || path_.empty()) return;
  if (auto st = remove_feature_file(path_); !st)
    spdlog::error("labels: {}", st.error().message);
  else
    spdlog::info("labels: removed {}: the labels go to the NodeFeature object now", path_);
  ever_written_ = false;
  written_.reset();
}

void LabelsWriter::write_locked(bool from_watch) {
  if (!wanted_ || path_.empty()) return;
  auto wrote = write_feature_file(path_, *wanted_);
  if (!wrote) {
    spdlog::error("labels: {}{}", wrote.error().message,
                  from_watch ? "" : "; written as soon as the folder allows (it is watched)");
    return;
  }
  written_ = wanted_;
  ever_written_ = true;
  if (*wrote)
    spdlog::info("labels: {} {} labels to {}", from_watch ? "rewrote" : "wrote", wanted_->size(), path_);
}

// Loop thread. One watch on the file's folder; moved when the output file setting changes.
void LabelsWriter::watch_folder_of(const std::string& path) {
  if (path == watched_path_ && thread_.joinable()) return;
  stop_watch();
  watched_path_ = path;
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  const std::string dir = (parent.empty() ? std::filesystem::path(".") : parent).string();
  // The file deleted or replaced by someone else, or written by us (then the content compares equal).
  auto watch = DirWatch::open({dir}, IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_CLOSE_WRITE);
  stop_fd_.reset(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!watch || !stop_fd_.valid()) {
    spdlog::warn("labels: cannot watch {} ({}); the file is rewritten on plan changes only", dir,
                 watch ? std::strerror(errno) : watch.error().message);
    stop_fd_.reset();
    return;
  }
  watch_.emplace(std::move(*watch));
  {
    // A folder that appeared after a failed write but before the watch was armed sends no event
    // the watch could see: now that later changes are seen, write once more if it is there.
    std::error_code ec;
    std::lock_guard lock(mu_);
    if (wanted_ && (!written_ || *written_ != *wanted_) && std::filesystem::is_directory(dir, ec)) write_locked(true);
  }
  thread_ = std::thread([this] {
    name_this_thread("kgpu-labels");  // rewrites the labels file if someone removes it
    run();
  });
}

void LabelsWriter::stop_watch() {
  if (thread_.joinable()) {
    signal_stop(stop_fd_.get());
    thread_.join();
  }
  watch_.reset();
  stop_fd_.reset();
  watched_path_.clear();
}

void LabelsWriter::run() {
  while (watch_->wait_for_change(stop_fd_.get())) {
    std::lock_guard lock(mu_);
    write_locked(true);
  }
}

void LabelsWriter::on_exit() {
  if (node_feature_) {
    if (keep_on_exit_ && node_feature_labels_)
      spdlog::info("labels: leaving {} in place (keepLabelsOnExit)", node_feature_->describe());
    node_feature_->stop(!keep_on_exit_, std::chrono::seconds(5));
  }
  stop_watch();  // before removing: the watcher would write the file again
  std::lock_guard lock(mu_);
  if (!ever_written_) return;
  if (keep_on_exit_) {
    spdlog::info("labels: leaving {} in place (keepLabelsOnExit)", path_);
    return;
  }
  if (auto st = remove_feature_file(path_); !st)
    spdlog::error("labels: {}", st.error().message);
  else
    spdlog::info("labels: removed {}", path_);
}

}  // namespace kgpu::cli
