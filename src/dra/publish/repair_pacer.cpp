#include "dra/publish/repair_pacer.h"

#include <algorithm>

namespace kgpu::dra {

RepairPacer::RepairPacer(Settings settings) : settings_(settings), delay_(settings.min_interval) {}

RepairPacer::Change RepairPacer::resync_pass_ended(bool repaired) {
  if (!repaired) {
    const bool was_fighting = fighting();
    repairs_ = 0;
    delay_ = settings_.min_interval;
    return was_fighting ? Change::FightEnded : Change::None;
  }
  ++repairs_;
  // The first repair is an ordinary correction; from the second on, each waits twice as long.
  if (repairs_ >= 2) delay_ = std::min(std::max(delay_ * 2, settings_.min_interval), settings_.max_backoff);
  return repairs_ == settings_.fight_after ? Change::FightStarted : Change::None;
}

}  // namespace kgpu::dra
