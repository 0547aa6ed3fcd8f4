/* Block sparse LU for the matrices of natural coordinates, whose entries come in full bs x bs
   blocks (bs = 2 or 3, one per point or unit vector). Once per model: an AMD ordering of the
   block graph (SuiteSparse AMD), the filled block pattern of L and U (symmetric, as the matrices
   are structurally symmetric) and the complete list of block updates of the elimination, each
   with its source and target slots. Per step: the values are copied into the block slots and the
   list is run: for every block column, the diagonal block is factorised (partial pivoting inside
   the block), the blocks below it are scaled, and the Schur updates are applied, each a small
   dense product of fixed size. Pivoting is inside the diagonal blocks only: the Newton and
   projection matrices are dominated by M + alpha Phi_q^T Phi_q, which is positive definite. The
   symmetric variant (projection matrices) updates only the lower half, about half the work. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <amd.h>

#include "../linalg.h"
#include "../vec2.h"

/* the elimination, compiled: block slots hold bs x bs blocks column-major */
typedef struct symbolic {
  int nb, bs, n;
  int nslot;   /* blocks of L and U together (the diagonal ones included) */
  int* perm;   /* (nb) block k of the elimination is block perm[k] of the matrix */
  int* diag;   /* (nb) slot of the diagonal block of elimination step k */
  int* coladr; /* (nb + 1) first entry of column k in lrow/lslot/uslot */
  int* lrow;   /* elimination index i > k of each block below the diagonal of column k */
  int* lslot;  /* slot of L(i, k) */
  int* uslot;  /* slot of U(k, i) */
  int* updadr; /* (nb + 1) first update of step k */
  int* upd;    /* (3 per update) target slot, L slot, U slot: target -= L U */
  int* fill;   /* (nsys blocks) slot of each block of the matrix's pattern */
  int nzero;
  int* zero;     /* (nzero) slots no block of the matrix fills: zero before each factorisation */
  int symmetric; /* 1: only the lower blocks are updated, U(k, i) = L(i, k)^T before scaling */
  const mb_pattern* p;
} symbolic;

typedef struct numeric {
  const symbolic* s;
  double* a; /* (nslot x bs^2) the factors */
  int* piv;  /* (n) pivots inside the diagonal blocks */
  double* y; /* (n) solve scratch */
} numeric;

/* ---------------------------------------------------------------------------------------------
   symbolic analysis */

static int cmp_int(const void* a, const void* b) {
  const int x = *(const int*)a, y = *(const int*)b;
  return (x > y) - (x < y);
}

/* Structure of L by columns in elimination order: column k holds the rows i > k reached by
   column k of the permuted matrix and by the columns of L whose first row below the diagonal is
   k (their parents in the elimination tree). A symmetric matrix needs only the updates of the
   blocks on and below the diagonal, and only those blocks of the matrix. */
