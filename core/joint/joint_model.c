/* The joint formulation's model and its constraints and equations of motion (joint_model.h). */
#include "joint_model.h"

#include <math.h>
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
  free(jm->state_qadr);
  free(jm->state_mass);
  free(jm->scale);
  free(jm->row_scale);
  free(jm->norm_label);
  free(jm->entry);
  free(jm->need_coord);
  free(jm->need_elem);
  free(jm->force_entry);
  free(jm->force_pair);
  free(jm->coord_body);
  free(jm->coord_path_adr), free(jm->coord_path), free(jm->need_rank);
  free(jm->react_coord_adr), free(jm->react_coord), free(jm->react_row_adr), free(jm->react_row);
  free(jm);
}

/* The natural coordinates the integrator reads dq/dz at (joint_model.h). */
static int needed_coordinates(mb_joint_model* jm) {
  const mb_model* aux = jm->aux;
  const mb_structure* st = aux->structure;
  const int nq = aux->nq, dim = aux->dim;
  unsigned char* mark = calloc((size_t)nq + 1, 1);
  jm->need_coord = malloc(((size_t)nq + 1) * sizeof(int));
  jm->need_elem = malloc(((size_t)aux->nelem + 1) * sizeof(int));
  if (!mark || !jm->need_coord || !jm->need_elem) return free(mark), -1;
  /* the force elements' blocks first, then the rows' columns */
  for (int i = 0; i < aux->nforce; i++)
    for (int k = st->force_blkadr[i]; k < st->force_blkadr[i + 1]; k++)
      for (int r = 0; r < dim; r++) mark[dim * st->force_block[k] + r] = 1;
  /* the joints' friction: the coordinates of the two bodies it reads */
  for (int j = 0; j < aux->njoint; j++)
    for (int side = 0; aux->joint_friction[j] && side < 2; side++) {
      const int b = aux->marker_body[aux->joint_marker[2 * j + side]];
      for (int e = 0; e < aux->nelem; e++)
        for (int r = 0; b >= 0 && aux->elem_body[e] == b && aux->elem_qadr[e] >= 0 && r < dim; r++)
          mark[aux->elem_qadr[e] + r] = 1;
    }
  /* the controllers' states, with the coordinates their actuators and errors couple them to */
  for (int k = 0; k < jm->nstate; k++) {
    const int w = jm->state_qadr[k];
    mark[w] = 1;
    for (int e = st->sys->colptr[w]; e < st->sys->colptr[w + 1]; e++) mark[st->sys->rowind[e]] = 1;
  }
  for (int c = 0; c < nq; c++)
    if (mark[c]) jm->need_coord[jm->nforce_coord++] = c;
  jm->nneed_coord = jm->nforce_coord;
  for (int i = 0; i < jm->nrow; i++)
    for (int k = st->phiq.rowptr[jm->row[i]]; k < st->phiq.rowptr[jm->row[i] + 1]; k++)
      if (!mark[st->phiq.col[k]]) mark[st->phiq.col[k]] = 2;
  for (int c = 0; c < nq; c++)
    if (mark[c] == 2) jm->need_coord[jm->nneed_coord++] = c;
  /* the elements the rows read first: the projections need dq/dz at those alone */
  unsigned char* row_read = calloc((size_t)nq + 1, 1);
  if (!row_read) return free(mark), -1;
  for (int i = 0; i < jm->nrow; i++)
    for (int k = st->phiq.rowptr[jm->row[i]]; k < st->phiq.rowptr[jm->row[i] + 1]; k++)
      row_read[st->phiq.col[k]] = 1;
  for (int rows = 1; rows >= 0; rows--) {
    for (int e = 0; e < aux->nelem; e++) {
      const int a = aux->elem_qadr[e];
      if (a >= 0 && aux->elem_body[e] >= 0 && aux->elem_kind[e] != MB_ELEM_STATE && mark[a] &&
          row_read[a] == rows)
        jm->need_elem[jm->nneed_elem++] = e;
    }
    if (rows) jm->nrow_elem = jm->nneed_elem;
  }
  free(row_read);
  free(mark);
  const mb_tree* t = jm->tree;
  const int nf = jm->nforce_coord, nn = jm->nneed_coord;
  int* body = calloc((size_t)nq + 1, sizeof(int));
  jm->coord_body = malloc(((size_t)nf + 1) * sizeof(int));
  jm->coord_path_adr = malloc(((size_t)nn + 1) * sizeof(int));
  jm->coord_path = malloc(((size_t)nn * jm->nz + 1) * sizeof(int));
  jm->need_rank = malloc(((size_t)nq + 1) * sizeof(int));
  jm->force_pair = malloc((2 * (size_t)nf * nf + 1) * sizeof(int));
  jm->force_entry = malloc(((size_t)nf * nf + 1) * sizeof(int));
  if (!body || !jm->coord_body || !jm->coord_path_adr || !jm->coord_path || !jm->need_rank ||
      !jm->force_pair || !jm->force_entry)
    return free(body), -1;
  for (int c = 0; c < nq; c++) jm->need_rank[c] = -1;
  for (int i = 0; i < nn; i++) jm->need_rank[jm->need_coord[i]] = i;
  for (int e = 0; e < aux->nelem; e++)
    for (int r = 0; aux->elem_qadr[e] >= 0 && r < dim; r++)
      body[aux->elem_qadr[e] + r] = aux->elem_body[e];
  /* a state coordinate k: its own body nbody + k, whose path is its own column */
  for (int k = 0; k < jm->nstate; k++) body[jm->state_qadr[k]] = t->nbody + k;
  int npath = 0;
  for (int i = 0; i < nn; i++) {
    const int b = body[jm->need_coord[i]];
    jm->coord_path_adr[i] = npath;
    if (b >= t->nbody)
      jm->coord_path[npath++] = t->nz + b - t->nbody;
    else if (b >= 0)
      for (int k = t->path_adr[b]; k < t->path_adr[b + 1]; k++)
        jm->coord_path[npath++] = t->path[k];
  }
  jm->coord_path_adr[nn] = npath;
  for (int i = 0; i < nf; i++) {
    jm->coord_body[i] = body[jm->need_coord[i]];
    for (int j = 0; j < nf; j++) {
      const int entry = mb_pattern_entry(st->sys, jm->need_coord[i], jm->need_coord[j]);
      if (entry < 0) continue;
      jm->force_pair[2 * jm->nforce_pair] = i, jm->force_pair[2 * jm->nforce_pair + 1] = j;
      jm->force_entry[jm->nforce_pair++] = entry;
    }
  }
  free(body);
  return 0;
}

