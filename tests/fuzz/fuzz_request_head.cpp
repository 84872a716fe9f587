// Fuzz target: a request's header fields as nghttp2 hands them to kgpu's gRPC server, straight into
// rpc::RequestHeadReader and grpc_refusal (the checks that replace nghttp2's HTTP messaging
// validation). Any field list must end in a head or a problem, within the size bound; never crash.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdlib>

#include "rpc/request_head.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  static const char* kNames[] = {":method", ":scheme", ":path", ":authority", ":status", "content-type",
                                 "te",      "grpc-encoding", "grpc-timeout", "connection", "host"};
  kgpu::rpc::RequestHeadReader reader(in.ConsumeIntegralInRange<size_t>(64, 20000));
  size_t fed = 0;
  while (in.remaining_bytes() > 0) {
    std::string name = in.ConsumeBool() ? kNames[in.ConsumeIntegralInRange<size_t>(0, 10)]
                                        : in.ConsumeRandomLengthString(32);
    std::string value = in.ConsumeRandomLengthString(512);
    fed += name.size() + value.size() + 32;
    if (!reader.add(name, value)) break;
  }
  bool complete = reader.finish();
  if (complete && fed > 20000) std::abort();  // the size bound let a block through
  if (complete != !reader.failed()) std::abort();
  if (complete) (void)kgpu::rpc::grpc_refusal(reader.head());
  return 0;
}
