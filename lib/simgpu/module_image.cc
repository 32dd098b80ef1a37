#include "simgpu/module_image.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "simgpu/collective.h"

namespace gpushare::simgpu {
namespace {

constexpr unsigned char kElfMagic[4] = {0x7f, 'E', 'L', 'F'};
constexpr std::uint32_t kFatbinMagic = 0xBA55ED50u;         // fatbin data
constexpr std::uint32_t kFatbinWrapperMagic = 0x466243B1u;  // __fatBinC_Wrapper_t
constexpr int kMaxKernels = 4096;

bool is_identifier_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '$' || c == '%';
}
bool is_identifier_char(char c) { return is_identifier_start(c) || (c >= '0' && c <= '9'); }
bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

void init_kernel(KernelInfo* kernel, const char* name, std::size_t length, std::int64_t ns) {
  std::memcpy(kernel->name, name, length);
  kernel->name[length] = '\0';
  kernel->spin = std::strcmp(kernel->name, kSpinKernelName) == 0;
  kernel->collective = std::strcmp(kernel->name, kAllreduceKernelName) == 0;
  kernel->duration_ns = kernel->spin || kernel->collective ? 0 : ns;
}

bool append(ModuleImage* module, int* capacity) {
  if (module->kernel_count < *capacity) return true;
  if (*capacity >= kMaxKernels) return false;
  int grown = *capacity == 0 ? 8 : *capacity * 2;
  void* memory =
      std::realloc(module->kernels, sizeof(KernelInfo) * static_cast<std::size_t>(grown));
  if (memory == nullptr) return false;
  module->kernels = static_cast<KernelInfo*>(memory);
  *capacity = grown;
  return true;
}

bool has_kernel(const ModuleImage& module, const char* name, std::size_t length) {
  for (int i = 0; i < module.kernel_count; ++i) {
    if (std::strlen(module.kernels[i].name) == length &&
        std::memcmp(module.kernels[i].name, name, length) == 0) {
      return true;
    }
  }
  return false;
}

ImageError fail(ModuleImage* module, ImageError error, char* message, std::size_t bytes,
                const char* format, long line, const char* detail) {
  std::snprintf(message, bytes, format, line, detail);
  release_module_image(module);
  return error;
}

ImageError parse_text(const char* text, std::int64_t default_ns, ModuleImage* module, char* message,
                      std::size_t bytes) {
  module->kind = ImageKind::kText;
  int capacity = 0;
  const char* line = text + std::strlen(kTextModuleMagic);
  long number = 1;
  while (*line != '\0') {
    if (*line == '\n') ++line;
    ++number;
    const char* end = std::strchr(line, '\n');
    if (end == nullptr) end = line + std::strlen(line);
    const char* cursor = line;
    while (cursor < end && is_blank(*cursor)) ++cursor;
    if (cursor == end || *cursor == '#') {
      line = end;
      continue;
    }
    const char* keyword = "kernel";
    std::size_t keyword_length = std::strlen(keyword);
    if (static_cast<std::size_t>(end - cursor) <= keyword_length ||
        std::strncmp(cursor, keyword, keyword_length) != 0 || !is_blank(cursor[keyword_length])) {
      return fail(module, ImageError::kInvalidImage, message, bytes,
                  "line %ld: expected 'kernel NAME MICROSECONDS'%s", number, "");
    }
    cursor += keyword_length;
    while (cursor < end && is_blank(*cursor)) ++cursor;
    const char* name = cursor;
    if (cursor == end || !is_identifier_start(*cursor) || *cursor == '%') {
      return fail(module, ImageError::kInvalidImage, message, bytes,
                  "line %ld: expected a kernel name%s", number, "");
    }
    while (cursor < end && is_identifier_char(*cursor)) ++cursor;
    std::size_t name_length = static_cast<std::size_t>(cursor - name);
    if (name_length >= kKernelNameBytes) {
      return fail(module, ImageError::kInvalidImage, message, bytes,
                  "line %ld: kernel name longer than 127 characters%s", number, "");
    }
    while (cursor < end && is_blank(*cursor)) ++cursor;
    std::uint64_t micros = 0;
    const char* digits = cursor;
    while (cursor < end && *cursor >= '0' && *cursor <= '9') {
      micros = micros * 10 + static_cast<unsigned>(*cursor++ - '0');
      if (micros > 3600000000ull) {
        return fail(module, ImageError::kInvalidImage, message, bytes,
                    "line %ld: duration over an hour%s", number, "");
      }
    }
    while (cursor < end && is_blank(*cursor)) ++cursor;
    if (cursor == digits || cursor != end) {
      return fail(module, ImageError::kInvalidImage, message, bytes,
                  "line %ld: expected a duration in whole microseconds after the name%s", number,
                  "");
    }
    if (has_kernel(*module, name, name_length)) {
      return fail(module, ImageError::kInvalidImage, message, bytes,
                  "line %ld: kernel declared twice%s", number, "");
    }
    if (!append(module, &capacity)) {
      return fail(module, ImageError::kInvalidImage, message, bytes, "line %ld: too many kernels%s",
                  number, "");
    }
    init_kernel(&module->kernels[module->kernel_count++], name, name_length,
                static_cast<std::int64_t>(micros) * 1000);
    line = end;
  }
  (void)default_ns;
  return ImageError::kNone;
}

// PTX: the kernels are the names after ".entry". Comments are skipped so a
// commented-out entry does not count.
ImageError parse_ptx(const char* text, std::int64_t default_ns, ModuleImage* module, char* message,
                     std::size_t bytes) {
  module->kind = ImageKind::kPtx;
  int capacity = 0;
  bool saw_version = false;
  long line = 1;
  const char* cursor = text;
  while (*cursor != '\0') {
    if (cursor[0] == '/' && cursor[1] == '/') {
      while (*cursor != '\0' && *cursor != '\n') ++cursor;
      continue;
    }
    if (cursor[0] == '/' && cursor[1] == '*') {
      const char* close = std::strstr(cursor + 2, "*/");
      for (const char* c = cursor; c < (close ? close : cursor + std::strlen(cursor)); ++c) {
        line += *c == '\n';
      }
      cursor = close != nullptr ? close + 2 : cursor + std::strlen(cursor);
      continue;
    }
    if (*cursor == '\n') ++line;
    if (*cursor == '.' && (cursor == text || !is_identifier_char(cursor[-1]))) {
      if (std::strncmp(cursor, ".version", 8) == 0 && !is_identifier_char(cursor[8])) {
        saw_version = true;
      } else if (std::strncmp(cursor, ".entry", 6) == 0 && !is_identifier_char(cursor[6])) {
        const char* name = cursor + 6;
        while (is_blank(*name) || *name == '\n') line += *name++ == '\n';
        const char* name_end = name;
        while (is_identifier_char(*name_end)) ++name_end;
        std::size_t length = static_cast<std::size_t>(name_end - name);
        if (length == 0 || length >= kKernelNameBytes) {
          return fail(module, ImageError::kInvalidPtx, message, bytes,
                      "line %ld: .entry without a usable name%s", line, "");
        }
        if (!has_kernel(*module, name, length)) {
          if (!append(module, &capacity)) {
            return fail(module, ImageError::kInvalidPtx, message, bytes,
                        "line %ld: too many kernels%s", line, "");
          }
          init_kernel(&module->kernels[module->kernel_count++], name, length, default_ns);
        }
        cursor = name_end;
        continue;
      }
    }
    ++cursor;
  }
  if (!saw_version) {
    return fail(module, ImageError::kInvalidPtx, message, bytes,
                "line %ld: PTX without a .version directive%s", line, "");
  }
  return ImageError::kNone;
}

bool looks_like_ptx(const char* text) {
  // PTX is printable text; the first 4 KiB are enough to tell.
  for (int i = 0; i < 4096 && text[i] != '\0'; ++i) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c < 0x09 || (c > 0x0d && c < 0x20)) return false;
  }
  return std::strstr(text, ".version") != nullptr || std::strstr(text, ".entry") != nullptr ||
         std::strstr(text, ".target") != nullptr;
}

}  // namespace

