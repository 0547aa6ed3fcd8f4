/* The chain rule of the natural model's kinematic measures (chain.h). No scratch memory. */
#include <math.h>
#include <string.h>

#include "chain.h"
#include "mbopt/sensitivity.h"

/* marks the coordinate blocks of linear vector lv */
static void mark_lvec(const mb_model* m, int lv, unsigned char* blocks) {
  for (int k = m->lvec_termadr[lv]; k < m->lvec_termadr[lv] + m->lvec_termnum[lv]; k++)
    blocks[m->term_qadr[k] / m->dim] = 1;
}

void mb_chain_lvec(mb_chain* c, int lv, mb_lv_level level, double s, const double* w) {
  const mb_data* d = c->d;
  if (c->support) {
    mark_lvec(c->m, lv, c->support);
    return;
  }
  if (c->dm) {
    double dv[3];
    if (level == MB_LV_VALUE)
      mb_lvec_eval(c->dm, lv, d->q, dv);
    else
      mb_lvec_rate(c->dm, lv, level == MB_LV_RATE ? d->qd : d->qdd, dv);
    if (c->m->dim == 2) dv[2] = 0;
    c->dp += c->scale * s * mbu_dot3(w, dv);
    return;
  }
  double* g = level == MB_LV_VALUE ? c->dq : level == MB_LV_RATE ? c->dqd : c->dqdd;
  if (g) mb_lvec_add_jtw(c->m, lv, c->scale * s, w, g);
}

void mb_chain_param(mb_chain* c, double x) {
  if (c->dm) c->dp += c->scale * x;
}

int mb_joint_coordinate_gradient(const mb_model* m, const mb_data* d, int j, int coord, int* lv,
                                 double (*w)[3], double* value, double* rate) {
  const int* meas = m->joint_measure + 6 * j;
  double v[3][3], r[3][3];
  if (coord == MB_COORD_ANGLE) {
    /* theta = atan2(s, c), s = x2 . y1, c = x2 . x1 */
    for (int k = 0; k < 3; k++) {
      lv[k] = meas[k];
      mb_lvec_eval(m, lv[k], d->q, v[k]);
      mb_lvec_rate(m, lv[k], d->qd, r[k]);
    }
    const double s = mbu_dot3(v[0], v[1]), c = mbu_dot3(v[0], v[2]), n = s * s + c * c;
    for (int k = 0; k < 3; k++) {
      w[0][k] = (c * v[1][k] - s * v[2][k]) / n;
      w[1][k] = c * v[0][k] / n;
      w[2][k] = -s * v[0][k] / n;
    }
    *value = atan2(s, c);
    *rate = mbu_dot3(w[0], r[0]) + mbu_dot3(w[1], r[1]) + mbu_dot3(w[2], r[2]);
    return 3;
  }
  /* s = (r2 - r1) . z1 */
  for (int k = 0; k < 2; k++) {
    lv[k] = meas[3 + k];
    mb_lvec_eval(m, lv[k], d->q, v[k]);
    mb_lvec_rate(m, lv[k], d->qd, r[k]);
  }
  for (int k = 0; k < 3; k++) w[0][k] = v[1][k], w[1][k] = v[0][k];
  *value = mbu_dot3(v[0], v[1]);
  *rate = mbu_dot3(w[0], r[0]) + mbu_dot3(w[1], r[1]);
  return 2;
}

/* component comp of the angular velocity 1/2 sum_k E_k x dE_k of the frame with axes E (planar:
   E_x x dE_x about z), times sign: d/dE = dE x n, d/ddE = n x E for the unit vector n of the
   component */
void mb_chain_frame_angular_velocity(mb_chain* c, const int* E, double sign, int comp) {
  const mb_model* m = c->m;
  double n[3] = {0, 0, 0};
  n[m->dim == 2 ? 2 : comp] = 1;
  for (int k = 0; k < (m->dim == 2 ? 1 : 3); k++) {
    double e[3], ed[3], we[3], wed[3];
    mb_lvec_eval(m, E[k], c->d->q, e);
    mb_lvec_rate(m, E[k], c->d->qd, ed);
    mbu_cross3(ed, n, we);
    mbu_cross3(n, e, wed);
    const double s = sign * (m->dim == 2 ? 1 : 0.5);
    mb_chain_lvec(c, E[k], MB_LV_VALUE, s, we);
    mb_chain_lvec(c, E[k], MB_LV_RATE, s, wed);
  }
}

void mb_chain_angular_velocity(mb_chain* c, int body, int comp) {
  mb_chain_frame_angular_velocity(c, c->m->body_axes + 3 * body, 1, comp);
}

/* component k along the body's axes, (dE_a . E_b - dE_b . E_a) / 2 with (k, a, b) cyclic (see
   sensors.c); planar models have the global angular velocity about z */
