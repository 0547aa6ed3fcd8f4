/* Static equilibrium in joint coordinates: from the natural model's assembled positions, the
   joint coordinates z at rest where

     Phi_z^T lambda + P_z^T mu = Q(z, 0),   Phi(z) = 0,   P(q(z)) = values,

   Q the accumulated forces of the equations of motion, Phi the formulation's constraints (cut
   joints, drivers, Euler normalisations) and P the held initial values (equilibrium.c), solved by
   the balance iteration of equilibrium.c on (z, lambda, mu). The tree holds its joints by
   construction, so the unknowns are a few dozen where the exploded natural model's balance has
   hundreds. The Jacobian is the exact tangent of the equations of motion (joint_tangent.c); the
   held values' curvature, mu P_zz, is left out: the held coordinates of a vehicle carry little
   force at rest, and the iteration absorbs the rest. Controller states are held. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "joint_model.h"
#include "joint_tangent.h"

typedef struct joint_balance {
  const mb_joint_model* jm;
  mb_joint_data* jd;
  mb_joint_tangent* tg;
  int nz, nc, npv, n; /* coordinates, constraints, held values, unknowns */
  int* pres;          /* (npv) the held prescriptions of the natural model */
  double scale;       /* force scale, N (N m for the rotations) */
  double *y, *F, *A;  /* (nc + npv) scaled multipliers, (n) residual, (n x n) Jacobian */
  double* held;       /* (npv x nz) the held values' gradients P_z */
  double* row;        /* (natural nq) a held value's gradient P_q */
  double* mult;       /* (nc) lambda = y scale */
} joint_balance;

static void joint_balance_free(joint_balance* b) {
  mb_joint_tangent_free(b->tg);
  free(b->pres), free(b->y), free(b->F), free(b->A), free(b->held), free(b->row), free(b->mult);
}

static int joint_balance_init(joint_balance* b, const mb_joint_model* jm, mb_joint_data* jd) {
  const mb_model* aux = jm->aux;
  *b = (joint_balance){.jm = jm, .jd = jd, .nz = jm->nz, .nc = jm->ncon, .scale = 1};
  for (int i = 0; i < aux->npres; i++) b->npv += aux->pres_has_value[i] != 0;
  const size_t n = (size_t)(b->n = b->nz + b->nc + b->npv);
  b->tg = mb_joint_tangent_create(jm, jd);
  b->pres = malloc(sizeof(int) * ((size_t)b->npv + 1));
  b->y = calloc(n - (size_t)b->nz + 1, sizeof(double));
  b->F = calloc(n + 1, sizeof(double));
  b->A = calloc(n * n + 1, sizeof(double));
  b->held = calloc((size_t)b->npv * b->nz + 1, sizeof(double));
  b->row = calloc((size_t)aux->nq + 1, sizeof(double));
  b->mult = calloc((size_t)b->nc + 1, sizeof(double));
  if (!b->tg || !b->pres || !b->y || !b->F || !b->A || !b->held || !b->row || !b->mult) return 0;
  for (int i = 0, k = 0; i < aux->npres; i++)
    if (aux->pres_has_value[i]) b->pres[k++] = i;
  return 1;
}

