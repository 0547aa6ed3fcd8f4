/* Functionals psi = sum of final terms w at t_F + integral over [0, t_F] of the integral terms g,
   each term a shape of one output column s and a reference r(t): weight (s - r)^2, weight s, or
   weight (sqrt((s - r)^2 + eps^2) - eps). Values, partial derivatives with respect to q, qd, qdd
   (through the output partials of sensor_partials.c) and explicit parameter derivatives (through
   the outputs, the reference, the weight and eps of a tangent model). */
#include <math.h>
#include <string.h>

#include "internal.h"
#include "mbopt/sensitivity.h"

/* the partial derivatives of one term with respect to its inputs */
typedef struct term_partials {
  double ds, dr, dweight, deps;
} term_partials;

/* reference r(t) of term j at the time of d (0 without one) */
static double term_reference(const mb_model* m, const mb_data* d, int j) {
  double r = 0;
  if (m->fterm_ref[j] >= 0) mb_func_eval(m, m->fterm_ref[j], d->t, &r, NULL, NULL);
  return r;
}

/* value of term j for output value s, and its partials (p may be NULL) */
static double term_eval(const mb_model* m, const mb_data* d, int j, double s, term_partials* p) {
  const double w = m->fterm_weight[j], eps = m->fterm_eps[j];
  term_partials tp = {0, 0, 0, 0};
  double value = 0;
  switch ((mb_shape)m->fterm_shape[j]) {
    case MB_SHAPE_SQUARED_ERROR: {
      const double e = s - term_reference(m, d, j);
      value = w * e * e;
      tp.ds = 2 * w * e, tp.dr = -tp.ds, tp.dweight = e * e;
      break;
    }
    case MB_SHAPE_VALUE:
      /* the value itself: no reference */
      value = w * s;
      tp.ds = w, tp.dweight = s;
      break;
    case MB_SHAPE_SMOOTH_ABS: {
      const double e = s - term_reference(m, d, j), h = sqrt(e * e + eps * eps);
      value = w * (h - eps);
      tp.ds = h > 0 ? w * e / h : 0, tp.dr = -tp.ds, tp.dweight = h - eps;
      tp.deps = h > 0 ? w * (eps / h - 1) : 0;
      break;
    }
  }
  if (p) *p = tp;
  return value;
}

/* whether term j belongs to functional f and kind `final` */
static int term_of(const mb_model* m, int j, int f, int final) {
  return m->fterm_functional[j] == f && (m->fterm_final[j] != 0) == (final != 0);
}

double mb_functional_value(const mb_model* m, const mb_data* d, int f, int final) {
  if (f < 0 || f >= m->nfunctional) return NAN;
  double sum = 0;
  for (int j = 0; j < m->nfterm; j++) {
    if (!term_of(m, j, f, final)) continue;
    const double s = mbd_output_add_partials(m, d, m->fterm_column[j], 0, NULL, NULL, NULL);
    sum += term_eval(m, d, j, s, NULL);
  }
  return sum;
}

void mb_functionals_accumulate(const mb_model* m, const mb_data* d, long n, long nstep,
                               double* psi) {
  const double h = m->opt.step;
  const double weight = n == 0 ? (nstep > 0 ? 0.5 * h : 0) : n == nstep ? 0.5 * h : h;
  for (int f = 0; f < m->nfunctional; f++) {
    psi[f] += weight * mb_functional_value(m, d, f, 0);
    if (n == nstep) psi[f] += mb_functional_value(m, d, f, 1);
  }
}

double mbd_functional_partials(const mb_model* m, const mb_data* d, int f, int final, double* dq,
                               double* dqd, double* dqdd) {
  const size_t n = sizeof(double) * (size_t)m->nq;
  if (dq) memset(dq, 0, n);
  if (dqd) memset(dqd, 0, n);
  if (dqdd) memset(dqdd, 0, n);
  if (f < 0 || f >= m->nfunctional) return NAN;
  double sum = 0;
  for (int j = 0; j < m->nfterm; j++) {
    if (!term_of(m, j, f, final)) continue;
    /* the output value, the term's slope in it, then the output partials times the slope */
    const int col = m->fterm_column[j];
    term_partials p;
    const double s = mbd_output_add_partials(m, d, col, 0, NULL, NULL, NULL);
    sum += term_eval(m, d, j, s, &p);
    mbd_output_add_partials(m, d, col, p.ds, dq, dqd, dqdd);
  }
  return sum;
}

int mbd_functional_lambda(const mb_model* m, const mb_data* d, int f, int final, double* dlam) {
  memset(dlam, 0, sizeof(double) * (size_t)m->ncon);
  if (f < 0 || f >= m->nfunctional) return 0;
  int reading = 0;
  for (int j = 0; j < m->nfterm; j++) {
    const int col = m->fterm_column[j];
    if (!term_of(m, j, f, final) || !mb_output_reads_multipliers(m, col)) continue;
    term_partials p;
    term_eval(m, d, j, mbd_output_add_partials(m, d, col, 0, NULL, NULL, NULL), &p);
    mbd_output_add_lambda_partials(m, d, col, p.ds, dlam);
    reading++;
  }
  return reading;
}

double mbd_functional_param(const mb_model* m, const mb_model* dm, const mb_data* d, int f,
                            int final) {
  if (f < 0 || f >= m->nfunctional) return NAN;
  double sum = 0;
  for (int j = 0; j < m->nfterm; j++) {
    if (!term_of(m, j, f, final)) continue;
    /* through the output, the reference, the weight and the smoothing */
    const int col = m->fterm_column[j];
    term_partials p;
    const double s = mbd_output_add_partials(m, d, col, 0, NULL, NULL, NULL);
    term_eval(m, d, j, s, &p);
    double dr = 0;
    if (m->fterm_ref[j] >= 0 && p.dr != 0)
      mbd_func_param(m, dm, m->fterm_ref[j], d->t, &dr, NULL, NULL);
    sum += p.ds * mbd_output_param(m, dm, d, col) + p.dr * dr + p.dweight * dm->fterm_weight[j] +
           p.deps * dm->fterm_eps[j];
  }
  return sum;
}
