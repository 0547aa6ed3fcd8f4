/* Static equilibrium of the initial configuration: the positions where the forces at rest balance
   the reactions of the joints and of the held initial coordinates,

     Phi_q^T lambda + P_q^T mu = Q(q, 0, 0),   Phi(q, 0) = 0,   P(q) = values,

   solved by Newton's method on (q, lambda, mu) from the assembled configuration. The Jacobian of
   this balance (mb_balance_eval) also gives the equilibrium's sensitivities (sens_common.c).

   Motions that nothing resists and nothing pushes (a wheel's spin, the position of a vehicle on a
   flat road, whose tyres carry no force at rest) make the Jacobian singular: the minimum-norm
   steps leave them where the assembly put them, up to rounding. A motion that nothing resists but
   something pushes (a vehicle on a slope) has no equilibrium, and the iteration stops naming the
   body. The force rows are divided by a force scale and the multipliers with them, so that the rank
   decisions of the least-squares solves compare like with like. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "mbopt/simulate.h"

/* The most unknowns (coordinates, constraints and held coordinates) of the dense solves. */
#define MAX_UNKNOWNS 3000

/* Scratch of mb_balance: (nnz) K on the system pattern, (nq x nq) its dense copy, (ncon x nq)
   Phi_q, (nq) a prescription's gradient, (2 x 3 x nq) the Jacobians of two linear vectors */
static size_t work_size(const mb_model* m) {
  const size_t nq = (size_t)m->nq;
  return (size_t)m->structure->sys->nnz + nq * nq + (size_t)m->ncon * nq + nq + 6 * nq;
}

mb_balance* mb_balance_create(const mb_model* m) {
  mb_balance* b = calloc(1, sizeof *b);
  if (!b) return NULL;
  for (int i = 0; i < m->npres; i++) b->npv += m->pres_has_value[i] != 0;
  b->n = m->nq + m->ncon + b->npv;
  b->scale = 1;
  b->pres = malloc(sizeof(int) * ((size_t)b->npv + 1));
  b->y = calloc((size_t)m->ncon + b->npv + 1, sizeof(double));
  b->F = calloc((size_t)b->n + 1, sizeof(double));
  b->A = malloc(sizeof(double) * ((size_t)b->n * b->n + 1));
  b->held = calloc((size_t)m->nq + 1, 1);
  b->work = malloc(sizeof(double) * (work_size(m) + 1));
  if (!b->pres || !b->y || !b->F || !b->A || !b->held || !b->work) {
    mb_balance_free(b);
    return NULL;
  }
  for (int i = 0, k = 0; i < m->npres; i++)
    if (m->pres_has_value[i]) b->pres[k++] = i;
  for (int c = 0; c < m->nctrl; c++) memset(b->held + m->ctrl_qadr[c], 1, m->dim);
  return b;
}

void mb_balance_free(mb_balance* b) {
  if (!b) return;
  free(b->pres), free(b->y), free(b->F), free(b->A), free(b->held), free(b->work);
  free(b);
}

double mb_balance_held_row(const mb_model* m, int i, const double* q, double* row) {
  memset(row, 0, sizeof(double) * m->nq);
  return mb_con_eval(m, m->pres_kind[i], m->pres_lvec + 4 * i, m->pres_value[i], -1, 0, q, NULL,
                     row, NULL);
}

/* the natural balance as a problem of mb_balance_iterate: unknowns (q, y) */
typedef struct natural_balance {
  const mb_model* m;
  mb_data* d;
  mb_balance* b;
} natural_balance;

static void natural_eval(void* ctx, int jacobian) {
  natural_balance* c = ctx;
  mb_balance_eval(c->m, c->d, c->b, jacobian);
}

static void natural_get(void* ctx, double* x) {
  const natural_balance* c = ctx;
  const int nq = c->m->nq;
  memcpy(x, c->d->q, sizeof(double) * nq);
  memcpy(x + nq, c->b->y, sizeof(double) * (c->b->n - nq));
}

static void natural_put(void* ctx, const double* x) {
  natural_balance* c = ctx;
  const int nq = c->m->nq;
  memcpy(c->d->q, x, sizeof(double) * nq);
  memcpy(c->b->y, x + nq, sizeof(double) * (c->b->n - nq));
}

static void natural_name(void* ctx, int i, char* buf, size_t len);

