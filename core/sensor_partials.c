/* Partial derivatives of the output columns with respect to q, qd and qdd, and with respect to one
   parameter at a fixed state (through a tangent model, include/mbopt/sensitivity.h).

   Every sensor is a function of the values v = c + W q, rates J qd and accelerations J qdd of a
   few linear vectors (J = W is constant), and of a few model scalars (spring constants, masses,
   gravity, the mass matrix). The chain rule of each sensor is written once, as the weights w of
   its linear vectors (w = d output / d v); a `chain` then turns them into either partials
   (g += J^T w, into dq, dqd or dqdd by level) or the parameter derivative (w . dv/drho, with
   dv/drho = mb_lvec_eval or mb_lvec_rate on the tangent model). The values themselves come from
   mb_sensor_eval (sensors.c), so they are exactly those of mb_sensors; angles are moved by whole
   turns to the branch nearest the last recorded output d->out[col] (the raw atan2 value before
   the first mb_sensors), which leaves their derivatives unchanged. No scratch memory. */
#include <math.h>
#include <string.h>

#include "internal.h"
#include "mbopt/sensitivity.h"

/* which derivative of a linear vector a weight applies to */
typedef enum lv_level { LV_VALUE, LV_RATE, LV_ACCEL } lv_level;

/* the destination of the chain rule: partials (dm NULL) or the parameter of dm */
typedef struct chain {
  const mb_model* m;
  const mb_data* d;
  double scale;            /* factor on every contribution */
  double *dq, *dqd, *dqdd; /* partials (nq each, may be NULL) */
  const mb_model* dm;      /* tangent model, or NULL */
  double dp;               /* accumulated parameter derivative */
  unsigned char* support;  /* or: marks the coordinate blocks the partials can reach */
  double* dlam;            /* partials with respect to the multipliers (ncon, may be NULL) */
  const double* mult;      /* the multipliers reactions read (NULL: mb_reaction_multiplier) */
} chain;

/* marks the coordinate blocks of linear vector lv */
static void mark_lvec(const mb_model* m, int lv, unsigned char* blocks) {
  for (int k = m->lvec_termadr[lv]; k < m->lvec_termadr[lv] + m->lvec_termnum[lv]; k++)
    blocks[m->term_qadr[k] / m->dim] = 1;
}

/* adds s w . (derivative of the value, rate or acceleration of linear vector lv) */
static void chain_lvec(chain* c, int lv, lv_level level, double s, const double* w) {
  const mb_data* d = c->d;
  if (c->support) {
    mark_lvec(c->m, lv, c->support);
    return;
  }
  if (c->dm) {
    double dv[3];
    if (level == LV_VALUE)
      mb_lvec_eval(c->dm, lv, d->q, dv);
    else
      mb_lvec_rate(c->dm, lv, level == LV_RATE ? d->qd : d->qdd, dv);
    if (c->m->dim == 2) dv[2] = 0;
    c->dp += c->scale * s * mbu_dot3(w, dv);
    return;
  }
  double* g = level == LV_VALUE ? c->dq : level == LV_RATE ? c->dqd : c->dqdd;
  if (g) mb_lvec_add_jtw(c->m, lv, c->scale * s, w, g);
}

/* adds x to the parameter derivative (explicit dependence on model scalars) */
static void chain_param(chain* c, double x) {
  if (c->dm) c->dp += c->scale * x;
}

/* ---------------------------------------------------------------------------------------------
   sensors */

/* component comp of the angular velocity 1/2 sum_k E_k x dE_k of the frame with axes E (planar:
   E_x x dE_x about z), times sign: d/dE = dE x n, d/ddE = n x E for the unit vector n of the
   component */
static void frame_angular_velocity_chain(chain* c, const int* E, double sign, int comp) {
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
    chain_lvec(c, E[k], LV_VALUE, s, we);
    chain_lvec(c, E[k], LV_RATE, s, wed);
  }
}

static void angular_velocity_chain(chain* c, int body, int comp) {
  frame_angular_velocity_chain(c, c->m->body_axes + 3 * body, 1, comp);
}

/* component k along the body's axes, (dE_a . E_b - dE_b . E_a) / 2 with (k, a, b) cyclic (see
   sensors.c); planar models have the global angular velocity about z */
