/* Helpers shared by the core modules; not part of the public API. */
#ifndef MBOPT_INTERNAL_H
#define MBOPT_INTERNAL_H

#include <math.h>

#include "mbopt/model.h"
#include "mbopt/simulate.h"
#include "structure.h"

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

/* v += s W x for a dim x dim block W in a 3 x 3 row-major slot, unrolled by dimension: the
   innermost operation of linear vectors and of the mass matrix */
static inline void mbu_add_wx(int dim, const double* W, const double* x, double s, double* v) {
  if (dim == 3) {
    v[0] += s * (W[0] * x[0] + W[1] * x[1] + W[2] * x[2]);
    v[1] += s * (W[3] * x[0] + W[4] * x[1] + W[5] * x[2]);
    v[2] += s * (W[6] * x[0] + W[7] * x[1] + W[8] * x[2]);
  } else {
    v[0] += s * (W[0] * x[0] + W[1] * x[1]);
    v[1] += s * (W[3] * x[0] + W[4] * x[1]);
  }
}

/* linear vectors (lvec.c): J denotes d v / d q (dim x nq) of a linear vector */

/* Time derivative J qd of linear vector lv into vd (3). */
void mb_lvec_rate(const mb_model* m, int lv, const double* qd, double* vd);

/* g (nq) += s J^T w, with w a dim-vector. */
void mb_lvec_add_jtw(const mb_model* m, int lv, double s, const double* w, double* g);

/* rows[r] += s J^T w[r] for r < nrow, into compressed rows: term t of lv adds its block at
   rows[r] + off[t] (mb_structure.con_toff). */
void mb_lvec_add_jtw_rows(const mb_model* m, int lv, double s, int nrow, const double (*w)[3],
                          double* const* rows, const int* off);

/* A += s J_a^T G J_b, with A the values of an nq x nq matrix on the system pattern
   (m->structure->sys) and G a dim x dim block in a 3 x 3 row-major slot. */
void mb_lvec_add_jtgj(const mb_model* m, int a, int b, double s, const double* G, double* A);

/* time functions (timefunc.c): spline second derivatives for a table of n samples */
void mbu_spline_setup(int n, const double* t, const double* y, double* ypp, double* work);

/* Times outside of which control value j of a uniform cubic B-spline (n values on [t0, t1]) has
   no effect (infinite at the ends, where the spline is held). */
void mbu_bspline_support(int n, double t0, double t1, int j, double* lo, double* hi);

/* Derivative of time function f at t with respect to the parameter of tangent model dm: of its
   value, rate and acceleration (each may be NULL). */
void mbd_func_param(const mb_model* m, const mb_model* dm, int f, double t, double* value,
                    double* rate, double* accel);

/* The natural formulation's own model, workspace and simulation, behind mb_compile,
   mb_model_free, mb_data_create, mb_data_free and mb_simulate (formulation.c, which picks the
   formulation). */
mb_status mb_compile_natural(const mb_desc* d, mb_model** out, mb_error* err);
void mb_model_free_natural(mb_model* m);
mb_data* mb_data_create_natural(const mb_model* m);
void mb_data_free_natural(mb_data* d);
mb_status mb_simulate_natural(const mb_model* m, mb_data* d, mb_observer obs, void* user,
                              mb_error* err);

/* The natural-coordinate model of d with every joint expressed by its constraint rows, so that
   each body owns its elements (mb_model.elem_body): the coordinates through which the joint
   formulation evaluates forces, constraints and outputs (compile.c). */
mb_status mb_compile_exploded(const mb_desc* d, mb_model** out, mb_error* err);

/* tangent models that share storage (compile.c) */

/* A copy of m with every real array zero: the common part of the tangent models of parameters
   bound only to function coefficients. Free with mb_model_free after those tangents. */
mb_model* mb_model_zero_clone(const mb_model* m);

/* The tangent model of parameter `param` when it is bound only to coefficients of time
   functions: it owns its function data and shares everything else with `zero` (which must
   outlive it). NULL when the parameter is bound elsewhere too, or out of memory. */
mb_model* mbd_function_tangent(const mb_desc* d, const mb_model* m, const mb_model* zero,
                               int param);

/* The sensors giving angles into d->out, unwrapped against their last values: the branch the
   output partials follow (sensors.c). */
void mb_sensors_angles(const mb_model* m, mb_data* d);

/* What the sensors carry from one step to the next, which the controllers' angles read (their
   branch): the outputs, the unwrapping's last values and whether there are any; saved into x
   (mb_sensor_state_size doubles) or loaded from it (sensors.c). */
size_t mb_sensor_state_size(const mb_model* m);
void mb_sensor_state_copy(const mb_model* m, mb_data* d, double* x, int save);
/* That state from one workspace to another (the adjoint's two threads). */
void mb_sensor_state_pass(const mb_model* m, const mb_data* from, mb_data* to);

/* constraints (constraints.c) */

