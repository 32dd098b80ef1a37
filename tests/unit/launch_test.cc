#include "runner/launch.h"

#include <catch2/catch.hpp>
#include <map>

using gpushare::InstallPaths;
using gpushare::plan_launch;
using gpushare::Qos;
using gpushare::RunRequest;

namespace {

struct FakeEnv {
  std::map<std::string, std::string> values;
  gpushare::GetEnv getter() const {
    return [this](const char* key) -> const char* {
      auto it = values.find(key);
      return it == values.end() ? nullptr : it->second.c_str();
    };
  }
};

std::map<std::string, std::string> env_of(const gpushare::LaunchPlan& plan) {
  return {plan.environment.begin(), plan.environment.end()};
}

const InstallPaths kPaths{"/p/lib/gpushare/libgpushare-interpose.so", "/p/lib/gpushare/sim",
                          "/p/lib/gpushare/libgpushare-audit.so"};

}  // namespace

TEST_CASE("the interposer is prepended to LD_PRELOAD, keeping what is there", "[run]") {
  RunRequest request;
  request.command = {"python", "-q", "train.py"};
  FakeEnv empty;
  auto plan = plan_launch(request, kPaths, empty.getter());
  REQUIRE(plan);
  CHECK(env_of(*plan)["LD_PRELOAD"] == kPaths.interposer);
  CHECK(plan->argv == request.command);
  FakeEnv existing{{{"LD_PRELOAD", "/x/libfoo.so"}}};
  plan = plan_launch(request, kPaths, existing.getter());
  CHECK(env_of(*plan)["LD_PRELOAD"] == kPaths.interposer + ":/x/libfoo.so");
}

TEST_CASE("the audit module is prepended to LD_AUDIT when installed", "[run]") {
  RunRequest request;
  request.command = {"python"};
  FakeEnv existing{{{"LD_AUDIT", "/x/libaudit.so"}}};
  auto plan = plan_launch(request, kPaths, existing.getter());
  REQUIRE(plan);
  CHECK(env_of(*plan)["LD_AUDIT"] == kPaths.auditor + ":/x/libaudit.so");
  InstallPaths without = kPaths;
  without.auditor.clear();
  FakeEnv empty;
  plan = plan_launch(request, without, empty.getter());
  REQUIRE(plan);
  CHECK(env_of(*plan).count("LD_AUDIT") == 0);
}

TEST_CASE("defaults: production, named after the command, no limit", "[run]") {
  RunRequest request;
  request.command = {"/usr/bin/python3", "x.py"};
  FakeEnv env;
  auto vars = env_of(*plan_launch(request, kPaths, env.getter()));
  CHECK(vars["GPUSHARE_QOS"] == "production");
  CHECK(vars["GPUSHARE_JOB"] == "python3");
  CHECK(vars.count("GPUSHARE_MEM_LIMIT") == 0);
  CHECK(vars.count("LD_LIBRARY_PATH") == 0);
  CHECK(vars.count("CUDA_VISIBLE_DEVICES") == 0);
}

TEST_CASE("sizes are normalised to bytes, percentages passed on", "[run]") {
  RunRequest request;
  request.command = {"job"};
  FakeEnv env;
  request.mem_limit = "2GiB";
  CHECK(env_of(*plan_launch(request, kPaths, env.getter()))["GPUSHARE_MEM_LIMIT"] == "2147483648");
  request.mem_limit = "50%";
  CHECK(env_of(*plan_launch(request, kPaths, env.getter()))["GPUSHARE_MEM_LIMIT"] == "50%");
  // Above zero on the spec, as the interposer checks it: a small share of
  // any device is a limit, not zero.
  request.mem_limit = "0.5%";
  CHECK(env_of(*plan_launch(request, kPaths, env.getter()))["GPUSHARE_MEM_LIMIT"] == "0.5%");
  request.mem_limit = "none";
  CHECK(env_of(*plan_launch(request, kPaths, env.getter())).count("GPUSHARE_MEM_LIMIT") == 0);
}

TEST_CASE("invalid settings are refused before exec, naming the value", "[run]") {
  FakeEnv env;
  auto refused = [&](RunRequest request, const char* part) {
    request.command = {"job"};
    auto plan = plan_launch(request, kPaths, env.getter());
    REQUIRE_FALSE(plan);
    CHECK_THAT(plan.error().message, Catch::Contains(part));
  };
  RunRequest bad_size;
  bad_size.mem_limit = "8XB";
  refused(bad_size, "'8XB'");
  RunRequest zero;
  zero.mem_limit = "0";
  refused(zero, "must be above 0");
  RunRequest zero_pct;
  zero_pct.mem_limit = "0%";
  refused(zero_pct, "'0%': must be above 0");
  RunRequest big_pct;
  big_pct.mem_limit = "150%";
  refused(big_pct, "more than 100%");
  RunRequest gpu;
  gpu.gpu = "first";
  refused(gpu, "invalid GPU 'first'");
  RunRequest log;
  log.log_level = "loud";
  refused(log, "invalid log level 'loud'");
  RunRequest name;
  name.name = "a\nb";
  refused(name, "control character");
  RunRequest none;
  auto plan = plan_launch(none, kPaths, env.getter());
  REQUIRE_FALSE(plan);
}

