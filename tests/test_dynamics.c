/* ALI3-P dynamics against independent solutions: the five-bar benchmark (energy, constraint
   violation, trajectory and the published objectives at h = 1e-3), with the Newton matrix
   refactorised once per step and at every iteration, and the spatial slider-crank (energy and
   motion against a reduced-coordinate Lagrange model), the times of the outputs, and the retry of
   failed steps on sub-steps. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "reference/reference.h"
#include "testing.h"

/* Output history of a run: one row of (t, outputs) per step. */
typedef struct history {
  int nout, nrow, cap;
  double* rows;
} history;

static int record(const mb_model* m, const mb_data* d, void* user) {
  history* h = user;
  if (h->nrow == h->cap) return 1;
  double* row = h->rows + (size_t)h->nrow * (m->nout + 1);
  row[0] = d->t;
  memcpy(row + 1, d->out, sizeof(double) * m->nout);
  h->nrow++;
  return 0;
}

static int column(const mb_model* m, const char* name) {
  const int i = mb_model_output(m, name);
  if (i >= 0) return i + 1;
  printf("FAIL no output column %s\n", name);
  exit(1);
}

static double value(const mb_model* m, const history* h, int row, const char* name) {
  return h->rows[(size_t)row * (m->nout + 1) + column(m, name)];
}

/* Runs a model at step `step`; returns the status and fills the history. */
static mb_status run(mb_model* m, double step, history* h, mb_data** out) {
  m->opt.step = step;
  h->nout = m->nout;
  h->cap = (int)lround(m->opt.t_end / step) + 2;
  h->nrow = 0;
  h->rows = malloc(sizeof(double) * (size_t)h->cap * (m->nout + 1));
  *out = mb_data_create(m);
  mb_error err;
  mb_status st = mb_simulate(m, *out, record, h, &err);
  if (st != MB_OK) printf("simulation failed: %s\n", err.message);
  return st;
}

/* Trapezoidal integral of f(row) over the history. */
static double integral(const mb_model* m, const history* h,
                       double (*f)(const mb_model*, const history*, int)) {
  double sum = 0;
  for (int r = 1; r < h->nrow; r++)
    sum += 0.5 * (h->rows[(size_t)r * (m->nout + 1)] - h->rows[(size_t)(r - 1) * (m->nout + 1)]) *
           (f(m, h, r) + f(m, h, r - 1));
  return sum;
}

static double psi1_integrand(const mb_model* m, const history* h, int r) {
  double dx = value(m, h, r, "x2") - 0.5, dy = value(m, h, r, "y2") + 2;
  return dx * dx + dy * dy;
}
static double psi2_integrand(const mb_model* m, const history* h, int r) {
  double vx = value(m, h, r, "v2.x"), vy = value(m, h, r, "v2.y");
  return vx * vx + vy * vy;
}
static double psi3_integrand(const mb_model* m, const history* h, int r) {
  double ax = value(m, h, r, "a2.x"), ay = value(m, h, r, "a2.y");
  return ax * ax + ay * ay;
}

static double max_energy_drift(const mb_model* m, const history* h) {
  double e0 = value(m, h, 0, "total"), drift = 0;
  for (int r = 0; r < h->nrow; r++) drift = fmax(drift, fabs(value(m, h, r, "total") - e0));
  return drift / fabs(e0);
}

/* refresh: the Newton matrix refactorised at every iteration (Newton's method) instead of once
   per step (chord iterations): both must meet every check */
