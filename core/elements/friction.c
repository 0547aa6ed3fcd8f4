/* Joint friction: Brown and McPhee's law on the normal force a joint carries, as Verulkar, Sandu,
   Sandu and Dopico apply it ("Simultaneous optimal system and controller design for multibody
   systems with joint friction using direct sensitivities", eqs. 1, 6, 7):

     F_f(v) = F_n [mu_d tanh(4 v / v_t) + (mu_s - mu_d) (v / v_t) / ((v / (2 v_t))^2 + 3/4)^2]
              + c_v v,

   smooth in v, with stiction below the transition velocity v_t. The normal force comes from the
   joint's reaction (reactions.c) in marker 2's frame, split into forces at the two ends of the
   joint's length a that carry its bending moments (eq. 7), each taken by a smooth absolute value
   |x|_e = sqrt(x^2 + e^2):
   - revolute: F_n = pi^3/24 (|f1|_e + |f2|_e) on a pin of radius r (the parabolic pressure of a
     pin in its bore), slip speed r w, friction torque r F_f; in space also the axial thrust |f_z|
     on the thrust radius r_t;
   - cylindrical: the same normal force, with a friction torque r F_f(r w) on the rotation and a
     friction force F_f(v) on the slide (the paper's per-joint rules);
   - prismatic: F_n = |f1x| + |f1y| + |f2x| + |f2y| + 2 |f3x| with f3x = T_z / (2 b) (planar: the
     two ends' normal forces), friction force F_f;
   - spherical: a ball of radius r under F_n = |F|_e turning at the relative angular velocity w
     (a vector): the torque r F_f(r |w|) opposes w, smooth through w = 0 since F_f is odd.
   The friction opposes each rate x_a = g_a . qd it reads (a joint coordinate's rate, or a
   component of w), so its generalised force is Q = -sum_a F_a g_a and its power -sum_a F_a x_a.
   Inside a step the normal force reads the current multipliers, which the augmented Lagrangian
   iteration converges with the positions. */
#include <math.h>
#include <string.h>

#include "chain.h"

/* smoothing of the absolute values of the normal force's components, N */
#define MB_FRICTION_EPS 1e-6

/* sqrt(x^2 + y^2 + e^2) and its partials */
static double smooth_norm(double x, double y, double* dx, double* dy) {
  const double n = sqrt(x * x + y * y + MB_FRICTION_EPS * MB_FRICTION_EPS);
  *dx = x / n, *dy = y / n;
  return n;
}

/* Brown and McPhee's coefficient mu(v) with its partials in v, mu_s, mu_d and v_t */
static double brown_mcphee(const double* p, double v, double* dv, double* dmus, double* dmud,
                           double* dvt) {
  const double mu_s = p[0], mu_d = p[1], vt = p[2];
  const double x = v / vt, th = tanh(4 * x), den = 0.25 * x * x + 0.75, hump = x / (den * den);
  *dv = (mu_d * 4 * (1 - th * th) + (mu_s - mu_d) * (den - x * x) / (den * den * den)) / vt;
  *dmus = hump, *dmud = th - hump, *dvt = -*dv * v / vt;
  return mu_d * th + (mu_s - mu_d) * hump;
}

/* tanh(y) / y and (d/dy (tanh(y) / y)) / y, both even and smooth in y: by their series where the
   direct forms cancel */
static double tanh_ratio(double y, double* d_over_y) {
  const double y2 = y * y;
  if (fabs(y) < 0.03) {
    *d_over_y = -2.0 / 3 +
                y2 * (8.0 / 15 + y2 * (-34.0 / 105 + y2 * (496.0 / 2835 - y2 * 13820.0 / 155925)));
    return 1 + y2 * (-1.0 / 3 + y2 * (2.0 / 15 + y2 * (-17.0 / 315 + y2 * 62.0 / 2835)));
  }
  const double t = tanh(y);
  *d_over_y = (y * (1 - t * t) - t) / (y2 * y);
  return t / y;
}

/* The normal force of joint j (eq. 7 and the rules above) on the reaction (F, T) in marker 2's
   frame, with its partials in (F, T) (dN), the length a and the width b; a spatial revolute
   joint's axial thrust |F_z|_e with its partials (dA). */
