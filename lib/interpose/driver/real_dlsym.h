// glibc's own dlsym, found with dlvsym: the interposer exports a dlsym of
// its own, so a plain call would come back to us.
#pragma once

namespace gpushare::interpose {

void* real_dlsym(void* handle, const char* name);

}  // namespace gpushare::interpose
