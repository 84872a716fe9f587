#include "config/resource_names.h"

namespace kgpu {
namespace {

bool alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

// DNS-1123 subdomain: dot-separated labels of [a-z0-9-], each starting and ending alphanumeric.
bool dns_subdomain(const std::string& s) {
  if (s.empty() || s.size() > 253) return false;
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find('.', start);
    if (end == std::string::npos) end = s.size();
    std::string label = s.substr(start, end - start);
    if (label.empty() || label.size() > 63 || !alnum(label.front()) || !alnum(label.back())) return false;
    for (char c : label)
      if (!alnum(c) && c != '-') return false;
    start = end + 1;
  }
  return true;
}

bool resource_part(const std::string& s) {
  if (s.empty() || !alnum(s.front()) || !alnum(s.back())) return false;
  for (char c : s)
    if (!alnum(c) && c != '-' && c != '.') return false;
  return true;
}

}  // namespace

Result<std::string> normalise_resource_name(const std::string& name) {
  if (name.empty()) return Error::invalid("empty resource name");
  std::string full = name.find('/') == std::string::npos ? kNvidiaResourcePrefix + name : name;
  size_t slash = full.find('/');
  std::string domain = full.substr(0, slash);
  std::string rest = full.substr(slash + 1);
  if (full.size() > kMaxResourceNameLength)
    return Error::invalid("resource name \"" + full + "\" is " + std::to_string(full.size()) +
                          " characters long; at most " + std::to_string(kMaxResourceNameLength) +
                          " are allowed");
  if (!dns_subdomain(domain))
    return Error::invalid("resource name \"" + full + "\": \"" + domain +
                          "\" is not a valid domain (lowercase letters, digits, '-' and '.')");
  if (domain == "kubernetes.io" || (domain.size() > 14 && domain.ends_with(".kubernetes.io")))
    return Error::invalid("resource name \"" + full + "\": the kubernetes.io domain is reserved");
  if (!resource_part(rest))
    return Error::invalid("resource name \"" + full + "\": \"" + rest +
                          "\" must consist of lowercase letters, digits, '-' and '.', and start and "
                          "end with a letter or digit");
  return full;
}

}  // namespace kgpu