static double normal_force(const mb_model* m, int j, const double* F, const double* T, double* dN,
                           double* dNa, double* dNb, double* axial, double* dA) {
  const double* p = m->joint_fric + 8 * j;
  const double a = p[5], b = p[6], pin = MB_PI * MB_PI * MB_PI / 24;
  const int type = m->joint_type[j];
  double normal, unused;
  for (int k = 0; k < 6; k++) dN[k] = dA[k] = 0;
  *dNa = *dNb = *axial = 0;
  if (type == MB_JOINT_SPHERICAL) {
    normal = sqrt(F[0] * F[0] + F[1] * F[1] + F[2] * F[2] + MB_FRICTION_EPS * MB_FRICTION_EPS);
    for (int k = 0; k < 3; k++) dN[k] = F[k] / normal;
  } else if (type != MB_JOINT_PRISMATIC && m->dim == 2) {
    normal = pin * smooth_norm(F[0], F[1], &dN[0], &dN[1]);
    dN[0] *= pin, dN[1] *= pin;
  } else if (type != MB_JOINT_PRISMATIC) {
    /* f1 = (-F_x + T_y/a, -F_y - T_x/a), f2 = (-T_y/a, T_x/a) */
    double d1x, d1y, d2x, d2y;
    const double n1 = smooth_norm(-F[0] + T[1] / a, -F[1] - T[0] / a, &d1x, &d1y);
    const double n2 = smooth_norm(-T[1] / a, T[0] / a, &d2x, &d2y);
    normal = pin * (n1 + n2);
    dN[0] = -pin * d1x, dN[1] = -pin * d1y;
    dN[3] = pin * (-d1y + d2y) / a, dN[4] = pin * (d1x - d2x) / a;
    *dNa = -(dN[3] * T[0] + dN[4] * T[1]) / a;
    if (type == MB_JOINT_REVOLUTE) *axial = smooth_norm(F[2], 0, &dA[2], &unused);
  } else if (m->dim == 2) {
    /* the planar slider's ends: -F_y + T_z/a and T_z/a */
    double d1, d2;
    normal =
        smooth_norm(-F[1] + T[2] / a, 0, &d1, &unused) + smooth_norm(T[2] / a, 0, &d2, &unused);
    dN[1] = -d1, dN[5] = (d1 + d2) / a;
    *dNa = -dN[5] * T[2] / a;
  } else {
    /* |f1x| + |f1y| + |f2x| + |f2y| + 2 |f3x|, f3x = T_z / (2 b) */
    double e[5];
    const double v[5] = {-F[0] + T[1] / a, -F[1] - T[0] / a, T[1] / a, T[0] / a, T[2] / (2 * b)};
    normal = 0;
    for (int k = 0; k < 5; k++) normal += (k == 4 ? 2 : 1) * smooth_norm(v[k], 0, &e[k], &unused);
    dN[0] = -e[0], dN[1] = -e[1];
    dN[3] = (-e[1] + e[3]) / a, dN[4] = (e[0] + e[2]) / a, dN[5] = e[4] / b;
    *dNa = -(dN[3] * T[0] + dN[4] * T[1]) / a;
    *dNb = -dN[5] * T[2] / b;
  }
  return normal;
}

/* F_a on rate a of a joint whose slip speed is r x_a (r = 1 on a slide) from its normal force
   with partials dN, dNa, dNb; radius_data: r is the joint's radius (index 4 of the data) */
static void rate_law(const double* p, double r, int radius_data, const double* dN, double dNa,
                     double dNb, int a, mb_friction* f) {
  double dv, dmus, dmud, dvt;
  const double rate = f->rate[a], mu = brown_mcphee(p, r * rate, &dv, &dmus, &dmud, &dvt);
  double* dd = f->d_data[a];
  f->force[a] = r * f->normal * mu + p[3] * rate;
  f->slope[a][a] = r * r * f->normal * dv + p[3];
  for (int k = 0; k < 6; k++) f->d_reaction[a][k] = r * mu * dN[k];
  dd[0] = r * f->normal * dmus, dd[1] = r * f->normal * dmud;
  dd[2] = r * f->normal * dvt, dd[3] = rate;
  if (radius_data) dd[4] = f->normal * (mu + r * rate * dv);
  dd[5] = r * mu * dNa, dd[6] = r * mu * dNb;
}

