#pragma once
// A DRA claim's MPS shared memory (issue 28, item 5): a tmpfs of its own, limited in size, at
// <mpsRoot>/dra/<claim UID>/shm. The claim's control daemon (and the MPS server it starts) sees it
// at /dev/shm through a mount namespace of its own (mps::spawn_program), and the claim's
// containers get it at /dev/shm through the claim's CDI spec; no other tenant's process shares
// it, and one tenant cannot fill the node's memory through it.
//
// Mounted by `kgpu mps-daemon` when the claim's daemon starts, kept while the claim is prepared
// (a restarted supervisor reuses it, so running clients and a restarted daemon agree), unmounted
// and removed when the claim's request goes. The mount must reach the host's mount table for the
// container runtime to bind it: the mps-control-daemon container mounts mpsRoot with
// Bidirectional propagation (chart and static manifests).
#include <cstdint>
#include <string>
#include <string_view>

#include "core/result.h"

namespace kgpu {

// The size when /proc/meminfo cannot be read, as NVIDIA's DRA driver.
inline constexpr uint64_t kClaimShmFallbackBytes = uint64_t{64} << 20;
inline constexpr uint64_t kClaimShmMinBytes = uint64_t{1} << 20;

// Half of the node's memory (MemTotal of /proc/meminfo's text), NVIDIA's DRA driver's size for
// its MPS daemons' tmpfs; kClaimShmFallbackBytes when MemTotal is missing or unreadable. Pure.
uint64_t default_claim_shm_bytes(std::string_view meminfo);

// --claim-shm-size as given (`flag`, for the error) and read (`bytes`), checked against sane bounds
// (issue 38, item 5): at least kClaimShmMinBytes, and at most the node's memory (MemTotal of
// /proc/meminfo's text; kClaimShmMaxBytes when that cannot be read): a tmpfs larger than the node
// only lets one claim push the node into swap or the OOM killer. The error names the value. Pure.
inline constexpr uint64_t kClaimShmMaxBytes = uint64_t{16} << 40;
Status check_claim_shm_bytes(const std::string& flag, uint64_t bytes, std::string_view meminfo);

// True when `dir` is the root of a tmpfs mounted there (not merely a folder on a tmpfs).
bool is_tmpfs_mount_point(const std::string& dir);

// Creates `dir` and mounts a tmpfs of `bytes` there (nosuid, nodev, noexec, mode 1777); a tmpfs
// already mounted there (an earlier supervisor's) is kept as it is. Errors name the folder, the
// size and the reason (EPERM: the capability the mount needs).
Status mount_claim_shm(const std::string& dir, uint64_t bytes);

// Unmounts the tmpfs at `dir` (lazily: a client still holding a file does not keep the mount
// busy); nothing to do when none is mounted there.
Status unmount_claim_shm(const std::string& dir);

}  // namespace kgpu
