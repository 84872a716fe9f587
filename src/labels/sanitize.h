#pragma once
// Making strings into valid Kubernetes label keys and values, deterministically.
#include <string>
#include <string_view>

namespace kgpu::labels {

// GFD's product sanitiser: drop every character outside [A-Za-z0-9-_. ], then turn runs of spaces
// into one '-'. "NVIDIA A100-SXM4-40GB" -> "NVIDIA-A100-SXM4-40GB".
std::string gfd_sanitise(std::string_view raw);

// A valid label value (or key name part): gfd_sanitise, trimmed to alphanumerics at both ends,
// and when longer than max_size (63 for values and names) cut to max_size - 9 plus '-' plus 8 hex
// digits of a hash of the untruncated text, so distinct long names stay distinct and the result is
// stable.
std::string k8s_label_value(std::string_view raw, size_t max_size = 63);

// Checks, for tests and for asserting our own output.
bool is_valid_label_value(std::string_view value);
bool is_valid_label_key(std::string_view key);  // optional DNS-subdomain prefix '/' name

}  // namespace kgpu::labels
