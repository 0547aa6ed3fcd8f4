/* Model description: what a user writes (bodies, markers, joints, forces, drivers, initial
   conditions, outputs), before compilation to coordinates. The JSON loader fills it; programs and
   tests may fill it directly. Lengths in m, angles in rad, masses in kg, time in s. */
#ifndef MBOPT_DESC_H
#define MBOPT_DESC_H

#include <signal.h>
#include <stddef.h>

#include "mbopt/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MB_NAME_LEN 64
/* most sub-steps a failed step is retried on (settings max_substeps) */
#define MB_MAX_SUBSTEPS 1024

/* A scalar of the description: a literal, the current value of a named parameter, or the value
   of an expression of parameters. */
typedef struct mb_real {
  double value; /* the number used by the compiler */
  int param;    /* index in mb_desc.param_name, or -1 for a literal or an expression */
  int expr;     /* 1 + index in mb_desc.expr for an expression, else 0 */
} mb_real;

/* ---------------------------------------------------------------------------------------------
   Expressions: arithmetic on parameters and numbers wherever a parameter may stand, e.g.
   "-$r", "2 * $L", "$m * 9.81 / 4", "sqrt($k / $m)" (docs/model-format.md, Expressions):
   + - * / ^ (power, right-associative, binding tighter than a sign), parentheses, the functions
   sqrt exp log sin cos tan asin acos atan atan2 abs min max, the constant pi, and parameters as
   "$name" or "$name[i]". */

#define MB_EXPR_MAX_OPS 256  /* operations of one expression */
#define MB_EXPR_MAX_DEPTH 64 /* nesting of parentheses and signs */

typedef struct mb_expr_op {
  int code;     /* what the step does (core/model/expr.c) */
  int param;    /* a parameter's value: its index */
  double value; /* a number */
} mb_expr_op;

/* A parsed expression: a postfix program over the parameters, and what the scalar it gives must
   satisfy, as the loader checked it (min: 0 any finite value, 1 >= 0, 2 > 0; where: its JSON
   path). */
typedef struct mb_expr {
  char* text; /* the source, for messages */
  mb_expr_op* op;
  int nop;
  int min;
  char where[96];
} mb_expr;

/* Resolves a parameter reference (the text after '$': "k" or "u[2]") to its index, or returns -1
   with the reason in why. */
typedef int (*mb_expr_resolve)(const char* name, char* why, size_t why_size, void* user);

/* Parses text into e; returns 0, or -1 with why saying where and what is wrong ("at column 7:
   expected ')'"), e left empty. Free e with mb_expr_free. */
int mb_expr_parse(const char* text, mb_expr_resolve resolve, void* user, mb_expr* e, char* why,
                  size_t why_size);

/* The value of e at the parameters' values; with seed >= 0 also its derivative with respect to
   parameter `seed` in *derivative (may be NULL). */
double mb_expr_eval(const mb_expr* e, const double* param_value, int seed, double* derivative);

/* 1 when e reads parameter `param` */
int mb_expr_depends(const mb_expr* e, int param);

void mb_expr_free(mb_expr* e);

typedef enum mb_func_type {
  MB_FUNC_CONSTANT,   /* f = coef[0] */
  MB_FUNC_TABLE,      /* natural cubic spline through (time[i], coef[i]); held constant outside */
  MB_FUNC_POLYNOMIAL, /* f = sum_k coef[k] t^k */
  MB_FUNC_HARMONIC,   /* f = coef[0] + coef[1] sin(coef[2] t + coef[3]): offset, amplitude, omega,
                         phase */
  MB_FUNC_BSPLINE     /* uniform cubic B-spline of ncoef >= 4 control values on [time[0], time[1]]
                         (ncoef - 3 equal segments); a value acts on 4 segments only; held
                         constant outside */
} mb_func_type;

/* A scalar function of time. */
typedef struct mb_func_desc {
  mb_func_type type;
  int ncoef;     /* number of coefficients (table: number of samples) */
  mb_real* coef; /* (ncoef) */
  double* time;  /* tables: (ncoef) strictly increasing sample times; B-splines: (2) start and end
                    time; NULL otherwise */
} mb_func_desc;

