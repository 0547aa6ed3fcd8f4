/* Linear vectors: every marker point and direction of a body in natural coordinates is an affine
   function of q, v = c + sum_k W_k q[k..k+dim]. These are their evaluations and Jacobian products.
 */
#include <math.h>

#include "internal.h"

double mbu_norm3(const double* a) {
  return sqrt(mbu_dot3(a, a));
}

void mb_lvec_eval(const mb_model* m, int lv, const double* q, double* v) {
  const int dim = m->dim;
  const double* c = m->lvec_const + 3 * lv;
  v[0] = c[0], v[1] = c[1], v[2] = c[2];
  for (int k = m->lvec_termadr[lv], end = k + m->lvec_termnum[lv]; k < end; k++) {
    const double* W = m->term_W + 9 * k;
    const double* x = q + m->term_qadr[k];
    for (int r = 0; r < dim; r++)
      for (int j = 0; j < dim; j++) v[r] += W[3 * r + j] * x[j];
  }
}

void mb_lvec_rate(const mb_model* m, int lv, const double* qd, double* vd) {
  const int dim = m->dim;
  vd[0] = vd[1] = vd[2] = 0;
  for (int k = m->lvec_termadr[lv], end = k + m->lvec_termnum[lv]; k < end; k++) {
    const double* W = m->term_W + 9 * k;
    const double* x = qd + m->term_qadr[k];
    for (int r = 0; r < dim; r++)
      for (int j = 0; j < dim; j++) vd[r] += W[3 * r + j] * x[j];
  }
}

void mb_lvec_add_jtw(const mb_model* m, int lv, double s, const double* w, double* g) {
  const int dim = m->dim;
  for (int k = m->lvec_termadr[lv], end = k + m->lvec_termnum[lv]; k < end; k++) {
    const double* W = m->term_W + 9 * k;
    double* gk = g + m->term_qadr[k];
    for (int j = 0; j < dim; j++) {
      double sum = 0;
      for (int r = 0; r < dim; r++) sum += W[3 * r + j] * w[r];
      gk[j] += s * sum;
    }
  }
}

void mb_lvec_add_jtgj(const mb_model* m, int a, int b, double s, const double* G, double* A) {
  mb_lvec_add_jtgj2(m, a, m, b, s, G, A);
}

void mb_lvec_add_jtgj2(const mb_model* ma, int a, const mb_model* mb, int b, double s,
                       const double* G, double* A) {
  const int dim = ma->dim, nq = ma->nq;
  for (int ka = ma->lvec_termadr[a], ea = ka + ma->lvec_termnum[a]; ka < ea; ka++) {
    const double* Wa = ma->term_W + 9 * ka;
    const int ia = ma->term_qadr[ka];
    for (int kb = mb->lvec_termadr[b], eb = kb + mb->lvec_termnum[b]; kb < eb; kb++) {
      const double* Wb = mb->term_W + 9 * kb;
      const int ib = mb->term_qadr[kb];
      /* GWb = G Wb (dim x dim) */
      double GWb[9];
      for (int r = 0; r < dim; r++)
        for (int j = 0; j < dim; j++) {
          double sum = 0;
          if (G)
            for (int l = 0; l < dim; l++) sum += G[3 * r + l] * Wb[3 * l + j];
          else
            sum = Wb[3 * r + j];
          GWb[3 * r + j] = sum;
        }
      /* block (ia, ib) += s Wa^T GWb */
      for (int i = 0; i < dim; i++)
        for (int j = 0; j < dim; j++) {
          double sum = 0;
          for (int r = 0; r < dim; r++) sum += Wa[3 * r + i] * GWb[3 * r + j];
          A[(ia + i) * nq + ib + j] += s * sum;
        }
    }
  }
}
