#include "mig_profiles.h"

#include <array>
#include <utility>

namespace kgpu::fake_nvml {
namespace {

struct Row {
  const char* name;
  unsigned profile_index, id, compute_slices, memory_slices, instance_count;
  std::vector<unsigned> placements;
  unsigned sms, ce, dec, enc, jpeg, ofa;
  unsigned long long memory_mib;
};

GiProfile to_profile(Row r) {
  GiProfile p;
  p.name = r.name;
  p.profile_index = r.profile_index;
  p.id = r.id;
  p.compute_slices = r.compute_slices;
  p.memory_slices = r.memory_slices;
  p.instance_count = r.instance_count;
  p.placements = std::move(r.placements);
  p.sm_count = r.sms;
  p.copy_engines = r.ce;
  p.decoders = r.dec;
  p.encoders = r.enc;
  p.jpegs = r.jpeg;
  p.ofas = r.ofa;
  p.memory_mib = r.memory_mib;
  return p;
}

MigProfileTable make_table(const char* name, unsigned sms_per_slice, std::vector<Row> rows) {
  MigProfileTable t;
  t.name = name;
  t.sms_per_slice = sms_per_slice;
  for (auto& r : rows) t.profiles.push_back(to_profile(std::move(r)));
  return t;
}

// A100-SXM4-40GB: 108 SMs, 14 per slice; memory in 8 slices of ~4.75 GiB.
MigProfileTable a100_40gb() {
  return make_table("a100-40gb", 14,
                    {{"1g.5gb", NVML_GPU_INSTANCE_PROFILE_1_SLICE, 19, 1, 1, 7, {0, 1, 2, 3, 4, 5, 6}, 14, 1, 0, 0, 0, 0, 4864},
                     {"2g.10gb", NVML_GPU_INSTANCE_PROFILE_2_SLICE, 14, 2, 2, 3, {0, 2, 4}, 28, 2, 1, 0, 0, 0, 9984},
                     {"3g.20gb", NVML_GPU_INSTANCE_PROFILE_3_SLICE, 9, 3, 4, 2, {0, 4}, 42, 3, 2, 0, 0, 0, 20096},
                     {"4g.20gb", NVML_GPU_INSTANCE_PROFILE_4_SLICE, 5, 4, 4, 1, {0}, 56, 4, 2, 0, 0, 0, 20096},
                     {"7g.40gb", NVML_GPU_INSTANCE_PROFILE_7_SLICE, 0, 7, 8, 1, {0}, 98, 7, 5, 0, 1, 1, 40448},
                     {"1g.5gb+me", NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1, 20, 1, 1, 1, {0, 1, 2, 3, 4, 5, 6}, 14, 1, 1, 0, 1, 1, 4864},
                     // NVIDIA's A100 table lists 1g.10gb (R525+): one compute slice, two memory slices, 4 instances.
                     {"1g.10gb", NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2, 15, 1, 2, 4, {0, 2, 4, 6}, 14, 1, 1, 0, 0, 0, 9984}});
}

// A100-SXM4-80GB: same slicing as the 40 GB part, twice the memory, plus 1g.20gb.
MigProfileTable a100_80gb() {
  return make_table("a100-80gb", 14,
                    {{"1g.10gb", NVML_GPU_INSTANCE_PROFILE_1_SLICE, 19, 1, 1, 7, {0, 1, 2, 3, 4, 5, 6}, 14, 1, 0, 0, 0, 0, 9728},
                     {"2g.20gb", NVML_GPU_INSTANCE_PROFILE_2_SLICE, 14, 2, 2, 3, {0, 2, 4}, 28, 2, 1, 0, 0, 0, 19968},
                     {"3g.40gb", NVML_GPU_INSTANCE_PROFILE_3_SLICE, 9, 3, 4, 2, {0, 4}, 42, 3, 2, 0, 0, 0, 40192},
                     {"4g.40gb", NVML_GPU_INSTANCE_PROFILE_4_SLICE, 5, 4, 4, 1, {0}, 56, 4, 2, 0, 0, 0, 40192},
                     {"7g.80gb", NVML_GPU_INSTANCE_PROFILE_7_SLICE, 0, 7, 8, 1, {0}, 98, 7, 5, 0, 1, 1, 80896},
                     {"1g.10gb+me", NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1, 20, 1, 1, 1, {0, 1, 2, 3, 4, 5, 6}, 14, 1, 1, 0, 1, 1, 9728},
                     {"1g.20gb", NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2, 15, 1, 2, 4, {0, 2, 4, 6}, 14, 1, 1, 0, 0, 0, 19968}});
}

// H100 80GB HBM3 (SXM5): 132 SMs; 1g = 16 SMs.
MigProfileTable h100_80gb() {
  return make_table("h100-80gb", 16,
                    {{"1g.10gb", NVML_GPU_INSTANCE_PROFILE_1_SLICE, 19, 1, 1, 7, {0, 1, 2, 3, 4, 5, 6}, 16, 1, 1, 0, 1, 0, 9984},
                     {"2g.20gb", NVML_GPU_INSTANCE_PROFILE_2_SLICE, 14, 2, 2, 3, {0, 2, 4}, 32, 2, 2, 0, 2, 0, 20096},
                     {"3g.40gb", NVML_GPU_INSTANCE_PROFILE_3_SLICE, 9, 3, 4, 2, {0, 4}, 60, 3, 3, 0, 3, 0, 40448},
                     {"4g.40gb", NVML_GPU_INSTANCE_PROFILE_4_SLICE, 5, 4, 4, 1, {0}, 64, 4, 4, 0, 4, 0, 40448},
                     {"7g.80gb", NVML_GPU_INSTANCE_PROFILE_7_SLICE, 0, 7, 8, 1, {0}, 132, 8, 7, 0, 7, 1, 81152},
                     {"1g.10gb+me", NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1, 20, 1, 1, 1, {0, 1, 2, 3, 4, 5, 6}, 16, 1, 1, 0, 1, 1, 9984},
                     {"1g.20gb", NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2, 15, 1, 2, 4, {0, 2, 4, 6}, 26, 1, 1, 0, 1, 0, 20096}});
}

// H200 141GB (SXM5 / NVL): the H100's GH100 slicing with 141 GB. Ids, SMs, engines and the 1g.18gb,
// 2g.35gb and 7g.141gb sizes (16.00 / 32.50 / 140.00 GiB) as `nvidia-smi mig -lgip` shows them; the
// 1g.35gb, 3g.71gb and 4g.71gb sizes follow the same per-slice memory (not seen on a device).
MigProfileTable h200() {
  return make_table("h200", 16,
                    {{"1g.18gb", NVML_GPU_INSTANCE_PROFILE_1_SLICE, 19, 1, 1, 7, {0, 1, 2, 3, 4, 5, 6}, 16, 1, 1, 0, 1, 0, 16384},
                     {"2g.35gb", NVML_GPU_INSTANCE_PROFILE_2_SLICE, 14, 2, 2, 3, {0, 2, 4}, 32, 2, 2, 0, 2, 0, 33280},
                     {"3g.71gb", NVML_GPU_INSTANCE_PROFILE_3_SLICE, 9, 3, 4, 2, {0, 4}, 60, 3, 3, 0, 3, 0, 66560},
                     {"4g.71gb", NVML_GPU_INSTANCE_PROFILE_4_SLICE, 5, 4, 4, 1, {0}, 64, 4, 4, 0, 4, 0, 66560},
                     {"7g.141gb", NVML_GPU_INSTANCE_PROFILE_7_SLICE, 0, 7, 8, 1, {0}, 132, 8, 7, 0, 7, 1, 143360},
                     {"1g.18gb+me", NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1, 20, 1, 1, 1, {0, 1, 2, 3, 4, 5, 6}, 16, 1, 1, 0, 1, 1, 16384},
                     {"1g.35gb", NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2, 15, 1, 2, 4, {0, 2, 4, 6}, 26, 1, 1, 0, 1, 0, 33280}});
}

}  // namespace

std::optional<MigProfileTable> builtin_mig_table(const std::string& name) {
  if (name == "a100-40gb") return a100_40gb();
  if (name == "a100-80gb") return a100_80gb();
  if (name == "h100-80gb") return h100_80gb();
  if (name == "h200") return h200();
  return std::nullopt;
}

std::string builtin_mig_table_names() { return "a100-40gb, a100-80gb, h100-80gb, h200"; }

unsigned default_gpu_instance_id(const GiProfile& profile, unsigned placement) {
  // The driver numbers GIs by size class and position; these are the ids nvidia-smi shows on an
  // A100 / H100 for instances created at each placement.
  switch (profile.compute_slices) {
    case 7: return 0;
    case 4: return 1;
    case 3: return placement == 0 ? 1 : 2;
    case 2: return 3 + placement / 2;
    default: return 7 + placement;
  }
}

std::optional<unsigned> compute_profile_index(unsigned slices) {
  switch (slices) {
    case 1: return NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE;
    case 2: return NVML_COMPUTE_INSTANCE_PROFILE_2_SLICE;
    case 3: return NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE;
    case 4: return NVML_COMPUTE_INSTANCE_PROFILE_4_SLICE;
    case 7: return NVML_COMPUTE_INSTANCE_PROFILE_7_SLICE;
    case 8: return NVML_COMPUTE_INSTANCE_PROFILE_8_SLICE;
    case 6: return NVML_COMPUTE_INSTANCE_PROFILE_6_SLICE;
    default: return std::nullopt;
  }
}

std::optional<unsigned> compute_profile_slices(unsigned profile_index) {
  constexpr std::array<unsigned, NVML_COMPUTE_INSTANCE_PROFILE_COUNT> kSlices = {1, 2, 3, 4, 7, 8, 6, 1};
  if (profile_index >= kSlices.size()) return std::nullopt;
  return kSlices[profile_index];
}

}  // namespace kgpu::fake_nvml