/* The dense pattern of the nz x nz matrices and their factorisations, eliminating the
   coordinates in reverse: the tree numbers each body's after its parent's, so that this
   eliminates a body's before its ancestors'; the mass matrix couples a coordinate only with those
   on its path, and the factors then fill in no more than the loops and forces couple (the buggy's
   a third of the dense work). The controllers' states come last and go first. */
static int dense_solvers(mb_joint_model* jm) {
  const int nz = jm->nz;
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
  int* reversed = malloc(((size_t)nz + 1) * sizeof(int));
  if (!reversed) return -1;
  for (int k = 0; k < nz; k++) reversed[k] = nz - 1 - k;
  const int failed =
      mb_solver_init_ordered(&jm->lu, &mb_dense_lu, jm->full, reversed) != 0 ||
      mb_solver_init_ordered(&jm->cholesky, &mb_dense_cholesky, jm->full, reversed) != 0;
  free(reversed);
  return failed ? -1 : 0;
}

/* The penalty scales of the constraints at the initial poses, by the natural model's rule
   (mb_penalty_scale) on c_i = alpha beta h^2 sum_j Phi_z,ij^2 / M_jj. */
static mb_status penalty_scales(const mb_desc* d, mb_joint_model* jm) {
  const mb_tree* t = jm->tree;
  const int nz = jm->nz, nb = t->nbody;
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
  mb_joint_mass(jm, jd);
  const mb_settings* o = &jm->aux->opt;
  const double abh2 = o->penalty * o->beta * o->step * o->step;
  /* masses and gradient entries at round-off of the largest count as the zeros they stand for:
     an Euler quadruple near the identity has its first column the massless radial direction, at
     a diagonal of 1e-34, and gradient entries of 1e-17 on the others; its normalisation would
     take a scale of 1e-33 from the one, or of 1e32 from the other through the floor of
     mb_penalty_scale, and the projections' matrix would lose the norm or the masses */
  double mmax = 0;
  for (int j = 0; j < nz; j++) mmax = fmax(mmax, jd->M[(size_t)j * nz + j]);
  for (int i = 0; i < jm->ncon; i++) {
    const double* row = jd->phiz + (size_t)i * nz;
    const double amax = mbu_norm_inf(nz, row);
    double mu = 0;
    for (int j = 0; j < nz; j++) {
      const double mjj = jd->M[(size_t)j * nz + j], a = row[j];
      if (mjj > 1e-12 * mmax && fabs(a) > 1e-12 * amax) mu += a * a / mjj;
    }
    jm->scale[i] = mb_penalty_scale(abh2 * mu, o->penalty_auto);
  }
  mb_joint_data_free(jd), mb_data_free_natural(da), free(pose);
  return MB_OK;
}

