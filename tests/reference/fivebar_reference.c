/* Reference solution of the planar five-bar linkage with two springs (2 DOF).
 *
 * Formulation (independent of mbopt's natural coordinates + index-3 augmented Lagrangian):
 * the loop is cut at P2 into two open chains, each a double pendulum described by absolute
 * bar angles,
 *   left  chain from A: a1 = angle of A->P1, a2 = angle of P1->P2,
 *   right chain from B: b1 = angle of B->P3, b2 = angle of P3->P2,
 * and the cut is closed by the 2 constraints Phi(q) = P2_left - P2_right = 0. The mass matrix
 * is then block diagonal (two analytic 2x2 double-pendulum blocks) and the index-1 DAE
 *   M(q) qdd + Phi_q^T lambda = Q(q, qd),   Phi_q qdd = -(Phi_q qd)_q qd
 * is solved through the 2x2 Schur complement Phi_q M^-1 Phi_q^T. The ODE is integrated with
 * classical RK4 at a fixed step; after each step q and qd are projected (minimum norm, Newton)
 * back onto Phi = 0 and Phi_q qd = 0, which removes the drift of the index-1 form without
 * changing the order. All derivatives are analytic. psi1 is integrated as an extra RK4
 * quadrature state (Simpson's rule on each step).
 */
#include "reference/reference.h"

#include <math.h>
#include <stddef.h>

enum { NQ = 4, NY = 9 }; /* y = (a1, a2, b1, b2, their rates, psi1 integral) */

static const double GRAV = 9.81;
static const double AX = 0.0, AY = 0.0, BX = 1.0, BY = 0.0;
static const double SPRING_K = 100.0;
static const double R20X = 0.5, R20Y = -2.0;

/* One open chain: pivot, and per link length, distance of the centre of mass from the link's
 * first point, mass and centroidal inertia. */
typedef struct {
  double ox, oy;
  double l[2], c[2], m[2], inertia[2];
} chain;

typedef struct {
  chain left, right;
  double ls1, ls2; /* spring natural lengths */
} fivebar_model;

static fivebar_model make_model(void) {
  const double l_side = sqrt(2.0), l_mid = sqrt(3.25);
  const double m_mid = 1.5;
  fivebar_model md;
  /* Left: bar A1 (centre of mass at xG = sqrt(2)/2 from A), then bar 12. */
  md.left = (chain){AX,
                    AY,
                    {l_side, l_mid},
                    {sqrt(2.0) / 2.0, l_mid / 2.0},
                    {1.0, m_mid},
                    {1.0 / 6.0, m_mid * 3.25 / 12.0}};
  /* Right: bar 3B walked from B, then bar 23 walked from P3 (both centred). */
  md.right = (chain){BX,
                     BY,
                     {l_side, l_mid},
                     {l_side / 2.0, l_mid / 2.0},
                     {1.0, m_mid},
                     {1.0 / 6.0, m_mid * 3.25 / 12.0}};
  md.ls1 = sqrt(5.0);
  md.ls2 = sqrt(4.25);
  return md;
}

/* Tip of the first link and end of the chain. */
static void chain_points(const chain* ch, const double* a, double p1[2], double p2[2]) {
  p1[0] = ch->ox + ch->l[0] * cos(a[0]);
  p1[1] = ch->oy + ch->l[0] * sin(a[0]);
  p2[0] = p1[0] + ch->l[1] * cos(a[1]);
  p2[1] = p1[1] + ch->l[1] * sin(a[1]);
}

/* Double-pendulum mass matrix of a chain (symmetric 2x2: m11, m12, m22). */
static void chain_mass(const chain* ch, const double* a, double* m11, double* m12, double* m22) {
  *m11 = ch->inertia[0] + ch->m[0] * ch->c[0] * ch->c[0] + ch->m[1] * ch->l[0] * ch->l[0];
  *m12 = ch->m[1] * ch->l[0] * ch->c[1] * cos(a[0] - a[1]);
  *m22 = ch->inertia[1] + ch->m[1] * ch->c[1] * ch->c[1];
}

