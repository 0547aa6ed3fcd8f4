/* Small helpers on vectors. */
#include <math.h>

#include "internal.h"

double mbu_norm_inf(int n, const double* x) {
  double v = 0;
  for (int i = 0; i < n; i++) {
    const double a = fabs(x[i]);
    if (a > v || a != a) v = a; /* NaN wins, as with fmax it would not */
  }
  return v;
}

int mbu_all_finite(int n, const double* x) {
  for (int i = 0; i < n; i++)
    if (!isfinite(x[i])) return 0;
  return 1;
}
