/* The exact derivatives of the joint formulation's equations of motion (joint_tangent.h). */
#include "joint_tangent.h"

#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "sens.h"
#include "structure.h"

/* tg->hess_entries: the system pattern's entries the imposed rows' Hessians reach; tg->entries:
   those and the entries between the force elements' coordinates (jm->force_entry), which hold
   every nonzero of the force Jacobians; -1 when out of memory. */
static int hessian_entries(mb_joint_tangent* tg) {
  const mb_joint_model* jm = tg->jm;
  const mb_structure* st = tg->aux->structure;
  int n = 0;
  for (int i = 0; i < jm->nrow; i++)
    n += st->hess_adr[2 * jm->row[i] + 2] - st->hess_adr[2 * jm->row[i]];
  tg->hess_entries = malloc((size_t)n * sizeof(int) + 1);
  tg->entries = malloc(((size_t)n + (size_t)jm->nforce_pair) * sizeof(int) + 1);
  if (!tg->hess_entries || !tg->entries) return -1;
  n = 0;
  for (int i = 0; i < jm->nrow; i++) {
    const int r = jm->row[i];
    for (int h = st->hess_adr[2 * r]; h < st->hess_adr[2 * r + 2]; h++)
      tg->hess_entries[n++] = st->hess_entry[h];
  }
  tg->nhess = mbu_sort_unique(tg->hess_entries, n);
  memcpy(tg->entries, tg->hess_entries, (size_t)tg->nhess * sizeof(int));
  memcpy(tg->entries + tg->nhess, jm->force_entry, (size_t)jm->nforce_pair * sizeof(int));
  tg->nentries = mbu_sort_unique(tg->entries, tg->nhess + jm->nforce_pair);
  return 0;
}

mb_joint_tangent* mb_joint_tangent_create(const mb_joint_model* jm, mb_joint_data* jd) {
  mb_joint_tangent* tg = calloc(1, sizeof *tg);
  if (!tg) return NULL;
  const mb_tree* t = jm->tree;
  const size_t nz = jm->nz, nq = jm->aux->nq, ncon = jm->aux->ncon;
  const size_t nsys = jm->aux->structure->sys->nnz, nphi = jm->aux->structure->phiq.nnz;
  tg->jm = jm, tg->jd = jd, tg->aux = jm->aux, tg->da = jd->aux;
  tg->nz = (int)nz, tg->nt = t->nz, tg->nc = jm->ncon, tg->nq = (int)nq;
  tg->sp = mb_tree_spatial_create(t);
  tg->sy = mb_tree_spatial_create(t);
  const size_t size[] = {nq * nz,
                         nq * nz,
                         nq * nz,
                         nq * nz,
                         nz * nz,
                         nz * nz,
                         nz * nz,
                         nz * nz,
                         nsys,
                         nphi,
                         nphi,
                         ncon,
                         nq,
                         nq,
                         nq,
                         6 * nq,
                         ncon,
                         nz,
                         (size_t)jm->full->nnz,
                         12 * (size_t)t->nbody,
                         nz};
  double** fields[] = {
      &tg->R, &tg->Rv,  &tg->Ra,     &tg->Rad,     &tg->K,       &tg->C,      &tg->M,
      &tg->T, &tg->KH,  &tg->phid_q, &tg->phidd_q, &tg->lam,     &tg->w,      &tg->u,
      &tg->v, &tg->scr, &tg->rows,   &tg->col,     &tg->pattern, &tg->wrench, &tg->projected};
  const mb_pattern* sys = jm->aux->structure->sys;
  if (!tg->sp || !tg->sy || !mbu_alloc_arrays(sizeof size / sizeof *size, size, fields, 1) ||
      mb_compact_init(&tg->kh, sys) != 0 || mb_compact_init(&tg->damp, sys) != 0 ||
      hessian_entries(tg) != 0) {
    mb_joint_tangent_free(tg);
    return NULL;
  }
  return tg;
}

void mb_joint_tangent_free(mb_joint_tangent* tg) {
  if (!tg) return;
  mb_tree_spatial_free(tg->sp);
  mb_tree_spatial_free(tg->sy);
  mb_compact_release(&tg->kh);
  mb_compact_release(&tg->damp);
  free(tg->hess_entries);
  free(tg->entries);
  free(tg->R);
  free(tg);
}

