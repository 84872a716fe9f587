#include "core/gpu_architecture.h"

namespace kgpu {

std::string architecture_from_compute_capability(int cc_major, int cc_minor) {
  switch (cc_major) {
    case 1: return "tesla";
    case 2: return "fermi";
    case 3: return "kepler";
    case 5: return "maxwell";
    case 6: return "pascal";
    case 7: return cc_minor < 5 ? "volta" : "turing";
    case 8: return cc_minor < 9 ? "ampere" : "ada-lovelace";
    case 9: return "hopper";
    case 10:
    case 12: return "blackwell";
    case 13: return "rubin";
    default: return {};
  }
}

}  // namespace kgpu
