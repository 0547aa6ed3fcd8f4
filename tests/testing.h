/* Small helpers shared by the test programs: a pass/fail tally printing one line per check and
   the closing "N passed, M failed" line, and loading a bundled model. */
#ifndef MBOPT_TESTING_H
#define MBOPT_TESTING_H

#include <stdio.h>

#include "mbopt/mbopt.h"

typedef struct mbt_tally {
  int passed, failed;
} mbt_tally;

/* Records one check: `value` is the measured quantity and `limit` the bound it was held to. */
static inline void mbt_check(mbt_tally* t, int ok, const char* what, double value, double limit) {
  if (ok)
    t->passed++;
  else
    t->failed++;
  printf("%s %-62s %.3e (limit %.1e)\n", ok ? "PASS" : "FAIL", what, value, limit);
}

/* Prints the closing line and returns the process exit code. */
static inline int mbt_finish(const mbt_tally* t) {
  printf("%d passed, %d failed\n", t->passed, t->failed);
  return t->failed ? 1 : 0;
}

/* Loads and compiles a model file; prints the error and returns NULL on failure. The
   description is left in d (free it with mb_desc_free). */
static inline mb_model* mbt_load(const char* path, mb_desc* d) {
  mb_error err;
  mb_model* m = NULL;
  if (mb_desc_load_json(path, d, &err) != MB_OK || mb_compile(d, &m, &err) != MB_OK) {
    printf("FAIL cannot load %s: %s\n", path, err.message);
    return NULL;
  }
  return m;
}

#endif