static void test_fivebar(mbt_tally* t, int refresh) {
  mb_desc desc;
  mb_model* m = mbt_load("problems/fivebar.json", &desc);
  if (!m) {
    t->failed++;
    return;
  }
  m->opt.refresh_each_iteration = refresh;
  printf("     the Newton matrix refactorised once per %s\n", refresh ? "iteration" : "step");
  history h = {0};
  mb_data* d = NULL;
  mb_status st = run(m, 1e-3, &h, &d);
  mbt_check(t, st == MB_OK && h.nrow == 5001, "five-bar: 5 s at h = 1e-3 completes", h.nrow, 5001);
  if (st != MB_OK || h.nrow != 5001) goto done;

  double drift = max_energy_drift(m, &h);
  mbt_check(t, drift < 1e-4, "five-bar: total energy constant (relative)", drift, 1e-4);
  mbt_check(t, d->report.max_phi < 1e-9, "five-bar: position constraint violation",
            d->report.max_phi, 1e-9);

  /* trajectory of P1, P2, P3 against the angle-coordinate reference every 0.01 s */
  enum { NREF = 501 };
  static double tref[NREF], pref[NREF * FIVEBAR_REFERENCE_COLS];
  int nref = fivebar_reference(5.0, 0.01, 5e-4, NREF, tref, pref);
  static const char* names[6] = {"x1", "y1", "x2", "y2", "x3", "y3"};
  double worst = nref == NREF ? 0 : INFINITY;
  for (int k = 0; k < nref; k++)
    for (int c = 0; c < 6; c++)
      worst = fmax(worst, fabs(value(m, &h, 10 * k, names[c]) - pref[6 * k + c]));
  mbt_check(t, worst < 1e-3, "five-bar: trajectory vs independent solution", worst, 1e-3);

  /* the published objectives of the trapezoidal rule at h = 1e-3 */
  double psi1 = integral(m, &h, psi1_integrand);
  double psi2 = integral(m, &h, psi2_integrand);
  double psi3 = integral(m, &h, psi3_integrand);
  printf("     psi = [%.9g, %.9g, %.9g]\n", psi1, psi2, psi3);
  mbt_check(t, fabs(psi1 - 0.7268777) < 2e-7, "five-bar: psi1 vs 0.7268777", fabs(psi1 - 0.7268777),
            2e-7);
  mbt_check(t, fabs(psi2 / 7.342272 - 1) < 1e-6, "five-bar: psi2 vs 7.342272 (relative)",
            fabs(psi2 / 7.342272 - 1), 1e-6);
  mbt_check(t, fabs(psi3 / 304.92075 - 1) < 2e-6, "five-bar: psi3 vs 304.92075 (relative)",
            fabs(psi3 / 304.92075 - 1), 2e-6);

done:
  free(h.rows);
  mb_data_free(d);
  mb_model_free(m);
  mb_desc_free(&desc);
}

static void test_slider_crank(mbt_tally* t) {
  mb_desc desc;
  mb_model* m = mbt_load("problems/slider_crank.json", &desc);
  if (!m) {
    t->failed++;
    return;
  }
  history h = {0};
  mb_data* d = NULL;
  const double step = m->opt.step;
  const int stride = (int)lround(0.01 / step);
  mb_status st = run(m, step, &h, &d);
  mbt_check(t, st == MB_OK, "slider-crank: simulation completes", st, 0);
  if (st != MB_OK) goto done;

  double drift = max_energy_drift(m, &h);
  mbt_check(t, drift < 1e-4, "slider-crank: total energy constant (relative)", drift, 1e-4);
  mbt_check(t, d->report.max_phi < 1e-9, "slider-crank: position constraint violation",
            d->report.max_phi, 1e-9);

  /* crank angle, slider position and crank tip against the reduced-coordinate reference */
  enum { NREF = 1001 };
  static double tref[NREF], ref[NREF * SLIDER_CRANK_REFERENCE_COLS];
  int nk = (int)lround(m->opt.t_end / 0.01) + 1;
  int nref = slider_crank_reference(m->opt.t_end, 0.01, 1.25e-4, 6.0, NREF, tref, ref);
  double dphi = nref == nk ? 0 : INFINITY, dx = dphi, dB = dphi;
  for (int k = 0; k < nref && k < nk; k++) {
    const double* r = ref + SLIDER_CRANK_REFERENCE_COLS * k;
    dphi = fmax(dphi, fabs(value(m, &h, stride * k, "phi") - r[0]));
    dx = fmax(dx, fabs(value(m, &h, stride * k, "xC") - r[2]));
    dB = fmax(dB, fabs(value(m, &h, stride * k, "B.y") - r[5]));
    dB = fmax(dB, fabs(value(m, &h, stride * k, "B.z") - r[6]));
  }
  mbt_check(t, dphi < 1e-3, "slider-crank: crank angle vs reduced model (rad)", dphi, 1e-3);
  mbt_check(t, dx < 1e-3, "slider-crank: slider position vs reduced model (m)", dx, 1e-3);
  mbt_check(t, dB < 1e-3, "slider-crank: crank tip vs reduced model (m)", dB, 1e-3);

done:
  free(h.rows);
  mb_data_free(d);
  mb_model_free(m);
  mb_desc_free(&desc);
}

