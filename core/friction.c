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
#include <string.h>

#include "internal.h"

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

/* The friction force of joint j at joint rate `rate` on the reaction (F, T) in marker 2's frame,
   with its partials in the rate, in (F, T) and in the joint's friction data (mb_friction). */
static void friction_law(const mb_model* m, int j, double rate, const double* F, const double* T,
                         mb_friction* f) {
  const double* p = m->joint_fric + 8 * j;
  const double radius = p[4], a = p[5], b = p[6], thrust = p[7];
  const int revolute = m->joint_type[j] == MB_JOINT_REVOLUTE;
  double dN[6] = {0}, dA[6] = {0}, dNa = 0, dNb = 0, axial = 0;
  for (int k = 0; k < 6; k++) f->d_reaction[k] = 0;
  for (int k = 0; k < 8; k++) f->d_data[k] = 0;

  /* the normal force from the forces at the joint's ends (eq. 7) and its partials in F, T (dN),
     a and b */
  if (revolute && m->dim == 2) {
    const double c = MB_PI * MB_PI * MB_PI / 24;
    f->normal = c * smooth_norm(F[0], F[1], &dN[0], &dN[1]);
    dN[0] *= c, dN[1] *= c;
  } else if (revolute) {
    /* f1 = (-F_x + T_y/a, -F_y - T_x/a), f2 = (-T_y/a, T_x/a) */
    const double c = MB_PI * MB_PI * MB_PI / 24;
    double d1x, d1y, d2x, d2y;
    const double n1 = smooth_norm(-F[0] + T[1] / a, -F[1] - T[0] / a, &d1x, &d1y);
    const double n2 = smooth_norm(-T[1] / a, T[0] / a, &d2x, &d2y);
    f->normal = c * (n1 + n2);
    dN[0] = -c * d1x, dN[1] = -c * d1y;
    dN[3] = c * (-d1y + d2y) / a, dN[4] = c * (d1x - d2x) / a;
    dNa = -(dN[3] * T[0] + dN[4] * T[1]) / a;
    double unused;
    axial = smooth_norm(F[2], 0, &dA[2], &unused);
  } else if (m->dim == 2) {
    /* the planar slider's ends: -F_y + T_z/a and T_z/a */
    double d1, d2, unused;
    f->normal =
        smooth_norm(-F[1] + T[2] / a, 0, &d1, &unused) + smooth_norm(T[2] / a, 0, &d2, &unused);
    dN[1] = -d1, dN[5] = (d1 + d2) / a;
    dNa = -dN[5] * T[2] / a;
  } else {
    /* |f1x| + |f1y| + |f2x| + |f2y| + 2 |f3x|, f3x = T_z / (2 b) */
    double e[5], unused;
    const double v[5] = {-F[0] + T[1] / a, -F[1] - T[0] / a, T[1] / a, T[0] / a, T[2] / (2 * b)};
    f->normal = 0;
    for (int k = 0; k < 5; k++)
      f->normal += (k == 4 ? 2 : 1) * smooth_norm(v[k], 0, &e[k], &unused);
    dN[0] = -e[0], dN[1] = -e[1];
    dN[3] = (-e[1] + e[3]) / a, dN[4] = (e[0] + e[2]) / a, dN[5] = e[4] / b;
    dNa = -(dN[3] * T[0] + dN[4] * T[1]) / a;
    dNb = -dN[5] * T[2] / b;
  }

  /* the law at the slip speed: a pin's surface and the thrust face turn at r w */
  double dv, dmus, dmud, dvt;
  const double r = revolute ? radius : 1;
  const double mu = brown_mcphee(p, r * rate, &dv, &dmus, &dmud, &dvt);
  f->force = r * f->normal * mu + p[3] * rate;
  f->slope = r * r * f->normal * dv + p[3];
  for (int k = 0; k < 6; k++) f->d_reaction[k] = r * mu * dN[k];
  f->d_data[0] = r * f->normal * dmus, f->d_data[1] = r * f->normal * dmud;
  f->d_data[2] = r * f->normal * dvt, f->d_data[3] = rate;
  if (revolute) f->d_data[4] = f->normal * (mu + r * rate * dv);
  f->d_data[5] = r * mu * dNa, f->d_data[6] = r * mu * dNb;
  if (revolute && thrust > 0) {
    const double mt = brown_mcphee(p, thrust * rate, &dv, &dmus, &dmud, &dvt);
    f->force += thrust * axial * mt;
    f->slope += thrust * thrust * axial * dv;
    for (int k = 0; k < 6; k++) f->d_reaction[k] += thrust * mt * dA[k];
    f->d_data[0] += thrust * axial * dmus, f->d_data[1] += thrust * axial * dmud;
    f->d_data[2] += thrust * axial * dvt;
    f->d_data[7] = axial * (mt + thrust * rate * dv);
  }
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

void mbd_joint_gradient_param(const mb_model* m, const mb_model* dm, const mb_data* d, int j,
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

void mb_friction_eval(const mb_model* m, const mb_data* d, int j, const double* mult,
                      mb_friction* f) {
  double value, Fg[3], Tg[3], F[3], T[3];
  f->ngrad = mb_joint_coordinate_gradient(m, d, j, mb_friction_coordinate(m, j), f->lv, f->w,
                                          &value, &f->rate);
  mb_joint_reaction(m, d, j, mult, Fg, Tg);
  joint_frame(m, d, j, Fg, Tg, F, T);
  friction_law(m, j, f->rate, F, T, f);
}

int mb_friction_lvecs(const mb_model* m, int j, int* lv) {
  const int* meas = m->joint_measure + 6 * j;
  const int mk1 = m->joint_marker[2 * j], mk2 = m->joint_marker[2 * j + 1];
  int n = 0;
  for (int k = 0; k < 5; k++) lv[n++] = meas[k];
  lv[n++] = m->marker_point[mk1], lv[n++] = m->marker_point[mk2];
  lv[n++] = m->marker_axis[mk2], lv[n++] = m->marker_ref[mk2], lv[n++] = m->marker_third[mk2];
  for (int r = m->joint_rowadr[j]; r < m->joint_rowadr[j] + m->joint_rownum[j]; r++)
    for (int k = 0; k < 4; k++) lv[n++] = m->con_lvec[4 * m->joint_row[r] + k];
  return n;
}

/* T += s (J_lv^T w) v^T for a dense v (nq), on the system pattern */
static void add_lvec_outer(const mb_model* m, int lv, const double* w, const double* v, double s,
                           double* T) {
  const mb_pattern* sys = m->structure->sys;
  const int dim = m->dim;
  for (int t = m->lvec_termadr[lv]; t < m->lvec_termadr[lv] + m->lvec_termnum[lv]; t++) {
    const double* W = m->term_W + 9 * t;
    for (int r = 0; r < dim; r++) {
      double u = 0;
      for (int i = 0; i < dim; i++) u += W[3 * i + r] * w[i];
      if (u == 0) continue;
      for (int c = 0; c < m->nq; c++)
        if (v[c] != 0) {
          const int e = mb_pattern_entry(sys, m->term_qadr[t] + r, c);
          if (e >= 0) T[e] += s * u * v[c];
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

void mb_friction_tangent(const mb_model* m, mb_data* d, double alpha, double s, double* T) {
  const int nq = m->nq, nc = m->ncon;
  double *dq = d->fric_work, *v = dq + nq, *w = v + nq;
  for (int j = 0; j < m->njoint; j++) {
    if (!m->joint_friction[j]) continue;
    mb_friction f;
    mb_friction_eval(m, d, j, d->lambda, &f);
    memset(dq, 0, sizeof(double) * (2 * (size_t)nq + nc));
    mbd_friction_partials(m, d, j, d->lambda, &f, 1, dq, NULL, w, NULL, NULL);
    /* K_f = F H + g dF/dq^T, and through the multipliers lambda + alpha S Phi: g dF/dlambda^T
       alpha S Phi_q */
    add_coordinate_hessian(m, d, j, mb_friction_coordinate(m, j), s * f.force, T);
    for (int i = 0; i < nc; i++) w[i] *= alpha * m->con_scale[i];
    mb_rows_mul_t(&m->structure->phiq, d->phiq, w, 1, v);
    for (int k = 0; k < nq; k++) dq[k] += v[k];
    for (int a = 0; a < f.ngrad; a++) add_lvec_outer(m, f.lv[a], f.w[a], dq, s, T);
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
