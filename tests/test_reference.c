/* Self-test of the independent reference solutions (tests/reference/): step-halving
 * convergence, energy conservation, the published five-bar objective psi1 = 0.726877 and the
 * slider-crank loop closure. Steps are chosen so that the whole test stays well under a few
 * seconds at -O0 with sanitizers. */
#include "reference/reference.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct {
  int passed, failed;
} tally;

static void check(tally* t, int ok, const char* what, double value, double limit) {
  if (ok) {
    ++t->passed;
  } else {
    ++t->failed;
  }
  printf("%s %-58s %.3e (limit %.1e)\n", ok ? "PASS" : "FAIL", what, value, limit);
}

static double max_abs_diff(const double* a, const double* b, size_t n) {
  double m = 0.0;
  for (size_t i = 0; i < n; ++i) m = fmax(m, fabs(a[i] - b[i]));
  return m;
}

static double relative_drift(const double* e, int n) {
  double lo = e[0], hi = e[0];
  for (int i = 1; i < n; ++i) {
    lo = fmin(lo, e[i]);
    hi = fmax(hi, e[i]);
  }
  return (hi - lo) / fabs(e[0]);
}

static void test_fivebar(tally* t) {
  enum { N = 501 };
  const double t_end = 5.0, dt_out = 0.01;
  static double tc[N], pc[N * FIVEBAR_REFERENCE_COLS], ec[N];
  static double tf[N], pf[N * FIVEBAR_REFERENCE_COLS], ef[N];
  double psi_c = 0.0, psi_f = 0.0;
  const int nc = fivebar_reference_ex(t_end, dt_out, 1e-3, N, tc, pc, ec, &psi_c);
  const int nf = fivebar_reference_ex(t_end, dt_out, 5e-4, N, tf, pf, ef, &psi_f);
  check(t, nc == N && nf == N, "five-bar: number of output rows", (double)nf, (double)N);
  if (nc != N || nf != N) return;

  const double p0[6] = {-1.0, -1.0, 0.5, -2.0, 2.0, -1.0};
  const double d0 = max_abs_diff(pc, p0, 6);
  check(t, d0 < 1e-14, "five-bar: initial joint positions", d0, 1e-14);

  const double dpos = max_abs_diff(pc, pf, (size_t)N * FIVEBAR_REFERENCE_COLS);
  check(t, dpos < 1e-9, "five-bar: positions, h = 1e-3 vs 5e-4", dpos, 1e-9);

  const double drift = relative_drift(ef, N);
  check(t, drift < 1e-10, "five-bar: relative energy drift (h = 5e-4)", drift, 1e-10);

  const double dpsi = fabs(psi_f - 0.726877);
  printf("     five-bar psi1 = %.10f (h = 1e-3: %.10f)\n", psi_f, psi_c);
  check(t, dpsi < 2e-5, "five-bar: psi1 vs published 0.726877", dpsi, 2e-5);

  /* Bar lengths are kept by the constraint projection. */
  const double len2[4] = {2.0, 3.25, 3.25, 2.0};
  double dlen = 0.0;
  for (int i = 0; i < N; ++i) {
    const double* p = pf + (size_t)i * FIVEBAR_REFERENCE_COLS;
    const double pts[5][2] = {{0.0, 0.0}, {p[0], p[1]}, {p[2], p[3]}, {p[4], p[5]}, {1.0, 0.0}};
    for (int b = 0; b < 4; ++b) {
      const double l = hypot(pts[b + 1][0] - pts[b][0], pts[b + 1][1] - pts[b][1]);
      dlen = fmax(dlen, fabs(l - sqrt(len2[b])));
    }
  }
  check(t, dlen < 1e-13, "five-bar: bar lengths along the trajectory", dlen, 1e-13);
}

