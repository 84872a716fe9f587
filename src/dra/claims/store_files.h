#pragma once
// Small file helpers the claim store's parts share (claim_store.cpp, claim_store_nvidia.cpp).
#include <string>
#include <vector>

#include "core/result.h"

namespace kgpu::dra::store_files {

// A regular file at `path` (a link is not followed: a link there is not one).
bool regular_file_exists(const std::string& path);

// Removes the file at `path` (never what a link points to); a missing file is fine.
Status remove_file(const std::string& path);

// "20250101T120000Z": when a bad checkpoint was set aside or NVIDIA's was taken over.
std::string utc_stamp();

// Whether the file at `path` was last written since the node booted (now minus CLOCK_BOOTTIME),
// with ten minutes' slack toward yes: a clock stepped forward after boot must not make a file of
// this boot look older, and a file written in the minutes before a reboot passing as this boot's
// only holds GPUs longer. Unknown: yes.
bool written_since_boot(const std::string& path);

}  // namespace kgpu::dra::store_files
