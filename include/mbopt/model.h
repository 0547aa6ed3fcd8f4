/* The compiled multibody model in natural coordinates and its per-run workspace.
   mb_model is built once from a description and is read-only while simulating; mb_data holds
   everything a run changes. Several mb_data may run on one model at once. */
#ifndef MBOPT_MODEL_H
#define MBOPT_MODEL_H

#include <stddef.h>

#include "mbopt/desc.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MB_LABEL_LEN 96

/* Basic elements of the natural coordinates. */
/* Basic elements, and the coordinate blocks of controller states. */
typedef enum mb_elem_kind { MB_ELEM_POINT, MB_ELEM_VECTOR, MB_ELEM_STATE } mb_elem_kind;

/* Constraint kinds. With e(t) = con_value + f(t) (f the optional time function):
   MB_CON_DOT:   Phi = a0 . b0 - e(t)
   MB_CON_ANGLE: Phi = cos(e) a0 . b0 - sin(e) a1 . b1, i.e. sin(theta - e) for an angle theta
                 whose sine is a0 . b0 and cosine a1 . b1. */
typedef enum mb_con_kind { MB_CON_DOT, MB_CON_ANGLE } mb_con_kind;

/* What a scalar measure of the configuration is: used by drivers, prescribed initial coordinates
   and joint sensors. An angle has sine x2 . y1 and cosine x2 . x1 (lvec indices a = x2, b = y1,
   c = x1); a translation is (r2 - r1) . z1 (a = r2 - r1 as one lvec, b = z1, c = -1). */
typedef enum mb_measure_kind { MB_MEASURE_ANGLE, MB_MEASURE_DOT } mb_measure_kind;

/* What a linear vector of a joint's row is to the side of the joint its reaction is computed on
   (marker 2's body, or marker 1's when marker 2 is on the ground): not of that side, the side's
   joint point (or the joint's relative position r2 - r1, entering with sign + on side 2 and - on
   side 1), or a direction fixed in the side's body. */
typedef enum mb_reaction_side {
  MB_SIDE_NONE,
  MB_SIDE_POINT_PLUS,
  MB_SIDE_POINT_MINUS,
  MB_SIDE_DIRECTION
} mb_reaction_side;

