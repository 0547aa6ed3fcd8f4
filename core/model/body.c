/* A body's frame in natural coordinates: its angular velocity from the rates of its axes, and
   the generalised force of a torque on it with its stiffness and parameter derivative (torque
   elements and torque actuators of controllers). */
#include "internal.h"

void mb_body_torque(const mb_model* m, mb_data* d, int body, const double* tau,
                    const mb_jacobian* jac) {
  const int* E = m->body_axes + 3 * body;
  if (m->dim == 2) {
    /* planar: virtual rotation d theta = (R90 Ex) . d Ex for the unit frame axis Ex */
    double ex[3];
    mb_lvec_eval(m, E[0], d->q, ex);
    double w[3] = {-tau[2] * ex[1], tau[2] * ex[0], 0};
    mb_lvec_add_jtw(m, E[0], 1, w, d->force);
    if (jac) {
      double R90[9] = {0, -1, 0, 1, 0, 0, 0, 0, 0};
      mb_lvec_add_jtgj(m, E[0], E[0], -tau[2] * jac->ks, R90, jac->K);
    }
    return;
  }
  /* spatial: virtual rotation d phi = 1/2 sum_k E_k x d E_k for the orthonormal frame axes */
  double T[9] = {0, -tau[2], tau[1], tau[2], 0, -tau[0], -tau[1], tau[0], 0};
  for (int k = 0; k < 3; k++) {
    double e[3], w[3];
    mb_lvec_eval(m, E[k], d->q, e);
    mbu_cross3(tau, e, w);
    mb_lvec_add_jtw(m, E[k], 0.5, w, d->force);
    if (jac) mb_lvec_add_jtgj(m, E[k], E[k], -0.5 * jac->ks, T, jac->K);
  }
}

void mb_body_angular_velocity(const mb_model* m, int body, const double* q, const double* qd,
                              double* w) {
  mb_frame_angular_velocity(m, m->body_axes + 3 * body, q, qd, w);
}

void mb_frame_angular_velocity(const mb_model* m, const int* E, const double* q, const double* qd,
                               double* w) {
  w[0] = w[1] = w[2] = 0;
  for (int k = 0; k < (m->dim == 2 ? 1 : 3); k++) {
    double e[3], ed[3], c[3];
    mb_lvec_eval(m, E[k], q, e);
    mb_lvec_rate(m, E[k], qd, ed);
    mbu_cross3(e, ed, c);
    double s = m->dim == 2 ? 1 : 0.5;
    for (int r = 0; r < 3; r++) w[r] += s * c[r];
  }
}

void mbd_body_torque_param(const mb_model* m, const mb_model* dm, const mb_data* d, int body,
                           const double* tau, const double* dtau, double* dQ) {
  static const double zero[3] = {0, 0, 0};
  const int* E = m->body_axes + 3 * body;
  if (!dtau) dtau = zero;
  if (m->dim == 2) {
    /* Q = tau J_x^T R90 E_x */
    double ex[3], dex[3];
    mb_lvec_eval(m, E[0], d->q, ex);
    mb_lvec_eval(dm, E[0], d->q, dex);
    double w[3] = {-dtau[2] * ex[1] - tau[2] * dex[1], dtau[2] * ex[0] + tau[2] * dex[0], 0};
    double w0[3] = {-tau[2] * ex[1], tau[2] * ex[0], 0};
    mb_lvec_add_jtw(m, E[0], 1, w, dQ);
    mb_lvec_add_jtw(dm, E[0], 1, w0, dQ);
    return;
  }
  /* Q = 1/2 sum_k J_k^T (tau x E_k) */
  for (int k = 0; k < 3; k++) {
    double e[3], de[3], w[3], t1[3], t2[3];
    mb_lvec_eval(m, E[k], d->q, e);
    mb_lvec_eval(dm, E[k], d->q, de);
    mbu_cross3(tau, e, w);
    mbu_cross3(dtau, e, t1);
    mbu_cross3(tau, de, t2);
    for (int r = 0; r < 3; r++) t1[r] += t2[r];
    mb_lvec_add_jtw(dm, E[k], 0.5, w, dQ);
    mb_lvec_add_jtw(m, E[k], 0.5, t1, dQ);
  }
}