static void body_axes_angular_velocity_chain(chain* c, int body, int comp) {
  const mb_model* m = c->m;
  if (m->dim == 2) {
    angular_velocity_chain(c, body, comp);
    return;
  }
  const int* E = m->body_axes + 3 * body;
  const int a = E[(comp + 1) % 3], b = E[(comp + 2) % 3];
  double ea[3], eb[3], eda[3], edb[3];
  mb_lvec_eval(m, a, c->d->q, ea);
  mb_lvec_eval(m, b, c->d->q, eb);
  mb_lvec_rate(m, a, c->d->qd, eda);
  mb_lvec_rate(m, b, c->d->qd, edb);
  chain_lvec(c, a, LV_VALUE, -0.5, edb);
  chain_lvec(c, a, LV_RATE, 0.5, eb);
  chain_lvec(c, b, LV_VALUE, 0.5, eda);
  chain_lvec(c, b, LV_RATE, -0.5, ea);
}

/* body angles: yaw (planar angle) atan2(Ex_y, Ex_x), pitch -asin(Ex_z), roll atan2(Ey_z, Ez_z) */
static void angles_chain(chain* c, int body, int comp) {
  const mb_model* m = c->m;
  const int* E = m->body_axes + 3 * body;
  double ex[3], ey[3], ez[3];
  if (comp == 0) {
    mb_lvec_eval(m, E[0], c->d->q, ex);
    const double nn = ex[0] * ex[0] + ex[1] * ex[1];
    double w[3] = {-ex[1] / nn, ex[0] / nn, 0};
    chain_lvec(c, E[0], LV_VALUE, 1, w);
  } else if (comp == 1) {
    /* the clamp of sensors.c is flat outside [-1, 1] */
    mb_lvec_eval(m, E[0], c->d->q, ex);
    double w[3] = {0, 0, fabs(ex[2]) < 1 ? -1 / sqrt(1 - ex[2] * ex[2]) : 0};
    chain_lvec(c, E[0], LV_VALUE, 1, w);
  } else {
    mb_lvec_eval(m, E[1], c->d->q, ey);
    mb_lvec_eval(m, E[2], c->d->q, ez);
    const double nn = ey[2] * ey[2] + ez[2] * ez[2];
    double wy[3] = {0, 0, ez[2] / nn}, wz[3] = {0, 0, -ey[2] / nn};
    chain_lvec(c, E[1], LV_VALUE, 1, wy);
    chain_lvec(c, E[2], LV_VALUE, 1, wz);
  }
}

/* w = x a + y b (3-vectors) */
static void combine(double x, const double* a, double y, const double* b, double* w) {
  for (int k = 0; k < 3; k++) w[k] = x * a[k] + y * b[k];
}

/* joint angle atan2(S, C) with S = a.b, C = a.c, or its rate (C dS - S dC) / (S^2 + C^2);
   translation a.b or its rate (see joint_value in sensors.c) */
