/* Reference solution of the IFToMM benchmark problem A04, Bricard's mechanism, in joint angles.
 *
 * The five rods (1 m, 1 kg, 0.1 m square section) form with the ground a closed chain of six
 * revolute joints, each axis perpendicular to both rods it joins; gravity is -9.81 along y and
 * the mechanism starts at rest. Grübler's count gives no degree of freedom, yet it moves with one:
 * one of its six loop-closure equations is redundant.
 *
 * Formulation, independent of mbopt's natural coordinates: the rods form a serial chain from the
 * ground through joints 1..5, with angles theta_1..theta_5 (product of exponentials about the
 * initial axes); joint 6 closes the loop. The six joint twists xi_j = (z_j, o_j x z_j) satisfy
 * sum_{j<=5} xi_j theta_j' = xi_6 theta_6', a 6 x 6 system of rank 5 whose null vector s (unit,
 * from the adjugate) is the only direction of motion. With the arc length sigma along s,
 *   T = mu(theta) sigma'^2 / 2,  mu = s^T M s = sum_k m |v_k|^2 + w_k^T I_k w_k,
 * where v_k, w_k are rod k's centre velocity and angular velocity for theta' = s, and Lagrange's
 * equation of the one coordinate sigma is
 *   mu sigma'' + (dmu/dsigma) sigma'^2 / 2 = -dV/dsigma = sum_k m g . v_k.
 * dmu/dsigma is a central difference along s (step 1e-5; the two points leave the curve by the
 * same second-order offset, which cancels). Classical RK4 at a fixed step.
 */
#include <math.h>
#include <string.h>

#include "reference/reference.h"

#define NROD 5
#define GRAVITY 9.81
#define MASS 1.0
#define DIFF_STEP 1e-5

/* initial joint axes and points (global), rod centres */
static const double axis0[6][3] = {{0, 1, 0}, {0, 0, 1}, {1, 0, 0},
                                   {0, 1, 0}, {0, 0, 1}, {1, 0, 0}};
static const double point0[6][3] = {{0, 0, 0},  {1, 0, 0},  {1, -1, 0},
                                    {1, -1, 1}, {0, -1, 1}, {0, 0, 1}};
static const double centre0[NROD][3] = {
    {0.5, 0, 0}, {1, -0.5, 0}, {1, -1, 0.5}, {0.5, -1, 1}, {0, -0.5, 1}};
static const int rod_dir[NROD] = {0, 1, 2, 0, 1}; /* the global axis each rod lies along at t = 0 */

static void cross(const double* a, const double* b, double* c) {
  c[0] = a[1] * b[2] - a[2] * b[1];
  c[1] = a[2] * b[0] - a[0] * b[2];
  c[2] = a[0] * b[1] - a[1] * b[0];
}

static double dot(const double* a, const double* b) {
  return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}

/* R = rotation by angle about the unit axis a (Rodrigues), row-major */
static void rotation(const double* a, double angle, double* R) {
  const double c = cos(angle), s = sin(angle), v = 1 - c;
  R[0] = c + a[0] * a[0] * v, R[1] = a[0] * a[1] * v - a[2] * s, R[2] = a[0] * a[2] * v + a[1] * s;
  R[3] = a[1] * a[0] * v + a[2] * s, R[4] = c + a[1] * a[1] * v, R[5] = a[1] * a[2] * v - a[0] * s;
  R[6] = a[2] * a[0] * v - a[1] * s, R[7] = a[2] * a[1] * v + a[0] * s, R[8] = c + a[2] * a[2] * v;
}

static void mat_vec(const double* R, const double* x, double* y) {
  for (int i = 0; i < 3; i++) y[i] = R[3 * i] * x[0] + R[3 * i + 1] * x[1] + R[3 * i + 2] * x[2];
}

static void mat_mat(const double* A, const double* B, double* C) {
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++)
      C[3 * i + j] = A[3 * i] * B[j] + A[3 * i + 1] * B[3 + j] + A[3 * i + 2] * B[6 + j];
}

/* The chain's pose at theta: rod orientations R[k], joint axes z[j] and points o[j] (joint 6 as
   carried by rod 5), rod centres c[k]. Rod k maps x to p_k + Rot(a_k, theta_k)(x - p_k), then
   through rods k - 1, ..., 1. */
typedef struct pose {
  double R[NROD][9], z[6][3], o[6][3], c[NROD][3];
} pose;