/* The natural model's rates at joint rates zd, zdd (positions: the last mb_joint_constraints),
   the imposed constraint rows and their rate Jacobians, and the spatial motion. */
void mb_joint_tangent_state(mb_joint_tangent* js, const double* zd, const double* zdd) {
  const mb_joint_model* jm = js->jm;
  mb_joint_data* jd = js->jd;
  const mb_tree* t = jm->tree;
  mb_tree_velocities(t, zd, jd->st);
  mb_tree_natural_velocities(jd->st, js->aux, 0, NULL, js->da->qd);
  mb_joint_states_to_natural(jm, zd, js->da->qd);
  mb_tree_accelerations(t, jd->z, zd, zdd, jd->st);
  mb_tree_natural_accelerations(jd->st, js->aux, 0, NULL, js->da->qdd);
  mb_joint_states_to_natural(jm, zdd, js->da->qdd);
  mb_tree_spatial_motion(t, jd->st, jd->z, zd, zdd, js->sp);
  js->da->t = jd->t;
  mbd_constraints_rows_of(js->aux, js->da, jm->nrow, jm->row, js->phid_q, js->phidd_q);
  js->columns_current = 0;
}

/* R, Rv, Ra and Rad at the motion js->sp. Rad = dqdd/dzd is 2 Rv: qdd = R zdd + sum_jk
   d2q/dz_j dz_k zd_j zd_k, and the second derivatives of q(z) are symmetric (a pass along each
   rate gives the same columns to rounding, checked in test_joint_model). */
void mb_joint_tangent_columns(mb_joint_tangent* js) {
  const mb_joint_model* jm = js->jm;
  const size_t nq = js->nq, n = nq * js->nz;
  memset(js->R, 0, 4 * n * sizeof(double)); /* R, Rv, Ra, Rad are contiguous */
  for (int j = 0; j < js->nt; j++) {
    const mb_tree_direction z = {.coord = j, .cz = 1, .body = -1};
    mb_tree_natural_tangent(jm->tree, js->jd->st, js->sp, js->aux, &z, NULL, js->R + j * nq,
                            js->Rv + j * nq, js->Ra + j * nq);
  }
  for (size_t i = 0; i < n; i++) js->Rad[i] = 2 * js->Rv[i];
  for (int k = 0; k < jm->nstate; k++) js->R[(js->nt + k) * nq + jm->state_qadr[k]] = 1;
  js->columns_current = 1;
}

/* y (nz) = s R^T x (+ y when add) for x nonzero on the n elements elems (NULL: anywhere) and
   the state coordinates alone, with the body wrenches js->wrench holds already (about the
   reference points) added to x's */
static void rt_mul_wrenches(mb_joint_tangent* js, const double* x, int n, const int* elems,
                            double s, int add, double* y) {
  /* through the bodies' wrenches, accumulated from the leaves (eq. 7): the columns of R are
     sparse */
  const mb_joint_model* jm = js->jm;
  const mb_tree* t = jm->tree;
  mb_tree_natural_wrenches(js->jd->st, js->aux, n, elems, x, js->wrench);
  mb_tree_project(t, js->jd->st, js->wrench, js->projected, js->wrench + 6 * t->nbody);
  for (int j = 0; j < js->nt; j++) y[j] = (add ? y[j] : 0) + s * js->projected[j];
  for (int k = 0; k < jm->nstate; k++)
    y[js->nt + k] = (add ? y[js->nt + k] : 0) + s * x[jm->state_qadr[k]];
}

void mb_joint_tangent_rt_mul(mb_joint_tangent* js, const double* x, double s, int add, double* y) {
  memset(js->wrench, 0, 6 * (size_t)js->jm->tree->nbody * sizeof(double));
  rt_mul_wrenches(js, x, 0, NULL, s, add, y);
}

/* y (nq) += X x for X (nq x nz by columns) */
static void add_columns_times(const mb_joint_tangent* js, const double* X, const double* x,
                              double* y) {
  for (int j = 0; x && j < js->nz; j++)
    if (x[j] != 0)
      for (int i = 0; i < js->nq; i++) y[i] += X[(size_t)j * js->nq + i] * x[j];
}

/* The bodies' motion along dir (vectors of positions, rates and accelerations) at the motion sp,
   as far as rates, and dq, dqd, dqdd (nq each, may be NULL, cleared) at the n elements elems
   (NULL: every element), with dir's state coordinates. */
