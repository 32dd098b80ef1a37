#include "common/version.h"

#include "common/build_commit.h"

namespace gpushare {

const char* version() { return GPUSHARE_VERSION; }

const char* build_commit() { return GPUSHARE_BUILD_COMMIT; }

const char* version_line() {
  // Both halves are literals: the line is put together by the compiler, so
  // the interposer (which links this) needs no allocation for it.
  return sizeof(GPUSHARE_BUILD_COMMIT) > 1 ? GPUSHARE_VERSION " (commit " GPUSHARE_BUILD_COMMIT ")"
                                           : GPUSHARE_VERSION;
}

}  // namespace gpushare
