/* Reference solution of the spatial slider-crank (1 DOF).
 *
 * Formulation (independent of mbopt's natural coordinates + index-3 augmented Lagrangian):
 * every position and orientation is written in closed form as a function of the crank angle
 * phi (B on the crank circle, xC = sqrt(L^2 - By^2 - Bz^2), rod frame R = [e, u_r, e x u_r]
 * with u_r = (e x z)/|e x z| from the universal joint), so the system has the single Lagrange
 * equation
 *   m_eff(phi) phidd + 0.5 m_eff'(phi) phid^2 + V'(phi) = 0,   T = 0.5 m_eff(phi) phid^2,
 * with no constraints left. m_eff and m_eff' are exact: the kinematics is evaluated in
 * second-order Taylor ("jet") arithmetic in phi, which carries d/dphi and d2/dphi2 of every
 * quantity through the formulas without finite differences. The rod's angular velocity per
 * unit phid is taken from R' (body components w1 = u_r'.w, w2 = w'.e, w3 = e'.u_r), so the
 * spin about the rod axis is included. Integration: classical RK4 at a fixed step.
 */
#include "reference/reference.h"

#include <math.h>
#include <stddef.h>

static const double GRAV = 9.81;
static const double A_Y = 0.1, A_Z = 0.12; /* crank pivot, A_x = 0 */
static const double CRANK_R = 0.08, CRANK_M = 0.12, CRANK_IXX = 1e-4;
static const double ROD_L = 0.3, ROD_M = 0.5;
static const double ROD_I[3] = {2.5e-5, 3.75e-3, 3.75e-3}; /* rod axes: e, u_r, e x u_r */
static const double SLIDER_M = 2.0;

/* f(phi) with its first and second derivatives. */
typedef struct {
  double v, d, dd;
} jet;

static jet jconst(double c) {
  return (jet){c, 0.0, 0.0};
}
static jet jadd(jet a, jet b) {
  return (jet){a.v + b.v, a.d + b.d, a.dd + b.dd};
}
static jet jsub(jet a, jet b) {
  return (jet){a.v - b.v, a.d - b.d, a.dd - b.dd};
}
static jet jscale(double s, jet a) {
  return (jet){s * a.v, s * a.d, s * a.dd};
}
static jet jmul(jet a, jet b) {
  return (jet){a.v * b.v, a.d * b.v + a.v * b.d, a.dd * b.v + 2.0 * a.d * b.d + a.v * b.dd};
}
static jet jdiv(jet a, jet b) {
  const double q = a.v / b.v;
  const double qd = (a.d - q * b.d) / b.v;
  return (jet){q, qd, (a.dd - 2.0 * qd * b.d - q * b.dd) / b.v};
}
static jet jsqrt(jet a) {
  const double s = sqrt(a.v);
  const double sd = a.d / (2.0 * s);
  return (jet){s, sd, (a.dd - 2.0 * sd * sd) / (2.0 * s)}; /* from s^2 = a */
}

typedef struct {
  jet x, y, z;
} jvec;

static jvec jcross(jvec a, jvec b) {
  return (jvec){jsub(jmul(a.y, b.z), jmul(a.z, b.y)), jsub(jmul(a.z, b.x), jmul(a.x, b.z)),
                jsub(jmul(a.x, b.y), jmul(a.y, b.x))};
}

/* Dot products of derivative levels: which = 0 value, 1 first, 2 second derivative. */
static double comp(jet a, int which) {
  return which == 0 ? a.v : which == 1 ? a.d : a.dd;
}
static double jdot(jvec a, int wa, jvec b, int wb) {
  return comp(a.x, wa) * comp(b.x, wb) + comp(a.y, wa) * comp(b.y, wb) +
         comp(a.z, wa) * comp(b.z, wb);
}

typedef struct {
  double meff, dmeff, dv; /* m_eff, d m_eff / dphi, dV/dphi */
  double v;               /* potential energy */
  double xc, dxc;         /* xC and d xC / dphi */
  double b[3];
} crank_state;