static void joint_chain(chain* c, int joint, int coord, int rate) {
  const mb_model* m = c->m;
  const mb_data* d = c->d;
  const int* meas = m->joint_measure + 6 * joint;
  double a[3], b[3], ad[3], bd[3], w[3];
  if (!rate) {
    int lv[3];
    double wg[3][3], value, unused;
    const int n = mb_joint_coordinate_gradient(m, d, joint, coord, lv, wg, &value, &unused);
    for (int k = 0; k < n; k++) chain_lvec(c, lv[k], LV_VALUE, 1, wg[k]);
    return;
  }
  if (coord != MB_COORD_ANGLE) {
    mb_lvec_eval(m, meas[3], d->q, a);
    mb_lvec_eval(m, meas[4], d->q, b);
    mb_lvec_rate(m, meas[3], d->qd, ad);
    mb_lvec_rate(m, meas[4], d->qd, bd);
    chain_lvec(c, meas[3], LV_VALUE, 1, bd);
    chain_lvec(c, meas[4], LV_VALUE, 1, ad);
    chain_lvec(c, meas[3], LV_RATE, 1, b);
    chain_lvec(c, meas[4], LV_RATE, 1, a);
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
  chain_lvec(c, meas[0], LV_VALUE, 1, w);
  combine(pS, a, alpha, ad, w);
  chain_lvec(c, meas[1], LV_VALUE, 1, w);
  combine(pC, a, beta, ad, w);
  chain_lvec(c, meas[2], LV_VALUE, 1, w);
  /* rates */
  combine(alpha, b, beta, cc, w);
  chain_lvec(c, meas[0], LV_RATE, 1, w);
  chain_lvec(c, meas[1], LV_RATE, alpha, a);
  chain_lvec(c, meas[2], LV_RATE, beta, a);
}

/* spring geometry (as spring_eval in forces.c): d = r2 - r1, its rate, length, direction, rate
   of the length */
typedef struct spring_geom {
  double d[3], dd[3], u[3], length, rate;
} spring_geom;

static void spring_geometry(const mb_model* m, const mb_data* d, int i, spring_geom* s) {
  const int a = m->force_lvec[2 * i], b = m->force_lvec[2 * i + 1];
  double ra[3], rb[3], va[3], vb[3];
  mb_lvec_eval(m, a, d->q, ra);
  mb_lvec_eval(m, b, d->q, rb);
  mb_lvec_rate(m, a, d->qd, va);
  mb_lvec_rate(m, b, d->qd, vb);
  for (int k = 0; k < 3; k++) s->d[k] = rb[k] - ra[k], s->dd[k] = vb[k] - va[k];
  s->length = mbu_norm3(s->d);
  const double inv = s->length > 1e-12 ? 1 / s->length : 0;
  for (int k = 0; k < 3; k++) s->u[k] = s->d[k] * inv;
  s->rate = mbu_dot3(s->u, s->dd);
}

/* s (w_value . d(r2 - r1) + w_rate . d(v2 - v1)) of spring i */
static void spring_chain_d(chain* c, int i, double s, const double* wv, const double* wr) {
  const int a = c->m->force_lvec[2 * i], b = c->m->force_lvec[2 * i + 1];
  chain_lvec(c, b, LV_VALUE, s, wv);
  chain_lvec(c, a, LV_VALUE, -s, wv);
  if (wr) {
    chain_lvec(c, b, LV_RATE, s, wr);
    chain_lvec(c, a, LV_RATE, -s, wr);
  }
}

/* length l = |d| (dl/dd = u) or tension k (l - l0) + c dl/dt + f0, with
   d(dl/dt)/dd = (dd - u dl/dt) / l and d(dl/dt)/d(dd) = u */
static void spring_chain(chain* c, int i, int tension) {
  const mb_model* m = c->m;
  spring_geom g;
  spring_geometry(m, c->d, i, &g);
  if (!tension) {
    spring_chain_d(c, i, 1, g.u, NULL);
    return;
  }
  const double k = m->force_k[i], damp = m->force_c[i];
  const double inv = g.length > 1e-12 ? 1 / g.length : 0;
  double wv[3], wr[3];
  for (int r = 0; r < 3; r++) {
    wv[r] = k * g.u[r] + damp * (g.dd[r] - g.u[r] * g.rate) * inv;
    wr[r] = damp * g.u[r];
  }
  spring_chain_d(c, i, 1, wv, wr);
  if (c->dm)
    chain_param(c, c->dm->force_k[i] * (g.length - m->force_l0[i]) - k * c->dm->force_l0[i] +
                       c->dm->force_c[i] * g.rate + c->dm->force_f0[i]);
}

/* kinetic energy 1/2 qd^T M qd: d/dqd = M qd; parameter 1/2 qd^T dM qd */
static void kinetic_chain(chain* c) {
  const mb_model* m = c->m;
  const double* qd = c->d->qd;
  if (c->support) {
    for (int k = 0; k < m->nmass; k++) c->support[m->mass_block[2 * k + 1]] = 1;
  } else if (c->dm) {
    chain_param(c, 0.5 * mb_mass_form(c->dm, qd, qd));
  } else if (c->dqd) {
    mb_mass_mul(m, qd, c->scale, c->dqd);
    /* controller states carry unit mass but no physical energy (as in mb_energy) */
    for (int i = 0; i < m->nctrl; i++)
      for (int k = 0; k < m->dim; k++)
        c->dqd[m->ctrl_qadr[i] + k] -= c->scale * qd[m->ctrl_qadr[i] + k];
  }
}

/* gravity energy -sum_b m_b g . r_b */
static void gravity_chain(chain* c) {
  const mb_model* m = c->m;
  for (int b = 0; b < m->nbody; b++) {
    chain_lvec(c, m->body_com[b], LV_VALUE, -m->body_mass[b], m->gravity);
    if (c->dm) {
      double r[3];
      mb_lvec_eval(m, m->body_com[b], c->d->q, r);
      chain_param(c, -c->dm->body_mass[b] * mbu_dot3(m->gravity, r) -
                         m->body_mass[b] * mbu_dot3(c->dm->gravity, r));
    }
  }
}

/* elastic energy sum 1/2 k (l - l0)^2 over the springs */
static void elastic_chain(chain* c) {
  const mb_model* m = c->m;
  for (int i = 0; i < m->nforce; i++) {
    if (m->force_type[i] != MB_FORCE_SPRING) continue;
    spring_geom g;
    spring_geometry(m, c->d, i, &g);
    const double stretch = g.length - m->force_l0[i];
    spring_chain_d(c, i, m->force_k[i] * stretch, g.u, NULL);
    if (c->dm)
      chain_param(c, 0.5 * c->dm->force_k[i] * stretch * stretch -
                         m->force_k[i] * stretch * c->dm->force_l0[i]);
  }
}

/* the output u (error 0) or the error e (error 1) of controller i */
static void control_chain(chain* c, int i, int error) {
  const mb_model* m = c->m;
  if (c->support) {
    memset(c->support, 1, (size_t)(m->nq / m->dim));
    return;
  }
  if (c->dm) {
    c->dp += c->scale * (error ? mbd_controller_error_param(m, c->dm, c->d, i)
                               : mbd_controller_output_param(m, c->dm, c->d, i));
    return;
  }
  /* scratch of the controllers, past what mb_controller_output itself uses */
  double *uq = c->d->ctrl_work + 6 * m->nq, *uqd = c->d->ctrl_work + 7 * m->nq;
  if (error)
    mb_controller_error(m, c->d, i, uq, uqd);
  else
    mb_controller_output(m, c->d, i, uq, uqd);
  for (int j = 0; j < m->nq; j++) {
    if (c->dq) c->dq[j] += c->scale * uq[j];
    if (c->dqd) c->dqd[j] += c->scale * uqd[j];
  }
}

/* adds x to the partial with respect to multiplier `row` */
static void chain_lambda(chain* c, int row, double x) {
  if (c->dlam && !c->dm && !c->support) c->dlam[row] += c->scale * x;
}

/* derivative of the target e(t) of constraint row i along the tangent model */
static double target_param(const chain* c, int i) {
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
static void reaction_chain(chain* c, int j, int joint_frame, int torque, int comp) {
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
      chain_lvec(c, elv, LV_VALUE, kk, w);
      chain_lvec(c, t->partner, LV_VALUE, kk, e);
    } else {
      if (direction)
        mb_lvec_eval(m, t->lv, d->q, a);
      else
        for (int q = 0; q < 3; q++) a[q] = r[q];
      mbu_cross3(a, w, ew);
      mbu_cross3(w, e, we);
      mbu_cross3(e, a, ea);
      geom = mbu_dot3(e, ew);
      chain_lvec(c, elv, LV_VALUE, kk, ew);
      chain_lvec(c, t->partner, LV_VALUE, kk, ea);
      if (direction) {
        chain_lvec(c, t->lv, LV_VALUE, kk, we);
      } else {
        chain_lvec(c, p1, LV_VALUE, kk, we);
        chain_lvec(c, p2, LV_VALUE, -kk, we);
      }
    }
    chain_lambda(c, t->row, s * t->coef * geom);
    if (c->dm && t->dcoef != 0) chain_param(c, s * t->dcoef * target_param(c, t->row) * lam * geom);
  }
}

