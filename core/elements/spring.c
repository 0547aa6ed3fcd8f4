/* The spring-damper-actuator element between two points: tension
   f = k (l - l0) + c dl/dt + f0 along the line of the points, its generalised force with the exact
   stiffness and damping, its power and stored energy, and its explicit parameter derivatives. */
#include <string.h>

#include "internal.h"
#include "structure.h"

/* spring geometry: d = r2 - r1, length, unit direction, rate of d and of the length */
void mb_spring_eval(const mb_model* m, int i, const double* q, const double* qd,
                    mb_spring_state* s) {
  const int a = m->force_lvec[2 * i], b = m->force_lvec[2 * i + 1];
  double ra[3], rb[3], va[3], vb[3];
  mb_lvec_eval(m, a, q, ra);
  mb_lvec_eval(m, b, q, rb);
  mb_lvec_rate(m, a, qd, va);
  mb_lvec_rate(m, b, qd, vb);
  for (int k = 0; k < 3; k++) s->d[k] = rb[k] - ra[k], s->dd[k] = vb[k] - va[k];
  s->length = mbu_norm3(s->d);
  /* a spring of zero length has no direction: it then exerts no force */
  double inv = s->length > 1e-12 ? 1 / s->length : 0;
  for (int k = 0; k < 3; k++) s->u[k] = s->d[k] * inv;
  s->rate = mbu_dot3(s->u, s->dd);
}

static double spring_tension(const mb_model* m, int i, const mb_spring_state* s) {
  return m->force_k[i] * (s->length - m->force_l0[i]) + m->force_c[i] * s->rate + m->force_f0[i];
}

void mb_spring_force(const mb_model* m, mb_data* d, int i, const mb_jacobian* jac) {
  const int a = m->force_lvec[2 * i], b = m->force_lvec[2 * i + 1];
  mb_spring_state s;
  mb_spring_eval(m, i, d->q, d->qd, &s);
  const double f = spring_tension(m, i, &s);
  /* tension pulls the points together: Q = -f J_d^T u */
  mb_lvec_add_jtw(m, b, -f, s.u, d->force);
  mb_lvec_add_jtw(m, a, f, s.u, d->force);
  if (!jac || s.length <= 1e-12) return;
  /* K = J_d^T [k u u^T + (f/l)(I - u u^T) + (c/l) u (dd - u rate)^T] J_d, C = c J_d^T u u^T J_d,
     on the element's blocks with J_d = J_b - J_a */
  const double k = m->force_k[i], c = m->force_c[i], l = s.length;
  const int dim = m->dim;
  const mb_local L = mb_force_local(m, i);
  const int n = dim * L.nb;
  double G[9], Ja[3 * MB_LOCAL_COORDS], Jd[3 * MB_LOCAL_COORDS], GJ[3 * MB_LOCAL_COORDS];
  double w[MB_LOCAL_COORDS];
  for (int r = 0; r < 3; r++)
    for (int j = 0; j < 3; j++) {
      double uu = s.u[r] * s.u[j];
      G[3 * r + j] =
          k * uu + f / l * ((r == j) - uu) + c / l * s.u[r] * (s.dd[j] - s.u[j] * s.rate);
    }
  mb_local_jacobian(m, &L, a, Ja);
  mb_local_jacobian(m, &L, b, Jd);
  for (int e = 0; e < dim * n; e++) Jd[e] -= Ja[e];
  mb_local_premul(n, G, 3, dim, Jd, dim, GJ);
  mb_local_add_ptq(m, &L, jac->K, jac->ks, Jd, GJ, dim);
  if (c == 0) return;
  mb_local_premul(n, s.u, 3, 1, Jd, dim, w);
  mb_local_add_ptq(m, &L, jac->C, jac->cs * c, w, w, 1);
}

double mb_spring_length(const mb_model* m, const mb_data* d, int i, double* tension) {
  mb_spring_state s;
  mb_spring_eval(m, i, d->q, d->qd, &s);
  if (tension) *tension = spring_tension(m, i, &s);
  return s.length;
}

double mb_spring_damper_power(const mb_model* m, const mb_data* d, int i) {
  mb_spring_state s;
  mb_spring_eval(m, i, d->q, d->qd, &s);
  return (m->force_c[i] * s.rate + m->force_f0[i]) * s.rate;
}

double mb_spring_elastic_energy(const mb_model* m, const mb_data* d, int i) {
  mb_spring_state s;
  mb_spring_eval(m, i, d->q, d->qd, &s);
  double stretch = s.length - m->force_l0[i];
  return 0.5 * m->force_k[i] * stretch * stretch;
}

void mbd_spring_param(const mb_model* m, const mb_model* dm, const mb_data* d, int i, double* dQ) {
  const int a = m->force_lvec[2 * i], b = m->force_lvec[2 * i + 1];
  double ra[3], rb[3], va[3], vb[3], dra[3], drb[3], dva[3], dvb[3];
  mb_lvec_eval(m, a, d->q, ra), mb_lvec_eval(m, b, d->q, rb);
  mb_lvec_rate(m, a, d->qd, va), mb_lvec_rate(m, b, d->qd, vb);
  mb_lvec_eval(dm, a, d->q, dra), mb_lvec_eval(dm, b, d->q, drb);
  mb_lvec_rate(dm, a, d->qd, dva), mb_lvec_rate(dm, b, d->qd, dvb);
  double dd[3], ddot[3], u[3], du[3], ddd[3], dddot[3];
  for (int k = 0; k < 3; k++)
    dd[k] = rb[k] - ra[k], ddot[k] = vb[k] - va[k], ddd[k] = drb[k] - dra[k],
    dddot[k] = dvb[k] - dva[k];
  const double l = mbu_norm3(dd);
  if (l <= 1e-12) return;
  for (int k = 0; k < 3; k++) u[k] = dd[k] / l;
  const double rate = mbu_dot3(u, ddot), dl = mbu_dot3(u, ddd);
  for (int k = 0; k < 3; k++) du[k] = (ddd[k] - u[k] * dl) / l;
  const double drate = mbu_dot3(du, ddot) + mbu_dot3(u, dddot);
  const double k = m->force_k[i], c = m->force_c[i];
  const double f = k * (l - m->force_l0[i]) + c * rate + m->force_f0[i];
  const double df = dm->force_k[i] * (l - m->force_l0[i]) + k * (dl - dm->force_l0[i]) +
                    dm->force_c[i] * rate + c * drate + dm->force_f0[i];
  /* Q = -f J_d^T u with J_d = J_b - J_a */
  double w[3];
  for (int r = 0; r < 3; r++) w[r] = -df * u[r] - f * du[r];
  mb_lvec_add_jtw(m, b, 1, w, dQ);
  mb_lvec_add_jtw(m, a, -1, w, dQ);
  mb_lvec_add_jtw(dm, b, -f, u, dQ);
  mb_lvec_add_jtw(dm, a, f, u, dQ);
}
