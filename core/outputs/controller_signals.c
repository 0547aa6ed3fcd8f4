/* A PID controller's signals (controllers.c): its error e = r(t) - sum_j w_j s_j over output
   columns, the rate of the error from the sensors' rates, and its control
   u = kp e + ki z + kd de/dt (optionally U tanh(u/U)), with their partials and explicit parameter
   derivatives. They read output columns and are output columns themselves (sensors.c), so they
   sit with the outputs. */
#include <math.h>
#include <string.h>

#include "internal.h"
#include "mbopt/sensitivity.h"

mb_controller_state mb_controller_eval(const mb_model* m, const mb_data* d, int i, double* e_q,
                                       double* e_qd, double* edot_qd) {
  const int nq = m->nq;
  const double* gain = m->ctrl_gain + 4 * i;
  mb_controller_state s;
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

double mb_controller_error(const mb_model* m, const mb_data* d, int i, double* dq, double* dqd) {
  mb_controller_state s = mb_controller_eval(m, d, i, dq, dqd, NULL);
  return s.e;
}

double mb_controller_output(const mb_model* m, const mb_data* d, int i, double* dq, double* dqd) {
  const int nq = m->nq;
  const double* gain = m->ctrl_gain + 4 * i;
  mb_data* scratch = (mb_data*)d; /* only the controller scratch is written */
  double *e_q = scratch->ctrl_work + 2 * nq, *e_qd = scratch->ctrl_work + 3 * nq;
  double* edot_qd = scratch->ctrl_work + 4 * nq;
  mb_controller_state s = mb_controller_eval(m, d, i, e_q, e_qd, edot_qd);
  for (int j = 0; j < nq; j++) {
    if (dq) dq[j] = s.slope * gain[0] * e_q[j];
    if (dqd) dqd[j] = s.slope * (gain[0] * e_qd[j] + gain[2] * edot_qd[j]);
  }
  if (dqd) dqd[m->ctrl_qadr[i]] += s.slope * gain[1];
  return s.u;
}

void mbd_controller_state_param(const mb_model* m, const mb_model* dm, const mb_data* d, int i,
                                const mb_controller_state* s, double* de, double* du) {
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
  mb_controller_state s = mb_controller_eval(m, d, i, NULL, NULL, NULL);
  double de, du;
  mbd_controller_state_param(m, dm, d, i, &s, &de, &du);
  return de;
}

double mbd_controller_output_param(const mb_model* m, const mb_model* dm, const mb_data* d, int i) {
  mb_controller_state s = mb_controller_eval(m, d, i, NULL, NULL, NULL);
  double de, du;
  mbd_controller_state_param(m, dm, d, i, &s, &de, &du);
  return du;
}