/* the ball's torque F_a = (r^2/v_t) F_n psi(u) w_a + c_v w_a, psi(u) = mu(u v_t)/u with
   u = r |w| / v_t, and its partials */
static void ball_law(const double* p, const double* dN, mb_friction* f) {
  const double mu_s = p[0], mu_d = p[1], vt = p[2], cv = p[3], r = p[4], Fn = f->normal;
  const double* w = f->rate;
  const double u = r * sqrt(mbu_dot3(w, w)) / vt, den = 0.25 * u * u + 0.75;
  double dtanh;
  const double tr = 4 * tanh_ratio(4 * u, &dtanh); /* tanh(4u)/u */
  /* psi and psi'(u)/u */
  const double psi = mu_d * tr + (mu_s - mu_d) / (den * den);
  const double dpsi = mu_d * 64 * dtanh - (mu_s - mu_d) / (den * den * den);
  const double c = r * r / vt, k2 = (r / vt) * (r / vt);
  for (int a = 0; a < 3; a++) {
    double* dd = f->d_data[a];
    f->force[a] = (c * Fn * psi + cv) * w[a];
    for (int b = 0; b < 3; b++) f->slope[a][b] = c * Fn * k2 * dpsi * w[a] * w[b];
    f->slope[a][a] += c * Fn * psi + cv;
    for (int k = 0; k < 6; k++) f->d_reaction[a][k] = c * psi * w[a] * dN[k];
    dd[0] = c * Fn * w[a] / (den * den), dd[1] = c * Fn * w[a] * (tr - 1 / (den * den));
    dd[2] = -c * Fn * w[a] * (psi + u * u * dpsi) / vt, dd[3] = w[a];
    dd[4] = Fn * w[a] * r / vt * (2 * psi + u * u * dpsi);
  }
}

/* The friction of joint j on the reaction (F, T) in marker 2's frame at the rates in f->rate */
static void friction_law(const mb_model* m, int j, const double* F, const double* T,
                         mb_friction* f) {
  const double* p = m->joint_fric + 8 * j;
  const double thrust = p[7];
  double dN[6], dA[6], dNa, dNb, axial;
  memset(f->slope, 0, sizeof f->slope);
  memset(f->d_data, 0, sizeof f->d_data);
  f->normal = normal_force(m, j, F, T, dN, &dNa, &dNb, &axial, dA);
  if (m->joint_type[j] == MB_JOINT_SPHERICAL) {
    ball_law(p, dN, f);
    return;
  }
  /* a pin's surface and the thrust face turn at r w */
  for (int a = 0; a < f->n; a++) {
    const int angle = mb_friction_coordinate(m, j, a) == MB_COORD_ANGLE;
    rate_law(p, angle ? p[4] : 1, angle, dN, dNa, dNb, a, f);
  }
  if (m->joint_type[j] == MB_JOINT_REVOLUTE && thrust > 0) {
    double dv, dmus, dmud, dvt;
    const double rate = f->rate[0], mt = brown_mcphee(p, thrust * rate, &dv, &dmus, &dmud, &dvt);
    double* dd = f->d_data[0];
    f->force[0] += thrust * axial * mt;
    f->slope[0][0] += thrust * thrust * axial * dv;
    for (int k = 0; k < 6; k++) f->d_reaction[0][k] += thrust * mt * dA[k];
    dd[0] += thrust * axial * dmus, dd[1] += thrust * axial * dmud;
    dd[2] += thrust * axial * dvt;
    dd[7] = axial * (mt + thrust * rate * dv);
  }
}

/* rate a of joint j's friction: a joint coordinate's rate, or component a of the angular velocity
   of marker 2's frame less marker 1's */
static void friction_rate_chain(mb_chain* c, int j, int a) {
  const mb_model* m = c->m;
  const int coord = mb_friction_coordinate(m, j, a);
  if (coord >= 0) {
    mb_chain_joint(c, j, coord, 1);
    return;
  }
  for (int side = 0; side < 2; side++) {
    int E[3];
    mb_marker_frame(m, m->joint_marker[2 * j + side], E);
    mb_chain_frame_angular_velocity(c, E, side ? 1 : -1, a);
  }
}

