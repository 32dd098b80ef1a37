// libgpushare-audit.so: the dynamic loader's audit interface (rtld-audit(7),
// LD_AUDIT), which gpushare-run sets next to LD_PRELOAD. It closes the
// routes to the driver that LD_PRELOAD cannot see:
//
//   - a library loaded with RTLD_DEEPBIND binds its own dependencies,
//     libcuda.so.1 among them, before the preloaded interposer;
//   - a library that does dlopen + dlsym + cuGetProcAddress from such a
//     library reaches glibc's dlsym, not ours;
//   - a library loaded with dlmopen(LM_ID_NEWLM) lives in a namespace of its
//     own, with its own copy of the driver and no preload at all.
//
// The loader asks the auditor about every binding to an object it flagged
// (la_symbind64), at lazy binding, at load with BIND_NOW, and for dlsym,
// in every namespace, and uses the address the auditor answers. So:
//   - a binding to a driver (libcuda.so*) or NVML (libnvidia-ml.so*) entry
//     point the interposer wraps is answered with the interposer's wrapper;
//   - any other binding to a copy of the driver in another namespace is
//     answered with the same entry point of the driver the interposer uses,
//     so the helper talks to one driver (its contexts are the process's);
//   - bindings made by the interposer itself (its lookups of the real
//     driver) and by the driver are left alone.
// What the auditor cannot see: references resolved as data (GLOB_DAT: a
// function's address taken with -fno-plt or in a static initialiser), code
// that reaches the device files without the driver, and a program that
// unsets LD_AUDIT (gpushare-run(1), SECURITY).
//
// The auditor runs in a namespace of its own with a libc of its own: it
// prints nothing and keeps only a few pointers. It finds the interposer's
// wrappers, once per name, and the base driver's entry points in those
// objects' dynamic symbol tables (a preloaded object's link map is no
// dlsym handle), and has the interposer load its driver when the program
// has not yet (gpushare_interpose_driver).
#include <elf.h>
#include <link.h>

#include <atomic>
#include <cstdint>
#include <cstring>

