/* Initial assembly: positions that satisfy the constraints and the prescribed coordinates while
   staying as close as possible to the approximate pose (minimum-norm Gauss-Newton), then the
   velocities (prescribed rates, otherwise as still as possible), then consistent accelerations and
   multipliers by the augmented Lagrangian iteration. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "mbopt/simulate.h"

/* Row of a prescribed coordinate's measure: value (angle in rad, or length) and d value / dq. */
static double measure_row(const mb_model* m, int i, const double* q, double* row) {
  const int* lv = m->pres_lvec + 4 * i;
  double value;
  if (m->pres_kind[i] == MB_CON_ANGLE) {
    double a[3], b[3], c[3];
    mb_lvec_eval(m, lv[0], q, a);
    mb_lvec_eval(m, lv[1], q, b);
    mb_lvec_eval(m, lv[3], q, c);
    value = atan2(mbu_dot3(a, b), mbu_dot3(a, c));
  } else {
    value = 0;
  }
  /* sin(theta - theta) has derivative d theta / dq; a . b - 0 has derivative d(a . b)/dq */
  double phi = mb_con_eval(m, m->pres_kind[i], lv, value, -1, 0, q, NULL, row, NULL);
  return m->pres_kind[i] == MB_CON_ANGLE ? value : phi;
}

/* Minimum-norm least-squares solution of J x = b (rows x n, row-major); b holds max(rows, n)
   entries and receives x. */
static mb_status least_squares(int rows, int n, const double* J, double* b) {
  return mbu_least_squares_rows(rows, n, 1, J, b, rows > n ? rows : n, NULL);
}

/* Residuals of the constraints at q into F (and their rows into J if not NULL). */
static void constraint_residual(const mb_model* m, mb_data* d, double* F, double* J) {
  const int nq = m->nq;
  if (J) memset(J, 0, sizeof(double) * (size_t)m->ncon * nq);
  for (int i = 0; i < m->ncon; i++)
    F[i] = mb_con_eval(m, m->con_kind[i], m->con_lvec + 4 * i, m->con_value[i], m->con_func[i],
                       d->t, d->q, NULL, J ? J + (size_t)i * nq : NULL, NULL);
}

/* Residuals of the constraints and prescribed values at q into F (and rows into J if not NULL). */
static int position_residual(const mb_model* m, mb_data* d, double* F, double* J) {
  const int nq = m->nq;
  int rows = m->ncon;
  constraint_residual(m, d, F, J);
  if (J) memset(J + (size_t)rows * nq, 0, sizeof(double) * (size_t)m->npres * nq);
  for (int i = 0; i < m->npres; i++) {
    if (!m->pres_has_value[i]) continue;
    /* angles by their wrapped difference, which has one root, unlike sin(theta - value) */
    double* row = J ? J + (size_t)rows * nq : d->work + nq; /* work[0, nq) holds the last q */
    if (!J) memset(row, 0, sizeof(double) * nq);
    double value = measure_row(m, i, d->q, row);
    double diff = value - m->pres_value[i];
    if (m->pres_kind[i] == MB_CON_ANGLE) diff = remainder(diff, 2 * MB_PI);
    F[rows++] = diff;
  }
  return rows;
}

static const char* residual_label(const mb_model* m, int row, char* buf, size_t len) {
  if (row < m->ncon) return m->con_label + MB_LABEL_LEN * row;
  int k = row - m->ncon;
  for (int i = 0; i < m->npres; i++) {
    if (!m->pres_has_value[i]) continue;
    if (k-- == 0) {
      snprintf(buf, len, "initial[%d]", i);
      return buf;
    }
  }
  return "?";
}