/* rate a of joint j's friction: a joint coordinate's rate, or component a of the angular velocity
   of marker 2's frame less marker 1's */
static void friction_rate_chain(chain* c, int j, int a) {
  const mb_model* m = c->m;
  const int coord = mb_friction_coordinate(m, j, a);
  if (coord >= 0) {
    joint_chain(c, j, coord, 1);
    return;
  }
  for (int side = 0; side < 2; side++) {
    int E[3];
    mb_marker_frame(m, m->joint_marker[2 * j + side], E);
    frame_angular_velocity_chain(c, E, side ? 1 : -1, a);
  }
}

void mbd_friction_rate_partials(const mb_model* m, const mb_data* d, int j, int a, double s,
                                double* dq, double* g) {
  chain c = {m, d, s, dq, g, NULL, NULL, 0, NULL, NULL, NULL};
  friction_rate_chain(&c, j, a);
}

void mbd_friction_rate_hessian_mul(const mb_model* m, const mb_data* d, int j, int a,
                                   const double* x, int transposed, double s, double* y) {
  /* the rate x_a = g_a . qd at qd = x has d x_a / dq = (dg_a/dq)^T x; the angular velocity's
     dg_a/dq is skew */
  mb_data at = *d;
  at.qd = (double*)x;
  const int skew = mb_friction_coordinate(m, j, a) < 0 && !transposed;
  chain c = {m, &at, skew ? -s : s, y, NULL, NULL, NULL, 0, NULL, NULL, NULL};
  friction_rate_chain(&c, j, a);
}

