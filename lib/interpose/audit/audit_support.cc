// What libgpushare-audit.so (audit.cc) asks of the interposer: the handle
// of the driver the interposer uses, so that a library with a copy of the
// driver in another namespace is bound to this one instead.
#include "interpose/core/runtime.h"

GS_EXPORT void* gpushare_interpose_driver() {
  using namespace gpushare::interpose;
  return driver_ready() ? g_runtime.libcuda : nullptr;
}