/* x0 (initial global) carried by rods 1..k */
static void carry(const double* theta, int k, const double* x0, double* x) {
  double y[3] = {x0[0], x0[1], x0[2]}, R[9], d[3];
  for (int j = k - 1; j >= 0; j--) {
    rotation(axis0[j], theta[j], R);
    for (int i = 0; i < 3; i++) d[i] = y[i] - point0[j][i];
    mat_vec(R, d, y);
    for (int i = 0; i < 3; i++) y[i] += point0[j][i];
  }
  memcpy(x, y, sizeof y);
}

static void chain_pose(const double* theta, pose* p) {
  static const double I[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
  const double* prev = I;
  for (int k = 0; k < NROD; k++) {
    double Rk[9];
    rotation(axis0[k], theta[k], Rk);
    mat_mat(prev, Rk, p->R[k]);
    mat_vec(prev, axis0[k], p->z[k]);
    carry(theta, k, point0[k], p->o[k]);
    carry(theta, k + 1, centre0[k], p->c[k]);
    prev = p->R[k];
  }
  mat_vec(p->R[NROD - 1], axis0[5], p->z[5]);
  carry(theta, NROD, point0[5], p->o[5]);
}

/* determinant of the n x n matrix A (row-major, destroyed), partial pivoting */
static double determinant(int n, double* A) {
  double det = 1;
  for (int c = 0; c < n; c++) {
    int piv = c;
    for (int r = c + 1; r < n; r++)
      if (fabs(A[r * n + c]) > fabs(A[piv * n + c])) piv = r;
    if (A[piv * n + c] == 0) return 0;
    if (piv != c) {
      for (int j = 0; j < n; j++) {
        const double t = A[c * n + j];
        A[c * n + j] = A[piv * n + j], A[piv * n + j] = t;
      }
      det = -det;
    }
    det *= A[c * n + c];
    for (int r = c + 1; r < n; r++) {
      const double f = A[r * n + c] / A[c * n + c];
      for (int j = c; j < n; j++) A[r * n + j] -= f * A[c * n + j];
    }
  }
  return det;
}

/* The twist matrix [xi_1 .. xi_5, -xi_6] at pose p (6 x 6, xi_j = (z_j, o_j x z_j)). */
static void twist_matrix(const pose* p, double G[6][6]) {
  for (int j = 0; j < 6; j++) {
    const double sign = j < 5 ? 1 : -1;
    double m[3];
    cross(p->o[j], p->z[j], m);
    for (int i = 0; i < 3; i++) G[i][j] = sign * p->z[j][i], G[3 + i][j] = sign * m[i];
  }
}

/* A null vector of G of rank 5: the cofactors of the five rows left when row `drop` is removed.
   Returns its length. */
static double cofactors(double G[6][6], int drop, double* s) {
  double norm = 0;
  for (int col = 0; col < 6; col++) {
    double A[25];
    int n = 0;
    for (int r = 0; r < 6; r++)
      for (int c = 0; c < 6 && r != drop; c++)
        if (c != col) A[n++] = G[r][c];
    s[col] = (col % 2 ? -1 : 1) * determinant(5, A);
    norm += s[col] * s[col];
  }
  return sqrt(norm);
}

/* The unit direction of motion s (the six joint rates) at pose p, with the sign of ref (if not
   NULL). */
static void motion_direction(const pose* p, int drop, const double* ref, double* s) {
  double G[6][6];
  twist_matrix(p, G);
  const double norm = cofactors(G, drop, s);
  double align = 0;
  for (int j = 0; j < 6; j++) align += (s[j] /= norm) * (ref ? ref[j] : 1);
  if (ref && align < 0)
    for (int j = 0; j < 6; j++) s[j] = -s[j];
}

/* The row whose removal leaves the largest, best-conditioned cofactors. */
static int best_drop(const pose* p) {
  double G[6][6], s[6], best_norm = -1;
  int best = 0;
  twist_matrix(p, G);
  for (int drop = 0; drop < 6; drop++) {
    const double norm = cofactors(G, drop, s);
    if (norm > best_norm) best_norm = norm, best = drop;
  }
  return best;
}

/* mu = s^T M s and -dV/dsigma = sum m g . v_k for the rates s at pose p */
static void inertia_and_load(const pose* p, const double* s, double* mu, double* load) {
  *mu = 0;
  *load = 0;
  for (int k = 0; k < NROD; k++) {
    double w[3] = {0, 0, 0}, v[3] = {0, 0, 0};
    for (int j = 0; j <= k; j++) {
      double r[3], zr[3];
      for (int i = 0; i < 3; i++) r[i] = p->c[k][i] - p->o[j][i];
      cross(p->z[j], r, zr);
      for (int i = 0; i < 3; i++) w[i] += p->z[j][i] * s[j], v[i] += zr[i] * s[j];
    }
    /* I = R diag(I0) R^T with I0 of a rod along its initial direction */
    const double side = 0.1, axial = MASS * 2 * side * side / 12,
                 transverse = MASS * (1 + side * side) / 12;
    double wb[3]; /* w in the rod's initial frame: R^T w */
    for (int i = 0; i < 3; i++)
      wb[i] = p->R[k][i] * w[0] + p->R[k][3 + i] * w[1] + p->R[k][6 + i] * w[2];
    double rot = 0;
    for (int i = 0; i < 3; i++) rot += (i == rod_dir[k] ? axial : transverse) * wb[i] * wb[i];
    *mu += MASS * dot(v, v) + rot;
    *load += -MASS * GRAVITY * v[1];
  }
}

/* d(theta, sigma')/dt at state y = (theta_1..theta_5, sigma'); ref orients s */
static void rates(const double* y, int drop, const double* ref, double* dy, double* s_out) {
  pose p;
  double s[6], mu, load;
  chain_pose(y, &p);
  motion_direction(&p, drop, ref, s);
  inertia_and_load(&p, s, &mu, &load);
  double mu_side[2];
  for (int side = 0; side < 2; side++) {
    double th[NROD], ss[6], unused;
    const double e = side ? -DIFF_STEP : DIFF_STEP;
    for (int j = 0; j < NROD; j++) th[j] = y[j] + e * s[j];
    pose q;
    chain_pose(th, &q);
    motion_direction(&q, drop, s, ss);
    inertia_and_load(&q, ss, &mu_side[side], &unused);
  }
  const double dmu = (mu_side[0] - mu_side[1]) / (2 * DIFF_STEP);
  for (int j = 0; j < NROD; j++) dy[j] = y[NROD] * s[j];
  dy[NROD] = (load - 0.5 * dmu * y[NROD] * y[NROD]) / mu;
  if (s_out) memcpy(s_out, s, sizeof s);
}

int bricard_reference(double t_end, double dt_out, double h, int nout_max, double* p3_out,
                      double* energy_out) {
  output_grid grid;
  if (!output_grid_init(t_end, dt_out, h, nout_max, &grid)) return -1;
  double y[NROD + 1] = {0}, s_ref[6] = {0, 0, 0, 0, 0, 0};
  int stored = 0, have_ref = 0;
  for (long n = 0; n < grid.nout; n++) {
    for (long st = 0; n > 0 && st < grid.per_out; st++) {
      pose p;
      chain_pose(y, &p);
      const int drop = best_drop(&p);
      double k[4][NROD + 1], tmp[NROD + 1], s[6];
      rates(y, drop, have_ref ? s_ref : NULL, k[0], s);
      memcpy(s_ref, s, sizeof s);
      have_ref = 1;
      for (int stage = 1; stage < 4; stage++) {
        const double f = stage == 3 ? grid.step : 0.5 * grid.step;
        for (int i = 0; i <= NROD; i++) tmp[i] = y[i] + f * k[stage - 1][i];
        rates(tmp, drop, s_ref, k[stage], NULL);
      }
      for (int i = 0; i <= NROD; i++)
        y[i] += grid.step / 6 * (k[0][i] + 2 * k[1][i] + 2 * k[2][i] + k[3][i]);
    }
    if (stored < nout_max) {
      static const double p3_0[3] = {1, -1, 0};
      carry(y, 2, p3_0, p3_out + 3 * stored);
      if (energy_out) {
        pose p;
        double s[6], mu, load, V = 0;
        chain_pose(y, &p);
        motion_direction(&p, best_drop(&p), NULL, s);
        inertia_and_load(&p, s, &mu, &load);
        for (int k = 0; k < NROD; k++) V += MASS * GRAVITY * p.c[k][1];
        energy_out[stored] = 0.5 * mu * y[NROD] * y[NROD] + V;
      }
      stored++;
    }
  }
  return stored;
}
