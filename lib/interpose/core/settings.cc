#include "interpose/core/settings.h"

#include <cstdio>
#include <cstring>
#include <string_view>

#include "vocab/env.h"

namespace gpushare::interpose {
namespace {

void copy_bounded(char* destination, std::size_t capacity, const char* source) {
  std::size_t length = std::strlen(source);
  if (length >= capacity) length = capacity - 1;
  std::memcpy(destination, source, length);
  destination[length] = '\0';
}

// An on/off variable: unset or empty leaves `field` as it is; anything but
// "on" or "off" is an invalid setting (false, with the error written).
bool read_switch(GetEnvFunction getenv, const char* name, bool* field, Settings* settings) {
  const char* value = getenv(name);
  if (value == nullptr || *value == '\0') return true;
  if (std::strcmp(value, "on") == 0 || std::strcmp(value, "off") == 0) {
    *field = std::strcmp(value, "on") == 0;
    return true;
  }
  std::snprintf(settings->error, sizeof settings->error, "invalid %s '%s': expected on or off",
                name, value);
  return false;
}

}  // namespace

void read_settings(GetEnvFunction getenv, Settings* settings) {
  *settings = Settings{};
  const char* disable = getenv(env::kDisable);
  settings->disabled = disable != nullptr && std::strcmp(disable, "1") == 0;

  if (const char* level = getenv(env::kLog); level != nullptr && *level != '\0') {
    std::string_view text(level);
    if (text == "error") {
      settings->log_level = LogLevel::kError;
    } else if (text == "warning") {
      settings->log_level = LogLevel::kWarning;
    } else if (text == "info") {
      settings->log_level = LogLevel::kInfo;
    } else if (text == "debug") {
      settings->log_level = LogLevel::kDebug;
    } else {
      std::snprintf(settings->error, sizeof settings->error,
                    "invalid GPUSHARE_LOG '%s': expected error, warning, info or debug", level);
      return;
    }
  }

  if (const char* qos = getenv(env::kQos); qos != nullptr && *qos != '\0') {
    if (!parse_qos(qos, &settings->qos)) {
      std::snprintf(settings->error, sizeof settings->error, "invalid GPUSHARE_QOS '%s': %s", qos,
                    kQosExpected);
      return;
    }
  }

  if (!read_switch(getenv, env::kSpill, &settings->spill, settings) ||
      !read_switch(getenv, env::kSuspendable, &settings->suspendable, settings) ||
      !read_switch(getenv, env::kLaunchQueue, &settings->launch_queue, settings)) {
    return;
  }

  if (const char* limit = getenv(env::kMemLimit); limit != nullptr) {
    std::string_view unit;
    // Parsed here once; the job's limits' owner (coord/job/limits.h)
    // resolves it against each device once CUDA is initialised.
    SizeError error = parse_size_spec(limit, &settings->mem_limit, &unit);
    if (error != SizeError::kNone) {
      std::snprintf(settings->error, sizeof settings->error,
                    "invalid GPUSHARE_MEM_LIMIT: '%s' %s%s%s", limit, size_error_reason(error),
                    error == SizeError::kUnknownUnit ? " " : "",
                    error == SizeError::kUnknownUnit ? kSizeUnitsHint : "");
      return;
    }
    if (!size_spec_positive(settings->mem_limit)) {
      std::snprintf(settings->error, sizeof settings->error,
                    "invalid GPUSHARE_MEM_LIMIT: '%s' must be above 0", limit);
      return;
    }
    settings->has_mem_limit = true;
  }

  if (const char* compute = getenv(env::kCompute);
      compute != nullptr && *compute != '\0' && std::strcmp(compute, "none") != 0) {
    if (!parse_compute_percent(compute, &settings->compute_cap_ppm)) {
      std::snprintf(settings->error, sizeof settings->error, "invalid GPUSHARE_COMPUTE '%s': %s",
                    compute, kComputeExpected);
      return;
    }
  }
  const char* debug = getenv(env::kDebug);
  settings->debug_client = debug != nullptr && *debug != '\0';

  // Empty when unset: the coordinator client then names the job after the process.
  if (const char* job = getenv(env::kJob); job != nullptr) {
    copy_bounded(settings->job_name, sizeof settings->job_name, job);
  }
  if (const char* tree = getenv(env::kTree); tree != nullptr && *tree != '\0') {
    if (std::strlen(tree) >= sizeof settings->tree_path) {
      std::snprintf(settings->error, sizeof settings->error,
                    "GPUSHARE_TREE is longer than %zu bytes", sizeof settings->tree_path - 1);
      return;
    }
    copy_bounded(settings->tree_path, sizeof settings->tree_path, tree);
  }
  if (const char* trace = getenv(env::kComputeTrace); trace != nullptr && *trace != '\0') {
    if (std::strlen(trace) >= sizeof settings->compute_trace_path) {
      std::snprintf(settings->error, sizeof settings->error,
                    "GPUSHARE_COMPUTE_TRACE is longer than %zu bytes",
                    sizeof settings->compute_trace_path - 1);
      return;
    }
    copy_bounded(settings->compute_trace_path, sizeof settings->compute_trace_path, trace);
  }
  if (const char* socket = getenv(env::kSocket); socket != nullptr) {
    if (std::strlen(socket) >= sizeof settings->socket_path) {
      std::snprintf(settings->error, sizeof settings->error,
                    "GPUSHARE_SOCKET is longer than %zu bytes", sizeof settings->socket_path - 1);
      return;
    }
    copy_bounded(settings->socket_path, sizeof settings->socket_path, socket);
  }
  const char* launched = getenv(env::kLaunchedFor);
  settings->launched_for_coordinator = launched != nullptr && *launched != '\0';
}

}  // namespace gpushare::interpose