mb_status mb_joint_model_create(const mb_desc* d, mb_reference ref, mb_joint_model** out,
                                mb_error* err) {
  *out = NULL;
  mb_error_clear(err);
  mb_status st;
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
  /* the controllers' states: coordinates of their own, after the tree's */
  jm->state_qadr = malloc(((size_t)aux->nq + 1) * sizeof(int));
  jm->state_mass = malloc(((size_t)aux->nq + 1) * sizeof(double));
  double* unit = calloc((size_t)aux->nq + 1, sizeof(double));
  if (!jm->state_qadr || !jm->state_mass || !unit) {
    free(unit);
    mb_joint_model_free(jm);
    return mb_error_set(err, MB_ERR_MEMORY, "joint formulation: out of memory");
  }
  for (int e = 0; e < aux->nelem; e++)
    for (int r = 0; aux->elem_kind[e] == MB_ELEM_STATE && r < aux->dim; r++)
      jm->state_qadr[jm->nstate++] = aux->elem_qadr[e] + r;
  for (int k = 0; k < jm->nstate; k++) {
    unit[jm->state_qadr[k]] = 1;
    jm->state_mass[k] = mb_mass_form(aux, unit, unit);
    unit[jm->state_qadr[k]] = 0;
  }
  free(unit);
  jm->nz = jm->tree->nz + jm->nstate;
  jm->scale = calloc((size_t)jm->ncon + 1, sizeof(double));
  jm->row_scale = calloc((size_t)aux->ncon + 1, sizeof(double));
  jm->norm_label = calloc((size_t)jm->tree->nnorm + 1, sizeof *jm->norm_label);
  if (!jm->scale || !jm->row_scale || !jm->norm_label || dense_solvers(jm) != 0 ||
      needed_coordinates(jm) != 0 || mb_joint_reactions_build(jm) != 0 ||
      (st = penalty_scales(d, jm)) != MB_OK) {
    mb_joint_model_free(jm);
    return mb_error_set(err, MB_ERR_MEMORY, "joint formulation: out of memory");
  }
  for (int i = 0; i < jm->nrow; i++) jm->row_scale[jm->row[i]] = jm->scale[i];
  jm->friction = mb_friction_count(aux, NULL) > 0;
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
  free(jd->react);
  free(jd);
}

mb_joint_data* mb_joint_data_create(const mb_joint_model* jm, mb_data* aux) {
  mb_joint_data* jd = calloc(1, sizeof *jd);
  if (!jd) return NULL;
  const mb_tree* t = jm->tree;
  const size_t nz = (size_t)jm->nz, nc = (size_t)jm->ncon, nb = (size_t)t->nbody;
  const size_t nq = (size_t)jm->aux->nq, nnz = (size_t)jm->full->nnz;
  /* the largest of: composite inertias (36 nb); the natural accelerations (nq); the Newton
     residual's multipliers, dense matrix and force Jacobians (joint_ali3p.c) */
  const size_t nf = (size_t)jm->nforce_coord;
  size_t nwork = nc + nz * nz + 2 * nf * nz + nz;
  if (36 * nb > nwork) nwork = 36 * nb;
  if (nq > nwork) nwork = nq;
  jd->aux = aux;
  jd->st = mb_tree_state_create(t, (mb_reference)jm->ref);
  const size_t nt = (size_t)t->nz;
  const size_t size[] = {nz,     nz,          nz,      nz,         nz,      nz,  nz,
                         nz,     nz,          nc,      nc,         nc,      nc,  nc,
                         nc,     nc * nz,     nz * nq, nz * nz,    nt * nt, nnz, nnz,
                         6 * nb, 3 * nz + nc, nwork,   nq + 6 * nb};
  double** fields[] = {&jd->z,      &jd->zd,     &jd->zdd,   &jd->zd_star, &jd->zdd_star,
                       &jd->zhat_v, &jd->zhat_a, &jd->r,     &jd->Q,       &jd->lambda,
                       &jd->sigma,  &jd->kappa,  &jd->phi,   &jd->phit,    &jd->phidd_rhs,
                       &jd->phiz,   &jd->Rq,     &jd->M,     &jd->Mt,      &jd->tangent,
                       &jd->proj,   &jd->W,      &jd->start, &jd->work,    &jd->natural};
  mbu_alloc_arrays(sizeof size / sizeof *size, size, fields, 1);
  if (jm->reactions) jd->react = malloc(jm->react_scratch * sizeof(double));
  if (!jd->st || !jd->z || (jm->reactions && !jd->react) ||
      mb_factor_init(&jd->newton, &jm->lu) != 0 ||
      mb_factor_init(&jd->projection, &jm->cholesky) != 0) {
    mb_joint_data_free(jd);
    return NULL;
  }
  /* a state coordinate's row of dq/dz is constant: 1 at its own column */
  for (int k = 0; k < jm->nstate; k++) jd->Rq[(size_t)jm->state_qadr[k] * nz + nt + k] = 1;
  return jd;
}