TEST_CASE("properties refine the named options", "[run]") {
  RunRequest request;
  request.command = {"job"};
  request.properties = {"qos=opportunistic", "mem=1GiB", "name=n1", "gpu=GPU-1234", "log=debug"};
  REQUIRE(gpushare::apply_properties(request));
  CHECK(request.qos == gpushare::kQosOpportunistic);
  FakeEnv env;
  auto vars = env_of(*plan_launch(request, kPaths, env.getter()));
  CHECK(vars["GPUSHARE_QOS"] == "opportunistic");
  CHECK(vars["GPUSHARE_MEM_LIMIT"] == "1073741824");
  CHECK(vars["GPUSHARE_JOB"] == "n1");
  CHECK(vars["CUDA_VISIBLE_DEVICES"] == "GPU-1234");
  CHECK(vars["GPUSHARE_LOG"] == "debug");

  for (const char* bad : {"color=red", "qos=fast", "novalue", "=x"}) {
    RunRequest other;
    other.properties = {bad};
    INFO(bad);
    CHECK_FALSE(gpushare::apply_properties(other));
  }
  // The keys of common/properties.h, the same dispatch as gpushare-ctl set's.
  RunRequest unknown;
  unknown.properties = {"sm=30%"};
  gpushare::Status refused = gpushare::apply_properties(unknown);
  REQUIRE_FALSE(refused);
  CHECK(refused.error().message ==
        "unknown property 'sm' (known: mem-limit, qos, name, compute, gpu, log)");
}

TEST_CASE("the sim option puts the simulated driver first on LD_LIBRARY_PATH", "[run]") {
  RunRequest request;
  request.command = {"job"};
  request.sim = true;
  FakeEnv env{{{"LD_LIBRARY_PATH", "/opt/lib"}}};
  CHECK(env_of(*plan_launch(request, kPaths, env.getter()))["LD_LIBRARY_PATH"] ==
        "/p/lib/gpushare/sim:/opt/lib");
}

TEST_CASE("the interposer is found relative to the executable", "[run]") {
  FakeEnv env;
  auto exists = [](const std::string& path) {
    return path == "/opt/gs/bin/../lib/gpushare/libgpushare-interpose.so";
  };
  auto paths = gpushare::locate_install("/opt/gs/bin/gpushare-run", env.getter(), exists);
  REQUIRE(paths);
  CHECK(paths->interposer == "/opt/gs/bin/../lib/gpushare/libgpushare-interpose.so");
  CHECK(paths->sim_dir == "/opt/gs/bin/../lib/gpushare/sim");
  auto missing = gpushare::locate_install("/elsewhere/gpushare-run", env.getter(), exists);
  REQUIRE_FALSE(missing);
  CHECK_THAT(missing.error().message, Catch::Contains("GPUSHARE_INTERPOSER"));
  FakeEnv override_env{{{"GPUSHARE_INTERPOSER", "/tmp/x.so"}}};
  auto overridden = gpushare::locate_install("/elsewhere/gpushare-run", override_env.getter(),
                                             [](const std::string& p) { return p == "/tmp/x.so"; });
  REQUIRE(overridden);
  CHECK(overridden->interposer == "/tmp/x.so");
}

TEST_CASE("the compute trace's path goes to the job absolute, its %p kept", "[run]") {
  RunRequest request;
  request.command = {"job"};
  FakeEnv env;
  CHECK(env_of(*plan_launch(request, kPaths, env.getter())).count("GPUSHARE_COMPUTE_TRACE") == 0);
  request.compute_trace = "/evidence/compute-trace-%p.jsonl";
  CHECK(env_of(*plan_launch(request, kPaths, env.getter()))["GPUSHARE_COMPUTE_TRACE"] ==
        "/evidence/compute-trace-%p.jsonl");
  request.compute_trace = "trace-%p.jsonl";
  std::string relative = env_of(*plan_launch(request, kPaths, env.getter()))["GPUSHARE_COMPUTE_TRACE"];
  CHECK(relative.front() == '/');
  CHECK(relative.size() > std::string("/trace-%p.jsonl").size());
  CHECK(relative.substr(relative.size() - 15) == "/trace-%p.jsonl");
  request.compute_trace = "";
  CHECK_FALSE(plan_launch(request, kPaths, env.getter()));
}
