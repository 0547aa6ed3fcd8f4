/* Linear vectors: every marker point and direction of a body in natural coordinates is an affine
   function of q, v = c + sum_k W_k q[k..k+dim]. These are their evaluations and Jacobian products.
 */
#include <math.h>

#include "internal.h"

double mbu_norm3(const double* a) {
  return sqrt(mbu_dot3(a, a));
}

/* g += s W^T w for one dim x dim block in a 3 x 3 slot (see mbu_add_wx) */
static inline void add_wtw(int dim, const double* W, double s, const double* w, double* g) {
  if (dim == 3) {
    g[0] += s * (W[0] * w[0] + W[3] * w[1] + W[6] * w[2]);
    g[1] += s * (W[1] * w[0] + W[4] * w[1] + W[7] * w[2]);
    g[2] += s * (W[2] * w[0] + W[5] * w[1] + W[8] * w[2]);
  } else {
    g[0] += s * (W[0] * w[0] + W[3] * w[1]);
    g[1] += s * (W[1] * w[0] + W[4] * w[1]);
  }
}

/* the scalar flags of the model's terms, or NULL (tangent models: the general products) */
static inline const unsigned char* scalar_flags(const mb_model* m) {
  return m->structure ? m->structure->term_scalar : NULL;
}

/* v += W x of term k: c x when W = c I (the same numbers: the products with the zeros of W add
   nothing), else the full block */
static inline void term_wx(const mb_model* m, const unsigned char* scalar, int k, const double* x,
                           double* v) {
  const double* W = m->term_W + 9 * k;
  if (scalar && scalar[k]) {
    const double c = W[0];
    v[0] += c * x[0], v[1] += c * x[1];
    if (m->dim == 3) v[2] += c * x[2];
  } else {
    mbu_add_wx(m->dim, W, x, 1, v);
  }
}

void mb_lvec_eval(const mb_model* m, int lv, const double* q, double* v) {
  const double* c = m->lvec_const + 3 * lv;
  const unsigned char* scalar = scalar_flags(m);
  v[0] = c[0], v[1] = c[1], v[2] = c[2];
  for (int k = m->lvec_termadr[lv], end = k + m->lvec_termnum[lv]; k < end; k++)
    term_wx(m, scalar, k, q + m->term_qadr[k], v);
}

void mb_lvec_rate(const mb_model* m, int lv, const double* qd, double* vd) {
  const unsigned char* scalar = scalar_flags(m);
  vd[0] = vd[1] = vd[2] = 0;
  for (int k = m->lvec_termadr[lv], end = k + m->lvec_termnum[lv]; k < end; k++)
    term_wx(m, scalar, k, qd + m->term_qadr[k], vd);
}

/* g += s W^T w of term k, likewise */
static inline void term_wtw(const mb_model* m, const unsigned char* scalar, int k, double s,
                            const double* w, double* g) {
  const double* W = m->term_W + 9 * k;
  if (scalar && scalar[k]) {
    const double c = W[0];
    g[0] += s * (c * w[0]), g[1] += s * (c * w[1]);
    if (m->dim == 3) g[2] += s * (c * w[2]);
  } else {
    add_wtw(m->dim, W, s, w, g);
  }
}

void mb_lvec_add_jtw(const mb_model* m, int lv, double s, const double* w, double* g) {
  const unsigned char* scalar = scalar_flags(m);
  for (int k = m->lvec_termadr[lv], end = k + m->lvec_termnum[lv]; k < end; k++)
    term_wtw(m, scalar, k, s, w, g + m->term_qadr[k]);
}

void mb_lvec_add_jtw_rows(const mb_model* m, int lv, double s, int nrow, const double (*w)[3],
                          double* const* rows, const int* off) {
  const unsigned char* scalar = scalar_flags(m);
  const int k0 = m->lvec_termadr[lv];
  for (int t = 0; t < m->lvec_termnum[lv]; t++)
    for (int r = 0; r < nrow; r++) term_wtw(m, scalar, k0 + t, s, w[r], rows[r] + off[t]);
}

void mb_lvec_add_jtgj(const mb_model* m, int a, int b, double s, const double* G, double* A) {
  const int dim = m->dim;
  const mb_pattern* sys = m->structure->sys;
  for (int ka = m->lvec_termadr[a], ea = ka + m->lvec_termnum[a]; ka < ea; ka++) {
    const double* Wa = m->term_W + 9 * ka;
    for (int kb = m->lvec_termadr[b], eb = kb + m->lvec_termnum[b]; kb < eb; kb++) {
      const double* Wb = m->term_W + 9 * kb;
      /* block = Wa^T G Wb */
      double GWb[9] = {0}, block[9] = {0};
      for (int r = 0; r < dim; r++)
        for (int l = 0; l < dim; l++)
          for (int j = 0; j < dim; j++) GWb[3 * r + j] += G[3 * r + l] * Wb[3 * l + j];
      for (int i = 0; i < dim; i++)
        for (int r = 0; r < dim; r++)
          for (int j = 0; j < dim; j++) block[3 * i + j] += Wa[3 * r + i] * GWb[3 * r + j];
      mb_pattern_add_block(sys, A, m->term_qadr[ka] / dim, m->term_qadr[kb] / dim, s, block);
    }
  }
}