/* A named local marker of a body: a point and, optionally, directions. Spatial joints use the
   axis (z) and the reference direction (x, perpendicular to the axis); planar models use the axis
   as the in-plane direction (default local x). Directions are normalised by the compiler. */
typedef struct mb_marker_desc {
  char name[MB_NAME_LEN];
  mb_real point[3];
  int has_axis;
  mb_real axis[3];
  int has_ref;
  mb_real ref[3];
} mb_marker_desc;

/* A rigid body. Inertia is about the centre of mass in body axes: planar models use inertia[2]
   (Izz) only; spatial models use [Ixx, Iyy, Izz, Ixy, Ixz, Iyz] (tensor components, so the
   products enter the tensor with their own sign). The pose is the approximate initial position
   of the body frame and its orientation (planar: angle; spatial: yaw, pitch, roll about z, y, x).
 */
typedef struct mb_body_desc {
  char name[MB_NAME_LEN];
  mb_real mass;
  mb_real com[3];
  mb_real inertia[6];
  double position[3];
  double orientation[3];
  int nmarker;
  mb_marker_desc* marker; /* (nmarker) */
} mb_body_desc;

typedef enum mb_joint_type {
  MB_JOINT_REVOLUTE,
  MB_JOINT_PRISMATIC,
  MB_JOINT_SPHERICAL,   /* spatial only */
  MB_JOINT_CYLINDRICAL, /* spatial only */
  MB_JOINT_UNIVERSAL,   /* spatial only: marker axes of the two bodies are the cross axes */
  MB_JOINT_PLANAR,      /* spatial only: marker axis of body 1 is the plane normal */
  MB_JOINT_FIXED
} mb_joint_type;

/* Joint friction (Brown and McPhee's law on the joint's normal force, from its reaction): the
   static and dynamic coefficients, the transition velocity v_t (m/s), a viscous coefficient (N s/m
   or N m s/rad), and the joint's dimensions, m: the radius of the pin, sleeve or ball (revolute,
   cylindrical, spherical), the length a along the axis over which the joint carries its bending
   moments, the width b across it (prismatic) and the radius at which the axial thrust rubs
   (revolute, 0: no thrust friction). */
typedef struct mb_friction_desc {
  int enabled;
  mb_real mu_static, mu_dynamic, transition_velocity, viscous;
  mb_real radius, length, width, thrust_radius;
} mb_friction_desc;

/* The rates the friction of a joint of this type opposes: revolute and prismatic joints 1 (the
   joint's rate), cylindrical joints 2 (the angle's rate, then the translation's), spherical joints
   3 (the relative angular velocity of marker 2's frame to marker 1's, about the global axes); 0
   for the types that take no friction (universal, planar, fixed). */
int mb_joint_friction_rates(mb_joint_type type);

/* Body index -1 denotes the ground. */
typedef struct mb_joint_desc {
  char name[MB_NAME_LEN];
  mb_joint_type type;
  int body[2];
  int marker[2];
  mb_friction_desc friction;
} mb_joint_desc;

/* The scalar coordinates a joint defines: its rotation angle (revolute, cylindrical) and its
   translation along the axis of marker 1 (prismatic, cylindrical). */
typedef enum mb_coord_type { MB_COORD_ANGLE, MB_COORD_TRANSLATION } mb_coord_type;

typedef enum mb_force_type {
  MB_FORCE_SPRING, /* spring-damper-actuator between two marker points */
  MB_FORCE_POINT,  /* force on body[0] at marker[0], global components as functions of time */
  MB_FORCE_TORQUE, /* torque on body[0], global components (planar: z only) as functions of time */
  MB_FORCE_TYRE    /* spatial only: tyre-road contact of the wheel whose centre is marker[0] */
} mb_force_type;

/* Spring tension f = stiffness (l - natural_length) + damping dl/dt + force pulls the two points
   together. Point forces and torques use func[0..dim-1] (planar torque: func[0]). A tyre pushes
   the wheel centre (marker[0]) up with the smooth vertical force of mb_tyre_force (model.h). */