ImageError parse_module_image(const void* image, std::int64_t default_kernel_ns,
                              ModuleImage* module, char* message, std::size_t message_bytes) {
  std::memset(module, 0, sizeof *module);
  if (message_bytes > 0) message[0] = '\0';
  if (image == nullptr) {
    std::snprintf(message, message_bytes, "no image");
    return ImageError::kInvalidImage;
  }
  const unsigned char* bytes = static_cast<const unsigned char*>(image);
  // None of the binary magics contains a NUL byte, so stopping at one never
  // reads past a short text image.
  std::size_t prefix = 0;
  while (prefix < 4 && bytes[prefix] != 0) ++prefix;
  std::uint32_t magic = 0;
  if (prefix == 4) std::memcpy(&magic, bytes, sizeof magic);
  if (prefix == 4 && std::memcmp(bytes, kElfMagic, sizeof kElfMagic) == 0) {
    module->kind = ImageKind::kCubin;
    module->any_name = true;
    return ImageError::kNone;
  }
  if (prefix == 4 && (magic == kFatbinMagic || magic == kFatbinWrapperMagic)) {
    module->kind = ImageKind::kFatbin;
    module->any_name = true;
    return ImageError::kNone;
  }
  const char* text = static_cast<const char*>(image);
  std::size_t magic_length = std::strlen(kTextModuleMagic);
  if (std::strncmp(text, kTextModuleMagic, magic_length) == 0 &&
      (text[magic_length] == '\n' || text[magic_length] == '\0' || text[magic_length] == '\r')) {
    return parse_text(text, default_kernel_ns, module, message, message_bytes);
  }
  if (std::strncmp(text, "gpushare-sim-module", 19) == 0) {
    std::snprintf(message, message_bytes, "line 1: unsupported text module version");
    return ImageError::kInvalidImage;
  }
  if (looks_like_ptx(text))
    return parse_ptx(text, default_kernel_ns, module, message, message_bytes);
  std::snprintf(message, message_bytes, "not a cubin, fatbin, PTX or gpushare-sim-module image");
  return ImageError::kInvalidImage;
}

const KernelInfo* find_kernel(const ModuleImage& module, const char* name,
                              std::int64_t default_kernel_ns, KernelInfo* scratch) {
  if (name == nullptr) return nullptr;
  for (int i = 0; i < module.kernel_count; ++i) {
    if (std::strcmp(module.kernels[i].name, name) == 0) return &module.kernels[i];
  }
  std::size_t length = std::strlen(name);
  if (!module.any_name || length == 0 || length >= kKernelNameBytes) return nullptr;
  init_kernel(scratch, name, length, default_kernel_ns);
  return scratch;
}

void release_module_image(ModuleImage* module) {
  std::free(module->kernels);
  module->kernels = nullptr;
  module->kernel_count = 0;
}

}  // namespace gpushare::simgpu
