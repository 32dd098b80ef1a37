#include "vocab/uuid.h"

namespace gpushare {

void format_uuid(const unsigned char uuid[16], char* text) {
  static const char kHex[] = "0123456789abcdef";
  static const char kPrefix[] = "GPU-";
  char* p = text;
  for (const char* c = kPrefix; *c != '\0'; ++c) *p++ = *c;
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) *p++ = '-';
    *p++ = kHex[uuid[i] >> 4];
    *p++ = kHex[uuid[i] & 15];
  }
  *p = '\0';
}

}  // namespace gpushare
