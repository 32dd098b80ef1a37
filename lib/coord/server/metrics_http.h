// The coordinator's /metrics endpoint (gpushare-ctl serve --metrics-listen):
// a minimal HTTP/1.x server that answers GET /metrics with the exposition
// text of metrics_text.h, and nothing else.
//
// It runs on the coordinator's event loop, so it must never make the loop
// wait: its descriptors live in an epoll set of their own, whose descriptor
// the loop watches as one more source, and each call to on_ready() does a
// bounded amount of non-blocking work. What anyone who can reach the port
// may do is bounded too:
//   - connections: at most max_connections at once; more are answered 503
//     and closed at once;
//   - request size: a request head longer than max_request_bytes is
//     answered 431 and closed, without reading further;
//   - time: a connection that has not sent its request and read the whole
//     answer within `deadline` of connecting is closed (slowloris, a
//     reader that stops reading);
//   - garbage: anything but "GET /metrics" (or HEAD) gets 400, 404 or 405.
// One request per connection ("Connection: close"), as Prometheus is
// content with and as keeps the state small.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "common/result.h"

namespace gpushare::coord::server {

struct MetricsLimits {
  std::size_t max_connections = 16;
  std::size_t max_request_bytes = 8192;
  std::chrono::nanoseconds deadline = std::chrono::seconds(5);
};

/// Checks "HOST:PORT" ("127.0.0.1:9400", "[::1]:9400", "localhost:9400";
/// port 0 picks a free one) without binding.
Status check_listen_address(const std::string& address);

class MetricsEndpoint {
 public:
  /// Makes the exposition text for one scrape.
  using Render = std::function<std::string()>;

  /// Binds and listens on `address` (check_listen_address's form).
  static Result<std::unique_ptr<MetricsEndpoint>> open(const std::string& address,
                                                       MetricsLimits limits, Render render);
  ~MetricsEndpoint();
  MetricsEndpoint(const MetricsEndpoint&) = delete;
  MetricsEndpoint& operator=(const MetricsEndpoint&) = delete;

  /// An epoll descriptor, readable while anything here waits for on_ready().
  int fd() const;
  /// The address bound, as "HOST:PORT" with the actual port.
  const std::string& address() const;
  /// Accepts, reads, answers and expires connections; never blocks.
  void on_ready();
  /// Connections open now.
  std::size_t connections() const;

 private:
  struct Impl;
  explicit MetricsEndpoint(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpushare::coord::server
