#pragma once
// How often the slice publisher puts back this node's ResourceSlices after someone else changed
// them (issue 28, item 9). Pure: the publisher reports each pass a watch event caused and asks how
// long to wait before the next one.
//
// One change by someone else (an administrator deleting a slice) is put back at once. A second
// writer that changes the slices again after every repair (another driver claiming the same pool,
// a controller with an older spec) is a fight nobody wins: kgpu keeps repairing, but each repair
// waits twice as long as the one before, up to `max_backoff`, so the API server sees a handful of
// writes a minute instead of dozens a second. Passes are also never closer than `min_interval`,
// so a burst of watch events (kgpu's own writes coming back) costs one LIST, not one each.
#include <chrono>

namespace kgpu::dra {

struct RepairPacing {
  std::chrono::milliseconds min_interval{250};
  std::chrono::milliseconds max_backoff{60000};
  int fight_after = 3;  // repairs in a row that make a fight (logged once)
};

class RepairPacer {
 public:
  using Settings = RepairPacing;
  enum class Change { None, FightStarted, FightEnded };

  explicit RepairPacer(Settings settings = {});

  // A pass caused by a watch event ended; `repaired`: it had to write (the API server's slices were
  // no longer kgpu's). Returns whether this starts or ends a fight, for the log.
  Change resync_pass_ended(bool repaired);
  // The least time between the end of a pass and the next pass a watch event causes.
  std::chrono::milliseconds delay() const { return delay_; }
  int repairs_in_a_row() const { return repairs_; }
  bool fighting() const { return repairs_ >= settings_.fight_after; }

 private:
  Settings settings_;
  int repairs_ = 0;
  std::chrono::milliseconds delay_;
};

}  // namespace kgpu::dra
