/* The natural model's multipliers of a state in joint coordinates, for the outputs that read
   them (reaction forces and torques, multipliers; reactions.c). The tree holds its joints and
   the bodies' rigidity by construction, so those rows have no multipliers of their own; they are
   recovered from the natural equations of motion, Phi_q^T lambda = Q - M qdd, body by body from
   the leaves as the Newton-Euler recursion does: on each body's coordinates the rows of its
   rigidity and of its joint to the parent are unknown, its children's joints known by then, the
   cut joints' and drivers' rows those of the joint formulation (lambda + kappa). */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "joint_model.h"
#include "structure.h"

/* Whether sensor s of m reads joint multipliers. */
static int reads_multipliers(const mb_model* m, int s) {
  const int type = m->sensor_type[s];
  return type == MB_SENSOR_REACTION_FORCE || type == MB_SENSOR_REACTION_TORQUE ||
         type == MB_SENSOR_MULTIPLIERS;
}

int mb_joint_reactions_build(mb_joint_model* jm) {
  const mb_model* aux = jm->aux;
  const mb_tree* t = jm->tree;
  const int nb = t->nbody;
  jm->reactions = 0;
  for (int s = 0; s < aux->nsensor; s++) jm->reactions |= reads_multipliers(aux, s);
  if (!jm->reactions) return 0;
  int* child = malloc(((size_t)aux->njoint + 1) * sizeof(int)); /* a joint's body in the tree */
  unsigned char* imposed = calloc((size_t)aux->ncon + 1, 1);
  jm->react_coord_adr = calloc((size_t)nb + 1, sizeof(int));
  jm->react_coord = malloc(((size_t)aux->nq + 1) * sizeof(int));
  jm->react_row_adr = calloc((size_t)nb + 1, sizeof(int));
  jm->react_row = malloc(((size_t)aux->ncon + 1) * sizeof(int));
  if (!child || !imposed || !jm->react_coord_adr || !jm->react_coord || !jm->react_row_adr ||
      !jm->react_row)
    return free(child), free(imposed), -1;
  for (int j = 0; j < aux->njoint; j++) child[j] = -1;
  for (int b = 0; b < nb; b++)
    if (t->joint[b] >= 0) child[t->joint[b]] = b;
  for (int i = 0; i < jm->nrow; i++) imposed[jm->row[i]] = 1;
  int nc = 0, nr = 0, most = 1;
  for (int b = 0; b < nb; b++) {
    jm->react_coord_adr[b] = nc;
    for (int e = 0; e < aux->nelem; e++)
      for (int r = 0; r < aux->dim && aux->elem_body[e] == b && mb_tree_places(aux, e); r++)
        jm->react_coord[nc++] = aux->elem_qadr[e] + r;
    jm->react_row_adr[b] = nr;
    for (int i = 0; i < aux->ncon; i++) {
      const int owner = aux->con_body[i] >= 0    ? aux->con_body[i]
                        : aux->con_joint[i] >= 0 ? child[aux->con_joint[i]]
                                                 : -1;
      if (!imposed[i] && owner == b) jm->react_row[nr++] = i;
    }
    const int m = nc - jm->react_coord_adr[b], k = nr - jm->react_row_adr[b];
    if (m * k > most) most = m * k;
    if (m > most) most = m;
  }
  jm->react_coord_adr[nb] = nc, jm->react_row_adr[nb] = nr;
  jm->react_scratch = (size_t)aux->nq + 2 * (size_t)aux->ncon + 3 * (size_t)most;
  free(child), free(imposed);
  return 0;
}

/* Whether joint j of the description is cut from the tree (its rows imposed with multipliers of
   the formulation's own). */
static int is_cut(const mb_tree* t, int j) {
  for (int k = 0; k < t->ncut; k++)
    if (t->cut[k] == j) return 1;
  return 0;
}

/* The joint of the tree whose multipliers functional term k reads, -1 for none. */
static int tree_joint_read(const mb_joint_model* jm, int k) {
  const mb_model* aux = jm->aux;
  const int col = aux->fterm_column[k];
  int comp;
  if (!mb_output_reads_multipliers(aux, col)) return -1;
  const int joint = aux->sensor_ref[2 * mb_column_sensor(aux, col, &comp)];
  return is_cut(jm->tree, joint) ? -1 : joint;
}

int mb_joint_reads_tree_multipliers(const mb_joint_model* jm) {
  for (int k = 0; k < jm->aux->nfterm; k++)
    if (tree_joint_read(jm, k) >= 0) return 1;
  return 0;
}

/* A (m x k, column-major) = the gradients of body b's k rows on its m coordinates; its rows and
   coordinates into *row, *coord. */
static void body_rows(const mb_joint_model* jm, const mb_data* da, int b, const int** row,
                      const int** coord, int* m, int* k, double* A) {
  const mb_rows* phiq = &jm->aux->structure->phiq;
  *coord = jm->react_coord + jm->react_coord_adr[b], *row = jm->react_row + jm->react_row_adr[b];
  *m = jm->react_coord_adr[b + 1] - jm->react_coord_adr[b];
  *k = jm->react_row_adr[b + 1] - jm->react_row_adr[b];
  memset(A, 0, (size_t)*m * *k * sizeof(double));
  for (int c = 0; c < *k; c++)
    for (int e = phiq->rowptr[(*row)[c]]; e < phiq->rowptr[(*row)[c] + 1]; e++)
      for (int a = 0; a < *m; a++)
        if ((*coord)[a] == phiq->col[e]) A[(size_t)c * *m + a] = da->phiq[e];
}

