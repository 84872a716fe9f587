#pragma once
// Small string helpers many modules need alike.
#include <string>
#include <string_view>
#include <vector>

namespace kgpu {

// The parts with `separator` between them: join({"a", "b"}, ", ") == "a, b"; nothing for none.
std::string join(const std::vector<std::string>& parts, std::string_view separator);

}  // namespace kgpu