/* Slider-crank kinetic energy per unit phidot^2 and potential energy, recomputed here by a
 * third route: rod frame R(phi) built directly, body angular velocity from R^T dR/dphi and all
 * velocities by central differences. Checks m_eff (spin term included) independently of the
 * jet arithmetic of the reference. */
static void slider_crank_pose(double phi, double r[3][3], double g_rod[3], double g_crank[3],
                              double* xc) {
  const double b[3] = {0.0, 0.1 + 0.08 * cos(phi), 0.12 + 0.08 * sin(phi)};
  *xc = sqrt(0.09 - b[1] * b[1] - b[2] * b[2]);
  const double e[3] = {(*xc - b[0]) / 0.3, -b[1] / 0.3, -b[2] / 0.3};
  const double n = hypot(e[0], e[1]);
  const double u[3] = {e[1] / n, -e[0] / n, 0.0}; /* (e x z) / |e x z| */
  const double w[3] = {e[1] * u[2] - e[2] * u[1], e[2] * u[0] - e[0] * u[2],
                       e[0] * u[1] - e[1] * u[0]};
  for (int i = 0; i < 3; ++i) {
    r[i][0] = e[i];
    r[i][1] = u[i];
    r[i][2] = w[i];
  }
  g_rod[0] = 0.5 * (b[0] + *xc);
  g_rod[1] = 0.5 * b[1];
  g_rod[2] = 0.5 * b[2];
  g_crank[0] = 0.0;
  g_crank[1] = 0.1 + 0.04 * cos(phi);
  g_crank[2] = 0.12 + 0.04 * sin(phi);
}

static void slider_crank_fd_energy(double phi, double* meff, double* v) {
  const double d = 1e-5;
  double r[3][3], rp[3][3], rm[3][3], g[3], gp[3], gm[3], c[3], cp[3], cm[3], x, xp, xm;
  slider_crank_pose(phi, r, g, c, &x);
  slider_crank_pose(phi + d, rp, gp, cp, &xp);
  slider_crank_pose(phi - d, rm, gm, cm, &xm);
  double om[3][3]; /* R^T dR/dphi, skew-symmetric */
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) {
      om[i][j] = 0.0;
      for (int k = 0; k < 3; ++k) om[i][j] += r[k][i] * (rp[k][j] - rm[k][j]) / (2.0 * d);
    }
  }
  const double w[3] = {om[2][1], om[0][2], om[1][0]};
  const double inertia[3] = {2.5e-5, 3.75e-3, 3.75e-3};
  double m = 1e-4; /* crank centroidal inertia about the x axis */
  for (int i = 0; i < 3; ++i) {
    const double vg = (gp[i] - gm[i]) / (2.0 * d), vc = (cp[i] - cm[i]) / (2.0 * d);
    m += 0.5 * vg * vg + 0.12 * vc * vc + inertia[i] * w[i] * w[i];
  }
  const double vx = (xp - xm) / (2.0 * d);
  *meff = m + 2.0 * vx * vx;
  *v = 9.81 * (0.12 * c[2] + 0.5 * g[2]);
}

