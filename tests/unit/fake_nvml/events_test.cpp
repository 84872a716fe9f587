// Events and run-time control: injected XIDs/ECC wake nvmlEventSetWait, GPUs get lost and come back,
// and another process can drive it all through the control file.
#include <gmock/gmock.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <future>
#include <thread>
#include <vector>

#include "fake-nvml/fake_nvml_control.h"
#include "nvml_under_test.h"

namespace kgpu::fake_nvml::testing {
namespace {

using namespace std::chrono_literals;
constexpr unsigned kNoInstance = 0xFFFFFFFFu;

class FakeNvmlEvents : public NvmlTest {
 protected:
  void start(const std::string& fleet) {
    control_ = std::make_unique<Control>(dir_.path() + "/nvml.control");
    ASSERT_EQ(init_with(fleet_path(fleet), control_->path()), NVML_SUCCESS);
    ASSERT_EQ(sym<nvmlEventSetCreate_fn>("nvmlEventSetCreate")(&set_), NVML_SUCCESS);
  }
  void TearDown() override {
    if (set_ != nullptr && initialised_ > 0) sym<nvmlEventSetFree_fn>("nvmlEventSetFree")(set_);
    NvmlTest::TearDown();
  }
  nvmlReturn_t register_events(nvmlDevice_t d, unsigned long long mask) {
    return sym<nvmlDeviceRegisterEvents_fn>("nvmlDeviceRegisterEvents")(d, mask, set_);
  }
  nvmlReturn_t wait(nvmlEventData_t* event, unsigned timeout_ms) {
    return sym<nvmlEventSetWait_fn>("nvmlEventSetWait_v2")(set_, event, timeout_ms);
  }

