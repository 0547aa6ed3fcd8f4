/* Forward (direct differentiation) sensitivity of ALI3-P with projections (seed 001, section 3).

   Per step, with one right-hand side per parameter (sens.h for the equations):
   - the tangent linear model (eq. 23) with the Newton matrix at the converged positions, whose
     multiplier sensitivities follow the augmented Lagrangian update (eq. 14b);
   - the velocity and acceleration projection sensitivities (eqs. 15-21), with the factorisation
     of the projections.
   The initial state is differentiated through the assembly. Functionals are integrated with the
   trapezoidal rule on the step grid, the quadrature consistent with the integrator. A step
   retried on sub-steps (ali3p.c) is taken again with the sensitivities of each sub-step. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "formulation.h"
#include "mbopt/sensitivity.h"
#include "mbopt/simulate.h"
#include "sens.h"
#include "stepper.h"

/* Newmark history of the sensitivities (eqs. 22) from the last step's values. */
static void sensitivity_history(const mb_model* m, const sens_ws* ws, double* hat_v,
                                double* hat_a) {
  mb_newmark_history(&m->opt, (size_t)m->nq * ws->p, ws->qr, ws->qdr, ws->qddr, hat_v, hat_a);
}

/* The velocity (level 1) or acceleration (level 2) projection sensitivities at the projected
   state: M x_rho + Phi_q^T s = M x*_rho - H_mult q_rho + r, Phi_q x_rho = -(d^level Phi)_q q_rho
   [- 2 (dPhi/dt)_q qd_rho] + g, with r, g the explicit terms. */
static void projection_sensitivity(const mb_model* m, mb_data* d, sens_ws* ws, int level,
                                   const double* xr_star, double* xr) {
  const int nq = m->nq, nc = m->ncon, p = ws->p;
  const mb_rows* rows = &m->structure->phiq;
  sens_hessian(m, d, ws, level == 1 ? d->sigma : d->kappa);
  for (int k = 0; k < p; k++) {
    const size_t cq = (size_t)k * nq, cc = (size_t)k * nc;
    double *r = ws->rhs + cq, *g = ws->g + cc;
    if (sens_active(ws, k, d->t)) {
      sens_explicit_projection(m, d, ws, k, level, r, g);
    } else {
      memset(r, 0, sizeof(double) * nq);
      memset(g, 0, sizeof(double) * nc);
    }
    mb_mass_mul(m, xr_star + cq, 1, r);
    sens_hessian_mul(m, ws, ws->qr + cq, -1, r);
    mb_rows_mul(rows, level == 1 ? ws->pt.phid_q : ws->pt.phidd_q, ws->qr + cq, -1, g);
    if (level == 2) mb_rows_mul(rows, ws->pt.phid_q, ws->qdr + cq, -2, g);
  }
  sens_kkt_solve(m, d, SENS_PROJECTION, ws->pt.pen, p, ws->rhs, ws->g, xr,
                 ws->s + (size_t)(level - 1) * nc * ws->ncol, NULL);
}

/* One step: the tangent linear model at the dynamic state, then the projections, which solve
   with the step's own factorisation of the projection matrix (the same positions). */
static mb_status step_sensitivity(const mb_model* m, mb_data* d, sens_ws* ws, double* hat_v,
                                  double* hat_a, double* qdr_star, double* qddr_star,
                                  mb_error* err) {
  const int nq = m->nq, nc = m->ncon, p = ws->p;
  const double h = m->opt.step, beta = m->opt.beta, gamma = m->opt.gamma;
  ws->pt.d = d;
  mb_status st = sens_dynamic_state(m, &ws->pt, NULL, err);
  if (st != MB_OK) return st;

  /* eq. 23: A q_rho + Phi_q^T lambda_rho = r + M hat_a + C hat_v, Phi_q q_rho = -Phi_rho */
  for (int k = 0; k < p; k++) {
    const size_t cq = (size_t)k * nq, cc = (size_t)k * nc;
    double *r = ws->rhs + cq, *g = ws->g + cc;
    if (sens_active(ws, k, d->t)) {
      sens_explicit_dynamics(m, d, ws, k, r, g);
    } else {
      memset(r, 0, sizeof(double) * nq);
      memset(g, 0, sizeof(double) * nc);
    }
    mb_mass_mul(m, hat_a + cq, 1, r);
    mb_spmv(m->structure->sys, d->damp, hat_v + cq, 1, r);
  }
  sens_kkt_solve(m, d, SENS_NEWTON, m->opt.penalty, p, ws->rhs, ws->g, ws->qr, ws->lamr,
                 &ws->pt.fric);
  for (size_t i = 0; i < (size_t)nq * p; i++) {
    qdr_star[i] = gamma / (beta * h) * ws->qr[i] - hat_v[i];
    qddr_star[i] = ws->qr[i] / (beta * h * h) - hat_a[i];
  }

  /* projections (eqs. 15-21) */
  sens_use_projected_rates(m, &ws->pt);
  if ((st = sens_projected_state(m, &ws->pt, 1, err)) != MB_OK) return st;
  projection_sensitivity(m, d, ws, 1, qdr_star, ws->qdr);
  projection_sensitivity(m, d, ws, 2, qddr_star, ws->qddr);
  return MB_OK;
}