void mbd_friction_rate_partials(const mb_model* m, const mb_data* d, int j, int a, double s,
                                double* dq, double* g) {
  mb_chain c = {m, d, s, dq, g, NULL, NULL, 0, NULL, NULL, NULL};
  friction_rate_chain(&c, j, a);
}

void mbd_friction_rate_hessian_mul(const mb_model* m, const mb_data* d, int j, int a,
                                   const double* x, int transposed, double s, double* y) {
  /* the rate x_a = g_a . qd at qd = x has d x_a / dq = (dg_a/dq)^T x; the angular velocity's
     dg_a/dq is skew */
  mb_data at = *d;
  at.qd = (double*)x;
  const int skew = mb_friction_coordinate(m, j, a) < 0 && !transposed;
  mb_chain c = {m, &at, skew ? -s : s, y, NULL, NULL, NULL, 0, NULL, NULL, NULL};
  friction_rate_chain(&c, j, a);
}

void mbd_friction_partials(const mb_model* m, const mb_data* d, int j, int a, const double* mult,
                           const mb_friction* f, double s, double* dq, double* dqd, double* dlam,
                           const mb_model* dm, double* dparam) {
  mb_chain c = {m, d, 0, dq, dqd, NULL, dm, 0, NULL, dlam, mult};
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
    mb_chain_reaction(&c, j, 1, k >= 3, k % 3);
  }
  /* through the friction data */
  c.scale = s;
  for (int k = 0; dm && k < 8; k++) mb_chain_param(&c, f->d_data[a][k] * dm->joint_fric[8 * j + k]);
  if (dparam) *dparam += c.dp;
}

static void joint_gradient_param(const mb_model* m, const mb_model* dm, const mb_data* d, int j,
                                 int coord, double s, double* y) {
  int lv[3];
  double w[3][3], v[3][3], dv[3][3], dw[3][3], value, rate;
  const int n = mb_joint_coordinate_gradient(m, d, j, coord, lv, w, &value, &rate);
  for (int a = 0; a < n; a++) {
    mb_lvec_eval(m, lv[a], d->q, v[a]);
    mb_lvec_eval(dm, lv[a], d->q, dv[a]);
    if (m->dim == 2) dv[a][2] = 0;
  }
  if (coord == MB_COORD_ANGLE) {
    /* w = ((c b - s e)/n, c a/n, -s a/n) for a = x2, b = y1, e = x1, differentiated */
    const double *A = v[0], *B = v[1], *E = v[2], *dA = dv[0], *dB = dv[1], *dE = dv[2];
    const double sn = mbu_dot3(A, B), c = mbu_dot3(A, E), nn = sn * sn + c * c;
    const double ds = mbu_dot3(dA, B) + mbu_dot3(A, dB), dc = mbu_dot3(dA, E) + mbu_dot3(A, dE);
    const double dn = 2 * (sn * ds + c * dc);
    for (int k = 0; k < 3; k++) {
      dw[0][k] = (dc * B[k] + c * dB[k] - ds * E[k] - sn * dE[k] - w[0][k] * dn) / nn;
      dw[1][k] = (dc * A[k] + c * dA[k] - w[1][k] * dn) / nn;
      dw[2][k] = (-ds * A[k] - sn * dA[k] - w[2][k] * dn) / nn;
    }
  } else {
    for (int k = 0; k < 3; k++) dw[0][k] = dv[1][k], dw[1][k] = dv[0][k];
  }
  /* g = sum J_a^T w_a: through the Jacobians (the tangent model's) and the weights */
  for (int a = 0; a < n; a++) {
    mb_lvec_add_jtw(dm, lv[a], s, w[a], y);
    mb_lvec_add_jtw(m, lv[a], s, dw[a], y);
  }
}

