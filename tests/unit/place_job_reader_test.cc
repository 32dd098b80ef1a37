// The job reader's fast path against the careful one: over every input
// here, JobReader must give what JsonLinesReader and job_from_json give
// (the same jobs, errors, record numbers and positions), and the fast path
// must take the ordinary records itself.
#include <algorithm>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "../support/job_reader_oracle.h"
#include "common/jsonl.h"
#include "place/job/job.h"
#include "place/job/job_reader.h"
#include "place/job/job_scan.h"

namespace place = gpushare::place;

using gpushare::place::oracle::describe;
using gpushare::place::oracle::fast;
using gpushare::place::oracle::reference;

namespace {

place::ScanResult scan(const std::string& text) {
  place::Job job;
  std::size_t consumed = 0;
  return place::scan_job(text, &job, &consumed);
}

const std::string kGood =
    R"({"kind":"job","version":1,"id":"job-7","tenant":"vision","gpus":2,)"
    R"("mem_bytes":17179869184,"class":"production","util":0.005,"queued_s":12.5,)"
    R"("node_order":"spread","gpu_order":"binpack"})";

}  // namespace

TEST_CASE("the fast path reads ordinary job records itself", "[place][job_reader]") {
  for (const std::string& text :
       {kGood, std::string(R"({"id":"a"})"), std::string(R"({ "id" : 42 , "gpus" : 1 })"),
        std::string(R"({"id":"a","peak_mem_bytes":1024,"util":1})"),
        std::string("{\"id\":\"a\",\n\"x\":\"y\"}"), std::string(R"({"id":"a","u":1.5e3})")}) {
    INFO(text);
    place::Job job;
    std::size_t consumed = 0;
    CHECK(place::scan_job(text + "\n", &job, &consumed) == place::ScanResult::kJob);
    CHECK(consumed == text.size());
  }
  place::Job job;
  std::size_t consumed = 0;
  REQUIRE(place::scan_job(kGood, &job, &consumed) == place::ScanResult::kJob);
  CHECK(job.id.text == "job-7");
  CHECK(job.tenant == "vision");
  CHECK(job.gpus == 2);
  CHECK(job.mem_bytes == 17179869184u);
  CHECK(job.hint == place::ClassHint::kProduction);
  CHECK(job.util == 0.005);
  CHECK(job.queued_s == 12.5);
  CHECK(job.node_order == place::Order::kSpread);
  CHECK(job.gpu_order == place::Order::kBinpack);
}

TEST_CASE("the fast path leaves the unusual to nlohmann", "[place][job_reader]") {
  using place::ScanResult;
  CHECK(scan(R"({"id":"a\u0062"})") == ScanResult::kNotMine);        // an escape
  CHECK(scan("{\"id\":\"caf\xc3\xa9\"}") == ScanResult::kNotMine);   // UTF-8
  CHECK(scan(R"({"id":"a","x":{"y":1}})") == ScanResult::kNotMine);  // nested
  CHECK(scan(R"({"id":"a","x":[1]})") == ScanResult::kNotMine);
  CHECK(scan(R"({"id":"a","x":null})") == ScanResult::kNotMine);
  CHECK(scan(R"({"id":"a","gpus":-1})") == ScanResult::kNotMine);   // a sign
  CHECK(scan(R"({"id":"a","gpus":2.0})") == ScanResult::kNotMine);  // converted
  CHECK(scan(R"({"id":"a","id":"b"})") == ScanResult::kNotMine);    // repeated
  CHECK(scan(R"({"id":"a","gpus":0})") == ScanResult::kNotMine);    // an error
  CHECK(scan(R"({"gpus":1})") == ScanResult::kNotMine);             // no id
  CHECK(scan(R"({"id":"a","x":1e999})") == ScanResult::kNotMine);   // overflow
  CHECK(scan(R"({"id":"a","x":18446744073709551616})") == ScanResult::kNotMine);
  CHECK(scan(R"({"id":"a","x":01})") == ScanResult::kNotMine);
  CHECK(scan(R"(["id"])") == ScanResult::kNotMine);
  CHECK(scan(R"({"id":"a")") == ScanResult::kIncomplete);
  CHECK(scan(R"({"id":"a","gpus":12)") == ScanResult::kIncomplete);  // 12 or 123?
  CHECK(scan(R"({"id":"a)") == ScanResult::kIncomplete);
}

TEST_CASE("the job reader gives what the careful reader gives", "[place][job_reader]") {
  const std::string huge_line = R"({"id":"long","pad":")" + std::string(3 << 20, 'x') + "\"}\n";
  std::vector<std::string> inputs = {
      "",
      "\n\n  \r\n",
      kGood + "\n",
      kGood,                                 // no newline at the end
      kGood + "\n" + kGood + "\n",           // a repeated id: the placer's error, not the reader's
      R"({"id":"a"} {"id":"b"}{"id":"c"})",  // several on a line
      "{\n  \"id\": \"pretty\",\n  \"gpus\": 3\n}\n",
      R"({"id":7,"mem_bytes":1.6e10})",
      R"({"id":9223372036854775807} {"id":9223372036854775808})",
      R"({"id":"a","mem_bytes":9223372036854775807} {"id":"b","mem_bytes":9223372036854775808})",
      R"({"id":"a","mem_bytes":18446744073709551616})",
      R"({"id":"a","mem_bytes":-0} {"id":"b","util":-0.0} {"id":"c","gpus":1e9})",
      R"({"id":"a","gpus":1000000000} {"id":"b","gpus":1000000001})",
      R"({"id":"a","util":1.0000000000000001} {"id":"b","util":1.01} {"id":"c","queued_s":1e308})",
      R"({"id":"a","queued_s":1e309} {"id":"b","util":4.9e-324} {"id":"c","util":0.1e-5})",
      R"({"id":"a","id":"b"} {"id":"a","gpus":1,"gpus":2})",
      R"({"id":"a","mem_bytes":5,"peak_mem_bytes":-1} {"id":"b","peak_mem_bytes":7})",
      R"({"id":"a","class":"batch"} {"id":"b","class":1} {"id":"c","node_order":"x"})",
      R"({"id":""} {"id":"t\u0001b"} {"id":true} {"id":1.5} {"id":-3})",
      R"({"id":"a","tenant":""} {"id":"b","tenant":"caf\u00e9"} {"id":"c","kind":5})",
      "{\"id\":\"a\x7f\"}\n{\"id\":\"a\x01\"}\n{\"id\":\"a\0b\"}\n",
      std::string("{\"id\":\"a\0\"}\n{\"id\":\"b\"}\n", 20),  // NUL inside a string
      std::string("\0{\"id\":\"b\"}\n", 13),                  // NUL between records
      "{\"id\":\"\xff\xfe\"}\n{\"id\":\"ok\"}\n",             // not UTF-8
      "\xef\xbb\xbf{\"id\":\"bom\"}\n",                       // a byte order mark
      R"({"id":"a","gpus":01} {"id":"b"})",
      "{\"id\":\"a\"\n{\"id\":\"b\"}\n",  // truncated line
      "{\"id\":\"a\",\"gpus\":",          // truncated at the end
      "{\"id\":\"a\",\"gpus\":2",
      "{\"id\":\"a",
      "[1,2]\n\"job\"\n42\nnull\n{}\n",
      "1{\"id\":\"x\"}\n{\"id\":\"y\"}",  // what a number's end takes with it
      R"({"id":"a","x":[1,{"y":null}],"z":{"w":false}} {"id":"b","x":tru})",
      R"({"id":"a","x":1.} {"id":"b","x":.5} {"id":"c","x":1e} {"id":"d","x":1E+2})",
      R"({"id":"a",} {"id":"b" "gpus":1} {"id" "b"} {,} {"id":"c"})",
      "{\"id\":\"a\",\"gpus\":2}garbage\n{\"id\":\"b\"}\n",
      huge_line + kGood + "\n",  // longer than the reader's buffer
  };
  for (const std::string& input : inputs) {
    INFO("input: " << input.substr(0, 200));
    CHECK(fast(input) == reference(input));
  }
}