static mb_status assemble_positions(const mb_model* m, mb_data* d, double* F, double* J, double* x,
                                    mb_error* err) {
  const int nq = m->nq;
  const double tol = m->opt.tol_assembly;
  int rows = position_residual(m, d, F, NULL);
  double norm = mbu_norm_inf(rows, F);
  /* past the tolerance, a few more iterations take the residual to round-off, so that the
     initial state is a smooth function of the parameters (finite differences rely on it) */
  int polish = 0;
  for (int it = 0; it < m->opt.max_assembly + 3; it++) {
    if (norm <= tol && ++polish > 3) break;
    if (norm > tol && it >= m->opt.max_assembly) break;
    position_residual(m, d, F, J);
    for (int i = 0; i < rows; i++) x[i] = -F[i];
    for (int i = rows; i < nq; i++) x[i] = 0;
    if (least_squares(rows, nq, J, x) != MB_OK)
      return mb_error_set(err, MB_ERR_LINALG, "initial assembly: least-squares solve failed");
    /* full Newton step, halved while it does not reduce the residual */
    double* q0 = d->work;
    memcpy(q0, d->q, sizeof(double) * nq);
    double step = 1, trial = INFINITY;
    for (int k = 0; k < 20; k++, step *= 0.5) {
      for (int i = 0; i < nq; i++) d->q[i] = q0[i] + step * x[i];
      position_residual(m, d, F, NULL);
      trial = mbu_norm_inf(rows, F);
      if (trial < norm) break;
    }
    if (trial >= norm && norm <= tol) {
      memcpy(d->q, q0, sizeof(double) * nq); /* at round-off already */
      position_residual(m, d, F, NULL);
      break;
    }
    norm = trial;
  }
  if (norm <= tol && mbu_all_finite(nq, d->q)) return MB_OK;
  const int worst = mbu_index_max_abs(rows, F);
  char buf[32];
  return mb_error_set(err, MB_ERR_ASSEMBLY,
                      "initial assembly failed: cannot satisfy %s (residual %.3g after %d "
                      "iterations); the prescribed coordinates or the initial pose do not fit the "
                      "joints",
                      residual_label(m, worst, buf, sizeof buf), fabs(F[worst]),
                      m->opt.max_assembly);
}

/* Appends an entry to a "; "-separated list unless the list is full (room is kept for
   "; and more"); returns 0 when it did not fit. */
static int list_add(char* list, size_t len, const char* entry) {
  const size_t used = strlen(list);
  if (used + strlen(entry) + 14 >= len) return 0;
  snprintf(list + used, len - used, "%s%s", used ? "; " : "", entry);
  return 1;
}

/* The joints and drivers of a dependence among the constraints, the most involved first, into
   list ("; and more" when it is full). Constraint i takes part as much as its row of the left
   null space of Phi_q (the columns of U from `rank` on) weighs. Joints whose natural coordinates
   are shared by the bodies they join have no rows of their own: they take part through the
   rigidity of both bodies (the ground always takes part). Bodies are named only when no joint or
   driver is. */