/* Outputs every 10 ms over 20 s at h = 6.25e-5: each at the step nearest its multiple of the
   interval, none shifted by a step by rounding accumulated over the run. */
static void test_output_times(mbt_tally* t) {
  mb_desc desc;
  mb_model* m = mbt_load("tests/models/iftomm/a01_pendulum.json", &desc);
  if (!m) {
    t->failed++;
    return;
  }
  m->opt.t_end = 20;
  m->opt.output_interval = 0.01;
  history h = {0};
  mb_data* d = NULL;
  mb_status st = run(m, 6.25e-5, &h, &d);
  mbt_check(t, st == MB_OK && h.nrow == 2001, "outputs: 2001 rows every 10 ms over 20 s", h.nrow,
            2001);
  double worst = 0;
  for (int r = 0; r < h.nrow; r++)
    worst = fmax(worst, fabs(h.rows[(size_t)r * (m->nout + 1)] - 0.01 * r));
  mbt_check(t, worst < 1e-9, "outputs: at the multiples of the interval (s)", worst, 1e-9);
  free(h.rows);
  mb_data_free(d);
  mb_model_free(m);
  mb_desc_free(&desc);
}

/* The five-bar at h = 0.05, where a few steps move too far for the Newton iteration: without
   sub-steps the run stops at t = 0.8; with them (the default) it completes, its energy balance
   and its motion against the reference as close as the step allows. */
static void test_substeps(mbt_tally* t) {
  mb_desc desc;
  mb_model* m = mbt_load_at_step("problems/fivebar.json", &desc, 0.05);
  if (!m) {
    t->failed++;
    return;
  }
  for (int retry = 0; retry < 2; retry++) {
    m->opt.max_substeps = retry ? 8 : 1; /* a setting of the run, not of the compiled model */
    history h = {0};
    mb_data* d = NULL;
    const mb_status st = run(m, 0.05, &h, &d);
    if (!retry) {
      mbt_check(t, st == MB_NEWTON_FAILED && fabs(d->t - 0.8) < 1e-12,
                "sub-steps: without them the five-bar at h = 0.05 fails at t = 0.8", d->t, 0.8);
    } else {
      mbt_check(t, st == MB_OK && h.nrow == 101 && d->report.substepped_steps > 0,
                "sub-steps: with them it completes, retrying steps", d->report.substepped_steps, 1);
      const double balance = d->report.max_energy_error / d->report.energy_scale;
      mbt_check(t, balance < 1e-2, "sub-steps: energy balance relative to the energy exchanged",
                balance, 1e-2);
      double tref[101], pref[101 * FIVEBAR_REFERENCE_COLS], worst = 0;
      const int nref = fivebar_reference(5, 0.05, 5e-4, 101, tref, pref);
      static const char* const cols[6] = {"x1", "y1", "x2", "y2", "x3", "y3"};
      for (int r = 0; r < nref && r < h.nrow; r++)
        for (int c = 0; c < 6; c++)
          worst = fmax(worst, fabs(value(m, &h, r, cols[c]) - pref[r * 6 + c]));
      mbt_check(t, nref == 101 && worst < 0.1, "sub-steps: motion against the reference (m)", worst,
                0.1);
    }
    free(h.rows);
    mb_data_free(d);
  }
  mb_model_free(m);
  mb_desc_free(&desc);
}

int main(void) {
  mbt_tally t = {0};
  test_fivebar(&t, 0);
  test_fivebar(&t, 1);
  test_slider_crank(&t);
  test_output_times(&t);
  test_substeps(&t);
  return mbt_finish(&t);
}