/* Target e(t) = value + f(t) of a constraint with its two time derivatives into e[0..2]. */
void mb_con_target(const mb_model* m, double value, int func, double t, double* e);

/* Value, Jacobian row (may be NULL) and time derivatives of one constraint-like expression of kind
   `kind` with lvecs lv[4], target e(t) = value + f(t) (func -1: none). rate_terms (may be NULL)
   receives Phi_t and the acceleration remainder dPhi_q/dt qd + dPhi_t/dt (this one needs qd). */
double mb_con_eval(const mb_model* m, int kind, const int* lv, double value, int func, double t,
                   const double* q, const double* qd, double* row, double* rate_terms);

/* Evaluates Phi, Phi_q, Phi_t and the acceleration term of all constraints at d->q, d->qd, d->t. */
void mb_constraints(const mb_model* m, mb_data* d);

/* Evaluates only Phi and Phi_q at d->q, d->t. */
void mb_constraints_positions(const mb_model* m, mb_data* d);

/* Evaluates only Phi_t and the acceleration remainder at d->q, d->qd, d->t. */
void mb_constraints_rates(const mb_model* m, mb_data* d);

/* Evaluates only Phi_t at d->q, d->t (nonzero for driven constraints only). */
void mb_constraints_time(const mb_model* m, mb_data* d);

/* Doubles per linear vector in mb_data.lvcache: value, rate, acceleration. */
#define MB_LVCACHE 9

/* Evaluates the linear vectors the constraints use into d->lvcache (slot k of structure's
   cache_lvec[k]): their values at d->q and, with levels >= 1, rates at d->qd and, with
   levels >= 2, accelerations at d->qdd. */
void mb_constraints_cache(const mb_model* m, mb_data* d, int levels);

/* The number of linear vectors of a constraint-like expression of kind `kind` (2 or 4). */
int mb_con_nlvec(int kind);

/* Values of all constraints at q, t into phi (ncon). */
void mb_constraint_values(const mb_model* m, const double* q, double t, double* phi);

/* A (values on the system pattern) += s sum_i w_i Hessian(Phi_i) (the Phi_qq^T w product). */
void mb_constraints_add_hessian(const mb_model* m, const mb_data* d, const double* w, double s,
                                double* A);

/* A (values on the system pattern) += s sum_i w_i S_i Phi_q,i^T Phi_q,i over the rows of Phi_q
   (S the penalty scales, w may be NULL for ones). */
void mb_constraints_add_gram(const mb_model* m, const double* phiq, const double* w, double s,
                             double* A);

/* Largest column sum over the rows of Phi_q of S_i Phi_q,ij^2. */
double mb_constraints_metric(const mb_model* m, const double* phiq, double* work);

/* Where the Jacobians of the forces go: ks K and cs C, with K = -dQ/dq and C = -dQ/dqd, are added
   to the values K and C on the system pattern (the same array for the Newton matrix). */
typedef struct mb_jacobian {
  double* K;
  double ks;
  double* C;
  double cs;
} mb_jacobian;

/* forces (forces.c): Q at d->q, d->qd, d->t into d->force, and with jac (may be NULL) their
   Jacobians added where it says. */
void mb_forces_into(const mb_model* m, mb_data* d, const mb_jacobian* jac);

/* Q, and K into d->stiff, C into d->damp when want_jac. */
void mb_forces(const mb_model* m, mb_data* d, int want_jac);

/* Angular velocity (3, planar: z only) of a body at q, qd (body.c); of the frame whose axes are the
   linear vectors E (spatial: x, y, z; planar: x), 1/2 sum_k E_k x dE_k/dt (planar: E_x x dE_x/dt).
 */
void mb_body_angular_velocity(const mb_model* m, int body, const double* q, const double* qd,
                              double* w);
void mb_frame_angular_velocity(const mb_model* m, const int* E, const double* q, const double* qd,
                               double* w);

/* spring-damper-actuators (spring.c): Q += the force of spring element i at the state of d, with
   its Jacobians into jac (may be NULL); its length and tension (may be NULL); the power of its
   damper and constant force, W; its elastic energy, J; dQ += its explicit parameter derivative
   along the tangent model dm */
typedef struct mb_spring_state {
  double d[3], dd[3], u[3], length, rate; /* d = r2 - r1, its rate, |d|, d / |d|, d|d|/dt */
} mb_spring_state;
void mb_spring_eval(const mb_model* m, int i, const double* q, const double* qd,
                    mb_spring_state* s);
void mb_spring_force(const mb_model* m, mb_data* d, int i, const mb_jacobian* jac);
double mb_spring_length(const mb_model* m, const mb_data* d, int i, double* tension);
double mb_spring_damper_power(const mb_model* m, const mb_data* d, int i);
double mb_spring_elastic_energy(const mb_model* m, const mb_data* d, int i);
void mbd_spring_param(const mb_model* m, const mb_model* dm, const mb_data* d, int i, double* dQ);

