// gpushare-nvml-nullcall: resolves every name of a list through dlsym in
// libnvidia-ml.so.1 and calls each with null arguments, to prove that no
// entry point crashes on them (what a careless or probing tool does).
//
//   gpushare-nvml-nullcall NAMES_FILE
//
// NAMES_FILE: one entry point a line ('#' comments allowed). Three passes:
// before nvmlInit, after it with every argument null, and after it with a
// valid device handle (device 0) as the first argument and the rest null,
// which reaches the checks of output pointers behind the handle check.
// nvmlShutdown is called in no pass but the first, and nvmlInit again
// after any name that could drop the library's initialisation.
//
// Prints one JSON line per pass with the counts of return codes, and
// exits 0 when all names resolved and every call returned, 1 when a name
// is missing, 2 on a bad command line. A crash is the test failing.
#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <vector>

namespace {

using Entry = int (*)(std::uintptr_t, std::uintptr_t, std::uintptr_t, std::uintptr_t,
                      std::uintptr_t, std::uintptr_t);

struct Named {
  std::string name;
  Entry entry;
};

bool is_string_result(const std::string& name) { return name == "nvmlErrorString"; }

void report(const char* pass, const std::map<int, int>& results, std::size_t calls) {
  std::printf(
      "{\"kind\":\"nvml-nullcall\",\"version\":1,\"pass\":\"%s\",\"calls\":%zu,\"results\":{", pass,
      calls);
  bool first = true;
  for (auto [code, count] : results) {
    std::printf("%s\"%d\":%d", first ? "" : ",", code, count);
    first = false;
  }
  std::printf("}}\n");
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr,
                 "gpushare-nvml-nullcall: error: usage: gpushare-nvml-nullcall NAMES_FILE\n");
    return 2;
  }
  std::ifstream file(argv[1]);
  if (!file) {
    std::fprintf(stderr, "gpushare-nvml-nullcall: error: cannot read %s\n", argv[1]);
    return 2;
  }
  void* library = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    std::fprintf(stderr, "gpushare-nvml-nullcall: error: %s\n", dlerror());
    return 1;
  }
  std::vector<Named> names;
  int missing = 0;
  for (std::string line; std::getline(file, line);) {
    if (line.empty() || line[0] == '#') continue;
    void* symbol = dlsym(library, line.c_str());
    if (symbol == nullptr) {
      std::fprintf(stderr, "gpushare-nvml-nullcall: error: libnvidia-ml.so.1 has no %s\n",
                   line.c_str());
      ++missing;
      continue;
    }
    names.push_back({line, reinterpret_cast<Entry>(symbol)});
  }
  if (missing > 0) return 1;
  auto init = reinterpret_cast<int (*)()>(dlsym(library, "nvmlInit_v2"));
  auto handle_by_index =
      reinterpret_cast<int (*)(unsigned, void**)>(dlsym(library, "nvmlDeviceGetHandleByIndex_v2"));
  if (init == nullptr || handle_by_index == nullptr) {
    std::fprintf(stderr, "gpushare-nvml-nullcall: error: no nvmlInit_v2 or handle lookup\n");
    return 1;
  }

  // Pass 1: nothing initialised.
  std::map<int, int> results;
  for (const Named& named : names) {
    if (is_string_result(named.name)) continue;
    ++results[named.entry(0, 0, 0, 0, 0, 0)];
  }
  report("uninitialised", results, names.size());

  // Passes 2 and 3: initialised, with a null and with a real device handle.
  for (int pass = 2; pass <= 3; ++pass) {
    results.clear();
    if (int status = init(); status != 0) {
      std::fprintf(stderr, "gpushare-nvml-nullcall: error: nvmlInit_v2 returned %d\n", status);
      return 1;
    }
    void* device = nullptr;
    if (pass == 3 && handle_by_index(0, &device) != 0) {
      std::fprintf(stderr, "gpushare-nvml-nullcall: error: no device 0\n");
      return 1;
    }
    for (const Named& named : names) {
      if (is_string_result(named.name) || named.name == "nvmlShutdown") continue;
      ++results[named.entry(reinterpret_cast<std::uintptr_t>(device), 0, 0, 0, 0, 0)];
      // nvmlInit* only adds references; anything else leaves them as they were.
    }
    report(pass == 2 ? "null" : "device", results, names.size());
  }
  return 0;
}