static crank_state kinematics(double phi) {
  const double c = cos(phi), s = sin(phi);
  const jet cj = {c, -s, -c}, sj = {s, c, -s};
  const jvec b = {jconst(0.0), jadd(jconst(A_Y), jscale(CRANK_R, cj)),
                  jadd(jconst(A_Z), jscale(CRANK_R, sj))};
  /* Branch xC > 0 of |C - B| = L with C = (xC, 0, 0). */
  const jet xc = jsqrt(jsub(jconst(ROD_L * ROD_L), jadd(jmul(b.y, b.y), jmul(b.z, b.z))));
  const jvec e = {jscale(1.0 / ROD_L, xc), jscale(-1.0 / ROD_L, b.y), jscale(-1.0 / ROD_L, b.z)};
  /* u_r = (e x z) / |e x z| = (ey, -ex, 0) / sqrt(ex^2 + ey^2); w = e x u_r. */
  const jet n = jsqrt(jadd(jmul(e.x, e.x), jmul(e.y, e.y)));
  const jvec ur = {jdiv(e.y, n), jscale(-1.0, jdiv(e.x, n)), jconst(0.0)};
  const jvec w = jcross(e, ur);
  const jvec g = {jscale(0.5, xc), jscale(0.5, b.y), jscale(0.5, b.z)}; /* rod centre */

  /* Rod angular velocity per unit phid in rod axes, and its phi-derivative. */
  const double om[3] = {jdot(ur, 1, w, 0), jdot(w, 1, e, 0), jdot(e, 1, ur, 0)};
  const double dom[3] = {jdot(ur, 2, w, 0) + jdot(ur, 1, w, 1), jdot(w, 2, e, 0) + jdot(w, 1, e, 1),
                         jdot(e, 2, ur, 0) + jdot(e, 1, ur, 1)};

  crank_state st;
  const double crank_j = CRANK_M * 0.25 * CRANK_R * CRANK_R + CRANK_IXX;
  st.meff = crank_j + ROD_M * jdot(g, 1, g, 1) + SLIDER_M * xc.d * xc.d;
  st.dmeff = 2.0 * ROD_M * jdot(g, 1, g, 2) + 2.0 * SLIDER_M * xc.d * xc.dd;
  for (int i = 0; i < 3; ++i) {
    st.meff += ROD_I[i] * om[i] * om[i];
    st.dmeff += 2.0 * ROD_I[i] * om[i] * dom[i];
  }
  /* Gravity: crank centre z = A_z + (R/2) sin phi, rod centre z = Bz / 2, slider at z = 0. */
  st.v = GRAV * (CRANK_M * (A_Z + 0.5 * CRANK_R * s) + ROD_M * g.z.v);
  st.dv = GRAV * (CRANK_M * 0.5 * CRANK_R * c + ROD_M * g.z.d);
  st.xc = xc.v;
  st.dxc = xc.d;
  st.b[0] = b.x.v;
  st.b[1] = b.y.v;
  st.b[2] = b.z.v;
  return st;
}

static void rhs(const double y[2], double dy[2]) {
  const crank_state st = kinematics(y[0]);
  dy[0] = y[1];
  dy[1] = -(0.5 * st.dmeff * y[1] * y[1] + st.dv) / st.meff;
}

static void rk4_step(double h, double y[2]) {
  double k1[2], k2[2], k3[2], k4[2], tmp[2];
  rhs(y, k1);
  for (int i = 0; i < 2; ++i) tmp[i] = y[i] + 0.5 * h * k1[i];
  rhs(tmp, k2);
  for (int i = 0; i < 2; ++i) tmp[i] = y[i] + 0.5 * h * k2[i];
  rhs(tmp, k3);
  for (int i = 0; i < 2; ++i) tmp[i] = y[i] + h * k3[i];
  rhs(tmp, k4);
  for (int i = 0; i < 2; ++i) y[i] += h / 6.0 * (k1[i] + 2.0 * k2[i] + 2.0 * k3[i] + k4[i]);
}

int slider_crank_reference_ex(double t_end, double dt_out, double h, double phidot0, int nout_max,
                              double* t_out, double* out, double* energy_out) {
  if (!(t_end >= 0.0) || !(dt_out > 0.0) || !(h > 0.0) || !isfinite(phidot0) || nout_max < 0 ||
      (nout_max > 0 && (!t_out || !out)) || !isfinite(t_end) || t_end / dt_out > 1e8 ||
      t_end / h > 1e9)
    return -1;
  /* Same step in every output interval, landing exactly on the output times. */
  const int nsub = (int)ceil(dt_out / h * (1.0 - 1e-12));
  const double hh = dt_out / nsub;
  const long nint = (long)floor(t_end / dt_out * (1.0 + 1e-9));
  double y[2] = {0.0, phidot0};
  int stored = 0;
  for (long k = 0; k <= nint && stored < nout_max; ++k) {
    if (k > 0) {
      for (int i = 0; i < nsub; ++i) rk4_step(hh, y);
    }
    const crank_state st = kinematics(y[0]);
    t_out[stored] = (double)k * dt_out;
    double* row = out + (size_t)stored * SLIDER_CRANK_REFERENCE_COLS;
    row[0] = y[0];
    row[1] = y[1];
    row[2] = st.xc;
    row[3] = st.dxc * y[1];
    row[4] = st.b[0];
    row[5] = st.b[1];
    row[6] = st.b[2];
    if (energy_out) energy_out[stored] = 0.5 * st.meff * y[1] * y[1] + st.v;
    ++stored;
  }
  return stored;
}

int slider_crank_reference(double t_end, double dt_out, double h, double phidot0, int nout_max,
                           double* t_out, double* out) {
  return slider_crank_reference_ex(t_end, dt_out, h, phidot0, nout_max, t_out, out, NULL);
}
