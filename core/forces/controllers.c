/* PID controllers as force elements (their signals: controller_signals.c). Each controller owns a
   block of coordinates w of unit mass, driven by its error: w'' = e, so that z = w' is the integral
   of e and the Newmark rule integrates it with the mechanics; forward and adjoint sensitivities
   then cover the controller states with no special case. The control u = kp e + ki z + kd de/dt
   (optionally U tanh(u/U)) acts through a force at a marker or a torque on a body; e = r(t) - sum_j
   w_j s_j over output columns, and de/dt comes from the sensors' rates, not from differencing. */
#include <string.h>

#include "internal.h"

/* the actuator: Q += u b with b its generalised direction; its Jacobian -u db/dq into jac (may be
   NULL) */
static void actuate(const mb_model* m, mb_data* d, int i, double u, const mb_jacobian* jac) {
  const double* dir = m->ctrl_dir + 3 * i;
  if (m->ctrl_actuator[i] == MB_ACTUATOR_FORCE) {
    const double F[3] = {u * dir[0], u * dir[1], u * dir[2]};
    mb_lvec_add_jtw(m, m->ctrl_lvec[i], 1, F, d->force);
    return;
  }
  const double tau[3] = {u * dir[0], u * dir[1], u * dir[2]};
  mb_body_torque(m, d, m->ctrl_body[i], tau, jac);
}

/* b (nq): the generalised direction of the actuator at q */
static void actuator_direction(const mb_model* m, mb_data* d, int i, double* b) {
  /* Q of a unit control, with the forces array borrowed */
  double* keep = d->force;
  d->force = b;
  memset(b, 0, sizeof(double) * m->nq);
  actuate(m, d, i, 1, NULL);
  d->force = keep;
}

/* A += s b v^T on the system pattern (the entries where both are nonzero are in it: the pattern
   couples the actuator's blocks with those the error reads) */
static void add_outer(const mb_model* m, double* A, double s, const double* b, const double* v) {
  const mb_pattern* sys = m->structure->sys;
  for (int r = 0; r < m->nq; r++) {
    if (b[r] == 0) continue;
    for (int j = 0; j < m->nq; j++)
      if (v[j] != 0) A[mb_pattern_entry(sys, r, j)] += s * b[r] * v[j];
  }
}

void mb_controller_forces(const mb_model* m, mb_data* d, const mb_jacobian* jac) {
  const int nq = m->nq;
  double *e_q = d->ctrl_work + 2 * nq, *e_qd = d->ctrl_work + 3 * nq;
  double *edot_qd = d->ctrl_work + 4 * nq, *b = d->ctrl_work + 5 * nq;
  for (int i = 0; i < m->nctrl; i++) {
    const double* gain = m->ctrl_gain + 4 * i;
    const int w = m->ctrl_qadr[i];
    mb_controller_state s =
        mb_controller_eval(m, d, i, jac ? e_q : NULL, jac ? e_qd : NULL, jac ? edot_qd : NULL);
    actuate(m, d, i, s.u, jac);
    d->force[w] += s.e; /* w'' = e */
    if (!jac) continue;
    /* K = -dQ/dq, C = -dQ/dqd: the control's partials along b, and those of e for w */
    actuator_direction(m, d, i, b);
    double *uq = d->ctrl_work + 6 * nq, *uqd = d->ctrl_work + 7 * nq;
    for (int j = 0; j < nq; j++) {
      uq[j] = s.slope * gain[0] * e_q[j];
      uqd[j] = s.slope * (gain[0] * e_qd[j] + gain[2] * edot_qd[j] + (j == w) * gain[1]);
    }
    add_outer(m, jac->K, -jac->ks, b, uq);
    add_outer(m, jac->C, -jac->cs, b, uqd);
    /* the row of w'' = e */
    memset(b, 0, sizeof(double) * nq);
    b[w] = 1;
    add_outer(m, jac->K, -jac->ks, b, e_q);
    add_outer(m, jac->C, -jac->cs, b, e_qd);
  }
}

void mbd_controllers_param(const mb_model* m, const mb_model* dm, const mb_data* d, double* dQ) {
  const int nq = m->nq;
  mb_data* scratch = (mb_data*)d; /* only the controller scratch and a borrowed force array */
  double* b = scratch->ctrl_work + 5 * nq;
  for (int i = 0; i < m->nctrl; i++) {
    mb_controller_state s = mb_controller_eval(m, d, i, NULL, NULL, NULL);
    double de, du;
    mbd_controller_state_param(m, dm, d, i, &s, &de, &du);
    actuator_direction(m, scratch, i, b);
    for (int j = 0; j < nq; j++) dQ[j] += du * b[j];
    dQ[m->ctrl_qadr[i]] += de;
    /* the actuator's own dependence on the parameter: Q = u b(q; rho) */
    const double* dir = m->ctrl_dir + 3 * i;
    if (m->ctrl_actuator[i] == MB_ACTUATOR_FORCE) {
      const double F[3] = {s.u * dir[0], s.u * dir[1], s.u * dir[2]};
      mb_lvec_add_jtw(dm, m->ctrl_lvec[i], 1, F, dQ);
    } else {
      const double tau[3] = {s.u * dir[0], s.u * dir[1], s.u * dir[2]};
      mbd_body_torque_param(m, dm, d, m->ctrl_body[i], tau, NULL, dQ);
    }
  }
}

double mb_controller_power(const mb_model* m, mb_data* d) {
  double power = 0, *b = d->ctrl_work + 5 * m->nq;
  for (int i = 0; i < m->nctrl; i++) {
    mb_controller_state s = mb_controller_eval(m, d, i, NULL, NULL, NULL);
    actuator_direction(m, d, i, b);
    for (int j = 0; j < m->nq; j++) power += s.u * b[j] * d->qd[j];
  }
  return power;
}