static void tree_along(mb_joint_tangent* js, mb_tree_spatial* sp, int n, const int* elems,
                       const mb_tree_direction* dir, int rates, double* dq, double* dqd,
                       double* dqdd) {
  const mb_joint_model* jm = js->jm;
  double* out[3] = {dq, dqd, dqdd};
  const double* in[3] = {dir->dz, dir->dzd, dir->dzdd};
  for (int l = 0; l < 3; l++)
    if (out[l]) memset(out[l], 0, (size_t)js->nq * sizeof(double));
  mb_tree_body_tangents(jm->tree, sp, dir, rates);
  mb_tree_element_tangents(js->jd->st, sp, js->aux, n, elems, NULL, dq, dqd, dqdd);
  for (int l = 0; l < 3; l++)
    for (int k = 0; out[l] && in[l] && k < jm->nstate; k++)
      out[l][jm->state_qadr[k]] += in[l][js->nt + k];
}

/* mb_joint_tangent_along at the n elements elems alone (NULL: every element; the columns,
   when current, give every element): the others' entries zero. */
static void along_at(mb_joint_tangent* js, mb_tree_spatial* sp, int n, const int* elems,
                     const double* dz, const double* dzd, const double* dzdd, double* dq,
                     double* dqd, double* dqdd) {
  if (sp == js->sp && js->columns_current) {
    /* the columns at hand: a few dense products, cheaper than a tree pass for few coordinates */
    double* out[3] = {dq, dqd, dqdd};
    for (int l = 0; l < 3; l++)
      if (out[l]) memset(out[l], 0, (size_t)js->nq * sizeof(double));
    if (dq) add_columns_times(js, js->R, dz, dq);
    if (dqd) add_columns_times(js, js->Rv, dz, dqd), add_columns_times(js, js->R, dzd, dqd);
    if (dqdd)
      add_columns_times(js, js->Ra, dz, dqdd), add_columns_times(js, js->Rad, dzd, dqdd),
          add_columns_times(js, js->R, dzdd, dqdd);
    return;
  }
  const mb_tree_direction dir = {.coord = -1, .body = -1, .dz = dz, .dzd = dzd, .dzdd = dzdd};
  tree_along(js, sp, n, elems, &dir, dqdd ? 2 : dqd ? 1 : 0, dq, dqd, dqdd);
}

void mb_joint_tangent_along(mb_joint_tangent* js, mb_tree_spatial* sp, const double* dz,
                            const double* dzd, const double* dzdd, double* dq, double* dqd,
                            double* dqdd) {
  along_at(js, sp, 0, NULL, dz, dzd, dzdd, dq, dqd, dqdd);
}

/* tree_along at the elements the force elements and the imposed rows read, positions and rates
   alone: for the inertial forces body by body, as far as rates. */
static void along_body(mb_joint_tangent* js, mb_tree_spatial* sp, const mb_tree_direction* dir,
                       int rates, double* dq, double* dqd) {
  tree_along(js, sp, js->jm->nneed_elem, js->jm->need_elem, dir, rates, dq, dqd, NULL);
}

void mb_joint_tangent_rows_along(mb_joint_tangent* js, const double* dz, const double* dzd,
                                 double* dq, double* dqd, double* dqdd) {
  along_at(js, js->sp, js->jm->nrow_elem, js->jm->need_elem, dz, dzd, NULL, dq, dqd, dqdd);
}

void mb_joint_tangent_forces(mb_joint_tangent* js, const double* mult) {
  mb_joint_friction_multipliers(js->jm, js->da, mult, 0, NULL);
  mb_forces(js->aux, js->da, 1);
  if (js->jm->friction)
    mb_friction_tangent(js->aux, js->da, 0, js->jm->row_scale, 1, js->da->stiff);
}

void mb_joint_tangent_coupling(mb_joint_tangent* js, const sens_friction* fr, double* gz,
                               double* lz) {
  const mb_joint_model* jm = js->jm;
  for (int a = 0; a < fr->n; a++) {
    const double* dlam = fr->dlam + (size_t)a * js->aux->ncon;
    mb_joint_tangent_rt_mul(js, fr->g + (size_t)a * js->nq, 1, 0, gz + (size_t)a * js->nz);
    for (int i = 0; i < js->nc; i++)
      lz[(size_t)a * js->nc + i] = i < jm->nrow ? dlam[jm->row[i]] : 0;
  }
}

