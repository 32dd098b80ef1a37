#include <catch2/catch.hpp>
#include <string>

#include "simgpu/module_image.h"

using namespace gpushare::simgpu;

namespace {

struct Parsed {
  ImageError error;
  ModuleImage module;
  std::string message;
};

Parsed parse(const void* image) {
  Parsed parsed{};
  char message[256];
  parsed.error = parse_module_image(image, 1000000, &parsed.module, message, sizeof message);
  parsed.message = message;
  return parsed;
}

}  // namespace

TEST_CASE("the text module format names kernels and their durations", "[sim]") {
  Parsed parsed = parse(
      "gpushare-sim-module 1\n"
      "# a comment\n"
      "\n"
      "kernel forward 1500\n"
      "  kernel backward\t3000  \n"
      "kernel gpushare_spin 7\n");
  REQUIRE(parsed.error == ImageError::kNone);
  REQUIRE(parsed.module.kernel_count == 3);
  KernelInfo scratch;
  const KernelInfo* backward = find_kernel(parsed.module, "backward", 1, &scratch);
  REQUIRE(backward != nullptr);
  CHECK(backward->duration_ns == 3000000);
  CHECK_FALSE(backward->spin);
  const KernelInfo* spin = find_kernel(parsed.module, "gpushare_spin", 1, &scratch);
  REQUIRE(spin != nullptr);
  CHECK(spin->spin);  // its duration is its parameter, whatever the file says
  CHECK(find_kernel(parsed.module, "missing", 1, &scratch) == nullptr);
  release_module_image(&parsed.module);
}

TEST_CASE("text module errors name the line", "[sim]") {
  struct Case {
    const char* image;
    const char* message;
  } cases[] = {
      {"gpushare-sim-module 1\nkernel a 10\nkernal b 10\n",
       "line 3: expected 'kernel NAME MICROSECONDS'"},
      {"gpushare-sim-module 1\nkernel a\n", "line 2: expected a duration in whole microseconds"},
      {"gpushare-sim-module 1\nkernel a 1.5\n",
       "line 2: expected a duration in whole microseconds"},
      {"gpushare-sim-module 1\nkernel 9a 10\n", "line 2: expected a kernel name"},
      {"gpushare-sim-module 1\nkernel a 10\nkernel a 20\n", "line 3: kernel declared twice"},
      {"gpushare-sim-module 2\nkernel a 10\n", "line 1: unsupported text module version"},
  };
  for (const Case& c : cases) {
    Parsed parsed = parse(c.image);
    INFO(c.image);
    CHECK(parsed.error == ImageError::kInvalidImage);
    CHECK(parsed.message.rfind(c.message, 0) == 0);
    CHECK(parsed.module.kernels == nullptr);
  }
}

TEST_CASE("PTX kernels are its .entry names, comments aside", "[sim]") {
  Parsed parsed = parse(
      "// .entry not_me(\n"
      ".version 7.0\n.target sm_70\n.address_size 64\n"
      "/* .entry nor_me( */\n"
      ".visible .entry gpushare_spin(.param .u64 p)\n{\n ret;\n}\n"
      ".entry\n  second_kernel()\n{ ret; }\n"
      ".func helper() { ret; }\n");
  REQUIRE(parsed.error == ImageError::kNone);
  CHECK(parsed.module.kind == ImageKind::kPtx);
  REQUIRE(parsed.module.kernel_count == 2);
  CHECK(std::string(parsed.module.kernels[0].name) == "gpushare_spin");
  CHECK(parsed.module.kernels[0].spin);
  CHECK(std::string(parsed.module.kernels[1].name) == "second_kernel");
  CHECK(parsed.module.kernels[1].duration_ns == 1000000);  // the default
  KernelInfo scratch;
  CHECK(find_kernel(parsed.module, "helper", 1, &scratch) == nullptr);
  release_module_image(&parsed.module);

  Parsed broken = parse(".target sm_70\n.entry k() { ret; }\n");
  CHECK(broken.error == ImageError::kInvalidPtx);
  CHECK(broken.message.find("without a .version") != std::string::npos);
}

TEST_CASE("cubin and fatbin images resolve any name with the default duration", "[sim]") {
  const unsigned char elf[] = {0x7f, 'E', 'L', 'F', 2, 1, 1, 0};
  const unsigned char fatbin[] = {0x50, 0xED, 0x55, 0xBA, 1, 0, 0, 0};
  for (const unsigned char* image : {elf, fatbin}) {
    Parsed parsed = parse(image);
    REQUIRE(parsed.error == ImageError::kNone);
    CHECK(parsed.module.any_name);
    KernelInfo scratch;
    const KernelInfo* kernel = find_kernel(parsed.module, "anything", 250000, &scratch);
    REQUIRE(kernel != nullptr);
    CHECK(kernel->duration_ns == 250000);
    CHECK(find_kernel(parsed.module, "gpushare_spin", 250000, &scratch)->spin);
  }
}

TEST_CASE("images of no known kind are refused", "[sim]") {
  CHECK(parse("hello world").error == ImageError::kInvalidImage);
  CHECK(parse("").error == ImageError::kInvalidImage);
  CHECK(parse(nullptr).error == ImageError::kInvalidImage);
}
