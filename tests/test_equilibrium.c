/* The static equilibrium of the initial configuration (core/natural/equilibrium.c, and in joint
   coordinates core/joint/joint_equilibrium.c):
   - a planar quarter-car on a tyre spring against its closed-form equilibrium, and the gradients
     of the body height by both sensitivity methods against the closed-form derivatives, in both
     formulations;
   - the buggy's equilibrium found in joint coordinates balances the natural model's forces (its
     own balance, solved for the multipliers at those positions) and gives the outputs of the
     natural formulation's equilibrium;
   - started there, the quarter-car and the buggy on four tyres stay at rest, in both formulations;
   - the Jacobian of the balance against central differences of its residual, on a wheel with a
     tyre, a held translation and a held angle, with arbitrary multipliers;
   - with nothing holding the car up there is no equilibrium, and the error says so. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "testing.h"

#define G 9.81

static double param(const mb_desc* d, const char* name) {
  return d->param_value[mb_desc_param_index(d, name)];
}

/* The quarter-car: tyre spring k_t, L_t under the wheel (m_u), suspension k_s, L_s under the
   body (m_s). In equilibrium the wheel centre sits at z_u = L_t - (m_s + m_u) g / k_t and the
   body at z_s = z_u + L_s - m_s g / k_s. */
static void quarter_car(mbt_tally* t, mb_formulation formulation) {
  mb_desc d;
  mb_error err;
  mb_model* m = NULL;
  if (mb_desc_load_json("tests/models/ok/quarter_car.json", &d, &err) != MB_OK) {
    mbt_check(t, 0, err.message, 0, 0);
    return;
  }
  d.settings.formulation = formulation;
  if (mb_compile(&d, &m, &err) != MB_OK) {
    mbt_check(t, 0, err.message, 0, 0);
    mb_desc_free(&d);
    return;
  }
  const char* f = formulation == MB_FORMULATION_JOINT ? "joint" : "natural";
  const double ms = param(&d, "m_s"), mu = param(&d, "m_u"), ks = param(&d, "k_s");
  const double kt = param(&d, "k_t"), Ls = param(&d, "L_s"), Lt = param(&d, "L_t");
  const double zu = Lt - (ms + mu) * G / kt, zs = zu + Ls - ms * G / ks;
  mb_data* data = mb_data_create(m);
  char what[160];
  mb_status st = mb_simulate(m, data, NULL, NULL, &err);
  snprintf(what, sizeof what, "quarter-car (%s): simulates from its static equilibrium", f);
  mbt_check(t, st == MB_OK, what, st, 0);
  snprintf(what, sizeof what, "quarter-car (%s): equilibrium iterations", f);
  mbt_check(t, data->report.equilibrium_iterations >= 1, what, data->report.equilibrium_iterations,
            1);
  const double qd = mbu_norm_inf(m->nq, data->qd);
  snprintf(what, sizeof what, "quarter-car (%s): |qdot| after 1 s at rest", f);
  mbt_check(t, qd < 1e-8, what, qd, 1e-8);
  /* outputs z_body, z_wheel at the final time, which equal the initial ones at rest */
  mb_sensors(m, data);
  double e = fmax(fabs(data->out[0] - zs), fabs(data->out[1] - zu));
  snprintf(what, sizeof what, "quarter-car (%s): equilibrium heights against the closed form", f);
  mbt_check(t, e < 1e-12, what, e, 1e-12);

  /* d z_s / d (m_s, m_u, k_s, c_s, L_s, k_t, c_t, L_t), the order of "parameters" */
  const double exact[8] = {
      -G / kt - G / ks, -G / kt, ms * G / (ks * ks), 0, 1, (ms + mu) * G / (kt * kt), 0, 1};
  const int p = mb_desc_gradient_count(&d);
  double psi[2], grad[2][2 * 8];
  const mb_method methods[2] = {MB_METHOD_FORWARD, MB_METHOD_ADJOINT};
  for (int k = 0; k < 2 && p == 8; k++) {
    st = mb_gradient(&d, m, methods[k], 0, psi, grad[k], NULL, &err);
    /* relative to each entry, and absolute for the zeros */
    double worst = st == MB_OK ? 0 : INFINITY;
    for (int j = 0; j < p; j++)
      worst = fmax(worst, fabs(grad[k][j] - exact[j]) / (fabs(exact[j]) + 1e-3));
    snprintf(what, sizeof what, "quarter-car (%s): %s d height / d parameters, closed form", f,
             k ? "adjoint" : "forward");
    mbt_check(t, worst < 1e-9, what, worst, 1e-9);
  }
  double diff = 0, size = mbu_norm_inf(2 * p, grad[0]);
  for (int j = 0; j < 2 * p; j++) diff = fmax(diff, fabs(grad[0][j] - grad[1][j]));
  snprintf(what, sizeof what, "quarter-car (%s): forward and adjoint agree", f);
  mbt_check(t, p == 8 && diff <= 1e-10 * size, what, diff / size, 1e-10);

  /* without the tyre spring nothing holds the car up */
  mb_model* loose = NULL;
  mb_data* dl = NULL;
  mb_desc_set_named(&d, "k_t", 0, &err);
  st = mb_compile(&d, &loose, &err);
  if (st == MB_OK && (dl = mb_data_create(loose))) st = mb_assemble(loose, dl, &err);
  const int named = st == MB_ERR_ASSEMBLY && strstr(err.message, "static equilibrium not found") &&
                    strstr(err.message, "body ");
  if (!named) printf("     %s\n", err.message);
  snprintf(what, sizeof what, "quarter-car (%s) without support: no equilibrium, the body named",
           f);
  mbt_check(t, named, what, st, 0);
  mb_data_free(dl);
  mb_model_free(loose);
  mb_data_free(data);
  mb_model_free(m);
  mb_desc_free(&d);
}

