/* IFToMM benchmark problems simulated with the default settings (only t_end and step in the
   models, tests/models/iftomm/) against one-angle reference solutions (tests/reference/
   iftomm_reference.c): the simple pendulum (A01) and the N-four-bar (A02) with N = 2 and 40,
   which passes a singular position every half turn. Errors are the largest deviation of the
   tracked point's x and y over the run (m), every 10 ms; the order is observed from h and h/2. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "reference/reference.h"
#include "testing.h"

#define OUTPUT_INTERVAL 0.01

/* A point at distance `radius` from the origin on a bar at the reference angle. */
typedef struct tracking {
  const double* theta; /* reference angle every OUTPUT_INTERVAL */
  int nref;
  double radius;
  int col_x, col_y; /* output indices of the point's x and y */
  double max_error;
} tracking;

static int track(const mb_model* m, const mb_data* d, void* user) {
  (void)m;
  tracking* tr = user;
  const long k = lround(d->t / OUTPUT_INTERVAL);
  if (fabs(k * OUTPUT_INTERVAL - d->t) > 1e-9 || k >= tr->nref) return 0;
  const double th = tr->theta[k];
  tr->max_error = fmax(tr->max_error, fabs(d->out[tr->col_x] - tr->radius * cos(th)));
  tr->max_error = fmax(tr->max_error, fabs(d->out[tr->col_y] - tr->radius * sin(th)));
  return 0;
}

/* One benchmark case: the model at path simulated at step h; its point `point` (an output of
   type position) follows radius (cos theta, sin theta) with theta'' = -k cos theta. Returns the
   largest error, INFINITY when the run fails. */
static double run_case(mbt_tally* t, const char* path, const char* point, double radius,
                       double k, double theta0, double rate0, double h) {
  mb_desc desc;
  mb_model* m = mbt_load(path, &desc);
  if (!m) {
    t->failed++;
    return INFINITY;
  }
  char x[MB_LABEL_LEN + 2], y[MB_LABEL_LEN + 2];
  snprintf(x, sizeof x, "%s.x", point);
  snprintf(y, sizeof y, "%s.y", point);
  m->opt.step = h;
  m->opt.output_interval = OUTPUT_INTERVAL;
  const int nref = (int)lround(m->opt.t_end / OUTPUT_INTERVAL) + 1;
  double* theta = malloc(sizeof(double) * nref);
  tracking tr = {theta, nref, radius, mb_model_output(m, x), mb_model_output(m, y), 0};
  double result = INFINITY;
  if (tr.col_x < 0 || tr.col_y < 0 ||
      angle_reference(k, theta0, rate0, m->opt.t_end, OUTPUT_INTERVAL, 1e-5, nref, theta) != nref) {
    printf("FAIL %s: no output %s or no reference\n", path, point);
    t->failed++;
  } else {
    mb_data* d = mb_data_create(m);
    mb_error err;
    mb_status st = mb_simulate(m, d, track, &tr, &err);
    if (st != MB_OK) printf("     %s\n", err.message);
    char what[96];
    snprintf(what, sizeof what, "%s h = %g: runs with the default settings",
             strrchr(path, '/') + 1, h);
    mbt_check(t, st == MB_OK, what, st, 0);
    if (st == MB_OK) result = tr.max_error;
    mb_data_free(d);
  }
  free(theta);
  mb_model_free(m);
  mb_desc_free(&desc);
  return result;
}

/* The case at h and h / 2: the error at h within `limit`, and the observed order. */
static void check_case(mbt_tally* t, const char* name, const char* path, const char* point,
                       double radius, double k, double theta0, double rate0, double h,
                       double limit) {
  const double e1 = run_case(t, path, point, radius, k, theta0, rate0, h);
  char what[96];
  snprintf(what, sizeof what, "%s: largest position error at h = %g (m)", name, h);
  mbt_check(t, e1 <= limit, what, e1, limit);
  const double e2 = run_case(t, path, point, radius, k, theta0, rate0, h / 2);
  const double order = log2(e1 / e2);
  snprintf(what, sizeof what, "%s: observed order from h = %g and %g", name, h, h / 2);
  mbt_check(t, order >= 1.8 && order <= 2.5, what, order, 1.8);
}

int main(void) {
  mbt_tally t = {0};
  const double g = 9.81, pi = acos(-1.0);
  /* A01: 1 kg on a 1 m bar released from the horizontal, 10 s */
  check_case(&t, "A01 pendulum", "tests/models/iftomm/a01_pendulum.json", "P", 1, g, pi, 0, 1e-3,
             1e-4);
  /* A02: cranks vertical, B0 moving at 1 m/s along +x, 20 s. At h = 1e-3 the trapezoidal rule
     in natural coordinates errs by about 4.7e-4 after 20 s (its phase error on the cranks'
     rotation grows with time); 1e-4 holds up to about 4 s. */
  check_case(&t, "A02 N = 2", "tests/models/iftomm/a02_fourbar_2.json", "B0", 1,
             fourbar_chain_stiffness(2, g), pi / 2, -1, 1e-3, 6e-4);
  const double e40 = run_case(&t, "tests/models/iftomm/a02_fourbar_40.json", "B0", 1,
                              fourbar_chain_stiffness(40, g), pi / 2, -1, 1e-3);
  mbt_check(&t, e40 <= 6e-4, "A02 N = 40: largest position error at h = 0.001 (m)", e40, 6e-4);
  return mbt_finish(&t);
}