typedef struct mb_force_desc {
  char name[MB_NAME_LEN];
  mb_force_type type;
  int body[2];
  int marker[2];
  mb_real stiffness, damping, natural_length, force;
  mb_func_desc func[3];
  mb_real radius;  /* tyre: unloaded radius, m (stiffness and damping are radial) */
  double road[3];  /* tyre: road step x0, height, width, m (width 0: flat road at height 0) */
  mb_real slip[3]; /* tyre: longitudinal and lateral slip stiffness, N s/m, friction (0: none) */
} mb_force_desc;

/* A joint coordinate prescribed as a function of time (rheonomic constraint). */
typedef struct mb_driver_desc {
  char name[MB_NAME_LEN];
  int joint;
  mb_coord_type coord;
  mb_func_desc func;
} mb_driver_desc;

typedef enum mb_prescribe_type {
  MB_PRESCRIBE_JOINT,      /* a joint coordinate */
  MB_PRESCRIBE_BODY_ANGLE, /* planar only: absolute angle of a body frame */
  MB_PRESCRIBE_POINT       /* one global component of a marker point */
} mb_prescribe_type;

/* An initial coordinate the assembly must honour: its value, its rate, or both. */
typedef struct mb_prescribe_desc {
  mb_prescribe_type type;
  int joint;           /* MB_PRESCRIBE_JOINT */
  mb_coord_type coord; /* MB_PRESCRIBE_JOINT */
  int body, marker;    /* BODY_ANGLE: body; POINT: body (-1 ground) and marker */
  int component;       /* POINT: 0, 1, 2 for x, y, z */
  int has_value, has_rate;
  mb_real value, rate;
} mb_prescribe_desc;

typedef enum mb_sensor_type {
  MB_SENSOR_POINT_POSITION,
  MB_SENSOR_POINT_VELOCITY,
  MB_SENSOR_POINT_ACCELERATION,
  MB_SENSOR_BODY_ANGULAR_VELOCITY,      /* global components */
  MB_SENSOR_BODY_ANGULAR_VELOCITY_BODY, /* components along the body's own axes */
  MB_SENSOR_BODY_ANGLES,                /* planar: angle; spatial: yaw, pitch, roll (z-y-x) */
  MB_SENSOR_JOINT_COORDINATE,
  MB_SENSOR_JOINT_RATE,
  MB_SENSOR_SPRING_LENGTH,
  MB_SENSOR_SPRING_FORCE,
  MB_SENSOR_KINETIC_ENERGY,
  MB_SENSOR_GRAVITY_ENERGY,
  MB_SENSOR_ELASTIC_ENERGY,
  MB_SENSOR_TOTAL_ENERGY,
  MB_SENSOR_CONTROL,       /* the output u of a controller (sensor field `force` holds its index) */
  MB_SENSOR_CONTROL_ERROR, /* the error e of a controller (the same) */
  MB_SENSOR_REACTION_FORCE,  /* the force body 1 of a joint exerts on body 2 through it */
  MB_SENSOR_REACTION_TORQUE, /* the torque with it, about marker 2's point */
  MB_SENSOR_MULTIPLIERS,     /* the Lagrange multipliers of a joint's constraints */
  MB_SENSOR_FRICTION_FORCE,  /* a joint's friction force or torque, opposing its rate */
  MB_SENSOR_NORMAL_FORCE     /* the normal force the joint's friction acts with */
} mb_sensor_type;

/* A named output. Vector sensors give dim (or 3 angles) values unless component >= 0. */
typedef struct mb_sensor_desc {
  char name[MB_NAME_LEN];
  mb_sensor_type type;
  int body, marker; /* point and body sensors (body -1: ground) */
  int joint;        /* joint sensors */
  mb_coord_type coord;
  int joint_frame; /* reaction sensors: components along marker 2's axes (1) or global (0) */
  int force;       /* spring sensors: index in mb_desc.force */
  int component;   /* -1 for the whole vector */
} mb_sensor_desc;

typedef enum mb_shape {
  MB_SHAPE_SQUARED_ERROR, /* weight (s - r(t))^2 */
  MB_SHAPE_VALUE,         /* weight s */
  MB_SHAPE_SMOOTH_ABS     /* weight (sqrt((s - r(t))^2 + epsilon^2) - epsilon) */
} mb_shape;

