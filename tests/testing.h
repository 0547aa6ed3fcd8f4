/* Small helpers shared by the test programs: a pass/fail tally printing one line per check and
   the closing "N passed, M failed" line, and loading a bundled model. */
#ifndef MBOPT_TESTING_H
#define MBOPT_TESTING_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

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

/* Records one check of an error against limit times scale (scale > 0), the label printed from
   format; the value shown is the error over the scale. */
static inline void mbt_check_scaled(mbt_tally* t, double error, double scale, double limit,
                                    const char* format, ...) __attribute__((format(printf, 5, 6)));
static inline void mbt_check_scaled(mbt_tally* t, double error, double scale, double limit,
                                    const char* format, ...) {
  char what[256];
  va_list ap;
  va_start(ap, format);
  vsnprintf(what, sizeof what, format, ap);
  va_end(ap);
  mbt_check(t, error <= limit * scale, what, error / scale, limit);
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

/* The same for a model's JSON text. */
static inline mb_model* mbt_compile_text(const char* text, mb_desc* d) {
  mb_error err;
  mb_model* m = NULL;
  if (mb_desc_parse_json(text, "test", d, &err) != MB_OK || mb_compile(d, &m, &err) != MB_OK) {
    printf("FAIL cannot compile the model: %s\n", err.message);
    return NULL;
  }
  return m;
}

/* mbt_load with the model's step set to h before compiling, as `--step h` does (the automatic
   penalty scales depend on it). */
static inline mb_model* mbt_load_at_step(const char* path, mb_desc* d, double h) {
  mb_error err;
  mb_model* m = NULL;
  if (mb_desc_load_json(path, d, &err) != MB_OK) {
    printf("FAIL cannot load %s: %s\n", path, err.message);
    return NULL;
  }
  d->settings.step = h;
  if (mb_compile(d, &m, &err) != MB_OK) {
    printf("FAIL cannot compile %s: %s\n", path, err.message);
    mb_desc_free(d);
    return NULL;
  }
  return m;
}

/* The buggy's specs start at rest on the suspension, where a squared acceleration and its
   gradient are rounding: this sets the prescribed vertical rate of its chassis CoM (chassis.G) to
   v m/s, so that a short run measures a motion. */
static inline void mbt_buggy_bounce(mb_desc* d, double v) {
  for (int i = 0; i < d->nprescribe; i++) {
    mb_prescribe_desc* p = &d->prescribe[i];
    if (p->type != MB_PRESCRIBE_POINT || p->body < 0 || p->component != 2 || !p->has_rate) continue;
    const mb_body_desc* b = &d->body[p->body];
    if (!strcmp(b->name, "chassis") && !strcmp(b->marker[p->marker].name, "G"))
      p->rate = (mb_real){v, -1, 0};
  }
}

/* A reproducible uniform number in [-1, 1). */
static inline double mbt_uniform(unsigned* seed) {
  *seed = *seed * 1103515245u + 12345u;
  return ((*seed >> 8) & 0xffff) / 32768.0 - 1.0;
}

/* A random state near the approximate initial configuration (constraints not satisfied): q within
   0.3 of the compiled initial guess, qd and qdd in [-1, 1), t = 0.37. */
static inline void mbt_random_state(const mb_model* m, mb_data* d, unsigned* seed) {
  for (int e = 0; e < m->nelem; e++)
    if (m->elem_qadr[e] >= 0)
      for (int k = 0; k < m->dim; k++)
        d->q[m->elem_qadr[e] + k] = m->elem_q0[3 * e + k] + 0.3 * mbt_uniform(seed);
  for (int i = 0; i < m->nq; i++) d->qd[i] = mbt_uniform(seed), d->qdd[i] = mbt_uniform(seed);
  d->t = 0.37;
}

#endif