void mb_chain_body_axes_angular_velocity(mb_chain* c, int body, int comp) {
  const mb_model* m = c->m;
  if (m->dim == 2) {
    mb_chain_angular_velocity(c, body, comp);
    return;
  }
  const int* E = m->body_axes + 3 * body;
  const int a = E[(comp + 1) % 3], b = E[(comp + 2) % 3];
  double ea[3], eb[3], eda[3], edb[3];
  mb_lvec_eval(m, a, c->d->q, ea);
  mb_lvec_eval(m, b, c->d->q, eb);
  mb_lvec_rate(m, a, c->d->qd, eda);
  mb_lvec_rate(m, b, c->d->qd, edb);
  mb_chain_lvec(c, a, MB_LV_VALUE, -0.5, edb);
  mb_chain_lvec(c, a, MB_LV_RATE, 0.5, eb);
  mb_chain_lvec(c, b, MB_LV_VALUE, 0.5, eda);
  mb_chain_lvec(c, b, MB_LV_RATE, -0.5, ea);
}

/* body angles: yaw (planar angle) atan2(Ex_y, Ex_x), pitch -asin(Ex_z), roll atan2(Ey_z, Ez_z) */
void mb_chain_angles(mb_chain* c, int body, int comp) {
  const mb_model* m = c->m;
  const int* E = m->body_axes + 3 * body;
  double ex[3], ey[3], ez[3];
  if (comp == 0) {
    mb_lvec_eval(m, E[0], c->d->q, ex);
    const double nn = ex[0] * ex[0] + ex[1] * ex[1];
    double w[3] = {-ex[1] / nn, ex[0] / nn, 0};
    mb_chain_lvec(c, E[0], MB_LV_VALUE, 1, w);
  } else if (comp == 1) {
    /* the clamp of sensors.c is flat outside [-1, 1] */
    mb_lvec_eval(m, E[0], c->d->q, ex);
    double w[3] = {0, 0, fabs(ex[2]) < 1 ? -1 / sqrt(1 - ex[2] * ex[2]) : 0};
    mb_chain_lvec(c, E[0], MB_LV_VALUE, 1, w);
  } else {
    mb_lvec_eval(m, E[1], c->d->q, ey);
    mb_lvec_eval(m, E[2], c->d->q, ez);
    const double nn = ey[2] * ey[2] + ez[2] * ez[2];
    double wy[3] = {0, 0, ez[2] / nn}, wz[3] = {0, 0, -ey[2] / nn};
    mb_chain_lvec(c, E[1], MB_LV_VALUE, 1, wy);
    mb_chain_lvec(c, E[2], MB_LV_VALUE, 1, wz);
  }
}

/* w = x a + y b (3-vectors) */
static void combine(double x, const double* a, double y, const double* b, double* w) {
  for (int k = 0; k < 3; k++) w[k] = x * a[k] + y * b[k];
}

/* joint angle atan2(S, C) with S = a.b, C = a.c, or its rate (C dS - S dC) / (S^2 + C^2);
   translation a.b or its rate (see joint_value in sensors.c) */
void mb_chain_joint(mb_chain* c, int joint, int coord, int rate) {
  const mb_model* m = c->m;
  const mb_data* d = c->d;
  const int* meas = m->joint_measure + 6 * joint;
  double a[3], b[3], ad[3], bd[3], w[3];
  if (!rate) {
    int lv[3];
    double wg[3][3], value, unused;
    const int n = mb_joint_coordinate_gradient(m, d, joint, coord, lv, wg, &value, &unused);
    for (int k = 0; k < n; k++) mb_chain_lvec(c, lv[k], MB_LV_VALUE, 1, wg[k]);
    return;
  }
  if (coord != MB_COORD_ANGLE) {
    mb_lvec_eval(m, meas[3], d->q, a);
    mb_lvec_eval(m, meas[4], d->q, b);
    mb_lvec_rate(m, meas[3], d->qd, ad);
    mb_lvec_rate(m, meas[4], d->qd, bd);
    mb_chain_lvec(c, meas[3], MB_LV_VALUE, 1, bd);
    mb_chain_lvec(c, meas[4], MB_LV_VALUE, 1, ad);
    mb_chain_lvec(c, meas[3], MB_LV_RATE, 1, b);
    mb_chain_lvec(c, meas[4], MB_LV_RATE, 1, a);
    return;
  }

  /* angle: dtheta = alpha dS + beta dC */
  double cc[3], cd[3];
  mb_lvec_eval(m, meas[0], d->q, a);
  mb_lvec_eval(m, meas[1], d->q, b);
  mb_lvec_eval(m, meas[2], d->q, cc);
  const double S = mbu_dot3(a, b), C = mbu_dot3(a, cc), N = S * S + C * C;
  const double alpha = C / N, beta = -S / N;

  /* rate: thetad = alpha Sd + beta Cd, with
     d thetad / dS = -(Cd + 2 S thetad) / N, d thetad / dC = (Sd - 2 C thetad) / N */
  mb_lvec_rate(m, meas[0], d->qd, ad);
  mb_lvec_rate(m, meas[1], d->qd, bd);
  mb_lvec_rate(m, meas[2], d->qd, cd);
  const double Sd = mbu_dot3(ad, b) + mbu_dot3(a, bd), Cd = mbu_dot3(ad, cc) + mbu_dot3(a, cd);
  const double thd = alpha * Sd + beta * Cd;
  const double pS = -(Cd + 2 * S * thd) / N, pC = (Sd - 2 * C * thd) / N;
  double w2[3];
  /* positions: through S, C and through the rates Sd, Cd */
  combine(pS, b, pC, cc, w);
  combine(alpha, bd, beta, cd, w2);
  for (int k = 0; k < 3; k++) w[k] += w2[k];
  mb_chain_lvec(c, meas[0], MB_LV_VALUE, 1, w);
  combine(pS, a, alpha, ad, w);
  mb_chain_lvec(c, meas[1], MB_LV_VALUE, 1, w);
  combine(pC, a, beta, ad, w);
  mb_chain_lvec(c, meas[2], MB_LV_VALUE, 1, w);
  /* rates */
  combine(alpha, b, beta, cc, w);
  mb_chain_lvec(c, meas[0], MB_LV_RATE, 1, w);
  mb_chain_lvec(c, meas[1], MB_LV_RATE, alpha, a);
  mb_chain_lvec(c, meas[2], MB_LV_RATE, beta, a);
}

