/* Helpers shared by the core modules; not part of the public API. */
#ifndef MBOPT_INTERNAL_H
#define MBOPT_INTERNAL_H

#include "mbopt/model.h"

#define MB_PI 3.14159265358979323846

/* small 3-vectors (planar vectors carry z = 0) */
static inline double mbu_dot3(const double* a, const double* b) {
  return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}
static inline void mbu_cross3(const double* a, const double* b, double* c) {
  double c0 = a[1] * b[2] - a[2] * b[1], c1 = a[2] * b[0] - a[0] * b[2];
  double c2 = a[0] * b[1] - a[1] * b[0];
  c[0] = c0, c[1] = c1, c[2] = c2;
}
double mbu_norm3(const double* a);

/* linear vectors (lvec.c): J denotes d v / d q (dim x nq) of a linear vector */

/* Time derivative J qd of linear vector lv into vd (3). */
void mb_lvec_rate(const mb_model* m, int lv, const double* qd, double* vd);

/* g (nq) += s J^T w, with w a dim-vector. */
void mb_lvec_add_jtw(const mb_model* m, int lv, double s, const double* w, double* g);

/* A (nq x nq, row-major) += s J_a^T G J_b, with G a dim x dim block in a 3 x 3 row-major slot
   (NULL means the identity). */
void mb_lvec_add_jtgj(const mb_model* m, int a, int b, double s, const double* G, double* A);

/* The same with J_a taken from model ma and J_b from model mb (a model or its tangent model, which
   share their layout): A += s J_a^T G J_b. */
void mb_lvec_add_jtgj2(const mb_model* ma, int a, const mb_model* mb, int b, double s,
                       const double* G, double* A);

/* time functions (timefunc.c): spline second derivatives for a table of n samples */
void mbu_spline_setup(int n, const double* t, const double* y, double* ypp, double* work);

/* Times outside of which control value j of a uniform cubic B-spline (n values on [t0, t1]) has
   no effect (infinite at the ends, where the spline is held). */
void mbu_bspline_support(int n, double t0, double t1, int j, double* lo, double* hi);

/* Derivative of time function f at t with respect to the parameter of tangent model dm: of its
   value, rate and acceleration (each may be NULL). */
void mbd_func_param(const mb_model* m, const mb_model* dm, int f, double t, double* value,
                    double* rate, double* accel);

/* tangent models that share storage (compile.c) */

/* A copy of m with every real array zero: the common part of the tangent models of parameters
   bound only to function coefficients. Free with mb_model_free after those tangents. */
mb_model* mb_model_zero_clone(const mb_model* m);

/* The tangent model of parameter `param` when it is bound only to coefficients of time
   functions: it owns its function data and shares everything else with `zero` (which must
   outlive it). NULL when the parameter is bound elsewhere too, or out of memory. */
mb_model* mbd_function_tangent(const mb_desc* d, const mb_model* m, const mb_model* zero,
                               int param);

/* constraints (constraints.c) */

/* Target e(t) = value + f(t) of a constraint with its two time derivatives into e[0..2]. */
void mb_con_target(const mb_model* m, double value, int func, double t, double* e);

/* Value, Jacobian row (may be NULL) and time derivatives of one constraint-like expression of kind
   `kind` with lvecs lv[4], target e(t) = value + f(t) (func -1: none). rate_terms (may be NULL)
   receives Phi_t, Phi_tt and the velocity-product term dPhi_q/dt qd (needs qd). */
double mb_con_eval(const mb_model* m, int kind, const int* lv, double value, int func, double t,
                   const double* q, const double* qd, double* row, double* rate_terms);

/* Evaluates Phi, Phi_q, Phi_t and the acceleration term of all constraints at d->q, d->qd, d->t. */
void mb_constraints(const mb_model* m, mb_data* d);

/* Values of all constraints at q, t into phi (ncon). */
void mb_constraint_values(const mb_model* m, const double* q, double t, double* phi);

