/* Block sparsity patterns in compressed sparse columns, their lookups and products, and sparse
   rows (see linalg.h). */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "../linalg.h"

/* ---------------------------------------------------------------------------------------------
   block pairs */

int mb_pairs_add(mb_pairs* pairs, int bi, int bj) {
  if (pairs->count + 2 > pairs->capacity) {
    int cap = pairs->capacity ? 2 * pairs->capacity : 256;
    int* ij = realloc(pairs->ij, sizeof(int) * 2 * (size_t)cap);
    if (!ij) return -1;
    pairs->ij = ij, pairs->capacity = cap;
  }
  int* e = pairs->ij + 2 * pairs->count;
  e[0] = bi, e[1] = bj, e[2] = bj, e[3] = bi;
  pairs->count += 2;
  return 0;
}

int mb_pairs_add_all(mb_pairs* pairs, int n, const int* blocks) {
  for (int a = 0; a < n; a++)
    for (int b = a; b < n; b++)
      if (mb_pairs_add(pairs, blocks[a], blocks[b])) return -1;
  return 0;
}

void mb_pairs_free(mb_pairs* pairs) {
  free(pairs->ij);
  memset(pairs, 0, sizeof *pairs);
}

/* The count pairs ij sorted by block column, then block row (blocks 0 .. nb - 1): two stable
   counting passes, by row and then by column. A model's patterns hold many times as many pairs
   as blocks, which a comparison sort made the larger part of compiling it. 0, or -1 when out of
   memory. */
static int sort_by_column(int* ij, int count, int nb) {
  int* tmp = malloc(sizeof(int) * (2 * (size_t)count + (size_t)nb + 2));
  if (!tmp) return -1;
  int* start = tmp + 2 * (size_t)count;
  for (int key = 0; key < 2; key++) {
    const int* from = key == 0 ? ij : tmp;
    int* to = key == 0 ? tmp : ij;
    memset(start, 0, sizeof(int) * ((size_t)nb + 1));
    for (int k = 0; k < count; k++) start[from[2 * k + key] + 1]++;
    for (int b = 0; b < nb; b++) start[b + 1] += start[b];
    for (int k = 0; k < count; k++) {
      const int d = start[from[2 * k + key]]++;
      to[2 * d] = from[2 * k], to[2 * d + 1] = from[2 * k + 1];
    }
  }
  free(tmp);
  return 0;
}

/* ---------------------------------------------------------------------------------------------
   patterns */

/* one allocation holding the struct and its arrays */
static mb_pattern* pattern_alloc(int nb, int bs, int nbnz) {
  const size_t n = (size_t)nb * bs, nnz = (size_t)nbnz * bs * bs;
  const size_t ints = (size_t)nb + 1 + (size_t)nbnz + n + 1 + nnz + n;
  mb_pattern* p = calloc(1, sizeof *p + sizeof(int) * (ints + 1));
  if (!p) return NULL;
  int* a = (int*)(p + 1);
  p->n = (int)n, p->bs = bs, p->nb = nb, p->nnz = (int)nnz, p->nbnz = nbnz;
  p->bcolptr = a, a += nb + 1;
  p->browind = a, a += nbnz;
  p->colptr = a, a += n + 1;
  p->rowind = a, a += nnz;
  p->diag = a;
  return p;
}

/* the scalar columns, rows and diagonal entries from the block columns */
static void expand_blocks(mb_pattern* p) {
  const int bs = p->bs;
  int e = 0;
  for (int J = 0; J < p->nb; J++) {
    const int k0 = p->bcolptr[J], k1 = p->bcolptr[J + 1];
    for (int c = 0; c < bs; c++) {
      const int j = J * bs + c;
      p->colptr[j] = e;
      for (int k = k0; k < k1; k++)
        for (int r = 0; r < bs; r++) {
          const int i = p->browind[k] * bs + r;
          if (i == j) p->diag[j] = e;
          p->rowind[e++] = i;
        }
    }
  }
  p->colptr[p->n] = e;
}

