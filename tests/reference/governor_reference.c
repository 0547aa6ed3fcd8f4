/* Reference solution of the IFToMM benchmark problem A05, the stiff flyball governor, in its four
 * degrees of freedom.
 *
 * A vertical shaft turns freely about the global z axis (gravity -9.81 along z) at angle phi. Two
 * arms (uniform rods 1 m, 0.3 kg, 0.01 m square section, each with a 5 kg point mass at its free
 * end) hang from hinges at (+-a, 0, L) in the shaft's frame, a = 0.05, L = 1, at psi_i from the
 * downward vertical, outwards. A sleeve (3 kg, a 0.1 m cube) slides along the shaft at height s.
 * Instead of coupler rods, spring-dampers (k = 8e5 N/m, c = 4e4 N s/m, natural length 0.5 m)
 * join the sleeve at (+-a, 0, s) to the arms' midpoints. Start: s = 0.5, psi_i = 60 degrees (the
 * arms 30 degrees below the horizontal), at rest but for phi' = 2 pi.
 *
 * Formulation, independent of mbopt's natural coordinates: Lagrange's equations in
 * (phi, psi_1, psi_2, s). With e_r = (cos phi, sin phi, 0), a point at distance rho along arm i
 * moves at |v|^2 = phi'^2 (a + rho sin psi_i)^2 + rho^2 psi_i'^2, and the arm turns at
 * phi' about z plus psi_i' about the hinge, so
 *   T = J(psi) phi'^2 / 2 + m_psi sum psi_i'^2 / 2 + m_s s'^2 / 2,
 *   J = I_0 + sum j(psi_i),  j = m_r (a + sin/2)^2 + I_a cos^2 + I_t sin^2 + m_p (a + sin)^2,
 *   m_psi = m_r / 4 + I_t + m_p,
 * with I_0 the axial inertia of shaft and sleeve, I_a and I_t the arm rod's axial and transverse
 * centroidal inertia. The mass matrix is diagonal, and
 *   (J phi')' = 0,
 *   m_psi psi_i'' = j'(psi_i) phi'^2 / 2 - g (m_r / 2 + m_p) sin psi_i - f_i dl_i/dpsi_i,
 *   m_s s'' = -m_s g - sum f_i dl_i/ds,
 * with l_i the length of spring i, f_i = k (l_i - l0) + c l_i' its tension. Classical RK4 at a
 * fixed step: stable up to h = 3e-4 (the damped modes are stiff); over 10 s, h = 1e-5 ... 2e-4
 * agree with h = 5e-6 to 1e-11.
 */
#include <math.h>

#include "reference/reference.h"

#define GRAVITY 9.81
#define HINGE_OFFSET 0.05 /* a */
#define HINGE_HEIGHT 1.0  /* L */
#define ROD_MASS 0.3      /* 1 x 0.01 x 0.01 m at 3000 kg/m^3 */
#define POINT_MASS 5.0
#define SLEEVE_MASS 3.0 /* 0.1 m cube at 3000 kg/m^3 */
#define STIFFNESS 8e5
#define DAMPING 4e4
#define NATURAL_LENGTH 0.5
#define NSTATE 8 /* phi, psi1, psi2, s, then their rates */

/* a uniform box's centroidal moment about an axis, from its sides across that axis */
static double box_moment(double m, double side1, double side2) {
  return m * (side1 * side1 + side2 * side2) / 12;
}

static const double pi = 3.14159265358979323846;

/* I_0, the axial inertia of shaft (as thin as an arm's rod) and sleeve */
static double shaft_and_sleeve_inertia(void) {
  return box_moment(ROD_MASS, 0.01, 0.01) + box_moment(SLEEVE_MASS, 0.1, 0.1);
}

/* m_psi, an arm's inertia about its hinge */
static double arm_mass(void) {
  return ROD_MASS / 4 + box_moment(ROD_MASS, 0.01, 1.0) + POINT_MASS;
}

/* j(psi) and dj/dpsi of one arm */
static void arm_inertia(double psi, double* j, double* dj) {
  const double ia = box_moment(ROD_MASS, 0.01, 0.01), it = box_moment(ROD_MASS, 0.01, 1.0);
  const double sn = sin(psi), cs = cos(psi);
  const double mid = HINGE_OFFSET + 0.5 * sn, tip = HINGE_OFFSET + sn;
  *j = ROD_MASS * mid * mid + ia * cs * cs + it * sn * sn + POINT_MASS * tip * tip;
  *dj = ROD_MASS * mid * cs + 2 * (it - ia) * sn * cs + 2 * POINT_MASS * tip * cs;
}

