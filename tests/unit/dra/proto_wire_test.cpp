// Our own DRA and plugin-registration protos against the kubelet's wire facts: the fully qualified
// service names the kubelet dials, and the field numbers of every message it reads.
#include <gtest/gtest.h>

#include "dra/v1/dra.grpc.pb.h"
#include "dra/v1beta1/dra.grpc.pb.h"
#include "pluginregistration/v1/registration.grpc.pb.h"

namespace {

namespace v1 = k8s::io::kubelet::pkg::apis::dra::v1;
namespace v1beta1 = k8s::io::kubelet::pkg::apis::dra::v1beta1;

int field(const google::protobuf::Descriptor* d, const char* name) {
  const auto* f = d->FindFieldByName(name);
  return f ? f->number() : -1;
}

TEST(DraProto, ServiceNamesTheKubeletDials) {
  EXPECT_STREQ(v1::DRAPlugin::service_full_name(), "k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin");
  EXPECT_STREQ(v1beta1::DRAPlugin::service_full_name(), "k8s.io.kubelet.pkg.apis.dra.v1beta1.DRAPlugin");
  EXPECT_STREQ(pluginregistration::Registration::service_full_name(), "pluginregistration.Registration");
  const auto* service = v1::Claim::descriptor()->file()->FindServiceByName("DRAPlugin");
  ASSERT_NE(service, nullptr);
  EXPECT_NE(service->FindMethodByName("NodePrepareResources"), nullptr);
  EXPECT_NE(service->FindMethodByName("NodeUnprepareResources"), nullptr);
}

template <typename Device, typename Claim, typename PrepareOne, typename UnprepareOne>
void expect_dra_fields() {
  EXPECT_EQ(field(Claim::descriptor(), "namespace"), 1);
  EXPECT_EQ(field(Claim::descriptor(), "uid"), 2);
  EXPECT_EQ(field(Claim::descriptor(), "name"), 3);
  EXPECT_EQ(field(Device::descriptor(), "request_names"), 1);
  EXPECT_EQ(field(Device::descriptor(), "pool_name"), 2);
  EXPECT_EQ(field(Device::descriptor(), "device_name"), 3);
  EXPECT_EQ(field(Device::descriptor(), "cdi_device_ids"), 4);
  EXPECT_EQ(field(PrepareOne::descriptor(), "devices"), 1);
  EXPECT_EQ(field(PrepareOne::descriptor(), "error"), 2);
  EXPECT_EQ(field(UnprepareOne::descriptor(), "error"), 1);
}

TEST(DraProto, FieldNumbersV1) {
  expect_dra_fields<v1::Device, v1::Claim, v1::NodePrepareResourceResponse, v1::NodeUnprepareResourceResponse>();
  EXPECT_EQ(field(v1::Device::descriptor(), "share_id"), 5);
  EXPECT_EQ(field(v1::NodePrepareResourcesRequest::descriptor(), "claims"), 1);
  EXPECT_EQ(field(v1::NodePrepareResourcesResponse::descriptor(), "claims"), 1);
  EXPECT_TRUE(v1::NodePrepareResourcesResponse::descriptor()->FindFieldByName("claims")->is_map());
}

TEST(DraProto, FieldNumbersV1beta1) {
  expect_dra_fields<v1beta1::Device, v1beta1::Claim, v1beta1::NodePrepareResourceResponse,
                    v1beta1::NodeUnprepareResourceResponse>();
  EXPECT_EQ(field(v1beta1::Device::descriptor(), "share_id"), -1) << "v1beta1 has no share_id";
  EXPECT_TRUE(v1beta1::NodeUnprepareResourcesResponse::descriptor()->FindFieldByName("claims")->is_map());
}

TEST(DraProto, RegistrationFields) {
  const auto* info = pluginregistration::PluginInfo::descriptor();
  EXPECT_EQ(field(info, "type"), 1);
  EXPECT_EQ(field(info, "name"), 2);
  EXPECT_EQ(field(info, "endpoint"), 3);
  EXPECT_EQ(field(info, "supported_versions"), 4);
  EXPECT_TRUE(info->FindFieldByName("supported_versions")->is_repeated());
  EXPECT_EQ(field(pluginregistration::RegistrationStatus::descriptor(), "plugin_registered"), 1);
  EXPECT_EQ(field(pluginregistration::RegistrationStatus::descriptor(), "error"), 2);
}

}  // namespace