/* One term of a functional on an output column s: integrated over time (final = 0) or taken at
   the final time (final = 1). */
typedef struct mb_fterm_desc {
  char output[MB_NAME_LEN + 8]; /* output column name: "x2", "v2.x", "ang.yaw" */
  mb_shape shape;
  mb_real weight; /* default 1 */
  int has_reference;
  mb_func_desc reference; /* r(t); default 0 */
  mb_real epsilon;        /* smoothing of MB_SHAPE_SMOOTH_ABS; default 1e-6 */
  int final;
} mb_fterm_desc;

/* psi = sum of final terms at t_F + integral from 0 to t_F of the sum of integral terms. */
typedef struct mb_functional_desc {
  char name[MB_NAME_LEN];
  int nterm;
  mb_fterm_desc* term; /* (nterm) */
} mb_functional_desc;

typedef enum mb_actuator_type {
  MB_ACTUATOR_FORCE, /* a force at a marker point along a global direction */
  MB_ACTUATOR_TORQUE /* a torque on a body about a global axis (planar: about z) */
} mb_actuator_type;

/* One term of a controller's measured value: weight times an output column. */
typedef struct mb_cterm_desc {
  char output[MB_NAME_LEN + 8];
  double weight;
} mb_cterm_desc;

/* A PID controller: error e = r(t) - sum_j w_j s_j over output columns s_j; control
   u = kp e + ki z + kd de/dt with z the integral of e from 0 (the derivative is taken from the
   sensors' rates, so kd needs point-position outputs), optionally saturated smoothly as
   U tanh(u / U); applied through the actuator. Its state is integrated with the mechanics. */
typedef struct mb_controller_desc {
  char name[MB_NAME_LEN];
  int nterm;
  mb_cterm_desc* term; /* (nterm) */
  int has_reference;
  mb_func_desc reference; /* r(t); default 0 */
  mb_real kp, ki, kd;     /* default 0 */
  int has_saturation;
  mb_real saturation; /* U > 0 */
  mb_actuator_type actuator;
  int body, marker;    /* force: body (-1 ground not allowed) and marker; torque: body */
  double direction[3]; /* force direction or torque axis, global, normalised by the compiler */
} mb_controller_desc;

/* A design variable of an optimisation: a parameter with its bounds. */
typedef struct mb_design_var {
  int param;
  double lower, upper;
  int log_scale; /* searched on a logarithmic scale (lower > 0) */
} mb_design_var;

/* A constraint of an optimisation: lower <= functional <= upper (either may be infinite; equal
   bounds make an equality). */
typedef struct mb_constraint_desc {
  int functional;
  double lower, upper;
} mb_constraint_desc;

/* The "optimization" section of a spec. */
typedef struct mb_optim_desc {
  int objective; /* functional minimised; -1 when the spec has no optimisation */
  int nvar;
  mb_design_var* var; /* (nvar) */
  int ncon;
  mb_constraint_desc* con;                      /* (ncon) */
  char algorithm[32];                           /* default "lbfgs" */
  double ftol_rel, ftol_abs, xtol_rel, maxtime; /* stopping rules; 0 disables */
  int maxeval;
} mb_optim_desc;

/* How the Newton and projection matrices are factorised. */
typedef enum mb_linear_solver {
  MB_LINEAR_AUTO,   /* dense up to a size where that is faster, sparse above it */
  MB_LINEAR_DENSE,  /* dense LU and Cholesky */
  MB_LINEAR_SPARSE, /* block sparse LU compiled for the model's pattern (pivoting inside the
                       coordinate blocks of points and vectors) */
  MB_LINEAR_KLU     /* SuiteSparse's KLU (partial pivoting) and LDL */
} mb_linear_solver;

/* The coordinates the equations of motion are written in. */
typedef enum mb_formulation {
  MB_FORMULATION_NATURAL, /* natural (fully Cartesian) coordinates */
  MB_FORMULATION_JOINT    /* joint coordinates, the semi-recursive method (core/joint/) */
} mb_formulation;