/* js->lam = the joint multipliers mult (ncon) on the imposed rows; js->KH = the stiffness (with
   stiffness) plus sum lam_i Hessian(Phi_i). */
void mb_joint_tangent_multipliers(mb_joint_tangent* js, const double* mult, int stiffness) {
  const mb_model* aux = js->aux;
  memset(js->lam, 0, (size_t)aux->ncon * sizeof(double));
  for (int i = 0; i < js->jm->nrow; i++) js->lam[js->jm->row[i]] = mult[i];
  const mb_pattern* sys = aux->structure->sys;
  /* KH is zero beyond js->entries: written there alone */
  const int n = stiffness ? js->nentries : js->nhess;
  const int* entries = stiffness ? js->entries : js->hess_entries;
  for (int i = 0; i < n; i++) js->KH[entries[i]] = stiffness ? js->da->stiff[entries[i]] : 0;
  mb_constraints_add_hessian(aux, js->da, js->lam, 1, js->KH);
  mb_compact_set_entries(&js->kh, sys, js->KH, n, entries);
  if (stiffness) mb_compact_set_entries(&js->damp, sys, js->da->damp, n, entries);
}

/* js->w = M^n x + Phi_q^T lam (x: natural, may be NULL) - (with forces) Q^n */
void mb_joint_tangent_residual(mb_joint_tangent* js, const double* x, int forces) {
  const mb_model* aux = js->aux;
  memset(js->w, 0, (size_t)js->nq * sizeof(double));
  if (x) mb_mass_mul(aux, x, 1, js->w);
  for (int i = 0; forces && i < js->nq; i++) js->w[i] -= js->da->force[i];
  mb_rows_mul_t(&aux->structure->phiq, js->da->phiq, js->lam, 1, js->w);
}

/* y[a stride] += 2 mult_e x[a] (x NULL: 1) for each Euler parameter a of normalisation e: the
   normalisations' Hessians 2 mult_e I added to a matrix's diagonal (y by columns, stride nz + 1)
   or times x (stride 1). */
static void add_normalisations(const mb_joint_tangent* js, const double* mult, const double* x,
                               double* y, size_t stride) {
  const mb_tree* t = js->jm->tree;
  for (int n = 0; n < t->nnorm; n++)
    for (int k = 0; k < 4; k++) {
      const int a = t->normadr[n] + k;
      y[a * stride] += 2 * mult[js->jm->nrow + n] * (x ? x[a] : 1);
    }
}

/* col (nt) = d(R^T w)/dz at fixed w (js->w, summed by mb_tree_wrench_sums into js->sp) along
   dir, dq the natural positions' derivative along it. */
static void geometric_along(mb_joint_tangent* js, const mb_tree_direction* dir, const double* dq,
                            double* col) {
  mb_tree_column_tangent(js->jm->tree, js->jd->st, js->sp, js->aux, dir, js->w, dq, col);
}

/* A (nz x nz by columns) += d(R^T w)/dz at fixed w (js->w): the tree's geometric term, and the
   Euler normalisations' Hessians 2 mult_e I. */
void mb_joint_tangent_add_geometric(mb_joint_tangent* js, const double* mult, double* A) {
  const mb_joint_model* jm = js->jm;
  const mb_tree* t = jm->tree;
  mb_tree_wrench_sums(t, js->jd->st, js->aux, js->w, js->sp);
  for (int j = 0; j < js->nt; j++) {
    const mb_tree_direction z = {.coord = j, .cz = 1, .body = -1};
    geometric_along(js, &z, js->R + (size_t)j * js->nq, js->col);
    for (int i = 0; i < js->nt; i++) A[(size_t)j * js->nz + i] += js->col[i];
  }
  add_normalisations(js, mult, NULL, A, (size_t)js->nz + 1);
}

/* The dynamic matrices at the dynamic state (its rates in the natural state, forces evaluated):
   K = d(R^T w)/dz, C = d(R^T w)/dzd, M = R^T M^n R, the last the tree's recursive mass matrix
   (mb_joint_mass), which is that product without forming it column by column. */