void mbd_friction_gradient_param(const mb_model* m, const mb_model* dm, const mb_data* d, int j,
                                 int a, double s, double* y) {
  const int coord = mb_friction_coordinate(m, j, a);
  if (coord >= 0) {
    joint_gradient_param(m, dm, d, j, coord, s, y);
    return;
  }
  /* g_a = sum over the markers (+ marker 2, - marker 1) of 1/2 sum_k J_k^T (E_a x e_k) */
  for (int side = 0; side < 2; side++) {
    int E[3];
    mb_marker_frame(m, m->joint_marker[2 * j + side], E);
    for (int k = 0; k < 3; k++) {
      double e[3], de[3], w[3], dw[3], unit[3] = {0, 0, 0};
      unit[a] = side ? 0.5 : -0.5;
      mb_lvec_eval(m, E[k], d->q, e);
      mb_lvec_eval(dm, E[k], d->q, de);
      mbu_cross3(unit, e, w);
      mbu_cross3(unit, de, dw);
      mb_lvec_add_jtw(dm, E[k], s, w, y);
      mb_lvec_add_jtw(m, E[k], s, dw, y);
    }
  }
}

/* the reaction's force Fg and torque Tg (global) along marker 2's axes x, y, z into F, T (planar:
   axis, its normal; the torque about z stays in T[2]) */
static void joint_frame(const mb_model* m, const mb_data* d, int j, const double* Fg,
                        const double* Tg, double* F, double* T) {
  for (int k = 0; k < 3; k++) {
    if (m->dim == 2 && k == 2) {
      F[2] = 0, T[2] = Tg[2];
      break;
    }
    double e[3];
    mb_lvec_eval(m, mb_reaction_frame(m, j, 1, 0, k), d->q, e);
    F[k] = mbu_dot3(e, Fg), T[k] = mbu_dot3(e, Tg);
  }
}

int mb_joint_friction_rates(mb_joint_type type) {
  switch (type) {
    case MB_JOINT_REVOLUTE:
    case MB_JOINT_PRISMATIC:
      return 1;
    case MB_JOINT_CYLINDRICAL:
      return 2;
    case MB_JOINT_SPHERICAL:
      return 3;
    default:
      return 0;
  }
}

void mb_friction_eval(const mb_model* m, const mb_data* d, int j, const double* mult,
                      mb_friction* f) {
  double Fg[3], Tg[3], F[3], T[3];
  f->n = mb_friction_rates(m, j);
  if (m->joint_type[j] == MB_JOINT_SPHERICAL) {
    int E1[3], E2[3];
    double w1[3];
    mb_marker_frame(m, m->joint_marker[2 * j], E1);
    mb_marker_frame(m, m->joint_marker[2 * j + 1], E2);
    mb_frame_angular_velocity(m, E2, d->q, d->qd, f->rate);
    mb_frame_angular_velocity(m, E1, d->q, d->qd, w1);
    for (int k = 0; k < 3; k++) f->rate[k] -= w1[k];
  } else {
    for (int a = 0; a < f->n; a++) {
      int lv[3];
      double w[3][3], value;
      mb_joint_coordinate_gradient(m, d, j, mb_friction_coordinate(m, j, a), lv, w, &value,
                                   &f->rate[a]);
    }
  }
  mb_joint_reaction(m, d, j, mult, Fg, Tg);
  joint_frame(m, d, j, Fg, Tg, F, T);
  friction_law(m, j, F, T, f);
}

int mb_friction_lvecs(const mb_model* m, int j, int* lv) {
  const int* meas = m->joint_measure + 6 * j;
  const int mk1 = m->joint_marker[2 * j], mk2 = m->joint_marker[2 * j + 1];
  int n = 0;
  for (int k = 0; k < 5; k++)
    if (meas[k] >= 0) lv[n++] = meas[k];
  lv[n++] = m->marker_point[mk1], lv[n++] = m->marker_point[mk2];
  mb_marker_frame(m, mk2, lv + n);
  n += 3;
  if (m->joint_type[j] == MB_JOINT_SPHERICAL) {
    mb_marker_frame(m, mk1, lv + n);
    n += 3;
  }
  for (int r = m->joint_rowadr[j]; r < m->joint_rowadr[j] + m->joint_rownum[j]; r++)
    for (int k = 0; k < 4; k++) lv[n++] = m->con_lvec[4 * m->joint_row[r] + k];
  return n;
}

/* whether any of the n vectors x_a (nq each) has a nonzero in [i, i + len) */
static int any_nonzero(const double* x, int n, int nq, int i, int len) {
  for (int a = 0; a < n; a++)
    for (int k = i; k < i + len; k++)
      if (x[(size_t)a * nq + k] != 0) return 1;
  return 0;
}

