#include "kube/line_splitter.h"

namespace kgpu::kube {

Result<bool> LineSplitter::feed(std::string_view chunk, const std::function<bool(std::string_view)>& on_line) {
  while (!chunk.empty()) {
    size_t nl = chunk.find('\n');
    if (nl == std::string_view::npos) {
      // Only the new bytes are scanned; the pending part is known to hold no '\n'.
      if (pending_.size() + chunk.size() > max_line_)
        return Error::invalid("a watch line is longer than " + std::to_string(max_line_) + " bytes");
      pending_.append(chunk);
      return true;
    }
    if (pending_.size() + nl > max_line_)
      return Error::invalid("a watch line is longer than " + std::to_string(max_line_) + " bytes");
    std::string_view line;
    if (pending_.empty()) {
      line = chunk.substr(0, nl);  // the common case: no copy
    } else {
      pending_.append(chunk.substr(0, nl));
      line = pending_;
    }
    chunk.remove_prefix(nl + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    bool go_on = line.empty() || on_line(line);
    pending_.clear();
    if (!go_on) return false;
  }
  return true;
}

}  // namespace kgpu::kube