void mb_joint_tangent_dynamics(mb_joint_tangent* js, const double* mult) {
  const mb_model* aux = js->aux;
  const size_t nq = js->nq, nz = js->nz;
  mb_joint_tangent_multipliers(js, mult, 1);
  mb_joint_tangent_residual(js, js->da->qdd, 1);
  memset(js->K, 0, nz * nz * sizeof(double));
  mb_joint_tangent_add_geometric(js, mult, js->K);
  for (size_t j = 0; j < nz; j++) {
    double* u = js->u;
    memset(u, 0, nq * sizeof(double));
    mb_compact_mul(&js->kh, js->R + j * nq, 1, u);
    mb_compact_mul(&js->damp, js->Rv + j * nq, 1, u);
    mb_mass_mul(aux, js->Ra + j * nq, 1, u);
    mb_joint_tangent_rt_mul(js, u, 1, 1, js->K + j * nz);
    memset(u, 0, nq * sizeof(double));
    mb_compact_mul(&js->damp, js->R + j * nq, 1, u);
    mb_mass_mul(aux, js->Rad + j * nq, 1, u);
    mb_joint_tangent_rt_mul(js, u, 1, 0, js->C + j * nz);
  }
  mb_joint_mass(js->jm, js->jd); /* symmetric: its rows are its columns */
  memcpy(js->M, js->jd->M, nz * nz * sizeof(double));
}

/* A (nz x nz by columns) = K + cv C + ca M of mb_joint_tangent_dynamics, each column the
   derivative along one coordinate moved with its rate as a Newmark step moves them (by 1 and cv),
   in one pass of the tree instead of one per matrix; ca M the recursive mass matrix's. The
   inertial forces' and the geometric term's derivatives are taken body by body (the bodies'
   inertias, the residual's moments), the force elements' and the imposed rows' element by
   element at the elements they read alone. */
void mb_joint_tangent_newton(mb_joint_tangent* js, const double* mult, double cv, double ca,
                             double* A) {
  const mb_joint_model* jm = js->jm;
  const mb_tree* t = jm->tree;
  mb_tree_state* st = js->jd->st;
  const mb_model* aux = js->aux;
  const size_t nq = js->nq, nz = js->nz;
  double *dq = js->scr, *dqd = dq + nq, *u = js->u;
  mb_joint_tangent_multipliers(js, mult, 1);
  mb_joint_tangent_residual(js, js->da->qdd, 1);
  mb_tree_wrench_sums(t, st, aux, js->w, js->sp);
  mb_joint_mass(jm, js->jd); /* and the bodies' inertias at the positions */
  memset(A, 0, nz * nz * sizeof(double));
  for (size_t j = 0; j < nz; j++) {
    double* a = A + j * nz;
    /* dq, dqd and u are read at the coordinates the force elements and imposed rows read alone */
    for (int r = 0; r < jm->nneed_coord; r++) {
      const int c = jm->need_coord[r];
      dq[c] = dqd[c] = u[c] = 0;
    }
    memset(js->wrench, 0, 6 * (size_t)t->nbody * sizeof(double));
    if ((int)j < js->nt) {
      const mb_tree_direction dir = {.coord = (int)j, .cz = 1, .cv = cv, .body = -1};
      mb_tree_body_tangents(t, js->sp, &dir, 2);
      mb_tree_element_tangents(st, js->sp, aux, jm->nneed_elem, jm->need_elem, NULL, dq, dqd, NULL);
      mb_tree_tangent_wrenches(t, st, js->sp, 2, js->wrench);
      mb_tree_column_tangent(t, st, js->sp, aux, &dir, js->w, NULL, a);
    } else {
      const int i = jm->state_qadr[j - js->nt];
      dq[i] = 1, dqd[i] = cv;
    }
    mb_compact_mul(&js->kh, dq, 1, u);
    mb_compact_mul(&js->damp, dqd, 1, u);
    rt_mul_wrenches(js, u, jm->nneed_elem, jm->need_elem, 1, 1, a);
  }
  add_normalisations(js, mult, NULL, A, nz + 1);
  memcpy(js->M, js->jd->M, nz * nz * sizeof(double));
  for (size_t k = 0; k < nz * nz; k++) A[k] += ca * js->M[k];
}