static void name_dependent(const mb_model* m, const double* U, int rank, char* list, size_t len) {
  const int nc = m->ncon, nb = m->nbody, nj = m->njoint;
  double* w = calloc((size_t)nc + nb + nj + 1, sizeof(double));
  list[0] = '\0';
  if (!w) return;
  double *body_w = w + nc, *joint_w = body_w + nb, big = 0;
  for (int i = 0; i < nc; i++) {
    for (int j = rank; j < nc; j++) w[i] += U[(size_t)j * nc + i] * U[(size_t)j * nc + i];
    big = fmax(big, w[i]);
  }
  for (int i = 0; i < nc; i++) {
    if (w[i] <= 1e-4 * big) w[i] = 0;
    if (m->con_body[i] >= 0) body_w[m->con_body[i]] = fmax(body_w[m->con_body[i]], w[i]);
    if (m->con_joint[i] >= 0) joint_w[m->con_joint[i]] = fmax(joint_w[m->con_joint[i]], w[i]);
    if (m->con_body[i] >= 0 || m->con_joint[i] >= 0) w[i] = 0; /* w keeps the drivers' rows */
  }
  for (int j = 0; j < nj; j++) {
    const int b1 = m->joint_body[2 * j], b2 = m->joint_body[2 * j + 1];
    const double w1 = b1 < 0 ? INFINITY : body_w[b1], w2 = b2 < 0 ? INFINITY : body_w[b2];
    if (w1 > 0 && w2 > 0) joint_w[j] = fmax(joint_w[j], fmin(w1, w2));
  }
  /* joints and drivers by weight (a driver's label is its entry); bodies if neither is named */
  char entry[MB_LABEL_LEN + MB_NAME_LEN];
  int named = 0, full = 0;
  for (int pass = 0; pass < 2 && !full && !(pass == 1 && named); pass++) {
    for (;;) {
      int next = -1, is_joint = 0;
      double best = 0;
      for (int j = 0; pass == 0 && j < nj; j++)
        if (joint_w[j] > best) best = joint_w[j], next = j, is_joint = 1;
      for (int i = 0; pass == 0 && i < nc; i++)
        if (w[i] > best) best = w[i], next = i, is_joint = 0;
      for (int b = 0; pass == 1 && b < nb; b++)
        if (body_w[b] > best) best = body_w[b], next = b;
      if (next < 0) break;
      if (pass == 1) {
        snprintf(entry, sizeof entry, "the rigidity of body %s", m->body_name + MB_NAME_LEN * next);
        body_w[next] = 0;
      } else if (is_joint) {
        snprintf(entry, sizeof entry, "joint %s", m->joint_name + MB_NAME_LEN * next);
        joint_w[next] = 0;
      } else {
        snprintf(entry, sizeof entry, "%s", m->con_label + MB_LABEL_LEN * next);
        for (int i = 0; i < nc; i++)
          if (strcmp(m->con_label + MB_LABEL_LEN * i, entry) == 0) w[i] = 0;
      }
      if (!list_add(list, len, entry)) {
        full = 1;
        break;
      }
      named++;
    }
  }
  if (full) snprintf(list + strlen(list), len - strlen(list), "; and more");
  free(w);
}

/* Gauss-Newton on the constraints alone from d->q to round-off (at most 30 iterations). */
static mb_status project_positions(const mb_model* m, mb_data* d, double* F, double* J, double* x) {
  const int nq = m->nq, nc = m->ncon;
  for (int it = 0; it < 30; it++) {
    constraint_residual(m, d, F, J);
    for (int i = 0; i < nc; i++) x[i] = -F[i];
    for (int i = nc; i < nq; i++) x[i] = 0;
    mb_status st = least_squares(nc, nq, J, x);
    if (st != MB_OK) return st;
    for (int i = 0; i < nq; i++) d->q[i] += x[i];
    if (mbu_norm_inf(nq, x) <= 1e-14 * (1 + mbu_norm_inf(nq, d->q))) break;
  }
  return MB_OK;
}

/* How many of the f first-order motions V (columns of VT from row `rank`, the null space of
   Phi_q) the mechanism can follow out of its configuration: each is taken a small step and
   projected back onto the constraints. A redundant but mobile mechanism (Bricard's) keeps the
   step; a locked one (two bars pulled straight between fixed points) is pulled back, because
   its first-order motion violates the constraints at second order. The count is the number of
   singular values above 1/2 of the kept fractions V^T dq / delta. */
