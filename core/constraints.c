/* Constraints Phi(q, t) = 0 of the motion, their Jacobian Phi_q, time derivatives, the
   acceleration remainder dPhi_q/dt qd + dPhi_t/dt and Hessian products. Every constraint is one or
   two dot products of linear vectors (seed 001, section 2: quadratic constraints in natural
   coordinates), so all derivatives are exact and cheap. */
#include <math.h>
#include <string.h>

#include "internal.h"
#include "vec2.h"

/* target e(t) = value + f(t) with its first two time derivatives */
void mb_con_target(const mb_model* m, double value, int func, double t, double* e) {
  e[0] = value, e[1] = e[2] = 0;
  if (func < 0) return;
  double f, fd, fdd;
  mb_func_eval(m, func, t, &f, &fd, &fdd);
  e[0] += f, e[1] = fd, e[2] = fdd;
}

/* The linear vectors of a constraint-like expression (lvecs lv[0..3]: a0, b0, a1, b1): their values
   and, when rates are wanted, their rates. */
typedef struct con_vectors {
  const double* v[4];
  const double* r[4]; /* NULL without rates */
} con_vectors;

/* dot product a . b of lvecs j, j + 1 of x; adds s (J_a^T b + J_b^T a) to row (may be NULL); with
   rates, its rate and the velocity product 2 adot . bdot */
static double dot_term(const mb_model* m, const int* lv, const con_vectors* x, int j, double s,
                       double* row, double* rate, double* vel_product) {
  const double *va = x->v[j], *vb = x->v[j + 1];
  if (row) {
    mb_lvec_add_jtw(m, lv[j], s, vb, row);
    mb_lvec_add_jtw(m, lv[j + 1], s, va, row);
  }
  if (x->r[0]) {
    const double *ra = x->r[j], *rb = x->r[j + 1];
    *rate = mbu_dot3(ra, vb) + mbu_dot3(va, rb);
    *vel_product = 2 * mbu_dot3(ra, rb);
  }
  return mbu_dot3(va, vb);
}

/* Phi of an expression from its vectors and target e, with its row and rate terms (see
   mb_con_eval) */
static double con_value(const mb_model* m, int kind, const int* lv, const con_vectors* x,
                        const double* e, double* row, double* rate_terms) {
  double sd = 0, sv = 0;
  if (kind == MB_CON_DOT) {
    double s = dot_term(m, lv, x, 0, 1, row, &sd, &sv);
    if (rate_terms) rate_terms[0] = -e[1], rate_terms[1] = sv - e[2];
    return s - e[0];
  }
  /* angle: Phi = cos(e) s - sin(e) c = sin(theta - e) with s = a0.b0, c = a1.b1 */
  const double C = cos(e[0]), S = sin(e[0]);
  double cd = 0, cv = 0;
  double s = dot_term(m, lv, x, 0, C, row, &sd, &sv);
  double c = dot_term(m, lv, x, 2, -S, row, &cd, &cv);
  if (rate_terms) {
    rate_terms[0] = -e[1] * (S * s + C * c);
    rate_terms[1] = C * sv - S * cv - 2 * e[1] * (S * sd + C * cd) - e[2] * (S * s + C * c) -
                    e[1] * e[1] * (C * s - S * c);
  }
  return C * s - S * c;
}

int mb_con_nlvec(int kind) {
  return kind == MB_CON_ANGLE ? 4 : 2;
}

double mb_con_eval(const mb_model* m, int kind, const int* lv, double value, int func, double t,
                   const double* q, const double* qd, double* row, double* rate_terms) {
  double e[3], v[4][3], r[4][3];
  con_vectors x = {{NULL}, {NULL}};
  mb_con_target(m, value, func, t, e);
  for (int j = 0; j < mb_con_nlvec(kind); j++) {
    mb_lvec_eval(m, lv[j], q, v[j]);
    x.v[j] = v[j];
    if (qd) mb_lvec_rate(m, lv[j], qd, r[j]), x.r[j] = r[j];
  }
  return con_value(m, kind, lv, &x, e, row, rate_terms);
}

/* All constraints at the state of d from the values (and rates) of their linear vectors, each
   evaluated once into d's cache: Phi with Phi_q (rows) and/or Phi_t with the acceleration
   remainder (rates). */
void mb_constraints_cache(const mb_model* m, mb_data* d, int levels) {
  const mb_structure* st = m->structure;
  for (int k = 0; k < st->ncache; k++) {
    double* c = d->lvcache + MB_LVCACHE * k;
    mb_lvec_eval(m, st->cache_lvec[k], d->q, c);
    if (levels >= 1) mb_lvec_rate(m, st->cache_lvec[k], d->qd, c + 3);
    if (levels >= 2) mb_lvec_rate(m, st->cache_lvec[k], d->qdd, c + 6);
  }
}