mb_pattern* mb_pattern_create(int nb, int bs, const mb_pairs* pairs) {
  /* the pairs and the diagonal, sorted by column, without repeats */
  const int count = pairs->count + nb;
  int* ij = malloc(sizeof(int) * 2 * ((size_t)count + 1));
  if (!ij) return NULL;
  if (pairs->count) memcpy(ij, pairs->ij, sizeof(int) * 2 * (size_t)pairs->count);
  for (int I = 0; I < nb; I++) ij[2 * (pairs->count + I)] = ij[2 * (pairs->count + I) + 1] = I;
  if (sort_by_column(ij, count, nb)) {
    free(ij);
    return NULL;
  }
  int unique = 0;
  for (int k = 0; k < count; k++)
    if (k == 0 || ij[2 * k] != ij[2 * k - 2] || ij[2 * k + 1] != ij[2 * k - 1]) unique++;

  mb_pattern* p = pattern_alloc(nb, bs, unique);
  if (!p) {
    free(ij);
    return NULL;
  }
  int nbnz = 0;
  for (int k = 0; k < count; k++) {
    if (k > 0 && ij[2 * k] == ij[2 * k - 2] && ij[2 * k + 1] == ij[2 * k - 1]) continue;
    p->browind[nbnz] = ij[2 * k];
    p->bcolptr[ij[2 * k + 1] + 1]++;
    nbnz++;
  }
  for (int J = 0; J < nb; J++) p->bcolptr[J + 1] += p->bcolptr[J];
  free(ij);
  expand_blocks(p);
  return p;
}

void mb_pattern_free(mb_pattern* p) {
  free(p);
}

int mb_pattern_block(const mb_pattern* p, int bi, int bj, int* stride) {
  const int k0 = p->bcolptr[bj], k1 = p->bcolptr[bj + 1];
  int lo = k0, hi = k1;
  while (lo < hi) {
    const int mid = (lo + hi) / 2;
    if (p->browind[mid] < bi)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo == k1 || p->browind[lo] != bi) return -1;
  const int bs = p->bs;
  *stride = bs * (k1 - k0);
  return bs * bs * k0 + bs * (lo - k0);
}

int mb_pattern_entry(const mb_pattern* p, int i, int j) {
  int stride;
  const int e = mb_pattern_block(p, i / p->bs, j / p->bs, &stride);
  return e < 0 ? -1 : e + (j % p->bs) * stride + i % p->bs;
}

void mb_pattern_add_block(const mb_pattern* p, double* A, int bi, int bj, double s,
                          const double* G) {
  int stride;
  const int e = mb_pattern_block(p, bi, bj, &stride);
  assert(e >= 0 && "block outside the compiled pattern");
  if (e < 0) return;
  const int bs = p->bs;
  for (int c = 0; c < bs; c++)
    for (int r = 0; r < bs; r++) A[e + c * stride + r] += s * G[3 * r + c];
}

void mb_spmv(const mb_pattern* p, const double* A, const double* x, double s, double* y) {
  for (int j = 0; j < p->n; j++) {
    const double xj = s * x[j];
    if (xj == 0) continue;
    for (int e = p->colptr[j]; e < p->colptr[j + 1]; e++) y[p->rowind[e]] += A[e] * xj;
  }
}

int mb_compact_init(mb_compact* c, const mb_pattern* p) {
  memset(c, 0, sizeof *c);
  c->n = p->n;
  c->col = malloc((size_t)p->n * sizeof(int) + 1);
  c->colptr = calloc((size_t)p->n + 1, sizeof(int));
  c->rowind = malloc((size_t)p->nnz * sizeof(int) + 1);
  c->val = malloc((size_t)p->nnz * sizeof(double) + 1);
  if (c->col && c->colptr && c->rowind && c->val) return 0;
  mb_compact_release(c);
  return -1;
}

void mb_compact_release(mb_compact* c) {
  free(c->col), free(c->colptr), free(c->rowind), free(c->val);
  memset(c, 0, sizeof *c);
}