/* Row i of the imposed natural rows at the natural state of jd: its value, with gradient its
   gradient into the natural workspace's scatter row (nq, zero on entry; the caller clears it)
   and, with qd, its time terms rate[0] = Phi_t and rate[1] = the acceleration remainder at qd. */
static double row_eval(const mb_joint_model* jm, mb_joint_data* jd, int i, int gradient,
                       const double* qd, double* rate) {
  const mb_model* aux = jm->aux;
  const int r = jm->row[i];
  return mb_con_eval(aux, aux->con_kind[r], aux->con_lvec + 4 * r, aux->con_value[r],
                     aux->con_func[r], jd->t, jd->aux->q, qd, gradient ? jd->aux->scatter : NULL,
                     rate);
}

/* Whether needed coordinates n and m move with the same joint coordinates: paths of one length
   ending at the same coordinate are one body's path (or of bodies welded to it). */
static int same_path(const mb_joint_model* jm, int n, int m) {
  const int *adr = jm->coord_path_adr, len = adr[n + 1] - adr[n];
  return len == adr[m + 1] - adr[m] &&
         (len == 0 || jm->coord_path[adr[n + 1] - 1] == jm->coord_path[adr[m + 1] - 1]);
}

/* out (nz) = the gradient of row i (in the natural workspace's Phi_q) times dq/dz, along the
   path of each of its coordinates (the other columns of dq/dz are zero): a point's or vector's
   coordinates, consecutive in the row, in one pass along their common path. */
static void row_times_jacobian(const mb_joint_model* jm, const mb_joint_data* jd, int i,
                               double* out) {
  const mb_rows* rows = &jm->aux->structure->phiq;
  const int nz = jm->nz, end = rows->rowptr[jm->row[i] + 1];
  const double* phiq = jd->aux->phiq;
  memset(out, 0, (size_t)nz * sizeof(double));
  for (int k = rows->rowptr[jm->row[i]]; k < end;) {
    const int c = rows->col[k], n = jm->need_rank[c];
    int run = 1;
    while (run < 3 && k + run < end && rows->col[k + run] == c + run &&
           same_path(jm, n, jm->need_rank[c + run]))
      run++;
    const double* r = jd->Rq + (size_t)c * nz; /* rows c .. c + run - 1 */
    for (int p = jm->coord_path_adr[n]; p < jm->coord_path_adr[n + 1]; p++) {
      const int j = jm->coord_path[p];
      double v = 0;
      for (int u = 0; u < run; u++) v += phiq[k + u] * r[(size_t)u * nz + j];
      out[j] += v;
    }
    k += run;
  }
}

void mb_joint_positions(const mb_joint_model* jm, mb_joint_data* jd) {
  const mb_tree* t = jm->tree;
  const mb_model* aux = jm->aux;
  mb_tree_positions(t, jd->z, jd->st);
  mb_tree_natural_positions(jd->st, aux, jd->aux->q);
  mb_joint_states_to_natural(jm, jd->z, jd->aux->q);
  jd->aux->t = jd->t;
  /* the rows' gradients into the natural workspace's Phi_q (the friction's tangent and the
     inverse dynamics read them there) */
  for (int i = 0; i < jm->nrow; i++) {
    jd->phi[i] = row_eval(jm, jd, i, 1, NULL, NULL);
    mb_rows_gather(&aux->structure->phiq, jm->row[i], jd->aux->phiq, jd->aux->scatter);
  }
  /* normalisations e . e - 1 */
  for (int n = 0; n < t->nnorm; n++) {
    const double* e = jd->z + t->normadr[n];
    jd->phi[jm->nrow + n] = e[0] * e[0] + e[1] * e[1] + e[2] * e[2] + e[3] * e[3] - 1;
  }
}

