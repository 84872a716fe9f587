#include "telemetry/collector.h"

#include <spdlog/spdlog.h>

#include "telemetry/exposition.h"
#include "telemetry/targets.h"

namespace kgpu::telemetry {

Collector::Collector(std::unique_ptr<ReadingSource> source, CollectorOptions options)
    : source_(std::move(source)), options_(std::move(options)) {
  node_.hostname = options_.hostname;
}

void Collector::set_inventory(const Inventory& inventory) {
  auto targets = targets_from_inventory(inventory);
  std::lock_guard lock(pending_mu_);
  pending_targets_ = std::move(targets);
  pending_driver_version_ = inventory.driver_version;
}

std::shared_ptr<const std::string> Collector::scrape_once() {
  {
    std::lock_guard lock(pending_mu_);
    if (pending_targets_) {
      targets_ = *pending_targets_;
      source_->set_targets(std::move(*pending_targets_));
      pending_targets_.reset();
      node_.driver_version = pending_driver_version_;
    }
  }
  last_calls_.store(source_->read(readings_), std::memory_order_relaxed);
  reads_.fetch_add(1, std::memory_order_relaxed);

  if (options_.xids) {
    for (size_t i = 0; i < targets_.size() && i < readings_.size(); ++i) {
      if (targets_[i].gpu_instance_id) continue;  // XIDs are reported per GPU
      if (auto xid = options_.xids(targets_[i].uuid)) readings_[i][Field::XidErrors] = static_cast<double>(*xid);
    }
  }

  std::vector<std::vector<Owner>> owners;
  if (options_.pods) {
    auto pods = options_.pods();
    if (pods) {
      if (pods_failing_) spdlog::info("telemetry: PodResources answers again; pod labels are back");
      pods_failing_ = false;
      owners = attribute(targets_, *pods);
    } else if (!pods_failing_) {
      spdlog::warn("telemetry: cannot list pod resources, GPU series go without pod labels: {}",
                   pods.error().message);
      pods_failing_ = true;
    }
  }

  auto text = std::make_shared<std::string>();
  text->reserve(last_size_ + last_size_ / 8);
  render_dcgm(node_, targets_, readings_, owners, *text);
  last_size_ = text->size();
  return text;
}

void Collector::append(std::string& out) {
  try {
    auto text = flight_.run([this] { return scrape_once(); });
    if (text) out += *text;
  } catch (const std::exception& e) {
    spdlog::error("telemetry: scrape failed: {}", e.what());
  } catch (...) {
    spdlog::error("telemetry: scrape failed");
  }
}

}  // namespace kgpu::telemetry