/* tension of the spring from the sleeve at s to the midpoint of an arm at psi, and the partials
   of its length */
static double spring(double psi, double s, double psi_rate, double s_rate, double* dl_dpsi,
                     double* dl_ds) {
  const double u = 0.5 * sin(psi), w = HINGE_HEIGHT - 0.5 * cos(psi) - s;
  const double l = sqrt(u * u + w * w);
  *dl_dpsi = (u * 0.5 * cos(psi) + w * 0.5 * sin(psi)) / l;
  *dl_ds = -w / l;
  return STIFFNESS * (l - NATURAL_LENGTH) + DAMPING * (*dl_dpsi * psi_rate + *dl_ds * s_rate);
}

static void rates(const double* y, double* dy) {
  const double i0 = shaft_and_sleeve_inertia(), m_psi = arm_mass();
  double J = i0, dJ_dt = 0, s_force = -SLEEVE_MASS * GRAVITY;
  for (int i = 0; i < NSTATE / 2; i++) dy[i] = y[NSTATE / 2 + i];
  for (int arm = 0; arm < 2; arm++) {
    const double psi = y[1 + arm], psi_rate = y[5 + arm];
    double j, dj, dl_dpsi, dl_ds;
    arm_inertia(psi, &j, &dj);
    J += j;
    dJ_dt += dj * psi_rate;
    const double f = spring(psi, y[3], psi_rate, y[7], &dl_dpsi, &dl_ds);
    dy[5 + arm] =
        (0.5 * dj * y[4] * y[4] - GRAVITY * (ROD_MASS / 2 + POINT_MASS) * sin(psi) - f * dl_dpsi) /
        m_psi;
    s_force -= f * dl_ds;
  }
  dy[4] = -dJ_dt * y[4] / J;
  dy[7] = s_force / SLEEVE_MASS;
}

/* total energy, zero at z = 0 */
static double energy(const double* y) {
  const double i0 = shaft_and_sleeve_inertia(), m_psi = arm_mass();
  /* the shaft is as heavy as an arm's rod, its centre at L / 2 */
  double J = i0, E = SLEEVE_MASS * GRAVITY * y[3] + ROD_MASS * GRAVITY * HINGE_HEIGHT / 2;
  for (int arm = 0; arm < 2; arm++) {
    const double psi = y[1 + arm];
    double j, dj, dl_dpsi, dl_ds;
    arm_inertia(psi, &j, &dj);
    J += j;
    E += 0.5 * m_psi * y[5 + arm] * y[5 + arm];
    E += GRAVITY *
         (ROD_MASS * (HINGE_HEIGHT - 0.5 * cos(psi)) + POINT_MASS * (HINGE_HEIGHT - cos(psi)));
    const double stretch = spring(psi, y[3], 0, 0, &dl_dpsi, &dl_ds) / STIFFNESS;
    E += 0.5 * STIFFNESS * stretch * stretch;
  }
  return E + 0.5 * J * y[4] * y[4] + 0.5 * SLEEVE_MASS * y[7] * y[7];
}

int governor_reference(double t_end, double dt_out, double h, int nout_max, double* out,
                       double* energy_out) {
  output_grid grid;
  if (!output_grid_init(t_end, dt_out, h, nout_max, &grid)) return -1;
  double y[NSTATE] = {0, pi / 3, pi / 3, 0.5, 2 * pi, 0, 0, 0};
  int stored = 0;
  for (long n = 0; n < grid.nout; n++) {
    for (long st = 0; n > 0 && st < grid.per_out; st++) {
      double k[4][NSTATE], tmp[NSTATE];
      rates(y, k[0]);
      for (int stage = 1; stage < 4; stage++) {
        const double f = stage == 3 ? grid.step : 0.5 * grid.step;
        for (int i = 0; i < NSTATE; i++) tmp[i] = y[i] + f * k[stage - 1][i];
        rates(tmp, k[stage]);
      }
      for (int i = 0; i < NSTATE; i++)
        y[i] += grid.step / 6 * (k[0][i] + 2 * k[1][i] + 2 * k[2][i] + k[3][i]);
    }
    if (!isfinite(y[0])) return -1;
    if (stored < nout_max) {
      const double radius = HINGE_OFFSET + sin(y[1]);
      double* row = out + GOVERNOR_REFERENCE_COLS * stored;
      row[0] = radius * cos(y[0]), row[1] = radius * sin(y[0]);
      row[2] = HINGE_HEIGHT - cos(y[1]), row[3] = y[3];
      if (energy_out) energy_out[stored] = energy(y);
      stored++;
    }
  }
  return stored;
}
