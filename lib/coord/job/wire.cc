#include "coord/job/wire.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vocab/job.h"
#include "vocab/uuid.h"

namespace gpushare::coord::job::wire {
namespace {

// A tiny bounded writer: every append is checked, and a failed one poisons
// the result.
struct Out {
  char* buffer;
  std::size_t size;
  std::size_t length = 0;
  bool ok = true;

  void put(const char* text, std::size_t n) {
    if (!ok || length + n >= size) {
      ok = false;
      return;
    }
    memcpy(buffer + length, text, n);
    length += n;
    buffer[length] = '\0';
  }
  void put(const char* text) { put(text, strlen(text)); }
  void number(std::uint64_t value) {
    char digits[24];
    int n = snprintf(digits, sizeof digits, "%llu", static_cast<unsigned long long>(value));
    put(digits, static_cast<std::size_t>(n));
  }
  void limit(std::uint64_t value) {
    if (value == kNoLimit) {
      put("null");
    } else {
      number(value);
    }
  }
};

// Length of the well-formed UTF-8 sequence at `s` (RFC 3629), or 0.
std::size_t utf8_length(const unsigned char* s, std::size_t available) {
  unsigned char c = s[0];
  std::size_t n;
  unsigned char low = 0x80, high = 0xbf;  // bounds of the second byte
  if (c < 0x80) return 1;
  if (c >= 0xc2 && c <= 0xdf) {
    n = 2;
  } else if (c >= 0xe0 && c <= 0xef) {
    n = 3;
    if (c == 0xe0) low = 0xa0;
    if (c == 0xed) high = 0x9f;  // no UTF-16 surrogates
  } else if (c >= 0xf0 && c <= 0xf4) {
    n = 4;
    if (c == 0xf0) low = 0x90;
    if (c == 0xf4) high = 0x8f;
  } else {
    return 0;
  }
  if (available < n) return 0;
  if (s[1] < low || s[1] > high) return 0;
  for (std::size_t i = 2; i < n; ++i) {
    if (s[i] < 0x80 || s[i] > 0xbf) return 0;
  }
  return n;
}

// A JSON string: quotes and backslashes escaped, control characters as
// \u00XX, invalid UTF-8 bytes replaced by '?', cut to `max_bytes` of input
// at a character boundary.
void put_string(Out& out, const char* text, std::size_t max_bytes) {
  const auto* s = reinterpret_cast<const unsigned char*>(text);
  std::size_t total = strnlen(text, max_bytes);
  out.put("\"");
  for (std::size_t i = 0; i < total;) {
    unsigned char c = s[i];
    if (c == '"' || c == '\\') {
      char escaped[2] = {'\\', static_cast<char>(c)};
      out.put(escaped, 2);
      ++i;
    } else if (c < 0x20 || c == 0x7f) {
      char escaped[8];
      snprintf(escaped, sizeof escaped, "\\u%04x", c);
      out.put(escaped, 6);
      ++i;
    } else {
      std::size_t n = utf8_length(s + i, total - i);
      if (n == 0) {
        out.put("?", 1);
        ++i;
      } else {
        out.put(text + i, n);
        i += n;
      }
    }
  }
  out.put("\"");
}

}  // namespace

std::size_t write_register(char* buffer, std::size_t size, const RegisterFields& fields) {
  if (size == 0) return 0;
  buffer[0] = '\0';
  Out out{buffer, size};
  out.put("{\"kind\":\"register\",\"version\":1,\"protocol\":");
  out.number(kProtocolVersion);
  out.put(",\"layout_version\":");
  out.number(kLayoutVersion);
  out.put(",\"name\":");
  put_string(out, fields.name, kMaxJobNameBytes);
  out.put(",\"qos\":");
  put_string(out, fields.qos, 32);
  if (fields.id_hint != 0) {
    out.put(",\"id_hint\":");
    out.number(fields.id_hint);
  }
  if (fields.compute_cap_ppm != kNoLimit) {
    out.put(",\"compute_cap_ppm\":");
    out.number(fields.compute_cap_ppm);
  }
  if (fields.tree) out.put(",\"tree\":true");
  out.put(",\"devices\":[");
  for (int i = 0; i < fields.device_count; ++i) {
    char uuid[kUuidTextBytes];
    format_uuid(fields.uuids[i], uuid);
    out.put(i == 0 ? "{\"uuid\":\"" : ",{\"uuid\":\"");
    out.put(uuid);
    out.put("\",\"mem_total_bytes\":");
    out.number(fields.mem_total_bytes[i]);
    out.put(",\"requested_limit_bytes\":");
    out.limit(fields.start_limit_bytes[i]);
    out.put(",\"mem_limit_bytes\":");
    out.limit(fields.mem_limit_bytes[i]);
    out.put("}");
  }
  out.put("]}\n");
  return out.ok ? out.length : 0;
}

bool find_string(const char* line, const char* key, char* out, std::size_t size) {
  if (size == 0) return false;
  char pattern[64];
  int n = snprintf(pattern, sizeof pattern, "\"%s\":\"", key);
  if (n <= 0 || static_cast<std::size_t>(n) >= sizeof pattern) return false;
  const char* start = strstr(line, pattern);
  if (start == nullptr) return false;
  const char* p = start + n;
  std::size_t length = 0;
  while (*p != '\0' && *p != '"') {
    char c = *p++;
    if (c == '\\' && *p != '\0') {
      char e = *p++;
      c = e == 'n' ? '\n' : e == 't' ? '\t' : e == 'u' ? '?' : e;
      if (e == 'u') {  // \uXXXX: shown as '?' (logs only)
        for (int i = 0; i < 4 && *p != '\0'; ++i) ++p;
      }
    }
    if (length + 1 < size) out[length++] = c;
  }
  out[length] = '\0';
  return *p == '"';
}

}  // namespace gpushare::coord::job::wire