/* A (nq x nq) += s sum_i w_i Hessian(Phi_i) (the Phi_qq^T w product). */
void mb_constraints_add_hessian(const mb_model* m, const mb_data* d, const double* w, double s,
                                double* A);

/* forces (forces.c): Q, K = -dQ/dq and C = -dQ/dqd at d->q, d->qd, d->t (K, C when want_jac). */
void mb_forces(const mb_model* m, mb_data* d, int want_jac);

/* Angular velocity (3, planar: z only) of a body at q, qd. */
void mb_body_angular_velocity(const mb_model* m, int body, const double* q, const double* qd,
                              double* w);

/* Length of spring force element i at the state of d, and its tension (may be NULL). */
double mb_spring_length(const mb_model* m, const mb_data* d, int i, double* tension);

/* Power of the non-conservative forces (dampers, actuators, external loads, controllers), W. */
double mb_nonconservative_power(const mb_model* m, mb_data* d);

/* Vertical tyre force Fz, N, of tyre element i on its wheel centre at p with velocity v, and its
   partials: dp and dv with respect to p and v (3 each), dkcr with respect to the stiffness, the
   damping and the radius. Any output but Fz may be NULL. */
typedef struct mb_tyre_force {
  double Fz, dp[3], dv[3], dkcr[3];
} mb_tyre_force;
void mb_tyre_eval(const mb_model* m, int i, const double* p, const double* v, mb_tyre_force* out);

/* Whether force element i is a tyre with slip forces (a friction coefficient > 0). */
int mb_tyre_has_slip(const mb_model* m, int i);

/* Q += the slip forces of tyre i at the state of d, K += -dQ/dq and C += -dQ/dqd when want_jac. */
void mb_tyre_slip(const mb_model* m, mb_data* d, int i, int want_jac);

/* Power of the slip forces of tyre i, W. */
double mb_tyre_slip_power(const mb_model* m, const mb_data* d, int i);

/* dQ += the explicit derivative of the slip forces of tyre i along the tangent model dm. */
void mbd_tyre_slip_param(const mb_model* m, const mb_model* dm, const mb_data* d, int i,
                         double* dQ);

/* Q += the generalised force of a global torque tau (planar: tau[2] about z) on a body, and
   K += -dQ/dq when want_jac. */
void mb_body_torque(const mb_model* m, mb_data* d, int body, const double* tau, int want_jac);

/* dQ += the explicit parameter derivative of that force: through the body axes (tangent model dm)
   at fixed tau, plus the torque's own derivative dtau (may be NULL). */
void mbd_body_torque_param(const mb_model* m, const mb_model* dm, const mb_data* d, int body,
                           const double* tau, const double* dtau, double* dQ);

/* controllers (controllers.c): their forces on the mechanics and on their own states, with K
   and C when want_jac; the output u of controller i with its partials (dq, dqd may be NULL);
   parameter derivatives; the power of their actuators */
void mb_controller_forces(const mb_model* m, mb_data* d, int want_jac);
double mb_controller_output(const mb_model* m, const mb_data* d, int i, double* dq, double* dqd);
double mb_controller_error(const mb_model* m, const mb_data* d, int i, double* dq, double* dqd);
double mbd_controller_error_param(const mb_model* m, const mb_model* dm, const mb_data* d, int i);
void mbd_controllers_param(const mb_model* m, const mb_model* dm, const mb_data* d, double* dQ);
double mbd_controller_output_param(const mb_model* m, const mb_model* dm, const mb_data* d, int i);
double mb_controller_power(const mb_model* m, mb_data* d);

/* sensors (sensors.c): raw values of sensor i at the state of d into v (3; angles not unwrapped,
   all components even when the sensor selects one); returns their number and sets *angle to 1
   when they are angles (unwrapped by mb_sensors) */
int mb_sensor_eval(const mb_model* m, const mb_data* d, int i, double* v, int* angle);

/* output partials (sensor_partials.c): output column col at the state of d, angles unwrapped to
   the branch nearest d->out[col]; adds s times its partial derivatives with respect to q, qd and
   qdd to dq, dqd, dqdd (each nq, may be NULL). No scratch memory. */