/* Power of the non-conservative forces (dampers, actuators, external loads, controllers), W. */
double mb_nonconservative_power(const mb_model* m, mb_data* d);

/* Vertical tyre force Fz, N, of tyre element i on its wheel centre at p with velocity v, and its
   partials: dp and dv with respect to p and v (3 each), dkcr with respect to the stiffness, the
   damping and the radius. Any output but Fz may be NULL. */
typedef struct mb_tyre_force {
  double Fz, dp[3], dv[3], dkcr[3];
} mb_tyre_force;
void mb_tyre_eval(const mb_model* m, int i, const double* p, const double* v, mb_tyre_force* out);

/* Q += the vertical force of tyre i at the state of d, with its Jacobians into jac (may be NULL);
   dQ += its explicit parameter derivative along the tangent model dm (tyre.c). */
void mb_tyre_contact(const mb_model* m, mb_data* d, int i, const mb_jacobian* jac);
void mbd_tyre_contact_param(const mb_model* m, const mb_model* dm, const mb_data* d, int i,
                            double* dQ);

/* Whether force element i is a tyre with slip forces (a friction coefficient > 0). */
int mb_tyre_has_slip(const mb_model* m, int i);

/* Q += the slip forces of tyre i at the state of d, with their Jacobians into jac (may be NULL). */
void mb_tyre_slip(const mb_model* m, mb_data* d, int i, const mb_jacobian* jac);

/* Power of the slip forces of tyre i, W. */
double mb_tyre_slip_power(const mb_model* m, const mb_data* d, int i);

/* dQ += the explicit derivative of the slip forces of tyre i along the tangent model dm. */
void mbd_tyre_slip_param(const mb_model* m, const mb_model* dm, const mb_data* d, int i,
                         double* dQ);

/* Q += the generalised force of a global torque tau (planar: tau[2] about z) on a body, with its
   Jacobian (K only) into jac (may be NULL). */
void mb_body_torque(const mb_model* m, mb_data* d, int body, const double* tau,
                    const mb_jacobian* jac);

/* dQ += the explicit parameter derivative of that force: through the body axes (tangent model dm)
   at fixed tau, plus the torque's own derivative dtau (may be NULL). */
void mbd_body_torque_param(const mb_model* m, const mb_model* dm, const mb_data* d, int body,
                           const double* tau, const double* dtau, double* dQ);

/* controllers (controllers.c): their forces on the mechanics and on their own states, with
   their Jacobians into jac (may be NULL); the output u of controller i with its partials (dq, dqd
   may be NULL); parameter derivatives; the power of their actuators */
void mb_controller_forces(const mb_model* m, mb_data* d, const mb_jacobian* jac);
/* the state of controller i at the state of d: error, its rate, integral, control before and
   after the saturation, and the saturation's slope du/draw; with e_q, e_qd, edot_qd (nq each, may
   be NULL) the partials of e and de/dt; the explicit parameter derivatives de, du of its error
   and control along the tangent model dm (controller_signals.c) */
typedef struct mb_controller_state {
  double e, edot, z, raw, u, slope;
} mb_controller_state;
mb_controller_state mb_controller_eval(const mb_model* m, const mb_data* d, int i, double* e_q,
                                       double* e_qd, double* edot_qd);
void mbd_controller_state_param(const mb_model* m, const mb_model* dm, const mb_data* d, int i,
                                const mb_controller_state* s, double* de, double* du);
double mb_controller_output(const mb_model* m, const mb_data* d, int i, double* dq, double* dqd);
double mb_controller_error(const mb_model* m, const mb_data* d, int i, double* dq, double* dqd);
double mbd_controller_error_param(const mb_model* m, const mb_model* dm, const mb_data* d, int i);
void mbd_controllers_param(const mb_model* m, const mb_model* dm, const mb_data* d, double* dQ);
double mbd_controller_output_param(const mb_model* m, const mb_model* dm, const mb_data* d, int i);
double mb_controller_power(const mb_model* m, mb_data* d);

/* joint friction (friction.c) */

/* The linear vectors of marker mk's frame axes x, y, z (spatial models). */
static inline void mb_marker_frame(const mb_model* m, int mk, int* E) {
  E[0] = m->marker_ref[mk], E[1] = m->marker_third[mk], E[2] = m->marker_axis[mk];
}

/* The rates joint j's friction opposes (mb_joint_friction_rates), at most MB_FRICTION_RATES. */
#define MB_FRICTION_RATES 3
static inline int mb_friction_rates(const mb_model* m, int j) {
  return mb_joint_friction_rates((mb_joint_type)m->joint_type[j]);
}

/* The number of joints with friction, and of the rates their friction opposes (rates may be
   NULL). */
static inline int mb_friction_count(const mb_model* m, int* rates) {
  int n = 0, r = 0;
  for (int j = 0; j < m->njoint; j++)
    if (m->joint_friction[j]) n++, r += mb_friction_rates(m, j);
  if (rates) *rates = r;
  return n;
}