static void* block_analyze(const mb_pattern* p, int symmetric) {
  const int nb = p->nb, bs = p->bs;
  symbolic* s = calloc(1, sizeof *s);
  int *inv = malloc(sizeof(int) * (nb + 1)), *parent = malloc(sizeof(int) * (nb + 1));
  int *mark = malloc(sizeof(int) * (nb + 1)), *head = malloc(sizeof(int) * (nb + 1));
  int *next = NULL, *cols = NULL, *rows = NULL;
  size_t cap = 4 * (size_t)p->nbnz + (size_t)nb + 16, nl = 0;
  rows = malloc(sizeof(int) * cap);
  if (!s || !inv || !parent || !mark || !head || !rows) goto fail;
  s->nb = nb, s->bs = bs, s->n = p->n, s->p = p, s->symmetric = symmetric;
  s->perm = malloc(sizeof(int) * (nb + 1));
  s->coladr = malloc(sizeof(int) * (nb + 1));
  if (!s->perm || !s->coladr) goto fail;
  if (nb > 0 && amd_order(nb, p->bcolptr, p->browind, s->perm, NULL, NULL) != AMD_OK) goto fail;
  for (int k = 0; k < nb; k++) inv[s->perm[k]] = k;

  /* column patterns: a parent's column gathers its children's rows (linked lists by parent) */
  next = malloc(sizeof(int) * (nb + 1));
  if (!next) goto fail;
  for (int k = 0; k < nb; k++) head[k] = -1, mark[k] = -1;
  for (int k = 0; k < nb; k++) {
    s->coladr[k] = (int)nl;
    mark[k] = k;
    const int J = s->perm[k];
    for (int e = p->bcolptr[J]; e < p->bcolptr[J + 1]; e++) {
      const int i = inv[p->browind[e]];
      if (i > k && mark[i] != k) {
        if (nl == cap) goto fail; /* cannot happen: grown below */
        mark[i] = k, rows[nl++] = i;
      }
    }
    for (int c = head[k]; c >= 0; c = next[c])
      for (size_t e = (size_t)s->coladr[c]; e < (size_t)s->coladr[c + 1]; e++) {
        const int i = rows[e];
        if (i > k && mark[i] != k) {
          if (nl == cap) {
            int* grown = realloc(rows, sizeof(int) * 2 * cap);
            if (!grown) goto fail;
            rows = grown, cap *= 2;
          }
          mark[i] = k, rows[nl++] = i;
        }
      }
    qsort(rows + s->coladr[k], nl - (size_t)s->coladr[k], sizeof(int), cmp_int);
    parent[k] = nl > (size_t)s->coladr[k] ? rows[s->coladr[k]] : -1;
    if (parent[k] >= 0) next[k] = head[parent[k]], head[parent[k]] = k;
    if (nl + (size_t)nb + 1 > cap) {
      int* grown = realloc(rows, sizeof(int) * 2 * (cap + nb));
      if (!grown) goto fail;
      rows = grown, cap = 2 * (cap + nb);
    }
  }
  s->coladr[nb] = (int)nl;

  /* slots: each column's diagonal, then its L blocks and their U transposes */
  s->lrow = rows, rows = NULL;
  s->diag = malloc(sizeof(int) * (nb + 1));
  s->lslot = malloc(sizeof(int) * (nl + 1));
  s->uslot = malloc(sizeof(int) * (nl + 1));
  if (!s->diag || !s->lslot || !s->uslot) goto fail;
  int slot = 0;
  for (int k = 0; k < nb; k++) {
    s->diag[k] = slot++;
    for (int e = s->coladr[k]; e < s->coladr[k + 1]; e++)
      s->lslot[e] = slot++, s->uslot[e] = slot++;
  }
  s->nslot = slot;

  /* the updates of step k: for rows i, j of column k, block (i, j) -= L(i, k) U(k, j); its slot
     is the diagonal, L(i, j) (i > j) or U(j, i) (i < j), found in column min(i, j) */
  size_t nupd = 0;
  for (int k = 0; k < nb; k++) {
    const size_t c = (size_t)(s->coladr[k + 1] - s->coladr[k]);
    nupd += c * c;
  }
  s->updadr = malloc(sizeof(int) * (nb + 1));
  s->upd = malloc(sizeof(int) * (3 * nupd + 1));
  if (!s->updadr || !s->upd) goto fail;
  size_t u = 0;
  for (int k = 0; k < nb; k++) {
    s->updadr[k] = (int)u;
    for (int ei = s->coladr[k]; ei < s->coladr[k + 1]; ei++)
      for (int ej = s->coladr[k]; ej < s->coladr[k + 1]; ej++) {
        const int i = s->lrow[ei], j = s->lrow[ej];
        if (symmetric && i < j) continue;
        int target;
        if (i == j) {
          target = s->diag[i];
        } else {
          const int col = i < j ? i : j, row = i < j ? j : i;
          int *lo = s->lrow + s->coladr[col], *hi = s->lrow + s->coladr[col + 1];
          int* at = bsearch(&row, lo, (size_t)(hi - lo), sizeof(int), cmp_int);
          if (!at) goto fail; /* the fill is closed under elimination */
          const int e = (int)(at - s->lrow);
          target = i > j ? s->lslot[e] : s->uslot[e];
        }
        s->upd[3 * u] = target, s->upd[3 * u + 1] = s->lslot[ei], s->upd[3 * u + 2] = s->uslot[ej];
        u++;
      }
  }
  s->updadr[nb] = (int)u;

  /* where each block of the matrix goes */
  s->fill = malloc(sizeof(int) * ((size_t)p->nbnz + 1));
  if (!s->fill) goto fail;
  for (int J = 0; J < nb; J++)
    for (int e = p->bcolptr[J]; e < p->bcolptr[J + 1]; e++) {
      const int i = inv[p->browind[e]], j = inv[J];
      if (i == j) {
        s->fill[e] = s->diag[i];
        continue;
      }
      if (symmetric && i < j) {
        s->fill[e] = -1; /* the transpose of a lower block */
        continue;
      }
      const int col = i < j ? i : j, row = i < j ? j : i;
      int *lo = s->lrow + s->coladr[col], *hi = s->lrow + s->coladr[col + 1];
      int* at = bsearch(&row, lo, (size_t)(hi - lo), sizeof(int), cmp_int);
      if (!at) goto fail;
      const int le = (int)(at - s->lrow);
      s->fill[e] = i > j ? s->lslot[le] : s->uslot[le];
    }
  /* the slots left for fill */
  s->zero = malloc(sizeof(int) * ((size_t)s->nslot + 1));
  if (!s->zero) goto fail;
  {
    unsigned char* used = calloc((size_t)s->nslot + 1, 1);
    if (!used) goto fail;
    for (int e = 0; e < p->nbnz; e++)
      if (s->fill[e] >= 0) used[s->fill[e]] = 1;
    if (symmetric) /* the factorisation writes U before reading it */
      for (int e = 0; e < s->coladr[nb]; e++) used[s->uslot[e]] = 1;
    s->nzero = 0;
    for (int k = 0; k < s->nslot; k++)
      if (!used[k]) s->zero[s->nzero++] = k;
    free(used);
  }
  free(inv), free(parent), free(mark), free(head), free(next);
  return s;

fail:
  free(inv), free(parent), free(mark), free(head), free(next), free(cols), free(rows);
  if (s) {
    free(s->perm), free(s->coladr), free(s->lrow), free(s->diag), free(s->lslot), free(s->uslot);
    free(s->updadr), free(s->upd), free(s->fill), free(s->zero);
  }
  free(s);
  return NULL;
}