/* lam (aux ncon) on the tree's rows from the natural forces f (aux nq, which loses each body's
   rows' forces on the way): on each body's coordinates, from the leaves, the least-squares
   solution of its rows' Phi_q^T lam = f. work: 3 most doubles (mb_joint_reactions_build). */
static mb_status recover(const mb_joint_model* jm, const mb_data* da, double* f, double* lam,
                         double* work) {
  const mb_tree* t = jm->tree;
  const mb_rows* phiq = &jm->aux->structure->phiq;
  mb_status st = MB_OK;
  for (int o = t->nbody - 1; o >= 0 && st == MB_OK; o--) {
    const int *row, *coord;
    int m, k;
    double* A = work;
    body_rows(jm, da, t->order[o], &row, &coord, &m, &k, A);
    if (k == 0) continue;
    double* rhs = A + (size_t)m * k;
    for (int a = 0; a < m; a++) rhs[a] = f[coord[a]];
    st = mbu_least_squares(m, k, 1, A, rhs, m > k ? m : k, NULL);
    /* the rows' forces on every body they join, the parent's included */
    for (int c = 0; c < k && st == MB_OK; c++) {
      lam[row[c]] = rhs[c];
      for (int e = phiq->rowptr[row[c]]; e < phiq->rowptr[row[c] + 1]; e++)
        f[phiq->col[e]] -= da->phiq[e] * rhs[c];
    }
  }
  return st;
}

/* st, with its message in err when a recovery's least-squares solve failed at time t */
static mb_status solve_failed(mb_error* err, mb_status st, double t, const char* what) {
  if (st != MB_OK)
    mb_error_set(err, st, "t = %g: the joints' %s: the least-squares solve failed", t, what);
  return st;
}

mb_status mb_joint_natural_multipliers(const mb_joint_model* jm, mb_joint_data* jd, int jacobians,
                                       mb_error* err) {
  if (!jm->reactions) return MB_OK;
  const mb_model* aux = jm->aux;
  const mb_rows* phiq = &aux->structure->phiq;
  mb_data* da = jd->aux;
  const int nq = aux->nq, nc = aux->ncon;
  double *f = jd->react, *lam = f + nq;
  /* f = Q - M qdd - Phi_q^T lambda of the imposed rows, at the state the step left */
  mb_constraints_positions(aux, da);
  mb_forces(aux, da, jacobians);
  for (int i = 0; i < nq; i++) f[i] = da->force[i];
  mb_mass_mul(aux, da->qdd, -1, f);
  memset(lam, 0, (size_t)nc * sizeof(double));
  for (int i = 0; i < jm->nrow; i++) lam[jm->row[i]] = jd->lambda[i] + jd->kappa[i];
  mb_rows_mul_t(phiq, da->phiq, lam, -1, f);
  const mb_status st = recover(jm, da, f, lam, lam + 2 * nc);
  if (st == MB_OK) {
    memcpy(da->lambda, lam, (size_t)nc * sizeof(double));
    memset(da->kappa, 0, (size_t)nc * sizeof(double));
    /* the imposed rows' lambda and kappa apart, as the natural formulation leaves them: the
       friction's outputs read lambda alone */
    mb_joint_imposed_multipliers(jm, jd);
  }
  return solve_failed(err, st, jd->t, "multipliers");
}

mb_status mb_joint_tree_multipliers(const mb_joint_model* jm, mb_joint_data* jd, double* f,
                                    double* lam, mb_error* err) {
  const mb_status st = recover(jm, jd->aux, f, lam, jd->react + jm->aux->nq + 2 * jm->aux->ncon);
  return solve_failed(err, st, jd->t, "multipliers' sensitivities");
}

mb_status mb_joint_tree_multipliers_t(const mb_joint_model* jm, mb_joint_data* jd, const double* mu,
                                      double* nu, mb_error* err) {
  const mb_model* aux = jm->aux;
  const mb_tree* t = jm->tree;
  const mb_rows* phiq = &aux->structure->phiq;
  const mb_data* da = jd->aux;
  double *lbar = jd->react + aux->nq + aux->ncon, *work = lbar + aux->ncon;
  memcpy(lbar, mu, (size_t)aux->ncon * sizeof(double));
  memset(nu, 0, (size_t)aux->nq * sizeof(double));
  mb_status st = MB_OK;
  /* recover's steps transposed in the reverse order, from the root: each body's forces taken
     out of f, then its least-squares solve (transposed: the minimum-norm solution of
     A^T x = lbar) */
  for (int o = 0; o < t->nbody && st == MB_OK; o++) {
    const int *row, *coord;
    int m, k;
    double* A = work;
    body_rows(jm, da, t->order[o], &row, &coord, &m, &k, A);
    if (k == 0) continue;
    double *At = A + (size_t)m * k, *rhs = At + (size_t)m * k;
    for (int c = 0; c < k; c++) {
      for (int e = phiq->rowptr[row[c]]; e < phiq->rowptr[row[c] + 1]; e++)
        lbar[row[c]] -= da->phiq[e] * nu[phiq->col[e]];
      rhs[c] = lbar[row[c]];
      for (int a = 0; a < m; a++) At[(size_t)a * k + c] = A[(size_t)c * m + a];
    }
    st = mbu_least_squares(k, m, 1, At, rhs, m > k ? m : k, NULL);
    for (int a = 0; a < m && st == MB_OK; a++) nu[coord[a]] += rhs[a];
  }
  return solve_failed(err, st, jd->t, "multipliers' adjoints");
}