  std::unique_ptr<Control> control_;
  nvmlEventSet_t set_ = nullptr;
};

TEST_F(FakeNvmlEvents, InjectedXidWakesABlockedWait) {
  start("dgx-a100");
  nvmlDevice_t gpu = device(4);
  ASSERT_EQ(register_events(gpu, nvmlEventTypeXidCriticalError), NVML_SUCCESS);
  auto waiter = std::async(std::launch::async, [&] {
    nvmlEventData_t event{};
    const auto begin = std::chrono::steady_clock::now();
    nvmlReturn_t rc = wait(&event, 10000);
    return std::make_tuple(rc, event, std::chrono::steady_clock::now() - begin);
  });
  ASSERT_TRUE(control_->inject_xid(uuid(gpu), 79));
  auto [rc, event, elapsed] = waiter.get();
  ASSERT_EQ(rc, NVML_SUCCESS);
  EXPECT_EQ(event.device, gpu);
  EXPECT_EQ(event.eventType, static_cast<unsigned long long>(nvmlEventTypeXidCriticalError));
  EXPECT_EQ(event.eventData, 79u);
  EXPECT_EQ(event.gpuInstanceId, kNoInstance);
  EXPECT_EQ(event.computeInstanceId, kNoInstance);
  EXPECT_LT(elapsed, 2s) << "the wait must end on the event, not on its 10 s timeout";
}

TEST_F(FakeNvmlEvents, MigXidsArriveOnTheParentWithInstanceIds) {
  start("a100-mig-mixed");
  nvmlDevice_t gpu = device(0);
  ASSERT_EQ(register_events(gpu, nvmlEventTypeXidCriticalError), NVML_SUCCESS);
  nvmlDevice_t mig = nullptr;
  ASSERT_EQ(sym<nvmlDeviceGetMigDeviceHandleByIndex_fn>("nvmlDeviceGetMigDeviceHandleByIndex")(gpu, 1, &mig), NVML_SUCCESS);
  unsigned gi = 0, ci = 0;
  ASSERT_EQ(sym<nvmlDeviceGetGpuInstanceId_fn>("nvmlDeviceGetGpuInstanceId")(mig, &gi), NVML_SUCCESS);
  ASSERT_EQ(sym<nvmlDeviceGetComputeInstanceId_fn>("nvmlDeviceGetComputeInstanceId")(mig, &ci), NVML_SUCCESS);
  // MIG handles do not take registrations; the parent does.
  EXPECT_EQ(register_events(mig, nvmlEventTypeXidCriticalError), NVML_ERROR_NOT_SUPPORTED);

  ASSERT_TRUE(control_->inject_xid(uuid(mig), 43));             // by MIG uuid
  ASSERT_TRUE(control_->inject_xid_mig(uuid(gpu), 48, gi, ci));  // by parent uuid + ids
  for (unsigned long long xid : {43ULL, 48ULL}) {
    nvmlEventData_t event{};
    ASSERT_EQ(wait(&event, 5000), NVML_SUCCESS);
    EXPECT_EQ(event.device, gpu);
    EXPECT_EQ(event.eventData, xid);
    EXPECT_EQ(event.gpuInstanceId, gi);
    EXPECT_EQ(event.computeInstanceId, ci);
  }
}

TEST_F(FakeNvmlEvents, OnlyRegisteredTypesAndDevicesAreDelivered) {
  start("dgx-a100");
  ASSERT_EQ(register_events(device(0), nvmlEventTypeXidCriticalError), NVML_SUCCESS);
  ASSERT_EQ(register_events(device(1), nvmlEventTypeDoubleBitEccError), NVML_SUCCESS);
  ASSERT_TRUE(control_->inject_ecc_double(uuid(device(0))));  // type not registered on GPU 0
  ASSERT_TRUE(control_->inject_xid(uuid(device(2)), 13));     // GPU 2 not registered at all
  ASSERT_TRUE(control_->inject_xid(uuid(device(0)), 31));
  ASSERT_TRUE(control_->inject_ecc_double(uuid(device(1))));
  nvmlEventData_t event{};
  ASSERT_EQ(wait(&event, 5000), NVML_SUCCESS);
  EXPECT_EQ(event.device, device(0));
  EXPECT_EQ(event.eventData, 31u);
  ASSERT_EQ(wait(&event, 5000), NVML_SUCCESS);
  EXPECT_EQ(event.device, device(1));
  EXPECT_EQ(event.eventType, static_cast<unsigned long long>(nvmlEventTypeDoubleBitEccError));
  ASSERT_TRUE(control_->sync(5s));
  EXPECT_EQ(wait(&event, 0), NVML_ERROR_TIMEOUT);
}

TEST_F(FakeNvmlEvents, WaitTimesOutWithoutEvents) {
  start("pcie-t4x2");
  ASSERT_EQ(register_events(device(0), nvmlEventTypeXidCriticalError), NVML_SUCCESS);
  nvmlEventData_t event{};
  EXPECT_EQ(wait(&event, 0), NVML_ERROR_TIMEOUT);
  const auto begin = std::chrono::steady_clock::now();
  EXPECT_EQ(wait(&event, 30), NVML_ERROR_TIMEOUT);
  EXPECT_GE(std::chrono::steady_clock::now() - begin, 30ms);
}

TEST_F(FakeNvmlEvents, SupportedEventTypesGateRegistration) {
  start("pcie-t4x2");
  unsigned long long types = 0;
  ASSERT_EQ(sym<nvmlDeviceGetSupportedEventTypes_fn>("nvmlDeviceGetSupportedEventTypes")(device(0), &types), NVML_SUCCESS);
  EXPECT_NE(types & nvmlEventTypeXidCriticalError, 0u);
  EXPECT_NE(types & nvmlEventTypeDoubleBitEccError, 0u);
  EXPECT_EQ(types & nvmlEventMigConfigChange, 0u);  // a T4 has no MIG
  EXPECT_EQ(register_events(device(0), nvmlEventMigConfigChange), NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(register_events(device(0), types), NVML_SUCCESS);
}

TEST_F(FakeNvmlEvents, UnversionedWaitFillsOnlyTheOriginalRecord) {
  start("dgx-a100");
  ASSERT_EQ(register_events(device(0), nvmlEventTypeXidCriticalError), NVML_SUCCESS);
  ASSERT_TRUE(control_->inject_xid(uuid(device(0)), 94));
  struct {
    nvmlDevice_t device;
    unsigned long long type, data;
    unsigned char guard[8];
  } v1;
  std::memset(&v1, 0xCD, sizeof v1);
  ASSERT_EQ(sym<nvmlReturn_t (*)(nvmlEventSet_t, void*, unsigned)>("nvmlEventSetWait")(set_, &v1, 5000), NVML_SUCCESS);
  EXPECT_EQ(v1.device, device(0));
  EXPECT_EQ(v1.data, 94u);
  EXPECT_EQ(v1.guard[0], 0xCD);
}

TEST_F(FakeNvmlEvents, GpuGetsLostAndComesBack) {
  start("dgx-a100");
  nvmlDevice_t gpu = device(5);
  const std::string id = uuid(gpu);
  auto memory = sym<nvmlDeviceGetMemoryInfo_fn>("nvmlDeviceGetMemoryInfo");
  nvmlMemory_t mem{};
  ASSERT_EQ(memory(gpu, &mem), NVML_SUCCESS);
  ASSERT_TRUE(control_->set_lost(id, true));
  ASSERT_TRUE(control_->sync(5s));
  EXPECT_EQ(memory(gpu, &mem), NVML_ERROR_GPU_IS_LOST);
  nvmlDevice_t again = nullptr;
  EXPECT_EQ(sym<nvmlDeviceGetHandleByIndex_fn>("nvmlDeviceGetHandleByIndex_v2")(5, &again), NVML_ERROR_GPU_IS_LOST);
  EXPECT_EQ(memory(device(4), &mem), NVML_SUCCESS);  // its neighbours are fine
  ASSERT_TRUE(control_->set_lost(id, false));
  ASSERT_TRUE(control_->sync(5s));
  EXPECT_EQ(memory(gpu, &mem), NVML_SUCCESS);
}

TEST_F(FakeNvmlEvents, CallsCanBeMadeToFailAtRunTime) {
  start("pcie-t4x2");
  nvmlDevice_t gpu = device(1);
  auto serial = sym<nvmlDeviceGetSerial_fn>("nvmlDeviceGetSerial");
  char buf[32];
  ASSERT_EQ(serial(gpu, buf, sizeof buf), NVML_SUCCESS);
  ASSERT_TRUE(control_->fail_call(uuid(gpu), "nvmlDeviceGetSerial", NVML_ERROR_CORRUPTED_INFOROM));
  ASSERT_TRUE(control_->sync(5s));
  EXPECT_EQ(serial(gpu, buf, sizeof buf), NVML_ERROR_CORRUPTED_INFOROM);
  ASSERT_TRUE(control_->fail_call(uuid(gpu), "nvmlDeviceGetSerial", NVML_SUCCESS));
  ASSERT_TRUE(control_->sync(5s));
  EXPECT_EQ(serial(gpu, buf, sizeof buf), NVML_SUCCESS);
}

TEST_F(FakeNvmlEvents, StateWrittenBeforeInitIsReplayed) {
  Control early(dir_.path() + "/early.control");
  // dgx-a100 GPU 1, from the fleet file.
  ASSERT_TRUE(early.set_lost("GPU-8f2e4b1d-3c6a-4d5e-9f70-1a2b3c4d5e21", true));
  ASSERT_EQ(init_with(fleet_path("dgx-a100"), early.path()), NVML_SUCCESS);
  nvmlDevice_t d = nullptr;
  EXPECT_EQ(sym<nvmlDeviceGetHandleByIndex_fn>("nvmlDeviceGetHandleByIndex_v2")(1, &d), NVML_ERROR_GPU_IS_LOST);
  EXPECT_EQ(sym<nvmlDeviceGetHandleByIndex_fn>("nvmlDeviceGetHandleByIndex_v2")(0, &d), NVML_SUCCESS);
}

TEST_F(FakeNvmlEvents, AnotherProcessCanInjectAndSeeRegistrations) {
  start("hgx-h100");
  nvmlDevice_t gpu = device(3);
  const std::string id = uuid(gpu);
  ASSERT_EQ(register_events(gpu, nvmlEventTypeXidCriticalError | nvmlEventTypeDoubleBitEccError), NVML_SUCCESS);
  EXPECT_TRUE(control_->wait_registered(id, 5s));
  EXPECT_FALSE(control_->wait_registered(uuid(device(4)), 50ms));
  // A separate process appends the command, as a test driving the kgpu daemon would.
  const std::string command = "echo 'xid " + id + " 119' >> '" + control_->path() + "'";
  ASSERT_EQ(std::system(command.c_str()), 0);
  nvmlEventData_t event{};
  ASSERT_EQ(wait(&event, 5000), NVML_SUCCESS);
  EXPECT_EQ(event.device, gpu);
  EXPECT_EQ(event.eventData, 119u);
}

TEST_F(FakeNvmlEvents, LastShutdownReleasesWaiters) {
  start("pcie-t4x2");
  ASSERT_EQ(register_events(device(0), nvmlEventTypeXidCriticalError), NVML_SUCCESS);
  auto waiter = std::async(std::launch::async, [&] {
    nvmlEventData_t event{};
    return wait(&event, 10000);
  });
  ASSERT_EQ(sym<nvmlShutdown_fn>("nvmlShutdown")(), NVML_SUCCESS);
  --initialised_;
  ASSERT_EQ(waiter.wait_for(5s), std::future_status::ready);
  EXPECT_EQ(waiter.get(), NVML_ERROR_UNINITIALIZED);
}

TEST_F(FakeNvmlEvents, ConcurrentQueriesAndInjectionsLoseNothing) {
  start("dgx-a100");
  ASSERT_EQ(register_events(device(0), nvmlEventTypeXidCriticalError), NVML_SUCCESS);
  constexpr int kEvents = 200;
  std::atomic<bool> stop{false};
  std::atomic<int> query_errors{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 4; ++t)
    readers.emplace_back([&] {
      auto memory = sym<nvmlDeviceGetMemoryInfo_fn>("nvmlDeviceGetMemoryInfo");
      auto by_index = sym<nvmlDeviceGetHandleByIndex_fn>("nvmlDeviceGetHandleByIndex_v2");
      while (!stop) {
        for (unsigned i = 0; i < 8; ++i) {
          nvmlDevice_t d = nullptr;
          nvmlMemory_t mem{};
          if (by_index(i, &d) != NVML_SUCCESS || memory(d, &mem) != NVML_SUCCESS) ++query_errors;
        }
      }
    });
  const std::string id = uuid(device(0));
  std::thread injector([&] {
    for (int i = 0; i < kEvents; ++i) control_->inject_xid(id, static_cast<unsigned long long>(i));
  });
  std::vector<unsigned long long> seen;
  nvmlEventData_t event{};
  while (seen.size() < kEvents && wait(&event, 5000) == NVML_SUCCESS) seen.push_back(event.eventData);
  injector.join();
  stop = true;
  for (auto& r : readers) r.join();
  EXPECT_EQ(query_errors.load(), 0);
  ASSERT_EQ(seen.size(), static_cast<size_t>(kEvents));
  for (int i = 0; i < kEvents; ++i) EXPECT_EQ(seen[static_cast<size_t>(i)], static_cast<unsigned long long>(i)) << "in order";
}

}  // namespace
}  // namespace kgpu::fake_nvml::testing