void mbd_friction_partials(const mb_model* m, const mb_data* d, int j, int a, const double* mult,
                           const mb_friction* f, double s, double* dq, double* dqd, double* dlam,
                           const mb_model* dm, double* dparam) {
  chain c = {m, d, 0, dq, dqd, NULL, dm, 0, NULL, dlam, mult};
  /* through the joint's rates */
  for (int b = 0; b < f->n; b++) {
    if (f->slope[a][b] == 0) continue;
    c.scale = s * f->slope[a][b];
    friction_rate_chain(&c, j, b);
  }
  /* through the reaction in marker 2's frame */
  for (int k = 0; k < 6; k++) {
    if (f->d_reaction[a][k] == 0) continue;
    c.scale = s * f->d_reaction[a][k];
    reaction_chain(&c, j, 1, k >= 3, k % 3);
  }
  /* through the friction data */
  c.scale = s;
  for (int k = 0; dm && k < 8; k++) chain_param(&c, f->d_data[a][k] * dm->joint_fric[8 * j + k]);
  if (dparam) *dparam += c.dp;
}

/* ---------------------------------------------------------------------------------------------
   output columns */

int mb_column_sensor(const mb_model* m, int col, int* comp) {
  for (int i = 0; i < m->nsensor; i++) {
    const int k = col - m->sensor_outadr[i];
    if (k >= 0 && k < m->sensor_outnum[i]) {
      *comp = m->sensor_component[i] >= 0 ? m->sensor_component[i] : k;
      return i;
    }
  }
  return -1;
}

/* value of output column col; with c, its chain rule into c */
static double column_chain(const mb_model* m, const mb_data* d, int col, chain* c) {
  int comp, angle;
  const int i = col >= 0 && col < m->nout ? mb_column_sensor(m, col, &comp) : -1;
  if (i < 0) return NAN;

  /* the value, angles on the branch of the last recorded output */
  double v[MB_SENSOR_VALUES];
  mb_sensor_eval(m, d, i, v, &angle);
  double value = v[comp];
  if (angle) value += 2 * MB_PI * round((d->out[col] - value) / (2 * MB_PI));
  if (!c) return value;

  /* the chain rule of the sensor */
  const int* ref = m->sensor_ref + 2 * i;
  double e[3] = {0, 0, 0};
  if (comp < 3) e[comp] = 1; /* the unit vector of vector outputs (multipliers have more columns) */
  switch ((mb_sensor_type)m->sensor_type[i]) {
    case MB_SENSOR_POINT_POSITION:
      chain_lvec(c, m->marker_point[ref[0]], LV_VALUE, 1, e);
      break;
    case MB_SENSOR_POINT_VELOCITY:
      chain_lvec(c, m->marker_point[ref[0]], LV_RATE, 1, e);
      break;
    case MB_SENSOR_POINT_ACCELERATION:
      chain_lvec(c, m->marker_point[ref[0]], LV_ACCEL, 1, e);
      break;
    case MB_SENSOR_BODY_ANGULAR_VELOCITY:
      angular_velocity_chain(c, ref[0], comp);
      break;
    case MB_SENSOR_BODY_ANGULAR_VELOCITY_BODY:
      body_axes_angular_velocity_chain(c, ref[0], comp);
      break;
    case MB_SENSOR_BODY_ANGLES:
      angles_chain(c, ref[0], comp);
      break;
    case MB_SENSOR_JOINT_COORDINATE:
      joint_chain(c, ref[0], ref[1], 0);
      break;
    case MB_SENSOR_JOINT_RATE:
      joint_chain(c, ref[0], ref[1], 1);
      break;
    case MB_SENSOR_SPRING_LENGTH:
      spring_chain(c, ref[0], 0);
      break;
    case MB_SENSOR_SPRING_FORCE:
      spring_chain(c, ref[0], 1);
      break;
    case MB_SENSOR_KINETIC_ENERGY:
      kinetic_chain(c);
      break;
    case MB_SENSOR_GRAVITY_ENERGY:
      gravity_chain(c);
      break;
    case MB_SENSOR_ELASTIC_ENERGY:
      elastic_chain(c);
      break;
    case MB_SENSOR_TOTAL_ENERGY:
      kinetic_chain(c);
      gravity_chain(c);
      elastic_chain(c);
      break;
    case MB_SENSOR_CONTROL:
    case MB_SENSOR_CONTROL_ERROR:
      control_chain(c, ref[0], m->sensor_type[i] == MB_SENSOR_CONTROL_ERROR);
      break;
    case MB_SENSOR_REACTION_FORCE:
    case MB_SENSOR_REACTION_TORQUE:
      reaction_chain(c, ref[0], ref[1], m->sensor_type[i] == MB_SENSOR_REACTION_TORQUE, comp);
      break;
    case MB_SENSOR_MULTIPLIERS:
      chain_lambda(c, m->joint_row[m->joint_rowadr[ref[0]] + comp], 1);
      break;
    case MB_SENSOR_FRICTION_FORCE:
    case MB_SENSOR_NORMAL_FORCE:
      return NAN; /* not differentiated: models with friction have no gradients (sens_create) */
  }
  return value;
}

