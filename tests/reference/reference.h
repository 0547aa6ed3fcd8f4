/* Independent reference solutions used by the tests to check the mbopt simulator.
 *
 * The simulator uses natural coordinates and an index-3 augmented Lagrangian method. The
 * solutions here use other formulations (joint angles with an index-1 DAE for the five-bar,
 * a closed-form 1-DOF Lagrange equation for the slider-crank) and explicit RK4, so that an
 * agreement between the two is evidence and not a shared mistake. Plain C11 + libm, no state.
 *
 * Output times are 0, dt_out, 2 dt_out, ... up to t_end (inclusive, with a relative tolerance
 * of 1e-9 on the last one). The integration step is dt_out / ceil(dt_out / h), i.e. at most h and
 * landing exactly on every output time. Rows beyond nout_max are computed but not stored; the
 * integral outputs (psi1) always cover [0, t_end]. The functions return the number of rows
 * stored, or -1 on invalid arguments or a numerical failure (singular constraint Jacobian).
 *
 * Measured step-halving differences in positions over 5 s (RK4, error ~ h^4): five-bar
 * 1.2e-10 (h = 1e-3 vs 5e-4), 7.7e-12 (5e-4 vs 2.5e-4); slider-crank at phidot0 = 6 rad/s
 * 7.6e-9 (5e-4 vs 2.5e-4), 1.5e-10 (2.5e-4 vs 1.25e-4). Use h <= 5e-4 (five-bar) and
 * h <= 1.25e-4 (slider-crank) for references good to ~1e-10.
 */
#ifndef MBOPT_TESTS_REFERENCE_H
#define MBOPT_TESTS_REFERENCE_H

/* The grid of the convention above: per_out steps of `step` between outputs, nout outputs. */
typedef struct output_grid {
  long per_out, nout;
  double step;
} output_grid;

/* 1, or 0 on invalid arguments. */
int output_grid_init(double t_end, double dt_out, double h, int nout_max, output_grid* g);

/* ---- Planar five-bar linkage with two springs (2 DOF), SI units ---- */

/* Values per row of points_out: x1, y1, x2, y2, x3, y3 (moving joints P1, P2, P3). */
#define FIVEBAR_REFERENCE_COLS 6

/* Trajectory of the joints. t_out has nout_max entries, points_out nout_max * 6. */
int fivebar_reference(double t_end, double dt_out, double h, int nout_max, double* t_out,
                      double* points_out);

/* Same, plus optional outputs (each may be NULL): energy_out[nout_max] = kinetic + gravity
 * (zero at y = 0) + elastic energy at each output time; psi1_out = integral over [0, t_end] of
 * |P2(t) - (0.5, -2)|^2 dt (published value for t_end = 5: 0.726877). */
int fivebar_reference_ex(double t_end, double dt_out, double h, int nout_max, double* t_out,
                         double* points_out, double* energy_out, double* psi1_out);

/* ---- Spatial slider-crank (1 DOF), SI units, gravity (0, 0, -9.81) ---- */

/* Values per row of out: phi, phidot, xC, xCdot, Bx, By, Bz. */
#define SLIDER_CRANK_REFERENCE_COLS 7

/* Trajectory from phi(0) = 0, phidot(0) = phidot0. t_out has nout_max entries, out
 * nout_max * 7. */
int slider_crank_reference(double t_end, double dt_out, double h, double phidot0, int nout_max,
                           double* t_out, double* out);

/* Same, plus the total energy (kinetic + gravity, zero at z = 0) per row; energy_out may be
 * NULL. */
int slider_crank_reference_ex(double t_end, double dt_out, double h, double phidot0, int nout_max,
                              double* t_out, double* out, double* energy_out);

/* ---- IFToMM A01 (simple pendulum) and A02 (N-four-bar), one angle each ---- */

/* theta(t) of theta'' = -k cos theta from theta0, rate0, one value per output time into
 * theta_out (nout_max entries). A01: k = g / L. */
int angle_reference(double k, double theta0, double rate0, double t_end, double dt_out, double h,
                    int nout_max, double* theta_out);

/* k of the N-four-bar moving as a parallelogram (links 1 m, 1 kg), theta the cranks' angle. */
double fourbar_chain_stiffness(int n, double g);

/* ---- IFToMM A04 (Bricard's mechanism), joint angles with one redundant closure equation ---- */

/* P3 (the joint between rods 2 and 3), 3 values per output time, into p3_out (3 nout_max);
   the total energy (kinetic + gravity, zero at y = 0) per output time into energy_out (may be
   NULL). */
int bricard_reference(double t_end, double dt_out, double h, int nout_max, double* p3_out,
                      double* energy_out);

/* ---- IFToMM A05 (stiff flyball governor), Lagrange's equations in its four coordinates ---- */

/* Values per row of out: x, y, z of the point mass on the arm hinged at +x, and the sleeve's
   height s. */
#define GOVERNOR_REFERENCE_COLS 4

/* The trajectory, GOVERNOR_REFERENCE_COLS values per output time into out (that many times
   nout_max); the total energy (kinetic + gravity, zero at z = 0, + elastic) per output time into
   energy_out (may be NULL). */
int governor_reference(double t_end, double dt_out, double h, int nout_max, double* out,
                       double* energy_out);

#endif