namespace {

#define GS_HOOK(symbol, type) #symbol,
const char* const kHookNames[] = {
#include "interpose/driver/hooks.def"
    "nvmlDeviceGetMemoryInfo", "nvmlDeviceGetMemoryInfo_v2"};
#undef GS_HOOK
constexpr std::size_t kHookCount = sizeof kHookNames / sizeof kHookNames[0];

std::atomic<link_map*> g_interposer{nullptr};
std::atomic<link_map*> g_base_driver{nullptr};  // the first libcuda.so* of the base namespace
std::atomic<void*> g_wrappers[kHookCount];

// Other namespaces' copies of the driver, which bindings are moved off.
constexpr int kMaxForeign = 32;
std::atomic<link_map*> g_foreign[kMaxForeign];

const char* base_name(const char* path) {
  const char* slash = path != nullptr ? std::strrchr(path, '/') : nullptr;
  return slash != nullptr ? slash + 1 : (path != nullptr ? path : "");
}

bool starts_with(const char* text, const char* prefix) {
  return std::strncmp(text, prefix, std::strlen(prefix)) == 0;
}

bool is_driver(const link_map* map) {
  const char* name = base_name(map->l_name);
  return starts_with(name, "libcuda.so") || starts_with(name, "libnvidia-ml.so");
}

bool is_foreign_driver(const link_map* map) {
  for (auto& slot : g_foreign) {
    if (slot.load(std::memory_order_acquire) == map) return true;
  }
  return false;
}

int hook_index(const char* name) {
  if (name[0] != 'c' && name[0] != 'n') return -1;
  for (std::size_t i = 0; i < kHookCount; ++i) {
    if (std::strcmp(kHookNames[i], name) == 0) return static_cast<int>(i);
  }
  return -1;
}

// The address of `name` defined by a loaded object, from its dynamic
// symbol table (GNU or SysV hash). Never dlsym: a link map of another
// namespace is no dlsym handle for an object the program did not dlopen.
std::uint32_t gnu_hash(const char* name) {
  std::uint32_t hash = 5381;
  for (const unsigned char* c = reinterpret_cast<const unsigned char*>(name); *c != 0; ++c) {
    hash = hash * 33 + *c;
  }
  return hash;
}

std::uint32_t sysv_hash(const char* name) {
  std::uint32_t hash = 0;
  for (const unsigned char* c = reinterpret_cast<const unsigned char*>(name); *c != 0; ++c) {
    hash = (hash << 4) + *c;
    std::uint32_t high = hash & 0xf0000000u;
    if (high != 0) hash ^= high >> 24;
    hash &= ~high;
  }
  return hash;
}

struct DynamicTables {
  const ElfW(Sym) * symbols = nullptr;
  const char* strings = nullptr;
  const std::uint32_t* gnu = nullptr;
  const std::uint32_t* sysv = nullptr;
};

DynamicTables tables_of(const link_map* map) {
  DynamicTables tables;
  // The loader relocates these entries in place on most targets; where it
  // does not, they are still relative to the load address.
  auto address = [map](ElfW(Addr) value) {
    return value < map->l_addr ? value + map->l_addr : value;
  };
  for (const ElfW(Dyn)* entry = map->l_ld; entry != nullptr && entry->d_tag != DT_NULL; ++entry) {
    switch (entry->d_tag) {
      case DT_SYMTAB:
        tables.symbols = reinterpret_cast<const ElfW(Sym)*>(address(entry->d_un.d_ptr));
        break;
      case DT_STRTAB:
        tables.strings = reinterpret_cast<const char*>(address(entry->d_un.d_ptr));
        break;
      case DT_GNU_HASH:
        tables.gnu = reinterpret_cast<const std::uint32_t*>(address(entry->d_un.d_ptr));
        break;
      case DT_HASH:
        tables.sysv = reinterpret_cast<const std::uint32_t*>(address(entry->d_un.d_ptr));
        break;
      default:
        break;
    }
  }
  return tables;
}

void* defined(const link_map* map, const ElfW(Sym) & symbol) {
  if (symbol.st_shndx == SHN_UNDEF || symbol.st_value == 0) return nullptr;
  if (ELF64_ST_TYPE(symbol.st_info) != STT_FUNC && ELF64_ST_TYPE(symbol.st_info) != STT_GNU_IFUNC) {
    return nullptr;
  }
  return reinterpret_cast<void*>(map->l_addr + symbol.st_value);
}

void* find_symbol(const link_map* map, const char* name) {
  if (map == nullptr) return nullptr;
  DynamicTables tables = tables_of(map);
  if (tables.symbols == nullptr || tables.strings == nullptr) return nullptr;
  if (tables.gnu != nullptr) {
    std::uint32_t buckets = tables.gnu[0], offset = tables.gnu[1], bloom_words = tables.gnu[2];
    const std::uint32_t* bucket = tables.gnu + 4 + bloom_words * (sizeof(ElfW(Addr)) / 4);
    const std::uint32_t* chain = bucket + buckets;
    std::uint32_t hash = gnu_hash(name);
    for (std::uint32_t index = bucket[hash % buckets]; index >= offset && index != 0; ++index) {
      std::uint32_t entry = chain[index - offset];
      if ((entry | 1) == (hash | 1) &&
          std::strcmp(tables.strings + tables.symbols[index].st_name, name) == 0) {
        if (void* found = defined(map, tables.symbols[index])) return found;
      }
      if ((entry & 1) != 0) break;
    }
    return nullptr;
  }
  if (tables.sysv != nullptr) {
    std::uint32_t buckets = tables.sysv[0];
    const std::uint32_t* bucket = tables.sysv + 2;
    const std::uint32_t* chain = bucket + buckets;
    for (std::uint32_t index = bucket[sysv_hash(name) % buckets]; index != 0;
         index = chain[index]) {
      if (std::strcmp(tables.strings + tables.symbols[index].st_name, name) == 0) {
        return defined(map, tables.symbols[index]);
      }
    }
  }
  return nullptr;
}

void* wrapper_of(int index) {
  void* wrapper = g_wrappers[index].load(std::memory_order_acquire);
  if (wrapper == nullptr) {
    wrapper = find_symbol(g_interposer.load(std::memory_order_acquire), kHookNames[index]);
    g_wrappers[index].store(wrapper, std::memory_order_release);
  }
  return wrapper;
}

// The same entry point in the driver the interposer uses (loading it
// through the interposer first when the program has not yet), or nullptr.
void* base_driver_symbol(const char* name) {
  if (g_base_driver.load(std::memory_order_acquire) == nullptr) {
    using LoadDriver = void* (*)();
    auto load = reinterpret_cast<LoadDriver>(
        find_symbol(g_interposer.load(std::memory_order_acquire), "gpushare_interpose_driver"));
    if (load != nullptr) load();
  }
  return find_symbol(g_base_driver.load(std::memory_order_acquire), name);
}

}  // namespace