void mb_joint_constraint_jacobian(const mb_joint_model* jm, mb_joint_data* jd) {
  const mb_tree* t = jm->tree;
  const int nz = jm->nz;
  /* Phi_z = Phi_q dq/dz, with dq/dz at the coordinates the imposed rows read */
  mb_tree_natural_jacobian(t, jd->st, jm->aux, jm->nrow_elem, jm->need_elem, nz, jd->Rq);
  for (int i = 0; i < jm->nrow; i++) row_times_jacobian(jm, jd, i, jd->phiz + (size_t)i * nz);
  for (int n = 0; n < t->nnorm; n++) {
    const int i = jm->nrow + n, a = t->normadr[n];
    memset(jd->phiz + (size_t)i * nz, 0, (size_t)nz * sizeof(double));
    for (int k = 0; k < 4; k++) jd->phiz[(size_t)i * nz + a + k] = 2 * jd->z[a + k];
  }
}

void mb_joint_force_jacobian(const mb_joint_model* jm, mb_joint_data* jd) {
  mb_tree_natural_jacobian(jm->tree, jd->st, jm->aux, jm->nneed_elem - jm->nrow_elem,
                           jm->need_elem + jm->nrow_elem, jm->nz, jd->Rq);
}

void mb_joint_constraints(const mb_joint_model* jm, mb_joint_data* jd) {
  mb_joint_positions(jm, jd);
  mb_joint_constraint_jacobian(jm, jd);
}

void mb_joint_motion(const mb_joint_model* jm, mb_joint_data* jd, const double* zdd, int all) {
  const mb_tree* t = jm->tree;
  mb_tree_velocities(t, jd->zd, jd->st);
  /* controllers read outputs of any element: then all of them */
  const int every = all || jm->aux->nctrl > 0;
  mb_tree_natural_velocities(jd->st, jm->aux, jm->nneed_elem, every ? NULL : jm->need_elem,
                             jd->aux->qd);
  mb_joint_states_to_natural(jm, jd->zd, jd->aux->qd);
  mb_tree_accelerations(t, jd->z, jd->zd, zdd, jd->st);
}

void mb_joint_imposed_reactions(const mb_joint_model* jm, const mb_data* da, const double* w,
                                double s, double* y) {
  const mb_rows* rows = &jm->aux->structure->phiq;
  for (int i = 0; i < jm->nrow; i++)
    for (int k = rows->rowptr[jm->row[i]]; k < rows->rowptr[jm->row[i] + 1]; k++)
      y[rows->col[k]] += s * da->phiq[k] * w[i];
}

void mb_joint_inverse_dynamics(const mb_joint_model* jm, mb_joint_data* jd, const double* mult,
                               double s, double* r) {
  const mb_tree* t = jm->tree;
  const int nt = t->nz, nq = jm->aux->nq;
  double *g = jd->natural, *work = g + nq;
  /* the natural forces less the imposed rows' reactions, g = Q^n - Phi_q^T mult */
  memcpy(g, jd->aux->force, (size_t)nq * sizeof(double));
  mb_joint_imposed_reactions(jm, jd->aux, mult, -1, g);
  /* R^T g less the inertial forces of the accelerations, R^T M^n (R zdd + Rdot zd) */
  memset(jd->W, 0, 6 * (size_t)t->nbody * sizeof(double));
  mb_tree_natural_wrenches(jd->st, jm->aux, 0, NULL, g, jd->W);
  mb_tree_inertial_wrenches(t, jd->st, jd->W);
  mb_tree_project(t, jd->st, jd->W, r, work);
  for (int j = 0; j < nt; j++) r[j] = -s * r[j];
  for (int n = 0; n < t->nnorm; n++)
    for (int k = 0; k < 4; k++) {
      const int a = t->normadr[n] + k;
      r[a] += s * 2 * jd->z[a] * mult[jm->nrow + n];
    }
  for (int k = 0; k < jm->nstate; k++)
    r[nt + k] = s * (jm->state_mass[k] * jd->zdd[nt + k] - g[jm->state_qadr[k]]);
}