/* F, and A when jacobian, at jd->z with the multipliers b->y, at rest */
static void joint_balance_eval(void* ctx, int jacobian) {
  joint_balance* b = ctx;
  const mb_joint_model* jm = b->jm;
  mb_joint_data* jd = b->jd;
  const int nz = b->nz, nc = b->nc, n = b->n, nt = jm->tree->nz;
  double *F = b->F, *A = b->A;
  mb_joint_constraints(jm, jd);
  mb_joint_motion(jm, jd, NULL, 1);
  mb_joint_dynamics(jm, jd, jacobian);
  const double* mu = b->y + nc;
  for (int j = 0; j < b->npv; j++) {
    F[nz + nc + j] = mb_balance_held_row(jm->aux, b->pres[j], jd->aux->q, b->row);
    mb_joint_tangent_rt_mul(b->tg, b->row, 1, 0, b->held + (size_t)j * nz);
  }
  for (int k = 0; k < nz; k++) {
    double f = -jd->Q[k] / b->scale;
    for (int i = 0; i < nc; i++) f += jd->phiz[(size_t)i * nz + k] * b->y[i];
    for (int j = 0; j < b->npv; j++) f += b->held[(size_t)j * nz + k] * mu[j];
    F[k] = f;
  }
  memcpy(F + nz, jd->phi, sizeof(double) * nc);
  if (jacobian) {
    for (int i = 0; i < nc; i++) b->mult[i] = b->y[i] * b->scale;
    mb_joint_tangent_state(b->tg, jd->zd, jd->zdd);
    mb_joint_tangent_columns(b->tg);
    mb_joint_tangent_dynamics(b->tg, b->mult);
    memset(A, 0, sizeof(double) * n * n);
    for (int k = 0; k < nz; k++)
      for (int j = 0; j < nz; j++) A[(size_t)k * n + j] = b->tg->K[(size_t)j * nz + k] / b->scale;
    for (int i = 0; i < nc + b->npv; i++) {
      const double* g = i < nc ? jd->phiz + (size_t)i * nz : b->held + (size_t)(i - nc) * nz;
      for (int k = 0; k < nz; k++) A[(size_t)k * n + nz + i] = A[(size_t)(nz + i) * n + k] = g[k];
    }
  }
  for (int k = nt; k < nz; k++) mb_balance_fix(n, k, F, jacobian ? A : NULL);
}

static void joint_balance_get(void* ctx, double* x) {
  const joint_balance* b = ctx;
  memcpy(x, b->jd->z, sizeof(double) * b->nz);
  memcpy(x + b->nz, b->y, sizeof(double) * (b->n - b->nz));
}

static void joint_balance_put(void* ctx, const double* x) {
  joint_balance* b = ctx;
  memcpy(b->jd->z, x, sizeof(double) * b->nz);
  memcpy(b->y, x + b->nz, sizeof(double) * (b->n - b->nz));
}

/* row i: the forces on the body of coordinate i, a constraint or a held value */
static void joint_balance_name(void* ctx, int i, char* buf, size_t len) {
  const joint_balance* b = ctx;
  const mb_joint_model* jm = b->jm;
  const int r = i - b->nz;
  if (i < jm->tree->nz)
    snprintf(buf, len, "body %s", jm->aux->body_name + (size_t)MB_NAME_LEN * jm->tree->zbody[i]);
  else if (i < b->nz)
    snprintf(buf, len, "controller state %d", i - jm->tree->nz);
  else if (r < jm->nrow)
    snprintf(buf, len, "%s", jm->aux->con_label + MB_LABEL_LEN * jm->row[r]);
  else if (r < b->nc)
    snprintf(buf, len, "%s", jm->norm_label[r - jm->nrow]);
  else
    snprintf(buf, len, "initial[%d]", b->pres[r - b->nc]);
}

static mb_balance_problem problem(joint_balance* b) {
  /* generalised forces: N along translations, N m about rotations */
  return (mb_balance_problem){b->n,
                              b->nz,
                              &b->scale,
                              b->jm->aux->opt.tol_assembly,
                              b->y,
                              b->F,
                              b->A,
                              b,
                              joint_balance_eval,
                              joint_balance_get,
                              joint_balance_put,
                              joint_balance_name,
                              ""};
}

mb_status mb_joint_equilibrium(const mb_joint_model* jm, mb_joint_data* jd, mb_error* err) {
  joint_balance b;
  mb_status st = MB_ERR_MEMORY;
  if (joint_balance_init(&b, jm, jd)) {
    jd->t = 0;
    memset(jd->zd, 0, sizeof(double) * jm->nz);
    memset(jd->zdd, 0, sizeof(double) * jm->nz);
    mb_joint_read_positions(jm, jd);
    const mb_balance_problem p = problem(&b);
    if ((st = mb_balance_start(&p)) == MB_OK)
      st = mb_balance_solve(&p, jm->aux->opt.max_assembly, &jd->aux->report, err);
  }
  joint_balance_free(&b);
  return mb_balance_status(st, err);
}