typedef struct mb_model {
  int dim;     /* 2 (planar) or 3 (spatial) */
  int nq;      /* natural coordinates */
  int ncon;    /* constraints of the motion (rigid body, joint, driver) */
  int nelem;   /* basic points and unit vectors */
  int nlvec;   /* linear vectors: affine functions of q */
  int nterm;   /* terms of all linear vectors */
  int nbody;   /* moving bodies */
  int nmarker; /* markers, ground markers first */
  int njoint;
  int nforce;
  int nfunc; /* time functions */
  int nfuncdata;
  int npres; /* prescribed initial coordinates */
  int nsensor;
  int nout; /* scalar output columns of all sensors */
  int nfunctional;
  int nfterm; /* terms of all functionals */
  int nctrl;  /* controllers */
  int ncterm; /* terms of their errors */

  mb_settings opt; /* integrator settings */
  double gravity[3];
  int unit_lvec[3]; /* constant lvecs of the global unit vectors x, y, z */

  /* basic elements */
  int* elem_kind;     /* (nelem) mb_elem_kind */
  int* elem_qadr;     /* (nelem) first coordinate in q, -1 when fixed to the ground */
  double* elem_q0;    /* (nelem x 3) approximate initial value (fixed value when on the ground) */
  int* elem_body;     /* (nelem) a body the element is fixed in (the first of those sharing it), -1
                         for ground elements and controller states */
  double* elem_local; /* (nelem x 3) its local value in that body's frame */

  /* linear vectors: v(q) = lvec_const + sum over terms of term_W (dim x dim) q[term_qadr .. +dim]
   */
  int* lvec_termadr;  /* (nlvec) first term */
  int* lvec_termnum;  /* (nlvec) number of terms */
  double* lvec_const; /* (nlvec x 3) */
  int* term_qadr;     /* (nterm) */
  double* term_W;     /* (nterm x 9) row-major dim x dim block stored in a 3 x 3 slot */

  /* bodies: frame origin and axes, centre of mass, all as linear vectors */
  int* body_origin;  /* (nbody) lvec of the body frame origin */
  int* body_axes;    /* (nbody x 3) lvecs of the body frame axes (planar: x, y) */
  int* body_com;     /* (nbody) lvec of the centre of mass */
  double* body_mass; /* (nbody) */

  /* markers: point and directions as linear vectors (-1 when absent) */
  int* marker_body;  /* (nmarker) -1 for ground */
  int* marker_point; /* (nmarker) lvec */
  int* marker_axis;  /* (nmarker) lvec of the axis z (planar: the in-plane direction) */
  int* marker_ref;   /* (nmarker) lvec of the reference direction x (planar: -1) */
  int* marker_third; /* (nmarker) lvec of z x x (planar: the axis turned by +90 degrees) */

  /* constraints of the motion */
  int* con_kind;     /* (ncon) mb_con_kind */
  int* con_lvec;     /* (ncon x 4) a0, b0, a1, b1 */
  double* con_value; /* (ncon) constant part of e(t) */
  double* con_scale; /* (ncon) penalty scale in (0, 1]: the lightest mass the constraint moves
                        over the heaviest coordinate mass, so that alpha suits every body */
  int* con_func;     /* (ncon) time function of e(t), -1 for none */
  char* con_label;   /* (ncon x MB_LABEL_LEN) what the constraint expresses, for messages */
  int* con_body;     /* (ncon) the body whose rigidity or markers it expresses, else -1 */
  int* con_joint;    /* (ncon) the joint it belongs to, else -1 (neither: a driver) */
  int* con_side;     /* (ncon x 4) what each linear vector of a joint's or joint driver's row is
                        to the joint's reaction side (mb_reaction_side): the reaction is the
                        constraint force on that side */
  /* the penalty that puts every constraint's c_i at the cap (compile.c), what passes slow
     singular positions; 0 without constraints */
  double penalty_at_cap;

  /* prescribed initial coordinates, same representation as constraints */
  int* pres_kind;      /* (npres) mb_con_kind */
  int* pres_lvec;      /* (npres x 4) */
  double* pres_value;  /* (npres) */
  int* pres_has_value; /* (npres) */
  int* pres_has_rate;  /* (npres) */
  double* pres_rate;   /* (npres) */

  /* joints: their coordinates as measures */
  int* joint_type;     /* (njoint) mb_joint_type */
  int* joint_body;     /* (njoint x 2) the bodies joined, -1 for the ground */
  int* joint_measure;  /* (njoint x 2 x 3) lvecs a, b, c of the angle and the translation (-1: none)
                        */
  int* joint_marker;   /* (njoint x 2) the two markers */
  int* joint_rel;      /* (njoint) lvec of marker 2's point minus marker 1's, -1: none */
  int* joint_explicit; /* (njoint) 1: the joint is expressed by constraint rows alone, its bodies
                          sharing no element through it, so that its multipliers give its
                          reaction (asked for by a reaction or multipliers output) */
  int* joint_rowadr;   /* (njoint) first entry in joint_row */
  int* joint_rownum;   /* (njoint) the joint's rows, then those of the drivers of its coordinates */
  int* joint_row;      /* (ncon) constraint rows, by joint */
  int* joint_friction; /* (njoint) 1: the joint has friction (it is then explicit) */
  double* joint_fric;  /* (njoint x 8) mu_s, mu_d, v_t, viscous, radius, length, width, thrust
                          radius (mb_friction_desc) */

  /* force elements */
  int* force_type;    /* (nforce) mb_force_type */
  int* force_lvec;    /* (nforce x 2) spring: marker points; point force: point; torque: -1;
                         tyre: wheel centre and spin axis */
  int* force_body;    /* (nforce) body of point forces and torques */
  double* force_k;    /* (nforce) stiffness, N/m */
  double* force_c;    /* (nforce) damping, N s/m */
  double* force_l0;   /* (nforce) natural length, m; tyre: radius */
  double* force_f0;   /* (nforce) constant actuator force, N */
  int* force_func;    /* (nforce x 3) time functions of force or torque components, -1: zero */
  double* force_road; /* (nforce x 3) tyre road step x0, height, width; width 0: flat road */
  double* force_slip; /* (nforce x 3) tyre slip stiffness C_x, C_y, N s/m, friction mu (0: none) */

  /* time functions */
  int* func_type; /* (nfunc) mb_func_type */
  int* func_adr;  /* (nfunc) first entry in func_data */
  int* func_num;  /* (nfunc) number of coefficients */
  double*
      func_data;   /* (nfuncdata) coefficients; tables: values, times, spline second derivatives */
  int* func_param; /* (nfuncdata) parameter bound to each coefficient, -1: none */

  /* sensors */
  int* sensor_type; /* (nsensor) mb_sensor_type */
  int* sensor_ref;  /* (nsensor x 2) marker or body or joint or force, and the joint coordinate */
  int* sensor_component; /* (nsensor) -1: all */
  int* sensor_outadr;    /* (nsensor) first output column */
  int* sensor_outnum;    /* (nsensor) number of output columns */
  char* out_name;        /* (nout x MB_LABEL_LEN) column names */

  /* functionals: terms on output columns */
  int* fterm_functional; /* (nfterm) functional of the term */
  int* fterm_column;     /* (nfterm) output column */
  int* fterm_shape;      /* (nfterm) mb_shape */
  int* fterm_final;      /* (nfterm) 1: at the final time, 0: integrated */
  double* fterm_weight;  /* (nfterm) */
  double* fterm_eps;     /* (nfterm) smoothing of MB_SHAPE_SMOOTH_ABS */
  int* fterm_ref;        /* (nfterm) time function of the reference, -1: zero */
  char* functional_name; /* (nfunctional x MB_NAME_LEN) */

  /* controllers: a block of dim coordinates of unit mass each (w'' = e, z = w'), gains and the
     terms of their errors */
  int* ctrl_qadr;       /* (nctrl) first coordinate of the state block */
  double* ctrl_gain;    /* (nctrl x 4) kp, ki, kd, saturation (0: none) */
  int* ctrl_ref;        /* (nctrl) time function of the reference, -1: zero */
  int* ctrl_actuator;   /* (nctrl) mb_actuator_type */
  int* ctrl_lvec;       /* (nctrl) force: the marker point; torque: -1 */
  int* ctrl_body;       /* (nctrl) torque: the body; force: -1 */
  double* ctrl_dir;     /* (nctrl x 3) unit force direction or torque axis */
  int* ctrl_termadr;    /* (nctrl) first error term */
  int* ctrl_termnum;    /* (nctrl) */
  int* cterm_column;    /* (ncterm) output column */
  double* cterm_weight; /* (ncterm) */
  int* cterm_lvec;      /* (ncterm) point-position outputs: the point's lvec, else -1 */
  int* cterm_comp;      /* (ncterm) its component */

  /* the constant mass matrix as dim x dim blocks between coordinate blocks: the coordinates come
     in blocks of dim (one per point, unit vector or controller state), and a block row or column
     is a coordinate divided by dim; repeated blocks add up */
  int nmass;             /* mass blocks */
  int* mass_block;       /* (nmass x 2) block row and block column */
  double* mass;          /* (nmass x 9) dim x dim block in a 3 x 3 row-major slot */
  double* gravity_force; /* (nq) generalised gravity force */

  /* names for messages */
  char* body_name;  /* (nbody x MB_NAME_LEN) */
  char* joint_name; /* (njoint x MB_NAME_LEN) */
  char* force_name; /* (nforce x MB_NAME_LEN) */

  void* buffer;       /* the one allocation holding every array above */
  size_t buffer_size; /* its bytes */

  /* the compiled sparsity of the system matrices, the maps that assemble them and their
     symbolic factorisations (core/structure.h); owned, NULL in tangent models */
  struct mb_structure* structure;

  /* the joint formulation these natural coordinates serve (simulation.formulation "joint"), whose
     coordinates the integrator then takes; owned, NULL in natural coordinates */
  struct mb_joint_model* joint;
  int exploded; /* every joint expressed by its rows (the joint formulation's natural model) */
  /* the formulation's table (core/formulation.h); NULL: natural coordinates */
  const struct mb_formulation_ops* formulation;
} mb_model;

