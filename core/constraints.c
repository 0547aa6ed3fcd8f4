/* Constraints Phi(q, t) = 0 of the motion, their Jacobian Phi_q, time derivatives, the
   acceleration remainder dPhi_q/dt qd + dPhi_t/dt and Hessian products. Every constraint is one or
   two dot products of linear vectors (seed 001, section 2: quadratic constraints in natural
   coordinates), so all derivatives are exact and cheap. */
#include <math.h>
#include <string.h>

#include "internal.h"

/* target e(t) = value + f(t) with its first two time derivatives */
void mb_con_target(const mb_model* m, double value, int func, double t, double* e) {
  e[0] = value, e[1] = e[2] = 0;
  if (func < 0) return;
  double f, fd, fdd;
  mb_func_eval(m, func, t, &f, &fd, &fdd);
  e[0] += f, e[1] = fd, e[2] = fdd;
}

/* dot product a . b of two linear vectors, its rate, the velocity product 2 adot . bdot, and
   optionally its Jacobian row scaled by s added to row */
static double dot_term(const mb_model* m, int a, int b, const double* q, const double* qd, double s,
                       double* row, double* rate, double* vel_product) {
  double va[3], vb[3];
  mb_lvec_eval(m, a, q, va);
  mb_lvec_eval(m, b, q, vb);
  if (row) {
    mb_lvec_add_jtw(m, a, s, vb, row);
    mb_lvec_add_jtw(m, b, s, va, row);
  }
  if (qd) {
    double ra[3], rb[3];
    mb_lvec_rate(m, a, qd, ra);
    mb_lvec_rate(m, b, qd, rb);
    *rate = mbu_dot3(ra, vb) + mbu_dot3(va, rb);
    *vel_product = 2 * mbu_dot3(ra, rb);
  }
  return mbu_dot3(va, vb);
}

double mb_con_eval(const mb_model* m, int kind, const int* lv, double value, int func, double t,
                   const double* q, const double* qd, double* row, double* rate_terms) {
  double e[3];
  mb_con_target(m, value, func, t, e);
  double sd = 0, sv = 0;
  if (kind == MB_CON_DOT) {
    double s = dot_term(m, lv[0], lv[1], q, qd, 1, row, &sd, &sv);
    if (rate_terms) rate_terms[0] = -e[1], rate_terms[1] = sv - e[2];
    return s - e[0];
  }
  /* angle: Phi = cos(e) s - sin(e) c = sin(theta - e) with s = a0.b0, c = a1.b1 */
  const double C = cos(e[0]), S = sin(e[0]);
  double cd = 0, cv = 0;
  double s = dot_term(m, lv[0], lv[1], q, qd, C, row, &sd, &sv);
  double c = dot_term(m, lv[2], lv[3], q, qd, -S, row, &cd, &cv);
  if (rate_terms) {
    rate_terms[0] = -e[1] * (S * s + C * c);
    rate_terms[1] = C * sv - S * cv - 2 * e[1] * (S * sd + C * cd) - e[2] * (S * s + C * c) -
                    e[1] * e[1] * (C * s - S * c);
  }
  return C * s - S * c;
}

void mb_constraints(const mb_model* m, mb_data* d) {
  const int nq = m->nq;
  memset(d->phiq, 0, sizeof(double) * (size_t)m->ncon * nq);
  for (int i = 0; i < m->ncon; i++) {
    double rt[2];
    d->phi[i] = mb_con_eval(m, m->con_kind[i], m->con_lvec + 4 * i, m->con_value[i], m->con_func[i],
                            d->t, d->q, d->qd, d->phiq + (size_t)i * nq, rt);
    d->phit[i] = rt[0];
    d->phidd_rhs[i] = rt[1];
  }
}

void mb_constraint_values(const mb_model* m, const double* q, double t, double* phi) {
  for (int i = 0; i < m->ncon; i++)
    phi[i] = mb_con_eval(m, m->con_kind[i], m->con_lvec + 4 * i, m->con_value[i], m->con_func[i], t,
                         q, NULL, NULL, NULL);
}

void mb_constraints_add_hessian(const mb_model* m, const mb_data* d, const double* w, double s,
                                double* A) {
  for (int i = 0; i < m->ncon; i++) mbd_expr_hessian(m, d, i, s * w[i], A);
}
