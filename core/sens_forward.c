/* Forward (direct differentiation) sensitivity of ALI3-P with projections (seed 001, section 3).

   The discrete solution of every step satisfies M qdd* + Phi_q^T lambda = Q, Phi = 0 with the
   Newmark rates qd*, qdd* of q (eqs. 2, 3), then the mass-orthogonal projections
   M (qd - qd*) + Phi_q^T sigma = 0, dPhi/dt = 0 and M (qdd - qdd*) + Phi_q^T kappa = 0,
   d2Phi/dt2 = 0 (eqs. 6, 7, iterated to convergence). Differentiating each with respect to the
   parameters gives, per step, three linear KKT systems with one right-hand side per parameter:
   - the tangent linear model (eq. 23) with the Newton matrix at the converged positions, whose
     multiplier sensitivities follow the augmented Lagrangian update (eq. 14b);
   - the velocity and acceleration projection sensitivities (eqs. 15-21), with the factorisation
     of the projections.
   The initial state is differentiated through the assembly. Functionals are integrated with the
   trapezoidal rule on the step grid, the quadrature consistent with the integrator. */
#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "mbopt/sensitivity.h"
#include "mbopt/simulate.h"

typedef struct forward {
  int p, nq, nc, nf;
  mb_model** dm;     /* (p) tangent models */
  double* qr;        /* (nq x p) dq/drho, one column per parameter */
  double* qdr;       /* (nq x p) */
  double* qddr;      /* (nq x p) */
  double* qdr_star;  /* (nq x p) before the projection */
  double* qddr_star; /* (nq x p) */
  double* lamr;      /* (nc x p) multiplier sensitivities of the dynamics */
  double* hat_v;     /* (nq x p) Newmark history of the sensitivities */
  double* hat_a;     /* (nq x p) */
  double* rhs;       /* (nq x p) */
  double* g;         /* (nc x p) constraint right-hand sides */
  double* s;         /* (nc x p) multipliers of a KKT solve */
  double* phid_q;    /* (nc x nq) d(dPhi/dt)/dq */
  double* phidd_q;   /* (nc x nq) d(d2Phi/dt2)/dq */
  double* H;         /* (nq x nq) Hessian products */
  double* vec;       /* (nq) */
  double* par;       /* (nc x 3) explicit parameter derivatives of Phi and its rates */
  double* gq;        /* (3 nq) partials of a functional */
  double* save;      /* (2 nq) projected rates while the step is differentiated */
  /* which parts of the model each parameter reaches: the work for the others is skipped */
  unsigned char* con_dep;   /* (p x nc) */
  unsigned char* force_dep; /* (p x nforce) */
  unsigned char* mass_dep;  /* (p) */
} forward;

static void forward_free(forward* f) {
  if (!f) return;
  if (f->dm)
    for (int k = 0; k < f->p; k++) mb_model_free(f->dm[k]);
  free(f->dm);
  free(f->qr);
  free(f->con_dep);
  free(f);
}

static int nonzero(int n, const double* x) {
  for (int i = 0; i < n; i++)
    if (x[i] != 0) return 1;
  return 0;
}

static int lvec_depends(const mb_model* dm, int lv) {
  if (lv < 0) return 0;
  if (nonzero(3, dm->lvec_const + 3 * lv)) return 1;
  return nonzero(9 * dm->lvec_termnum[lv], dm->term_W + 9 * dm->lvec_termadr[lv]);
}

static int func_depends(const mb_model* m, const mb_model* dm, int fn) {
  if (fn < 0) return 0;
  int n = m->func_type[fn] == MB_FUNC_TABLE ? 3 * m->func_num[fn] : m->func_num[fn];
  return nonzero(n, dm->func_data + m->func_adr[fn]);
}