static void constraints_pass(const mb_model* m, mb_data* d, int rows, int rates) {
  const mb_structure* st = m->structure;
  mb_constraints_cache(m, d, rates);
  for (int i = 0; i < m->ncon; i++) {
    const int kind = m->con_kind[i];
    const int* slot = st->con_slot + 4 * i;
    con_vectors x = {{NULL}, {NULL}};
    for (int j = 0; j < mb_con_nlvec(kind); j++) {
      x.v[j] = d->lvcache + MB_LVCACHE * slot[j];
      if (rates) x.r[j] = x.v[j] + 3;
    }
    double e[3], rt[2];
    mb_con_target(m, m->con_value[i], m->con_func[i], d->t, e);
    const double phi =
        con_value(m, kind, m->con_lvec + 4 * i, &x, e, rows ? d->scatter : NULL, rates ? rt : NULL);
    if (rows) {
      d->phi[i] = phi;
      mb_rows_gather(&st->phiq, i, d->phiq, d->scatter);
    }
    if (rates) d->phit[i] = rt[0], d->phidd_rhs[i] = rt[1];
  }
}

void mb_constraints(const mb_model* m, mb_data* d) {
  constraints_pass(m, d, 1, 1);
}

void mb_constraints_positions(const mb_model* m, mb_data* d) {
  constraints_pass(m, d, 1, 0);
}

void mb_constraints_rates(const mb_model* m, mb_data* d) {
  constraints_pass(m, d, 0, 1);
}

void mb_constraints_time(const mb_model* m, mb_data* d) {
  for (int i = 0; i < m->ncon; i++) {
    double rt[2] = {0, 0};
    if (m->con_func[i] >= 0)
      mb_con_eval(m, m->con_kind[i], m->con_lvec + 4 * i, m->con_value[i], m->con_func[i], d->t,
                  d->q, NULL, NULL, rt);
    d->phit[i] = rt[0];
  }
}

void mb_constraint_values(const mb_model* m, const double* q, double t, double* phi) {
  for (int i = 0; i < m->ncon; i++)
    phi[i] = mb_con_eval(m, m->con_kind[i], m->con_lvec + 4 * i, m->con_value[i], m->con_func[i], t,
                         q, NULL, NULL, NULL);
}

void mb_constraints_add_hessian(const mb_model* m, const mb_data* d, const double* w, double s,
                                double* A) {
  for (int i = 0; i < m->ncon; i++) mbd_expr_hessian(m, d, i, s * w[i], A, NULL);
}

/* block += a b^T for a dim x dim block whose columns are stride apart: rows 0 and 1 of each
   column as one pair, row 2 alone */
static inline void add_columns(const int dim, double* restrict blk, int stride,
                               const double* restrict a, const double* restrict b) {
  const mb_v2 a01 = mb_v2_load(a);
  for (int c = 0; c < dim; c++) {
    double* restrict col = blk + c * stride;
    mb_v2_store(col, mb_v2_load(col) + a01 * b[c]);
    if (dim == 3) col[2] += a[2] * b[c];
  }
}

/* the Gram pairs of one row: block (x, y) += a_x v_y^T and block (y, x) += v_y a_x^T for each
   pair x <= y of its nblk blocks, with a = s v the scaled row */
static inline void add_row_gram(const int dim, double* restrict A, const int* e, double s,
                                const double* v, int nblk) {
  for (int x = 0; x < nblk; x++) {
    double a[3];
    for (int r = 0; r < dim; r++) a[r] = s * v[dim * x + r];
    add_columns(dim, A + e[0], e[1], a, v + dim * x);
    e += 4;
    for (int y = x + 1; y < nblk; y++, e += 4) {
      add_columns(dim, A + e[0], e[1], a, v + dim * y);
      add_columns(dim, A + e[2], e[3], v + dim * y, a);
    }
  }
}

void mb_constraints_add_gram(const mb_model* m, const double* phiq, const double* w, double s,
                             double* A) {
  const mb_structure* st = m->structure;
  const mb_rows* rows = &st->phiq;
  const int dim = m->dim;
  for (int i = 0; i < m->ncon; i++) {
    const double si = s * m->con_scale[i] * (w ? w[i] : 1);
    const double* v = phiq + rows->rowptr[i];
    const int nblk = (rows->rowptr[i + 1] - rows->rowptr[i]) / dim;
    const int* e = st->gram + 4 * st->gram_adr[i];
    if (dim == 3)
      add_row_gram(3, A, e, si, v, nblk);
    else
      add_row_gram(2, A, e, si, v, nblk);
  }
}

double mb_constraints_metric(const mb_model* m, const double* phiq, double* work) {
  const mb_rows* rows = &m->structure->phiq;
  for (int j = 0; j < m->nq; j++) work[j] = 0;
  for (int i = 0; i < m->ncon; i++)
    for (int e = rows->rowptr[i]; e < rows->rowptr[i + 1]; e++)
      work[rows->col[e]] += m->con_scale[i] * phiq[e] * phiq[e];
  double metric = 0;
  for (int j = 0; j < m->nq; j++) metric = fmax(metric, work[j]);
  return metric;
}