/* The joint coordinate (mb_coord_type) behind rate a of joint j's friction, or -1 for the
   spherical joint's angular velocity. */
static inline int mb_friction_coordinate(const mb_model* m, int j, int a) {
  switch (m->joint_type[j]) {
    case MB_JOINT_REVOLUTE:
      return MB_COORD_ANGLE;
    case MB_JOINT_CYLINDRICAL:
      return a == 0 ? MB_COORD_ANGLE : MB_COORD_TRANSLATION;
    case MB_JOINT_SPHERICAL:
      return -1;
    default:
      return MB_COORD_TRANSLATION;
  }
}

/* The gradient of joint j's coordinate `coord` (mb_coord_type) as weights of linear vectors:
   d coordinate / dq = sum over the n returned of J_lv[a]^T w[a] (lv, w: 3 each); with the
   coordinate's value and rate (chain.c). */
int mb_joint_coordinate_gradient(const mb_model* m, const mb_data* d, int j, int coord, int* lv,
                                 double (*w)[3], double* value, double* rate);

/* A joint's friction at the state of d: its normal force, N, and for each rate x_a it opposes
   (mb_friction_rates) the friction force (N) or torque (N m) F_a, with generalised force
   Q = -sum_a F_a dx_a/dqd. */
typedef struct mb_friction {
  double normal;
  int n;                                   /* rates */
  double rate[MB_FRICTION_RATES];          /* x_a */
  double force[MB_FRICTION_RATES];         /* F_a */
  double slope[MB_FRICTION_RATES][3];      /* d F_a / d x_b */
  double d_reaction[MB_FRICTION_RATES][6]; /* d F_a / d (F, T), the reaction in marker 2's frame
                                              (planar: F_x, F_y and T_z at 5) */
  double d_data[MB_FRICTION_RATES][8];     /* d F_a / d mb_model.joint_fric */
} mb_friction;

/* The friction of joint j (m->joint_friction[j] set) with the multipliers mult (ncon; NULL: those
   of mb_reaction_multiplier). */
void mb_friction_eval(const mb_model* m, const mb_data* d, int j, const double* mult,
                      mb_friction* f);

/* The partials of F_a, joint j's friction on its rate a (f from mb_friction_eval at the state of
   d and the multipliers mult; NULL: mb_reaction_multiplier) times s: added to dq (with respect to
   q at fixed qd and multipliers), dqd and dlam (nq, nq, ncon; each may be NULL); with a tangent
   model dm, its explicit derivative along dm's parameter added to *dparam. */
void mbd_friction_partials(const mb_model* m, const mb_data* d, int j, int a, const double* mult,
                           const mb_friction* f, double s, double* dq, double* dqd, double* dlam,
                           const mb_model* dm, double* dparam);

/* Rate a of joint j's friction, x_a = g_a . qd: s dx_a/dq added to dq and s g_a to g (either may
   be NULL). */
void mbd_friction_rate_partials(const mb_model* m, const mb_data* d, int j, int a, double s,
                                double* dq, double* g);

/* y (nq) += s (dg_a/dq) x, or its transpose, for the gradient g_a of rate a of joint j's friction
   (a joint coordinate's Hessian, symmetric; skew for the spherical joint's angular velocity;
   through chain.c). */
void mbd_friction_rate_hessian_mul(const mb_model* m, const mb_data* d, int j, int a,
                                   const double* x, int transposed, double s, double* y);

/* y (nq) += s times the explicit derivative of g_a along the parameter of tangent model dm, at
   fixed q. */
void mbd_friction_gradient_param(const mb_model* m, const mb_model* dm, const mb_data* d, int j,
                                 int a, double s, double* y);

/* Q += the friction forces of all joints at the state and multipliers of d, with their damping
   into jac (may be NULL). */
void mb_friction_forces(const mb_model* m, mb_data* d, const mb_jacobian* jac);

/* The linear vectors joint j's friction reads (the joint's coordinates, marker 1's and marker
   2's points, marker 2's frame, and marker 1's for the spherical joint's angular velocity, the
   linear vectors of the joint's rows), at most MB_FRICTION_LVECS: the Newton matrix couples their
   coordinates. */
#define MB_FRICTION_LVECS (13 + 4 * MB_SENSOR_VALUES)
int mb_friction_lvecs(const mb_model* m, int j, int* lv);

/* T (values on the system pattern) += s times the friction's terms of the Newton matrix that the
   forces' Jacobians leave out, at the multipliers in d->lambda: the stiffness K_f = sum_a F_a
   dg_a/dq + g_a dF_a/dq^T and, the multipliers being lambda + alpha S Phi in the Newton
   iteration, g_a dF_a/dlambda^T alpha S Phi_q, with S the rows' penalty scales scale (ncon). */