/* Column j's entries end at c->nnz: kept when it holds any. */
static void close_column(mb_compact* c, int j, int first) {
  if (c->nnz == first) return;
  c->col[c->ncol] = j;
  c->colptr[c->ncol++] = first;
  c->colptr[c->ncol] = c->nnz;
}

void mb_compact_set(mb_compact* c, const mb_pattern* p, const double* A) {
  c->ncol = c->nnz = 0;
  c->colptr[0] = 0;
  for (int j = 0; j < p->n; j++) {
    const int first = c->nnz;
    for (int e = p->colptr[j]; e < p->colptr[j + 1]; e++)
      if (A[e] != 0) c->rowind[c->nnz] = p->rowind[e], c->val[c->nnz++] = A[e];
    close_column(c, j, first);
  }
}

void mb_compact_set_entries(mb_compact* c, const mb_pattern* p, const double* A, int n,
                            const int* entries) {
  c->ncol = c->nnz = 0;
  c->colptr[0] = 0;
  for (int i = 0, j = -1, first = 0; i <= n; i++) {
    /* the entries come by column: each column closed where the next begins */
    const int e = i < n ? entries[i] : -1;
    if (e < 0 || e >= p->colptr[j + 1]) {
      if (j >= 0) close_column(c, j, first);
      if (e < 0) break;
      while (p->colptr[j + 1] <= e) j++;
      first = c->nnz;
    }
    if (A[e] != 0) c->rowind[c->nnz] = p->rowind[e], c->val[c->nnz++] = A[e];
  }
}

void mb_compact_mul(const mb_compact* c, const double* x, double s, double* y) {
  for (int k = 0; k < c->ncol; k++) {
    const double xj = s * x[c->col[k]];
    if (xj == 0) continue;
    for (int e = c->colptr[k]; e < c->colptr[k + 1]; e++) y[c->rowind[e]] += c->val[e] * xj;
  }
}

void mb_compact_mul_t(const mb_compact* c, const double* x, double s, double* y) {
  for (int k = 0; k < c->ncol; k++) {
    double sum = 0;
    for (int e = c->colptr[k]; e < c->colptr[k + 1]; e++) sum += c->val[e] * x[c->rowind[e]];
    y[c->col[k]] += s * sum;
  }
}

void mb_spmv_t(const mb_pattern* p, const double* A, const double* x, double s, double* y) {
  for (int j = 0; j < p->n; j++) {
    double sum = 0;
    for (int e = p->colptr[j]; e < p->colptr[j + 1]; e++) sum += A[e] * x[p->rowind[e]];
    y[j] += s * sum;
  }
}

void mb_pattern_to_dense(const mb_pattern* p, const double* A, double* D) {
  const size_t n = (size_t)p->n;
  memset(D, 0, sizeof(double) * n * n);
  for (int j = 0; j < p->n; j++)
    for (int e = p->colptr[j]; e < p->colptr[j + 1]; e++) D[(size_t)p->rowind[e] * n + j] = A[e];
}

/* ---------------------------------------------------------------------------------------------
   rows */

void mb_rows_mul(const mb_rows* r, const double* A, const double* x, double s, double* y) {
  for (int i = 0; i < r->nrow; i++) y[i] += s * mb_rows_dot(r, i, A, x, 0);
}

void mb_rows_mul_t(const mb_rows* r, const double* A, const double* w, double s, double* y) {
  for (int i = 0; i < r->nrow; i++) {
    const double wi = s * w[i];
    if (wi != 0) mb_rows_axpy(r, i, A, wi, y);
  }
}

void mb_rows_gather(const mb_rows* r, int i, double* A, double* dense) {
  for (int e = r->rowptr[i]; e < r->rowptr[i + 1]; e++) {
    A[e] = dense[r->col[e]];
    dense[r->col[e]] = 0;
  }
}

void mb_rows_to_dense(const mb_rows* r, const double* A, double* D) {
  memset(D, 0, sizeof(double) * (size_t)r->nrow * r->ncol);
  for (int i = 0; i < r->nrow; i++)
    for (int e = r->rowptr[i]; e < r->rowptr[i + 1]; e++) D[(size_t)i * r->ncol + r->col[e]] = A[e];
}