/* The constraints, force elements and mass matrix that parameter k reaches. */
static void dependence(const mb_model* m, forward* f, int k) {
  const mb_model* dm = f->dm[k];
  for (int i = 0; i < m->ncon; i++) {
    int dep = dm->con_value[i] != 0 || func_depends(m, dm, m->con_func[i]);
    for (int j = 0; j < 4; j++) dep |= lvec_depends(dm, m->con_lvec[4 * i + j]);
    f->con_dep[(size_t)k * m->ncon + i] = (unsigned char)dep;
  }
  for (int i = 0; i < m->nforce; i++) {
    int dep =
        dm->force_k[i] != 0 || dm->force_c[i] != 0 || dm->force_l0[i] != 0 || dm->force_f0[i] != 0;
    for (int j = 0; j < 2; j++) dep |= lvec_depends(dm, m->force_lvec[2 * i + j]);
    for (int j = 0; j < 3; j++) dep |= func_depends(m, dm, m->force_func[3 * i + j]);
    if (m->force_type[i] == MB_FORCE_TORQUE)
      for (int j = 0; j < m->dim; j++)
        dep |= lvec_depends(dm, m->body_axes[3 * m->force_body[i] + j]);
    f->force_dep[(size_t)k * m->nforce + i] = (unsigned char)dep;
  }
  f->mass_dep[k] = (unsigned char)nonzero(m->nq * m->nq, dm->mass);
}

static forward* forward_create(const mb_desc* desc, const mb_model* m, int p, mb_error* err) {
  forward* f = calloc(1, sizeof *f);
  if (!f) return NULL;
  const size_t nq = m->nq, nc = m->ncon, np = p > 0 ? p : 1;
  f->p = p, f->nq = m->nq, f->nc = m->ncon, f->nf = m->nfunctional;
  size_t total =
      8 * nq * np + 3 * nc * np + 2 * nc * nq + nq * nq + nq + 3 * nc + 3 * nq + 2 * nq + 8;
  double* b = calloc(total, sizeof(double));
  f->dm = calloc(np, sizeof(mb_model*));
  f->con_dep = calloc(np * (nc + m->nforce + 1) + 1, 1);
  if (!b || !f->dm || !f->con_dep) {
    free(b);
    forward_free(f);
    mb_error_set(err, MB_ERR_MEMORY, "forward sensitivity: out of memory");
    return NULL;
  }
  double** fields[] = {&f->qr,      &f->qdr, &f->qddr, &f->qdr_star, &f->qddr_star, &f->hat_v,
                       &f->hat_a,   &f->rhs, &f->lamr, &f->g,        &f->s,         &f->phid_q,
                       &f->phidd_q, &f->H,   &f->vec,  &f->par,      &f->gq,        &f->save};
  const size_t counts[] = {nq * np, nq * np, nq * np, nq * np, nq * np, nq * np,
                           nq * np, nq * np, nc * np, nc * np, nc * np, nc * nq,
                           nc * nq, nq * nq, nq,      3 * nc,  3 * nq,  2 * nq};
  for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) *fields[i] = b, b += counts[i];
  f->force_dep = f->con_dep + np * nc;
  f->mass_dep = f->force_dep + np * m->nforce;
  for (int k = 0; k < p; k++) {
    if (mbd_model_tangent(desc, m, k, &f->dm[k], err) != MB_OK) {
      forward_free(f);
      return NULL;
    }
    dependence(m, f, k);
  }
  return f;
}

/* ---------------------------------------------------------------------------------------------
   KKT solves by the augmented Lagrangian iteration */

typedef enum { FACTOR_NEWTON, FACTOR_PROJECTION } factor_kind;

/* Solves [A Phi_q^T; Phi_q 0] [x; s] = [r; g] for p right-hand sides, with A + pen Phi_q^T Phi_q
   factorised in d (the Newton matrix divided by beta h^2, or the projection matrix). s holds the
   starting multipliers and receives the converged ones. Returns the final violation. */