/* What a step's sensitivities carry from one step to the next (mb_substep_hook's user). */
typedef struct forward_step {
  sens_ws* ws;
  double *hat_v, *hat_a, *qdr_star, *qddr_star;
} forward_step;

/* The sensitivities through the step of model m (the model's or a sub-step's) just taken. */
static mb_status forward_step_taken(const mb_model* m, mb_data* d, void* user, mb_error* err) {
  forward_step* fs = user;
  sensitivity_history(m, fs->ws, fs->hat_v, fs->hat_a);
  return step_sensitivity(m, d, fs->ws, fs->hat_v, fs->hat_a, fs->qdr_star, fs->qddr_star, err);
}

void sens_accumulate(const mb_model* m, mb_data* d, sens_ws* ws, int final, double weight,
                     double* psi, double* grad) {
  const int nq = m->nq;
  double *gq = ws->gq, *gqd = ws->gq + nq, *gqdd = ws->gq + 2 * nq;
  for (int fn = 0; fn < m->nfunctional; fn++) {
    psi[fn] += weight * mbd_functional_partials(m, d, fn, final, gq, gqd, gqdd);
    if (!grad) continue;
    /* reactions read the multipliers */
    const int glam = ws->reads_lambda && mbd_functional_lambda(m, d, fn, final, ws->glam) > 0;
    for (int k = 0; k < ws->p; k++) {
      const size_t cq = (size_t)k * nq, cc = (size_t)k * m->ncon;
      double v = ws->func_dep[k] && sens_active(ws, k, d->t)
                     ? mbd_functional_param(m, ws->dm[k], d, fn, final)
                     : 0;
      for (int j = 0; j < nq; j++)
        v += gq[j] * ws->qr[cq + j] + gqd[j] * ws->qdr[cq + j] + gqdd[j] * ws->qddr[cq + j];
      /* of lambda + kappa: the step's multipliers and the acceleration projection's */
      const double* kr = ws->s + (size_t)m->ncon * ws->ncol + cc;
      for (int i = 0; glam && i < m->ncon; i++) v += ws->glam[i] * (ws->lamr[cc + i] + kr[i]);
      grad[(size_t)fn * ws->p + k] += weight * v;
    }
  }
}

mb_status mb_natural_forward(const mb_desc* desc, const mb_model* m, mb_data* d, double* psi,
                             double* grad, mb_error* err) {
  const int p = grad ? mb_desc_gradient_count(desc) : 0;
  const size_t cols = (size_t)m->nq * (p > 0 ? p : 1);
  sens_ws* ws = sens_create(desc, m, p, err);
  double* hist = calloc(4 * cols, sizeof(double));
  mb_step_start start;
  const int start_failed = mb_step_start_init(m, &start);
  mb_status st = MB_ERR_MEMORY;
  if (!ws || !hist || start_failed) {
    if (!ws && err && err->status != MB_OK)
      st = err->status;
    else
      mb_error_set(err, st, "forward sensitivity: out of memory");
    goto done;
  }
  forward_step fs = {ws, hist, hist + cols, hist + 2 * cols, hist + 3 * cols};
  memset(psi, 0, sizeof(double) * m->nfunctional);
  if (grad) memset(grad, 0, sizeof(double) * m->nfunctional * p);
  memset(&d->report, 0, sizeof d->report);

  st = mb_assemble_with(m, d, NULL, NULL, err);
  if (st == MB_OK && p > 0) st = sens_initial(m, d, ws, err);
  if (st != MB_OK) goto done;
  const double h = m->opt.step;
  const long nstep = mb_step_count(m);
  mb_sensors_angles(m, d);
  sens_accumulate(m, d, ws, 0, nstep > 0 ? 0.5 * h : 0, psi, grad);
  for (long n = 1; n <= nstep; n++) {
    /* a step retried on sub-steps is taken again with the sensitivities of each sub-step */
    int substeps;
    if ((st = mb_step_or_substeps(m, d, &start, &substeps, err)) != MB_OK) goto done;
    if (p > 0)
      st = substeps == 1 ? forward_step_taken(m, d, &fs, err)
                         : mb_substeps(m, d, &start, substeps, forward_step_taken, &fs, err);
    if (st != MB_OK) goto done;
    mb_sensors_angles(m, d);
    sens_accumulate(m, d, ws, 0, n == nstep ? 0.5 * h : h, psi, grad);
  }
  sens_accumulate(m, d, ws, 1, 1, psi, grad);

done:
  mb_step_start_free(&start);
  free(hist);
  sens_free(ws);
  return st;
}