static mb_balance_problem natural_problem(natural_balance* c) {
  return (mb_balance_problem){
      c->b->n,      c->m->nq,    &c->b->scale, c->m->opt.tol_assembly, c->b->y, c->b->F, c->b->A, c,
      natural_eval, natural_get, natural_put,  natural_name,           "N "};
}

mb_status mb_balance_setup(const mb_model* m, mb_data* d, mb_balance* b) {
  const int nq = m->nq;
  d->t = 0;
  memset(d->qd, 0, sizeof(double) * nq);
  memset(d->qdd, 0, sizeof(double) * nq);
  natural_balance c = {m, d, b};
  const mb_balance_problem p = natural_problem(&c);
  return mb_balance_start(&p);
}

/* J (dim rows of nq, row-major) = d v / d q of linear vector lv */
static void lvec_jacobian(const mb_model* m, int lv, double* J) {
  memset(J, 0, sizeof(double) * 3 * m->nq);
  for (int k = 0; k < m->dim; k++) {
    double w[3] = {0, 0, 0};
    w[k] = 1;
    mb_lvec_add_jtw(m, lv, 1, w, J + (size_t)k * m->nq);
  }
}

/* A[0:nq, 0:nq] (row stride n) += s times the Hessian of held prescription i, sum_j c_j a_j . b_j
   in the constraints' form: the bilinear products have the Hessians J_a^T J_b + J_b^T J_a */
static void add_prescribed_hessian(const mb_model* m, int i, double s, double* A, int n,
                                   double* Ja) {
  const int nq = m->nq, *lv = m->pres_lvec + 4 * i;
  double* Jb = Ja + 3 * (size_t)nq;
  const int angle = m->pres_kind[i] == MB_CON_ANGLE;
  const double c[2] = {angle ? cos(m->pres_value[i]) : 1, -sin(m->pres_value[i])};
  for (int j = 0; j < (angle ? 2 : 1); j++) {
    lvec_jacobian(m, lv[2 * j], Ja);
    lvec_jacobian(m, lv[2 * j + 1], Jb);
    for (int k = 0; k < m->dim; k++) {
      const double *a = Ja + (size_t)k * nq, *bb = Jb + (size_t)k * nq;
      for (int r = 0; r < nq; r++) {
        if (a[r] == 0 && bb[r] == 0) continue;
        double* Ar = A + (size_t)r * n;
        for (int col = 0; col < nq; col++) Ar[col] += s * c[j] * (a[r] * bb[col] + bb[r] * a[col]);
      }
    }
  }
}

void mb_balance_eval(const mb_model* m, mb_data* d, mb_balance* b, int jacobian) {
  const int nq = m->nq, nc = m->ncon, n = b->n;
  const mb_structure* st = m->structure;
  double *F = b->F, *A = b->A;
  double* K = b->work;
  double* dense = K + st->sys->nnz;
  double* phiq = dense + (size_t)nq * nq;
  double* row = phiq + (size_t)nc * nq;
  double* Ja = row + nq;
  mb_constraints_positions(m, d);
  mb_forces(m, d, jacobian);
  for (int i = 0; i < nq; i++) F[i] = -d->force[i] / b->scale;
  mb_rows_mul_t(&st->phiq, d->phiq, b->y, 1, F);
  memcpy(F + nq, d->phi, sizeof(double) * nc);
  if (jacobian) memset(A, 0, sizeof(double) * n * n);
  for (int j = 0; j < b->npv; j++) {
    const int r = nq + nc + j;
    const double mu = b->y[nc + j];
    F[r] = mb_balance_held_row(m, b->pres[j], d->q, row);
    for (int i = 0; i < nq; i++) F[i] += mu * row[i];
    if (!jacobian) continue;
    for (int i = 0; i < nq; i++) A[(size_t)r * n + i] = A[(size_t)i * n + r] = row[i];
    if (mu != 0) add_prescribed_hessian(m, b->pres[j], mu, A, n, Ja);
  }
  if (jacobian) {
    for (int u = 0; u < st->sys->nnz; u++) K[u] = d->stiff[u] / b->scale;
    mb_constraints_add_hessian(m, d, b->y, 1, K);
    mb_pattern_to_dense(st->sys, K, dense);
    for (int i = 0; i < nq; i++)
      for (int j = 0; j < nq; j++) A[(size_t)i * n + j] += dense[(size_t)i * nq + j];
    mb_rows_to_dense(&st->phiq, d->phiq, phiq);
    for (int r = 0; r < nc; r++)
      for (int j = 0; j < nq; j++)
        A[(size_t)(nq + r) * n + j] = A[(size_t)j * n + nq + r] = phiq[(size_t)r * nq + j];
  }
  for (int i = 0; i < nq; i++)
    if (b->held[i]) mb_balance_fix(n, i, F, jacobian ? A : NULL);
}

