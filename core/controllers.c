/* PID controllers as force elements. Each controller owns a block of coordinates w of unit mass,
   driven by its error: w'' = e, so that z = w' is the integral of e and the Newmark rule
   integrates it with the mechanics; forward and adjoint sensitivities then cover the controller
   states with no special case. The control u = kp e + ki z + kd de/dt (optionally U tanh(u/U))
   acts through a force at a marker or a torque on a body; e = r(t) - sum_j w_j s_j over output
   columns, and de/dt comes from the sensors' rates, not from differencing. */
#include <math.h>
#include <string.h>

#include "internal.h"
#include "mbopt/sensitivity.h"

/* error, its rate and control of controller i at the state of d; with e_q etc. (nq each, may be
   NULL) the partials of e and de/dt */
typedef struct ctrl_state {
  double e, edot, z, raw, u, slope; /* slope: du/draw of the saturation */
} ctrl_state;

static ctrl_state controller_eval(const mb_model* m, const mb_data* d, int i, double* e_q,
                                  double* e_qd, double* edot_qd) {
  const int nq = m->nq;
  const double* gain = m->ctrl_gain + 4 * i;
  ctrl_state s;
  double r = 0, rd = 0;
  if (m->ctrl_ref[i] >= 0) mb_func_eval(m, m->ctrl_ref[i], d->t, &r, &rd, NULL);
  s.e = r, s.edot = rd;
  if (e_q) memset(e_q, 0, sizeof(double) * nq);
  if (e_qd) memset(e_qd, 0, sizeof(double) * nq);
  if (edot_qd) memset(edot_qd, 0, sizeof(double) * nq);
  double* sq = d->ctrl_work;
  double* sqd = d->ctrl_work + nq;
  for (int k = m->ctrl_termadr[i]; k < m->ctrl_termadr[i] + m->ctrl_termnum[i]; k++) {
    const double w = m->cterm_weight[k];
    double value = mbd_output_partials(m, d, m->cterm_column[k], sq, sqd, NULL);
    double rate = 0;
    for (int j = 0; j < nq; j++) rate += sq[j] * d->qd[j];
    s.e -= w * value;
    s.edot -= w * rate; /* position outputs only when kd is used (checked by the compiler) */
    for (int j = 0; j < nq; j++) {
      if (e_q) e_q[j] -= w * sq[j];
      if (e_qd) e_qd[j] -= w * sqd[j];
      if (edot_qd) edot_qd[j] -= w * sq[j];
    }
  }
  s.z = d->qd[m->ctrl_qadr[i]];
  s.raw = gain[0] * s.e + gain[1] * s.z + gain[2] * s.edot;
  s.u = s.raw, s.slope = 1;
  if (gain[3] > 0) {
    double th = tanh(s.raw / gain[3]);
    s.u = gain[3] * th, s.slope = 1 - th * th;
  }
  return s;
}

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
    ctrl_state s =
        controller_eval(m, d, i, jac ? e_q : NULL, jac ? e_qd : NULL, jac ? edot_qd : NULL);
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

double mb_controller_error(const mb_model* m, const mb_data* d, int i, double* dq, double* dqd) {
  ctrl_state s = controller_eval(m, d, i, dq, dqd, NULL);
  return s.e;
}

double mb_controller_output(const mb_model* m, const mb_data* d, int i, double* dq, double* dqd) {
  const int nq = m->nq;
  const double* gain = m->ctrl_gain + 4 * i;
  mb_data* scratch = (mb_data*)d; /* only the controller scratch is written */
  double *e_q = scratch->ctrl_work + 2 * nq, *e_qd = scratch->ctrl_work + 3 * nq;
  double* edot_qd = scratch->ctrl_work + 4 * nq;
  ctrl_state s = controller_eval(m, d, i, e_q, e_qd, edot_qd);
  for (int j = 0; j < nq; j++) {
    if (dq) dq[j] = s.slope * gain[0] * e_q[j];
    if (dqd) dqd[j] = s.slope * (gain[0] * e_qd[j] + gain[2] * edot_qd[j]);
  }
  if (dqd) dqd[m->ctrl_qadr[i]] += s.slope * gain[1];
  return s.u;
}

/* explicit parameter derivatives of e, de/dt and u of controller i */
static void controller_param(const mb_model* m, const mb_model* dm, const mb_data* d, int i,
                             const ctrl_state* s, double* de, double* du) {
  const double *gain = m->ctrl_gain + 4 * i, *dgain = dm->ctrl_gain + 4 * i;
  double dr = 0, drd = 0, dedot;
  if (m->ctrl_ref[i] >= 0) mbd_func_param(m, dm, m->ctrl_ref[i], d->t, &dr, &drd, NULL);
  *de = dr, dedot = drd;
  for (int k = m->ctrl_termadr[i]; k < m->ctrl_termadr[i] + m->ctrl_termnum[i]; k++) {
    const int col = m->cterm_column[k];
    *de -= m->cterm_weight[k] * mbd_output_param(m, dm, d, col);
    if (m->cterm_lvec[k] >= 0) {
      double v[3];
      mb_lvec_rate(dm, m->cterm_lvec[k], d->qd, v);
      dedot -= m->cterm_weight[k] * v[m->cterm_comp[k]];
    }
  }
  double draw =
      dgain[0] * s->e + gain[0] * *de + dgain[1] * s->z + dgain[2] * s->edot + gain[2] * dedot;
  *du = s->slope * draw;
  if (gain[3] > 0) {
    const double x = s->raw / gain[3], th = tanh(x);
    *du += dgain[3] * (th - x * (1 - th * th));
  }
}

double mbd_controller_error_param(const mb_model* m, const mb_model* dm, const mb_data* d, int i) {
  ctrl_state s = controller_eval(m, d, i, NULL, NULL, NULL);
  double de, du;
  controller_param(m, dm, d, i, &s, &de, &du);
  return de;
}

void mbd_controllers_param(const mb_model* m, const mb_model* dm, const mb_data* d, double* dQ) {
  const int nq = m->nq;
  mb_data* scratch = (mb_data*)d; /* only the controller scratch and a borrowed force array */
  double* b = scratch->ctrl_work + 5 * nq;
  for (int i = 0; i < m->nctrl; i++) {
    ctrl_state s = controller_eval(m, d, i, NULL, NULL, NULL);
    double de, du;
    controller_param(m, dm, d, i, &s, &de, &du);
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

double mbd_controller_output_param(const mb_model* m, const mb_model* dm, const mb_data* d, int i) {
  ctrl_state s = controller_eval(m, d, i, NULL, NULL, NULL);
  double de, du;
  controller_param(m, dm, d, i, &s, &de, &du);
  return du;
}

double mb_controller_power(const mb_model* m, mb_data* d) {
  double power = 0, *b = d->ctrl_work + 5 * m->nq;
  for (int i = 0; i < m->nctrl; i++) {
    ctrl_state s = controller_eval(m, d, i, NULL, NULL, NULL);
    actuator_direction(m, d, i, b);
    for (int j = 0; j < m->nq; j++) power += s.u * b[j] * d->qd[j];
  }
  return power;
}
