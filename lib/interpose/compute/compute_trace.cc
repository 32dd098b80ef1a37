#include "interpose/compute/compute_trace.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cstring>

#include "coord/contract/control_block.h"
#include "coord/job/limits.h"
#include "interpose/core/clock.h"
#include "interpose/core/log.h"
#include "interpose/core/runtime.h"

namespace gpushare::interpose {
namespace {

constexpr std::size_t kBufferBytes = 64 * 1024;
constexpr std::size_t kFlushAtBytes = kBufferBytes * 3 / 4;
constexpr std::uint64_t kFlushAfterNs = 200'000'000;
// Room kept for the truncation record, so that the cap holds with it.
constexpr std::uint64_t kTailBytes = 256;

struct Trace {
  pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
  int fd = -1;          ///< the open file, or -1
  bool failed = false;  ///< no file could be made: off for this process
  bool ended = false;   ///< the cap was reached and recorded
  bool exit_hooked = false;
  std::uint64_t written = 0;  ///< bytes in the file and the buffer
  std::uint64_t records = 0;
  std::uint64_t last_flush_ns = 0;
  std::size_t used = 0;
  char buffer[kBufferBytes] = {};
};

constinit Trace g_trace;

const char* configured_path() { return g_runtime.settings.compute_trace_path; }

// The path with "%p" replaced by the pid ("%%" is a percent sign). False
// when it does not fit.
bool expand_path(char* out, std::size_t size) {
  const char* in = configured_path();
  std::size_t n = 0;
  for (; *in != '\0'; ++in) {
    char piece[24] = {*in, '\0'};
    if (in[0] == '%' && in[1] == 'p') {
      snprintf(piece, sizeof piece, "%ld", static_cast<long>(getpid()));
      ++in;
    } else if (in[0] == '%' && in[1] == '%') {
      ++in;
    }
    std::size_t length = strlen(piece);
    if (n + length + 1 > size) return false;
    memcpy(out + n, piece, length);
    n += length;
  }
  out[n] = '\0';
  return true;
}

void write_all(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    ssize_t n = write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // a full disk loses the trace's tail, never the job
    data += n;
    size -= static_cast<std::size_t>(n);
  }
}

// With the mutex held.
void flush_locked(std::uint64_t now) {
  if (g_trace.fd >= 0 && g_trace.used > 0) write_all(g_trace.fd, g_trace.buffer, g_trace.used);
  g_trace.used = 0;
  g_trace.last_flush_ns = now;
}

void append_locked(const char* line, std::size_t length) {
  if (g_trace.used + length > kBufferBytes) flush_locked(monotonic_ns());
  memcpy(g_trace.buffer + g_trace.used, line, length);
  g_trace.used += length;
  g_trace.written += length;
  ++g_trace.records;
}

void flush_at_exit() { trace_flush(); }

// Creates the file (never an existing one) and writes its first record.
// With the mutex held.
bool open_locked() {
  if (g_trace.fd >= 0) return true;
  if (g_trace.failed) return false;
  char path[sizeof g_runtime.settings.compute_trace_path + 32];
  if (!expand_path(path, sizeof path)) {
    g_trace.failed = true;
    GS_ERROR("GPUSHARE_COMPUTE_TRACE: the path is too long once %%p is expanded (the trace is off)");
    return false;
  }
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_APPEND, 0600);
  if (fd < 0) {
    g_trace.failed = true;
    // At the default log level: the user asked for this trace.
    GS_ERROR("GPUSHARE_COMPUTE_TRACE: cannot create '%s': %s (the trace is off)", path,
             strerror(errno));
    return false;
  }
  g_trace.fd = fd;
  g_trace.written = 0;
  g_trace.records = 0;
  g_trace.last_flush_ns = monotonic_ns();
  if (!g_trace.exit_hooked) {
    g_trace.exit_hooked = true;
    atexit(flush_at_exit);
  }
  char first[320];
  int length = snprintf(
      first, sizeof first,
      "{\"kind\":\"compute-trace-start\",\"version\":1,\"t_ns\":%llu,\"pid\":%ld,"
      "\"qos\":\"%s\",\"max_bytes\":%llu,\"clock\":\"monotonic\"}\n",
      static_cast<unsigned long long>(g_trace.last_flush_ns), static_cast<long>(getpid()),
      coord::job::qos() == kQosOpportunistic ? "opportunistic" : "production",
      static_cast<unsigned long long>(kTraceMaxBytes));
  if (length > 0 && static_cast<std::size_t>(length) < sizeof first) {
    append_locked(first, static_cast<std::size_t>(length));
  }
  return true;
}

}  // namespace

