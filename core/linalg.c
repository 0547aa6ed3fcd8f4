/* Small dense helpers on row-major arrays; factorisations go through LAPACKE. */
#include <math.h>

#include "internal.h"

void mbu_matvec(int n, const double* A, const double* x, double* y) {
  for (int i = 0; i < n; i++) {
    double sum = 0;
    for (int j = 0; j < n; j++) sum += A[i * n + j] * x[j];
    y[i] = sum;
  }
}

void mbu_add_gram(int nrow, int n, const double* J, const double* w, double s, double* A) {
  for (int r = 0; r < nrow; r++) {
    const double* row = J + r * n;
    const double sr = w ? s * w[r] : s;
    for (int i = 0; i < n; i++) {
      if (row[i] == 0) continue;
      const double si = sr * row[i];
      for (int j = 0; j < n; j++) A[i * n + j] += si * row[j];
    }
  }
}

void mbu_add_jtv(int nrow, int n, const double* J, const double* v, double s, double* y) {
  for (int r = 0; r < nrow; r++) {
    const double sv = s * v[r];
    if (sv == 0) continue;
    for (int j = 0; j < n; j++) y[j] += sv * J[r * n + j];
  }
}

void mbu_jv(int nrow, int n, const double* J, const double* x, double* y) {
  for (int r = 0; r < nrow; r++) {
    double sum = 0;
    for (int j = 0; j < n; j++) sum += J[r * n + j] * x[j];
    y[r] = sum;
  }
}

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
