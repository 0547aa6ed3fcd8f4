/* The joint formulation's model and its constraints and equations of motion (joint_model.h). */
#include "joint_model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frames.h"

#include "internal.h"
#include "structure.h"

void mb_joint_model_free(mb_joint_model* jm) {
  if (!jm) return;
  mb_solver_release(&jm->lu);
  mb_solver_release(&jm->cholesky);
  mb_pattern_free(jm->full);
  mb_tree_free(jm->tree);
  if (jm->owns_aux) mb_model_free_natural(jm->aux);
  free(jm->row);
  free(jm->scale);
  free(jm->norm_label);
  free(jm->entry);
  free(jm);
}

/* The dense pattern of the nz x nz matrices and its factorisations. */
static int dense_solvers(mb_joint_model* jm) {
  const int nz = jm->tree->nz;
  mb_pairs pairs = {0};
  for (int i = 0; i < nz; i++)
    for (int j = 0; j < i; j++)
      if (mb_pairs_add(&pairs, i, j) != 0) {
        mb_pairs_free(&pairs);
        return -1;
      }
  jm->full = mb_pattern_create(nz, 1, &pairs);
  mb_pairs_free(&pairs);
  jm->entry = malloc(((size_t)nz * nz + 1) * sizeof(int));
  if (!jm->full || !jm->entry) return -1;
  for (int i = 0; i < nz; i++)
    for (int j = 0; j < nz; j++) jm->entry[(size_t)i * nz + j] = mb_pattern_entry(jm->full, i, j);
  if (mb_solver_init(&jm->lu, &mb_dense_lu, jm->full) != 0) return -1;
  return mb_solver_init(&jm->cholesky, &mb_dense_cholesky, jm->full);
}

/* The penalty scales of the constraints at the initial poses, by the natural model's rule
   (compile.c): c_i = alpha beta h^2 sum_j Phi_z,ij^2 / M_jj kept within [1e2, 1e4] (the floor
   only with the automatic penalty). */
static mb_status penalty_scales(const mb_desc* d, mb_joint_model* jm) {
  const mb_tree* t = jm->tree;
  const int nz = t->nz, nb = t->nbody;
  mb_data* da = mb_data_create_natural(jm->aux);
  for (int i = 0; i < jm->ncon; i++) jm->scale[i] = 1;
  mb_joint_data* jd = da ? mb_joint_data_create(jm, da) : NULL;
  double* pose = calloc(12 * (size_t)nb + 1, sizeof(double));
  if (!jd || !pose) {
    mb_joint_data_free(jd), mb_data_free_natural(da), free(pose);
    return MB_ERR_MEMORY;
  }
  for (int b = 0; b < nb; b++) {
    mb_pose_rotation(t->dim, d->body[b].orientation, pose + 9 * b);
    memcpy(pose + 9 * nb + 3 * b, d->body[b].position, 3 * sizeof(double));
  }
  mb_tree_coordinates(t, pose, pose + 9 * nb, jd->z);
  mb_joint_constraints(jm, jd);
  mb_tree_mass(t, jd->st, jd->M, jd->work);
  const mb_settings* o = &jm->aux->opt;
  const double abh2 = o->penalty * o->beta * o->step * o->step, c_cap = 1e4, c_floor = 1e2;
  for (int i = 0; i < jm->ncon; i++) {
    double mu = 0;
    for (int j = 0; j < nz; j++) {
      const double mjj = jd->M[(size_t)j * nz + j], a = jd->phiz[(size_t)i * nz + j];
      if (mjj > 0) mu += a * a / mjj;
    }
    const double c = abh2 * mu;
    jm->scale[i] = c > c_cap                                 ? c_cap / c
                   : o->penalty_auto && c > 0 && c < c_floor ? c_floor / c
                                                             : 1;
  }
  mb_joint_data_free(jd), mb_data_free_natural(da), free(pose);
  return MB_OK;
}

/* What the formulation cannot take yet, named by field; MB_OK when none. */
static mb_status unsupported(const mb_desc* d, mb_error* err) {
  for (int j = 0; j < d->njoint; j++)
    if (d->joint[j].friction.enabled)
      return mb_error_set(err, MB_ERR_MODEL,
                          "joints[%d] (%s).friction: joint friction is not available in joint "
                          "coordinates yet; use \"formulation\": \"natural\"",
                          j, d->joint[j].name);
  if (d->ncontroller > 0)
    return mb_error_set(err, MB_ERR_MODEL,
                        "controllers[0] (%s): controllers are not available in joint coordinates "
                        "yet; use \"formulation\": \"natural\"",
                        d->controller[0].name);
  return MB_OK;
}