static void* blocklu_analyze(const mb_pattern* p) {
  return block_analyze(p, 0);
}

static void* blockldlt_analyze(const mb_pattern* p) {
  return block_analyze(p, 1);
}

static void blocklu_free_symbolic(void* symbolic_) {
  symbolic* s = symbolic_;
  free(s->perm), free(s->coladr), free(s->lrow), free(s->diag), free(s->lslot), free(s->uslot);
  free(s->updadr), free(s->upd), free(s->fill), free(s->zero);
  free(s);
}

static void* blocklu_create(const mb_pattern* p, const void* symbolic_) {
  (void)p;
  const symbolic* s = symbolic_;
  const size_t bb = (size_t)s->bs * s->bs;
  numeric* f = calloc(1, sizeof *f + sizeof(double) * ((size_t)s->nslot * bb + (size_t)s->n + 1) +
                             sizeof(int) * ((size_t)s->n + 1));
  if (!f) return NULL;
  f->s = s;
  f->a = (double*)(f + 1);
  f->y = f->a + (size_t)s->nslot * bb;
  f->piv = (int*)(f->y + s->n);
  return f;
}

static void blocklu_free(void* numeric) {
  free(numeric);
}

/* ---------------------------------------------------------------------------------------------
   block kernels on bs x bs blocks, column-major (entry (r, c) at c bs + r); written for any bs
   and inlined with the constant block size, so that the compiler unrolls them */

/* LU with partial pivoting of a diagonal block in place (piv: the row swapped with row k at
   step k), the diagonal of U stored as its reciprocals so that the solves multiply; 1 when
   singular */
static inline int block_lu(const int bs, double* D, int* piv) {
  for (int k = 0; k < bs; k++) {
    int p = k;
    for (int i = k + 1; i < bs; i++)
      if (fabs(D[k * bs + i]) > fabs(D[k * bs + p])) p = i;
    if (!(D[k * bs + p] != 0) || !isfinite(D[k * bs + p])) return 1;
    piv[k] = p;
    for (int c = 0; c < bs; c++) {
      const double t = D[c * bs + k];
      D[c * bs + k] = D[c * bs + p], D[c * bs + p] = t;
    }
    const double inv = 1 / D[k * bs + k];
    D[k * bs + k] = inv;
    for (int i = k + 1; i < bs; i++) D[k * bs + i] *= inv;
    for (int c = k + 1; c < bs; c++)
      for (int i = k + 1; i < bs; i++) D[c * bs + i] -= D[k * bs + i] * D[c * bs + k];
  }
  return 0;
}

