/* Forward (direct differentiation) sensitivity of ALI3-P in joint coordinates (A. Lopez Varela,
   D. Dopico, A. Luaces, "Augmented Lagrangian index-3 semi-recursive formulations with
   projections: direct sensitivity analysis", sections 4 and 5): per step the tangent linear
   model of the converged positions, then those of the velocity and acceleration projections, as
   sens_forward.c in natural coordinates. The equations are written through the natural
   coordinates q(z) of the exploded model,
     M zdd + Phi_z^T lambda - Q = R^T w,   w = M^n qdd - Q^n + Phi_q^T lambda,
   with qd = R zd and qdd = R zdd + Rdot zd, so that their derivatives are the natural model's
   (K, C, M^n, the constraints' Hessians, its tangent models' explicit terms) carried by R and by
   the derivatives of the natural state (tree_tangent.c). A parameter moving a joint frame moves
   the natural state at fixed z: the explicit terms carry that too. The matrices are dense in the
   joint coordinates; the initial state's sensitivities are the natural assembly's, read in joint
   coordinates. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "frames.h"
#include "joint_tangent.h"
#include "mbopt/sensitivity.h"
#include "sens.h"
#include "structure.h"

typedef struct joint_sens {
  const mb_joint_model* jm;
  mb_joint_data* jd;
  const mb_model* aux;
  mb_data* da;
  mb_joint_tangent* tg; /* the equations' derivatives at a state */
  sens_ws* ws; /* the natural model's: tangent models, explicit terms, and the natural state
                  sensitivities the functionals read */
  int p, nz, nt, nc, nq;
  double* frame; /* (p x nbody x 6) joint frame points' derivatives (tree.h) */
  double *zr, *zdr, *zddr, *hat_v, *hat_a, *zdr_star, *zddr_star, *rhs; /* (nz x p) */
  double *lamr, *s1, *s2, *g;                                           /* (nc x p) */
  double *dq, *dqd, *dqdd; /* (nq x p) the natural state's explicit parameter derivatives */
  double *yz, *work;       /* (nz), (3 nz + nc): zd*, zdd*, then the KKT solves' scratch */
  mb_factor lu;
} joint_sens;

static void joint_sens_free(joint_sens* js) {
  mb_joint_tangent_free(js->tg);
  mb_factor_release(&js->lu);
  free(js->frame);
  free(js->zr);
  sens_free(js->ws);
}

static mb_status joint_sens_init(joint_sens* js, const mb_desc* desc, const mb_joint_model* jm,
                                 mb_joint_data* jd, int p, mb_error* err) {
  memset(js, 0, sizeof *js);
  js->jm = jm, js->jd = jd, js->aux = jm->aux, js->da = jd->aux, js->p = p;
  const mb_tree* t = jm->tree;
  const size_t nz = jm->nz, nc = jm->ncon, nq = jm->aux->nq, np = p > 0 ? p : 1;
  js->nz = (int)nz, js->nt = t->nz, js->nc = (int)nc, js->nq = (int)nq;
  js->ws = sens_create(desc, jm->aux, p, err);
  if (!js->ws) return err && err->status != MB_OK ? err->status : MB_ERR_MEMORY;
  js->tg = mb_joint_tangent_create(jm, jd);
  js->frame = calloc(np * 6 * t->nbody + 1, sizeof(double));
  const size_t size[] = {nz * np, nz * np, nz * np, nz * np, nz * np,    nz * np,
                         nz * np, nz * np, nc * np, nc * np, nc * np,    nc * np,
                         nq * np, nq * np, nq * np, nz,      3 * nz + nc};
  double** fields[] = {&js->zr,        &js->zdr, &js->zddr, &js->hat_v, &js->hat_a, &js->zdr_star,
                       &js->zddr_star, &js->rhs, &js->lamr, &js->s1,    &js->s2,    &js->g,
                       &js->dq,        &js->dqd, &js->dqdd, &js->yz,    &js->work};
  size_t total = 1;
  for (size_t f = 0; f < sizeof size / sizeof *size; f++) total += size[f];
  double* b = calloc(total, sizeof(double));
  js->zr = b;
  if (!js->tg || !js->frame || !b || mb_factor_init(&js->lu, &jm->lu) != 0)
    return mb_error_set(err, MB_ERR_MEMORY, "joint sensitivities: out of memory");
  for (size_t f = 0; f < sizeof size / sizeof *size; f++) *fields[f] = b, b += size[f];
  for (int k = 0; k < p; k++) {
    const mb_status st = mb_tree_frame_derivatives(t, desc, mb_desc_gradient_param(desc, k),
                                                   js->frame + (size_t)k * 6 * t->nbody, err);
    if (st != MB_OK) return st;
  }
  return MB_OK;
}

