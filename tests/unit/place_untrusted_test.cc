// gpushare-place's input is untrusted: each test plays the attacker
// (a hostile cluster file or job stream) and checks the defence.
//
//   - memory totals saturate, so huge resident jobs cannot wrap a GPU's
//     used total and make a full GPU look empty;
//   - names and ids with control characters are refused, so a newline
//     cannot split a record of --format slurm or env;
//   - diagnostics never pass control characters or bytes that are not
//     UTF-8 to the terminal.
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "common/diag.h"
#include "place/cluster/cluster_toml.h"
#include "place/format.h"
#include "place/job/job.h"
#include "place/placer.h"

using gpushare::place::Job;
using gpushare::place::PlacementStatus;
using gpushare::place::Placer;

namespace {

/// One 80GiB GPU running opportunistic jobs of the given sizes.
std::string gpu_running(std::initializer_list<std::string> mem_bytes) {
  std::string text =
      "[[tenant]]\nname = \"t\"\nquota_gpus = 8\n"
      "[[node]]\nname = \"n1\"\n[[node.gpu]]\nindex = 0\nmem = \"80GiB\"\n";
  int n = 0;
  for (const std::string& bytes : mem_bytes) {
    text += "[[node.gpu.job]]\nid = \"r" + std::to_string(n++) +
            "\"\nclass = \"opportunistic\"\ntenant = \"t\"\nmem_bytes = " + bytes + "\n";
  }
  return text;
}

Job job_of(const std::string& json_text) {
  auto job = gpushare::place::job_from_json(nlohmann::json::parse(json_text));
  if (!job) FAIL(job.error().message);
  return *job;
}

/// What diag::error writes for `message`.
std::string diag_output(const std::string& message) {
  std::FILE* file = std::tmpfile();
  REQUIRE(file != nullptr);
  gpushare::diag::set_stream(file);
  gpushare::diag::error(message);
  gpushare::diag::set_stream(nullptr);
  std::rewind(file);
  std::string out;
  char buffer[256];
  for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, file)) > 0;) out.append(buffer, n);
  std::fclose(file);
  return out;
}

