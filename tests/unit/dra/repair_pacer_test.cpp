// The pace of the slice publisher's repairs (issue 28, item 9): one repair at once, a fight backed
// off exponentially up to the bound and reported once as it starts and once as it ends.
#include <gtest/gtest.h>

#include "dra/publish/repair_pacer.h"

namespace kgpu::dra {
namespace {

using namespace std::chrono_literals;
using Change = RepairPacer::Change;

RepairPacer pacer() { return RepairPacer({100ms, 1000ms, 3}); }

TEST(RepairPacer, PassesThatFindNothingToRepairKeepTheMinimumInterval) {
  RepairPacer p = pacer();
  for (int i = 0; i < 5; ++i) EXPECT_EQ(p.resync_pass_ended(false), Change::None);
  EXPECT_EQ(p.delay(), 100ms);
  EXPECT_FALSE(p.fighting());
}

TEST(RepairPacer, OneRepairIsAnOrdinaryCorrection) {
  RepairPacer p = pacer();
  EXPECT_EQ(p.resync_pass_ended(true), Change::None);
  EXPECT_EQ(p.delay(), 100ms);
  EXPECT_EQ(p.resync_pass_ended(false), Change::None);
  EXPECT_EQ(p.repairs_in_a_row(), 0);
}

TEST(RepairPacer, RepairsInARowDoubleTheWaitUpToTheBoundAndStartAFightOnce) {
  RepairPacer p = pacer();
  std::vector<std::chrono::milliseconds> delays;
  std::vector<Change> changes;
  for (int i = 0; i < 8; ++i) {
    changes.push_back(p.resync_pass_ended(true));
    delays.push_back(p.delay());
  }
  EXPECT_EQ(delays, (std::vector<std::chrono::milliseconds>{100ms, 200ms, 400ms, 800ms, 1000ms, 1000ms, 1000ms, 1000ms}));
  EXPECT_EQ(std::count(changes.begin(), changes.end(), Change::FightStarted), 1);
  EXPECT_EQ(changes[2], Change::FightStarted);
  EXPECT_TRUE(p.fighting());
}

TEST(RepairPacer, APassWithNothingToRepairEndsTheFightAndResetsThePace) {
  RepairPacer p = pacer();
  for (int i = 0; i < 4; ++i) p.resync_pass_ended(true);
  EXPECT_EQ(p.resync_pass_ended(false), Change::FightEnded);
  EXPECT_FALSE(p.fighting());
  EXPECT_EQ(p.delay(), 100ms);
  EXPECT_EQ(p.resync_pass_ended(false), Change::None);  // ended once
  // Two repairs after that are no fight yet.
  p.resync_pass_ended(true);
  EXPECT_EQ(p.resync_pass_ended(true), Change::None);
  EXPECT_FALSE(p.fighting());
}

}  // namespace
}  // namespace kgpu::dra