/* T += s sum_ab S_ab g_a v_b^T for n dense g_a and v_b (nq each; S n x n in a 3 x 3 row-major
   slot, NULL: the identity), walking the system pattern's blocks where both have entries */
static void add_outer(const mb_model* m, int n, const double* g, const double* v, const double* S,
                      double s, double* T) {
  const mb_pattern* p = m->structure->sys;
  const int bs = p->bs, nq = m->nq;
  for (int cb = 0; cb < nq / bs; cb++) {
    if (!any_nonzero(v, n, nq, cb * bs, bs)) continue;
    double u[3][3]; /* u[a][c] = sum_b S_ab v_b at the block's column c */
    for (int a = 0; a < n; a++)
      for (int c = 0; c < bs; c++) {
        u[a][c] = 0;
        for (int b = 0; b < n; b++)
          u[a][c] += (S ? S[3 * a + b] : a == b) * v[(size_t)b * nq + cb * bs + c];
      }
    const int k0 = p->bcolptr[cb], k1 = p->bcolptr[cb + 1], stride = bs * (k1 - k0);
    for (int k = k0; k < k1; k++) {
      const int rb = p->browind[k];
      if (!any_nonzero(g, n, nq, rb * bs, bs)) continue;
      double* block = T + bs * bs * k0 + bs * (k - k0);
      for (int c = 0; c < bs; c++)
        for (int r = 0; r < bs; r++) {
          double sum = 0;
          for (int a = 0; a < n; a++) sum += g[(size_t)a * nq + rb * bs + r] * u[a][c];
          block[c * stride + r] += s * sum;
        }
    }
  }
}