void mb_friction_tangent(const mb_model* m, mb_data* d, double alpha, const double* scale, double s,
                         double* T);

/* The hint an integration failure adds in a model with joint friction (""  without): friction
   whose normal force grows with the friction itself faster than the friction grows (gain above
   one, as a drawer jams) leaves the step without a solution. */
const char* mb_friction_lock_hint(const mb_model* m);

/* Power of the joints' friction, W (never positive). */
double mb_friction_power(const mb_model* m, const mb_data* d);

/* The most values a sensor gives: a joint's multipliers (6 rows of a fixed joint, 2 drivers). */
#define MB_SENSOR_VALUES 8

/* joint reactions (reactions.c), of explicit joints (mb_model.joint_explicit) */

/* One term of a joint's reaction: the constraint force -lambda[row] coef w of a row on the linear
   vector lv of the reaction side, w the value of the row's partner vector; coef depends on the
   row's target e(t) (dcoef = d coef / de). */
typedef struct mb_reaction_term {
  int row, lv, partner, side; /* side: mb_reaction_side */
  double coef, dcoef;
} mb_reaction_term;

/* The most terms a joint has: 4 linear vectors in each of its rows. */
#define MB_REACTION_TERMS (4 * MB_SENSOR_VALUES)

/* The multiplier of constraint row i that reactions use: lambda + kappa, consistent with the
   projected accelerations (reactions.c). */
static inline double mb_reaction_multiplier(const mb_data* d, int i) {
  return d->lambda[i] + d->kappa[i];
}

/* The terms of joint j's reaction at the time of d into terms (MB_REACTION_TERMS); returns their
   number. */
int mb_reaction_terms(const mb_model* m, const mb_data* d, int j, mb_reaction_term* terms);

/* 1 when joint j's reaction is computed on marker 2's side, 0 on marker 1's (marker 2 on the
   ground). */
int mb_reaction_side_index(const mb_model* m, int j);

/* The force (3) body 1 exerts on body 2 through joint j, and its torque (3) about marker 2's
   point, global components (planar: torque about z in torque[2]), from the multipliers mult
   (ncon), or NULL for those of mb_reaction_multiplier. */
void mb_joint_reaction(const mb_model* m, const mb_data* d, int j, const double* mult,
                       double* force, double* torque);

/* The linear vector of the unit vector component comp of a reaction output is taken along: a
   global axis, or (joint_frame) marker 2's x, y, z (planar: axis, its normal); planar torques
   about z. */
int mb_reaction_frame(const mb_model* m, int j, int joint_frame, int torque, int comp);

/* sensors (sensors.c): raw values of sensor i at the state of d into v (MB_SENSOR_VALUES; angles
   not unwrapped, all components even when the sensor selects one); returns their number and sets
   *angle to 1 when they are angles (unwrapped by mb_sensors) */
int mb_sensor_eval(const mb_model* m, const mb_data* d, int i, double* v, int* angle);

/* output partials (sensor_partials.c): output column col at the state of d, angles unwrapped to
   the branch nearest d->out[col]; adds s times its partial derivatives with respect to q, qd and
   qdd to dq, dqd, dqdd (each nq, may be NULL). No scratch memory. */
double mbd_output_add_partials(const mb_model* m, const mb_data* d, int col, double s, double* dq,
                               double* dqd, double* dqdd);

/* The same for the partials with respect to the multipliers: dlam (ncon) += s d out / d lambda. */
double mbd_output_add_lambda_partials(const mb_model* m, const mb_data* d, int col, double s,
                                      double* dlam);

/* 1 when output column col reads multipliers (a joint's reaction or multipliers). */
int mb_output_reads_multipliers(const mb_model* m, int col);

/* the sensor of output column col (sensor_partials.c) and, in *comp, the index of the column
   among the sensor's values; -1 if none */
int mb_column_sensor(const mb_model* m, int col, int* comp);

/* Marks in blocks (nq / dim) the coordinate blocks that the partials of output column col with
   respect to q, qd or qdd can reach, whatever the state (d: any state of m). */
void mb_output_support(const mb_model* m, const mb_data* d, int col, unsigned char* blocks);

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

/* The penalty scale of a constraint whose c = alpha beta h^2 times the inverse mass it moves
   (compile.c): c above MB_PENALTY_C_CAP is lowered to it; with the automatic penalty, a positive
   c below MB_PENALTY_C_FLOOR is raised to that. */
#define MB_PENALTY_C_CAP 1e4
#define MB_PENALTY_C_FLOOR 1e2
static inline double mb_penalty_scale(double c, int penalty_auto) {
  return c > MB_PENALTY_C_CAP                              ? MB_PENALTY_C_CAP / c
         : penalty_auto && c > 0 && c < MB_PENALTY_C_FLOOR ? MB_PENALTY_C_FLOOR / c
                                                           : 1;
}