static double kkt_solve(const mb_model* m, mb_data* d, factor_kind kind, double pen, int p,
                        const double* r, const double* g, double* x, double* s) {
  const int nq = m->nq, nc = m->ncon;
  const double bh2 = m->opt.beta * m->opt.step * m->opt.step;
  double worst = 0;
  for (int it = 0; it < 100; it++) {
    /* x = (A + pen Phi_q^T Phi_q)^-1 (r - Phi_q^T (s - pen g)) */
    for (int k = 0; k < p; k++) {
      double* xk = x + (size_t)k * nq;
      const double *sk = s + (size_t)k * nc, *gk = g + (size_t)k * nc;
      memcpy(xk, r + (size_t)k * nq, sizeof(double) * nq);
      for (int i = 0; i < nc; i++) {
        const double w = sk[i] - pen * m->con_scale[i] * gk[i];
        if (w == 0) continue;
        const double* row = d->phiq + (size_t)i * nq;
        for (int j = 0; j < nq; j++) xk[j] -= w * row[j];
      }
      if (kind == FACTOR_NEWTON)
        for (int j = 0; j < nq; j++) xk[j] *= bh2;
    }
    if (kind == FACTOR_NEWTON)
      LAPACKE_dgetrs(LAPACK_COL_MAJOR, 'T', nq, p, d->tangent, nq, d->pivot, x, nq);
    else
      LAPACKE_dpotrs(LAPACK_COL_MAJOR, 'L', nq, p, d->proj, nq, x, nq);
    /* s += pen (Phi_q x - g) */
    worst = 0;
    double scale = 1;
    for (int k = 0; k < p; k++) {
      const double* xk = x + (size_t)k * nq;
      double* sk = s + (size_t)k * nc;
      const double* gk = g + (size_t)k * nc;
      scale = fmax(scale, mbu_norm_inf(nq, xk));
      for (int i = 0; i < nc; i++) {
        double v = -gk[i];
        const double* row = d->phiq + (size_t)i * nq;
        for (int j = 0; j < nq; j++) v += row[j] * xk[j];
        sk[i] += pen * m->con_scale[i] * v;
        worst = fmax(worst, fabs(v));
      }
    }
    if (worst <= 1e-13 * scale) break;
  }
  return worst;
}

/* ---------------------------------------------------------------------------------------------
   pieces of the right-hand sides */

/* phid_q and phidd_q of all constraints at the state of d */
static void rate_jacobians(const mb_model* m, mb_data* d, forward* f) {
  const int nq = m->nq;
  memset(f->phid_q, 0, sizeof(double) * m->ncon * nq);
  memset(f->phidd_q, 0, sizeof(double) * m->ncon * nq);
  for (int i = 0; i < m->ncon; i++)
    mbd_expr_rows(m, d, i, NULL, f->phid_q + (size_t)i * nq, f->phidd_q + (size_t)i * nq);
}

/* out (nq) -= (sum_i w_i H_i) x, out -= (dPhi_q/drho)^T w for parameter k */
static void subtract_multiplier_terms(const mb_model* m, mb_data* d, forward* f, int k,
                                      const double* w, const double* x, double* out) {
  const int nq = m->nq;
  memset(f->vec, 0, sizeof(double) * nq);
  const unsigned char* dep = f->con_dep + (size_t)k * m->ncon;
  for (int i = 0; i < m->ncon; i++)
    if (dep[i]) mbd_expr_rows_param(m, f->dm[k], d, i, w[i], f->vec);
  for (int j = 0; j < nq; j++) out[j] -= f->vec[j];
  for (int i = 0; i < nq; i++) {
    double sum = 0;
    for (int j = 0; j < nq; j++) sum += f->H[(size_t)i * nq + j] * x[j];
    out[i] -= sum;
  }
}

static void hessian_of(const mb_model* m, mb_data* d, forward* f, const double* w) {
  memset(f->H, 0, sizeof(double) * m->nq * m->nq);
  for (int i = 0; i < m->ncon; i++) mbd_expr_hessian(m, d, i, w[i], f->H);
}

/* explicit parameter derivatives of Phi, dPhi/dt, d2Phi/dt2 of all constraints into f->par */
static void constraint_params(const mb_model* m, mb_data* d, forward* f, int k) {
  const unsigned char* dep = f->con_dep + (size_t)k * m->ncon;
  for (int i = 0; i < m->ncon; i++) {
    if (dep[i])
      mbd_expr_param(m, f->dm[k], d, i, f->par + 3 * i);
    else
      f->par[3 * i] = f->par[3 * i + 1] = f->par[3 * i + 2] = 0;
  }
}

static void matvec_rows(int nrow, int n, const double* A, const double* x, double s, double* y) {
  for (int i = 0; i < nrow; i++) {
    double sum = 0;
    for (int j = 0; j < n; j++) sum += A[(size_t)i * n + j] * x[j];
    y[i] += s * sum;
  }
}

/* ---------------------------------------------------------------------------------------------
   projections: velocity (level 1) and acceleration (level 2) sensitivities at the state of d,
   whose projection matrix is factorised with penalty pen */