/* T += s H, H the Hessian of joint j's coordinate, from its linear vectors */
static void add_coordinate_hessian(const mb_model* m, const mb_data* d, int j, int coord, double s,
                                   double* T) {
  static const double I3[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
  const int* meas = m->joint_measure + 6 * j;
  if (coord != MB_COORD_ANGLE) {
    /* (r2 - r1) . z1: J_rel^T J_z + J_z^T J_rel */
    mb_lvec_add_jtgj(m, meas[3], meas[4], s, I3, T);
    mb_lvec_add_jtgj(m, meas[4], meas[3], s, I3, T);
    return;
  }
  /* theta = atan2(S, C), S = a . b, C = a . e: H = (C H_S - S H_C + dS dC^T - dC dS^T) / N
     - dtheta dN^T / N, each gradient a sum of J_k^T w_k over k = a, b, e */
  const int lv[3] = {meas[0], meas[1], meas[2]};
  double v[3][3];
  for (int k = 0; k < 3; k++) mb_lvec_eval(m, lv[k], d->q, v[k]);
  const double S = mbu_dot3(v[0], v[1]), C = mbu_dot3(v[0], v[2]), N = S * S + C * C;
  double wS[3][3] = {{0}}, wC[3][3] = {{0}}, wt[3][3], wN[3][3];
  for (int i = 0; i < 3; i++) wS[0][i] = v[1][i], wS[1][i] = v[0][i];
  for (int i = 0; i < 3; i++) wC[0][i] = v[2][i], wC[2][i] = v[0][i];
  for (int k = 0; k < 3; k++)
    for (int i = 0; i < 3; i++) {
      wt[k][i] = (C * wS[k][i] - S * wC[k][i]) / N;
      wN[k][i] = 2 * (S * wS[k][i] + C * wC[k][i]);
    }
  mb_lvec_add_jtgj(m, lv[0], lv[1], s * C / N, I3, T);
  mb_lvec_add_jtgj(m, lv[1], lv[0], s * C / N, I3, T);
  mb_lvec_add_jtgj(m, lv[0], lv[2], -s * S / N, I3, T);
  mb_lvec_add_jtgj(m, lv[2], lv[0], -s * S / N, I3, T);
  for (int k = 0; k < 3; k++)
    for (int l = 0; l < 3; l++) {
      double G[9];
      for (int r = 0; r < 3; r++)
        for (int c = 0; c < 3; c++)
          G[3 * r + c] = (wS[k][r] * wC[l][c] - wC[k][r] * wS[l][c] - wt[k][r] * wN[l][c]) / N;
      mb_lvec_add_jtgj(m, lv[k], lv[l], s, G, T);
    }
}

/* T += s sum_a F_a dg_a/dq: the Hessians of the joint's coordinates, or for the spherical joint's
   angular velocity 1/2 sum_k J_k^T [f]x J_k over marker 2's frame less marker 1's, f = (F_a) */
static void add_rate_hessians(const mb_model* m, const mb_data* d, int j, const mb_friction* f,
                              double s, double* T) {
  if (m->joint_type[j] != MB_JOINT_SPHERICAL) {
    for (int a = 0; a < f->n; a++)
      add_coordinate_hessian(m, d, j, mb_friction_coordinate(m, j, a), s * f->force[a], T);
    return;
  }
  const double* F = f->force;
  const double G[9] = {0, -F[2], F[1], F[2], 0, -F[0], -F[1], F[0], 0};
  for (int side = 0; side < 2; side++) {
    int E[3];
    mb_marker_frame(m, m->joint_marker[2 * j + side], E);
    for (int k = 0; k < 3; k++) mb_lvec_add_jtgj(m, E[k], E[k], (side ? 0.5 : -0.5) * s, G, T);
  }
}

void mb_friction_tangent(const mb_model* m, mb_data* d, double alpha, const double* scale, double s,
                         double* T) {
  const size_t nq = m->nq, nc = m->ncon;
  double *g = d->fric_work, *dq = g + 3 * nq, *w = dq + 3 * nq;
  for (int j = 0; j < m->njoint; j++) {
    if (!m->joint_friction[j]) continue;
    mb_friction f;
    mb_friction_eval(m, d, j, d->lambda, &f);
    add_rate_hessians(m, d, j, &f, s, T);
    /* K_f += sum_a g_a dF_a/dq^T, and through the multipliers lambda + alpha S Phi:
       g_a dF_a/dlambda^T alpha S Phi_q */
    memset(g, 0, sizeof(double) * 6 * nq);
    for (int a = 0; a < f.n; a++) {
      double* dqa = dq + a * nq;
      memset(w, 0, sizeof(double) * nc);
      mbd_friction_partials(m, d, j, a, d->lambda, &f, 1, dqa, NULL, w, NULL, NULL);
      for (size_t i = 0; i < nc; i++) w[i] *= alpha * scale[i];
      mb_rows_mul_t(&m->structure->phiq, d->phiq, w, 1, dqa);
      mbd_friction_rate_partials(m, d, j, a, 1, NULL, g + a * nq);
    }
    add_outer(m, f.n, g, dq, NULL, s, T);
  }
}

void mb_friction_forces(const mb_model* m, mb_data* d, const mb_jacobian* jac) {
  const size_t nq = m->nq;
  double* g = d->fric_work; /* (3 nq) the rates' gradients */
  for (int j = 0; j < m->njoint; j++) {
    if (!m->joint_friction[j]) continue;
    mb_friction f;
    mb_friction_eval(m, d, j, d->lambda, &f);
    /* Q = -sum_a F_a g_a, C = sum_ab dF_a/dx_b g_a g_b^T */
    for (int a = 0; a < f.n; a++)
      mbd_friction_rate_partials(m, d, j, a, -f.force[a], NULL, d->force);
    if (!jac) continue;
    memset(g, 0, sizeof(double) * f.n * nq);
    for (int a = 0; a < f.n; a++) mbd_friction_rate_partials(m, d, j, a, 1, NULL, g + a * nq);
    add_outer(m, f.n, g, g, &f.slope[0][0], jac->cs, jac->C);
  }
}

const char* mb_friction_lock_hint(const mb_model* m) {
  return mb_friction_count(m, NULL) > 0
             ? "; with joint friction this can be the friction locking the mechanism (its normal "
               "force growing with the friction itself, as a drawer jams): lower the friction "
               "coefficients or lengthen the joints"
             : "";
}

double mb_friction_power(const mb_model* m, const mb_data* d) {
  double power = 0;
  for (int j = 0; j < m->njoint; j++) {
    if (!m->joint_friction[j]) continue;
    mb_friction f;
    mb_friction_eval(m, d, j, d->lambda, &f);
    for (int a = 0; a < f.n; a++) power -= f.force[a] * f.rate[a];
  }
  return power;
}