/* Gravity generalised forces plus the velocity-dependent terms moved to the right-hand side. */
static void chain_forces(const chain* ch, const double* a, const double* ad, double f[2]) {
  const double k = ch->m[1] * ch->l[0] * ch->c[1];
  const double s = sin(a[0] - a[1]);
  f[0] = -GRAV * (ch->m[0] * ch->c[0] + ch->m[1] * ch->l[0]) * cos(a[0]) - k * s * ad[1] * ad[1];
  f[1] = -GRAV * ch->m[1] * ch->c[1] * cos(a[1]) + k * s * ad[0] * ad[0];
}

static double chain_kinetic(const chain* ch, const double* a, const double* ad) {
  double m11, m12, m22;
  chain_mass(ch, a, &m11, &m12, &m22);
  return 0.5 * (m11 * ad[0] * ad[0] + 2.0 * m12 * ad[0] * ad[1] + m22 * ad[1] * ad[1]);
}

static double chain_gravity(const chain* ch, const double* a) {
  const double y1 = ch->oy + ch->c[0] * sin(a[0]);
  const double y2 = ch->oy + ch->l[0] * sin(a[0]) + ch->c[1] * sin(a[1]);
  return GRAV * (ch->m[0] * y1 + ch->m[1] * y2);
}

/* Constraint Phi = P2_left - P2_right and its Jacobian (2 x 4, row major). */
static void constraint(const fivebar_model* md, const double* q, double phi[2], double jac[8]) {
  double p1[2], pl[2], pr[2];
  chain_points(&md->left, q, p1, pl);
  chain_points(&md->right, q + 2, p1, pr);
  phi[0] = pl[0] - pr[0];
  phi[1] = pl[1] - pr[1];
  const double* l[4] = {&md->left.l[0], &md->left.l[1], &md->right.l[0], &md->right.l[1]};
  for (int j = 0; j < NQ; ++j) {
    const double sgn = j < 2 ? 1.0 : -1.0;
    jac[j] = -sgn * *l[j] * sin(q[j]);
    jac[NQ + j] = sgn * *l[j] * cos(q[j]);
  }
}

/* Solve a 2x2 system; returns 0 if (numerically) singular. */
static int solve2(double a11, double a12, double a21, double a22, const double b[2], double x[2]) {
  const double det = a11 * a22 - a12 * a21;
  const double scale = fabs(a11 * a22) + fabs(a12 * a21);
  if (!(fabs(det) > 1e-13 * scale)) return 0;
  x[0] = (a22 * b[0] - a12 * b[1]) / det;
  x[1] = (a11 * b[1] - a21 * b[0]) / det;
  return 1;
}