static void projection_sensitivity(const mb_model* m, mb_data* d, forward* f, int level,
                                   double pen) {
  const int nq = m->nq, nc = m->ncon, p = f->p;
  const double* star = level == 1 ? d->qd_star : d->qdd_star;
  const double* x = level == 1 ? d->qd : d->qdd;
  const double* xr_star = level == 1 ? f->qdr_star : f->qddr_star;
  double* xr = level == 1 ? f->qdr : f->qddr;
  const double* mult = level == 1 ? d->sigma : d->kappa;
  hessian_of(m, d, f, mult);
  for (int k = 0; k < p; k++) {
    const size_t cq = (size_t)k * nq, cc = (size_t)k * nc;
    const double* qr = f->qr + cq;
    /* r = M x*_rho - M_rho (x - x*) - H_mult q_rho - (dPhi_q/drho)^T mult */
    double* r = f->rhs + cq;
    mbu_matvec(nq, m->mass, xr_star + cq, r);
    for (int j = 0; j < nq; j++) f->save[j] = x[j] - star[j];
    if (f->mass_dep[k]) matvec_rows(nq, nq, f->dm[k]->mass, f->save, -1, r);
    subtract_multiplier_terms(m, d, f, k, mult, qr, r);
    /* g = -(dPhi/dt)_q q_rho - (dPhi/dt)_rho, or
       g = -(d2Phi/dt2)_q q_rho - 2 (dPhi/dt)_q qd_rho - (d2Phi/dt2)_rho */
    constraint_params(m, d, f, k);
    double* g = f->g + cc;
    for (int i = 0; i < nc; i++) g[i] = -f->par[3 * i + level];
    matvec_rows(nc, nq, level == 1 ? f->phid_q : f->phidd_q, qr, -1, g);
    if (level == 2) matvec_rows(nc, nq, f->phid_q, f->qdr + cq, -2, g);
  }
  memset(f->s, 0, sizeof(double) * nc * p);
  kkt_solve(m, d, FACTOR_PROJECTION, pen, p, f->rhs, f->g, xr, f->s);
}

/* ---------------------------------------------------------------------------------------------
   one step: the tangent linear model, then the projections */

static mb_status step_sensitivity(const mb_model* m, mb_data* d, forward* f, mb_error* err) {
  const int nq = m->nq, nc = m->ncon, p = f->p;
  const double h = m->opt.step, beta = m->opt.beta, gamma = m->opt.gamma;
  const double alpha = m->opt.penalty;

  /* the dynamic equations hold at the Newmark rates of the converged positions */
  memcpy(f->save, d->qd, sizeof(double) * nq);
  memcpy(f->save + nq, d->qdd, sizeof(double) * nq);
  memcpy(d->qd, d->qd_star, sizeof(double) * nq);
  memcpy(d->qdd, d->qdd_star, sizeof(double) * nq);
  mb_constraints(m, d);
  mb_forces(m, d, 1);
  mb_newton_matrix(m, d, d->lambda, 1);
  if (LAPACKE_dgetrf(LAPACK_COL_MAJOR, nq, nq, d->tangent, nq, d->pivot) != 0)
    return mb_error_set(err, MB_ERR_SINGULAR, "t = %g: singular tangent linear model", d->t);

  /* right-hand sides of eq. 23 and the constraint rows Phi_q q_rho = -Phi_rho */
  for (int k = 0; k < p; k++) {
    const size_t cq = (size_t)k * nq, cc = (size_t)k * nc;
    double* r = f->rhs + cq;
    mbd_forces_param(m, f->dm[k], d, f->force_dep + (size_t)k * m->nforce, r);
    if (f->mass_dep[k]) matvec_rows(nq, nq, f->dm[k]->mass, d->qdd, -1, r);
    matvec_rows(nq, nq, m->mass, f->hat_a + cq, 1, r);
    matvec_rows(nq, nq, d->damp, f->hat_v + cq, 1, r);
    memset(f->vec, 0, sizeof(double) * nq);
    for (int i = 0; i < nc; i++)
      if (f->con_dep[cc + i]) mbd_expr_rows_param(m, f->dm[k], d, i, d->lambda[i], f->vec);
    for (int j = 0; j < nq; j++) r[j] -= f->vec[j];
    constraint_params(m, d, f, k);
    for (int i = 0; i < nc; i++) f->g[cc + i] = -f->par[3 * i];
  }
  kkt_solve(m, d, FACTOR_NEWTON, alpha, p, f->rhs, f->g, f->qr, f->lamr);
  for (size_t i = 0; i < (size_t)nq * p; i++) {
    f->qdr_star[i] = gamma / (beta * h) * f->qr[i] - f->hat_v[i];
    f->qddr_star[i] = f->qr[i] / (beta * h * h) - f->hat_a[i];
  }

  /* projections, at the projected state (eqs. 15-21) */
  memcpy(d->qd, f->save, sizeof(double) * nq);
  memcpy(d->qdd, f->save + nq, sizeof(double) * nq);
  mb_constraints(m, d);
  rate_jacobians(m, d, f);
  const double pen = mb_projection_penalty(m, d->phiq);
  memcpy(d->proj, m->mass, sizeof(double) * nq * nq);
  mbu_add_gram(nc, nq, d->phiq, m->con_scale, pen, d->proj);
  if (LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'L', nq, d->proj, nq) != 0)
    return mb_error_set(err, MB_ERR_SINGULAR, "t = %g: singular projection matrix", d->t);
  projection_sensitivity(m, d, f, 1, pen);
  projection_sensitivity(m, d, f, 2, pen);
  return MB_OK;
}

