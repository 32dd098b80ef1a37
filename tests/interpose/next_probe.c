/* Two libraries defining the same symbol, for the RTLD_NEXT test: library
 * A asks dlsym(RTLD_NEXT, "gs_probe_symbol") and must get B's, which only
 * works if the interposer's dlsym keeps A as the caller glibc sees. */
#define _GNU_SOURCE
#include <dlfcn.h>

#ifdef GS_PROBE_A
int gs_probe_symbol(void) { return 1; }
int gs_probe_next(void) {
  int (*next)(void) = (int (*)(void))dlsym(RTLD_NEXT, "gs_probe_symbol");
  return next == 0 ? -1 : next();
}
#else
int gs_probe_symbol(void) { return 2; }
/* Referenced by the program, so B is loaded (after A) even with --as-needed. */
int gs_probe_b_loaded(void) { return 1; }
#endif
