// Job records: what they may hold and the error each bad field gives.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "place/job/job.h"

using gpushare::place::ClassHint;
using gpushare::place::Job;
using gpushare::place::job_from_json;
using gpushare::place::Order;

namespace {

std::string error_of(const std::string& text) {
  auto job = job_from_json(nlohmann::json::parse(text));
  return job ? "" : job.error().message;
}

Job job_of(const std::string& text) {
  auto job = job_from_json(nlohmann::json::parse(text));
  if (!job) FAIL(job.error().message);
  return *job;
}

}  // namespace

TEST_CASE("a job with only an id takes the defaults", "[place][job]") {
  Job job = job_of(R"({"id":"a"})");
  CHECK(job.id.text == "a");
  CHECK_FALSE(job.id.number);
  CHECK(job.tenant.empty());
  CHECK(job.gpus == 1);
  CHECK(job.mem_bytes == 0);
  CHECK(job.hint == ClassHint::kAuto);
  CHECK(job.util == 0.0);
  CHECK_FALSE(job.queued_s);
  CHECK_FALSE(job.node_order);
  CHECK_FALSE(job.gpu_order);
}

TEST_CASE("every job field reads and unknown fields are ignored", "[place][job]") {
  Job job = job_of(R"({"kind":"job","id":42,"tenant":"t","gpus":4,"mem_bytes":1.6e10,
      "class":"production","util":0.5,"queued_s":30,"node_order":"spread",
      "gpu_order":"binpack","user":"ana","extra":{"x":[1]}})");
  CHECK(job.id.text == "42");
  CHECK(job.id.number == 42);
  CHECK(job.tenant == "t");
  CHECK(job.gpus == 4);
  CHECK(job.mem_bytes == 16000000000ull);
  CHECK(job.hint == ClassHint::kProduction);
  CHECK(job.util == 0.5);
  CHECK(job.queued_s == 30.0);
  CHECK(job.node_order == Order::kSpread);
  CHECK(job.gpu_order == Order::kBinpack);
  CHECK(job_of(R"({"id":"o","class":"opportunistic"})").hint == ClassHint::kOpportunistic);
}

TEST_CASE("a memory profile's peak_mem_bytes stands in for mem_bytes", "[place][job]") {
  CHECK(job_of(R"({"kind":"memory","id":"p","peak_mem_bytes":1024})").mem_bytes == 1024);
  CHECK(job_of(R"({"id":"p","peak_mem_bytes":1024,"mem_bytes":10})").mem_bytes == 10);
}

TEST_CASE("bad job fields are named", "[place][job]") {
  CHECK(error_of(R"([1,2])") == "a job must be a JSON object, not an array");
  CHECK(error_of(R"({"tenant":"t"})") == "the job has no 'id'");
  CHECK(error_of(R"({"id":""})") == "'id' must be a non-empty string or an integer (got \"\")");
  CHECK(error_of(R"({"id":1.5})") == "'id' must be a non-empty string or an integer (got 1.5)");
  CHECK(error_of(R"({"id":"a","kind":1})") == "'kind' must be a string, not a number");
  CHECK(error_of(R"({"id":"a","tenant":5})") == "'tenant' must be a string, not a number");
  CHECK(error_of(R"({"id":"a","gpus":0})") == "'gpus' must be at least 1 (got 0)");
  CHECK(error_of(R"({"id":"a","gpus":-2})") == "'gpus' must be at least 1 (got -2)");
  CHECK(error_of(R"({"id":"a","gpus":1.5})") == "'gpus' must be a whole number (got 1.5)");
  CHECK(error_of(R"({"id":"a","gpus":"2"})") == "'gpus' must be a whole number (got \"2\")");
  CHECK(error_of(R"({"id":"a","mem_bytes":-1})") == "'mem_bytes' must not be negative (got -1)");
  CHECK(error_of(R"({"id":"a","mem_bytes":-1.5})") ==
        "'mem_bytes' must not be negative (got -1.5)");
  CHECK(error_of(R"({"id":"a","mem_bytes":10.5})") ==
        "'mem_bytes' must be a whole number of bytes (got 10.5)");
  CHECK(error_of(R"({"id":"a","mem_bytes":"8GiB"})") ==
        "'mem_bytes' must be a number of bytes, not a string");
  CHECK(error_of(R"({"id":"a","peak_mem_bytes":-1})") ==
        "'peak_mem_bytes' must not be negative (got -1)");
  CHECK(error_of(R"({"id":"a","class":"batch"})") ==
        "'class' must be \"production\", \"opportunistic\" or \"auto\" (got \"batch\")");
  CHECK(error_of(R"({"id":"a","util":1.5})") == "'util' must be between 0.0 and 1.0 (got 1.5)");
  CHECK(error_of(R"({"id":"a","queued_s":-1})") == "'queued_s' must be at least 0.0 (got -1)");
  CHECK(error_of(R"({"id":"a","node_order":"tight"})") ==
        "'node_order' must be \"binpack\" or \"spread\" (got \"tight\")");
}

TEST_CASE("an id can be recovered from a record that is otherwise bad", "[place][job]") {
  auto id = gpushare::place::job_id_of(nlohmann::json::parse(R"({"id":"x","gpus":0})"));
  REQUIRE(id);
  CHECK(id->text == "x");
  CHECK_FALSE(gpushare::place::job_id_of(nlohmann::json::parse(R"({"gpus":0})")));
  CHECK(gpushare::place::quoted(*id) == "'x'");
  CHECK(gpushare::place::quoted({"7", 7}) == "7");
}
