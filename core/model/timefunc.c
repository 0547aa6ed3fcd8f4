/* Scalar functions of time: constants, natural cubic splines through tables, polynomials and
   harmonics, with their first and second derivatives (drivers need Phi_t and Phi_tt). */
#include <math.h>

#include "internal.h"

void mbu_spline_setup(int n, const double* t, const double* y, double* ypp, double* work) {
  /* natural spline: ypp[0] = ypp[n-1] = 0, tridiagonal solve (Thomas algorithm) for the rest */
  ypp[0] = ypp[n - 1] = 0;
  if (n < 3) return;
  double* c = work; /* (n) modified super-diagonal */
  double* r = work + n;
  for (int i = 1; i < n - 1; i++) {
    double h0 = t[i] - t[i - 1], h1 = t[i + 1] - t[i];
    double a = h0 / 6, b = (h0 + h1) / 3, cc = h1 / 6;
    double rhs = (y[i + 1] - y[i]) / h1 - (y[i] - y[i - 1]) / h0;
    double denom = b - (i > 1 ? a * c[i - 1] : 0);
    c[i] = cc / denom;
    r[i] = (rhs - (i > 1 ? a * r[i - 1] : 0)) / denom;
  }
  ypp[n - 2] = r[n - 2];
  for (int i = n - 3; i >= 1; i--) ypp[i] = r[i] - c[i] * ypp[i + 1];
}

static void table_eval(int n, const double* y, const double* t, const double* ypp, double x,
                       double* value, double* rate, double* accel) {
  /* held constant outside the table */
  if (x < t[0] || x > t[n - 1]) {
    *value = x <= t[0] ? y[0] : y[n - 1];
    *rate = *accel = 0;
    return;
  }
  int lo = 0, hi = n - 1;
  while (hi - lo > 1) {
    int mid = (lo + hi) / 2;
    if (t[mid] <= x)
      lo = mid;
    else
      hi = mid;
  }
  double h = t[hi] - t[lo];
  double A = (t[hi] - x) / h, B = (x - t[lo]) / h;
  *value =
      A * y[lo] + B * y[hi] + ((A * A * A - A) * ypp[lo] + (B * B * B - B) * ypp[hi]) * h * h / 6;
  *rate =
      (y[hi] - y[lo]) / h - (3 * A * A - 1) * h / 6 * ypp[lo] + (3 * B * B - 1) * h / 6 * ypp[hi];
  *accel = A * ypp[lo] + B * ypp[hi];
}

/* Uniform cubic B-spline with n control values c on [t0, t1]: the segment of t, its local
   coordinate and the four basis weights with their first and second derivatives in t. */
static int bspline_basis(int n, double t0, double t1, double t, double* B, double* dB,
                         double* ddB) {
  const double span = (t1 - t0) / (n - 3);
  double x = (t - t0) / span;
  int held = 0;
  if (x < 0) x = 0, held = 1;
  if (x > n - 3) x = n - 3, held = 1;
  int i = (int)floor(x);
  if (i > n - 4) i = n - 4;
  const double u = x - i, v = 1 - u;
  B[0] = v * v * v / 6;
  B[1] = (3 * u * u * u - 6 * u * u + 4) / 6;
  B[2] = (-3 * u * u * u + 3 * u * u + 3 * u + 1) / 6;
  B[3] = u * u * u / 6;
  const double s = held ? 0 : 1 / span, s2 = s * s;
  dB[0] = -v * v / 2 * s, dB[1] = (3 * u * u - 4 * u) / 2 * s;
  dB[2] = (-3 * u * u + 2 * u + 1) / 2 * s, dB[3] = u * u / 2 * s;
  ddB[0] = v * s2, ddB[1] = (3 * u - 2) * s2, ddB[2] = (-3 * u + 1) * s2, ddB[3] = u * s2;
  return i;
}

static void bspline_eval(int n, const double* c, double t0, double t1, double t, double* value,
                         double* rate, double* accel) {
  double B[4], dB[4], ddB[4];
  int i = bspline_basis(n, t0, t1, t, B, dB, ddB);
  *value = *rate = *accel = 0;
  for (int j = 0; j < 4; j++)
    *value += c[i + j] * B[j], *rate += c[i + j] * dB[j], *accel += c[i + j] * ddB[j];
}

void mbu_bspline_support(int n, double t0, double t1, int j, double* lo, double* hi) {
  const double span = (t1 - t0) / (n - 3);
  *lo = j <= 3 ? -INFINITY : t0 + (j - 3) * span;
  *hi = j >= n - 4 ? INFINITY : t0 + (j + 1) * span;
}

void mb_func_eval(const mb_model* m, int f, double t, double* value, double* rate, double* accel) {
  double v = 0, r = 0, a = 0;
  const double* c = m->func_data + m->func_adr[f];
  const int n = m->func_num[f];
  switch ((mb_func_type)m->func_type[f]) {
    case MB_FUNC_CONSTANT:
      v = c[0];
      break;
    case MB_FUNC_TABLE:
      table_eval(n, c, c + n, c + 2 * n, t, &v, &r, &a);
      break;
    case MB_FUNC_POLYNOMIAL:
      /* Horner for the value and both derivatives */
      for (int k = n - 1; k >= 0; k--) {
        a = a * t + 2 * r;
        r = r * t + v;
        v = v * t + c[k];
      }
      break;
    case MB_FUNC_BSPLINE:
      bspline_eval(n, c, c[n], c[n + 1], t, &v, &r, &a);
      break;
    case MB_FUNC_HARMONIC: {
      double arg = c[2] * t + c[3];
      v = c[0] + c[1] * sin(arg);
      r = c[1] * c[2] * cos(arg);
      a = -c[1] * c[2] * c[2] * sin(arg);
      break;
    }
  }
  if (value) *value = v;
  if (rate) *rate = r;
  if (accel) *accel = a;
}

void mbd_func_param(const mb_model* m, const mb_model* dm, int f, double t, double* value,
                    double* rate, double* accel) {
  const double* c = m->func_data + m->func_adr[f];
  const double* dc = dm->func_data + m->func_adr[f];
  const int n = m->func_num[f];
  double v = 0, r = 0, a = 0;
  switch ((mb_func_type)m->func_type[f]) {
    case MB_FUNC_CONSTANT:
      v = dc[0];
      break;
    case MB_FUNC_TABLE:
      /* linear in the sample values: the same spline through their derivatives; times are fixed */
      table_eval(n, dc, c + n, dc + 2 * n, t, &v, &r, &a);
      break;
    case MB_FUNC_POLYNOMIAL:
      for (int k = n - 1; k >= 0; k--) {
        a = a * t + 2 * r;
        r = r * t + v;
        v = v * t + dc[k];
      }
      break;
    case MB_FUNC_BSPLINE:
      /* linear in the control values; the time span is fixed */
      bspline_eval(n, dc, c[n], c[n + 1], t, &v, &r, &a);
      break;
    case MB_FUNC_HARMONIC: {
      /* f = c0 + c1 sin(c2 t + c3) */
      double arg = c[2] * t + c[3], darg = dc[2] * t + dc[3];
      double S = sin(arg), C = cos(arg);
      v = dc[0] + dc[1] * S + c[1] * C * darg;
      r = dc[1] * c[2] * C + c[1] * dc[2] * C - c[1] * c[2] * S * darg;
      a = -dc[1] * c[2] * c[2] * S - 2 * c[1] * c[2] * dc[2] * S - c[1] * c[2] * c[2] * C * darg;
      break;
    }
  }
  if (value) *value = v;
  if (rate) *rate = r;
  if (accel) *accel = a;
}
