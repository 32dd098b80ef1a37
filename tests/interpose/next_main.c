/* Prints what library A's dlsym(RTLD_NEXT) found: 2 is right (library B's
 * symbol), 1 means A got itself back (the caller was lost). */
#include <stdio.h>

int gs_probe_next(void);
int gs_probe_b_loaded(void);

int main(void) {
  if (!gs_probe_b_loaded()) return 1;
  printf("next=%d\n", gs_probe_next());
  return 0;
}
