/* Regression of the forward gradient against the published five-bar benchmark
   (../shared/benchmarks/fivebar.md, seed 003 Table 7 "Reference"; seed 001 for h = 1e-2), in
   natural coordinates and in joint coordinates with both reference points (RTdyn0, RTdyn1). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mbopt/gradient.h"
#include "mbopt/sensitivity.h"
#include "testing.h"

/* rows psi1..psi3, columns Ls1, Ls2, m_A1, x_G, L_A1 */
static const double reference[3][5] = {{-4.2288, 3.2116, 0.31866, 0.44235, 3.3598},
                                       {-15.452, 50.309, 0.97012, 0.74560, -27.359},
                                       {221.64, 2436.6, -32.497, -85.657, -2546.6}};
static const double reference_psi[3] = {0.7268777, 7.342272, 304.92075};
static const double converged_psi[3] = {0.726877, 7.34229, 304.921};

/* The gradient at step h by the forward method (or with adjoint the discrete adjoint) in
   natural coordinates (formulation 0) or joint coordinates with reference point
   formulation - 1. */
static int gradient(double step, int formulation, int adjoint, mb_desc* d, double* psi,
                    double* grad) {
  mb_error err;
  mb_model* m = NULL;
  if (mb_desc_load_json("problems/fivebar.json", d, &err) != MB_OK) return 0;
  if (formulation > 0) {
    d->settings.formulation = MB_FORMULATION_JOINT;
    d->settings.reference =
        formulation == 1 ? MB_REFERENCE_CENTRE_OF_MASS : MB_REFERENCE_GLOBAL_ORIGIN;
  }
  if (mb_compile(d, &m, &err) != MB_OK) return printf("     %s\n", err.message), 0;
  m->opt.step = step;
  mb_data* data = mb_data_create(m);
  mb_status st = adjoint ? mbd_adjoint(d, m, data, 0, psi, grad, NULL, &err)
                         : mbd_forward(d, m, data, psi, grad, &err);
  if (st != MB_OK) printf("     %s\n", err.message);
  mb_data_free(data);
  mb_model_free(m);
  return st == MB_OK;
}

int main(void) {
  mbt_tally t = {0};
  mb_desc d;
  double psi[3], grad[15];
  char what[160];

  /* h = 1e-3: every entry within 2e-4 relative plus 1e-4 absolute, in each formulation */
  static const char* formulation[3] = {"natural", "joint RTdyn0", "joint RTdyn1"};
  int ok;
  for (int fm = 0; fm < 3; fm++) {
    ok = gradient(1e-3, fm, 0, &d, psi, grad);
    snprintf(what, sizeof what, "%s: five-bar forward gradient at h = 1e-3 runs", formulation[fm]);
    mbt_check(&t, ok, what, ok, 1);
    for (int f = 0; ok && f < 3; f++) {
      /* the trapezoidal rule's psi at h = 1e-3 in natural coordinates; joint coordinates take
         their own trapezoidal path, checked against the converged values */
      const double expect = fm == 0 ? reference_psi[f] : converged_psi[f];
      const double e = fabs(psi[f] / expect - 1), limit = fm == 0 ? 1e-6 : 5e-6;
      snprintf(what, sizeof what, "%s: psi%d = %.9g vs %.8g (relative)", formulation[fm], f + 1,
               psi[f], expect);
      mbt_check(&t, e < limit, what, e, limit);
      for (int k = 0; k < 5; k++) {
        const double ref = reference[f][k], got = grad[f * 5 + k];
        const double bound = 2e-4 * fabs(ref) + 1e-4;
        snprintf(what, sizeof what, "%s: d psi%d / d %s = %.6g vs %.5g", formulation[fm], f + 1,
                 d.param_name[k], got, ref);
        mbt_check(&t, fabs(got - ref) <= bound, what, fabs(got - ref), bound);
      }
    }
    mb_desc_free(&d);
    /* the discrete adjoint gives the same gradient to 1e-8, entry by entry */
    double psi_a[3], grad_a[15], worst = 0;
    const int ok_a = ok && gradient(1e-3, fm, 1, &d, psi_a, grad_a);
    for (int i = 0; ok_a && i < 15; i++)
      worst = fmax(worst, fabs(grad_a[i] - grad[i]) / fabs(grad[i]));
    snprintf(what, sizeof what, "%s: adjoint against forward, largest relative difference",
             formulation[fm]);
    mbt_check(&t, ok_a && worst <= 1e-8, what, worst, 1e-8);
    mb_desc_free(&d);
  }

  /* h = 1e-2: d psi1 / d[Ls1, Ls2] of seed 001 */
  ok = gradient(1e-2, 0, 0, &d, psi, grad);
  if (ok) {
    const double seed001[2] = {-4.2294, 3.2114};
    for (int k = 0; k < 2; k++) {
      snprintf(what, sizeof what, "h = 1e-2: d psi1 / d %s = %.6g vs %.5g", d.param_name[k],
               grad[k], seed001[k]);
      mbt_check(&t, fabs(grad[k] - seed001[k]) < 1e-3, what, fabs(grad[k] - seed001[k]), 1e-3);
    }
  } else {
    t.failed++;
  }
  mb_desc_free(&d);

  /* auto: the adjoint when the parameters outnumber the functionals (m = 3 here), else forward;
     both give the same gradient of the parameters asked for */
  mb_model* m = mbt_load("problems/fivebar.json", &d);
  if (m) {
    m->opt.t_end = 0.2;
    const int chosen[5] = {0, 1, 2, 3, 4};
    const mb_method expected[6] = {0,
                                   MB_METHOD_FORWARD,
                                   MB_METHOD_FORWARD,
                                   MB_METHOD_FORWARD,
                                   MB_METHOD_ADJOINT,
                                   MB_METHOD_ADJOINT};
    for (int p = 1; p <= 5; p++) {
      d.gradient_param = chosen, d.ngradient_param = p;
      mb_gradient_info info;
      mb_error err;
      double g[15], forward_g[15];
      const int ran = mb_gradient(&d, m, MB_METHOD_AUTO, 0, psi, g, &info, &err) == MB_OK &&
                      mb_gradient(&d, m, MB_METHOD_FORWARD, 0, psi, forward_g, NULL, &err) == MB_OK;
      double worst = 0;
      for (int i = 0; ran && i < 3 * p; i++)
        worst = fmax(worst, fabs(g[i] - forward_g[i]) / fmax(1, fabs(forward_g[i])));
      snprintf(what, sizeof what, "auto at p = %d, m = 3: %s", p,
               ran ? mb_method_name(info.method) : "failed");
      if (!ran) printf("     %s\n", err.message);
      mbt_check(&t, ran && info.method == expected[p] && worst < 1e-9, what, worst, 1e-9);
    }
    d.gradient_param = NULL, d.ngradient_param = 0;
    mb_model_free(m);
  } else {
    t.failed++;
  }
  mb_desc_free(&d);
  return mbt_finish(&t);
}
