/* Small helpers on vectors. */
#include <math.h>
#include <stdlib.h>

#include "internal.h"

double* mbu_alloc_arrays(size_t n, const size_t* size, double** const* fields, size_t extra) {
  size_t total = extra;
  for (size_t i = 0; i < n; i++) total += size[i];
  double* block = calloc(total, sizeof(double));
  for (size_t i = 0; block && i < n; i++) *fields[i] = i ? *fields[i - 1] + size[i - 1] : block;
  return block;
}

double mbu_norm_inf(int n, const double* x) {
  /* two running maxima without branches, NaN noted apart: it wins, as with fmax it would not */
  double v0 = 0, v1 = 0;
  int nan = 0, i = 0;
  for (; i + 1 < n; i += 2) {
    const double a0 = fabs(x[i]), a1 = fabs(x[i + 1]);
    v0 = a0 > v0 ? a0 : v0;
    v1 = a1 > v1 ? a1 : v1;
    nan |= (a0 != a0) | (a1 != a1);
  }
  if (i < n) {
    const double a0 = fabs(x[i]);
    v0 = a0 > v0 ? a0 : v0;
    nan |= a0 != a0;
  }
  return nan ? NAN : v0 > v1 ? v0 : v1;
}

int mbu_index_max_abs(int n, const double* x) {
  int k = 0;
  for (int i = 1; i < n; i++)
    if (fabs(x[i]) > fabs(x[k])) k = i;
  return k;
}

int mbu_all_finite(int n, const double* x) {
  for (int i = 0; i < n; i++)
    if (!isfinite(x[i])) return 0;
  return 1;
}

static int ascending(const void* a, const void* b) {
  const int x = *(const int*)a, y = *(const int*)b;
  return (x > y) - (x < y);
}

int mbu_sort_unique(int* list, int n) {
  qsort(list, (size_t)n, sizeof(int), ascending);
  int u = 0;
  for (int k = 0; k < n; k++)
    if (u == 0 || list[k] != list[u - 1]) list[u++] = list[k];
  return u;
}
