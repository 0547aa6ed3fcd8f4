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
   joint coordinates. Both sensitivities form the tangent linear model's (the adjoint also the
   columns of R and of its rates at the projected state, for the transposes of the constraint
   rates and functionals); the forward one takes the other terms as products along each
   parameter's sensitivities, the adjoint their transposes as products along each functional's
   adjoints, one pass of the tree each (unless the parameters, or the functionals, are many for
   the coordinates). With joint friction, whose forces read the cut joints' multipliers, the
   tangent linear model's multiplier block carries their coupling (mb_joint_coupling). The initial
   state's sensitivities are the natural assembly's, read in joint coordinates. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "frames.h"
#include "joint_tangent.h"
#include "mbopt/sensitivity.h"
#include "sens.h"
#include "stepper.h"
#include "structure.h"

typedef struct joint_sens {
  const mb_joint_model* jm;
  mb_joint_data* jd;
  const mb_model* aux;
  mb_data* da;
  mb_joint_tangent* tg;   /* the equations' derivatives at a state */
  const mb_settings* opt; /* the step's: the model's, or its sub-steps' */
  sens_ws* ws; /* the natural model's: tangent models, explicit terms, and the natural state
                  sensitivities the functionals read */
  int p, nz, nt, nc, nq;
  double* frame;                 /* (p x nbody x 6) joint frame points' derivatives (tree.h) */
  unsigned char* moves_elements; /* (p) the parameter moves elements' local values */
  double *zr, *zdr, *zddr, *hat_v, *hat_a, *zdr_star, *zddr_star, *rhs; /* (nz x p) */
  double *lamr, *s1, *s2, *g;                                           /* (nc x p) */
  double *dq, *dqd, *dqdd;  /* (nq x p) the natural state's explicit parameter derivatives */
  double *yz, *work;        /* (nz), (3 nz + nc): zd*, zdd*, then the KKT solves' scratch */
  int* nonzero;             /* (nq) scratch of columns_t_mul */
  mb_joint_coupling couple; /* the friction's multiplier coupling at the dynamic state */
  double* couple_buffer;    /* its vectors */
  mb_factor lu;
  /* functionals read the tree's multipliers (tree_state): the natural multipliers with the
     imposed rows' lambda + kappa, the Hessian of Phi^T lam_all (natural system pattern), the
     explicit terms E (nq x p), scratch */
  int tree_reactions;
  double *lam_all, *hess, *tree_e, *tree_f, *tree_nu, *tree_g;
} joint_sens;

static void joint_sens_free(joint_sens* js) {
  mb_joint_tangent_free(js->tg);
  mb_factor_release(&js->lu);
  free(js->frame);
  free(js->moves_elements);
  free(js->nonzero);
  free(js->couple_buffer);
  free(js->zr);
  free(js->lam_all);
  sens_free(js->ws);
}

static mb_status joint_sens_init(joint_sens* js, const mb_desc* desc, const mb_joint_model* jm,
                                 mb_joint_data* jd, int p, mb_error* err) {
  memset(js, 0, sizeof *js);
  js->jm = jm, js->jd = jd, js->aux = jm->aux, js->da = jd->aux, js->p = p;
  js->opt = &jm->aux->opt;
  const mb_tree* t = jm->tree;
  const size_t nz = jm->nz, nc = jm->ncon, nq = jm->aux->nq, np = p > 0 ? p : 1;
  js->nz = (int)nz, js->nt = t->nz, js->nc = (int)nc, js->nq = (int)nq;
  js->ws = sens_create(desc, jm->aux, p, err);
  if (!js->ws) return err && err->status != MB_OK ? err->status : MB_ERR_MEMORY;
  js->tg = mb_joint_tangent_create(jm, jd);
  js->frame = calloc(np * 6 * t->nbody + 1, sizeof(double));
  js->moves_elements = calloc(np, 1);
  js->nonzero = malloc(nq * sizeof(int) + 1);
  mb_friction_count(jm->aux, &js->couple.n);
  js->couple_buffer = calloc((size_t)js->couple.n * (nz + nc) + 1, sizeof(double));
  js->couple.gz = js->couple_buffer, js->couple.lz = js->couple_buffer + js->couple.n * nz;
  const size_t size[] = {nz * np, nz * np, nz * np, nz * np, nz * np,    nz * np,
                         nz * np, nz * np, nc * np, nc * np, nc * np,    nc * np,
                         nq * np, nq * np, nq * np, nz,      3 * nz + nc};
  double** fields[] = {&js->zr,        &js->zdr, &js->zddr, &js->hat_v, &js->hat_a, &js->zdr_star,
                       &js->zddr_star, &js->rhs, &js->lamr, &js->s1,    &js->s2,    &js->g,
                       &js->dq,        &js->dqd, &js->dqdd, &js->yz,    &js->work};
  if (!js->tg || !js->frame || !js->moves_elements || !js->nonzero || !js->couple_buffer ||
      !mbu_alloc_arrays(sizeof size / sizeof *size, size, fields, 1) ||
      mb_factor_init(&js->lu, &jm->lu) != 0)
    return mb_error_set(err, MB_ERR_MEMORY, "joint sensitivities: out of memory");
  js->tree_reactions = p > 0 && mb_joint_reads_tree_multipliers(jm);
  if (js->tree_reactions) {
    const size_t ncon = jm->aux->ncon, nsys = jm->aux->structure->sys->nnz;
    const size_t tsize[] = {ncon, nsys, nq * np, nq, nq, ncon};
    double** tfields[] = {&js->lam_all, &js->hess,    &js->tree_e,
                          &js->tree_f,  &js->tree_nu, &js->tree_g};
    if (!mbu_alloc_arrays(sizeof tsize / sizeof *tsize, tsize, tfields, 1))
      return mb_error_set(err, MB_ERR_MEMORY, "joint sensitivities: out of memory");
  }
  for (int k = 0; k < p; k++) {
    const mb_status st = mb_tree_frame_derivatives(t, desc, mb_desc_gradient_param(desc, k),
                                                   js->frame + (size_t)k * 6 * t->nbody, err);
    if (st != MB_OK) return st;
    const double* local = js->ws->dm[k]->elem_local;
    for (int i = 0; i < 3 * jm->aux->nelem && !js->moves_elements[k]; i++)
      js->moves_elements[k] = local[i] != 0;
  }
  return MB_OK;
}

/* dq, dqd, dqdd (nq each) += the natural state's derivative along dir (with the elements' local
   values moved by local, may be NULL) at the motion sp; with w (nq, after mb_tree_wrench_sums of
   it), r (nz) -= the derivative of R^T w. */
static void add_direction(joint_sens* js, mb_tree_spatial* sp, const mb_tree_direction* dir,
                          const double* local, double* dq, double* dqd, double* dqdd,
                          const double* w, double* r) {
  const mb_tree* t = js->jm->tree;
  const mb_tree_state* st = js->jd->st;
  const size_t nq = js->nq;
  double *x = js->tg->scr + 3 * nq, *xd = x + nq, *xdd = xd + nq;
  memset(x, 0, 3 * nq * sizeof(double)); /* x, xd, xdd are contiguous */
  mb_tree_natural_tangent(t, st, sp, js->aux, dir, local, x, xd, xdd);
  for (size_t i = 0; i < nq; i++) dq[i] += x[i], dqd[i] += xd[i], dqdd[i] += xdd[i];
  if (!w) return;
  mb_tree_column_tangent(t, st, sp, js->aux, dir, w, x, js->tg->col);
  for (int i = 0; i < js->nt; i++) r[i] -= js->tg->col[i];
}

/* add_direction for each joint frame point parameter k moves, and for the local values of the
   elements it moves (no frame moved): the natural state's derivative with respect to parameter
   k at fixed joint coordinates. */