void mb_chain_lambda(mb_chain* c, int row, double x) {
  if (c->dlam && !c->dm && !c->support) c->dlam[row] += c->scale * x;
}

/* derivative of the target e(t) of constraint row i along the tangent model */
static double target_param(const mb_chain* c, int i) {
  double de = c->dm->con_value[i];
  if (c->m->con_func[i] >= 0) {
    double df;
    mbd_func_param(c->m, c->dm, c->m->con_func[i], c->d->t, &df, NULL, NULL);
    de += df;
  }
  return de;
}

/* component comp of joint j's reaction force or torque (reactions.c) along the unit vector e of
   the frame: a sum over the terms g = -lambda coef w of products e . (sigma g) (forces),
   e . (u x g) (torques on directions u) and, on marker 1's side, e . (r x g) with r = r1 - r2 (the
   moment that moves the reaction to marker 2's point); each factor's derivative in turn */
void mb_chain_reaction(mb_chain* c, int j, int joint_frame, int torque, int comp) {
  const mb_model* m = c->m;
  const mb_data* d = c->d;
  mb_reaction_term terms[MB_REACTION_TERMS];
  const int n = mb_reaction_terms(m, d, j, terms);
  const int side2 = mb_reaction_side_index(m, j);
  const int elv = mb_reaction_frame(m, j, joint_frame, torque, comp);
  const int p1 = m->marker_point[m->joint_marker[2 * j]];
  const int p2 = m->marker_point[m->joint_marker[2 * j + 1]];
  double e[3], r[3] = {0, 0, 0};
  mb_lvec_eval(m, elv, d->q, e);
  if (torque && !side2) {
    double a[3], b[3];
    mb_lvec_eval(m, p1, d->q, a);
    mb_lvec_eval(m, p2, d->q, b);
    for (int k = 0; k < 3; k++) r[k] = a[k] - b[k];
  }
  for (int k = 0; k < n; k++) {
    const mb_reaction_term* t = terms + k;
    const int direction = t->side == MB_SIDE_DIRECTION;
    if (direction != torque && (direction || side2)) continue;
    /* y = s coef lambda (e . w) or s coef lambda e . (a x w), a = u or r */
    const double sigma = t->side == MB_SIDE_POINT_MINUS ? -1 : 1;
    const double s = direction ? (side2 ? -1 : 1) : torque ? sigma : (side2 ? -sigma : sigma);
    const double lam = c->mult ? c->mult[t->row] : mb_reaction_multiplier(d, t->row);
    const double kk = s * t->coef * lam;
    double w[3], a[3], geom, ew[3], we[3], ea[3];
    mb_lvec_eval(m, t->partner, d->q, w);
    if (!torque) {
      geom = mbu_dot3(e, w);
      mb_chain_lvec(c, elv, MB_LV_VALUE, kk, w);
      mb_chain_lvec(c, t->partner, MB_LV_VALUE, kk, e);
    } else {
      if (direction)
        mb_lvec_eval(m, t->lv, d->q, a);
      else
        for (int q = 0; q < 3; q++) a[q] = r[q];
      mbu_cross3(a, w, ew);
      mbu_cross3(w, e, we);
      mbu_cross3(e, a, ea);
      geom = mbu_dot3(e, ew);
      mb_chain_lvec(c, elv, MB_LV_VALUE, kk, ew);
      mb_chain_lvec(c, t->partner, MB_LV_VALUE, kk, ea);
      if (direction) {
        mb_chain_lvec(c, t->lv, MB_LV_VALUE, kk, we);
      } else {
        mb_chain_lvec(c, p1, MB_LV_VALUE, kk, we);
        mb_chain_lvec(c, p2, MB_LV_VALUE, -kk, we);
      }
    }
    mb_chain_lambda(c, t->row, s * t->coef * geom);
    if (c->dm && t->dcoef != 0)
      mb_chain_param(c, s * t->dcoef * target_param(c, t->row) * lam * geom);
  }
}