void mb_balance_fix(int n, int i, double* F, double* A) {
  F[i] = 0;
  if (!A) return;
  memset(A + (size_t)i * n, 0, sizeof(double) * n);
  A[(size_t)i * n + i] = 1;
}

/* The name of a body coordinate i belongs to (a point shared by bodies: the first), or NULL. */
static const char* coordinate_body(const mb_model* m, int i) {
  for (int body = 0; body < m->nbody; body++) {
    const int lvecs[4] = {m->body_origin[body], m->body_axes[3 * body], m->body_axes[3 * body + 1],
                          m->dim == 3 ? m->body_axes[3 * body + 2] : -1};
    for (int v = 0; v < 4; v++) {
      if (lvecs[v] < 0) continue;
      for (int k = m->lvec_termadr[lvecs[v]];
           k < m->lvec_termadr[lvecs[v]] + m->lvec_termnum[lvecs[v]]; k++)
        if (i >= m->term_qadr[k] && i < m->term_qadr[k] + m->dim)
          return m->body_name + (size_t)MB_NAME_LEN * body;
    }
  }
  return NULL;
}

static void natural_name(void* ctx, int i, char* buf, size_t len) {
  const natural_balance* c = ctx;
  const mb_model* m = c->m;
  const int nq = m->nq, r = i - nq;
  const char* body = i < nq ? coordinate_body(m, i) : NULL;
  if (body)
    snprintf(buf, len, "body %s", body);
  else if (i < nq)
    snprintf(buf, len, "coordinate %d", i);
  else if (r < m->ncon)
    snprintf(buf, len, "%s", m->con_label + MB_LABEL_LEN * r);
  else
    snprintf(buf, len, "initial[%d]", c->b->pres[r - m->ncon]);
}

/* 1 when the forces balance to round-off (relative to the force scale and the multipliers) and
   the constraint and held rows hold to the assembly tolerance; *force: the largest unbalanced
   force left, N. */
static int balanced(const mb_balance_problem* p, double* force) {
  *force = mbu_norm_inf(p->nx, p->F) * *p->scale;
  return *force <= 1e-10 * *p->scale * (1 + mbu_norm_inf(p->n - p->nx, p->y)) &&
         mbu_norm_inf(p->n - p->nx, p->F + p->nx) <= p->tol;
}

static double merit(const mb_balance_problem* p) {
  double s = 0;
  for (int i = 0; i < p->n; i++) s += p->F[i] * p->F[i];
  return sqrt(s);
}

/* The balance that was not reached, after iterations: its worst row named. */
static mb_status not_found(const mb_balance_problem* p, int iterations, mb_error* err) {
  const int worst = mbu_index_max_abs(p->n, p->F);
  const char* s = iterations == 1 ? "" : "s";
  char what[MB_LABEL_LEN + MB_NAME_LEN + 32];
  p->name(p->ctx, worst, what, sizeof what);
  if (worst >= p->nx)
    return mb_error_set(err, MB_ERR_ASSEMBLY,
                        "static equilibrium: cannot satisfy %s (residual %.3g after %d "
                        "iteration%s)",
                        what, fabs(p->F[worst]), iterations, s);
  return mb_error_set(err, MB_ERR_ASSEMBLY,
                      "static equilibrium not found: the forces on %s do not balance (%.3g %sleft "
                      "of %.3g %safter %d iteration%s); a motion that nothing resists (a body "
                      "without support, a vehicle on a slope) has no equilibrium: hold its "
                      "coordinate with an entry of \"initial\"",
                      what, fabs(p->F[worst]) * *p->scale, p->unit, *p->scale, p->unit, iterations,
                      s);
}