/* Newmark history of the sensitivities (eqs. 22) from the last step's values. */
static void sensitivity_history(const mb_model* m, forward* f) {
  const double h = m->opt.step, beta = m->opt.beta, gamma = m->opt.gamma;
  for (size_t i = 0; i < (size_t)f->nq * f->p; i++) {
    f->hat_v[i] = gamma / (beta * h) * f->qr[i] + (gamma / beta - 1) * f->qdr[i] +
                  h * (gamma / (2 * beta) - 1) * f->qddr[i];
    f->hat_a[i] =
        f->qr[i] / (beta * h * h) + f->qdr[i] / (beta * h) + (1 / (2 * beta) - 1) * f->qddr[i];
  }
}

/* ---------------------------------------------------------------------------------------------
   initial state */

/* Solves the (possibly rectangular) rows x = b in the least-squares, minimum-norm sense for p
   right-hand sides; J is rows x nq row-major and destroyed, B holds max(rows, nq) x p. */
static mb_status min_norm_solve(int rows, int nq, int p, double* J, double* B) {
  int mn = rows < nq ? rows : nq;
  double* sv = malloc(sizeof(double) * (mn + 1));
  if (!sv) return MB_ERR_MEMORY;
  lapack_int rank;
  int ldb = rows > nq ? rows : nq;
  lapack_int info =
      LAPACKE_dgelsd(LAPACK_COL_MAJOR, rows, nq, p, J, rows, B, ldb, sv, 1e-12, &rank);
  free(sv);
  return info == 0 ? MB_OK : MB_ERR_LINALG;
}

/* The rows of the assembly: constraints, then prescribed values (level 0) or rates (level 1). */
static int assembly_rows(const mb_model* m, int level, int* which) {
  int rows = 0;
  for (int i = 0; i < m->ncon; i++) which[rows++] = i;
  for (int i = 0; i < m->npres; i++)
    if (level == 0 ? m->pres_has_value[i] : m->pres_has_rate[i]) which[rows++] = m->ncon + i;
  return rows;
}