/* The penalty of the projections: their converged result, the exact mass-orthogonal projection,
   does not depend on it; about 1e4 times the mass scale over the constraints' largest column
   metric (instead of alpha = 1e9, which would round M away in M + alpha Phi_q^T Phi_q) keeps the
   factorisation accurate and still converges in a few iterations; at most the model's penalty.
   Coordinates of mixed units (joint coordinates: lengths and angles, masses and inertias) pass
   mass = 1 and the largest ratio of a column's metric to its diagonal mass instead. */
static inline double mbu_projection_penalty(double penalty, double mass, double metric) {
  return fmin(penalty, metric > 0 ? 1e4 * mass / metric : penalty);
}

/* Penalty used by the projections and the initial accelerations (well scaled to M), at the
   constraints evaluated in d. */
double mb_projection_penalty(const mb_model* m, mb_data* d);

/* the constraints' partials for the sensitivities (constraints.c). Expression i is constraint i (i
   < ncon) or prescribed coordinate i - ncon; prescribed angles are taken about their current value,
   so that their rows are the angle's gradient. */

/* Accumulates into the rows (each nq, may be NULL) Phi_q, d(dPhi/dt)/dq at fixed qd and
   d(d2Phi/dt2)/dq at fixed qd, qdd of expression i at the state of d. d(d2Phi/dt2)/dqd is twice
   the second row. */
void mbd_expr_rows(const mb_model* m, const mb_data* d, int i, double* phiq, double* phid_q,
                   double* phidd_q);

/* Phi and Phi_q into d, with the rows d(dPhi/dt)/dq at fixed qd into phid_q and d(d2Phi/dt2)/dq
   at fixed qd, qdd into phidd_q (values on the pattern of Phi_q) of all constraints at the state
   of d, from the cache of their linear vectors. */
void mbd_constraints_rows(const mb_model* m, mb_data* d, double* phid_q, double* phidd_q);

/* The same for the n constraints rows_of (their Phi and rows alone; the others' are left as they
   are). */
void mbd_constraints_rows_of(const mb_model* m, mb_data* d, int n, const int* rows_of,
                             double* phid_q, double* phidd_q);

/* Explicit derivatives of Phi, dPhi/dt and d2Phi/dt2 of expression i with respect to the
   parameter of tangent model dm, into out[0..2]. */
void mbd_expr_param(const mb_model* m, const mb_model* dm, const mb_data* d, int i, double* out);

/* out (nq) += w d(Phi_q of expression i)^T / drho. */
void mbd_expr_rows_param(const mb_model* m, const mb_model* dm, const mb_data* d, int i, double w,
                         double* out);

/* A += w times the Hessian of constraint i: A the values on the system pattern (map NULL), or
   the compact Hessian values (map = structure's hess_slot). */
void mbd_expr_hessian(const mb_model* m, const mb_data* d, int i, double w, double* A,
                      const int* map);

/* dQ (nq) = explicit derivative of the generalised forces with respect to the parameter of dm
   (forces.c);
   force elements i with active[i] = 0 are known not to depend on it (active may be NULL). */
void mbd_forces_param(const mb_model* m, const mb_model* dm, const mb_data* d,
                      const unsigned char* active, double* dQ);

/* A step taken again on sub-steps after its Newton iteration failed (ali3p.c): a contact or
   impact that changes the motion too fast for one step. The state the step starts from: */
typedef struct mb_step_start {
  double t;
  int steps; /* the full steps taken before it (report.steps) */
  double* x; /* (3 nq + ncon) q, qd, qdd, lambda; NULL when max_substeps < 2 */
} mb_step_start;

/* Allocates start->x when the settings allow sub-steps; -1 when out of memory. */
int mb_step_start_init(const mb_model* m, mb_step_start* start);
void mb_step_start_free(mb_step_start* start);
void mb_step_start_save(const mb_model* m, mb_data* d, mb_step_start* start);

/* The model of n sub-steps: the same model at h / n with the penalty raised n^2 times, which
   keeps every c_i = alpha beta h^2 / m as compiled (settings by value, arrays shared). */
mb_model mb_substep_model(const mb_model* m, int n);

/* Called after each sub-step with the sub-step model; a status other than MB_OK stops. */
typedef mb_status (*mb_substep_hook)(const mb_model* sub, mb_data* d, void* user, mb_error* err);

/* Takes the step from `start` to the next full step again, on n sub-steps, calling after (may be
   NULL) after each. On success report.steps counts the full step. */
mb_status mb_substeps(const mb_model* m, mb_data* d, const mb_step_start* start, int n,
                      mb_substep_hook after, void* user, mb_error* err);

/* mb_step; when its Newton iteration fails, the step again from its start on 2, 4, ... up to
   max_substeps sub-steps, the fewest that pass (*count unless NULL, 1 for the full step; the report
   counts the retried steps). Only the full steps count (report.steps), so outputs, functionals and
   the energy balance keep their grid. When every count fails, d stays at the last completed step
   and the message of the full step says "(also on N sub-steps)". */