/* x = D^-1 x with the block's LU (P D = L U) */
static inline void block_solve(const int bs, const double* D, const int* piv, double* x) {
  for (int k = 0; k < bs; k++) {
    const double t = x[k];
    x[k] = x[piv[k]], x[piv[k]] = t;
  }
  for (int k = 0; k < bs; k++)
    for (int i = k + 1; i < bs; i++) x[i] -= D[k * bs + i] * x[k];
  for (int k = bs - 1; k >= 0; k--) {
    x[k] *= D[k * bs + k];
    for (int i = 0; i < k; i++) x[i] -= D[k * bs + i] * x[k];
  }
}

/* x = D^-T x: D^T = U^T L^T P */
static inline void block_tsolve(const int bs, const double* D, const int* piv, double* x) {
  for (int k = 0; k < bs; k++) {
    for (int i = 0; i < k; i++) x[k] -= D[k * bs + i] * x[i];
    x[k] *= D[k * bs + k];
  }
  for (int k = bs - 1; k >= 0; k--)
    for (int i = k + 1; i < bs; i++) x[k] -= D[k * bs + i] * x[i];
  for (int k = bs - 1; k >= 0; k--) {
    const double t = x[k];
    x[k] = x[piv[k]], x[piv[k]] = t;
  }
}

/* L = L D^-1, row by row: D^T l = a */
static inline void block_scale(const int bs, double* L, const double* D, const int* piv) {
  for (int r = 0; r < bs; r++) {
    double row[3];
    for (int c = 0; c < bs; c++) row[c] = L[c * bs + r];
    block_tsolve(bs, D, piv, row);
    for (int c = 0; c < bs; c++) L[c * bs + r] = row[c];
  }
}

/* y -= B x, or y -= B^T x (y apart from x), rows 0 and 1 of B x as one pair */
static inline void block_mulsub(const int bs, const double* restrict B, const double* restrict x,
                                double* restrict y) {
  if (bs == 1) {
    y[0] -= B[0] * x[0];
    return;
  }
  mb_v2 sum = mb_v2_load(B) * x[0];
  for (int c = 1; c < bs; c++) sum += mb_v2_load(B + c * bs) * x[c];
  mb_v2_store(y, mb_v2_load(y) - sum);
  if (bs == 3) {
    double sum2 = B[2] * x[0];
    for (int c = 1; c < bs; c++) sum2 += B[c * bs + 2] * x[c];
    y[2] -= sum2;
  }
}

static inline void block_tmulsub(const int bs, const double* restrict B, const double* restrict x,
                                 double* restrict y) {
  for (int r = 0; r < bs; r++) {
    double sum = 0;
    for (int c = 0; c < bs; c++) sum += B[r * bs + c] * x[c];
    y[r] -= sum;
  }
}

/* T -= L U (three distinct blocks), column by column */
static inline void block_update(const int bs, double* restrict T, const double* restrict L,
                                const double* restrict U) {
  for (int c = 0; c < bs; c++) block_mulsub(bs, L, U + c * bs, T + c * bs);
}

/* ---------------------------------------------------------------------------------------------
   numeric factorisation and solves: A = L U with L unit block lower triangular (blocks
   L(i, k) = A(i, k) D_k^-1) and U block upper triangular (diagonal blocks D_k, the reduced
   A(k, k), factorised in place; blocks U(k, j), the reduced A(k, j)) */