static void parameter_motion(joint_sens* js, int k, mb_tree_spatial* sp, double* dq, double* dqd,
                             double* dqdd, const double* w, double* r) {
  const mb_tree* t = js->jm->tree;
  const double* dp = js->frame + (size_t)k * 6 * t->nbody;
  static const double I3[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
  for (int b = 0; b < t->nbody; b++)
    for (int side = 0; side < 2; side++) {
      const double* d = dp + 6 * b + 3 * side;
      if (d[0] == 0 && d[1] == 0 && d[2] == 0) continue;
      /* inboard: the parent's frame; outboard: the body shifts the other way */
      mb_tree_direction dir = {.coord = -1, .body = b, .outboard = side};
      const int p = side ? b : t->parent[b];
      mbu_mat3_vec(p < 0 ? I3 : js->jd->st->A + 9 * p, d, dir.shift);
      for (int c = 0; side && c < 3; c++) dir.shift[c] = -dir.shift[c];
      add_direction(js, sp, &dir, NULL, dq, dqd, dqdd, w, r);
    }
  if (js->moves_elements[k]) {
    const mb_tree_direction still = {.coord = -1, .body = t->order[0]};
    add_direction(js, sp, &still, js->ws->dm[k]->elem_local, dq, dqd, dqdd, w, r);
  }
}

/* Whether parameter k moves the natural state at fixed joint coordinates: a joint frame or the
   local values of elements. */
static int moves_state(const joint_sens* js, int k) {
  const size_t n = 6 * (size_t)js->jm->tree->nbody;
  for (size_t i = 0; i < n; i++)
    if (js->frame[k * n + i] != 0) return 1;
  return js->moves_elements[k];
}

/* g (nc) = the joint rows of the natural rows' values gn (aux ncon), Euler normalisations 0. */
static void imposed_rows(const joint_sens* js, const double* gn, double s, int add, double* g) {
  for (int i = 0; i < js->nc; i++)
    g[i] = (add ? g[i] : 0) + (i < js->jm->nrow ? s * gn[js->jm->row[i]] : 0);
}

/* gn (aux ncon) += s A x on the imposed rows alone, A on the pattern of Phi_q: what imposed_rows
   reads of a product of the natural constraint rows. */
static void imposed_rows_mul(const joint_sens* js, const double* A, const double* x, double s,
                             double* gn) {
  const mb_rows* phiq = &js->aux->structure->phiq;
  for (int i = 0; i < js->jm->nrow; i++) {
    const int r = js->jm->row[i];
    gn[r] += s * mb_rows_dot(phiq, r, A, x, 0);
  }
}

/* The explicit terms of parameter k at the dynamic state (level 0) or of the velocity (1) or
   acceleration (2) projection at the projected state, at fixed joint coordinates and rates:
   r (nz) and g (nc) of the tangent linear system, and the parameter's natural state derivatives
   at fixed z into column k of js->dq, dqd, dqdd. The system's R^T w is that of js->tg->w (summed by
   add_geometric), and a projection's M^n d(R y) that of the rates of js->tg->sy. */
static void explicit_terms(joint_sens* js, int k, int level, double* r, double* g) {
  const mb_model* aux = js->aux;
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
  if (!moves_state(js, k)) return;
  parameter_motion(js, k, js->tg->sp, dq, dqd, dqdd, js->tg->w, r);
  memset(x, 0, nq * sizeof(double));
  memset(gn, 0, (size_t)aux->ncon * sizeof(double));
  mb_compact_mul(&js->tg->kh, dq, 1, x);
  if (level == 0) {
    mb_compact_mul(&js->tg->damp, dqd, 1, x);
    mb_mass_mul(aux, dqdd, 1, x);
    imposed_rows_mul(js, js->da->phiq, dq, 1, gn);
  } else {
    /* (d^level Phi/dt^level)_q dq and its rate derivatives */
    imposed_rows_mul(js, level == 1 ? js->tg->phid_q : js->tg->phidd_q, dq, 1, gn);
    imposed_rows_mul(js, level == 1 ? js->da->phiq : js->tg->phid_q, dqd, level, gn);
    if (level == 2) imposed_rows_mul(js, js->da->phiq, dqdd, 1, gn);
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
   ones, at the motion js->tg->sp and js->dq, dqd, dqdd were formed at. */
static void natural_sensitivities(joint_sens* js) {
  const size_t nq = js->nq, nz = js->nz;
  sens_ws* ws = js->ws;
  for (int k = 0; k < js->p; k++) {
    double *qr = ws->qr + k * nq, *qdr = ws->qdr + k * nq, *qddr = ws->qddr + k * nq;
    mb_joint_tangent_along(js->tg, js->tg->sp, js->zr + k * nz, js->zdr + k * nz, js->zddr + k * nz,
                           qr, qdr, qddr);
    for (size_t i = 0; i < nq; i++)
      qr[i] += js->dq[k * nq + i], qdr[i] += js->dqd[k * nq + i], qddr[i] += js->dqdd[k * nq + i];
  }
}

/* The imposed rows' multiplier sensitivities in the natural model's (js->ws->lamr, and the
   acceleration projection's kappa in js->ws->s), for the functionals that read those rows'
   multipliers (lambda + kappa), after a step. */
static void multiplier_sensitivities(joint_sens* js) {
  sens_ws* ws = js->ws;
  const size_t nc = js->aux->ncon;
  double* kappa = ws->s + nc * ws->ncol;
  for (size_t k = 0; ws->reads_lambda && k < (size_t)js->p; k++)
    for (int i = 0; i < js->jm->nrow; i++) {
      ws->lamr[k * nc + js->jm->row[i]] = js->lamr[k * js->nc + i];
      kappa[k * nc + js->jm->row[i]] = js->s2[k * js->nc + i];
    }
}

/* ---------------------------------------------------------------------------------------------
   the tree's multipliers, recovered body by body from the natural equations of motion
   (joint_reactions.c): their sensitivities are the recovery's map of the linearised forces
     f_rho = E - (K + H) q_rho - C qd_rho - M qdd_rho - Phi_I^T (lambda + kappa)_I,rho,
   E the equations' explicit parameter terms, H the Hessian of Phi^T lambda over every row (the
   change of the tree rows' own gradients included), I the imposed rows; the adjoint takes the
   map's transpose */

/* After mb_joint_natural_multipliers with the forces' Jacobians (K and C in the natural
   workspace): js->lam_all, js->hess = H and js->tree_e = E of every parameter. */
static void tree_state(joint_sens* js) {
  const mb_model* aux = js->aux;
  mb_data* da = js->da;
  const size_t ncon = aux->ncon, nq = js->nq;
  memcpy(js->lam_all, da->lambda, ncon * sizeof(double));
  for (int i = 0; i < js->jm->nrow; i++) js->lam_all[js->jm->row[i]] += da->kappa[js->jm->row[i]];
  memset(js->hess, 0, (size_t)aux->structure->sys->nnz * sizeof(double));
  mb_constraints_add_hessian(aux, da, js->lam_all, 1, js->hess);
  /* E with the constraints' terms at lam_all, the multipliers the recovery reads, and the
     friction's at lambda, the cut joints' multipliers the forces read */
  for (int k = 0; k < js->p; k++) {
    double* e = js->tree_e + k * nq;
    memset(e, 0, nq * sizeof(double));
    if (sens_active(js->ws, k, da->t))
      sens_explicit_dynamics_with(aux, da, js->ws, k, js->lam_all, e, js->tree_g);
  }
  if (js->couple.n > 0) {
    sens_point* pt = &js->ws->pt;
    pt->d = da;
    sens_friction_linearise(aux, pt);
  }
}

/* c_a = dF_a/dlambda . lam for each rate a of the joints' friction (linearised in js->ws->pt),
   lam (nc) on the imposed rows, the only rows whose multipliers the friction reads */
static double friction_rate_change(const joint_sens* js, int a, const double* lam) {
  const double* dlam = js->ws->pt.fric.dlam + (size_t)a * js->aux->ncon;
  double c = 0;
  for (int i = 0; i < js->jm->nrow; i++) c += dlam[js->jm->row[i]] * lam[i];
  return c;
}

/* The tree's multiplier sensitivities into js->ws->lamr (their kappa share zero) at the state of
   the last mb_joint_natural_multipliers, from the natural state's sensitivities (ws->qr, qdr,
   qddr) and the imposed rows' (js->lamr + js->s2). */
static mb_status tree_sensitivities(joint_sens* js, mb_error* err) {
  const mb_joint_model* jm = js->jm;
  const mb_model* aux = js->aux;
  const mb_data* da = js->da;
  const mb_pattern* sys = aux->structure->sys;
  sens_ws* ws = js->ws;
  const size_t nq = js->nq, ncon = aux->ncon, nc = js->nc;
  double *f = js->tree_f, *kappa = ws->s + ncon * ws->ncol;
  tree_state(js);
  for (int k = 0; k < js->p; k++) {
    memcpy(f, js->tree_e + k * nq, nq * sizeof(double));
    mb_spmv(sys, da->stiff, ws->qr + k * nq, -1, f);
    mb_spmv(sys, js->hess, ws->qr + k * nq, -1, f);
    mb_spmv(sys, da->damp, ws->qdr + k * nq, -1, f);
    mb_mass_mul(aux, ws->qddr + k * nq, -1, f);
    mb_joint_imposed_reactions(jm, da, js->lamr + k * nc, -1, f);
    mb_joint_imposed_reactions(jm, da, js->s2 + k * nc, -1, f);
    /* the friction, -sum_a F_a g_a: its stiffness at fixed multipliers, and F_a through the cut
       joints' lambda (its damping is in C) */
    sens_friction_stiffness_mul(aux, &ws->pt, ws->qr + k * nq, 0, -1, f);
    for (int a = 0; a < js->couple.n; a++) {
      const double c = friction_rate_change(js, a, js->lamr + k * nc);
      const double* g = ws->pt.fric.g + (size_t)a * nq;
      for (size_t i = 0; c != 0 && i < nq; i++) f[i] -= c * g[i];
    }
    const mb_status st = mb_joint_tree_multipliers(jm, js->jd, f, ws->lamr + k * ncon, err);
    if (st != MB_OK) return st;
    for (int r = 0; r < jm->react_row_adr[jm->tree->nbody]; r++)
      kappa[k * ncon + jm->react_row[r]] = 0;
  }
  return MB_OK;
}

/* The transpose of tree_sensitivities for one functional term, whose partials are ws->gq, gqd,
   gqdd and ws->glam (of the natural multipliers): the tree rows' partials move to the natural
   state's and the imposed rows' (lambda + kappa, and through the friction lambda alone: into
   lam_bar, nc), and grad (p) += weight times their explicit terms. */
static mb_status tree_adjoint(joint_sens* js, double weight, double* lam_bar, double* grad,
                              mb_error* err) {
  const mb_joint_model* jm = js->jm;
  const mb_model* aux = js->aux;
  const mb_data* da = js->da;
  const mb_pattern* sys = aux->structure->sys;
  sens_ws* ws = js->ws;
  const int nq = js->nq;
  double *gq = ws->gq, *gqd = gq + nq, *gqdd = gqd + nq, *nu = js->tree_nu;
  const mb_status st = mb_joint_tree_multipliers_t(jm, js->jd, ws->glam, nu, err);
  if (st != MB_OK) return st;
  mb_spmv_t(sys, da->stiff, nu, -1, gq);
  mb_spmv_t(sys, js->hess, nu, -1, gq);
  sens_friction_stiffness_mul(aux, &ws->pt, nu, 1, -1, gq);
  mb_spmv_t(sys, da->damp, nu, -1, gqd);
  for (int a = 0; a < js->couple.n; a++) {
    const double c = mbu_dot(nq, ws->pt.fric.g + (size_t)a * nq, nu);
    const double* dlam = ws->pt.fric.dlam + (size_t)a * aux->ncon;
    for (int i = 0; c != 0 && i < jm->nrow; i++) lam_bar[i] -= weight * c * dlam[jm->row[i]];
  }
  mb_mass_mul(aux, nu, -1, gqdd);
  for (int i = 0; i < jm->nrow; i++)
    ws->glam[jm->row[i]] -= mb_rows_dot(&aux->structure->phiq, jm->row[i], da->phiq, nu, 0);
  for (int k = 0; k < js->p; k++) grad[k] += weight * mbu_dot(nq, js->tree_e + (size_t)k * nq, nu);
  return MB_OK;
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
  mb_newmark_history(js->opt, (size_t)js->nz * js->p, js->zr, js->zdr, js->zddr, js->hat_v,
                     js->hat_a);
}

/* y (n) += s A x, or with transpose s A^T x, for A (n x n by columns) */
static void dense_mul(int n, const double* A, int transpose, const double* x, double s, double* y) {
  for (int j = 0; j < n; j++) {
    const double* a = A + (size_t)j * n;
    if (transpose)
      y[j] += s * mbu_dot(n, a, x);
    else if (x[j] != 0)
      for (int i = 0; i < n; i++) y[i] += s * a[i] * x[j];
  }
}

/* y (nz) += s X^T x for X (nq x nz by columns): one of R, Rv, Ra, Rad, over x's nonzeros
   alone (the constraint rows' and the functionals' partials reach few coordinates) */
static void columns_t_mul(const joint_sens* js, const double* X, const double* x, double s,
                          double* y) {
  int n = 0;
  for (int i = 0; i < js->nq; i++)
    if (x[i] != 0) js->nonzero[n++] = i;
  for (int j = 0; j < js->nz; j++) {
    const double* col = X + (size_t)j * js->nq;
    double sum = 0;
    for (int k = 0; k < n; k++) sum += col[js->nonzero[k]] * x[js->nonzero[k]];
    y[j] += s * sum;
  }
}

/* A (nz x nz by columns) += the friction's coupling through the multipliers lambda + pen S Phi
   of the tangent linear model: sum_a gz_a (pen lz_a^T S Phi_z). */
static void add_friction_coupling(joint_sens* js, double pen, double* A) {
  const mb_joint_coupling* c = &js->couple;
  const int nz = js->nz, nc = js->nc;
  double* row = js->tg->col; /* (nz) pen lz_a^T S Phi_z */
  for (int a = 0; a < c->n; a++) {
    memset(row, 0, (size_t)nz * sizeof(double));
    for (int i = 0; i < nc; i++) {
      const double w = pen * js->jm->scale[i] * c->lz[(size_t)a * nc + i];
      for (int j = 0; w != 0 && j < nz; j++) row[j] += w * js->jd->phiz[(size_t)i * nz + j];
    }
    for (int j = 0; j < nz; j++)
      for (int i = 0; row[j] != 0 && i < nz; i++)
        A[(size_t)j * nz + i] += c->gz[(size_t)a * nz + i] * row[j];
  }
}

/* The dynamic state at jd's positions (their constraints evaluated), multipliers and time and
   the rates zd, zdd: the natural state and the forces with their Jacobians; then with A (nz x nz)
   the tangent linear model's K + cv C + ca M in it, or without A the columns and K, C and M apart
   (for their transposes). */
static void dynamic_state(joint_sens* js, const double* zd, const double* zdd, double cv, double ca,
                          double* A) {
  mb_joint_tangent_state(js->tg, zd, zdd);
  mb_joint_tangent_forces(js->tg, js->jd->lambda);
  if (A) {
    mb_joint_tangent_newton(js->tg, js->jd->lambda, cv, ca, A);
  } else {
    mb_joint_tangent_columns(js->tg);
    mb_joint_tangent_dynamics(js->tg, js->jd->lambda);
  }
  memcpy(js->da->lambda, js->tg->lam, (size_t)js->aux->ncon * sizeof(double));
  if (js->couple.n > 0) {
    sens_point* pt = &js->ws->pt;
    pt->d = js->da;
    sens_friction_linearise(js->aux, pt);
    mb_joint_tangent_coupling(js->tg, &pt->fric, js->couple_buffer,
                              js->couple_buffer + (size_t)js->couple.n * js->nz);
  }
}

/* js->work (2 nz) = zd* = cv z - hat_v and zdd* = ca z - hat_a, the Newmark rates of the step's
   positions (eqs. 2). */
static void newmark_star(joint_sens* js) {
  const mb_settings* o = js->opt;
  const mb_joint_data* jd = js->jd;
  const int nz = js->nz;
  double a[3], b[3]; /* the Newmark weights: a[0], b[0] those of the positions in the rates */
  mb_newmark_coefficients(o, a, b);
  const double cv = a[0], ca = b[0];
  for (int i = 0; i < nz; i++)
    js->work[i] = cv * jd->z[i] - jd->zhat_v[i], js->work[nz + i] = ca * jd->z[i] - jd->zhat_a[i];
}

/* The dynamic state of the step just taken (its positions' constraints evaluated): its Newmark
   rates (into js->work), with matrices K, C and M apart, the factorised K + cv C + ca M +
   alpha Phi_z^T S Phi_z (the tangent linear model of eq. 23 in joint coordinates), and each
   parameter's explicit terms into r (nz x p), g (nc x p). */
static mb_status dynamic_point(joint_sens* js, int matrices, double* r, double* g, mb_error* err) {
  const mb_joint_model* jm = js->jm;
  mb_joint_data* jd = js->jd;
  mb_joint_tangent* tg = js->tg;
  const mb_settings* o = js->opt;
  const int nz = js->nz, nc = js->nc;
  double a[3], b[3]; /* the Newmark weights: a[0], b[0] those of the positions in the rates */
  mb_newmark_coefficients(o, a, b);
  const double cv = a[0], ca = b[0];
  double* star = js->work;
  newmark_star(js);
  /* A by columns; the Gram term is symmetric */
  double* A = tg->T;
  dynamic_state(js, star, star + nz, cv, ca, matrices ? NULL : A);
  for (int k = 0; k < nz * nz && matrices; k++) A[k] = tg->K[k] + cv * tg->C[k] + ca * tg->M[k];
  mb_joint_add_gram(jm, jd, jm->scale, o->penalty, A);
  add_friction_coupling(js, o->penalty, A);
  for (int i = 0; i < nz; i++)
    for (int j = 0; j < nz; j++) tg->pattern[jm->entry[(size_t)i * nz + j]] = A[(size_t)j * nz + i];
  if (mb_factor_compute(&js->lu, tg->pattern) != 0)
    return mb_error_set(err, MB_ERR_SINGULAR, "t = %g: singular tangent linear model", jd->t);
  for (int k = 0; k < js->p; k++) explicit_terms(js, k, 0, r + (size_t)k * nz, g + (size_t)k * nc);
  return MB_OK;
}

/* The projected state: its natural rates and constraint rows, the spatial motion and, with
   columns, the columns. */
static void projected_state(joint_sens* js, int columns) {
  mb_joint_tangent_state(js->tg, js->jd->zd, js->jd->zdd);
  if (columns) mb_joint_tangent_columns(js->tg);
}

/* At the projected state, the velocity (level 1) or acceleration (level 2) projection
     M x + Phi_z^T mult = M x*,  Phi_z x = -(the rest of d^level Phi/dt^level):
   P (nz x nz, NULL: only the state of its products) = d(M y + Phi_z^T mult)/dz at fixed
   y = x - x* (x* of dynamic_point) and mult, the natural model's projection state, and each
   parameter's explicit terms into r, g. */
static void projection_point(joint_sens* js, int level, double* P, double* r, double* g) {
  mb_joint_data* jd = js->jd;
  mb_joint_tangent* tg = js->tg;
  const int nz = js->nz, nq = js->nq;
  const double* x = level == 1 ? jd->zd : jd->zdd;
  double* y = js->yz;
  for (int i = 0; i < nz; i++) y[i] = x[i] - js->work[(level - 1) * nz + i];
  const double* mult = level == 1 ? jd->sigma : jd->kappa;
  mb_joint_tangent_projection_state(tg, y, mult);
  /* the natural model's projection: x* = x - R y, and its multipliers */
  double* xs = level == 1 ? js->da->qd_star : js->da->qdd_star;
  const double* xn = level == 1 ? js->da->qd : js->da->qdd;
  for (int i = 0; i < nq; i++) xs[i] = xn[i] - tg->v[i];
  memcpy(level == 1 ? js->da->sigma : js->da->kappa, tg->lam,
         (size_t)js->aux->ncon * sizeof(double));
  if (P) mb_joint_tangent_projection(tg, mult, P);
  for (int k = 0; k < js->p; k++)
    explicit_terms(js, k, level, r + (size_t)k * nz, g + (size_t)k * js->nc);
}

/* out (nc) = the level's constraint rates differentiated at the projected state:
   (d^level Phi/dt^level)_z zr [+ (d2Phi/dt2)_zd zdr], the Euler normalisations'
   d(2 e.ed)/de = 2 ed, d(2 e.edd + 2 ed.ed)/de = 2 edd and /ded = 4 ed included. */
static void rate_rows(joint_sens* js, int level, const double* zr, const double* zdr, double* out) {
  const mb_tree* t = js->jm->tree;
  const mb_joint_data* jd = js->jd;
  mb_joint_tangent* tg = js->tg;
  const size_t nq = js->nq;
  double *dq = tg->scr, *dqd = dq + nq, *dqdd = dqd + nq, *gn = tg->rows;
  /* the natural positions' and rates' derivatives (and the accelerations', level 2) */
  mb_joint_tangent_rows_along(tg, zr, level == 2 ? zdr : NULL, dq, dqd, level == 2 ? dqdd : NULL);
  memset(gn, 0, (size_t)js->aux->ncon * sizeof(double));
  imposed_rows_mul(js, level == 1 ? tg->phid_q : tg->phidd_q, dq, 1, gn);
  imposed_rows_mul(js, level == 1 ? js->da->phiq : tg->phid_q, dqd, level, gn);
  if (level == 2) imposed_rows_mul(js, js->da->phiq, dqdd, 1, gn);
  imposed_rows(js, gn, 1, 0, out);
  for (int n = 0; n < t->nnorm; n++) {
    const int e = t->normadr[n];
    double v = 0;
    for (int c = 0; c < 4; c++)
      v += level == 1 ? 2 * jd->zd[e + c] * zr[e + c]
                      : 2 * jd->zdd[e + c] * zr[e + c] + 4 * jd->zd[e + c] * zdr[e + c];
    out[js->jm->nrow + n] = v;
  }
}

/* The transpose of rate_rows: oz (nz) += s (d^level Phi/dt^level)_z^T nu and, at level 2,
   ozd (nz) += s (d2Phi/dt2)_zd^T nu. */
static void rate_rows_t(joint_sens* js, int level, const double* nu, double s, double* oz,
                        double* ozd) {
  const mb_tree* t = js->jm->tree;
  const mb_joint_data* jd = js->jd;
  mb_joint_tangent* tg = js->tg;
  const mb_rows* phiq = &js->aux->structure->phiq;
  const int nq = js->nq;
  double *gn = tg->rows, *a = tg->v, *b = tg->u;
  memset(gn, 0, (size_t)js->aux->ncon * sizeof(double));
  for (int i = 0; i < js->jm->nrow; i++) gn[js->jm->row[i]] = nu[i];
  /* b = Phi_q^T nu, a = (the level's rate rows)_q^T nu */
  memset(a, 0, (size_t)nq * sizeof(double));
  memset(b, 0, (size_t)nq * sizeof(double));
  mb_rows_mul_t(phiq, js->da->phiq, gn, 1, b);
  mb_rows_mul_t(phiq, level == 1 ? tg->phid_q : tg->phidd_q, gn, 1, a);
  columns_t_mul(js, tg->R, a, s, oz);
  if (level == 1) {
    columns_t_mul(js, tg->Rv, b, s, oz);
  } else {
    columns_t_mul(js, tg->Ra, b, s, oz);
    columns_t_mul(js, tg->Rad, b, s, ozd);
    memset(a, 0, (size_t)nq * sizeof(double));
    mb_rows_mul_t(phiq, tg->phid_q, gn, 1, a);
    columns_t_mul(js, tg->Rv, a, 2 * s, oz);
    columns_t_mul(js, tg->R, a, 2 * s, ozd);
  }
  for (int n = 0; n < t->nnorm; n++) {
    const int e = t->normadr[n];
    const double w = s * nu[js->jm->nrow + n];
    for (int c = 0; c < 4; c++) {
      oz[e + c] += w * 2 * (level == 1 ? jd->zd[e + c] : jd->zdd[e + c]);
      if (level == 2) ozd[e + c] += w * 4 * jd->zd[e + c];
    }
  }
}

/* mb_joint_kkt to convergence: x (nz) solving P x + B^T mult = b0, Phi_z x = g (NULL: 0), or
   transposed P^T x + Phi_z^T mult = b0, B x = g, with the factorised f, pen its penalty; B =
   Phi_z, or with the friction's coupling (the tangent linear model's) Phi_z + lz gz^T. */
static void kkt_solve(joint_sens* js, mb_factor* f, int transpose, int coupled, double pen,
                      const double* b0, const double* g, double* x, double* mult) {
  const int nz = js->nz, nc = js->nc;
  const mb_joint_coupling* c = coupled && js->couple.n > 0 ? &js->couple : NULL;
  double* rhs = js->tg->col;
  for (int i = 0; i < nc; i++) rhs[i] = g ? -g[i] : 0;
  mb_joint_kkt(js->jm, js->jd, f, transpose, c, pen, 100, 1e-13, 1, b0, x, rhs, mult,
               js->work + 2 * nz);
  /* the iteration stops before its last multiplier update, which the adjoint reads */
  double* viol = js->work + 2 * nz;
  memcpy(viol, rhs, (size_t)nc * sizeof(double));
  mb_joint_rows_mul(js->jm, js->jd, transpose ? c : NULL, x, viol);
  for (int i = 0; i < nc; i++) mult[i] += pen * js->jm->scale[i] * viol[i];
}

mb_status mb_joint_explicit_dynamics(const mb_desc* desc, const mb_joint_model* jm,
                                     mb_joint_data* jd, const double* zd, const double* zdd,
                                     double* r, double* g, mb_error* err) {
  joint_sens js;
  mb_status st = joint_sens_init(&js, desc, jm, jd, mb_desc_gradient_count(desc), err);
  if (st == MB_OK) {
    mb_joint_constraints(jm, jd);
    dynamic_state(&js, zd, zdd, 0, 0, NULL);
    for (int k = 0; k < js.p; k++)
      explicit_terms(&js, k, 0, r + (size_t)k * js.nz, g + (size_t)k * js.nc);
  }
  joint_sens_free(&js);
  return st;
}

mb_status mb_joint_explicit_projection(const mb_desc* desc, const mb_joint_model* jm,
                                       mb_joint_data* jd, int level, const double* x_star,
                                       double* r, double* g, mb_error* err) {
  joint_sens js;
  mb_status st = joint_sens_init(&js, desc, jm, jd, mb_desc_gradient_count(desc), err);
  if (st == MB_OK) {
    mb_joint_constraints(jm, jd);
    projected_state(&js, 1);
    memcpy(js.work + (size_t)(level - 1) * js.nz, x_star, (size_t)js.nz * sizeof(double));
    projection_point(&js, level, js.tg->T, r, g);
  }
  joint_sens_free(&js);
  return st;
}

/* ---------------------------------------------------------------------------------------------
   forward */

/* The sensitivities through the step just taken: the tangent linear model
     (K + cv C + ca M) z_rho + Phi_z^T lambda_rho = r + M hat_a + C hat_v,  Phi_z z_rho = g,
   then the projections
     M x + Phi_z^T s = M x*_rho - P z_rho + r,
     Phi_z x = -(d^level Phi/dt^level)_z z_rho [- (d2Phi/dt2)_zd zd_rho] + g.
   The acceleration projection's explicit terms leave the parameters' natural state derivatives
   at the projected state in js->dq, dqd, dqdd, for the functionals. */
static mb_status forward_step(joint_sens* js, mb_error* err) {
  const mb_settings* o = js->opt;
  const int nz = js->nz, nc = js->nc;
  double a[3], b[3]; /* the Newmark weights: a[0], b[0] those of the positions in the rates */
  mb_newmark_coefficients(o, a, b);
  const double cv = a[0], ca = b[0];
  mb_joint_tangent* tg = js->tg;
  /* a product along a vector costs about a column of its matrix: with as many parameters as
     coordinates, the matrices */
  const int matrices = js->p >= nz;
  sensitivity_history(js);
  /* the step's projections left its positions' constraints and Phi_z evaluated */
  mb_status st = dynamic_point(js, matrices, js->rhs, js->g, err);
  if (st != MB_OK) return st;
  for (int k = 0; k < js->p; k++) {
    const size_t c = (size_t)k * nz;
    double* r = js->rhs + c;
    dense_mul(nz, tg->M, 0, js->hat_a + c, 1, r);
    if (matrices)
      dense_mul(nz, tg->C, 0, js->hat_v + c, 1, r);
    else
      mb_joint_tangent_damping_mul(tg, js->hat_v + c, 1, r);
    kkt_solve(js, &js->lu, 0, 1, o->penalty, r, js->g + (size_t)k * nc, js->zr + c,
              js->lamr + (size_t)k * nc);
    for (int i = 0; i < nz; i++) {
      js->zdr_star[c + i] = cv * js->zr[c + i] - js->hat_v[c + i];
      js->zddr_star[c + i] = ca * js->zr[c + i] - js->hat_a[c + i];
    }
  }
  projected_state(js, matrices);
  for (int level = 1; level <= 2; level++) {
    double* P = matrices ? tg->T : NULL;
    projection_point(js, level, P, js->rhs, js->g);
    const double* mult = level == 1 ? js->jd->sigma : js->jd->kappa;
    double* xr = level == 1 ? js->zdr : js->zddr;
    const double* xr_star = level == 1 ? js->zdr_star : js->zddr_star;
    for (int k = 0; k < js->p; k++) {
      const size_t c = (size_t)k * nz, cc = (size_t)k * nc;
      double *r = js->rhs + c, *g = js->g + cc;
      dense_mul(nz, tg->M, 0, xr_star + c, 1, r);
      if (P)
        dense_mul(nz, P, 0, js->zr + c, -1, r);
      else
        mb_joint_tangent_projection_mul(tg, js->zr + c, mult, -1, r);
      double* rows = js->work + 3 * nz; /* nc */
      rate_rows(js, level, js->zr + c, js->zdr + c, rows);
      for (int i = 0; i < nc; i++) g[i] -= rows[i];
      kkt_solve(js, &js->jd->projection, 0, 0, js->jd->proj_penalty, r, g, xr + c,
                (level == 1 ? js->s1 : js->s2) + cc);
    }
  }
  return MB_OK;
}

/* The functionals' terms, of weight w, at the state just reached: its angles, and the joints'
   multipliers the outputs read: the imposed rows' lambda and kappa, and without parameters, or
   when functionals read them, the tree's, with their sensitivities when grad is given. */
static mb_status state_terms(joint_sens* js, double w, double* psi, double* grad, mb_error* err) {
  mb_joint_imposed_multipliers(js->jm, js->jd);
  if (js->p == 0 || js->tree_reactions) {
    const int sensitivities = grad && js->tree_reactions;
    mb_status st = mb_joint_natural_multipliers(js->jm, js->jd, sensitivities, err);
    if (st == MB_OK && sensitivities) st = tree_sensitivities(js, err);
    if (st != MB_OK) return st;
  }
  mb_sensors_angles(js->aux, js->da);
  sens_accumulate(js->aux, js->da, js->ws, 0, w, psi, grad);
  return MB_OK;
}

/* The initial state, its sensitivities (with p > 0) and the first functional terms; after it
   the natural state and js->zr, zdr, zddr are the initial ones. */
static mb_status initial_state(joint_sens* js, double* psi, double* grad, mb_error* err) {
  const mb_model* aux = js->aux;
  mb_data* da = js->da;
  mb_status st;
  memset(&da->report, 0, sizeof da->report);
  if ((st = mb_joint_assemble_natural(js->jm, js->jd, err)) != MB_OK) return st;
  if (js->p > 0 && (st = sens_initial(aux, da, js->ws, err)) != MB_OK) return st;
  if ((st = mb_joint_read_assembly(js->jm, js->jd, err)) != MB_OK) return st;
  if (js->p > 0) {
    mb_joint_constraints(js->jm, js->jd);
    projected_state(js, 1);
    if ((st = initial_sensitivities(js, err)) != MB_OK) return st;
    natural_sensitivities(js);
  }
  return state_terms(js, mb_step_count(aux) > 0 ? 0.5 * aux->opt.step : 0, psi, grad, err);
}

/* One step; with parameters, then after(user) with the step's settings, or after each sub-step
   with theirs when it passed only on sub-steps (mb_joint_substeps takes them again). */
static mb_status joint_step(joint_sens* js, mb_joint_substep_hook after, void* user,
                            mb_error* err) {
  int substeps = 1;
  const mb_status st = mb_joint_step(js->jm, js->jd, &substeps, err);
  if (st != MB_OK || js->p == 0) return st;
  if (substeps == 1) return after(user, &js->aux->opt, err);
  return mb_joint_substeps(js->jm, js->jd, substeps, after, user, err);
}

/* forward_step with the settings of the step or sub-step just taken */
static mb_status forward_after(void* user, const mb_settings* opt, mb_error* err) {
  joint_sens* js = user;
  js->opt = opt;
  const mb_status st = forward_step(js, err);
  js->opt = &js->aux->opt;
  return st;
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
  if ((st = initial_state(&js, psi, grad, err)) != MB_OK) goto done;
  const double h = aux->opt.step;
  const long nstep = mb_step_count(aux);
  for (long n = 1; n <= nstep; n++) {
    if ((st = joint_step(&js, forward_after, &js, err)) != MB_OK) goto done;
    if (p > 0) natural_sensitivities(&js), multiplier_sensitivities(&js);
    if ((st = state_terms(&js, n == nstep ? 0.5 * h : h, psi, grad, err)) != MB_OK) goto done;
  }
  sens_accumulate(aux, da, js.ws, 1, 1, psi, grad);

done:
  joint_sens_free(&js);
  return st;
}

/* ---------------------------------------------------------------------------------------------
   discrete adjoint */

/* A step's state, kept for the backward sweep: z, zd, zdd, the Newmark history terms, then the
   multipliers lambda, sigma, kappa, then t. */
static size_t record_size(const joint_sens* js) {
  return 5 * (size_t)js->nz + 3 * (size_t)js->nc + 1;
}

static void record(joint_sens* js, double* rec, int save) {
  mb_joint_data* jd = js->jd;
  double* x[] = {jd->z, jd->zd, jd->zdd, jd->zhat_v, jd->zhat_a, jd->lambda, jd->sigma, jd->kappa};
  const size_t n[] = {js->nz, js->nz, js->nz, js->nz, js->nz, js->nc, js->nc, js->nc};
  for (size_t f = 0; f < 8; f++) {
    if (save)
      memcpy(rec, x[f], n[f] * sizeof(double));
    else
      memcpy(x[f], rec, n[f] * sizeof(double));
    rec += n[f];
  }
  if (save)
    *rec = jd->t;
  else
    jd->t = *rec;
}

/* mu (3 nz: position, rate, acceleration adjoints of functional f) += weight d g_f/d(z, zd, zdd)
   at the projected state, lbar (nc) += weight d g_f/d(lambda + kappa) on the imposed rows (lam_bar
   += that through lambda alone: the tree's reactions' through the friction), and grad (p) +=
   weight times g_f's explicit parameter derivatives. */
static mb_status functional_adjoint(joint_sens* js, int f, int final, double weight, double* mu,
                                    double* lbar, double* lam_bar, double* grad, mb_error* err) {
  const mb_model* aux = js->aux;
  mb_joint_tangent* tg = js->tg;
  sens_ws* ws = js->ws;
  const int nz = js->nz, nq = js->nq;
  double *gq = ws->gq, *gqd = gq + nq, *gqdd = gqd + nq;
  mbd_functional_partials(aux, js->da, f, final, gq, gqd, gqdd);
  const int reads = ws->reads_lambda && mbd_functional_lambda(aux, js->da, f, final, ws->glam) > 0;
  if (reads && js->tree_reactions) {
    const mb_status st = tree_adjoint(js, weight, lam_bar, grad, err);
    if (st != MB_OK) return st;
  }
  columns_t_mul(js, tg->R, gq, weight, mu);
  columns_t_mul(js, tg->Rv, gqd, weight, mu);
  columns_t_mul(js, tg->Ra, gqdd, weight, mu);
  columns_t_mul(js, tg->R, gqd, weight, mu + nz);
  columns_t_mul(js, tg->Rad, gqdd, weight, mu + nz);
  columns_t_mul(js, tg->R, gqdd, weight, mu + 2 * nz);
  for (int i = 0; reads && i < js->jm->nrow; i++) lbar[i] += weight * ws->glam[js->jm->row[i]];
  for (int k = 0; k < js->p; k++) {
    const size_t c = (size_t)k * nq;
    double v = ws->func_dep[k] && sens_active(ws, k, js->da->t)
                   ? mbd_functional_param(aux, ws->dm[k], js->da, f, final)
                   : 0;
    v += mbu_dot(nq, gq, js->dq + c) + mbu_dot(nq, gqd, js->dqd + c) +
         mbu_dot(nq, gqdd, js->dqdd + c);
    grad[k] += weight * v;
  }
  return MB_OK;
}

/* Stage `stage` of the adjoint mu (3 nz) of one functional through the step at hand, the
   transposes of forward_step's systems in the reverse order: 0 the acceleration projection, 1 the
   velocity projection (each right after its projection_point), 2 the tangent linear model (after
   dynamic_point), after which mu is that of the previous step's state. r, g: the stage's
   explicit terms by parameter, whose products with the stage's adjoints grad (p) receives;
   ms (2 nz): M u of the velocity and acceleration projections, for stage 2; lbar (nc): the
   adjoint of the step's lambda + kappa (the acceleration projection's and the tangent linear
   model's multipliers), cleared after stage 2. With matrices, the transposes are those of the
   matrices formed (P in js->tg->T, C), else products. */
static void adjoint_stage(joint_sens* js, int stage, int matrices, const double* r, const double* g,
                          double* mu, double* ms, double* lbar, double* grad, double* scratch) {
  const int nz = js->nz, nc = js->nc;
  mb_joint_data* jd = js->jd;
  double *mz = mu, *mzd = mu + nz, *mzdd = mu + 2 * nz, *msd = ms, *msdd = ms + nz;
  double *u = scratch, *nu = u + nz, *mhv = nu + nc, *mha = mhv + nz;
  double a[3], b[3]; /* the history's coefficients; a[0], b[0] the rates' */
  mb_newmark_coefficients(js->opt, a, b);
  if (stage < 2) {
    /* the projection (symmetric), P^T at its rate change js->yz */
    const int level = 2 - stage;
    kkt_solve(js, &jd->projection, 0, 0, jd->proj_penalty, level == 2 ? mzdd : mzd,
              level == 2 ? lbar : NULL, u, nu);
    double* m = level == 2 ? msdd : msd;
    memset(m, 0, (size_t)nz * sizeof(double));
    dense_mul(nz, jd->M, 0, u, 1, m);
    if (matrices)
      dense_mul(nz, js->tg->T, 1, u, -1, mz);
    else
      mb_joint_tangent_projection_mul_t(js->tg, js->yz, u, level == 2 ? jd->kappa : jd->sigma, -1,
                                        mz);
    rate_rows_t(js, level, nu, -1, mz, mzd);
  } else {
    /* Newmark rates: zd* = cv z - hat_v, zdd* = ca z - hat_a */
    for (int i = 0; i < nz; i++) {
      mz[i] += a[0] * msd[i] + b[0] * msdd[i];
      mhv[i] = -msd[i], mha[i] = -msdd[i];
    }
    kkt_solve(js, &js->lu, 1, 1, js->opt->penalty, mz, lbar, u, nu);
    memset(lbar, 0, (size_t)nc * sizeof(double));
  }
  for (int k = 0; k < js->p; k++)
    grad[k] += mbu_dot(nz, u, r + (size_t)k * nz) + mbu_dot(nc, nu, g + (size_t)k * nc);
  if (stage < 2) return;
  dense_mul(nz, js->tg->M, 0, u, 1, mha);
  if (matrices)
    dense_mul(nz, js->tg->C, 1, u, 1, mhv);
  else
    mb_joint_tangent_damping_mul_t(js->tg, js->work, u, 1, mhv);
  /* hat_v and hat_a of the previous step's z, zd, zdd */
  for (int l = 0; l < 3; l++)
    for (int i = 0; i < nz; i++) mu[l * nz + i] = a[l] * mhv[i] + b[l] * mha[i];
}

/* The forward sweep's states, one per step or sub-step: the state (record), the sub-step count of
   its step (1: whole), the step it ends or belongs to, and whether it ends that step. */
typedef struct tape {
  joint_sens* js;
  double* state;
  int* substeps;
  long* step;
  unsigned char* ends;
  size_t n, cap;
  long current; /* the step being taken */
} tape;

static void tape_free(tape* tp) {
  free(tp->state), free(tp->substeps), free(tp->step), free(tp->ends);
}

/* Appends js's state (a step's end unless within sub-steps): MB_ERR_MEMORY when it cannot grow. */
static mb_status tape_push(tape* tp, int substeps, int ends, mb_error* err) {
  const size_t rs = record_size(tp->js);
  if (tp->n == tp->cap) {
    const size_t cap = tp->cap ? 2 * tp->cap : 64;
    double* state = realloc(tp->state, cap * rs * sizeof(double));
    if (state) tp->state = state;
    int* sub = realloc(tp->substeps, cap * sizeof(int));
    if (sub) tp->substeps = sub;
    long* step = realloc(tp->step, cap * sizeof(long));
    if (step) tp->step = step;
    unsigned char* e = realloc(tp->ends, cap);
    if (e) tp->ends = e;
    if (!state || !sub || !step || !e)
      return mb_error_set(err, MB_ERR_MEMORY, "adjoint sensitivity: out of memory for %zu states",
                          cap);
    tp->cap = cap;
  }
  record(tp->js, tp->state + rs * tp->n, 1);
  tp->substeps[tp->n] = substeps, tp->step[tp->n] = tp->current,
  tp->ends[tp->n] = (unsigned char)ends;
  tp->n++;
  return MB_OK;
}

/* after each step or sub-step of the forward sweep: its state onto the tape */
static mb_status record_after(void* user, const mb_settings* opt, mb_error* err) {
  tape* tp = user;
  return tape_push(tp, (int)(tp->js->aux->opt.step / opt->step + 0.5), 0, err);
}

/* joint_step onto the tape, its last state marked as the step's end */
static mb_status taped_step(tape* tp, mb_error* err) {
  const mb_status st = joint_step(tp->js, record_after, tp, err);
  if (st == MB_OK && tp->js->p > 0) tp->ends[tp->n - 1] = 1;
  return st;
}

/* joint_step recording nothing: the same steps and sub-steps as taped_step */
static mb_status untaped_after(void* user, const mb_settings* opt, mb_error* err) {
  (void)user, (void)opt, (void)err;
  return MB_OK;
}

/* With checkpointing, every k-th step's state, from which the backward sweep takes each segment
   of steps again: the record, the kept Newton matrix (its values, factorised again on loading)
   and what the steps read of the natural workspace (the multipliers, and the sensors' state:
   mb_sensor_state_copy), so that a segment taken again repeats the forward sweep's steps to the
   last bit. */
typedef struct marks {
  long k;             /* the interval; >= the step count: no marks, the tape keeps every state */
  size_t size, count; /* doubles per mark, marks */
  double* x;          /* (count x size) */
  mb_kept_matrix* kept;
} marks;

static void marks_free(marks* mk) {
  free(mk->x), free(mk->kept);
}

/* The arrays of a mark between its record and the sensors' state: the Newton matrix's values and
   the natural multipliers. */
static void mark_parts(const joint_sens* js, double** x, size_t* n) {
  x[0] = js->jd->tangent, n[0] = (size_t)js->jm->full->nnz;
  x[1] = js->da->lambda, n[1] = (size_t)js->aux->ncon;
}

static int marks_init(marks* mk, const joint_sens* js, long nstep, int checkpoint) {
  memset(mk, 0, sizeof *mk);
  mk->k = checkpoint > 0 && checkpoint < nstep ? checkpoint : (nstep > 0 ? nstep : 1);
  if (mk->k >= nstep) return 0;
  double* x[2];
  size_t n[2];
  mark_parts(js, x, n);
  mk->size = record_size(js) + n[0] + n[1] + mb_sensor_state_size(js->aux);
  mk->count = (size_t)(nstep / mk->k) + 1;
  mk->x = malloc(mk->count * mk->size * sizeof(double));
  mk->kept = malloc(mk->count * sizeof(mb_kept_matrix));
  return mk->x && mk->kept ? 0 : -1;
}

/* Saves (save) or loads mark `index`, the state after step index k; a loaded kept matrix is
   factorised again. */
static void mark_copy(const marks* mk, joint_sens* js, long index, int save) {
  double* rec = mk->x + (size_t)index * mk->size;
  mb_joint_data* jd = js->jd;
  double* x[2];
  size_t n[2];
  mark_parts(js, x, n);
  record(js, rec, save);
  rec += record_size(js);
  for (int f = 0; f < 2; f++) {
    memcpy(save ? rec : x[f], save ? x[f] : rec, n[f] * sizeof(double));
    rec += n[f];
  }
  mb_sensor_state_copy(js->aux, js->da, rec, save);
  if (save) {
    mk->kept[index] = jd->kept;
    return;
  }
  jd->kept = mk->kept[index];
  js->da->report.steps = (int)(index * mk->k);
  if (jd->kept.valid && mb_factor_compute(&jd->newton, jd->tangent) != 0) jd->kept.valid = 0;
}

/* The backward sweep's state: the tape, the initial state's sensitivities x0 (3 nz x p), each
   functional's adjoints mu (3 nz), the projections' M u ms (2 nz), lbar and lam_bar (nc, below),
   and each stage's explicit terms. */
typedef struct sweep {
  joint_sens* js;
  tape* tp;
  long nstep;
  int matrices;
  double *x0, *mu, *ms, *lbar, *lam_bar, *scratch;
  double *r[3], *g[3]; /* the explicit terms of the dynamic state and of the two projections */
} sweep;

/* Tape slot i swept backward: its functional terms, then (past the initial state) its step's
   systems in reverse order, which leave mu that of the state before it. */
static mb_status sweep_slot(sweep* sw, size_t i, double* grad, mb_error* err) {
  joint_sens* js = sw->js;
  const tape* tp = sw->tp;
  const mb_joint_model* jm = js->jm;
  mb_joint_data* jd = js->jd;
  const mb_model* aux = js->aux;
  const int p = js->p, nz = js->nz, nc = js->nc, nf = aux->nfunctional;
  const size_t nzs = nz, np = p;
  const long n = tp->step[i];
  const double h = aux->opt.step;
  const mb_settings sub = mb_substep_settings(&aux->opt, tp->substeps[i]);
  double* P = sw->matrices ? js->tg->T : NULL;
  mb_status st = MB_OK;
  js->opt = &sub;
  record(js, tp->state + record_size(js) * i, 0);
  mb_joint_constraints(jm, jd);
  if (i > 0) {
    mb_joint_mass(jm, jd);
    if ((st = mb_joint_factor_projection(jm, jd, err)) != MB_OK) goto done;
  }
  projected_state(js, 1);
  if (i > 0) {
    newmark_star(js);
    projection_point(js, 2, P, sw->r[2], sw->g[2]); /* leaves js->dq, dqd, dqdd as below */
  } else {
    state_parameter_motion(js);
  }
  mb_sensors_angles(aux, js->da);
  mb_joint_imposed_multipliers(jm, jd);
  if (js->tree_reactions) {
    if ((st = mb_joint_natural_multipliers(jm, jd, 1, err)) != MB_OK) goto done;
    tree_state(js);
  }
  const long nstep = sw->nstep;
  const double weight = !tp->ends[i] || nstep == 0 ? 0 : n == 0 || n == nstep ? 0.5 * h : h;
  for (int f = 0; f < nf; f++) {
    double *m = sw->mu + 3 * nzs * f, *lf = sw->lbar + (size_t)nc * f, *gf = grad + (size_t)f * p;
    double* lo = sw->lam_bar + (size_t)nc * f;
    if (weight != 0 && (st = functional_adjoint(js, f, 0, weight, m, lf, lo, gf, err)) != MB_OK)
      goto done;
    if (n == nstep && tp->ends[i] &&
        (st = functional_adjoint(js, f, 1, 1, m, lf, lo, gf, err)) != MB_OK)
      goto done;
    /* the initial state's: its sensitivities, the assembly's multipliers' among them (its
       kappa is zero) */
    for (int k = 0; k < p && i == 0; k++) {
      for (int l = 0; l < 3; l++)
        gf[k] += mbu_dot(nz, m + l * nz, sw->x0 + (size_t)l * np * nzs + (size_t)k * nzs);
      gf[k] +=
          mbu_dot(nc, lf, js->lamr + (size_t)k * nc) + mbu_dot(nc, lo, js->lamr + (size_t)k * nc);
    }
  }
  if (i == 0) goto done;
  /* the step's systems in reverse order, each formed once for every functional */
  for (int stage = 0; stage < 3; stage++) {
    if (stage == 1) projection_point(js, 1, P, sw->r[1], sw->g[1]);
    if (stage == 2 && (st = dynamic_point(js, sw->matrices, sw->r[0], sw->g[0], err)) != MB_OK)
      goto done;
    for (int f = 0; f < nf; f++) {
      /* lambda's own adjoint joins the tangent linear model's, past the acceleration
         projection's kappa */
      double *lf = sw->lbar + (size_t)nc * f, *lo = sw->lam_bar + (size_t)nc * f;
      for (int j = 0; stage == 2 && j < nc; j++) lf[j] += lo[j], lo[j] = 0;
      adjoint_stage(js, stage, sw->matrices, sw->r[2 - stage], sw->g[2 - stage],
                    sw->mu + 3 * nzs * f, sw->ms + 2 * nzs * f, lf, grad + (size_t)f * p,
                    sw->scratch);
    }
  }
done:
  js->opt = &aux->opt;
  return st;
}

/* Steps s0 + 1 to s1 taken again from the mark of s0 onto the tape (slot 0 the mark's state),
   each followed by the functionals' evaluation as in the forward sweep (psi: scratch). */
static mb_status retake_segment(tape* tp, const marks* mk, long s0, long s1, double* psi,
                                mb_error* err) {
  joint_sens* js = tp->js;
  const double h = js->aux->opt.step;
  mark_copy(mk, js, s0 / mk->k, 0);
  tp->n = 0, tp->current = s0;
  mb_status st = tape_push(tp, 1, 1, err);
  for (long n = s0 + 1; n <= s1 && st == MB_OK; n++) {
    tp->current = n;
    if ((st = taped_step(tp, err)) == MB_OK) st = state_terms(js, h, psi, NULL, err);
  }
  return st;
}

mb_status mb_joint_adjoint(const mb_desc* desc, const mb_joint_model* jm, mb_joint_data* jd,
                           int checkpoint, double* psi, double* grad, size_t* memory,
                           mb_error* err) {
  const mb_model* aux = jm->aux;
  mb_data* da = jd->aux;
  const int p = grad ? mb_desc_gradient_count(desc) : 0, nf = aux->nfunctional;
  const int nz = jm->nz, nc = jm->ncon;
  const long nstep = mb_step_count(aux);
  const double h = aux->opt.step;
  joint_sens js;
  tape tp = {0};
  marks mk = {0};
  size_t most = 0; /* the most states the tape held */
  double *terms = NULL, *x0 = NULL, *mu = NULL;
  mb_status st = joint_sens_init(&js, desc, jm, jd, p, err);
  if (st != MB_OK) goto done;
  tp.js = &js;
  const size_t np = p > 0 ? p : 1, nzs = nz;
  terms = malloc(3 * (nzs + nc) * np * sizeof(double) + 1);
  x0 = malloc(3 * nzs * np * sizeof(double) + 1);
  mu = calloc((5 * nzs + 2 * nc) * (nf > 0 ? nf : 1) + 4 * nzs + nc + nf + 1, sizeof(double));
  if (!terms || !x0 || !mu || marks_init(&mk, &js, nstep, checkpoint) != 0) {
    st =
        mb_error_set(err, MB_ERR_MEMORY, "adjoint sensitivity: out of memory for %ld steps", nstep);
    goto done;
  }
  const int full = mk.k >= nstep;
  memset(psi, 0, sizeof(double) * nf);
  if (grad) memset(grad, 0, sizeof(double) * nf * p);

  /* forward sweep: the states (or the marks), psi and the initial state's sensitivities */
  if ((st = initial_state(&js, psi, NULL, err)) != MB_OK) goto done;
  for (size_t k = 0; k < np * nzs && p > 0; k++)
    x0[k] = js.zr[k], x0[np * nzs + k] = js.zdr[k], x0[2 * np * nzs + k] = js.zddr[k];
  if ((st = tape_push(&tp, 1, 1, err)) != MB_OK) goto done;
  if (!full) mark_copy(&mk, &js, 0, 1);
  for (long n = 1; n <= nstep; n++) {
    tp.current = n;
    st = full ? taped_step(&tp, err) : joint_step(&js, untaped_after, NULL, err);
    if (st != MB_OK) goto done;
    if ((st = state_terms(&js, n == nstep ? 0.5 * h : h, psi, NULL, err)) != MB_OK) goto done;
    if (!full && n % mk.k == 0) mark_copy(&mk, &js, n / mk.k, 1);
  }
  sens_accumulate(aux, da, js.ws, 1, 1, psi, NULL);
  most = tp.n;
  const mb_report report = da->report; /* the forward sweep's; segments taken again add to it */
  if (p == 0) goto done;

  /* backward sweep, segment by segment: [s0 + 1, s1] taken again from the mark of s0 (without
     checkpointing one segment, the whole tape), each step or sub-step with its settings; the
     functionals read the steps' ends. lbar: the adjoints of the imposed rows' lambda + kappa;
     lam_bar: of their lambda alone, which the tree's reactions read through the friction */
  sweep sw = {.js = &js, .tp = &tp, .nstep = nstep, .x0 = x0, .mu = mu};
  for (int l = 0; l < 3; l++)
    sw.r[l] = terms + (size_t)l * (nzs + nc) * np, sw.g[l] = sw.r[l] + nzs * np;
  sw.ms = mu + 3 * nzs * nf, sw.lbar = sw.ms + 2 * nzs * nf, sw.lam_bar = sw.lbar + (size_t)nc * nf;
  sw.scratch = sw.lam_bar + (size_t)nc * nf;
  double* psi_again = sw.scratch + 4 * nzs + nc; /* (nf) the functionals of segments taken again */
  /* a transposed product costs about two columns of its matrix: with few coordinates for the
     functionals, the matrices (scripts/bench-compare.sh: the five-bar, 4 coordinates and 3
     functionals, 0.84x with products) */
  sw.matrices = nz <= 2 * nf;
  for (long s1 = nstep;;) {
    const long s0 = full || s1 == 0 ? 0 : ((s1 - 1) / mk.k) * mk.k;
    if (!full && (st = retake_segment(&tp, &mk, s0, s1, psi_again, err)) != MB_OK) goto done;
    if (tp.n > most) most = tp.n;
    for (size_t i = tp.n; i-- > (s0 > 0 ? 1 : 0);)
      if ((st = sweep_slot(&sw, i, grad, err)) != MB_OK) goto done;
    if (s0 == 0) break;
    s1 = s0;
  }
  da->report = report;

done:
  if (memory) *memory = (record_size(&js) * most + mk.size * mk.count) * sizeof(double);
  js.opt = &aux->opt;
  joint_sens_free(&js);
  tape_free(&tp);
  marks_free(&mk);
  free(terms), free(x0), free(mu);
  return st;
}
