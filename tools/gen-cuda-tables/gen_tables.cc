// gen-cuda-tables: generates the CUDA driver entry-point tables at build time.
//
//   gen-cuda-tables CUDA_TYPEDEFS_H STUB_LIBCUDA_SO OUTPUT_DIR
//
// writes OUTPUT_DIR/driver_exports.inc and OUTPUT_DIR/proc_variants.inc.
//
// driver_exports.inc lists every symbol the toolkit's stub libcuda.so
// defines in its dynamic symbol table, one GPUSHARE_DRIVER_EXPORT(name) line
// each: the set a real driver exports, so the simulated driver exports the
// same.
//
// proc_variants.inc maps cuGetProcAddress requests to exported symbols.
// cudaTypedefs.h declares one typedef per ABI variant of each entry point:
// PFN_<name>_v<version>[_ptds|_ptsz]. The variants of a name, sorted by
// version, are exported as name, name_v2, name_v3, ... (the i-th is _v<i+1>).
// A per-thread typedef of version V is the twin of the newest ordinary
// variant not newer than V, with the suffix appended
// (PFN_cuMemcpyHtoD_v7000_ptds -> cuMemcpyHtoD_v2_ptds). Rows are sorted by
// (name, per_thread, version) so lookups can bisect by name.
#include <elf.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

struct Typedef {
  int version;
  std::string suffix;  // "", "_ptds" or "_ptsz"
};

bool read_file(const std::string& path, std::string* contents) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream buffer;
  buffer << in.rdbuf();
  *contents = buffer.str();
  return true;
}

// Defined global function symbols of an ELF64 shared object's .dynsym.
bool dynamic_symbols(const std::string& elf, std::set<std::string>* names, std::string* error) {
  if (elf.size() < sizeof(Elf64_Ehdr) || std::memcmp(elf.data(), ELFMAG, SELFMAG) != 0 ||
      elf[EI_CLASS] != ELFCLASS64) {
    *error = "not an ELF64 file";
    return false;
  }
  Elf64_Ehdr header;
  std::memcpy(&header, elf.data(), sizeof header);
  if (header.e_shoff + static_cast<std::uint64_t>(header.e_shnum) * sizeof(Elf64_Shdr) > elf.size()) {
    *error = "truncated section table";
    return false;
  }
  std::vector<Elf64_Shdr> sections(header.e_shnum);
  std::memcpy(sections.data(), elf.data() + header.e_shoff, header.e_shnum * sizeof(Elf64_Shdr));
  for (const Elf64_Shdr& section : sections) {
    if (section.sh_type != SHT_DYNSYM || section.sh_link >= sections.size()) continue;
    const Elf64_Shdr& strings = sections[section.sh_link];
    if (section.sh_offset + section.sh_size > elf.size() ||
        strings.sh_offset + strings.sh_size > elf.size()) {
      *error = "truncated .dynsym";
      return false;
    }
    for (std::uint64_t offset = 0; offset + sizeof(Elf64_Sym) <= section.sh_size;
         offset += sizeof(Elf64_Sym)) {
      Elf64_Sym symbol;
      std::memcpy(&symbol, elf.data() + section.sh_offset + offset, sizeof symbol);
      if (symbol.st_shndx == SHN_UNDEF || ELF64_ST_TYPE(symbol.st_info) != STT_FUNC) continue;
      if (symbol.st_name >= strings.sh_size) continue;
      names->insert(std::string(elf.data() + strings.sh_offset + symbol.st_name));
    }
    return true;
  }
  *error = "no .dynsym section";
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::cerr << "usage: gen-cuda-tables CUDA_TYPEDEFS_H STUB_LIBCUDA_SO OUTPUT_DIR\n";
    return 2;
  }
  std::string typedefs_text, stub_image, error;
  if (!read_file(argv[1], &typedefs_text)) {
    std::cerr << "gen-cuda-tables: error: cannot read " << argv[1] << "\n";
    return 1;
  }
  if (!read_file(argv[2], &stub_image)) {
    std::cerr << "gen-cuda-tables: error: cannot read " << argv[2] << "\n";
    return 1;
  }
  std::set<std::string> exports;
  if (!dynamic_symbols(stub_image, &exports, &error)) {
    std::cerr << "gen-cuda-tables: error: " << argv[2] << ": " << error << "\n";
    return 1;
  }

  std::map<std::string, std::vector<Typedef>> by_name;
  static const std::regex kTypedef(R"(\*\s*PFN_(cu[A-Za-z0-9_]*?)_v([0-9]+)(_ptds|_ptsz)?\s*\))");
  for (auto it = std::sregex_iterator(typedefs_text.begin(), typedefs_text.end(), kTypedef);
       it != std::sregex_iterator(); ++it) {
    by_name[(*it)[1]].push_back({std::stoi((*it)[2]), (*it)[3]});
  }
  if (by_name.empty()) {
    std::cerr << "gen-cuda-tables: error: no PFN_ typedefs found in " << argv[1] << "\n";
    return 1;
  }

  struct Row {
    std::string name;
    int version;
    bool per_thread;
    std::string symbol;
  };
  std::vector<Row> rows;
  for (auto& [name, typedefs] : by_name) {
    std::vector<int> ordinary;
    for (const Typedef& t : typedefs) {
      if (t.suffix.empty()) ordinary.push_back(t.version);
    }
    std::sort(ordinary.begin(), ordinary.end());
    ordinary.erase(std::unique(ordinary.begin(), ordinary.end()), ordinary.end());
    auto symbol_of = [&, name = name](std::size_t index) {
      return index == 0 ? name : name + "_v" + std::to_string(index + 1);
    };
    for (std::size_t i = 0; i < ordinary.size(); ++i) rows.push_back({name, ordinary[i], false, symbol_of(i)});
    for (const Typedef& t : typedefs) {
      if (t.suffix.empty()) continue;
      // The twin of the newest ordinary variant not newer than this one.
      std::size_t twin = 0;
      for (std::size_t i = 0; i < ordinary.size(); ++i) {
        if (ordinary[i] <= t.version) twin = i;
      }
      rows.push_back({name, t.version, true, symbol_of(twin) + t.suffix});
    }
  }
  std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
    return std::tie(a.name, a.per_thread, a.version) < std::tie(b.name, b.per_thread, b.version);
  });

  std::string out_dir = argv[3];
  std::ofstream variants(out_dir + "/proc_variants.inc");
  variants << "// Generated by gen-cuda-tables from " << argv[1] << "; do not edit.\n";
  for (const Row& row : rows) {
    variants << "{\"" << row.name << "\", " << row.version << ", "
             << (row.per_thread ? "true" : "false") << ", \"" << row.symbol << "\"},\n";
  }
  std::ofstream exported(out_dir + "/driver_exports.inc");
  exported << "// Generated by gen-cuda-tables from " << argv[2] << "; do not edit.\n";
  for (const std::string& name : exports) exported << "GPUSHARE_DRIVER_EXPORT(" << name << ")\n";
  if (!variants || !exported) {
    std::cerr << "gen-cuda-tables: error: cannot write to " << out_dir << "\n";
    return 1;
  }
  return 0;
}
