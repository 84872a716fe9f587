#include "alloc/request.h"

#include <set>
#include <string_view>
#include <unordered_map>

namespace kgpu::alloc {

Result<Request> validate_request(const Resource& resource, const std::vector<std::string>& available,
                                 const std::vector<std::string>& must_include, int size) {
  if (size < 1) return Error::invalid("allocation size must be at least 1, got " + std::to_string(size));
  std::unordered_map<std::string_view, const AdvertisedDevice*> by_id;
  by_id.reserve(resource.devices.size());
  for (const auto& d : resource.devices) by_id.emplace(d.id, &d);

  Request req;
  req.size = static_cast<size_t>(size);
  std::unordered_map<std::string_view, size_t> position;  // id -> index in req.available
  std::set<size_t> gpus_seen;
  for (const auto& id : available) {
    auto it = by_id.find(id);
    if (it == by_id.end())
      return Error::invalid("device '" + id + "' is not advertised by resource " + resource.name);
    if (position.contains(id)) continue;  // tolerate a repeated ID: it names the same device
    position.emplace(id, req.available.size());
    req.available.push_back({it->second, false});
    const auto* d = it->second;
    if (d->mig || d->replica >= 0 || !gpus_seen.insert(d->gpu).second) req.whole_gpus = false;
  }
  for (const auto& id : must_include) {
    auto it = position.find(id);
    if (it == position.end())
      return Error::invalid("must-include device '" + id + "' is not among the available devices");
    if (req.available[it->second].must) continue;
    req.available[it->second].must = true;
    req.must.push_back(req.available[it->second].device);
  }
  if (req.must.size() > req.size)
    return Error::invalid(std::to_string(req.must.size()) + " must-include devices exceed the allocation size " +
                          std::to_string(size));
  if (req.available.size() < req.size)
    return Error::invalid("allocation size " + std::to_string(size) + " exceeds the " +
                          std::to_string(req.available.size()) + " available devices");
  return req;
}

}  // namespace kgpu::alloc
