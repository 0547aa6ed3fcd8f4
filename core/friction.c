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
   - prismatic: F_n = |f1x| + |f1y| + |f2x| + |f2y| + 2 |f3x| with f3x = T_z / (2 b) (planar: the
     two ends' normal forces), friction force F_f.
   The friction opposes the joint's rate x' = g . qd (g the gradient of the joint coordinate), so
   its generalised force is Q = -F_f g and its power -F_f x'. Inside a step the normal force reads
   the current multipliers, which the augmented Lagrangian iteration converges with the
   positions. */
#include <math.h>

#include "internal.h"

/* smoothing of the absolute values of the normal force's components, N */
#define MB_FRICTION_EPS 1e-6

static double smooth_abs(double x) {
  return sqrt(x * x + MB_FRICTION_EPS * MB_FRICTION_EPS);
}

/* Brown and McPhee's coefficient at slip speed v and its slope in v */
static double brown_mcphee(double mu_s, double mu_d, double vt, double v, double* slope) {
  const double x = v / vt, th = tanh(4 * x), den = 0.25 * x * x + 0.75;
  *slope = (mu_d * 4 * (1 - th * th) + (mu_s - mu_d) * (den - x * x) / (den * den * den)) / vt;
  return mu_d * th + (mu_s - mu_d) * x / (den * den);
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

/* the components of a global vector along marker 2's axes x, y, z (planar: axis, its normal) */
static void joint_frame(const mb_model* m, const mb_data* d, int j, const double* g, double* out) {
  for (int k = 0; k < 3; k++) {
    double e[3];
    if (m->dim == 2 && k == 2) {
      out[2] = g[2];
      break;
    }
    mb_lvec_eval(m, mb_reaction_frame(m, j, 1, 0, k), d->q, e);
    out[k] = mbu_dot3(e, g);
  }
}

void mb_friction_eval(const mb_model* m, const mb_data* d, int j, const double* mult,
                      mb_friction* f) {
  const double* p = m->joint_fric + 8 * j;
  const double mu_s = p[0], mu_d = p[1], vt = p[2], cv = p[3], radius = p[4], a = p[5], b = p[6];
  const double thrust = p[7];
  const int revolute = m->joint_type[j] == MB_JOINT_REVOLUTE;
  double value, Fg[3], Tg[3], F[3], T[3];
  f->ngrad = mb_joint_coordinate_gradient(m, d, j, revolute ? MB_COORD_ANGLE : MB_COORD_TRANSLATION,
                                          f->lv, f->w, &value, &f->rate);
  mb_joint_reaction(m, d, j, mult, Fg, Tg);
  joint_frame(m, d, j, Fg, F);
  joint_frame(m, d, j, Tg, T);

  /* the normal force from the forces at the joint's ends (eq. 7) */
  double axial = 0;
  if (revolute && m->dim == 2) {
    f->normal = MB_PI * MB_PI * MB_PI / 24 *
                sqrt(F[0] * F[0] + F[1] * F[1] + MB_FRICTION_EPS * MB_FRICTION_EPS);
  } else if (revolute) {
    const double f1x = -F[0] + T[1] / a, f1y = -F[1] - T[0] / a, f2x = -T[1] / a, f2y = T[0] / a;
    const double e2 = MB_FRICTION_EPS * MB_FRICTION_EPS;
    f->normal = MB_PI * MB_PI * MB_PI / 24 *
                (sqrt(f1x * f1x + f1y * f1y + e2) + sqrt(f2x * f2x + f2y * f2y + e2));
    axial = smooth_abs(F[2]);
  } else if (m->dim == 2) {
    f->normal = smooth_abs(-F[1] + T[2] / a) + smooth_abs(T[2] / a);
  } else {
    f->normal = smooth_abs(-F[0] + T[1] / a) + smooth_abs(-F[1] - T[0] / a) + smooth_abs(T[1] / a) +
                smooth_abs(T[0] / a) + 2 * smooth_abs(T[2] / (2 * b));
  }

  /* the law at the slip speed: a pin's surface and the thrust face turn at r w */
  double slope, slope_t = 0;
  if (revolute) {
    const double mu = brown_mcphee(mu_s, mu_d, vt, radius * f->rate, &slope);
    const double mu_t = thrust > 0 ? brown_mcphee(mu_s, mu_d, vt, thrust * f->rate, &slope_t) : 0;
    f->force = radius * f->normal * mu + thrust * axial * mu_t + cv * f->rate;
    f->slope = radius * radius * f->normal * slope + thrust * thrust * axial * slope_t + cv;
  } else {
    f->force = f->normal * brown_mcphee(mu_s, mu_d, vt, f->rate, &slope) + cv * f->rate;
    f->slope = f->normal * slope + cv;
  }
}

void mb_friction_forces(const mb_model* m, mb_data* d, const mb_jacobian* jac) {
  for (int j = 0; j < m->njoint; j++) {
    if (!m->joint_friction[j]) continue;
    mb_friction f;
    mb_friction_eval(m, d, j, d->lambda, &f);
    /* Q = -F_f g, C = dF_f/dx' g g^T with g = sum_a J_a^T w_a */
    for (int a = 0; a < f.ngrad; a++) mb_lvec_add_jtw(m, f.lv[a], -f.force, f.w[a], d->force);
    if (!jac || f.slope == 0) continue;
    for (int a = 0; a < f.ngrad; a++)
      for (int b = 0; b < f.ngrad; b++) {
        double G[9];
        for (int r = 0; r < 3; r++)
          for (int c = 0; c < 3; c++) G[3 * r + c] = f.w[a][r] * f.w[b][c];
        mb_lvec_add_jtgj(m, f.lv[a], f.lv[b], jac->cs * f.slope, G, jac->C);
      }
  }
}

double mb_friction_power(const mb_model* m, const mb_data* d) {
  double power = 0;
  for (int j = 0; j < m->njoint; j++) {
    if (!m->joint_friction[j]) continue;
    mb_friction f;
    mb_friction_eval(m, d, j, d->lambda, &f);
    power -= f.force * f.rate;
  }
  return power;
}