mb_status mb_step_or_substeps(const mb_model* m, mb_data* d, mb_step_start* start, int* count,
                              mb_error* err);

/* Newton matrix M + gamma h C + beta h^2 (K + alpha Phi_q^T S Phi_q [+ Phi_qq^T mult when exact])
   into T (values on the system pattern), from the constraints already evaluated in d and the
   forces, which it evaluates (Q into d->force, C also into damp unless damp is NULL); gram (may
   be NULL: formed from Phi_q) is the Gram product Phi_q^T S Phi_q; alpha is the model's penalty,
   or a step's raised one near a singular position (ali3p.c). */
void mb_newton_matrix(const mb_model* m, mb_data* d, double alpha, const double* mult, int exact,
                      const double* gram, double* T, double* damp);

/* Factorises M + pen Phi_q^T S Phi_q at the constraints evaluated in d into d->projection (pen
   from mb_projection_penalty, kept in d->proj_penalty; gram as for mb_newton_matrix); fails with
   MB_ERR_SINGULAR (ali3p.c). */
mb_status mb_factor_projection(const mb_model* m, mb_data* d, const double* gram, mb_error* err);

/* The static balance of the initial configuration (equilibrium.c): at the positions of d, at
   t = 0 and at rest, the residual
     F = [ (Phi_q^T lambda + P_q^T mu - Q) / scale ;  Phi ;  P - values ]
   of the constraints Phi and the held initial values P (the prescriptions with a value, in the
   constraints' form: an angle theta held at v as sin(theta - v), as MB_CON_ANGLE writes it), with
   the multipliers y = (lambda, mu) / scale, and its Jacobian with respect to (q, y)
     A = [ (K + H_lambda + H_mu) / scale   Phi_q^T   P_q^T ]
         [ Phi_q                           0         0     ]
         [ P_q                             0         0     ]
   (K = -dQ/dq, H the Hessians of the rows weighted by their multipliers). The coordinates of
   controller states are held: their force rows read dq = 0. */
typedef struct mb_balance {
  int n;        /* unknowns: nq + ncon + npv */
  int npv;      /* prescribed values */
  int* pres;    /* (npv) their prescriptions */
  double scale; /* force scale, N: the largest applied force at the configuration it was set at */
  double* y;    /* (ncon + npv) scaled multipliers */
  double* F;    /* (n) residual */
  double* A;    /* (n x n) Jacobian, row-major */
  unsigned char* held; /* (nq) 1 for the coordinates of controller states */
  double* work;
} mb_balance;

mb_balance* mb_balance_create(const mb_model* m);
void mb_balance_free(mb_balance* b);

/* Sets the state of d to rest at t = 0 (d->qd, d->qdd zeroed), the force scale from the forces
   there and the multipliers y that balance them best (least squares). */
mb_status mb_balance_setup(const mb_model* m, mb_data* d, mb_balance* b);

/* F, and A when jacobian, at the positions of d with the multipliers b->y (d at rest, t = 0). */
void mb_balance_eval(const mb_model* m, mb_data* d, mb_balance* b, int jacobian);

/* A static equilibrium other than the natural one (mb_equilibrium): moves the positions of the
   model's data from the assembled configuration to the equilibrium. */
typedef mb_status (*mb_equilibrium_fn)(void* ctx, mb_error* err);

/* mb_assemble with the equilibrium equilibrium(ctx) (NULL: mb_equilibrium) when the settings ask
   for one (assembly.c). */
mb_status mb_assemble_with(const mb_model* m, mb_data* d, mb_equilibrium_fn equilibrium, void* ctx,
                           mb_error* err);

/* The value of held prescription i in the constraints' form at q, its gradient into row (nq). */
double mb_balance_held_row(const mb_model* m, int i, const double* q, double* row);

/* A static balance in any coordinates, solved by Newton's method (equilibrium.c): n unknowns,
   the nx positions first and then the multipliers y (scaled by the force scale), the residual F
   (forces / scale, then the rows held) and its Jacobian A (n x n, row-major) at the unknowns eval
   sets, which get and put read and write. */
typedef struct mb_balance_problem {
  int n, nx;
  double* scale; /* the force scale, the context's own, which eval divides the forces by */
  double tol;    /* of the rows held */
  double* y;     /* (n - nx) the multipliers among the unknowns */
  double *F, *A;
  void* ctx;
  void (*eval)(void* ctx, int jacobian); /* F, and A when jacobian */
  void (*get)(void* ctx, double* x);
  void (*put)(void* ctx, const double* x);
  /* what row i of F is, for the messages: the forces on "body chassis" (or "coordinate 7") for
     i < nx, a constraint's label or "initial[2]" beyond; and the forces' unit with a space ("N "),
     or "" for generalised forces of mixed units */
  void (*name)(void* ctx, int i, char* buf, size_t len);
  const char* unit;
} mb_balance_problem;

