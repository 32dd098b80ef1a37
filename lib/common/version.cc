#include "common/version.h"

namespace gpushare {

const char* version() { return GPUSHARE_VERSION; }

}  // namespace gpushare