/* y (nz) += s C x, C of mb_joint_tangent_dynamics, at the dynamic state. */
void mb_joint_tangent_damping_mul(mb_joint_tangent* js, const double* x, double s, double* y) {
  /* R^T D dqd and the inertial forces of dqdd body by body (mb_joint_tangent_newton's terms of
     the rates), dqd at the elements D reads alone */
  const mb_joint_model* jm = js->jm;
  const size_t nq = js->nq;
  double *dqd = js->scr + nq, *u = js->u;
  memset(js->wrench, 0, 6 * (size_t)jm->tree->nbody * sizeof(double));
  along_body(js, js->sp, &(mb_tree_direction){.coord = -1, .body = -1, .dzd = x}, 2, NULL, dqd);
  mb_tree_tangent_wrenches(jm->tree, js->jd->st, js->sp, 2, js->wrench);
  memset(u, 0, nq * sizeof(double));
  mb_compact_mul(&js->damp, dqd, 1, u);
  rt_mul_wrenches(js, u, jm->nneed_elem, jm->need_elem, s, 1, y);
}

/* col (nt) = G(v) along dir: d(R^T v)/dz at fixed v along dir, dq its natural positions'
   derivative, through the wrench sums of v in js->sp, which then hold w's again. G(v) is
   symmetric (the Hessian of v . q(z)), so that this is also G(v)^T. */
static void geometric_of(mb_joint_tangent* js, const double* v, const mb_tree_direction* dir,
                         const double* dq, double* col) {
  const mb_tree* t = js->jm->tree;
  mb_tree_wrench_sums(t, js->jd->st, js->aux, v, js->sp);
  mb_tree_column_tangent(t, js->jd->st, js->sp, js->aux, dir, v, dq, col);
  mb_tree_wrench_sums(t, js->jd->st, js->aux, js->w, js->sp);
}

/* y (nz) += s (R^T X^T dq + c G(M^n dq) r) for dq = R x (in js->scr) and joint rates r: the
   transposes of R^T X R x and of c R^T M^n d(R r)/dz x, X a natural matrix's nonzero entries. */
static void add_transposed_terms(mb_joint_tangent* js, const mb_compact* X, const double* r,
                                 double c, double s, double* y) {
  const size_t nq = js->nq;
  double *dq = js->scr, *rq = dq + nq, *v = js->u, *col = js->col;
  mb_joint_tangent_along(js, js->sp, r, NULL, NULL, rq, NULL, NULL);
  memset(v, 0, nq * sizeof(double));
  mb_compact_mul_t(X, dq, 1, v);
  mb_joint_tangent_rt_mul(js, v, s, 1, y);
  memset(v, 0, nq * sizeof(double));
  mb_mass_mul(js->aux, dq, 1, v);
  const mb_tree_direction dir = {.coord = -1, .body = -1, .dz = r};
  geometric_of(js, v, &dir, rq, col);
  for (int i = 0; i < js->nt; i++) y[i] += c * s * col[i];
}

/* y (nz) += s C^T x at the dynamic state of rates zd: R^T D^T R x + Rad^T M^n R x, with
   Rad^T v = 2 G(v) zd (qdd holds the rates quadratically: dqdd/dzd x = 2 d(R zd)/dz x). */
void mb_joint_tangent_damping_mul_t(mb_joint_tangent* js, const double* zd, const double* x,
                                    double s, double* y) {
  mb_joint_tangent_along(js, js->sp, x, NULL, NULL, js->scr, NULL, NULL);
  add_transposed_terms(js, &js->damp, zd, 2, s, y);
}

/* The state of a projection's derivatives: the multipliers mult, js->v = R y,
   js->w = M^n R y + Phi_q^T lam and its wrench sums, and js->sy the motion at the rates y
   (joint, the rate change of a projection), at the projected state's positions. */
void mb_joint_tangent_projection_state(mb_joint_tangent* js, const double* y, const double* mult) {
  mb_joint_tangent_multipliers(js, mult, 0);
  mb_joint_tangent_along(js, js->sp, y, NULL, NULL, js->v, NULL, NULL);
  mb_joint_tangent_residual(js, js->v, 0);
  mb_tree_wrench_sums(js->jm->tree, js->jd->st, js->aux, js->w, js->sp);
  mb_tree_spatial_motion(js->jm->tree, js->jd->st, js->jd->z, y, NULL, js->sy);
}

/* out (nz) += s P x, P of mb_joint_tangent_projection, after mb_joint_tangent_projection_state
   with the same mult. */
