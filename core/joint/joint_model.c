/* The joint formulation's model and its constraints and equations of motion (joint_model.h). */
#include "joint_model.h"

#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "structure.h"

void mb_joint_model_free(mb_joint_model* jm) {
  if (!jm) return;
  mb_tree_free(jm->tree);
  mb_model_free(jm->aux);
  free(jm->row);
  free(jm);
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

mb_status mb_joint_model_create(const mb_desc* d, mb_reference_point ref, mb_joint_model** out,
                                mb_error* err) {
  *out = NULL;
  mb_error_clear(err);
  mb_status st = unsupported(d, err);
  if (st != MB_OK) return st;
  mb_joint_model* jm = calloc(1, sizeof *jm);
  if (!jm) return mb_error_set(err, MB_ERR_MEMORY, "joint formulation: out of memory");
  jm->ref = ref;
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
  *out = jm;
  return MB_OK;
}

void mb_joint_data_free(mb_joint_data* jd) {
  if (!jd) return;
  mb_tree_state_free(jd->st);
  mb_data_free(jd->aux);
  free(jd->z);
  free(jd);
}

mb_joint_data* mb_joint_data_create(const mb_joint_model* jm) {
  mb_joint_data* jd = calloc(1, sizeof *jd);
  if (!jd) return NULL;
  const mb_tree* t = jm->tree;
  const size_t nz = (size_t)t->nz, nc = (size_t)jm->ncon, nb = (size_t)t->nbody;
  size_t nwork = 36 * nb > (size_t)jm->aux->nq ? 36 * nb : (size_t)jm->aux->nq;
  jd->st = mb_tree_state_create(t, (mb_reference_point)jm->ref);
  jd->aux = mb_data_create(jm->aux);
  jd->z = calloc(4 * nz + 3 * nc + nc * nz + nz * nz + 6 * nb + 2 * nwork + 1, sizeof(double));
  if (!jd->st || !jd->aux || !jd->z) {
    mb_joint_data_free(jd);
    return NULL;
  }
  jd->zd = jd->z + nz;
  jd->zdd = jd->zd + nz;
  jd->Q = jd->zdd + nz;
  jd->phi = jd->Q + nz;
  jd->phit = jd->phi + nc;
  jd->phidd_rhs = jd->phit + nc;
  jd->phiz = jd->phidd_rhs + nc;
  jd->M = jd->phiz + nc * nz;
  jd->W = jd->M + nz * nz;
  jd->work = jd->W + 6 * nb;
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
  double *unit = jd->work, *qcol = jd->work + nz;
  for (int k = 0; k < nz; k++) {
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

void mb_joint_dynamics(const mb_joint_model* jm, mb_joint_data* jd) {
  const mb_tree* t = jm->tree;
  mb_forces(jm->aux, jd->aux, 0);
  memset(jd->W, 0, 6 * (size_t)t->nbody * sizeof(double));
  mb_tree_natural_wrenches(jd->st, jm->aux, jd->aux->force, jd->W);
  mb_tree_inertial_wrenches(t, jd->st, jd->W);
  mb_tree_project(t, jd->st, jd->W, jd->Q, jd->work);
  mb_tree_mass(t, jd->st, jd->M, jd->work);
}
