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

void mb_lvec_eval(const mb_model* m, int lv, const double* q, double* v) {
  const double* c = m->lvec_const + 3 * lv;
  v[0] = c[0], v[1] = c[1], v[2] = c[2];
  for (int k = m->lvec_termadr[lv], end = k + m->lvec_termnum[lv]; k < end; k++)
    mbu_add_wx(m->dim, m->term_W + 9 * k, q + m->term_qadr[k], 1, v);
}

void mb_lvec_rate(const mb_model* m, int lv, const double* qd, double* vd) {
  vd[0] = vd[1] = vd[2] = 0;
  for (int k = m->lvec_termadr[lv], end = k + m->lvec_termnum[lv]; k < end; k++)
    mbu_add_wx(m->dim, m->term_W + 9 * k, qd + m->term_qadr[k], 1, vd);
}

void mb_lvec_add_jtw(const mb_model* m, int lv, double s, const double* w, double* g) {
  for (int k = m->lvec_termadr[lv], end = k + m->lvec_termnum[lv]; k < end; k++)
    add_wtw(m->dim, m->term_W + 9 * k, s, w, g + m->term_qadr[k]);
}

void mb_lvec_add_jtw_rows(const mb_model* m, int lv, double s, int nrow, const double (*w)[3],
                          double* const* rows, const int* off) {
  const int k0 = m->lvec_termadr[lv];
  for (int t = 0; t < m->lvec_termnum[lv]; t++)
    for (int r = 0; r < nrow; r++)
      add_wtw(m->dim, m->term_W + 9 * (k0 + t), s, w[r], rows[r] + off[t]);
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