/* dq, dqd, dqdd (nq each, at the motion sp) += the natural state's derivative with respect to
   parameter k at fixed joint coordinates: the joint frames it moves and the local values of the
   elements; with w (nq, after mb_tree_wrench_sums of it), r (nz) -= the derivative of R^T w. */
static void parameter_motion(joint_sens* js, int k, mb_tree_spatial* sp, double* dq, double* dqd,
                             double* dqdd, const double* w, double* r) {
  const mb_tree* t = js->jm->tree;
  const mb_tree_state* st = js->jd->st;
  const size_t nq = js->nq;
  double *x = js->tg->scr + 3 * nq, *xd = x + nq, *xdd = xd + nq;
  const double* dp = js->frame + (size_t)k * 6 * t->nbody;
  static const double I3[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
  /* each moved frame point, then the elements' local values (no frame moved) */
  for (int b = 0; b <= t->nbody; b++)
    for (int side = 0; side < 2; side++) {
      mb_tree_direction dir = {-1, 0, 0, 0, b < t->nbody ? b : t->order[0], side, {0, 0, 0}};
      const double* local = NULL;
      if (b < t->nbody) {
        const double* d = dp + 6 * b + 3 * side;
        if (d[0] == 0 && d[1] == 0 && d[2] == 0) continue;
        /* inboard: the parent's frame; outboard: the body shifts the other way */
        const int p = side ? b : t->parent[b];
        mbu_mat3_vec(p < 0 ? I3 : st->A + 9 * p, d, dir.shift);
        for (int c = 0; side && c < 3; c++) dir.shift[c] = -dir.shift[c];
      } else {
        if (side) continue;
        local = js->ws->dm[k]->elem_local;
      }
      memset(x, 0, 3 * nq * sizeof(double)); /* x, xd, xdd are contiguous */
      mb_tree_natural_tangent(t, st, sp, js->aux, &dir, local, x, xd, xdd);
      for (size_t i = 0; i < nq; i++) dq[i] += x[i], dqd[i] += xd[i], dqdd[i] += xdd[i];
      if (!w) continue;
      mb_tree_column_tangent(t, st, sp, js->aux, &dir, w, x, js->tg->col);
      for (int i = 0; i < js->nt; i++) r[i] -= js->tg->col[i];
    }
}

/* g (nc) = the joint rows of the natural rows' values gn (aux ncon), Euler normalisations 0. */
static void imposed_rows(const joint_sens* js, const double* gn, double s, int add, double* g) {
  for (int i = 0; i < js->nc; i++)
    g[i] = (add ? g[i] : 0) + (i < js->jm->nrow ? s * gn[js->jm->row[i]] : 0);
}

/* The explicit terms of parameter k at the dynamic state (level 0) or of the velocity (1) or
   acceleration (2) projection at the projected state, at fixed joint coordinates and rates:
   r (nz) and g (nc) of the tangent linear system, and the parameter's natural state derivatives
   at fixed z into column k of js->dq, dqd, dqdd. The system's R^T w is that of js->tg->w (summed by
   add_geometric), and a projection's M^n d(R y) that of the rates of js->tg->sy. */
static void explicit_terms(joint_sens* js, int k, int level, double* r, double* g) {
  const mb_model* aux = js->aux;
  const mb_pattern* sys = aux->structure->sys;
  const mb_rows* phiq = &aux->structure->phiq;
  const size_t nq = js->nq;
  double *dq = js->dq + k * nq, *dqd = js->dqd + k * nq, *dqdd = js->dqdd + k * nq;
  double *rn = js->tg->u, *x = js->tg->v, *gn = js->tg->rows;
  memset(rn, 0, nq * sizeof(double));
  memset(gn, 0, (size_t)aux->ncon * sizeof(double));
  if (sens_active(js->ws, k, js->da->t)) {
    if (level == 0)
      sens_explicit_dynamics(aux, js->da, js->ws, k, rn, gn);
    else
      sens_explicit_projection(aux, js->da, js->ws, k, level, rn, gn);
  }
  mb_joint_tangent_rt_mul(js->tg, rn, 1, 0, r);
  imposed_rows(js, gn, 1, 0, g);
  /* the natural state moved at fixed z, and what the system's terms make of it */
  memset(dq, 0, nq * sizeof(double));
  memset(dqd, 0, nq * sizeof(double));
  memset(dqdd, 0, nq * sizeof(double));
  parameter_motion(js, k, js->tg->sp, dq, dqd, dqdd, js->tg->w, r);
  memset(x, 0, nq * sizeof(double));
  memset(gn, 0, (size_t)aux->ncon * sizeof(double));
  mb_spmv(sys, js->tg->KH, dq, 1, x);
  if (level == 0) {
    mb_spmv(sys, js->da->damp, dqd, 1, x);
    mb_mass_mul(aux, dqdd, 1, x);
    mb_rows_mul(phiq, js->da->phiq, dq, 1, gn);
  } else {
    /* (d^level Phi/dt^level)_q dq and its rate derivatives */
    mb_rows_mul(phiq, level == 1 ? js->tg->phid_q : js->tg->phidd_q, dq, 1, gn);
    mb_rows_mul(phiq, level == 1 ? js->da->phiq : js->tg->phid_q, dqd, level, gn);
    if (level == 2) mb_rows_mul(phiq, js->da->phiq, dqdd, 1, gn);
    double* y = js->tg->scr; /* positions, rates and accelerations along the rates y */
    memset(y, 0, 3 * nq * sizeof(double));
    parameter_motion(js, k, js->tg->sy, y, y + nq, y + 2 * nq, NULL, NULL);
    mb_mass_mul(aux, y + nq, 1, x);
  }
  mb_joint_tangent_rt_mul(js->tg, x, -1, 1, r);
  imposed_rows(js, gn, -1, 1, g);
}

/* The parameters' natural state derivatives at fixed z (columns of js->dq, dqd, dqdd) at the
   motion js->tg->sp. */
static void state_parameter_motion(joint_sens* js) {
  const size_t nq = js->nq;
  for (int k = 0; k < js->p; k++) {
    double *dq = js->dq + k * nq, *dqd = js->dqd + k * nq, *dqdd = js->dqdd + k * nq;
    memset(dq, 0, nq * sizeof(double));
    memset(dqd, 0, nq * sizeof(double));
    memset(dqdd, 0, nq * sizeof(double));
    parameter_motion(js, k, js->tg->sp, dq, dqd, dqdd, NULL, NULL);
  }
}

/* The natural state's sensitivities (js->ws->qr, qdr, qddr, for the functionals) of the joint
   ones, at the motion the columns and js->dq, dqd, dqdd were formed at. */
static void natural_sensitivities(joint_sens* js) {
  const size_t nq = js->nq, nz = js->nz;
  sens_ws* ws = js->ws;
  for (int k = 0; k < js->p; k++) {
    const double *zr = js->zr + k * nz, *zdr = js->zdr + k * nz, *zddr = js->zddr + k * nz;
    double *qr = ws->qr + k * nq, *qdr = ws->qdr + k * nq, *qddr = ws->qddr + k * nq;
    memcpy(qr, js->dq + k * nq, nq * sizeof(double));
    memcpy(qdr, js->dqd + k * nq, nq * sizeof(double));
    memcpy(qddr, js->dqdd + k * nq, nq * sizeof(double));
    for (size_t j = 0; j < nz; j++) {
      const double *R = js->tg->R + j * nq, *Rv = js->tg->Rv + j * nq, *Ra = js->tg->Ra + j * nq;
      const double* Rad = js->tg->Rad + j * nq;
      for (size_t i = 0; i < nq; i++) {
        qr[i] += R[i] * zr[j];
        qdr[i] += Rv[i] * zr[j] + R[i] * zdr[j];
        qddr[i] += Ra[i] * zr[j] + Rad[i] * zdr[j] + R[i] * zddr[j];
      }
    }
  }
}

/* ---------------------------------------------------------------------------------------------
   the initial state and the steps */

/* z_rho, zd_rho, zdd_rho from the natural assembly's sensitivities by least squares,
   R z_rho = q_rho - dq/drho and likewise for the rates, with the derivatives of the Euler
   normalisations (R does not see a quadruple's length), and the imposed rows' multipliers; at
   the assembled state, its columns formed. */
static mb_status initial_sensitivities(joint_sens* js, mb_error* err) {
  const mb_tree* t = js->jm->tree;
  const size_t nq = js->nq, nz = js->nz, p = js->p, nn = t->nnorm, rows = nq + nn;
  const double *z = js->jd->z, *zd = js->jd->zd, *zdd = js->jd->zdd;
  sens_ws* ws = js->ws;
  double* A = calloc(rows * nz + 1, sizeof(double));
  double* B = malloc(rows * p * sizeof(double) + 1);
  if (!A || !B) {
    free(A), free(B);
    return mb_error_set(err, MB_ERR_MEMORY, "joint sensitivities: out of memory");
  }
  for (size_t i = 0; i < nq; i++)
    for (size_t j = 0; j < nz; j++) A[i * nz + j] = js->tg->R[j * nq + i];
  for (size_t n = 0; n < nn; n++)
    for (int c = 0; c < 4; c++) A[(nq + n) * nz + t->normadr[n] + c] = z[t->normadr[n] + c];
  state_parameter_motion(js);
  mb_status st = MB_OK;
  double* out[3] = {js->zr, js->zdr, js->zddr};
  const double* from[3] = {ws->qr, ws->qdr, ws->qddr};
  const double* known[3] = {js->dq, js->dqd, js->dqdd};
  for (int level = 0; level < 3 && st == MB_OK; level++) {
    for (size_t k = 0; k < p; k++) {
      double* b = B + k * rows;
      const double *zr = js->zr + k * nz, *zdr = js->zdr + k * nz;
      for (size_t i = 0; i < nq; i++) b[i] = from[level][k * nq + i] - known[level][k * nq + i];
      for (size_t j = 0; j < nz && level > 0; j++) {
        const double* X = level == 1 ? js->tg->Rv : js->tg->Ra;
        for (size_t i = 0; i < nq; i++)
          b[i] -= X[j * nq + i] * zr[j] + (level == 2 ? js->tg->Rad[j * nq + i] * zdr[j] : 0);
      }
      /* e.e = 1: e.e_rho = 0, e.ed_rho = -e_rho.ed, e.edd_rho = -e_rho.edd - 2 ed.ed_rho */
      for (size_t n = 0; n < nn; n++) {
        const int a = t->normadr[n];
        double v = 0;
        for (int c = 0; c < 4 && level > 0; c++)
          v -= level == 1 ? zr[a + c] * zd[a + c]
                          : zr[a + c] * zdd[a + c] + 2 * zd[a + c] * zdr[a + c];
        b[nq + n] = v;
      }
    }
    st = mbu_least_squares_rows((int)rows, (int)nz, (int)p, A, B, (int)rows, NULL);
    for (size_t k = 0; k < p && st == MB_OK; k++)
      memcpy(out[level] + k * nz, B + k * rows, nz * sizeof(double));
  }
  for (size_t k = 0; k < p; k++)
    imposed_rows(js, ws->lamr + k * js->aux->ncon, 1, 0, js->lamr + k * js->nc);
  free(A), free(B);
  if (st != MB_OK)
    return mb_error_set(err, st, "initial sensitivities: the least-squares solve failed");
  return MB_OK;
}

/* Newmark history of the sensitivities (eqs. 22) from the last step's values. */
static void sensitivity_history(joint_sens* js) {
  const mb_settings* o = &js->aux->opt;
  const double h = o->step, beta = o->beta, gamma = o->gamma;
  for (size_t i = 0; i < (size_t)js->nz * js->p; i++) {
    js->hat_v[i] = gamma / (beta * h) * js->zr[i] + (gamma / beta - 1) * js->zdr[i] +
                   h * (gamma / (2 * beta) - 1) * js->zddr[i];
    js->hat_a[i] =
        js->zr[i] / (beta * h * h) + js->zdr[i] / (beta * h) + (1 / (2 * beta) - 1) * js->zddr[i];
  }
}

/* y (n) += s A x for A (n x n by columns) */
static void dense_mul(int n, const double* A, const double* x, double s, double* y) {
  for (int j = 0; j < n; j++)
    if (x[j] != 0)
      for (int i = 0; i < n; i++) y[i] += s * A[(size_t)j * n + i] * x[j];
}

/* The tangent linear model of the step just taken (eq. 23 in joint coordinates):
     (K + cv C + ca M) z_rho + Phi_z^T lambda_rho = r + M hat_a + C hat_v,  Phi_z z_rho = g,
   solved on the factorised K + cv C + ca M + alpha Phi_z^T S Phi_z. The Newmark rates zd*, zdd*
   stay in js->work for the projections. */
static mb_status dynamic_sensitivity(joint_sens* js, mb_error* err) {
  const mb_joint_model* jm = js->jm;
  mb_joint_data* jd = js->jd;
  const mb_settings* o = &js->aux->opt;
  const int nz = js->nz, nc = js->nc;
  const double h = o->step, cv = o->gamma / (o->beta * h), ca = 1 / (o->beta * h * h);
  double* star = js->work;
  for (int i = 0; i < nz; i++)
    star[i] = cv * jd->z[i] - jd->zhat_v[i], star[nz + i] = ca * jd->z[i] - jd->zhat_a[i];
  mb_joint_constraints(jm, jd);
  mb_joint_tangent_state(js->tg, star, star + nz);
  mb_joint_tangent_columns(js->tg);
  mb_forces(js->aux, js->da, 1);
  mb_joint_tangent_dynamics(js->tg, js->jd->lambda);
  memcpy(js->da->lambda, js->tg->lam, (size_t)js->aux->ncon * sizeof(double));
  double* A = js->tg->T;
  for (int k = 0; k < nz * nz; k++) A[k] = js->tg->K[k] + cv * js->tg->C[k] + ca * js->tg->M[k];
  for (int i = 0; i < nc; i++) {
    const double* a = jd->phiz + (size_t)i * nz;
    const double c = o->penalty * jm->scale[i];
    for (int j = 0; j < nz; j++)
      for (int k = 0; k < nz; k++) A[(size_t)j * nz + k] += c * a[j] * a[k];
  }
  for (int i = 0; i < nz; i++)
    for (int j = 0; j < nz; j++)
      js->tg->pattern[jm->entry[(size_t)i * nz + j]] = A[(size_t)j * nz + i];
  if (mb_factor_compute(&js->lu, js->tg->pattern) != 0)
    return mb_error_set(err, MB_ERR_SINGULAR, "t = %g: singular tangent linear model", jd->t);
  for (int k = 0; k < js->p; k++) {
    double *r = js->rhs + (size_t)k * nz, *g = js->g + (size_t)k * nc;
    explicit_terms(js, k, 0, r, g);
    dense_mul(nz, js->tg->M, js->hat_a + (size_t)k * nz, 1, r);
    dense_mul(nz, js->tg->C, js->hat_v + (size_t)k * nz, 1, r);
    for (int i = 0; i < nc; i++) g[i] = -g[i]; /* as Phi_z x + rhs = 0 */
    mb_joint_kkt(jm, jd, &js->lu, o->penalty, 100, 1e-14, r, js->zr + (size_t)k * nz, g,
                 js->lamr + (size_t)k * nc, js->work + 2 * nz);
    for (int i = 0; i < nz; i++) {
      const size_t c = (size_t)k * nz + i;
      js->zdr_star[c] = cv * js->zr[c] - js->hat_v[c];
      js->zddr_star[c] = ca * js->zr[c] - js->hat_a[c];
    }
  }
  return MB_OK;
}

/* The velocity (level 1) or acceleration (level 2) projection's sensitivities at the projected
   state (its natural state and columns formed):
     M x + Phi_z^T s = M x*_rho - P z_rho + r,
     Phi_z x = -(d^level Phi/dt^level)_z z_rho [- (d2Phi/dt2)_zd zd_rho] + g,
   P the derivative of the projection's M y + Phi_z^T mult at fixed y = x - x* and mult. */
static void projection_sensitivity(joint_sens* js, int level) {
  const mb_joint_model* jm = js->jm;
  mb_joint_data* jd = js->jd;
  const mb_model* aux = js->aux;
  const mb_rows* phiq = &aux->structure->phiq;
  const mb_tree* t = jm->tree;
  const int nz = js->nz, nc = js->nc, nq = js->nq;
  const double* x = level == 1 ? jd->zd : jd->zdd;
  const double* mult = level == 1 ? jd->sigma : jd->kappa;
  double* y = js->yz;
  for (int i = 0; i < nz; i++) y[i] = x[i] - js->work[(level - 1) * nz + i];
  mb_joint_tangent_projection(js->tg, y, mult, js->tg->T);
  /* the natural model's projection: x* = x - R y, and its multipliers */
  double* xs = level == 1 ? js->da->qd_star : js->da->qdd_star;
  const double* xn = level == 1 ? js->da->qd : js->da->qdd;
  mb_joint_tangent_natural_of(js->tg, js->tg->R, y, js->tg->u);
  for (int i = 0; i < nq; i++) xs[i] = xn[i] - js->tg->u[i];
  memcpy(level == 1 ? js->da->sigma : js->da->kappa, js->tg->lam,
         (size_t)aux->ncon * sizeof(double));
  double* xr = level == 1 ? js->zdr : js->zddr;
  const double* xr_star = level == 1 ? js->zdr_star : js->zddr_star;
  for (int k = 0; k < js->p; k++) {
    double *r = js->rhs + (size_t)k * nz, *g = js->g + (size_t)k * nc, *gn = js->tg->rows;
    const double *zr = js->zr + (size_t)k * nz, *zdr = js->zdr + (size_t)k * nz;
    explicit_terms(js, k, level, r, g);
    dense_mul(nz, js->tg->M, xr_star + (size_t)k * nz, 1, r);
    dense_mul(nz, js->tg->T, zr, -1, r);
    /* the constraint rows' rhs: (d^level Phi)_z z_rho [+ (d2Phi/dt2)_zd zd_rho] - g */
    double* a = js->tg->v;
    memset(gn, 0, (size_t)aux->ncon * sizeof(double));
    mb_joint_tangent_natural_of(js->tg, js->tg->R, zr, a);
    mb_rows_mul(phiq, level == 1 ? js->tg->phid_q : js->tg->phidd_q, a, 1, gn);
    mb_joint_tangent_natural_of(js->tg, js->tg->Rv, zr, a);
    mb_rows_mul(phiq, level == 1 ? js->da->phiq : js->tg->phid_q, a, level, gn);
    if (level == 2) {
      mb_joint_tangent_natural_of(js->tg, js->tg->Ra, zr, a);
      mb_rows_mul(phiq, js->da->phiq, a, 1, gn);
      mb_joint_tangent_natural_of(js->tg, js->tg->R, zdr, a);
      mb_rows_mul(phiq, js->tg->phid_q, a, 2, gn);
      mb_joint_tangent_natural_of(js->tg, js->tg->Rad, zdr, a);
      mb_rows_mul(phiq, js->da->phiq, a, 1, gn);
    }
    imposed_rows(js, gn, 1, 0, js->tg->col);
    /* Euler normalisations: d(2 e.ed)/de = 2 ed; d(2 e.edd + 2 ed.ed)/de and /ded: 2 edd, 4 ed */
    for (int n = 0; n < t->nnorm; n++) {
      const int a0 = t->normadr[n];
      double v = 0;
      for (int c = 0; c < 4; c++)
        v += level == 1 ? 2 * jd->zd[a0 + c] * zr[a0 + c]
                        : 2 * jd->zdd[a0 + c] * zr[a0 + c] + 4 * jd->zd[a0 + c] * zdr[a0 + c];
      js->tg->col[jm->nrow + n] = v;
    }
    for (int i = 0; i < nc; i++) g[i] = js->tg->col[i] - g[i];
    mb_joint_kkt(jm, jd, &jd->projection, jd->proj_penalty, 100, 1e-14, r, xr + (size_t)k * nz, g,
                 (level == 1 ? js->s1 : js->s2) + (size_t)k * nc, js->work + 2 * nz);
  }
}

/* The projected state: its natural rates and constraint rows, the spatial motion and the
   columns. */
static void projected_state(joint_sens* js) {
  mb_joint_tangent_state(js->tg, js->jd->zd, js->jd->zdd);
  mb_joint_tangent_columns(js->tg);
}

mb_status mb_joint_forward(const mb_desc* desc, const mb_joint_model* jm, mb_joint_data* jd,
                           double* psi, double* grad, mb_error* err) {
  const mb_model* aux = jm->aux;
  mb_data* da = jd->aux;
  const int p = grad ? mb_desc_gradient_count(desc) : 0;
  joint_sens js;
  mb_status st = joint_sens_init(&js, desc, jm, jd, p, err);
  if (st != MB_OK) goto done;
  memset(psi, 0, sizeof(double) * aux->nfunctional);
  if (grad) memset(grad, 0, sizeof(double) * aux->nfunctional * p);
  memset(&da->report, 0, sizeof da->report);
  if ((st = mb_assemble(aux, da, err)) != MB_OK) goto done;
  if (p > 0 && (st = sens_initial(aux, da, js.ws, err)) != MB_OK) goto done;
  if ((st = mb_joint_read_assembly(jm, jd, err)) != MB_OK) goto done;
  if (p > 0) {
    mb_joint_constraints(jm, jd);
    projected_state(&js);
    if ((st = initial_sensitivities(&js, err)) != MB_OK) goto done;
    natural_sensitivities(&js);
  }
  const double h = aux->opt.step;
  const long nstep = mb_step_count(aux);
  mb_sensors_angles(aux, da);
  sens_accumulate(aux, da, js.ws, 0, nstep > 0 ? 0.5 * h : 0, psi, grad);
  for (long n = 1; n <= nstep; n++) {
    const int substepped = da->report.substepped_steps;
    if ((st = mb_joint_step(jm, jd, err)) != MB_OK) goto done;
    if (p > 0 && da->report.substepped_steps != substepped) {
      st = mb_error_set(err, MB_NEWTON_FAILED,
                        "t = %g: the step passed only on sub-steps, which the sensitivities in "
                        "joint coordinates do not follow yet; a smaller step (--step %g) takes "
                        "it whole",
                        jd->t, h / 4);
      goto done;
    }
    if (p > 0) {
      sensitivity_history(&js);
      if ((st = dynamic_sensitivity(&js, err)) != MB_OK) goto done;
      projected_state(&js);
      projection_sensitivity(&js, 1);
      projection_sensitivity(&js, 2);
      projected_state(&js);
      state_parameter_motion(&js);
      natural_sensitivities(&js);
    }
    mb_sensors_angles(aux, da);
    sens_accumulate(aux, da, js.ws, 0, n == nstep ? 0.5 * h : h, psi, grad);
  }
  sens_accumulate(aux, da, js.ws, 1, 1, psi, grad);

done:
  joint_sens_free(&js);
  return st;
}