static inline int factor(numeric* f, const double* A, const int bs) {
  const symbolic* s = f->s;
  const mb_pattern* p = s->p;
  const int bb = bs * bs;
  double* a = f->a;
  /* the values into their slots, the fill slots zero */
  for (int e = 0; e < s->nzero; e++) memset(a + (size_t)bb * s->zero[e], 0, sizeof(double) * bb);
  for (int J = 0; J < s->nb; J++) {
    const int k0 = p->bcolptr[J], stride = bs * (p->bcolptr[J + 1] - k0);
    for (int e = k0; e < p->bcolptr[J + 1]; e++) {
      if (s->fill[e] < 0) continue;
      const double* src = A + bb * k0 + bs * (e - k0);
      double* dst = a + (size_t)bb * s->fill[e];
      for (int c = 0; c < bs; c++)
        for (int r = 0; r < bs; r++) dst[c * bs + r] = src[c * stride + r];
    }
  }
  for (int k = 0; k < s->nb; k++) {
    /* the diagonal block, then L(i, k) = A(i, k) D^-1 and the Schur complement
       A(i, j) -= L(i, k) U(k, j) */
    double* D = a + (size_t)bb * s->diag[k];
    int* piv = f->piv + bs * k;
    if (block_lu(bs, D, piv)) return 1;
    for (int e = s->coladr[k]; e < s->coladr[k + 1]; e++) {
      double* L = a + (size_t)bb * s->lslot[e];
      if (s->symmetric) {
        double* U = a + (size_t)bb * s->uslot[e];
        for (int c = 0; c < bs; c++)
          for (int r = 0; r < bs; r++) U[r * bs + c] = L[c * bs + r];
      }
      block_scale(bs, L, D, piv);
    }
    for (int u = s->updadr[k]; u < s->updadr[k + 1]; u++) {
      const int* x = s->upd + 3 * u;
      block_update(bs, a + (size_t)bb * x[0], a + (size_t)bb * x[1], a + (size_t)bb * x[2]);
    }
  }
  return 0;
}

static int blocklu_factor(void* numeric_, const double* A) {
  numeric* f = numeric_;
  switch (f->s->bs) {
    case 3:
      return factor(f, A, 3);
    case 2:
      return factor(f, A, 2);
    default:
      return factor(f, A, 1);
  }
}

static inline void solve(numeric* f, int transpose, double* b, const int bs) {
  const symbolic* s = f->s;
  const int bb = bs * bs, nb = s->nb;
  const double* a = f->a;
  double* y = f->y;
  for (int k = 0; k < nb; k++) memcpy(y + bs * k, b + bs * s->perm[k], sizeof(double) * bs);
  if (!transpose) {
    /* L z = y (pushing each finished z_k to the rows below), then U x = z */
    for (int k = 0; k < nb; k++)
      for (int e = s->coladr[k]; e < s->coladr[k + 1]; e++)
        block_mulsub(bs, a + (size_t)bb * s->lslot[e], y + bs * k, y + bs * s->lrow[e]);
    for (int k = nb - 1; k >= 0; k--) {
      for (int e = s->coladr[k]; e < s->coladr[k + 1]; e++)
        block_mulsub(bs, a + (size_t)bb * s->uslot[e], y + bs * s->lrow[e], y + bs * k);
      block_solve(bs, a + (size_t)bb * s->diag[k], f->piv + bs * k, y + bs * k);
    }
  } else {
    /* U^T w = y, then L^T x = w */
    for (int k = 0; k < nb; k++) {
      block_tsolve(bs, a + (size_t)bb * s->diag[k], f->piv + bs * k, y + bs * k);
      for (int e = s->coladr[k]; e < s->coladr[k + 1]; e++)
        block_tmulsub(bs, a + (size_t)bb * s->uslot[e], y + bs * k, y + bs * s->lrow[e]);
    }
    for (int k = nb - 1; k >= 0; k--)
      for (int e = s->coladr[k]; e < s->coladr[k + 1]; e++)
        block_tmulsub(bs, a + (size_t)bb * s->lslot[e], y + bs * s->lrow[e], y + bs * k);
  }
  for (int k = 0; k < nb; k++) memcpy(b + bs * s->perm[k], y + bs * k, sizeof(double) * bs);
}

static void blocklu_solve(void* numeric_, int transpose, int nrhs, double* B) {
  numeric* f = numeric_;
  const int bs = f->s->bs, n = f->s->n;
  for (int col = 0; col < nrhs; col++) {
    double* b = B + (size_t)col * n;
    if (bs == 3)
      solve(f, transpose, b, 3);
    else if (bs == 2)
      solve(f, transpose, b, 2);
    else
      solve(f, transpose, b, 1);
  }
}

const mb_solver_method mb_block_ldlt = {"block LDL^T",  blockldlt_analyze, NULL, blocklu_free_symbolic,
                                        blocklu_create, blocklu_factor,    blocklu_solve,
                                        blocklu_free};

const mb_solver_method mb_block_lu = {"block LU",     blocklu_analyze, NULL, blocklu_free_symbolic,
                                      blocklu_create, blocklu_factor,  blocklu_solve,
                                      blocklu_free};