mb_status mb_joint_model_create(const mb_desc* d, mb_reference ref, mb_joint_model** out,
                                mb_error* err) {
  *out = NULL;
  mb_error_clear(err);
  mb_status st = unsupported(d, err);
  if (st != MB_OK) return st;
  mb_joint_model* jm = calloc(1, sizeof *jm);
  if (!jm) return mb_error_set(err, MB_ERR_MEMORY, "joint formulation: out of memory");
  jm->ref = ref;
  jm->owns_aux = 1;
  if ((st = mb_tree_compile(d, &jm->tree, err)) != MB_OK ||
      (st = mb_compile_exploded(d, &jm->aux, err)) != MB_OK) {
    mb_joint_model_free(jm);
    return st;
  }
  /* the rows the tree does not hold: cut joints' and drivers' (no joint, no body) */
  const mb_model* aux = jm->aux;
  int* cut = calloc((size_t)d->njoint + 1, sizeof(int));
  jm->row = calloc((size_t)aux->ncon + 1, sizeof(int));
  if (!cut || !jm->row) {
    free(cut);
    mb_joint_model_free(jm);
    return mb_error_set(err, MB_ERR_MEMORY, "joint formulation: out of memory");
  }
  for (int k = 0; k < jm->tree->ncut; k++) cut[jm->tree->cut[k]] = 1;
  for (int i = 0; i < aux->ncon; i++) {
    const int j = aux->con_joint[i];
    if (aux->con_body[i] < 0 && (j < 0 || cut[j])) jm->row[jm->nrow++] = i;
  }
  free(cut);
  jm->ncon = jm->nrow + jm->tree->nnorm;
  jm->scale = calloc((size_t)jm->ncon + 1, sizeof(double));
  jm->norm_label = calloc((size_t)jm->tree->nnorm + 1, sizeof *jm->norm_label);
  if (!jm->scale || !jm->norm_label || dense_solvers(jm) != 0 ||
      (st = penalty_scales(d, jm)) != MB_OK) {
    mb_joint_model_free(jm);
    return mb_error_set(err, MB_ERR_MEMORY, "joint formulation: out of memory");
  }
  for (int n = 0; n < jm->tree->nnorm; n++) {
    const int b = jm->tree->zbody[jm->tree->normadr[n]];
    snprintf(jm->norm_label[n], MB_LABEL_LEN, "the Euler parameters of body %s", d->body[b].name);
  }
  *out = jm;
  return MB_OK;
}

void mb_joint_data_free(mb_joint_data* jd) {
  if (!jd) return;
  mb_factor_release(&jd->newton);
  mb_factor_release(&jd->projection);
  mb_tree_state_free(jd->st);
  free(jd->z);
  free(jd);
}

mb_joint_data* mb_joint_data_create(const mb_joint_model* jm, mb_data* aux) {
  mb_joint_data* jd = calloc(1, sizeof *jd);
  if (!jd) return NULL;
  const mb_tree* t = jm->tree;
  const size_t nz = (size_t)t->nz, nc = (size_t)jm->ncon, nb = (size_t)t->nbody;
  const size_t nq = (size_t)jm->aux->nq, nnz = (size_t)jm->full->nnz;
  /* the largest of: composite inertias; the Newton residual's natural scratch, multipliers and
     dense matrix, and the projections' iteration after them; the assembly's poses */
  size_t nwork = nq + 2 * nz + 2 * nc + nz * nz;
  if (36 * nb > nwork) nwork = 36 * nb;
  jd->aux = aux;
  jd->st = mb_tree_state_create(t, (mb_reference)jm->ref);
  jd->z = calloc(9 * nz + 7 * nc + nc * nz + nz * nq + nz * nz + 2 * nnz + 6 * nb + nwork + 1,
                 sizeof(double));
  if (!jd->st || !jd->z || mb_factor_init(&jd->newton, &jm->lu) != 0 ||
      mb_factor_init(&jd->projection, &jm->cholesky) != 0) {
    mb_joint_data_free(jd);
    return NULL;
  }
  double* p = jd->z + nz;
  double** nzs[] = {&jd->zd,     &jd->zdd,    &jd->zd_star, &jd->zdd_star,
                    &jd->zhat_v, &jd->zhat_a, &jd->r,       &jd->Q};
  for (size_t k = 0; k < sizeof nzs / sizeof *nzs; k++) *nzs[k] = p, p += nz;
  double** ncs[] = {&jd->lambda, &jd->sigma, &jd->kappa, &jd->phi, &jd->phit, &jd->phidd_rhs};
  for (size_t k = 0; k < sizeof ncs / sizeof *ncs; k++) *ncs[k] = p, p += nc;
  jd->phiz = p, p += nc * nz;
  jd->Rq = p, p += nz * nq;
  jd->M = p, p += nz * nz;
  jd->tangent = p, p += nnz;
  jd->proj = p, p += nnz;
  jd->W = p, p += 6 * nb;
  jd->work = p;
  return jd;
}

