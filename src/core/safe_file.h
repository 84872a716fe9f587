#pragma once
// Reading and writing files on a node where someone else may have planted a symlink, a FIFO, a
// device node or a huge file at the path kgpu uses. Every outside file goes through these two
// helpers, so the rules live in one place:
//  - reads take regular files only, never block (O_NONBLOCK: a FIFO cannot stall the event loop)
//    and stop at a size limit (/dev/zero or a 200 MB file cannot exhaust memory);
//  - writes never follow a link and never write anywhere but the target folder: a fresh temporary
//    file (O_CREAT|O_EXCL|O_NOFOLLOW, random name) in that folder, fsync, then rename over the target
//    (which replaces a planted symlink instead of writing through it), then fsync the folder.
#include <sys/types.h>

#include <cstddef>
#include <string>
#include <string_view>

#include "core/result.h"

namespace kgpu {

// Size limits for files kgpu reads (stated in the docs):
//  - a config file: 4 MiB (NVIDIA's configs are a few KiB; a device-group list of tens of thousands
//    of entries still fits);
//  - a file kgpu wrote itself and reads back to compare (feature file, CDI spec): 4 MiB;
//  - a sysfs / procfs attribute: 64 KiB (the kernel serves at most a page for text attributes).
inline constexpr size_t kConfigFileLimit = size_t{4} << 20;
inline constexpr size_t kOwnFileLimit = size_t{4} << 20;
inline constexpr size_t kAttributeFileLimit = size_t{64} << 10;

enum class FollowLinks { Yes, No };

// The content of the regular file at `path`, at most `max_bytes` long. Errors (never exceptions):
// not_found (missing), invalid (not a regular file: a directory, FIFO, device, socket; a symlink
// when `follow` is No; larger than `max_bytes`), unavailable (cannot open or read, e.g. EACCES).
// The message names the path and the reason.
Result<std::string> read_regular_file(const std::string& path, size_t max_bytes,
                                      FollowLinks follow = FollowLinks::Yes);

// Replaces the file at `path` with `content`, mode `mode` exactly (the umask does not narrow it),
// atomically: readers see the old or the new file, never a partial one. Whatever is at `path` (a
// symlink too) is replaced, never written through; a directory there is an error. The folder must
// exist. The temporary file is ".<name>.kgpu-<random>", which NFD and CDI runtimes ignore.
Status write_file_atomically(const std::string& path, std::string_view content, mode_t mode);

}  // namespace kgpu