void mb_output_support(const mb_model* m, const mb_data* d, int col, unsigned char* blocks) {
  chain c = {m, d, 1, NULL, NULL, NULL, NULL, 0, blocks, NULL, NULL};
  column_chain(m, d, col, &c);
}

double mbd_output_add_partials(const mb_model* m, const mb_data* d, int col, double s, double* dq,
                               double* dqd, double* dqdd) {
  chain c = {m, d, s, dq, dqd, dqdd, NULL, 0, NULL, NULL, NULL};
  const int want = s != 0 && (dq || dqd || dqdd);
  return column_chain(m, d, col, want ? &c : NULL);
}

double mbd_output_add_lambda_partials(const mb_model* m, const mb_data* d, int col, double s,
                                      double* dlam) {
  chain c = {m, d, s, NULL, NULL, NULL, NULL, 0, NULL, dlam, NULL};
  return column_chain(m, d, col, s != 0 && dlam ? &c : NULL);
}

double mbd_output_lambda(const mb_model* m, const mb_data* d, int col, double* dlam) {
  memset(dlam, 0, sizeof(double) * (size_t)m->ncon);
  return mbd_output_add_lambda_partials(m, d, col, 1, dlam);
}

int mb_output_reads_multipliers(const mb_model* m, int col) {
  int comp;
  const int i = col >= 0 && col < m->nout ? mb_column_sensor(m, col, &comp) : -1;
  return i >= 0 && (m->sensor_type[i] == MB_SENSOR_REACTION_FORCE ||
                    m->sensor_type[i] == MB_SENSOR_REACTION_TORQUE ||
                    m->sensor_type[i] == MB_SENSOR_MULTIPLIERS ||
                    m->sensor_type[i] == MB_SENSOR_FRICTION_FORCE ||
                    m->sensor_type[i] == MB_SENSOR_NORMAL_FORCE);
}

double mbd_output_partials(const mb_model* m, const mb_data* d, int col, double* dq, double* dqd,
                           double* dqdd) {
  const size_t n = sizeof(double) * (size_t)m->nq;
  if (dq) memset(dq, 0, n);
  if (dqd) memset(dqd, 0, n);
  if (dqdd) memset(dqdd, 0, n);
  return mbd_output_add_partials(m, d, col, 1, dq, dqd, dqdd);
}

double mbd_output_param(const mb_model* m, const mb_model* dm, const mb_data* d, int col) {
  chain c = {m, d, 1, NULL, NULL, NULL, dm, 0, NULL, NULL, NULL};
  if (isnan(column_chain(m, d, col, &c))) return NAN;
  return c.dp;
}