void mb_joint_constraint_rates(const mb_joint_model* jm, mb_joint_data* jd) {
  const mb_tree* t = jm->tree;
  mb_joint_motion(jm, jd, NULL, 1);
  /* the natural accelerations of zdd = 0, Rdot zd: their share of d2Phi/dt2 */
  double* bias = jd->work;
  mb_tree_natural_accelerations(jd->st, jm->aux, jm->nneed_elem, jm->need_elem, bias);
  /* the rows' gradients those positions gathered (mb_joint_positions) */
  const mb_rows* rows = &jm->aux->structure->phiq;
  for (int i = 0; i < jm->nrow; i++) {
    double rate[2];
    row_eval(jm, jd, i, 0, jd->aux->qd, rate);
    jd->phit[i] = rate[0];
    jd->phidd_rhs[i] = mb_rows_dot(rows, jm->row[i], jd->aux->phiq, bias, 0) + rate[1];
  }
  for (int n = 0; n < t->nnorm; n++) {
    const double* ed = jd->zd + t->normadr[n];
    jd->phit[jm->nrow + n] = 0;
    jd->phidd_rhs[jm->nrow + n] =
        2 * (ed[0] * ed[0] + ed[1] * ed[1] + ed[2] * ed[2] + ed[3] * ed[3]);
  }
}

void mb_joint_constraint_time(const mb_joint_model* jm, mb_joint_data* jd) {
  for (int i = 0; i < jm->nrow; i++) {
    double rate[2] = {0, 0};
    /* only a driver's target moves with time */
    if (jm->aux->con_func[jm->row[i]] >= 0) row_eval(jm, jd, i, 0, jd->aux->qd, rate);
    jd->phit[i] = rate[0];
  }
  for (int n = 0; n < jm->tree->nnorm; n++) jd->phit[jm->nrow + n] = 0;
}

void mb_joint_dynamics(const mb_joint_model* jm, mb_joint_data* jd, int jacobians) {
  const mb_tree* t = jm->tree;
  mb_forces(jm->aux, jd->aux, jacobians);
  memset(jd->W, 0, 6 * (size_t)t->nbody * sizeof(double));
  mb_tree_natural_wrenches(jd->st, jm->aux, 0, NULL, jd->aux->force, jd->W);
  mb_tree_inertial_wrenches(t, jd->st, jd->W);
  mb_tree_project(t, jd->st, jd->W, jd->Q, jd->work);
  for (int k = 0; k < jm->nstate; k++) jd->Q[t->nz + k] = jd->aux->force[jm->state_qadr[k]];
  mb_joint_mass(jm, jd);
}

void mb_joint_imposed_multipliers(const mb_joint_model* jm, mb_joint_data* jd) {
  for (int i = 0; i < jm->nrow; i++) {
    const int r = jm->row[i];
    jd->aux->lambda[r] = jd->lambda[i], jd->aux->kappa[r] = jd->kappa[i];
  }
}

void mb_joint_friction_multipliers(const mb_joint_model* jm, mb_data* da, const double* lambda,
                                   double alpha, const double* phi) {
  for (int i = 0; jm->friction && i < jm->nrow; i++)
    da->lambda[jm->row[i]] = lambda[i] + (alpha != 0 ? alpha * jm->scale[i] * phi[i] : 0);
}

void mb_joint_mass(const mb_joint_model* jm, mb_joint_data* jd) {
  const int nt = jm->tree->nz, nz = jm->nz;
  mb_tree_mass(jm->tree, jd->st, jd->Mt, jd->work);
  memset(jd->M, 0, (size_t)nz * nz * sizeof(double));
  for (int i = 0; i < nt; i++)
    memcpy(jd->M + (size_t)i * nz, jd->Mt + (size_t)i * nt, nt * sizeof(double));
  for (int k = 0; k < jm->nstate; k++) jd->M[(size_t)(nt + k) * nz + nt + k] = jm->state_mass[k];
}

void mb_joint_states_to_natural(const mb_joint_model* jm, const double* x, double* y) {
  for (int k = 0; k < jm->nstate; k++) y[jm->state_qadr[k]] = x[jm->tree->nz + k];
}