void mb_joint_tangent_projection_mul(mb_joint_tangent* js, const double* x, const double* mult,
                                     double s, double* out) {
  /* along x at the rates y: R x at the elements KH reads, and the inertial forces of
     d(R y)/dz x, the velocity change of the rates y, body by body */
  const mb_joint_model* jm = js->jm;
  const mb_tree* t = jm->tree;
  const size_t nq = js->nq;
  double *dq = js->scr, *u = js->u, *col = js->col;
  memset(js->wrench, 0, 6 * (size_t)t->nbody * sizeof(double));
  const mb_tree_direction dir = {.coord = -1, .body = -1, .dz = x};
  along_body(js, js->sy, &dir, 1, dq, NULL);
  mb_tree_tangent_wrenches(t, js->jd->st, js->sy, 1, js->wrench);
  memset(u, 0, nq * sizeof(double));
  mb_compact_mul(&js->kh, dq, 1, u);
  rt_mul_wrenches(js, u, jm->nneed_elem, jm->need_elem, s, 1, out);
  /* the geometric term, from the moments of w at the state's motion: the bodies' displacements
     along x, the same at any rates */
  memcpy(js->sp->sums, js->sy->sums, 24 * (size_t)t->nbody * sizeof(double));
  memcpy(js->sp->moved, js->sy->moved, (size_t)t->nbody);
  memset(col, 0, (size_t)js->nz * sizeof(double));
  mb_tree_column_tangent(t, js->jd->st, js->sp, js->aux, &dir, js->w, NULL, col);
  add_normalisations(js, mult, x, col, 1);
  for (int i = 0; i < js->nz; i++) out[i] += s * col[i];
}

/* out (nz) += s P^T x, P of mb_joint_tangent_projection at the rates y, after
   mb_joint_tangent_projection_state with the same y and mult: G(w) x + R^T KH^T R x +
   G(M^n R x) y, the last the transpose of R^T M^n d(R y)/dz (d(R y)/dz x = d(R x)/dz y). */
void mb_joint_tangent_projection_mul_t(mb_joint_tangent* js, const double* y, const double* x,
                                       const double* mult, double s, double* out) {
  double *dq = js->scr, *col = js->col;
  mb_joint_tangent_along(js, js->sp, x, NULL, NULL, dq, NULL, NULL);
  const mb_tree_direction dx = {.coord = -1, .body = -1, .dz = x};
  memset(col, 0, (size_t)js->nz * sizeof(double));
  geometric_along(js, &dx, dq, col);
  add_normalisations(js, mult, x, col, 1);
  for (int i = 0; i < js->nz; i++) out[i] += s * col[i];
  add_transposed_terms(js, &js->kh, y, 1, s, out);
}

/* P (nz x nz by columns) = d(M y + Phi_z^T mult)/dz at fixed y (joint, the rate change of a
   projection) and mult, at the projected state's positions, after
   mb_joint_tangent_projection_state. */
void mb_joint_tangent_projection(mb_joint_tangent* js, const double* mult, double* P) {
  const mb_model* aux = js->aux;
  const mb_tree* t = js->jm->tree;
  const size_t nq = js->nq, nz = js->nz;
  memset(P, 0, nz * nz * sizeof(double));
  for (int j = 0; j < js->nt; j++) {
    const mb_tree_direction z = {.coord = j, .cz = 1, .body = -1};
    geometric_along(js, &z, js->R + (size_t)j * nq, js->col);
    for (int i = 0; i < js->nt; i++) P[(size_t)j * nz + i] += js->col[i];
  }
  add_normalisations(js, mult, NULL, P, nz + 1);
  for (size_t j = 0; j < nz; j++) {
    double* u = js->u;
    memset(u, 0, nq * sizeof(double));
    if ((int)j < js->nt) {
      const mb_tree_direction z = {.coord = (int)j, .cz = 1, .body = -1};
      memset(js->v, 0, nq * sizeof(double));
      mb_tree_natural_tangent(t, js->jd->st, js->sy, aux, &z, NULL, NULL, js->v, NULL);
      mb_mass_mul(aux, js->v, 1, u);
    }
    mb_compact_mul(&js->kh, js->R + j * nq, 1, u);
    mb_joint_tangent_rt_mul(js, u, 1, 1, P + j * nz);
  }
}
