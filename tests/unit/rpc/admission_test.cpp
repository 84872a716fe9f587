// Who may hold the gRPC server's connections (issue 39): which connection a newcomer displaces
// when a socket is full, who counts as the kubelet, and the bound on calls per peer uid.
#include "rpc/admission.h"

#include <gtest/gtest.h>

#include <vector>

namespace kgpu::rpc {
namespace {

using namespace std::chrono_literals;

const Clock::time_point t0 = Clock::now();

ConnectionView conn(uint64_t id, Peer peer, int age_s, size_t calls = 1) {
  ConnectionView c;
  c.id = id;
  c.peer = peer;
  c.handshaken = true;
  c.open_calls = calls;
  c.accepted_at = t0 - std::chrono::seconds(age_s);
  return c;
}

TEST(ChooseVictim, NeverTheKubeletWhileAnythingElseIsOpen) {
  std::vector<ConnectionView> open;
  auto kubelet = conn(1, {100, 0}, 1000);  // the oldest, with its ListAndWatch
  kubelet.kubelet = true;
  open.push_back(kubelet);
  for (uint64_t i = 2; i <= 64; ++i) open.push_back(conn(i, {static_cast<pid_t>(200 + i), 0}, 10));
  auto victim = choose_victim(open);
  ASSERT_TRUE(victim);
  EXPECT_NE(*victim, 1u);
}

TEST(ChooseVictim, WorstOffenderFirst) {
  Peer a{300, 1000}, b{400, 2000};
  // Not handshaken beats everything.
  std::vector<ConnectionView> open = {conn(1, a, 50), conn(2, b, 5)};
  open[1].handshaken = false;
  EXPECT_EQ(choose_victim(open), 2u);
  // Then a connection with no call open.
  open[1].handshaken = true;
  open[1].open_calls = 0;
  EXPECT_EQ(choose_victim(open), 2u);
  // Then the oldest request still arriving.
  open[1].open_calls = 1;
  open[0].stalled_since = t0 - 3s;
  open[1].stalled_since = t0 - 7s;
  EXPECT_EQ(choose_victim(open), 2u);
  // Then the oldest connection of the uid holding the most.
  open = {conn(1, a, 50), conn(2, b, 40), conn(3, b, 30), conn(4, b, 20)};
  EXPECT_EQ(choose_victim(open), 2u);
}

TEST(ChooseVictim, ForkedPidsShareTheirUid) {
  // 63 connections of one uid, each from its own forked pid, and one of another uid: the flood's uid pays.
  std::vector<ConnectionView> open = {conn(1, {50, 7}, 100)};
  for (uint64_t i = 2; i <= 64; ++i) open.push_back(conn(i, {static_cast<pid_t>(1000 + i), 0}, 10));
  auto victim = choose_victim(open);
  ASSERT_TRUE(victim);
  EXPECT_NE(*victim, 1u);
}

TEST(ChooseVictim, OnlyTheKubeletsLeftGivesUpItsOldest) {
  std::vector<ConnectionView> open = {conn(1, {100, 0}, 10), conn(2, {100, 0}, 20)};
  for (auto& c : open) c.kubelet = true;
  EXPECT_EQ(choose_victim(open), 2u);
  EXPECT_FALSE(choose_victim({}));
}

TEST(KubeletPeer, AVisiblePidNamesThatProcess) {
  KubeletPeer k{{4242, 0}, t0};
  EXPECT_TRUE(k.matches({4242, 0}, t0 - 1h));  // connected before the registration: still the kubelet
  EXPECT_FALSE(k.matches({4243, 0}, t0));
  EXPECT_FALSE(k.matches({4242, 5}, t0));
  EXPECT_FALSE(k.matches({0, 0}, t0));
}

TEST(KubeletPeer, PidZeroCountsOnlySinceTheRegistrationBegan) {
  // In a pod without hostPID every peer outside it reads pid 0.
  KubeletPeer k{{0, 0}, t0};
  EXPECT_TRUE(k.matches({0, 0}, t0 + 10ms));
  EXPECT_FALSE(k.matches({0, 0}, t0 - 1ms));  // already connected before kgpu registered
  EXPECT_FALSE(k.matches({0, 0}, t0 + KubeletPeer::kWindow + 1s));
  EXPECT_FALSE(k.matches({0, 1000}, t0 + 10ms));
  EXPECT_FALSE(k.matches({77, 0}, t0 + 10ms));
}

TEST(PeerLedger, CallsAreBoundedPerUidExceptTheKubelets) {
  PeerLedger ledger;
  Peer flood{10, 1000};
  for (size_t i = 0; i < PeerLedger::kMaxCallsPerPeer; ++i) {
    ASSERT_TRUE(ledger.may_open_call({static_cast<pid_t>(10 + i), 1000}, false));  // forking does not help
    ledger.call_opened({static_cast<pid_t>(10 + i), 1000});
  }
  EXPECT_FALSE(ledger.may_open_call(flood, false));
  EXPECT_TRUE(ledger.may_open_call(flood, true));
  EXPECT_TRUE(ledger.may_open_call({10, 2000}, false));
  ledger.call_closed(flood);
  EXPECT_TRUE(ledger.may_open_call(flood, false));
  EXPECT_EQ(ledger.calls(flood), PeerLedger::kMaxCallsPerPeer - 1);
}

}  // namespace
}  // namespace kgpu::rpc