static mb_status initial_sensitivity(const mb_model* m, mb_data* d, forward* f, mb_error* err) {
  const int nq = m->nq, nc = m->ncon, p = f->p;
  const int maxrows = nc + m->npres;
  const int ld = maxrows > nq ? maxrows : nq;
  mb_status st = MB_ERR_MEMORY;
  int* which = malloc(sizeof(int) * (maxrows + 1));
  double* J = calloc((size_t)maxrows * nq + 1, sizeof(double));
  double* B = calloc((size_t)ld * p + 1, sizeof(double));
  double* rows_q = calloc((size_t)maxrows * nq + 1, sizeof(double));
  double* rows_v = calloc((size_t)maxrows * nq + 1, sizeof(double));
  double* par = calloc(3 * (size_t)maxrows + 1, sizeof(double));
  if (!which || !J || !B || !rows_q || !rows_v || !par) goto done;

  /* positions: d(rows)/dq q_rho = -d(rows)/drho */
  int rows = assembly_rows(m, 0, which);
  for (int r = 0; r < rows; r++) mbd_expr_rows(m, d, which[r], rows_q + (size_t)r * nq, NULL, NULL);
  for (int k = 0; k < p; k++)
    for (int r = 0; r < rows; r++) {
      mbd_expr_param(m, f->dm[k], d, which[r], par);
      B[(size_t)k * ld + r] = -par[0];
    }
  /* an under-determined assembly ends where its iteration happens to stop: its sensitivity is
     defined only when the parameters do not move it */
  if (rows < nq && nonzero((int)((size_t)ld * p), B)) {
    st = mb_error_set(err, MB_ERR_MODEL,
                      "initial: the parameters move the initial configuration, which the "
                      "\"initial\" entries leave undetermined (%d of %d coordinates fixed): "
                      "prescribe one coordinate per degree of freedom",
                      rows, nq);
    goto done;
  }
  for (int r = 0; r < rows; r++)
    for (int j = 0; j < nq; j++) J[(size_t)j * rows + r] = rows_q[(size_t)r * nq + j];
  if ((st = min_norm_solve(rows, nq, p, J, B)) != MB_OK) goto done;
  for (int k = 0; k < p; k++)
    memcpy(f->qr + (size_t)k * nq, B + (size_t)k * ld, sizeof(double) * nq);

  /* velocities: rows qd_rho = -(d(rows qd)/dq q_rho + d(rows qd)/drho) + d(rate)/drho */
  rows = assembly_rows(m, 1, which);
  memset(rows_q, 0, sizeof(double) * (size_t)maxrows * nq);
  memset(rows_v, 0, sizeof(double) * (size_t)maxrows * nq);
  memset(B, 0, sizeof(double) * (size_t)ld * p);
  for (int r = 0; r < rows; r++)
    mbd_expr_rows(m, d, which[r], rows_q + (size_t)r * nq, rows_v + (size_t)r * nq, NULL);
  for (int k = 0; k < p; k++) {
    const double* qr = f->qr + (size_t)k * nq;
    for (int r = 0; r < rows; r++) {
      mbd_expr_param(m, f->dm[k], d, which[r], par);
      double v = -par[1];
      for (int j = 0; j < nq; j++) v -= rows_v[(size_t)r * nq + j] * qr[j];
      if (which[r] >= nc) v += f->dm[k]->pres_rate[which[r] - nc];
      B[(size_t)k * ld + r] = v;
    }
  }
  /* the minimum-norm velocities of an under-determined system have a simple derivative only
     when they vanish */
  if (rows < nq && nonzero(nq, d->qd)) {
    st = mb_error_set(err, MB_ERR_MODEL,
                      "initial: the gradient needs the initial velocities determined: prescribe "
                      "one rate per degree of freedom (%d of %d fixed), or start at rest",
                      rows, nq);
    goto done;
  }
  for (int r = 0; r < rows; r++)
    for (int j = 0; j < nq; j++) J[(size_t)j * rows + r] = rows_q[(size_t)r * nq + j];
  if ((st = min_norm_solve(rows, nq, p, J, B)) != MB_OK) goto done;
  for (int k = 0; k < p; k++)
    memcpy(f->qdr + (size_t)k * nq, B + (size_t)k * ld, sizeof(double) * nq);

  /* accelerations and multipliers: M qdd_rho + Phi_q^T lambda_rho =
     Q_rho - K q_rho - C qd_rho - M_rho qdd - H_lambda q_rho - (dPhi_q/drho)^T lambda,
     Phi_q qdd_rho = -(d2Phi/dt2)_q q_rho - 2 (dPhi/dt)_q qd_rho - (d2Phi/dt2)_rho */
  mb_constraints(m, d);
  mb_forces(m, d, 1);
  rate_jacobians(m, d, f);
  hessian_of(m, d, f, d->lambda);
  for (int k = 0; k < p; k++) {
    const size_t cq = (size_t)k * nq, cc = (size_t)k * nc;
    double* r = f->rhs + cq;
    mbd_forces_param(m, f->dm[k], d, f->force_dep + (size_t)k * m->nforce, r);
    matvec_rows(nq, nq, d->stiff, f->qr + cq, -1, r);
    matvec_rows(nq, nq, d->damp, f->qdr + cq, -1, r);
    if (f->mass_dep[k]) matvec_rows(nq, nq, f->dm[k]->mass, d->qdd, -1, r);
    subtract_multiplier_terms(m, d, f, k, d->lambda, f->qr + cq, r);
    constraint_params(m, d, f, k);
    for (int i = 0; i < nc; i++) f->g[cc + i] = -f->par[3 * i + 2];
    matvec_rows(nc, nq, f->phidd_q, f->qr + cq, -1, f->g + cc);
    matvec_rows(nc, nq, f->phid_q, f->qdr + cq, -2, f->g + cc);
  }
  const double pen = mb_projection_penalty(m, d->phiq);
  memcpy(d->proj, m->mass, sizeof(double) * nq * nq);
  mbu_add_gram(nc, nq, d->phiq, m->con_scale, pen, d->proj);
  if (LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'L', nq, d->proj, nq) != 0) {
    st = mb_error_set(err, MB_ERR_SINGULAR, "initial sensitivities: singular projection matrix");
    goto done;
  }
  memset(f->lamr, 0, sizeof(double) * nc * p);
  kkt_solve(m, d, FACTOR_PROJECTION, pen, p, f->rhs, f->g, f->qddr, f->lamr);
  st = MB_OK;