static mb_status mobile_directions(const mb_model* m, mb_data* d, const double* VT, int rank,
                                   int* mobile) {
  const int nq = m->nq, nc = m->ncon, f = nq - rank;
  const int big = (nc > nq ? nc : nq) + 1;
  double* q0 = malloc(sizeof(double) * ((size_t)nq * 3 + big + (size_t)f * f + f + 1));
  double* J = malloc(sizeof(double) * (size_t)big * nq);
  if (!q0 || !J) {
    free(q0), free(J);
    return MB_ERR_MEMORY;
  }
  double *F = q0 + nq, *x = F + nq, *R = x + big, *s = R + (size_t)f * f;
  memcpy(q0, d->q, sizeof(double) * nq);
  const double delta = 1e-4 * (1 + mbu_norm_inf(nq, q0));
  mb_status st = MB_OK;
  for (int j = 0; j < f && st == MB_OK; j++) {
    for (int i = 0; i < nq; i++) d->q[i] = q0[i] + delta * VT[(size_t)i * nq + rank + j];
    st = project_positions(m, d, F, J, x);
    for (int k = 0; k < f; k++) {
      double kept = 0;
      for (int i = 0; i < nq; i++) kept += VT[(size_t)i * nq + rank + k] * (d->q[i] - q0[i]);
      R[(size_t)j * f + k] = kept / delta;
    }
  }
  memcpy(d->q, q0, sizeof(double) * nq);
  *mobile = 0;
  if (st == MB_OK && f > 0 && mbu_svd(f, f, R, s, NULL, NULL) != 0) st = MB_ERR_LINALG;
  for (int k = 0; st == MB_OK && k < f; k++) *mobile += s[k] > 0.5;
  free(q0), free(J);
  return st;
}

/* Dependent constraints at the assembled configuration (redundant joints, as in Bricard's
   mechanism, or a singular position) are accepted and reported in d->report, unless the
   mechanism cannot move out of the configuration at all: that is an error naming the
   constraints of the dependence. */
static mb_status check_redundancy(const mb_model* m, mb_data* d, double* J, mb_error* err) {
  const int nq = m->nq, nc = m->ncon;
  if (nc == 0) return MB_OK;
  mb_constraints(m, d);
  mb_rows_to_dense(&m->structure->phiq, d->phiq, J);
  if (mbu_full_row_rank(nc, nq, J)) return MB_OK; /* no dependence: the SVD would find none */
  const int nsv = nc < nq ? nc : nq;
  double* s = malloc(sizeof(double) *
                     ((size_t)nsv + 1 + (size_t)nc * nc + (size_t)nc * nq + (size_t)nq * nq));
  if (!s) return mb_error_set(err, MB_ERR_MEMORY, "out of memory");
  double *U = s + nsv + 1, *A = U + (size_t)nc * nc, *VT = A + (size_t)nc * nq;
  /* the singular values first; the singular vectors, which cost most, only when some vanish */
  for (int i = 0; i < nc; i++)
    for (int j = 0; j < nq; j++) A[(size_t)j * nc + i] = J[(size_t)i * nq + j];
  int info = mbu_svd(nc, nq, A, s, NULL, NULL);
  int rank = 0;
  for (int i = 0; i < nsv; i++)
    if (s[i] > 1e-9 * s[0]) rank++;
  if (info == 0 && rank < nc) {
    for (int i = 0; i < nc; i++)
      for (int j = 0; j < nq; j++) A[(size_t)j * nc + i] = J[(size_t)i * nq + j];
    info = mbu_svd(nc, nq, A, s, U, VT);
  }
  mb_status st = MB_OK;
  int mobile = 0;
  if (info != 0) {
    st = mb_error_set(err, MB_ERR_LINALG, "initial assembly: SVD failed");
  } else if (rank < nc) {
    mb_report* r = &d->report;
    r->redundant = nc - rank;
    name_dependent(m, U, rank, r->dependent, sizeof r->dependent);
    const int f = nq - rank;
    /* the joint formulation assembles its model with every joint written as rows: the counts
       are that model's, not its summary's */
    const char* counted =
        m->exploded ? " (counting every joint's, as the joint formulation's assembly does)" : "";
    if (f > 0 && (st = mobile_directions(m, d, VT, rank, &mobile)) != MB_OK)
      st = mb_error_set(err, st, "initial assembly: the mobility test failed (%s)",
                        mb_status_str(st));
    else if (f > 0 && mobile == 0)
      st = mb_error_set(err, MB_ERR_SINGULAR,
                        "initial configuration is locked: %d constraints%s have rank %d and no "
                        "motion leaves it (the mechanism is pulled straight or otherwise "
                        "jammed; check its dimensions and initial pose); dependent: %s",
                        nc, counted, rank, r->dependent);
    else if (mobile < f)
      st = mb_error_set(err, MB_ERR_SINGULAR,
                        "initial configuration is singular: %d constraints%s have rank %d and "
                        "only %d of its %d first-order motions can be followed (a singular "
                        "position, where the motion branches: start the mechanism away from it); "
                        "dependent: %s",
                        nc, counted, rank, mobile, f, r->dependent);
  }
  free(s);
  return st;
}