/* The balance's Jacobian against central differences of its residual in q and y. */
static void balance_jacobian(mbt_tally* t) {
  mb_desc d;
  mb_error err;
  if (mb_desc_load_json("tests/models/ok/tyre_wheel.json", &d, &err) != MB_OK) {
    mbt_check(t, 0, err.message, 0, 0);
    return;
  }
  d.settings.equilibrium = 1;
  d.prescribe[1].value.value = 0.295; /* the carrier held so that the tyre carries load */
  mb_model* m = NULL;
  mb_data* data = NULL;
  mb_balance* b = NULL;
  mb_status st = mb_compile(&d, &m, &err);
  if (st == MB_OK) data = mb_data_create(m);
  if (data) st = mb_assemble(m, data, &err);
  if (st == MB_OK && data && (b = mb_balance_create(m))) st = mb_balance_setup(m, data, b);
  if (st != MB_OK || !b) {
    mbt_check(t, 0, "tyre wheel: balance set up", st, 0);
    goto done;
  }
  const int n = b->n, nq = m->nq, ny = n - nq;
  unsigned seed = 7;
  for (int i = 0; i < ny; i++) b->y[i] = mbt_uniform(&seed);
  mb_balance_eval(m, data, b, 1);
  double* A = malloc(sizeof(double) * n * n);
  double* Fp = malloc(sizeof(double) * n);
  memcpy(A, b->A, sizeof(double) * n * n);
  double worst = 0, size = mbu_norm_inf(n * n, A);
  for (int j = 0; j < n; j++) {
    double* x = j < nq ? data->q + j : b->y + j - nq;
    const double h = 1e-6, x0 = *x;
    *x = x0 + h;
    mb_balance_eval(m, data, b, 0);
    memcpy(Fp, b->F, sizeof(double) * n);
    *x = x0 - h;
    mb_balance_eval(m, data, b, 0);
    *x = x0;
    for (int i = 0; i < n; i++)
      worst = fmax(worst, fabs((Fp[i] - b->F[i]) / (2 * h) - A[(size_t)i * n + j]));
  }
  mbt_check(t, worst <= 1e-6 * size, "tyre wheel: balance Jacobian against central differences",
            worst / size, 1e-6);
  free(A), free(Fp);
done:
  mb_balance_free(b);
  mb_data_free(data);
  mb_model_free(m);
  mb_desc_free(&d);
}