/* The start of a balance at rest: F and A evaluated with no multipliers and a unit scale, the
   force scale set to the largest force row (1 when there is none), and p->y = the multipliers that
   balance the forces best, [A_xy] y = -F_x / scale. */
mb_status mb_balance_start(const mb_balance_problem* p);

/* Unknown i of a balance of n stays where it is (a held coordinate): its row of F is 0 and, unless
   A is NULL, its row of A the identity's. */
void mb_balance_fix(int n, int i, double* F, double* A);

/* Minimum-norm Newton steps, halved while they do not reduce |F|, until the forces balance to
   round-off (1e-10 of the force scale and multipliers) and the rows held to p->tol, then three
   more; at most max_iterations short of that. The iterations and the largest unbalanced force
   left go into report; a balance not reached, or positions gone non-finite, is MB_ERR_ASSEMBLY
   naming the worst row. MB_ERR_MEMORY, MB_ERR_LINALG without a message (mb_balance_status). */
mb_status mb_balance_solve(const mb_balance_problem* p, int max_iterations, mb_report* report,
                           mb_error* err);

/* st, with the message of a static equilibrium's MB_ERR_MEMORY or MB_ERR_LINALG set in err. */
mb_status mb_balance_status(mb_status st, mb_error* err);

/* Moves the positions of d from an assembled configuration to the static equilibrium, to
   round-off (m->opt.equilibrium). */
mb_status mb_equilibrium(const mb_model* m, mb_data* d, mb_error* err);

/* dense least squares (lstsq.c): the minimum-norm solution of A X = B (rows x n, column-major,
   destroyed) for nrhs right-hand sides, B column-major with leading dimension ldb >= max(rows, n)
   receiving X; rank (may be NULL) at relative threshold 1e-12. MB_ERR_LINALG when LAPACK
   fails. */
mb_status mbu_least_squares(int rows, int n, int nrhs, double* A, double* B, int ldb, int* rank);
/* the same with A row-major and kept; large sparse systems of full row rank take
   mbu_least_squares_sparse */
mb_status mbu_least_squares_rows(int rows, int n, int nrhs, const double* A, double* B, int ldb,
                                 int* rank);

/* sparse normal equations (normal.c): the minimum-norm solutions of A X = B (A rows x n,
   row-major, kept; B column-major with leading dimension ldb, receiving X) by the semi-normal
   equations, X = A^T Y with (A A^T) Y = B. 0 when solved; 1 when declined, B untouched: A has
   fewer than 64 rows, more rows than columns, more than 1/8 of its entries nonzero, A A^T more
   than 16 times as many, a pivot of A A^T below 1e-10 of the largest (a deficient or doubtful
   rank: cond(A) beyond about 1e5), or a residual that refinement does not bring to round-off. */
int mbu_least_squares_sparse(int rows, int n, int nrhs, const double* A, double* B, int ldb);
/* 1 when A (rows x n, row-major, of the kind mbu_least_squares_sparse takes) certainly has full
   row rank, every singular value above 1e-6 of the largest; 0 when that is not certain (an SVD
   then decides). */
int mbu_full_row_rank(int rows, int n, const double* A);

/* The singular values (min(rows, n)) into s and, unless NULL, the left singular vectors (rows x
   rows, column-major) into U and the transposed right ones (n x n, column-major) into VT of A
   (rows x n, column-major, destroyed); 0, or non-zero on failure. */
int mbu_svd(int rows, int n, double* A, double* s, double* U, double* VT);

/* vectors */
/* One zeroed block of the n arrays' sizes (size) and extra doubles beyond them: *fields[i] gets
   its part, *fields[0] the block's start, which frees it. NULL, the fields untouched, when out of
   memory. */
double* mbu_alloc_arrays(size_t n, const size_t* size, double** const* fields, size_t extra);
double mbu_norm_inf(int n, const double* x);
/* x . y in eight partial sums, x_i y_i added to sum i mod 8, the sums then added in pairs:
   independent additions that run at the processor's throughput rather than one addition's
   latency, and vectorise without reassociation (the same results from any instruction set).
   Inline: the solves of small dense factors call it for each row. */
static inline double mbu_dot(int n, const double* x, const double* y) {
  double s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int i = 0;
  for (; i + 8 <= n; i += 8)
    for (int l = 0; l < 8; l++) s[l] += x[i + l] * y[i + l];
  for (int l = 0; i < n; i++, l++) s[l] += x[i] * y[i];
  return ((s[0] + s[4]) + (s[1] + s[5])) + ((s[2] + s[6]) + (s[3] + s[7]));
}
/* the index of the entry largest in magnitude (the first of equals; 0 when n = 0) */
int mbu_index_max_abs(int n, const double* x);
int mbu_all_finite(int n, const double* x);
/* sorts the n integers of list ascending and drops repeats; returns the new count */
int mbu_sort_unique(int* list, int n);

#endif
