/* Constraints Phi(q, t) = 0 of the motion, their Jacobian Phi_q, time derivatives, the
   acceleration remainder dPhi_q/dt qd + dPhi_t/dt and Hessian products, and the partials the
   sensitivities take of them (the rates' q-Jacobians, the parameter derivatives). Every constraint
   is one or two dot products of linear vectors (seed 001, section 2: quadratic constraints in
   natural coordinates), so all derivatives are exact and cheap. */
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
/* cache slot k of the linear vectors: value, and up to levels time derivatives */
static void cache_slot(const mb_model* m, mb_data* d, int k, int levels) {
  const int lv = m->structure->cache_lvec[k];
  double* c = d->lvcache + MB_LVCACHE * k;
  mb_lvec_eval(m, lv, d->q, c);
  if (levels >= 1) mb_lvec_rate(m, lv, d->qd, c + 3);
  if (levels >= 2) mb_lvec_rate(m, lv, d->qdd, c + 6);
}

void mb_constraints_cache(const mb_model* m, mb_data* d, int levels) {
  for (int k = 0; k < m->structure->ncache; k++) cache_slot(m, d, k, levels);
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

/* ---------------------------------------------------------------------------------------------
   partial derivatives for the sensitivity analysis (seed 001, eqs. 14-20): the q-Jacobians of
   dPhi/dt and d2Phi/dt2, and the explicit parameter derivatives of Phi, its time derivatives and
   Phi_q^T w through tangent models.

   Every constraint-like expression is  Phi = sum_j c_j(t) P_j(q) - e(t) [MB_CON_DOT only], with
   P_j = a_j . b_j a product of linear vectors: MB_CON_DOT has c_0 = 1; MB_CON_ANGLE has
   c_0 = cos e, c_1 = -sin e. Then dPhi/dt = sum c'_j P_j + c_j P'_j - e', and so on. */

/* coefficients c_j with two time derivatives (cc[j][0..2]) and the target term e, e', e'' */
typedef struct expr_coef {
  int nterm;
  double c[2][3];
  double e[3]; /* only MB_CON_DOT subtracts e */
} expr_coef;

static expr_coef coefficients(int kind, const double* e) {
  expr_coef k;
  memset(&k, 0, sizeof k);
  if (kind == MB_CON_DOT) {
    k.nterm = 1;
    k.c[0][0] = 1;
    memcpy(k.e, e, sizeof k.e);
    return k;
  }
  const double C = cos(e[0]), S = sin(e[0]), v = e[1], a = e[2];
  k.nterm = 2;
  k.c[0][0] = C, k.c[0][1] = -S * v, k.c[0][2] = -C * v * v - S * a;
  k.c[1][0] = -S, k.c[1][1] = -C * v, k.c[1][2] = S * v * v - C * a;
  return k;
}

/* derivatives of the coefficients and the target with respect to a parameter that moves e by
   de = (de, de', de'') */
static expr_coef coefficients_param(int kind, const double* e, const double* de) {
  expr_coef k;
  memset(&k, 0, sizeof k);
  if (kind == MB_CON_DOT) {
    k.nterm = 1;
    memcpy(k.e, de, sizeof k.e);
    return k;
  }
  const double C = cos(e[0]), S = sin(e[0]), v = e[1], a = e[2];
  k.nterm = 2;
  k.c[0][0] = -S * de[0];
  k.c[0][1] = -C * de[0] * v - S * de[1];
  k.c[0][2] = S * de[0] * v * v - 2 * C * v * de[1] - C * de[0] * a - S * de[2];
  k.c[1][0] = -C * de[0];
  k.c[1][1] = S * de[0] * v - C * de[1];
  k.c[1][2] = C * de[0] * v * v + 2 * S * v * de[1] + S * de[0] * a - C * de[2];
  return k;
}

/* P = a . b with its first two time derivatives at (q, qd, qdd); with dm, the explicit parameter
   derivatives of the three instead */
static void pair_values(const mb_model* m, const mb_model* dm, int a, int b, const double* q,
                        const double* qd, const double* qdd, double* P) {
  double va[3], vb[3], ra[3], rb[3], aa[3], ab[3];
  mb_lvec_eval(m, a, q, va), mb_lvec_eval(m, b, q, vb);
  mb_lvec_rate(m, a, qd, ra), mb_lvec_rate(m, b, qd, rb);
  mb_lvec_rate(m, a, qdd, aa), mb_lvec_rate(m, b, qdd, ab);
  if (!dm) {
    P[0] = mbu_dot3(va, vb);
    P[1] = mbu_dot3(ra, vb) + mbu_dot3(va, rb);
    P[2] = mbu_dot3(aa, vb) + 2 * mbu_dot3(ra, rb) + mbu_dot3(va, ab);
    return;
  }
  double dva[3], dvb[3], dra[3], drb[3], daa[3], dab[3];
  mb_lvec_eval(dm, a, q, dva), mb_lvec_eval(dm, b, q, dvb);
  mb_lvec_rate(dm, a, qd, dra), mb_lvec_rate(dm, b, qd, drb);
  mb_lvec_rate(dm, a, qdd, daa), mb_lvec_rate(dm, b, qdd, dab);
  P[0] = mbu_dot3(dva, vb) + mbu_dot3(va, dvb);
  P[1] = mbu_dot3(dra, vb) + mbu_dot3(ra, dvb) + mbu_dot3(dva, rb) + mbu_dot3(va, drb);
  P[2] = mbu_dot3(daa, vb) + mbu_dot3(aa, dvb) + 2 * (mbu_dot3(dra, rb) + mbu_dot3(ra, drb)) +
         mbu_dot3(dva, ab) + mbu_dot3(va, dab);
}

/* row += s0 dP/dq + s1 dP'/dq + s2 dP''/dq, with dP/dq = b^T J_a + a^T J_b,
   dP'/dq = b'^T J_a + a'^T J_b, dP''/dq = b''^T J_a + a''^T J_b; A and B hold the value, rate
   and acceleration of lvecs a and b (MB_LVCACHE doubles each) */
static void pair_rows(const mb_model* m, int a, int b, const double* A, const double* B,
                      const double* s, double* row) {
  double wa[3], wb[3];
  for (int k = 0; k < 3; k++) {
    wa[k] = s[0] * B[k] + s[1] * B[3 + k] + s[2] * B[6 + k];
    wb[k] = s[0] * A[k] + s[1] * A[3 + k] + s[2] * A[6 + k];
  }
  mb_lvec_add_jtw(m, a, 1, wa, row);
  mb_lvec_add_jtw(m, b, 1, wb, row);
}

/* the value, rate and acceleration of linear vector lv at the state of d */
static void lvec_state(const mb_model* m, const mb_data* d, int lv, double* x) {
  mb_lvec_eval(m, lv, d->q, x);
  mb_lvec_rate(m, lv, d->qd, x + 3);
  mb_lvec_rate(m, lv, d->qdd, x + 6);
}

/* out += s d(dP/dq)^T / drho = s (J_a^T db + dJ_a^T b + J_b^T da + dJ_b^T a) */
static void pair_rows_param(const mb_model* m, const mb_model* dm, int a, int b, const double* q,
                            double s, double* out) {
  double va[3], vb[3], dva[3], dvb[3];
  mb_lvec_eval(m, a, q, va), mb_lvec_eval(m, b, q, vb);
  mb_lvec_eval(dm, a, q, dva), mb_lvec_eval(dm, b, q, dvb);
  mb_lvec_add_jtw(m, a, s, dvb, out);
  mb_lvec_add_jtw(dm, a, s, vb, out);
  mb_lvec_add_jtw(m, b, s, dva, out);
  mb_lvec_add_jtw(dm, b, s, va, out);
}

/* the (kind, lvecs, target) of constraint i, or of prescription i - ncon */
typedef struct expr {
  int kind;
  const int* lv;
  double value, dvalue;
  int func;
} expr;

static expr expression(const mb_model* m, const mb_model* dm, const mb_data* d, int i) {
  expr x;
  if (i < m->ncon) {
    x.kind = m->con_kind[i], x.lv = m->con_lvec + 4 * i, x.value = m->con_value[i];
    x.dvalue = dm ? dm->con_value[i] : 0, x.func = m->con_func[i];
    return x;
  }
  int p = i - m->ncon;
  x.kind = m->pres_kind[p], x.lv = m->pres_lvec + 4 * p, x.value = m->pres_value[p];
  x.dvalue = dm ? dm->pres_value[p] : 0, x.func = -1;
  if (x.kind == MB_CON_ANGLE) {
    /* about the current angle: sin(theta - theta) has the angle's gradient and Hessian */
    double a[3], b[3], c[3];
    mb_lvec_eval(m, x.lv[0], d->q, a);
    mb_lvec_eval(m, x.lv[1], d->q, b);
    mb_lvec_eval(m, x.lv[3], d->q, c);
    x.value = atan2(mbu_dot3(a, b), mbu_dot3(a, c));
  }
  return x;
}

/* the value of an expression of kind and target e from its vectors X[j] (value, rate and
   acceleration of each linear vector) */
static double expr_value(int kind, const double* const* X, const double* e) {
  const expr_coef k = coefficients(kind, e);
  double phi = -k.e[0];
  for (int j = 0; j < k.nterm; j++) phi += k.c[j][0] * mbu_dot3(X[2 * j], X[2 * j + 1]);
  return phi;
}

/* rows of an expression of kind and target e from its vectors X[j] (value, rate, acceleration of
   lvec lv[j]); see mbd_expr_rows */
static void expr_rows(const mb_model* m, int kind, const int* lv, const double* const* X,
                      const double* e, double* phiq, double* phid_q, double* phidd_q) {
  expr_coef k = coefficients(kind, e);
  for (int j = 0; j < k.nterm; j++) {
    const int a = lv[2 * j], b = lv[2 * j + 1];
    const double *A = X[2 * j], *B = X[2 * j + 1], *c = k.c[j];
    const double s0[3] = {c[0], 0, 0}, s1[3] = {c[1], c[0], 0}, s2[3] = {c[2], 2 * c[1], c[0]};
    if (phiq) pair_rows(m, a, b, A, B, s0, phiq);
    if (phid_q) pair_rows(m, a, b, A, B, s1, phid_q);
    if (phidd_q) pair_rows(m, a, b, A, B, s2, phidd_q);
  }
}

void mbd_expr_rows(const mb_model* m, const mb_data* d, int i, double* phiq, double* phid_q,
                   double* phidd_q) {
  const expr x = expression(m, NULL, d, i);
  double e[3], state[4][MB_LVCACHE];
  const double* X[4];
  mb_con_target(m, x.value, x.func, d->t, e);
  for (int j = 0; j < mb_con_nlvec(x.kind); j++)
    lvec_state(m, d, x.lv[j], state[j]), X[j] = state[j];
  expr_rows(m, x.kind, x.lv, X, e, phiq, phid_q, phidd_q);
}

void mbd_constraints_rows(const mb_model* m, mb_data* d, double* phid_q, double* phidd_q) {
  mbd_constraints_rows_of(m, d, m->ncon, NULL, phid_q, phidd_q);
}

void mbd_constraints_rows_of(const mb_model* m, mb_data* d, int n, const int* rows_of,
                             double* phid_q, double* phidd_q) {
  const mb_structure* st = m->structure;
  const int* rowptr = st->phiq.rowptr;
  if (!rows_of)
    mb_constraints_cache(m, d, 2);
  else /* the listed rows' slots alone (a slot two rows share is evaluated twice) */
    for (int r = 0; r < n; r++)
      for (int j = 0; j < mb_con_nlvec(m->con_kind[rows_of[r]]); j++)
        cache_slot(m, d, st->con_slot[4 * rows_of[r] + j], 2);
  for (int r = 0; r < n; r++) {
    const int i = rows_of ? rows_of[r] : r;
    const int kind = m->con_kind[i];
    const int* lv = m->con_lvec + 4 * i;
    const double* X[4];
    double e[3];
    for (int j = 0; j < mb_con_nlvec(kind); j++)
      X[j] = d->lvcache + MB_LVCACHE * st->con_slot[4 * i + j];
    mb_con_target(m, m->con_value[i], m->con_func[i], d->t, e);
    d->phi[i] = expr_value(kind, X, e);
    /* the three rows at once, straight into their places (see expr_rows) */
    double* const rows[3] = {d->phiq + rowptr[i], phid_q + rowptr[i], phidd_q + rowptr[i]};
    for (int r = 0; r < 3; r++)
      for (int k = 0; k < rowptr[i + 1] - rowptr[i]; k++) rows[r][k] = 0;
    const expr_coef k = coefficients(kind, e);
    for (int j = 0; j < k.nterm; j++) {
      const double *A = X[2 * j], *B = X[2 * j + 1], *c = k.c[j];
      const double s[3][3] = {{c[0], 0, 0}, {c[1], c[0], 0}, {c[2], 2 * c[1], c[0]}};
      double wa[3][3], wb[3][3];
      for (int r = 0; r < 3; r++)
        for (int l = 0; l < 3; l++) {
          wa[r][l] = s[r][0] * B[l] + s[r][1] * B[3 + l] + s[r][2] * B[6 + l];
          wb[r][l] = s[r][0] * A[l] + s[r][1] * A[3 + l] + s[r][2] * A[6 + l];
        }
      const int* toff = st->con_toff + st->con_toff_adr[4 * i + 2 * j];
      mb_lvec_add_jtw_rows(m, lv[2 * j], 1, 3, wa, rows, toff);
      toff = st->con_toff + st->con_toff_adr[4 * i + 2 * j + 1];
      mb_lvec_add_jtw_rows(m, lv[2 * j + 1], 1, 3, wb, rows, toff);
    }
  }
}

/* the coefficients of expression x at the time of d (k) and their parameter derivatives (dk) */
static void coefficients_and_param(const mb_model* m, const mb_model* dm, const mb_data* d,
                                   const expr* x, expr_coef* k, expr_coef* dk) {
  double e[3], de[3];
  mb_con_target(m, x->value, x->func, d->t, e);
  de[0] = x->dvalue, de[1] = de[2] = 0;
  if (x->func >= 0) mbd_func_param(m, dm, x->func, d->t, &de[0], &de[1], &de[2]);
  *k = coefficients(x->kind, e), *dk = coefficients_param(x->kind, e, de);
}

void mbd_expr_param(const mb_model* m, const mb_model* dm, const mb_data* d, int i, double* out) {
  const expr x = expression(m, dm, d, i);
  expr_coef k, dk;
  coefficients_and_param(m, dm, d, &x, &k, &dk);
  out[0] = -dk.e[0], out[1] = -dk.e[1], out[2] = -dk.e[2];
  for (int j = 0; j < k.nterm; j++) {
    double P[3], dP[3];
    pair_values(m, NULL, x.lv[2 * j], x.lv[2 * j + 1], d->q, d->qd, d->qdd, P);
    pair_values(m, dm, x.lv[2 * j], x.lv[2 * j + 1], d->q, d->qd, d->qdd, dP);
    const double *c = k.c[j], *dc = dk.c[j];
    out[0] += dc[0] * P[0] + c[0] * dP[0];
    out[1] += dc[1] * P[0] + c[1] * dP[0] + dc[0] * P[1] + c[0] * dP[1];
    out[2] += dc[2] * P[0] + c[2] * dP[0] + 2 * (dc[1] * P[1] + c[1] * dP[1]) + dc[0] * P[2] +
              c[0] * dP[2];
  }
}

void mbd_expr_rows_param(const mb_model* m, const mb_model* dm, const mb_data* d, int i, double w,
                         double* out) {
  if (w == 0) return;
  const expr x = expression(m, dm, d, i);
  expr_coef k, dk;
  coefficients_and_param(m, dm, d, &x, &k, &dk);
  for (int j = 0; j < k.nterm; j++) {
    const int a = x.lv[2 * j], b = x.lv[2 * j + 1];
    double va[3], vb[3];
    mb_lvec_eval(m, a, d->q, va), mb_lvec_eval(m, b, d->q, vb);
    mb_lvec_add_jtw(m, a, w * dk.c[j][0], vb, out);
    mb_lvec_add_jtw(m, b, w * dk.c[j][0], va, out);
    pair_rows_param(m, dm, a, b, d->q, w * k.c[j][0], out);
  }
}

void mbd_expr_hessian(const mb_model* m, const mb_data* d, int i, double w, double* A,
                      const int* map) {
  if (w == 0) return;
  const mb_structure* st = m->structure;
  if (!map) map = st->hess_entry;
  double e[3];
  mb_con_target(m, m->con_value[i], m->con_func[i], d->t, e);
  expr_coef k = coefficients(m->con_kind[i], e);
  for (int j = 0; j < k.nterm; j++) {
    const double s = w * k.c[j][0];
    for (int h = st->hess_adr[2 * i + j]; h < st->hess_adr[2 * i + j + 1]; h++)
      A[map[h]] += s * st->hess_value[h];
  }
}
