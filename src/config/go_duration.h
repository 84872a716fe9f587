#pragma once
// Go's time.Duration text, as NVIDIA's tools take it (GFD's --sleep-interval): "60s", "1m30s",
// "500ms", "1.5h", a bare number of nanoseconds, or "infinite".
#include <chrono>
#include <optional>
#include <string>

namespace kgpu {

// nullopt when the text is not a duration; "infinite" is nanoseconds::max(). Negative durations
// are invalid here (a sleep interval cannot be negative).
std::optional<std::chrono::nanoseconds> parse_go_duration(const std::string& text);

}  // namespace kgpu