bool has_raw_control(const std::string& text) {
  for (unsigned char c : text) {
    if ((c < 0x20 && c != '\n') || c == 0x7f || c == 0xff) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("resident jobs whose memory sums past 2^64 leave the GPU full", "[place][untrusted]") {
  // 2^63-1 + 2^63-1 + 2 is 2^64: wrapped, the GPU would read as empty.
  auto cluster = gpushare::place::parse_cluster(
      gpu_running({"9223372036854775807", "9223372036854775807", "2"}), "c.toml");
  REQUIRE(cluster);
  CHECK(cluster->nodes[0].gpus[0].mem_used_bytes == UINT64_MAX);
  Placer placer(std::move(*cluster));
  auto placement = placer.place(
      job_of(R"({"id":"x","tenant":"t","class":"opportunistic","mem_bytes":8589934592})"));
  CHECK(placement.status == PlacementStatus::kUnplaced);
}

TEST_CASE("placing onto a GPU whose used memory is near 2^64 does not wrap it",
          "[place][untrusted]") {
  auto cluster = gpushare::place::parse_cluster(
      gpu_running({"9223372036854775807", "9223372036854775807"}), "c.toml");
  REQUIRE(cluster);
  Placer placer(std::move(*cluster));
  // Opportunistic memory can spill to the host, so a production job still
  // fits; its 8GiB must not carry the used total round to a small number.
  auto production = placer.place(
      job_of(R"({"id":"p","tenant":"t","class":"production","mem_bytes":8589934592})"));
  CHECK(production.status == PlacementStatus::kPlaced);
  CHECK(placer.cluster().nodes[0].gpus[0].mem_used_bytes == UINT64_MAX);
  auto opportunistic = placer.place(
      job_of(R"({"id":"x","tenant":"t","class":"opportunistic","mem_bytes":8589934592})"));
  CHECK(opportunistic.status == PlacementStatus::kUnplaced);
}

TEST_CASE("a job id with a newline is refused and cannot split slurm output",
          "[place][untrusted]") {
  auto record = nlohmann::json::parse(R"({"id":"a\nsrun rm -rf /","tenant":"t"})");
  auto job = gpushare::place::job_from_json(record);
  REQUIRE_FALSE(job);
  CHECK(job.error().message ==
        "'id' must not contain control characters (U+000A at byte 2) (got \"a\\nsrun rm -rf /\")");
  // The record's error placement carries no id, so its slurm line is one line.
  CHECK_FALSE(gpushare::place::job_id_of(record));
  auto placement = gpushare::place::input_error(gpushare::place::job_id_of(record), "invalid");
  CHECK(gpushare::place::slurm_arguments(placement).find('\n') == std::string::npos);

  auto tenant =
      gpushare::place::job_from_json(nlohmann::json::parse(R"({"id":"j","tenant":"t\u001b[2J"})"));
  REQUIRE_FALSE(tenant);
  CHECK(tenant.error().message.rfind("'tenant' must not contain control characters (U+001B", 0) ==
        0);
}

TEST_CASE("names in the cluster file may not hold control characters", "[place][untrusted]") {
  // A TOML escape puts a newline in a node name without a raw one in the file.
  auto cluster = gpushare::place::parse_cluster(
      "[[node]]\nname = \"n1\\nn2\"\n[[node.gpu]]\nindex = 0\nmem = \"8GiB\"\n", "c.toml");
  REQUIRE_FALSE(cluster);
  CHECK(cluster.error().message.rfind(
            "c.toml:2:8: 'name' must not contain control characters (U+000A at byte 3)", 0) == 0);
  auto id = gpushare::place::parse_cluster(
      gpu_running({"1"}) + "[[node.gpu.job]]\nid = \"a\\u001b\"\n", "c.toml");
  REQUIRE_FALSE(id);
  CHECK(id.error().message.find("'id' must not contain control characters (U+001B at byte 2)") !=
        std::string::npos);
}

TEST_CASE("printable escapes control characters and bytes that are not UTF-8",
          "[place][untrusted][diag]") {
  using gpushare::diag::printable;
  CHECK(printable("plain text, tabs\tand UTF-8: caf\xc3\xa9") ==
        "plain text, tabs\tand UTF-8: caf\xc3\xa9");
  CHECK(printable("\x1b[2Jclear") == "\\x1b[2Jclear");
  CHECK(printable("a\nb\rc\x7f") == "a\\nb\\rc\\x7f");
  CHECK(printable("\xff\xfe") == "\\xff\\xfe");
  CHECK(printable("\xc2\x9b"
                  "31m") == "\\xc2\\x9b31m");             // C1 CSI
  CHECK(printable("\xe2\x82") == "\\xe2\\x82");           // cut short
  CHECK(printable("\xc0\xaf") == "\\xc0\\xaf");           // overlong '/'
  CHECK(printable("\xed\xa0\x80") == "\\xed\\xa0\\x80");  // a surrogate
}

TEST_CASE("an excerpt is printable and its caret still points at the column",
          "[place][untrusted][diag]") {
  // Column 4 is 'x', after an escape that shows as four characters.
  CHECK(gpushare::diag::excerpt("a\x1b"
                                "bx",
                                4) == "  a\\x1bbx\n        ^");
  CHECK(gpushare::diag::excerpt("\tk = 1", 2) == "  \tk = 1\n  \t^");
  CHECK(gpushare::diag::excerpt("ab", 5) == "  ab\n      ^");
}

TEST_CASE("diagnostics never write raw control bytes", "[place][untrusted][diag]") {
  std::string out = diag_output("c.toml:1:1: bad \x1b]0;owned\x07 name\n  \xff\x1b[31mline");
  CHECK_FALSE(has_raw_control(out));
  CHECK(out.find("bad \\x1b]0;owned\\x07 name\n  \\xff\\x1b[31mline\n") != std::string::npos);
}