TEST_CASE("the job reader agrees with the careful reader on damaged records",
          "[place][job_reader]") {
  // A seeded fuzz: records cut, bytes changed, inserted and removed. Each
  // input holds a few records, so resynchronisation is compared too.
  std::mt19937 random(26);
  const std::string alphabet = "{}[]:,\"\\ \n\t.-+eE0123456789abcdefgijnrstu\x01\x7f\xc3\xa9";
  const std::vector<std::string> seeds = {
      kGood, R"({"id":12,"gpus":8,"mem_bytes":1073741824,"class":"auto","util":0.25})",
      R"({"id":"p","peak_mem_bytes":5e9,"tenant":"t","queued_s":3})"};
  int differences = 0;
  for (int round = 0; round < 3000; ++round) {
    std::string input;
    for (int r = 0; r < 3; ++r) {
      std::string record = seeds[random() % seeds.size()];
      int edits = static_cast<int>(random() % 4);
      for (int e = 0; e < edits && !record.empty(); ++e) {
        std::size_t at = random() % record.size();
        char c = alphabet[random() % alphabet.size()];
        switch (random() % 4) {
          case 0:
            record[at] = c;
            break;
          case 1:
            record.insert(record.begin() + static_cast<std::ptrdiff_t>(at), c);
            break;
          case 2:
            record.erase(at, 1);
            break;
          default:
            record.resize(at);
        }
      }
      input += record + "\n";
    }
    std::vector<std::string> expected = reference(input);
    std::vector<std::string> got = fast(input);
    if (got != expected) {
      ++differences;
      INFO("input: " << input);
      CHECK(got == expected);
    }
  }
  CHECK(differences == 0);
}

TEST_CASE("the job reader reads records cut anywhere by the input", "[place][job_reader]") {
  // Over 1 MiB of records, so some cross the reader's buffer; then the
  // same input handed over a few bytes at a time.
  std::string input;
  for (int i = 0; i < 12000; ++i) {
    input += R"({"kind":"job","version":1,"id":"job-)" + std::to_string(i) +
             R"(","tenant":"t","gpus":)" + std::to_string(1 + i % 8) +
             R"(,"mem_bytes":)" + std::to_string(1000003ull * static_cast<unsigned>(i)) + R"(,"util":0.)" +
             std::to_string(i % 1000) + "}\n";
    if (i % 997 == 0) input += "{\"id\":\"bad\",\"gpus\":0}\n{\"id\":\n";
  }
  REQUIRE(input.size() > (1u << 20));
  std::vector<std::string> expected = reference(input);
  CHECK(fast(input) == expected);
  for (std::size_t piece : {1u, 7u, 4096u}) {
    INFO("pieces of " << piece << " bytes");
    CHECK(fast(input, piece) == expected);
  }
}
