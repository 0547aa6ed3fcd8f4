/* The partial derivatives of the forward sensitivity against finite differences at random
   states: d(dPhi/dt)/dq and d(d2Phi/dt2)/dq of every constraint (differences in q), and, for
   every parameter, the explicit derivatives of Phi, dPhi/dt, d2Phi/dt2, of Phi_q^T w and of the
   generalised forces Q (differences of recompiled models at the same state). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "mbopt/sensitivity.h"
#include "testing.h"

static const char* models[] = {"problems/fivebar.json",
                               "problems/slider_crank.json",
                               "tests/models/ok/params_spatial.json",
                               "tests/models/ok/params_planar.json",
                               "tests/models/ok/controller_planar.json",
                               "tests/models/ok/tyre_wheel.json",
                               "problems/control/pendulum_pid.json"};

/* Phi, dPhi/dt and d2Phi/dt2 of constraint i at the state of d (for model m) */
static void constraint_levels(const mb_model* m, const mb_data* d, int i, double* out) {
  double* row = calloc(m->nq + 1, sizeof(double));
  double rt[2];
  out[0] = mb_con_eval(m, m->con_kind[i], m->con_lvec + 4 * i, m->con_value[i], m->con_func[i],
                       d->t, d->q, d->qd, row, rt);
  out[1] = rt[0], out[2] = rt[1];
  for (int j = 0; j < m->nq; j++) out[1] += row[j] * d->qd[j], out[2] += row[j] * d->qdd[j];
  free(row);
}

static double scaled_error(double a, double b) {
  return fabs(a - b) / fmax(1, fabs(a));
}

/* d(dPhi/dt)/dq and d(d2Phi/dt2)/dq against differences in q */
static void check_rate_jacobians(mbt_tally* t, const char* name, const mb_model* m, mb_data* d) {
  const int nq = m->nq;
  const double eps = 1e-6;
  double worst = 0;
  double* r1 = calloc(nq + 1, sizeof(double));
  double* r2 = calloc(nq + 1, sizeof(double));
  for (int i = 0; i < m->ncon; i++) {
    memset(r1, 0, sizeof(double) * nq);
    memset(r2, 0, sizeof(double) * nq);
    mbd_expr_rows(m, d, i, NULL, r1, r2);
    for (int j = 0; j < nq; j++) {
      double q0 = d->q[j], p[3], n[3];
      d->q[j] = q0 + eps;
      constraint_levels(m, d, i, p);
      d->q[j] = q0 - eps;
      constraint_levels(m, d, i, n);
      d->q[j] = q0;
      worst = fmax(worst, scaled_error(r1[j], (p[1] - n[1]) / (2 * eps)));
      worst = fmax(worst, scaled_error(r2[j], (p[2] - n[2]) / (2 * eps)));
    }
  }
  char what[160];
  snprintf(what, sizeof what, "%s: d(dPhi/dt)/dq and d(d2Phi/dt2)/dq", name);
  mbt_check(t, worst < 1e-7, what, worst, 1e-7);
  free(r1), free(r2);
}

