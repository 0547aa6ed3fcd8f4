/* A force element's coordinate blocks on the system pattern (structure.h, mb_local): its
   Jacobians are formed dense on its few blocks and its matrices added to the pattern without
   lookups, through the maps mb_structure_build compiled. */
#include <string.h>

#include "internal.h"
#include "structure.h"

mb_local mb_force_local(const mb_model* m, int i) {
  const mb_structure* s = m->structure;
  const int b0 = s->force_blkadr[i], p0 = s->force_pairadr[i];
  return (mb_local){s->force_blkadr[i + 1] - b0, s->force_block + b0, s->force_entry + p0,
                    s->force_stride + p0};
}

void mb_local_jacobian(const mb_model* m, const mb_local* L, int lv, double* J) {
  const int dim = m->dim, ncol = dim * L->nb;
  memset(J, 0, sizeof(double) * dim * ncol);
  for (int k = m->lvec_termadr[lv]; k < m->lvec_termadr[lv] + m->lvec_termnum[lv]; k++) {
    const int b = m->term_qadr[k] / dim;
    int j = 0;
    while (L->block[j] != b) j++;
    const double* W = m->term_W + 9 * k;
    for (int r = 0; r < dim; r++)
      for (int c = 0; c < dim; c++) J[r * ncol + j * dim + c] += W[3 * r + c];
  }
}

void mb_local_premul(int n, const double* W, int ws, int r, const double* P, int k, double* Q) {
  memset(Q, 0, sizeof(double) * r * n);
  for (int j = 0; j < k; j++)
    for (int c = 0; c < n; c++) {
      const double pjc = P[j * n + c];
      if (pjc != 0)
        for (int i = 0; i < r; i++) Q[i * n + c] += W[i * ws + j] * pjc;
    }
}

/* A += s K block by block, K (dim nb x dim nb, row-major) on L's coordinates, for a constant dim;
   only the block rows marked in used (the others of K are zero and were never written) */
static inline void local_scatter(const int dim, const mb_local* L, double* restrict A, double s,
                                 const double* restrict K, const unsigned char* used) {
  const int nb = L->nb, n = dim * nb;
  for (int a = 0; a < nb; a++) {
    if (!used[a]) continue;
    for (int b = 0; b < nb; b++) {
      double* restrict block = A + L->entry[a * nb + b];
      const int stride = L->stride[a * nb + b];
      const double* Kab = K + a * dim * n + b * dim;
      for (int c = 0; c < dim; c++)
        for (int i = 0; i < dim; i++) block[c * stride + i] += s * Kab[i * n + c];
    }
  }
}

void mb_local_add_ptq(const mb_model* m, const mb_local* L, double* A, double s, const double* P,
                      const double* Q, int r) {
  /* K = P^T Q, a sum of r outer products (rows of P and Q), then scattered; a block row of K is
     cleared when a nonzero of P first reaches it, so that the zero blocks of P (the elements'
     Jacobians are mostly zero) cost nothing */
  const int dim = m->dim, n = dim * L->nb;
  double K[MB_LOCAL_COORDS * MB_LOCAL_COORDS];
  unsigned char used[MB_LOCAL_BLOCKS] = {0};
  for (int k = 0; k < r; k++) {
    const double *p = P + k * n, *q = Q + k * n;
    for (int row = 0; row < n; row++) {
      const double pr = p[row];
      if (pr == 0) continue;
      if (!used[row / dim]) {
        used[row / dim] = 1;
        memset(K + (row / dim) * dim * n, 0, sizeof(double) * dim * n);
      }
      double* Krow = K + row * n;
      for (int col = 0; col < n; col++) Krow[col] += pr * q[col];
    }
  }
  if (dim == 3)
    local_scatter(3, L, A, s, K, used);
  else
    local_scatter(2, L, A, s, K, used);
}