/* The reference point of each body's twist in joint coordinates (Lopez Varela, Dopico, Luaces,
   "Augmented Lagrangian index-3 semi-recursive formulations with projections": RTdyn0, RTdyn1). */
typedef enum mb_reference {
  MB_REFERENCE_CENTRE_OF_MASS, /* RTdyn0 */
  MB_REFERENCE_GLOBAL_ORIGIN   /* RTdyn1 */
} mb_reference;

/* Integrator settings (Dopico et al., "Forward sensitivity analysis of the index-3 augmented
   Lagrangian formulation with projections", section 2). */
typedef struct mb_settings {
  double t_end;               /* s */
  double step;                /* s */
  double output_interval;     /* s; 0 writes every step */
  double beta, gamma;         /* Newmark coefficients; trapezoidal rule: 0.25, 0.5 */
  double penalty;             /* alpha, augmented Lagrangian penalty */
  int penalty_auto;           /* 1 (default): a constraint whose c_i = alpha beta h^2 / m (m the
                                 mass it moves) is below 1e2 has its penalty raised to c_i = 1e2
                                 (core/natural/compile.c); 0, when the model sets alpha: the scale only
                                 lowers c_i to 1e4 */
  double tol_newton;          /* convergence of ||dq||_inf per Newton iteration, m */
  double tol_constraint;      /* convergence of ||Phi||_inf */
  int max_newton;             /* iterations per step */
  int max_substeps;           /* simulations and gradients retry a step whose Newton iteration
                                 fails on 2, 4, ... up to this many sub-steps (at most
                                 MB_MAX_SUBSTEPS); 1: no retry */
  int projection_iterations;  /* iterations of the projections; 1: non-iterative */
  double tol_projection;      /* convergence of iterative projections */
  int exact_tangent;          /* 1: Newton matrix includes Phi_qq^T (lambda + alpha Phi) */
  double tol_assembly;        /* initial assembly residual */
  int max_assembly;           /* initial assembly iterations (and static equilibrium ones) */
  int equilibrium;            /* 1: the initial positions are the static equilibrium under the
                                 prescribed initial values (core/natural/equilibrium.c) */
  int linear_solver;          /* mb_linear_solver */
  int refresh_each_iteration; /* 1: the Newton matrix refactorised at every iteration (Newton's
                                 method), 0: once per step, then chord iterations while they
                                 contract tenfold */
  int threads; /* of the adjoint's backward sweep: 0 chooses (2 from 64 coordinates with two
                  processors online, else 1), 1 or 2 */
  int formulation; /* mb_formulation */
  int reference;   /* mb_reference, of the joint formulation */
  volatile sig_atomic_t* interrupt; /* may be NULL; once nonzero (set it from a signal handler),
                                       the next time step fails with MB_INTERRUPTED, so that
                                       simulations, gradients and optimisations stop promptly */
} mb_settings;

/* Fills s with the defaults: trapezoidal rule, alpha = 1e9, tight tolerances, 5 s at 1e-3 s. */
void mb_settings_default(mb_settings* s);

/* mb_formulation of a name of simulation.formulation ("natural", "joint"), or -1; and back. */
int mb_formulation_parse(const char* name);
const char* mb_formulation_name(int formulation);

/* mb_reference of a name of simulation.reference_point ("centre_of_mass", "global_origin"), or
   -1; and back. */
int mb_reference_parse(const char* name);
const char* mb_reference_name(int reference);

/* refresh_each_iteration of a name of simulation.tangent_refresh: "step" 0, "iteration" 1; or -1.
 */
int mb_tangent_refresh_parse(const char* name);

/* The mb_linear_solver of a name ("auto", "dense", "sparse", "klu"), or -1; and the name of one. */
int mb_linear_solver_parse(const char* name);
const char* mb_linear_solver_name(int solver);

/* The model format's names of a joint type ("revolute", ...) and of a force type ("spring",
   "force", "torque", "tyre"); "?" for a value out of range. */
const char* mb_joint_type_name(mb_joint_type type);
const char* mb_force_type_name(mb_force_type type);

/* What the scalars bound to a parameter require of its value, as the loader checked it: the
   strictest rule among them and where the scalar that sets it is, for messages. */