/* Statistics of a run, reported after simulation. */
typedef struct mb_report {
  int assembled; /* the initial assembly succeeded */
  int steps;
  long newton_iterations;
  int max_newton_per_step;
  int stalled_steps;    /* steps accepted with the multipliers stalled at round-off (ali3p.c) */
  int substepped_steps; /* steps mb_simulate took again on sub-steps after a Newton failure */
  int finest_substeps;  /* the most sub-steps one of them needed */
  double max_phi;       /* largest |Phi| after each step */
  double max_phid;      /* largest |dPhi/dt| after the velocity projection */
  double max_phidd;     /* largest |d2Phi/dt2| after the acceleration projection */
  /* constraints dependent on the others at the initial configuration (assembly.c), and the
     joints (or drivers, or bodies) they belong to, "; "-separated */
  int redundant;
  char dependent[256];
  /* the static equilibrium of the initial positions (settings.equilibrium): its Newton
     iterations and the largest unbalanced force left, N */
  int equilibrium_iterations;
  double equilibrium_residual;
  double energy_initial; /* kinetic + gravity + elastic at t0, J */
  double energy_final;
  double work_nonconservative; /* work of dampers, actuators, external loads and drivers, J */
  double max_energy_error;     /* largest |E(t) - E(t0) - W_nc(t)|, J */
  double energy_scale; /* largest kinetic or elastic energy seen, J: the scale of the error */
} mb_report;