static mb_status assemble_velocities(const mb_model* m, mb_data* d, double* J, double* x, double* b,
                                     mb_error* err) {
  const int nq = m->nq, nc = m->ncon;
  mb_constraints(m, d);
  int rows = nc;
  mb_rows_to_dense(&m->structure->phiq, d->phiq, J);
  for (int i = 0; i < nc; i++) x[i] = -d->phit[i];
  for (int i = 0; i < m->npres; i++) {
    if (!m->pres_has_rate[i]) continue;
    double* row = J + (size_t)rows * nq;
    memset(row, 0, sizeof(double) * nq);
    measure_row(m, i, d->q, row);
    x[rows++] = m->pres_rate[i];
  }
  for (int i = rows; i < nq; i++) x[i] = 0;
  double* Jcopy = J + (size_t)rows * nq;
  memcpy(Jcopy, J, sizeof(double) * (size_t)rows * nq);
  memcpy(b, x, sizeof(double) * (rows > nq ? rows : nq));
  if (least_squares(rows, nq, J, x) != MB_OK)
    return mb_error_set(err, MB_ERR_LINALG, "initial velocities: least-squares solve failed");
  memcpy(d->qd, x, sizeof(double) * nq);
  /* all rows must hold: otherwise the prescribed rates contradict the constraints */
  for (int r = 0; r < rows; r++) {
    double v = 0;
    for (int j = 0; j < nq; j++) v += Jcopy[(size_t)r * nq + j] * d->qd[j];
    double scale = 1 + fabs(b[r]);
    if (fabs(v - b[r]) > 1e-8 * scale) {
      char buf[32];
      if (r >= nc) {
        int k = r - nc, idx = -1;
        for (int i = 0; i < m->npres && idx < 0; i++)
          if (m->pres_has_rate[i] && k-- == 0) idx = i;
        snprintf(buf, sizeof buf, "initial[%d]", idx);
      }
      return mb_error_set(err, MB_ERR_ASSEMBLY,
                          "initial velocities: cannot satisfy %s (the prescribed rates "
                          "contradict each other or the joints; residual %.3g)",
                          r < nc ? m->con_label + MB_LABEL_LEN * r : buf, fabs(v - b[r]));
    }
  }
  return MB_OK;
}

/* Accelerations and multipliers: (M + alpha Phi_q^T Phi_q) qdd = Q - Phi_q^T (lambda + alpha c),
   lambda += alpha (Phi_q qdd + c), with c the acceleration remainder. */