typedef struct mb_param_rule {
  int min;        /* 0: any finite value, 1: >= 0, 2: > 0 */
  char where[96]; /* JSON path of that scalar, e.g. "bodies[1].mass" */
} mb_param_rule;

typedef struct mb_desc {
  char name[MB_NAME_LEN];
  int dim;            /* 2: planar (x, y), 3: spatial */
  mb_real gravity[3]; /* m/s^2 */

  int nparam;
  char (*param_name)[MB_NAME_LEN]; /* (nparam) */
  double* param_value;             /* (nparam) */
  mb_param_rule* param_rule;       /* (nparam) or NULL: no rule known */
  mb_expr* expr;                   /* (nexpr) the expressions scalars are the values of */
  int nexpr;

  mb_marker_desc* ground_marker; /* (nground_marker) markers fixed in the global frame */
  int nground_marker;
  mb_body_desc* body; /* (nbody) */
  int nbody;
  mb_joint_desc* joint; /* (njoint) */
  int njoint;
  mb_force_desc* force; /* (nforce) */
  int nforce;
  mb_driver_desc* driver; /* (ndriver) */
  int ndriver;
  mb_prescribe_desc* prescribe; /* (nprescribe) */
  int nprescribe;
  mb_sensor_desc* sensor; /* (nsensor) */
  int nsensor;
  mb_functional_desc* functional; /* (nfunctional) */
  int nfunctional;
  mb_controller_desc* controller; /* (ncontroller) */
  int ncontroller;

  mb_settings settings;
  int sensitivity; /* gradient method: 0 auto, 1 forward, 2 adjoint (mb_method of gradient.h) */
  mb_optim_desc optimization;

  /* the parameters gradients are taken with respect to: gradient_param[k], k < ngradient_param,
     or every parameter in order when gradient_param is NULL (mb_desc_gradient_count); not owned */
  const int* gradient_param;
  int ngradient_param;
} mb_desc;

/* Frees every array of d and zeroes it; d may be NULL. */
void mb_desc_free(mb_desc* d);

/* Reads a model from a JSON file. On failure returns a negative status, leaves d empty and stores
   a one-line message naming the JSON path and the reason in err, e.g.
   "fivebar.json: bodies[1].mass: must be > 0 (got -1)". */
mb_status mb_desc_load_json(const char* path, mb_desc* d, mb_error* err);

/* The same from a JSON text held in memory; `source` names it in messages. */
mb_status mb_desc_parse_json(const char* text, const char* source, mb_desc* d, mb_error* err);

/* Calls visit on every scalar of d (in_function = 1 for the coefficients of time functions). */
void mb_desc_visit(mb_desc* d, void (*visit)(mb_real* r, int in_function, void* user), void* user);

/* 1 when scalar r depends on parameter p: bound to it, or an expression that reads it. */
int mb_real_depends(const mb_desc* d, const mb_real* r, int p);

/* Sets parameter p to value: every scalar of d bound to it takes the value, and every expression
   reading it is evaluated again (d must be compiled again for the change to reach a model).
   Out-of-range p is ignored. */
void mb_desc_set_param(mb_desc* d, int p, double value);

/* Checks that parameter p may take value (finite, and within the rule the loader recorded, and
   every expression reading it finite and within its rule); returns MB_ERR_MODEL with err naming
   the parameter, the scalar bound to it and the rule. */
mb_status mb_desc_check_param(const mb_desc* d, int p, double value, mb_error* err);

/* Sets the parameter called `name` to value after mb_desc_check_param: MB_ERR_ARGUMENT when d has
   no such parameter, MB_ERR_MODEL when the value breaks a rule; err says which. */
mb_status mb_desc_set_named(mb_desc* d, const char* name, double value, mb_error* err);

/* How many parameters gradients have (the columns of a gradient), and the parameter of column k. */
int mb_desc_gradient_count(const mb_desc* d);
int mb_desc_gradient_param(const mb_desc* d, int k);

/* Index of a named parameter, or -1. */
int mb_desc_param_index(const mb_desc* d, const char* name);

#ifdef __cplusplus
}
#endif

#endif