/* Right-hand side of the index-1 DAE written as an ODE in y. Returns 0 on failure. */
static int rhs(const fivebar_model* md, const double* y, double* dy) {
  const double* q = y;
  const double* qd = y + NQ;
  double phi[2], jac[8];
  constraint(md, q, phi, jac);

  /* Generalised forces: gravity + Coriolis per chain, then the springs. */
  double f[NQ];
  chain_forces(&md->left, q, qd, f);
  chain_forces(&md->right, q + 2, qd + 2, f + 2);
  double p1[2], p2[2], p3[2], p2r[2];
  chain_points(&md->left, q, p1, p2);
  chain_points(&md->right, q + 2, p3, p2r);
  {
    /* Spring 1 (B-P1) acts on a1; spring 2 (B-P2) is attached to P2 of the left chain,
     * which equals the right one on the constraint manifold. */
    const double d1x = p1[0] - BX, d1y = p1[1] - BY;
    const double d1 = hypot(d1x, d1y);
    const double f1 = SPRING_K * (d1 - md->ls1) / d1;
    const double d2x = p2[0] - BX, d2y = p2[1] - BY;
    const double d2 = hypot(d2x, d2y);
    const double f2 = SPRING_K * (d2 - md->ls2) / d2;
    const double l1 = md->left.l[0], l2 = md->left.l[1];
    f[0] -= (f1 * d1x + f2 * d2x) * (-l1 * sin(q[0])) + (f1 * d1y + f2 * d2y) * (l1 * cos(q[0]));
    f[1] -= f2 * (d2x * (-l2 * sin(q[1])) + d2y * (l2 * cos(q[1])));
  }

  /* gamma = -(Phi_q qd)_q qd. */
  double gamma[2] = {0.0, 0.0};
  {
    const double l[4] = {md->left.l[0], md->left.l[1], md->right.l[0], md->right.l[1]};
    for (int j = 0; j < NQ; ++j) {
      const double sgn = j < 2 ? 1.0 : -1.0;
      gamma[0] += sgn * l[j] * cos(q[j]) * qd[j] * qd[j];
      gamma[1] += sgn * l[j] * sin(q[j]) * qd[j] * qd[j];
    }
  }

  /* M^-1 applied to f and to the columns of Phi_q^T, block by block. */
  double minv_f[NQ], minv_jt[NQ][2];
  for (int c = 0; c < 2; ++c) {
    const chain* ch = c == 0 ? &md->left : &md->right;
    double m11, m12, m22;
    chain_mass(ch, q + 2 * c, &m11, &m12, &m22);
    if (!solve2(m11, m12, m12, m22, f + 2 * c, minv_f + 2 * c)) return 0;
    for (int r = 0; r < 2; ++r) {
      const double b[2] = {jac[r * NQ + 2 * c], jac[r * NQ + 2 * c + 1]};
      double x[2];
      if (!solve2(m11, m12, m12, m22, b, x)) return 0;
      minv_jt[2 * c][r] = x[0];
      minv_jt[2 * c + 1][r] = x[1];
    }
  }
  double s[2][2] = {{0.0, 0.0}, {0.0, 0.0}}, rhs_l[2] = {-gamma[0], -gamma[1]};
  for (int r = 0; r < 2; ++r) {
    for (int j = 0; j < NQ; ++j) {
      s[r][0] += jac[r * NQ + j] * minv_jt[j][0];
      s[r][1] += jac[r * NQ + j] * minv_jt[j][1];
      rhs_l[r] += jac[r * NQ + j] * minv_f[j];
    }
  }
  double lambda[2];
  if (!solve2(s[0][0], s[0][1], s[1][0], s[1][1], rhs_l, lambda)) return 0;

  for (int j = 0; j < NQ; ++j) {
    dy[j] = qd[j];
    dy[NQ + j] = minv_f[j] - minv_jt[j][0] * lambda[0] - minv_jt[j][1] * lambda[1];
  }
  const double ex = p2[0] - R20X, ey = p2[1] - R20Y;
  dy[2 * NQ] = ex * ex + ey * ey;
  return 1;
}

/* Minimum-norm projection onto Phi(q) = 0 (Gauss-Newton) and Phi_q qd = 0. */
static int project(const fivebar_model* md, double* y) {
  double phi[2], jac[8];
  for (int it = 0;; ++it) {
    constraint(md, y, phi, jac);
    /* Newton converges quadratically from the O(h^5) RK4 drift; 1e-14 is round-off. */
    if (fabs(phi[0]) + fabs(phi[1]) < 1e-14) break;
    if (it == 20) return 0;
    double g[2][2] = {{0.0, 0.0}, {0.0, 0.0}};
    for (int j = 0; j < NQ; ++j) {
      g[0][0] += jac[j] * jac[j];
      g[0][1] += jac[j] * jac[NQ + j];
      g[1][1] += jac[NQ + j] * jac[NQ + j];
    }
    double mu[2];
    if (!solve2(g[0][0], g[0][1], g[0][1], g[1][1], phi, mu)) return 0;
    for (int j = 0; j < NQ; ++j) y[j] -= jac[j] * mu[0] + jac[NQ + j] * mu[1];
  }
  constraint(md, y, phi, jac);
  double g[2][2] = {{0.0, 0.0}, {0.0, 0.0}}, v[2] = {0.0, 0.0};
  for (int j = 0; j < NQ; ++j) {
    g[0][0] += jac[j] * jac[j];
    g[0][1] += jac[j] * jac[NQ + j];
    g[1][1] += jac[NQ + j] * jac[NQ + j];
    v[0] += jac[j] * y[NQ + j];
    v[1] += jac[NQ + j] * y[NQ + j];
  }
  double mu[2];
  if (!solve2(g[0][0], g[0][1], g[0][1], g[1][1], v, mu)) return 0;
  for (int j = 0; j < NQ; ++j) y[NQ + j] -= jac[j] * mu[0] + jac[NQ + j] * mu[1];
  return 1;
}