mb_status mb_balance_solve(const mb_balance_problem* p, int max_iterations, mb_report* report,
                           mb_error* err) {
  const int n = p->n;
  double* x0 = malloc(sizeof(double) * (3 * (size_t)n + 1));
  if (!x0) return MB_ERR_MEMORY;
  double *dx = x0 + n, *x = dx + n, force;
  mb_status st = MB_OK;
  p->eval(p->ctx, 0);
  double norm = merit(p);
  /* past the tolerances, a few more iterations take the residual to round-off, so that the
     equilibrium is a smooth function of the parameters (finite differences rely on it) */
  int it = 0, polish = 0;
  for (;; it++) {
    const int done = balanced(p, &force);
    if (done && ++polish > 3) break;
    if (!done && it >= max_iterations) break;
    p->eval(p->ctx, 1);
    for (int i = 0; i < n; i++) dx[i] = -p->F[i];
    if ((st = mbu_least_squares_rows(n, n, 1, p->A, dx, n, NULL)) != MB_OK) break;
    p->get(p->ctx, x0);
    /* the full Newton step, halved while it does not reduce the residual */
    double step = 1, trial = INFINITY;
    for (int k = 0; k < 30 && !(trial < norm); k++, step *= 0.5) {
      for (int i = 0; i < n; i++) x[i] = x0[i] + step * dx[i];
      p->put(p->ctx, x);
      p->eval(p->ctx, 0);
      trial = merit(p);
    }
    if (!(trial < norm)) { /* at round-off, or stuck */
      p->put(p->ctx, x0);
      p->eval(p->ctx, 0);
      break;
    }
    norm = trial;
  }
  if (st == MB_OK) {
    p->get(p->ctx, x);
    const int converged = balanced(p, &force) && mbu_all_finite(p->nx, x);
    report->equilibrium_iterations = it;
    report->equilibrium_residual = force;
    if (!converged) st = not_found(p, it, err);
  }
  free(x0);
  return st;
}

mb_status mb_balance_status(mb_status st, mb_error* err) {
  if (st == MB_ERR_MEMORY) mb_error_set(err, st, "static equilibrium: out of memory");
  if (st == MB_ERR_LINALG) mb_error_set(err, st, "static equilibrium: least-squares solve failed");
  return st;
}

mb_status mb_balance_start(const mb_balance_problem* p) {
  const int nx = p->nx, n = p->n, ny = n - nx;
  /* the balance without reactions: its force rows are -Q (0 where held), and its Jacobian's upper
     right block holds the gradients of the constraints and of the held values */
  *p->scale = 1;
  memset(p->y, 0, sizeof(double) * ny);
  p->eval(p->ctx, 1);
  const double scale = mbu_norm_inf(nx, p->F);
  *p->scale = scale > 0 && isfinite(scale) ? scale : 1;
  if (ny == 0) return MB_OK;
  const int ld = nx > ny ? nx : ny;
  double* G = malloc(sizeof(double) * ((size_t)nx * ny + 1));
  double* rhs = calloc((size_t)ld + 1, sizeof(double));
  mb_status st = MB_ERR_MEMORY;
  if (G && rhs) {
    for (int i = 0; i < nx; i++) {
      memcpy(G + (size_t)i * ny, p->A + (size_t)i * n + nx, sizeof(double) * ny);
      rhs[i] = -p->F[i] / *p->scale;
    }
    st = mbu_least_squares_rows(nx, ny, 1, G, rhs, ld, NULL);
    if (st == MB_OK) memcpy(p->y, rhs, sizeof(double) * ny);
  }
  free(G), free(rhs);
  return st;
}

mb_status mb_equilibrium(const mb_model* m, mb_data* d, mb_error* err) {
  const int nq = m->nq;
  if (nq + m->ncon + m->npres > MAX_UNKNOWNS)
    return mb_error_set(err, MB_ERR_MODEL,
                        "static equilibrium: %d coordinates, constraints and held coordinates, "
                        "more than the %d its dense solves take",
                        nq + m->ncon + m->npres, MAX_UNKNOWNS);
  mb_balance* b = mb_balance_create(m);
  mb_status st = MB_ERR_MEMORY;
  if (b && (st = mb_balance_setup(m, d, b)) == MB_OK) {
    natural_balance c = {m, d, b};
    const mb_balance_problem p = natural_problem(&c);
    st = mb_balance_solve(&p, m->opt.max_assembly, &d->report, err);
  }
  mb_balance_free(b);
  return mb_balance_status(st, err);
}