double mbd_output_add_partials(const mb_model* m, const mb_data* d, int col, double s, double* dq,
                               double* dqd, double* dqdd);

/* the sensor of output column col (sensor_partials.c) and, in *comp, the index of the column
   among the sensor's values; -1 if none */
int mb_column_sensor(const mb_model* m, int col, int* comp);

/* functionals (functionals.c): the integrand g (final = 0) or the final value w (final = 1) of
   functional f at the state of d (the value of mbd_functional_partials, without derivatives) */
double mb_functional_value(const mb_model* m, const mb_data* d, int f, int final);

/* Adds to psi (nfunctional) the share of step n (0 <= n <= nstep) in every functional at the state
   of d: its integrand times the trapezoidal weight (h/2 at the ends, h inside), and at n = nstep
   the final terms. */
void mb_functionals_accumulate(const mb_model* m, const mb_data* d, long n, long nstep,
                               double* psi);

/* integrator (ali3p.c): projects d->qd and d->qdd onto the velocity and acceleration constraint
   manifolds at d->q (seed 001, eqs. 6, 7), updating the violation statistics. */
mb_status mb_project_state(const mb_model* m, mb_data* d, mb_error* err);

/* Penalty used by the projections and the initial accelerations (well scaled to M). */
double mb_projection_penalty(const mb_model* m, const double* phiq);

/* sensitivity partials (sens_partials.c). Expression i is constraint i (i < ncon) or prescribed
   coordinate i - ncon; prescribed angles are taken about their current value, so that their rows
   are the angle's gradient. */

/* Accumulates into the rows (each nq, may be NULL) Phi_q, d(dPhi/dt)/dq at fixed qd and
   d(d2Phi/dt2)/dq at fixed qd, qdd of expression i at the state of d. d(d2Phi/dt2)/dqd is twice
   the second row. */
void mbd_expr_rows(const mb_model* m, const mb_data* d, int i, double* phiq, double* phid_q,
                   double* phidd_q);

/* Explicit derivatives of Phi, dPhi/dt and d2Phi/dt2 of expression i with respect to the
   parameter of tangent model dm, into out[0..2]. */
void mbd_expr_param(const mb_model* m, const mb_model* dm, const mb_data* d, int i, double* out);

/* out (nq) += w d(Phi_q of expression i)^T / drho. */
void mbd_expr_rows_param(const mb_model* m, const mb_model* dm, const mb_data* d, int i, double w,
                         double* out);

/* A (nq x nq) += w times the Hessian of expression i. */
void mbd_expr_hessian(const mb_model* m, const mb_data* d, int i, double w, double* A);

/* dQ (nq) = explicit derivative of the generalised forces with respect to the parameter of dm;
   force elements i with active[i] = 0 are known not to depend on it (active may be NULL). */
void mbd_forces_param(const mb_model* m, const mb_model* dm, const mb_data* d,
                      const unsigned char* active, double* dQ);

/* Newton matrix M + gamma h C + beta h^2 (K + alpha Phi_q^T Phi_q [+ Phi_qq^T mult when exact])
   into d->tangent, from the constraints and forces already evaluated in d (ali3p.c). */
void mb_newton_matrix(const mb_model* m, mb_data* d, const double* mult, int exact);

/* dense linear algebra on row-major n x n matrices (linalg.c) */
void mbu_matvec(int n, const double* A, const double* x, double* y); /* y = A x */
/* A += s J^T diag(w) J (w may be NULL for ones) */
void mbu_add_gram(int nrow, int n, const double* J, const double* w, double s, double* A);
void mbu_add_jtv(int nrow, int n, const double* J, const double* v, double s,
                 double* y);                                               /* y += s J^T v */
void mbu_jv(int nrow, int n, const double* J, const double* x, double* y); /* y = J x */
double mbu_norm_inf(int n, const double* x);
int mbu_all_finite(int n, const double* x);

#endif