extern "C" __attribute__((visibility("default"))) unsigned int la_version(unsigned int version) {
  return version < LAV_CURRENT ? version : LAV_CURRENT;
}

extern "C" __attribute__((visibility("default"))) unsigned int la_objopen(link_map* map,
                                                                          Lmid_t lmid,
                                                                          uintptr_t* cookie) {
  *cookie = reinterpret_cast<uintptr_t>(map);
  const char* name = base_name(map->l_name);
  if (lmid == LM_ID_BASE && std::strstr(name, "libgpushare-interpose") != nullptr) {
    g_interposer.store(map, std::memory_order_release);
    return 0;
  }
  // The loader asks about a binding made at load (BIND_NOW, RTLD_NOW) or
  // lazily only when its object is flagged BINDFROM and the definition's
  // BINDTO; about dlsym when either is.
  if (!is_driver(map)) return LA_FLG_BINDFROM;
  if (lmid == LM_ID_BASE && starts_with(name, "libcuda.so")) {
    link_map* none = nullptr;
    g_base_driver.compare_exchange_strong(none, map, std::memory_order_acq_rel);
  } else if (lmid != LM_ID_BASE) {
    for (auto& slot : g_foreign) {
      link_map* empty = nullptr;
      if (slot.compare_exchange_strong(empty, map, std::memory_order_acq_rel)) break;
    }
  }
  return LA_FLG_BINDTO;
}

extern "C" __attribute__((visibility("default"))) unsigned int la_objclose(uintptr_t* cookie) {
  link_map* map = reinterpret_cast<link_map*>(*cookie);
  for (auto& slot : g_foreign) {
    link_map* expected = map;
    slot.compare_exchange_strong(expected, nullptr, std::memory_order_acq_rel);
  }
  return 0;
}

extern "C" __attribute__((visibility("default"))) uintptr_t la_symbind64(
    Elf64_Sym* symbol, unsigned int, uintptr_t* reference_cookie, uintptr_t* definition_cookie,
    unsigned int*, const char* name) {
  const link_map* reference = reinterpret_cast<const link_map*>(*reference_cookie);
  const link_map* definition = reinterpret_cast<const link_map*>(*definition_cookie);
  uintptr_t unchanged = symbol->st_value;
  // The interposer finds the real driver through these bindings; the
  // driver's own calls stay inside it.
  if (reference == g_interposer.load(std::memory_order_acquire) || is_driver(reference) ||
      !is_driver(definition)) {
    return unchanged;
  }
  int index = hook_index(name);
  if (index >= 0) {
    if (void* wrapper = wrapper_of(index)) return reinterpret_cast<uintptr_t>(wrapper);
  }
  if (is_foreign_driver(definition)) {
    if (void* same = base_driver_symbol(name)) return reinterpret_cast<uintptr_t>(same);
  }
  return unchanged;
}