typedef struct mb_data {
  double t;
  double* q;         /* (nq) */
  double* qd;        /* (nq) */
  double* qdd;       /* (nq) */
  double* lambda;    /* (ncon) augmented Lagrangian multipliers */
  double* sigma;     /* (ncon) velocity projection multipliers */
  double* kappa;     /* (ncon) acceleration projection multipliers */
  double* qd_star;   /* (nq) velocities of the last step before their projection */
  double* qdd_star;  /* (nq) accelerations of the last step before their projection */
  double* ctrl_work; /* (8 nq) scratch of the controllers */
  double* fric_work; /* (6 nq + ncon) scratch of the joints' friction in the Newton matrix */

  /* evaluated quantities at the current state; the matrices are the values of sparse matrices
     with the patterns of m->structure: Phi_q by rows, the nq x nq ones by columns */
  double* phi;                  /* (ncon) */
  double* phiq;                 /* (nnz of Phi_q) */
  double* phit;                 /* (ncon) */
  double* phidd_rhs;            /* (ncon) dPhi_q/dt qd + dPhi_t/dt */
  double* force;                /* (nq) generalised forces Q */
  double* stiff;                /* (nnz) K = -dQ/dq */
  double* damp;                 /* (nnz) C = -dQ/dqd */
  double* tangent;              /* (nnz) Newton matrix of the last iteration */
  double* proj;                 /* (nnz) M + pen Phi_q^T S Phi_q of the last projection */
  double proj_penalty;          /* pen of that projection */
  struct mb_factor* newton;     /* factorisation of the Newton matrix */
  struct mb_factor* projection; /* factorisation of the projection matrix */

  double* out;    /* (nout) sensor values after mb_sensors */
  double* psi;    /* (nfunctional) functionals of mb_simulate's run (trapezoidal rule): complete
                     at t_end, only indicative when the run stopped earlier */
  double* unwrap; /* (nsensor x 3) previous angles, to unwrap angle outputs */
  int have_unwrap;

  /* scratch */
  double* work;    /* (4 nq + 2 ncon) */
  double* scatter; /* (nq) zero between uses: a dense row gathered into a sparse one */
  double* lvcache; /* values and rates of the linear vectors of the constraints */
  double* qhat_v;  /* (nq) Newmark history terms */
  double* qhat_a;  /* (nq) */

  mb_report report;
  double power_prev;           /* non-conservative power at the previous step */
  struct mb_joint_data* joint; /* the joint formulation's workspace (mb_model.joint), owned */
  const struct mb_formulation_ops* formulation; /* its model's (mb_model.formulation) */
} mb_data;

/* Compiles a description to natural coordinates. On failure returns a negative status with a
   message naming the description entry (bodies[2], joints[1], ...). *out is NULL on failure. */
mb_status mb_compile(const mb_desc* d, mb_model** out, mb_error* err);

/* Frees a model; m may be NULL. */
void mb_model_free(mb_model* m);

/* The linear solver the model was compiled for: "dense", "sparse" or "klu" (settings
   linear_solver "auto" resolved by the model's size; the joint formulation's are dense). */
const char* mb_model_linear_solver(const mb_model* m);

/* The coordinates and constraints the integrator takes: the natural ones (nq, ncon), or the
   joint formulation's (mb_model.joint: joint coordinates, and the constraints of cut joints,
   drivers and Euler parameters). */
int mb_model_coordinate_count(const mb_model* m);
int mb_model_constraint_count(const mb_model* m);

/* What those coordinates are, for messages: "coordinates" (natural), or "joint coordinates
   (RTdyn0)" / "joint coordinates (RTdyn1)". */
const char* mb_model_coordinate_name(const mb_model* m);

/* The penalty to name where steps converge slowly at singular positions: penalty_at_cap when it
   is above twice the model's penalty, else 0 (the penalty already about at the cap, raising it
   would not help). */
double mb_model_penalty_remedy(const mb_model* m);

/* Most time steps a run may take: a longer span is refused when the model is compiled rather
   than run for days. */
#define MB_MAX_STEPS 100000000L

/* The number of steps from 0 to t_end, t_end / step rounded (from 1 to MB_MAX_STEPS in a
   compiled model). */
long mb_step_count(const mb_model* m);

/* The index of the output named `name` into mb_data's out, or -1 when there is none. */
int mb_model_output(const mb_model* m, const char* name);

/* Allocates a workspace for m (NULL when out of memory). */
mb_data* mb_data_create(const mb_model* m);

/* Frees a workspace; d may be NULL. */
void mb_data_free(mb_data* d);

/* Value of linear vector `lv` at coordinates q (n = nq) into v (3, z = 0 in planar). */
void mb_lvec_eval(const mb_model* m, int lv, const double* q, double* v);

/* Evaluates time function f at t: value, first and second derivative (each may be NULL). */
void mb_func_eval(const mb_model* m, int f, double t, double* value, double* rate, double* accel);

#ifdef __cplusplus
}
#endif

#endif