static mb_status assemble_accelerations(const mb_model* m, mb_data* d, mb_error* err) {
  const int nq = m->nq, nc = m->ncon;
  const mb_rows* rows = &m->structure->phiq;
  mb_constraints(m, d);
  mb_forces(m, d, 0);
  if (mb_factor_projection(m, d, NULL, err) != MB_OK)
    return mb_error_set(err, MB_ERR_SINGULAR,
                        "initial accelerations: M + alpha Phi_q^T Phi_q is singular: some motion "
                        "has no mass and no constraint");
  const double alpha = d->proj_penalty;
  double* viol = d->work;
  memset(d->lambda, 0, sizeof(double) * nc);
  /* these multipliers are whole: no projection corrects them (mb_reaction_multiplier) */
  memset(d->sigma, 0, sizeof(double) * nc);
  memset(d->kappa, 0, sizeof(double) * nc);
  const int friction = mb_friction_count(m, NULL) > 0;
  int converged = 0;
  for (int it = 0; it < 50 && !converged; it++) {
    /* joint friction reads the multipliers: its forces follow their iteration */
    if (friction && it > 0) mb_forces(m, d, 0);
    memcpy(d->qdd, d->force, sizeof(double) * nq);
    for (int i = 0; i < nc; i++) viol[i] = d->lambda[i] + alpha * m->con_scale[i] * d->phidd_rhs[i];
    mb_rows_mul_t(rows, d->phiq, viol, -1, d->qdd);
    mb_factor_solve(d->projection, 0, 1, d->qdd);
    memcpy(viol, d->phidd_rhs, sizeof(double) * nc);
    mb_rows_mul(rows, d->phiq, d->qdd, 1, viol);
    for (int i = 0; i < nc; i++) d->lambda[i] += alpha * m->con_scale[i] * viol[i];
    converged = mbu_norm_inf(nc, viol) <= 1e-12 * (1 + mbu_norm_inf(nq, d->qdd));
  }
  if (!mbu_all_finite(nq, d->qdd))
    return mb_error_set(
        err, MB_ERR_NONFINITE,
        "initial accelerations are non-finite (NaN or infinity): check the forces and masses%s",
        mb_friction_lock_hint(m));
  /* the friction's fixed point with the multipliers has no solution when it locks */
  if (friction && !converged)
    return mb_error_set(err, MB_ERR_ASSEMBLY,
                        "initial accelerations: the joints' friction and the multipliers do not "
                        "converge together in 50 iterations%s",
                        mb_friction_lock_hint(m));
  return MB_OK;
}

mb_status mb_assemble_with(const mb_model* m, mb_data* d, mb_equilibrium_fn equilibrium, void* ctx,
                           mb_error* err) {
  const int nq = m->nq;
  if (nq > MB_MAX_ASSEMBLY_COORDINATES)
    return mb_error_set(err, MB_ERR_MODEL,
                        "initial assembly: the model has %d coordinates, more than the %d the "
                        "assembly takes (it solves dense least-squares systems, whose cost grows "
                        "as the cube of their size)",
                        nq, MB_MAX_ASSEMBLY_COORDINATES);
  const int rows = m->ncon + m->npres;
  const int big = (rows > nq ? rows : nq) + 1;
  mb_status st = MB_ERR_MEMORY;
  double* F = malloc(sizeof(double) * big);
  double* x = malloc(sizeof(double) * big);
  double* J = malloc(sizeof(double) * (size_t)big * nq * 2 + sizeof(double));
  if (!F || !x || !J) {
    mb_error_set(err, MB_ERR_MEMORY, "initial assembly: out of memory");
    goto done;
  }

  /* start from the approximate pose of the free elements */
  d->t = 0;
  for (int e = 0; e < m->nelem; e++)
    if (m->elem_qadr[e] >= 0)
      memcpy(d->q + m->elem_qadr[e], m->elem_q0 + 3 * e, sizeof(double) * m->dim);
  memset(d->qd, 0, sizeof(double) * nq);
  memset(d->qdd, 0, sizeof(double) * nq);
  /* the joints' friction reads the multipliers: a run starts from none, whatever an earlier run
     of d left */
  memset(d->lambda, 0, sizeof(double) * m->ncon);
  memset(d->sigma, 0, sizeof(double) * m->ncon);
  memset(d->kappa, 0, sizeof(double) * m->ncon);
  d->have_unwrap = 0;

  if ((st = assemble_positions(m, d, F, J, x, err)) != MB_OK) goto done;
  if (m->opt.equilibrium &&
      (st = equilibrium ? equilibrium(ctx, err) : mb_equilibrium(m, d, err)) != MB_OK)
    goto done;
  if ((st = check_redundancy(m, d, J, err)) != MB_OK) goto done;
  if ((st = assemble_velocities(m, d, J, x, F, err)) != MB_OK) goto done;
  st = assemble_accelerations(m, d, err);

done:
  free(F);
  free(x);
  free(J);
  return st;
}