static void test_slider_crank(tally* t) {
  enum { N = 501 };
  const double t_end = 5.0, dt_out = 0.01, phidot0 = 6.0;
  static double tc[N], oc[N * SLIDER_CRANK_REFERENCE_COLS];
  static double tf[N], of[N * SLIDER_CRANK_REFERENCE_COLS], ef[N];
  const int nc = slider_crank_reference(t_end, dt_out, 2.5e-4, phidot0, N, tc, oc);
  const int nf = slider_crank_reference_ex(t_end, dt_out, 1.25e-4, phidot0, N, tf, of, ef);
  check(t, nc == N && nf == N, "slider-crank: number of output rows", (double)nf, (double)N);
  if (nc != N || nf != N) return;

  const double row0[7] = {0.0,  phidot0, sqrt(0.09 - 0.18 * 0.18 - 0.12 * 0.12), 0.0, 0.0,
                          0.18, 0.12};
  double d0 = max_abs_diff(of, row0, 3);
  d0 = fmax(d0, max_abs_diff(of + 4, row0 + 4, 3));
  check(t, d0 < 1e-15, "slider-crank: initial state", d0, 1e-15);

  /* Positions: phi, xC, B. */
  double dpos = 0.0;
  for (int i = 0; i < N; ++i) {
    const double* a = oc + (size_t)i * SLIDER_CRANK_REFERENCE_COLS;
    const double* b = of + (size_t)i * SLIDER_CRANK_REFERENCE_COLS;
    dpos = fmax(dpos, fabs(a[0] - b[0]));
    dpos = fmax(dpos, fabs(a[2] - b[2]));
    dpos = fmax(dpos, max_abs_diff(a + 4, b + 4, 3));
  }
  check(t, dpos < 1e-9, "slider-crank: positions, h = 2.5e-4 vs 1.25e-4", dpos, 1e-9);

  const double drift = relative_drift(ef, N);
  check(t, drift < 1e-10, "slider-crank: relative energy drift (h = 1.25e-4)", drift, 1e-10);

  double dclose = 0.0;
  for (int i = 0; i < N; ++i) {
    const double* r = of + (size_t)i * SLIDER_CRANK_REFERENCE_COLS;
    const double l = sqrt((r[2] - r[4]) * (r[2] - r[4]) + r[5] * r[5] + r[6] * r[6]);
    dclose = fmax(dclose, fabs(l - 0.3));
  }
  check(t, dclose < 1e-14, "slider-crank: loop closure |C - B| = 0.3", dclose, 1e-14);

  /* B stays on the crank circle around A = (0, 0.1, 0.12) in the plane x = 0. */
  double dcircle = 0.0;
  for (int i = 0; i < N; ++i) {
    const double* r = of + (size_t)i * SLIDER_CRANK_REFERENCE_COLS;
    dcircle = fmax(dcircle, fabs(r[4]));
    dcircle = fmax(dcircle, fabs(hypot(r[5] - 0.1, r[6] - 0.12) - 0.08));
  }
  check(t, dcircle < 1e-14, "slider-crank: B on the crank circle", dcircle, 1e-14);

  double denergy = 0.0;
  for (int i = 0; i < N; i += 10) {
    const double* r = of + (size_t)i * SLIDER_CRANK_REFERENCE_COLS;
    double meff, v;
    slider_crank_fd_energy(r[0], &meff, &v);
    denergy = fmax(denergy, fabs(0.5 * meff * r[1] * r[1] + v - ef[i]) / fabs(ef[0]));
  }
  check(t, denergy < 1e-8, "slider-crank: energy vs finite-difference rotation matrices", denergy,
        1e-8);
}

static void test_arguments(tally* t) {
  double tt[3], p[3 * 7];
  const int bad = fivebar_reference(1.0, 0.1, 0.0, 3, tt, p) == -1 &&
                  fivebar_reference(1.0, -0.1, 1e-3, 3, tt, p) == -1 &&
                  slider_crank_reference(-1.0, 0.1, 1e-3, 6.0, 3, tt, p) == -1 &&
                  slider_crank_reference(1.0, 0.1, 1e-3, 6.0, 3, NULL, p) == -1;
  check(t, bad, "invalid arguments return -1", (double)!bad, 0.0);
  /* Truncated output: only nout_max rows are stored. */
  const int n1 = fivebar_reference(1.0, 0.1, 1e-3, 3, tt, p);
  const int n2 = slider_crank_reference(1.0, 0.1, 1e-3, 6.0, 3, tt, p);
  check(t, n1 == 3 && n2 == 3, "output truncated to nout_max rows", (double)(n1 + n2), 6.0);
}

int main(void) {
  tally t = {0, 0};
  test_fivebar(&t);
  test_slider_crank(&t);
  test_arguments(&t);
  printf("%d passed, %d failed\n", t.passed, t.failed);
  return t.failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