bool trace_enabled() {
  return g_runtime.settings.compute_trace_path[0] != '\0' && !g_trace.failed && !g_trace.ended;
}

TraceLine::TraceLine(const char* kind, std::uint64_t t_ns) {
  raw("{\"kind\":");
  str(nullptr, kind);
  num("version", 1);
  num("t_ns", t_ns);
}

void TraceLine::raw(const char* text) {
  std::size_t length = strlen(text);
  if (length_ + length + 2 > sizeof text_) {  // room for "}\n"
    overflow_ = true;
    return;
  }
  memcpy(text_ + length_, text, length);
  length_ += length;
}

void TraceLine::key(const char* name) {
  raw(",\"");
  raw(name);
  raw("\":");
}

TraceLine& TraceLine::num(const char* name, std::uint64_t value) {
  // By hand: snprintf's format parsing is most of a record's cost.
  char digits[24];
  char* at = digits + sizeof digits;
  *--at = '\0';
  do {
    *--at = static_cast<char>('0' + value % 10);
    value /= 10;
  } while (value != 0);
  key(name);
  raw(at);
  return *this;
}

TraceLine& TraceLine::real(const char* name, double value) {
  char digits[32];
  if (!(value == value) || value > 1e300 || value < -1e300) {
    snprintf(digits, sizeof digits, "null");  // JSON has no NaN or infinity
  } else {
    snprintf(digits, sizeof digits, "%.6g", value);
  }
  key(name);
  raw(digits);
  return *this;
}

TraceLine& TraceLine::str(const char* name, const char* value) {
  if (name != nullptr) key(name);
  raw("\"");
  for (const char* at = value; *at != '\0'; ++at) {
    auto ch = static_cast<unsigned char>(*at);
    char piece[8] = {static_cast<char>(ch), '\0'};
    if (ch == '"' || ch == '\\') {
      piece[0] = '\\';
      piece[1] = static_cast<char>(ch);
      piece[2] = '\0';
    } else if (ch < 0x20) {
      snprintf(piece, sizeof piece, "\\u%04x", ch);
    }
    raw(piece);
  }
  raw("\"");
  return *this;
}

TraceLine& TraceLine::flag(const char* name, bool value) {
  key(name);
  raw(value ? "true" : "false");
  return *this;
}

void TraceLine::emit() {
  if (overflow_ || !trace_enabled()) return;
  text_[length_++] = '}';
  text_[length_++] = '\n';
  pthread_mutex_lock(&g_trace.mutex);
  if (!g_trace.ended && open_locked()) {
    if (g_trace.written + length_ + kTailBytes > kTraceMaxBytes) {
      char last[200];
      int n = snprintf(last, sizeof last,
                       "{\"kind\":\"compute-trace-truncated\",\"version\":1,\"t_ns\":%llu,"
                       "\"max_bytes\":%llu,\"records\":%llu}\n",
                       static_cast<unsigned long long>(monotonic_ns()),
                       static_cast<unsigned long long>(kTraceMaxBytes),
                       static_cast<unsigned long long>(g_trace.records));
      if (n > 0 && static_cast<std::size_t>(n) < sizeof last) {
        append_locked(last, static_cast<std::size_t>(n));
      }
      g_trace.ended = true;
      flush_locked(monotonic_ns());
    } else {
      append_locked(text_, length_);
      std::uint64_t now = monotonic_ns();
      if (g_trace.used >= kFlushAtBytes || now - g_trace.last_flush_ns >= kFlushAfterNs) {
        flush_locked(now);
      }
    }
  }
  pthread_mutex_unlock(&g_trace.mutex);
}

const char* trace_pause_reason() {
  std::uint32_t bits = coord::job::pause_reasons();
  if (bits == (coord::kPauseOperator | coord::kPauseHostMemory)) return "operator+host-memory";
  if (bits == coord::kPauseHostMemory) return "host-memory";
  return "operator";
}

void trace_flush() {
  if (g_trace.fd < 0) return;
  pthread_mutex_lock(&g_trace.mutex);
  flush_locked(monotonic_ns());
  pthread_mutex_unlock(&g_trace.mutex);
}

void trace_after_fork() {
  pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
  std::memcpy(&g_trace.mutex, &fresh, sizeof fresh);
  if (g_trace.fd >= 0) close(g_trace.fd);
  g_trace.fd = -1;
  g_trace.failed = false;
  g_trace.ended = false;
  g_trace.used = 0;  // the parent's lines: the parent writes them
  g_trace.written = 0;
  g_trace.records = 0;
}

}  // namespace gpushare::interpose
