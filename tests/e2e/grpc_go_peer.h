#pragma once
// The kubelet's own gRPC in the e2e tests: kgpu-grpc-go (tests/interop/grpc-go), a grpc-go program
// that dials and serves unix sockets exactly as kubelets do and only moves bytes. These helpers run
// it as a child process, give it requests serialized with the C++ protobuf classes and read back
// what it printed (one line per message, call or final status; see tests/interop/grpc-go).
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "e2e/harness.h"

namespace kgpu::test {

// Path of the built peer; empty when the build had no Go or grpc-go (KGPU_GRPC_GO_INTEROP).
std::string grpc_go_peer();

// How the client dials: `Old` as kubelets 1.19-1.25 (bare socket path + context dialer: the path
// is the :authority), `New` as kubelets >= 1.26 (the same plus WithAuthority("localhost")), `Unix`
// a unix:// target with grpc-go's own dialer (:authority localhost).
enum class DialStyle { Old, New, Unix };
const char* style_name(DialStyle style);  // "old", "new", "unix": the peer's --style
void PrintTo(DialStyle style, std::ostream* os);  // gtest's name for a parameter (ctest shows it)
// The :authority grpc-go sends for `style` when it dials `socket`.
std::string expected_authority(DialStyle style, const std::string& socket);

// What a client run printed.
struct GoCall {
  std::vector<std::string> messages;  // every response message's bytes, in order
  std::optional<int> code;            // the final gRPC status code; none when the client stopped the stream
  std::string status_message;
  std::optional<size_t> stopped_after;  // the client ended a stream itself after this many messages
  std::string log;                      // the peer's stderr, for failure messages

  bool ok() const { return (code && *code == 0) || stopped_after.has_value(); }
  std::string describe() const;  // status, message count and log, for assertion messages
};

// Reads the client's stdout: only complete lines, so a stream can be read while it runs.
GoCall parse_client_output(const std::string& stdout_text);

// One client process (kgpu-grpc-go client).
class GoClient {
 public:
  struct Options {
    DialStyle style = DialStyle::Old;
    std::string socket;
    std::string method;   // "/package.Service/Method"
    std::string request;  // serialized request message
    bool stream = false;  // server streaming: print messages as they come
    size_t count = 0;     // with `stream`: end the stream after this many messages (0: never)
    std::chrono::seconds timeout{20};
  };
  GoClient(const Options& options, const std::string& work_dir);

  // Waits until `n` messages arrived (true) or the timeout passes / the call ended short (false).
  bool wait_messages(size_t n, std::chrono::milliseconds timeout);
  // Waits for the process to exit (killing it after `timeout`) and returns what it printed.
  GoCall finish(std::chrono::milliseconds timeout = std::chrono::seconds(30));
  GoCall now() const;

 private:
  std::unique_ptr<ChildProcess> process_;
};

// A unary call through a fresh client process.
GoCall go_call(DialStyle style, const std::string& socket, const std::string& method, const std::string& request,
               const std::string& work_dir);

// One call the server received.
struct GoServedCall {
  std::string method;
  std::string authority;
  std::string request;  // bytes
};

// One server process (kgpu-grpc-go server) on `socket`: answers each method in `answers` with
// those bytes (changeable while it runs with answer()), every other method with an empty message.
class GoServer {
 public:
  GoServer(const std::string& socket, const std::map<std::string, std::string>& answers, const std::string& work_dir,
           const std::string& name);

  // Waits until it listens on the socket.
  bool wait_listening(std::chrono::milliseconds timeout);
  // Replaces the answer to `method` (one given at construction); the next call gets it.
  void answer(const std::string& method, const std::string& bytes);
  std::vector<GoServedCall> calls() const;
  std::vector<GoServedCall> calls(const std::string& method) const;
  // Waits until `method` was called at least `n` times.
  bool wait_calls(const std::string& method, size_t n, std::chrono::milliseconds timeout);
  std::string log() const;  // stdout and stderr, for failure messages

 private:
  std::map<std::string, std::string> answer_files_;
  std::unique_ptr<ChildProcess> process_;
};

}  // namespace kgpu::test