/* Phi_q x of row i of the natural model (Phi_q evaluated in d). */
static double row_times(const mb_model* m, const mb_data* d, int i, const double* x) {
  const mb_rows* r = &m->structure->phiq;
  double v = 0;
  for (int k = r->rowptr[i]; k < r->rowptr[i + 1]; k++) v += d->phiq[k] * x[r->col[k]];
  return v;
}

void mb_joint_constraints(const mb_joint_model* jm, mb_joint_data* jd) {
  const mb_tree* t = jm->tree;
  const mb_model* aux = jm->aux;
  const int nz = t->nz;
  mb_data* da = jd->aux;
  mb_tree_positions(t, jd->z, jd->st);
  mb_tree_natural_positions(jd->st, aux, da->q);
  da->t = jd->t;
  mb_constraints_positions(aux, da);
  for (int i = 0; i < jm->nrow; i++) jd->phi[i] = da->phi[jm->row[i]];
  /* Phi_z column k: Phi_q dq/dz_k, the natural velocities of the unit rate e_k */
  double* unit = jd->work;
  for (int k = 0; k < nz; k++) {
    double* qcol = jd->Rq + (size_t)k * aux->nq;
    memset(unit, 0, (size_t)nz * sizeof(double));
    unit[k] = 1;
    mb_tree_velocities(t, jd->z, unit, jd->st);
    memset(qcol, 0, (size_t)aux->nq * sizeof(double));
    mb_tree_natural_velocities(jd->st, aux, qcol);
    for (int i = 0; i < jm->nrow; i++)
      jd->phiz[(size_t)i * nz + k] = row_times(aux, da, jm->row[i], qcol);
  }
  /* normalisations e . e - 1 */
  for (int n = 0; n < t->nnorm; n++) {
    const int i = jm->nrow + n, a = t->normadr[n];
    const double* e = jd->z + a;
    memset(jd->phiz + (size_t)i * nz, 0, (size_t)nz * sizeof(double));
    jd->phi[i] = e[0] * e[0] + e[1] * e[1] + e[2] * e[2] + e[3] * e[3] - 1;
    for (int k = 0; k < 4; k++) jd->phiz[(size_t)i * nz + a + k] = 2 * e[k];
  }
}

void mb_joint_constraint_rates(const mb_joint_model* jm, mb_joint_data* jd) {
  const mb_tree* t = jm->tree;
  const mb_model* aux = jm->aux;
  mb_data* da = jd->aux;
  mb_tree_velocities(t, jd->z, jd->zd, jd->st);
  mb_tree_natural_velocities(jd->st, aux, da->qd);
  mb_constraints(aux, da);
  /* the natural accelerations of zdd = 0, Rdot zd: their share of d2Phi/dt2 */
  double* bias = jd->work;
  memset(bias, 0, (size_t)aux->nq * sizeof(double));
  mb_tree_accelerations(t, jd->z, jd->zd, NULL, jd->st);
  mb_tree_natural_accelerations(jd->st, aux, bias);
  for (int i = 0; i < jm->nrow; i++) {
    const int r = jm->row[i];
    jd->phit[i] = da->phit[r];
    jd->phidd_rhs[i] = row_times(aux, da, r, bias) + da->phidd_rhs[r];
  }
  for (int n = 0; n < t->nnorm; n++) {
    const double* ed = jd->zd + t->normadr[n];
    jd->phit[jm->nrow + n] = 0;
    jd->phidd_rhs[jm->nrow + n] =
        2 * (ed[0] * ed[0] + ed[1] * ed[1] + ed[2] * ed[2] + ed[3] * ed[3]);
  }
}

void mb_joint_dynamics(const mb_joint_model* jm, mb_joint_data* jd, int jacobians) {
  const mb_tree* t = jm->tree;
  mb_forces(jm->aux, jd->aux, jacobians);
  memset(jd->W, 0, 6 * (size_t)t->nbody * sizeof(double));
  mb_tree_natural_wrenches(jd->st, jm->aux, jd->aux->force, jd->W);
  mb_tree_inertial_wrenches(t, jd->st, jd->W);
  mb_tree_project(t, jd->st, jd->W, jd->Q, jd->work);
  mb_tree_mass(t, jd->st, jd->M, jd->work);
}