done:
  if (st == MB_ERR_MEMORY)
    mb_error_set(err, st, "initial sensitivities: out of memory");
  else if (st == MB_ERR_LINALG)
    mb_error_set(err, st, "initial sensitivities: least-squares solve failed");
  free(which), free(J), free(B), free(rows_q), free(rows_v), free(par);
  return st;
}

/* ---------------------------------------------------------------------------------------------
   functionals */

/* psi += weight (g or w), grad += weight dg/drho at the current state */
static void accumulate(const mb_model* m, mb_data* d, forward* f, int final, double weight,
                       double* psi, double* grad) {
  const int nq = m->nq;
  double *gq = f->gq, *gqd = f->gq + nq, *gqdd = f->gq + 2 * nq;
  for (int fn = 0; fn < m->nfunctional; fn++) {
    psi[fn] += weight * mbd_functional_partials(m, d, fn, final, gq, gqd, gqdd);
    if (!grad) continue;
    for (int k = 0; k < f->p; k++) {
      const size_t cq = (size_t)k * nq;
      double v = mbd_functional_param(m, f->dm[k], d, fn, final);
      for (int j = 0; j < nq; j++)
        v += gq[j] * f->qr[cq + j] + gqd[j] * f->qdr[cq + j] + gqdd[j] * f->qddr[cq + j];
      grad[(size_t)fn * f->p + k] += weight * v;
    }
  }
}

mb_status mbd_forward(const mb_desc* desc, const mb_model* m, mb_data* d, double* psi, double* grad,
                      mb_error* err) {
  const int p = grad ? desc->nparam : 0;
  forward* f = forward_create(desc, m, p, err);
  if (!f) return err && err->status != MB_OK ? err->status : MB_ERR_MEMORY;
  memset(psi, 0, sizeof(double) * m->nfunctional);
  if (grad) memset(grad, 0, sizeof(double) * m->nfunctional * p);
  memset(&d->report, 0, sizeof d->report);

  mb_status st = mb_assemble(m, d, err);
  if (st == MB_OK && p > 0) st = initial_sensitivity(m, d, f, err);
  if (st != MB_OK) goto done;
  const double h = m->opt.step;
  const long nstep = lround(m->opt.t_end / h);
  mb_sensors(m, d);
  accumulate(m, d, f, 0, nstep > 0 ? 0.5 * h : 0, psi, grad);
  for (long n = 1; n <= nstep; n++) {
    if (p > 0) sensitivity_history(m, f);
    if ((st = mb_step(m, d, err)) != MB_OK) goto done;
    if (p > 0 && (st = step_sensitivity(m, d, f, err)) != MB_OK) goto done;
    mb_sensors(m, d);
    accumulate(m, d, f, 0, n == nstep ? 0.5 * h : h, psi, grad);
  }
  accumulate(m, d, f, 1, 1, psi, grad);

done:
  forward_free(f);
  return st;
}
