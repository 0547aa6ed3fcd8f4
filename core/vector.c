/* Small helpers on vectors. */
#include <math.h>

#include "internal.h"

double mbu_norm_inf(int n, const double* x) {
  double v = 0;
  for (int i = 0; i < n; i++) v = fmax(v, fabs(x[i]));
  return v;
}

int mbu_all_finite(int n, const double* x) {
  for (int i = 0; i < n; i++)
    if (!isfinite(x[i])) return 0;
  return 1;
}