/* The buggy on four tyres, every initial value released and every rate zero, in equilibrium. */
static void buggy_at_rest(mbt_tally* t, mb_formulation formulation) {
  mb_desc d;
  mb_error err;
  if (mb_desc_load_json("problems/vehicle/step_descent.json", &d, &err) != MB_OK) {
    mbt_check(t, 0, err.message, 0, 0);
    return;
  }
  d.settings.equilibrium = 1;
  d.settings.t_end = 1;
  d.settings.formulation = formulation;
  const char* f = formulation == MB_FORMULATION_JOINT ? "joint" : "natural";
  char what[160];
  for (int i = 0; i < d.nprescribe; i++) {
    d.prescribe[i].has_value = 0;
    d.prescribe[i].rate = (mb_real){0, -1, 0};
  }
  mb_model* m = NULL;
  mb_data* data = NULL;
  mb_status st = mb_compile(&d, &m, &err);
  if (st == MB_OK && (data = mb_data_create(m))) st = mb_simulate(m, data, NULL, NULL, &err);
  snprintf(what, sizeof what, "buggy (%s): simulates from its static equilibrium", f);
  mbt_check(t, st == MB_OK, what, st, 0);
  if (st == MB_OK) {
    const double qd = mbu_norm_inf(m->nq, data->qd);
    snprintf(what, sizeof what, "buggy (%s): |qdot| after 1 s at rest", f);
    mbt_check(t, qd < 1e-8, what, qd, 1e-8);
  }
  mb_data_free(data);
  mb_model_free(m);
  mb_desc_free(&d);
}

/* The buggy's equilibrium in joint coordinates (the step descent's, its held values kept): the
   natural model's balance at those positions, with the multipliers that balance its forces best,
   leaves round-off; the outputs match those of the natural formulation's own equilibrium. */
static void buggy_joint(mbt_tally* t) {
  mb_desc d;
  mb_error err;
  if (mb_desc_load_json("problems/vehicle/step_descent.json", &d, &err) != MB_OK) {
    mbt_check(t, 0, err.message, 0, 0);
    return;
  }
  mb_model* m[2] = {NULL, NULL};
  mb_data* data[2] = {NULL, NULL};
  mb_balance* b = NULL;
  int ok = 1;
  for (int k = 0; k < 2 && ok; k++) {
    d.settings.formulation = k ? MB_FORMULATION_JOINT : MB_FORMULATION_NATURAL;
    ok = mb_compile(&d, &m[k], &err) == MB_OK && (data[k] = mb_data_create(m[k])) &&
         mb_assemble(m[k], data[k], &err) == MB_OK;
    if (ok) mb_sensors(m[k], data[k]);
  }
  mbt_check(t, ok, ok ? "buggy: assembled in both formulations" : err.message, ok, 1);
  if (!ok) goto done;
  double gap = 0, size = 0;
  for (int i = 0; i < m[0]->nout; i++) {
    gap = fmax(gap, fabs(data[1]->out[i] - data[0]->out[i]));
    size = fmax(size, fabs(data[0]->out[i]));
  }
  mbt_check(t, gap <= 1e-9 * size, "buggy: outputs at the joint and the natural equilibrium",
            gap / size, 1e-9);
  const mb_model* aux = m[1];
  b = mb_balance_create(aux);
  if (!b || mb_balance_setup(aux, data[1], b) != MB_OK) {
    mbt_check(t, 0, "buggy: natural balance set up", 0, 0);
    goto done;
  }
  mb_balance_eval(aux, data[1], b, 0);
  const double force = mbu_norm_inf(aux->nq, b->F);
  mbt_check(t, force <= 1e-9, "buggy: natural balance at the joint equilibrium, of the force scale",
            force, 1e-9);
done:
  mb_balance_free(b);
  for (int k = 0; k < 2; k++) mb_data_free(data[k]), mb_model_free(m[k]);
  mb_desc_free(&d);
}

int main(void) {
  mbt_tally t = {0, 0};
  quarter_car(&t, MB_FORMULATION_NATURAL);
  quarter_car(&t, MB_FORMULATION_JOINT);
  buggy_joint(&t);
  balance_jacobian(&t);
  buggy_at_rest(&t, MB_FORMULATION_NATURAL);
  buggy_at_rest(&t, MB_FORMULATION_JOINT);
  return mbt_finish(&t);
}
