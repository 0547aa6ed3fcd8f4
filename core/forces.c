/* Generalised forces Q of gravity, spring-damper-actuators, point forces and torques, with the
   exact stiffness K = -dQ/dq and damping C = -dQ/dqd the Newton matrix needs (seed 001, eq. 5),
   and their explicit parameter derivatives for the sensitivities. */
#include <math.h>
#include <string.h>

#include "internal.h"

/* spring geometry: d = r2 - r1, length, unit direction, rate of d and of the length */
typedef struct spring_state {
  double d[3], dd[3], u[3], length, rate;
} spring_state;

static void spring_eval(const mb_model* m, int i, const double* q, const double* qd,
                        spring_state* s) {
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

static double spring_tension(const mb_model* m, int i, const spring_state* s) {
  return m->force_k[i] * (s->length - m->force_l0[i]) + m->force_c[i] * s->rate + m->force_f0[i];
}

static void spring_force(const mb_model* m, mb_data* d, int i, const mb_jacobian* jac) {
  const int a = m->force_lvec[2 * i], b = m->force_lvec[2 * i + 1];
  spring_state s;
  spring_eval(m, i, d->q, d->qd, &s);
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

/* Tyre-road contact. The road height is h(x) = H (1 + tanh((x - x0)/w)) / 2 (flat at 0 for
   w = 0), its normal the global z. The penetration of the wheel of radius R with centre p is
   delta = R - (p_z - h(p_x)), its rate delta' = -(v_z - h'(p_x) v_x). The vertical force

     Fz = k e softplus(delta/e) + c delta' sigmoid(delta/e),  e = MB_TYRE_SMOOTH,

   is smooth in all arguments, vanishes out of contact and tends to k delta + c delta' in it. It
   acts at the contact point below the centre; being vertical, it exerts no moment about it. */
#define MB_TYRE_SMOOTH 1e-4

void mb_tyre_eval(const mb_model* m, int i, const double* p, const double* v, mb_tyre_force* o) {
  const double* road = m->force_road + 3 * i;
  const double k = m->force_k[i], c = m->force_c[i], e = MB_TYRE_SMOOTH;
  double h = 0, h1 = 0, h2 = 0;
  if (road[2] > 0) {
    double th = tanh((p[0] - road[0]) / road[2]), se2 = 1 - th * th;
    h = road[1] * (1 + th) / 2;
    h1 = road[1] * se2 / (2 * road[2]);
    h2 = -road[1] * th * se2 / (road[2] * road[2]);
  }
  const double delta = m->force_l0[i] - p[2] + h, rate = -v[2] + h1 * v[0], u = delta / e;
  const double sp = u > 0 ? u + log1p(exp(-u)) : log1p(exp(u));
  const double sg = u > 0 ? 1 / (1 + exp(-u)) : exp(u) / (1 + exp(u));
  const double fd = k * sg + c * rate * sg * (1 - sg) / e, fr = c * sg;
  o->Fz = k * e * sp + c * rate * sg;
  o->dp[0] = fd * h1 + fr * h2 * v[0], o->dp[1] = 0, o->dp[2] = -fd;
  o->dv[0] = fr * h1, o->dv[1] = 0, o->dv[2] = -fr;
  o->dkcr[0] = e * sp, o->dkcr[1] = rate * sg, o->dkcr[2] = fd;
}

static void tyre_force(const mb_model* m, mb_data* d, int i, const mb_jacobian* jac) {
  const int a = m->force_lvec[2 * i];
  double p[3], v[3];
  mb_tyre_force t;
  mb_lvec_eval(m, a, d->q, p);
  mb_lvec_rate(m, a, d->qd, v);
  mb_tyre_eval(m, i, p, v, &t);
  const double F[3] = {0, 0, t.Fz};
  mb_lvec_add_jtw(m, a, 1, F, d->force);
  if (!jac) return;
  /* Q = J^T e_z Fz: K = -J^T e_z (dFz/dp)^T J, C = -J^T e_z (dFz/dv)^T J, on the element's
     blocks: outer products of the rows J^T e_z and J^T dFz/dp, J^T dFz/dv */
  const mb_local L = mb_force_local(m, i);
  const int n = 3 * L.nb;
  double J[3 * MB_LOCAL_COORDS], w[2 * MB_LOCAL_COORDS];
  const double dpv[6] = {t.dp[0], t.dp[1], t.dp[2], t.dv[0], t.dv[1], t.dv[2]};
  mb_local_jacobian(m, &L, a, J);
  mb_local_premul(n, dpv, 3, 2, J, 3, w); /* dFz/dp^T J, then dFz/dv^T J */
  mb_local_add_ptq(m, &L, jac->K, -jac->ks, J + 2 * n, w, 1);
  mb_local_add_ptq(m, &L, jac->C, -jac->cs, J + 2 * n, w + n, 1);
}

/* components of a point force or torque at time t */
static void load_value(const mb_model* m, int i, double t, double* v) {
  for (int k = 0; k < 3; k++) {
    int f = m->force_func[3 * i + k];
    v[k] = 0;
    if (f >= 0) mb_func_eval(m, f, t, &v[k], NULL, NULL);
  }
}

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
        spring_force(m, d, i, jac);
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
        tyre_force(m, d, i, jac);
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

double mb_nonconservative_power(const mb_model* m, mb_data* d) {
  double power = mb_controller_power(m, d) + mb_friction_power(m, d);
  for (int i = 0; i < m->nforce; i++) {
    switch ((mb_force_type)m->force_type[i]) {
      case MB_FORCE_SPRING: {
        /* dampers and constant actuator forces; the elastic part is stored energy */
        if (m->force_c[i] == 0 && m->force_f0[i] == 0) break;
        spring_state s;
        spring_eval(m, i, d->q, d->qd, &s);
        power -= (m->force_c[i] * s.rate + m->force_f0[i]) * s.rate;
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

void mb_energy(const mb_model* m, const mb_data* d, double* kinetic, double* gravity,
               double* elastic) {
  if (kinetic) {
    double T = 0.5 * mb_mass_form(m, d->qd, d->qd);
    /* controller states carry unit mass but no physical energy */
    for (int i = 0; i < m->nctrl; i++)
      for (int k = 0; k < m->dim; k++)
        T -= 0.5 * d->qd[m->ctrl_qadr[i] + k] * d->qd[m->ctrl_qadr[i] + k];
    *kinetic = T;
  }
  if (gravity) {
    double V = 0;
    for (int b = 0; b < m->nbody; b++) {
      double r[3];
      mb_lvec_eval(m, m->body_com[b], d->q, r);
      V -= m->body_mass[b] * mbu_dot3(m->gravity, r);
    }
    *gravity = V;
  }
  if (elastic) {
    double V = 0;
    for (int i = 0; i < m->nforce; i++) {
      if (m->force_type[i] != MB_FORCE_SPRING) continue;
      spring_state s;
      spring_eval(m, i, d->q, d->qd, &s);
      double stretch = s.length - m->force_l0[i];
      V += 0.5 * m->force_k[i] * stretch * stretch;
    }
    *elastic = V;
  }
}

double mb_spring_length(const mb_model* m, const mb_data* d, int i, double* tension) {
  spring_state s;
  spring_eval(m, i, d->q, d->qd, &s);
  if (tension) *tension = spring_tension(m, i, &s);
  return s.length;
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

static void spring_param(const mb_model* m, const mb_model* dm, const mb_data* d, int i,
                         double* dQ) {
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

static void torque_param(const mb_model* m, const mb_model* dm, const mb_data* d, int i,
                         double* dQ) {
  double tau[3], dtau[3];
  torque_value(m, i, d->t, tau);
  load_param(m, dm, i, d->t, dtau);
  if (m->dim == 2) dtau[2] = dtau[0], dtau[0] = 0;
  mbd_body_torque_param(m, dm, d, m->force_body[i], tau, dtau, dQ);
}

/* Q = J^T e_z Fz(k, c, R, p, v) */
static void tyre_param(const mb_model* m, const mb_model* dm, const mb_data* d, int i, double* dQ) {
  const int a = m->force_lvec[2 * i];
  double p[3], v[3], dp[3], dv[3];
  mb_tyre_force t;
  mb_lvec_eval(m, a, d->q, p), mb_lvec_rate(m, a, d->qd, v);
  mb_lvec_eval(dm, a, d->q, dp), mb_lvec_rate(dm, a, d->qd, dv);
  mb_tyre_eval(m, i, p, v, &t);
  double dF = t.dkcr[0] * dm->force_k[i] + t.dkcr[1] * dm->force_c[i] +
              t.dkcr[2] * dm->force_l0[i] + mbu_dot3(t.dp, dp) + mbu_dot3(t.dv, dv);
  const double w[3] = {0, 0, dF}, F[3] = {0, 0, t.Fz};
  mb_lvec_add_jtw(m, a, 1, w, dQ);
  mb_lvec_add_jtw(dm, a, 1, F, dQ);
}

void mbd_forces_param(const mb_model* m, const mb_model* dm, const mb_data* d,
                      const unsigned char* active, double* dQ) {
  memcpy(dQ, dm->gravity_force, sizeof(double) * m->nq);
  for (int i = 0; i < m->nforce; i++) {
    if (active && !active[i]) continue;
    switch ((mb_force_type)m->force_type[i]) {
      case MB_FORCE_SPRING:
        spring_param(m, dm, d, i, dQ);
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
        tyre_param(m, dm, d, i, dQ);
        if (mb_tyre_has_slip(m, i)) mbd_tyre_slip_param(m, dm, d, i, dQ);
        break;
    }
  }
  mbd_controllers_param(m, dm, d, dQ);
}