static int rk4_step(const fivebar_model* md, double h, double* y) {
  double k1[NY], k2[NY], k3[NY], k4[NY], tmp[NY];
  if (!rhs(md, y, k1)) return 0;
  for (int i = 0; i < NY; ++i) tmp[i] = y[i] + 0.5 * h * k1[i];
  if (!rhs(md, tmp, k2)) return 0;
  for (int i = 0; i < NY; ++i) tmp[i] = y[i] + 0.5 * h * k2[i];
  if (!rhs(md, tmp, k3)) return 0;
  for (int i = 0; i < NY; ++i) tmp[i] = y[i] + h * k3[i];
  if (!rhs(md, tmp, k4)) return 0;
  for (int i = 0; i < NY; ++i) y[i] += h / 6.0 * (k1[i] + 2.0 * k2[i] + 2.0 * k3[i] + k4[i]);
  return project(md, y);
}

static double energy(const fivebar_model* md, const double* y) {
  const double* q = y;
  const double* qd = y + NQ;
  double p1[2], p2[2], p3[2], p2r[2];
  chain_points(&md->left, q, p1, p2);
  chain_points(&md->right, q + 2, p3, p2r);
  const double e1 = hypot(p1[0] - BX, p1[1] - BY) - md->ls1;
  const double e2 = hypot(p2[0] - BX, p2[1] - BY) - md->ls2;
  return chain_kinetic(&md->left, q, qd) + chain_kinetic(&md->right, q + 2, qd + 2) +
         chain_gravity(&md->left, q) + chain_gravity(&md->right, q + 2) +
         0.5 * SPRING_K * (e1 * e1 + e2 * e2);
}

static void store_row(const fivebar_model* md, const double* y, double t, int row, double* t_out,
                      double* points_out, double* energy_out) {
  double p1[2], p2[2], p3[2], p2r[2];
  chain_points(&md->left, y, p1, p2);
  chain_points(&md->right, y + 2, p3, p2r);
  t_out[row] = t;
  double* p = points_out + (size_t)row * FIVEBAR_REFERENCE_COLS;
  p[0] = p1[0];
  p[1] = p1[1];
  p[2] = 0.5 * (p2[0] + p2r[0]);
  p[3] = 0.5 * (p2[1] + p2r[1]);
  p[4] = p3[0];
  p[5] = p3[1];
  if (energy_out) energy_out[row] = energy(md, y);
}

static int integrate(const fivebar_model* md, double* y, double span, double h) {
  const int n = (int)ceil(span / h * (1.0 - 1e-12));
  if (n <= 0) return 1;
  const double hh = span / n;
  for (int i = 0; i < n; ++i) {
    if (!rk4_step(md, hh, y)) return 0;
  }
  return 1;
}

int fivebar_reference_ex(double t_end, double dt_out, double h, int nout_max, double* t_out,
                         double* points_out, double* energy_out, double* psi1_out) {
  if (!(t_end >= 0.0) || !(dt_out > 0.0) || !(h > 0.0) || nout_max < 0 ||
      (nout_max > 0 && (!t_out || !points_out)) || !isfinite(t_end) || t_end / dt_out > 1e8 ||
      t_end / h > 1e9)
    return -1;
  const fivebar_model md = make_model();
  /* Initial angles from P1 = (-1, -1), P2 = (0.5, -2), P3 = (2, -1); at rest. */
  double y[NY] = {atan2(-1.0, -1.0),
                  atan2(-1.0, 1.5),
                  atan2(-1.0, 1.0),
                  atan2(-1.0, -1.5),
                  0.0,
                  0.0,
                  0.0,
                  0.0,
                  0.0};
  if (!project(&md, y)) return -1;

  const long nint = (long)floor(t_end / dt_out * (1.0 + 1e-9));
  int stored = 0;
  for (long k = 0; k <= nint; ++k) {
    if (k > 0 && !integrate(&md, y, dt_out, h)) return -1;
    if (stored < nout_max) {
      store_row(&md, y, (double)k * dt_out, stored, t_out, points_out, energy_out);
      ++stored;
    }
  }
  /* Remainder after the last output time, so that psi1 covers [0, t_end]. */
  if (!integrate(&md, y, t_end - (double)nint * dt_out, h)) return -1;
  if (psi1_out) *psi1_out = y[2 * NQ];
  return stored;
}

int fivebar_reference(double t_end, double dt_out, double h, int nout_max, double* t_out,
                      double* points_out) {
  return fivebar_reference_ex(t_end, dt_out, h, nout_max, t_out, points_out, NULL, NULL);
}