static void check_param(mbt_tally* t, const char* name, mb_desc* desc, const mb_model* m,
                        mb_data* d, int p, const double* w) {
  const int nq = m->nq, nc = m->ncon;
  char what[200];
  mb_error err;
  mb_model *dm = NULL, *mp = NULL, *mm = NULL;
  const double v0 = desc->param_value[p], h = 1e-6 * fmax(1, fabs(v0));
  mb_status st = mbd_model_tangent(desc, m, p, &dm, &err);
  mb_desc_set_param(desc, p, v0 + h);
  if (st == MB_OK) st = mb_compile(desc, &mp, &err);
  mb_desc_set_param(desc, p, v0 - h);
  if (st == MB_OK) st = mb_compile(desc, &mm, &err);
  mb_desc_set_param(desc, p, v0);
  snprintf(what, sizeof what, "%s: models for d/d%s", name, desc->param_name[p]);
  if (st != MB_OK) {
    printf("     %s\n", err.message);
    mbt_check(t, 0, what, 1, 0);
    return;
  }
  double *a = calloc(nq + 1, sizeof(double)), *b = calloc(nq + 1, sizeof(double));
  double* c = calloc(nq + 1, sizeof(double));
  mb_data* dp = mb_data_create(mp);
  mb_data* dn = mb_data_create(mm);
  memcpy(dp->q, d->q, sizeof(double) * nq), memcpy(dn->q, d->q, sizeof(double) * nq);
  memcpy(dp->qd, d->qd, sizeof(double) * nq), memcpy(dn->qd, d->qd, sizeof(double) * nq);
  memcpy(dp->qdd, d->qdd, sizeof(double) * nq), memcpy(dn->qdd, d->qdd, sizeof(double) * nq);
  dp->t = dn->t = d->t;

  /* Phi and its rates */
  double e_levels = 0;
  for (int i = 0; i < nc; i++) {
    double an[3], hi[3], lo[3];
    mbd_expr_param(m, dm, d, i, an);
    constraint_levels(mp, dp, i, hi);
    constraint_levels(mm, dn, i, lo);
    for (int k = 0; k < 3; k++)
      e_levels = fmax(e_levels, scaled_error(an[k], (hi[k] - lo[k]) / (2 * h)));
  }
  snprintf(what, sizeof what, "%s: d/d%s of Phi, dPhi/dt, d2Phi/dt2", name, desc->param_name[p]);
  mbt_check(t, e_levels < 1e-7, what, e_levels, 1e-7);

  /* Phi_q^T w */
  memset(a, 0, sizeof(double) * nq);
  for (int i = 0; i < nc; i++) mbd_expr_rows_param(m, dm, d, i, w[i], a);
  mb_constraints(mp, dp);
  mb_constraints(mm, dn);
  memset(b, 0, sizeof(double) * nq), memset(c, 0, sizeof(double) * nq);
  mb_rows_mul_t(&mp->structure->phiq, dp->phiq, w, 1, b);
  mb_rows_mul_t(&mm->structure->phiq, dn->phiq, w, 1, c);
  double e_rows = 0;
  for (int j = 0; j < nq; j++) e_rows = fmax(e_rows, scaled_error(a[j], (b[j] - c[j]) / (2 * h)));
  snprintf(what, sizeof what, "%s: d/d%s of Phi_q^T w", name, desc->param_name[p]);
  mbt_check(t, e_rows < 1e-7, what, e_rows, 1e-7);

  /* generalised forces */
  mbd_forces_param(m, dm, d, NULL, a);
  mb_forces(mp, dp, 0);
  mb_forces(mm, dn, 0);
  double e_forces = 0;
  for (int j = 0; j < nq; j++)
    e_forces = fmax(e_forces, scaled_error(a[j], (dp->force[j] - dn->force[j]) / (2 * h)));
  snprintf(what, sizeof what, "%s: d/d%s of Q", name, desc->param_name[p]);
  mbt_check(t, e_forces < 1e-7, what, e_forces, 1e-7);

  free(a), free(b), free(c);
  mb_data_free(dp), mb_data_free(dn);
  mb_model_free(dm), mb_model_free(mp), mb_model_free(mm);
}

int main(void) {
  mbt_tally t = {0};
  unsigned seed = 2024;
  for (size_t k = 0; k < sizeof models / sizeof models[0]; k++) {
    mb_desc desc;
    mb_model* m = mbt_load(models[k], &desc);
    if (!m) {
      t.failed++;
      continue;
    }
    const char* name = strrchr(models[k], '/') + 1;
    mb_data* d = mb_data_create(m);
    mbt_random_state(m, d, &seed);
    check_rate_jacobians(&t, name, m, d);
    double* w = calloc(m->ncon + 1, sizeof(double));
    for (int i = 0; i < m->ncon; i++) w[i] = mbt_uniform(&seed);
    for (int p = 0; p < desc.nparam; p++) check_param(&t, name, &desc, m, d, p, w);
    free(w);
    mb_data_free(d);
    mb_model_free(m);
    mb_desc_free(&desc);
  }
  return mbt_finish(&t);
}
