/* Generalised forces Q of gravity and of every force element, with the exact stiffness
   K = -dQ/dq and damping C = -dQ/dqd the Newton matrix needs (seed 001, eq. 5), and their
   explicit parameter derivatives for the sensitivities: the sum over the element types, each in
   its own module (spring.c, tyre.c, body.c for torques, controllers.c, friction.c); point forces
   and torques, functions of time, here. */
#include <math.h>
#include <string.h>

#include "internal.h"

/* components of a point force or torque at time t */
static void load_value(const mb_model* m, int i, double t, double* v) {
  for (int k = 0; k < 3; k++) {
    int f = m->force_func[3 * i + k];
    v[k] = 0;
    if (f >= 0) mb_func_eval(m, f, t, &v[k], NULL, NULL);
  }
}

/* torque element i: its components as functions of time (planar: func[0] about z) */
static void torque_value(const mb_model* m, int i, double t, double* tau) {
  load_value(m, i, t, tau);
  if (m->dim == 2) tau[2] = tau[0], tau[0] = 0;
}

void mb_forces_into(const mb_model* m, mb_data* d, const mb_jacobian* jac) {
  memcpy(d->force, m->gravity_force, sizeof(double) * m->nq);
  for (int i = 0; i < m->nforce; i++) {
    switch ((mb_force_type)m->force_type[i]) {
      case MB_FORCE_SPRING:
        mb_spring_force(m, d, i, jac);
        break;
      case MB_FORCE_POINT: {
        double F[3];
        load_value(m, i, d->t, F);
        mb_lvec_add_jtw(m, m->force_lvec[2 * i], 1, F, d->force);
        break;
      }
      case MB_FORCE_TORQUE: {
        double tau[3];
        torque_value(m, i, d->t, tau);
        mb_body_torque(m, d, m->force_body[i], tau, jac);
        break;
      }
      case MB_FORCE_TYRE:
        mb_tyre_contact(m, d, i, jac);
        if (mb_tyre_has_slip(m, i)) mb_tyre_slip(m, d, i, jac);
        break;
    }
  }
  mb_controller_forces(m, d, jac);
  mb_friction_forces(m, d, jac);
}

void mb_forces(const mb_model* m, mb_data* d, int want_jac) {
  const mb_jacobian jac = {d->stiff, 1, d->damp, 1};
  if (want_jac) {
    memset(d->stiff, 0, sizeof(double) * m->structure->sys->nnz);
    memset(d->damp, 0, sizeof(double) * m->structure->sys->nnz);
  }
  mb_forces_into(m, d, want_jac ? &jac : NULL);
}

double mb_nonconservative_power(const mb_model* m, mb_data* d) {
  double power = mb_controller_power(m, d) + mb_friction_power(m, d);
  for (int i = 0; i < m->nforce; i++) {
    switch ((mb_force_type)m->force_type[i]) {
      case MB_FORCE_SPRING: {
        /* dampers and constant actuator forces; the elastic part is stored energy */
        if (m->force_c[i] == 0 && m->force_f0[i] == 0) break;
        power -= mb_spring_damper_power(m, d, i);
        break;
      }
      case MB_FORCE_POINT: {
        double F[3], v[3];
        load_value(m, i, d->t, F);
        mb_lvec_rate(m, m->force_lvec[2 * i], d->qd, v);
        power += mbu_dot3(F, v);
        break;
      }
      case MB_FORCE_TORQUE: {
        double tau[3], w[3];
        torque_value(m, i, d->t, tau);
        mb_body_angular_velocity(m, m->force_body[i], d->q, d->qd, w);
        power += mbu_dot3(tau, w);
        break;
      }
      case MB_FORCE_TYRE: {
        /* the tyre stores no energy: all its power counts as work */
        double p[3], v[3];
        mb_tyre_force t;
        mb_lvec_eval(m, m->force_lvec[2 * i], d->q, p);
        mb_lvec_rate(m, m->force_lvec[2 * i], d->qd, v);
        mb_tyre_eval(m, i, p, v, &t);
        power += t.Fz * v[2];
        if (mb_tyre_has_slip(m, i)) power += mb_tyre_slip_power(m, d, i);
        break;
      }
    }
  }
  return power;
}

/* ---------------------------------------------------------------------------------------------
   explicit parameter derivatives of Q through tangent models, for the sensitivity analysis
   (seed 001, eqs. 14-20) */

static void load_param(const mb_model* m, const mb_model* dm, int i, double t, double* v) {
  for (int k = 0; k < 3; k++) {
    int f = m->force_func[3 * i + k];
    v[k] = 0;
    if (f >= 0) mbd_func_param(m, dm, f, t, &v[k], NULL, NULL);
  }
}

static void torque_param(const mb_model* m, const mb_model* dm, const mb_data* d, int i,
                         double* dQ) {
  double tau[3], dtau[3];
  torque_value(m, i, d->t, tau);
  load_param(m, dm, i, d->t, dtau);
  if (m->dim == 2) dtau[2] = dtau[0], dtau[0] = 0;
  mbd_body_torque_param(m, dm, d, m->force_body[i], tau, dtau, dQ);
}

void mbd_forces_param(const mb_model* m, const mb_model* dm, const mb_data* d,
                      const unsigned char* active, double* dQ) {
  memcpy(dQ, dm->gravity_force, sizeof(double) * m->nq);
  for (int i = 0; i < m->nforce; i++) {
    if (active && !active[i]) continue;
    switch ((mb_force_type)m->force_type[i]) {
      case MB_FORCE_SPRING:
        mbd_spring_param(m, dm, d, i, dQ);
        break;
      case MB_FORCE_POINT: {
        /* Q = J_p^T F */
        double F[3], dF[3];
        load_value(m, i, d->t, F);
        load_param(m, dm, i, d->t, dF);
        mb_lvec_add_jtw(m, m->force_lvec[2 * i], 1, dF, dQ);
        mb_lvec_add_jtw(dm, m->force_lvec[2 * i], 1, F, dQ);
        break;
      }
      case MB_FORCE_TORQUE:
        torque_param(m, dm, d, i, dQ);
        break;
      case MB_FORCE_TYRE:
        mbd_tyre_contact_param(m, dm, d, i, dQ);
        if (mb_tyre_has_slip(m, i)) mbd_tyre_slip_param(m, dm, d, i, dQ);
        break;
    }
  }
  mbd_controllers_param(m, dm, d, dQ);
}
