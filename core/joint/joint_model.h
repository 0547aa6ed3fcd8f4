/* The joint formulation of a description: its kinematic tree (tree.h), the exploded natural model
   through which it evaluates forces, constraints and outputs (mb_compile_exploded), and the
   rows of that model the tree does not hold by construction: those of the cut joints and of the
   drivers, to which the formulation adds one normalisation row per Euler-parameter quadruple
   (A. Lopez Varela, D. Dopico, A. Luaces, "Augmented Lagrangian index-3 semi-recursive
   formulations with projections: direct sensitivity analysis", section 3: Phi(z) of eqs. 9-11).
   Internal. */
#ifndef MBOPT_JOINT_MODEL_H
#define MBOPT_JOINT_MODEL_H

#include "linalg.h"
#include "mbopt/model.h"
#include "mbopt/simulate.h"
#include "stepper.h"
#include "tree.h"

typedef struct mb_joint_model {
  mb_tree* tree;
  mb_model* aux;      /* the exploded natural model */
  int owns_aux;       /* 1: freed with this model; 0 when aux owns it (mb_model.joint) */
  int ref;            /* mb_reference */
  int nrow;           /* rows of aux imposed as constraints */
  int* row;           /* (nrow) their indices in aux */
  int ncon;           /* constraints Phi(z): the rows, then the normalisations */
  int nz;             /* coordinates z: the tree's, then the controllers' state coordinates */
  int nstate;         /* the controllers' state coordinates, natural coordinates of their own */
  int* state_qadr;    /* (nstate) the natural coordinate of each */
  double* state_mass; /* (nstate) its mass in the natural model (controllers.c: unit) */
  double* scale;      /* (ncon) penalty scales, as the natural model's (compile.c) at the initial
                         poses */
  double* row_scale;  /* (aux ncon) the same on the natural rows: the imposed rows', 0 elsewhere */
  int friction;       /* joints with friction (all cut, tree.h): the forces read the imposed rows'
                         multipliers, which the step places in the natural workspace's lambda */
  char (*norm_label)[MB_LABEL_LEN]; /* (nnorm) names of the normalisation rows */
  mb_pattern* full;                 /* the dense nz x nz pattern of the Newton and projection
                                       matrices */
  int* entry;                       /* (nz x nz) entry of element (i, j) in it */
  /* the natural coordinates the integrator reads dq/dz at: those of the force elements'
     Jacobians (nforce_coord, first) and of the imposed rows; the elements holding them */
  int nforce_coord, nneed_coord, nneed_elem, nrow_elem;
  int* need_coord; /* (nneed_coord) */
  int* need_elem;  /* (nneed_elem) those the imposed rows read first (nrow_elem), then the
                      force elements' others */
  /* the pairs of force coordinates the natural system pattern holds: their indices in
     need_coord (2 each) and entries in that pattern */
  int nforce_pair;
  int* force_pair;  /* (2 nforce_pair) */
  int* force_entry; /* (nforce_pair) */
  int* coord_body;  /* (nforce_coord) the body of each force coordinate; nbody + k for the
                       state coordinate k of a controller */
  int *coord_path_adr, *coord_path; /* (nneed_coord + 1), the joint coordinates each needed
                                       coordinate moves with: its body's path (tree.h), or the
                                       state's own column */
  int* need_rank;                   /* (aux nq) each natural coordinate's index in need_coord,
                                       -1 for none */
  /* the outputs that read joint multipliers (joint_reactions.c): with reactions, per body its
     natural coordinates and the tree's rows whose multipliers it determines (those of its
     rigidity and of its joint to the parent) */
  int reactions;
  int *react_coord_adr, *react_coord; /* (nbody + 1), (aux nq) */
  int *react_row_adr, *react_row;     /* (nbody + 1), (aux ncon) */
  size_t react_scratch;               /* doubles of the recovery's scratch (joint_reactions.c) */
  mb_solver lu, cholesky;
} mb_joint_model;

/* Builds the joint formulation of d with reference points ref. */
mb_status mb_joint_model_create(const mb_desc* d, mb_reference ref, mb_joint_model** out,
                                mb_error* err);
void mb_joint_model_free(mb_joint_model* jm);

/* Per-run workspace. */
typedef struct mb_joint_data {
  mb_tree_state* st;
  mb_data* aux; /* the natural model's state (borrowed): q, qd, qdd placed by the tree, its rows,
                   forces, outputs */
  double t;
  double *z, *zd, *zdd;                         /* (nz) */
  double *zd_star, *zdd_star, *zhat_v, *zhat_a; /* (nz) Newmark terms (stepper.h) */
  double* r;                                    /* (nz) Newton residual */
  double *lambda, *sigma, *kappa;               /* (ncon) multipliers */
  double* phi;                                  /* (ncon) */
  double* phiz;                                 /* (ncon x nz, row-major) Phi_z */
  double* phit;                                 /* (ncon) dPhi/dt */
  double* phidd_rhs; /* (ncon) d2Phi/dt2 at zdd = 0: d2Phi/dt2 = Phi_z zdd + phidd_rhs */
  double* Rq; /* (aux nq x nz, row-major) dq/dz at the imposed rows' and force elements' coordinates
                (mb_joint_constraint_jacobian, mb_joint_force_jacobian) */
  double* M;  /* (nz x nz, row-major) the accumulated mass matrix R^T M R */
  double* Mt; /* (tree nz x tree nz) its tree block, as mb_tree_mass forms it */
  double* Q;  /* (nz) the accumulated forces R^T (Q - M Rdot zd) */
  double *tangent, *proj; /* (nz x nz) on the full pattern: Newton and projection matrices */
  mb_factor newton, projection;
  mb_kept_matrix kept; /* what the steps know of the factorised Newton matrix */
  double proj_penalty;
  double* W;     /* (nbody x 6) body wrenches */
  double* start; /* (3 nz + ncon) z, zd, zdd, lambda at the start of a step retried on sub-steps */
  double start_t;
  int start_steps;
  double* work;    /* scratch (joint_model.c) */
  double* natural; /* (aux nq + 6 nbody) mb_joint_inverse_dynamics' natural forces and scratch */
  double* react;   /* (jm->react_scratch) mb_joint_natural_multipliers' scratch, NULL without */
} mb_joint_data;

/* The workspace of a run of jm, over the natural model's workspace aux (of jm->aux). */
mb_joint_data* mb_joint_data_create(const mb_joint_model* jm, mb_data* aux);
void mb_joint_data_free(mb_joint_data* jd);

/* Poses at jd->z and the natural positions; Phi at jd->z, jd->t, the imposed rows' gradients in
   the natural workspace's Phi_q. */
void mb_joint_positions(const mb_joint_model* jm, mb_joint_data* jd);

/* After mb_joint_positions: Phi_z and dq/dz (jd->Rq) at the coordinates the imposed rows read. */
void mb_joint_constraint_jacobian(const mb_joint_model* jm, mb_joint_data* jd);

/* After mb_joint_constraint_jacobian: dq/dz (jd->Rq) at the force elements' other coordinates
   too, for the Newton matrix's force Jacobians. */
void mb_joint_force_jacobian(const mb_joint_model* jm, mb_joint_data* jd);

/* mb_joint_positions, then mb_joint_constraint_jacobian. */
void mb_joint_constraints(const mb_joint_model* jm, mb_joint_data* jd);

/* After mb_joint_positions: the twists at jd->zd and their rates at zdd (NULL: zero, Rdot zd),
   with the natural velocities of every element (all) or of those the integrator reads. */
void mb_joint_motion(const mb_joint_model* jm, mb_joint_data* jd, const double* zdd, int all);

/* y (aux nq) += s Phi_q^T w over the imposed rows, w (ncon) the joint formulation's multipliers
   (the normalisations' left out), Phi_q the natural workspace's. */
void mb_joint_imposed_reactions(const mb_joint_model* jm, const mb_data* da, const double* w,
                                double s, double* y);

/* r (nz) = s (M zdd + Phi_z^T mult - Q) (eq. 8) after mb_joint_motion at zdd = jd->zdd and the
   natural model's forces: the tree's inverse dynamics, the imposed rows' reactions Phi_q^T mult
   among the natural forces, without forming M or Phi_z. */
void mb_joint_inverse_dynamics(const mb_joint_model* jm, mb_joint_data* jd, const double* mult,
                               double s, double* r);

/* After mb_joint_constraints: mb_joint_motion of every element, Phi_t, and the acceleration
   remainder phidd_rhs (with the natural accelerations of zdd = 0). */
void mb_joint_constraint_rates(const mb_joint_model* jm, mb_joint_data* jd);

/* After mb_joint_constraints: Phi_t alone (it does not depend on the velocities). */
void mb_joint_constraint_time(const mb_joint_model* jm, mb_joint_data* jd);

/* After mb_joint_motion: M and Q of the equations of motion M zdd + Phi_z^T lambda = Q
   (eq. 8), the forces being the natural model's at its positions and velocities; with jacobians,
   also their K = -dQ/dq and C = -dQ/dqd in the natural model's workspace (stiff, damp). */
void mb_joint_dynamics(const mb_joint_model* jm, mb_joint_data* jd, int jacobians);

/* The natural workspace's multipliers of the imposed rows: jd's lambda and kappa (the outputs
   of the cut joints read them). */
void mb_joint_imposed_multipliers(const mb_joint_model* jm, mb_joint_data* jd);

/* With joint friction, the natural workspace da's multipliers on the imposed rows = lambda +
   alpha S phi (ncon each; the Newton residual's; alpha 0: lambda, phi may be NULL), for the
   friction's forces to read; nothing without. */
void mb_joint_friction_multipliers(const mb_joint_model* jm, mb_data* da, const double* lambda,
                                   double alpha, const double* phi);

/* M at the poses of the last mb_joint_constraints: the tree's, and the states' masses. */
void mb_joint_mass(const mb_joint_model* jm, mb_joint_data* jd);

/* The natural model's controller states from z, zd or zdd (x: the joint vector, y: the natural
   one). */
void mb_joint_states_to_natural(const mb_joint_model* jm, const double* x, double* y);

/* The outputs that read joint multipliers (joint_reactions.c) */

/* jm->reactions and, with them, the per-body lists of jm; 0, or -1 out of memory. */
int mb_joint_reactions_build(mb_joint_model* jm);

/* The natural model's multipliers (jd->aux->lambda and kappa) at the state a step or the
   assembly left, when jm has outputs that read them: the cut joints' and drivers' rows the
   formulation's lambda and kappa, the tree's (kappa zero) from the natural equations of motion
   body by body from the leaves; the natural forces evaluated there with their Jacobians when
   jacobians is set.
   MB_ERR_LINALG or MB_ERR_MEMORY from the least-squares solves, with err. */
mb_status mb_joint_natural_multipliers(const mb_joint_model* jm, mb_joint_data* jd, int jacobians,
                                       mb_error* err);

/* Whether a functional reads the multipliers of a joint of the tree. */
int mb_joint_reads_tree_multipliers(const mb_joint_model* jm);

/* The recovery of mb_joint_natural_multipliers as a linear map, at the natural state it last
   recovered (its rows' gradients): lam (aux ncon) on the tree's rows of natural forces f (aux
   nq, overwritten), the other rows untouched. Its derivative along a parameter is the map of the
   linearised forces (joint_sens.c). MB_ERR_LINALG from the least-squares solves, with err. */
mb_status mb_joint_tree_multipliers(const mb_joint_model* jm, mb_joint_data* jd, double* f,
                                    double* lam, mb_error* err);

/* nu (aux nq) = that map transposed, applied to mu (aux ncon, read on the tree's rows). */
mb_status mb_joint_tree_multipliers_t(const mb_joint_model* jm, mb_joint_data* jd, const double* mu,
                                      double* nu, mb_error* err);

/* ALI3-P in joint coordinates (joint_ali3p.c) */

/* The initial state: the natural model assembled (its prescriptions, redundancy, and the static
   equilibrium in joint coordinates), read as joint coordinates and rates, then the accelerations
   and multipliers of the equations of motion. */
mb_status mb_joint_assemble(const mb_joint_model* jm, mb_joint_data* jd, mb_error* err);

/* The natural model's assembly of mb_joint_assemble, its equilibrium mb_joint_equilibrium. */
mb_status mb_joint_assemble_natural(const mb_joint_model* jm, mb_joint_data* jd, mb_error* err);

/* jd->z from the natural model's positions (the bodies' poses, the controllers' states). */
void mb_joint_read_positions(const mb_joint_model* jm, mb_joint_data* jd);

/* The static equilibrium of the natural model's assembled positions, solved in joint
   coordinates (joint_equilibrium.c): the natural positions left at it, at rest. */
mb_status mb_joint_equilibrium(const mb_joint_model* jm, mb_joint_data* jd, mb_error* err);

/* D (nz x nz, row-major) += s Phi_z^T diag(w) Phi_z, Phi_z that of jd. */
void mb_joint_add_gram(const mb_joint_model* jm, const mb_joint_data* jd, const double* w, double s,
                       double* D);

/* The multipliers' coupling of joint friction in a tangent linear model: the friction's
   generalised forces -sum_a F_a R^T g_a read the imposed rows' multipliers, so that the KKT
   system's multiplier block is B^T = Phi_z^T + sum_a gz_a lz_a^T instead of Phi_z^T (Verulkar,
   Sandu, Sandu and Dopico, "Simultaneous optimal system and controller design for multibody
   systems with joint friction using direct sensitivities", in joint coordinates). */
typedef struct mb_joint_coupling {
  int n;            /* the friction's rates */
  const double* gz; /* (n x nz) R^T g_a */
  const double* lz; /* (n x ncon) dF_a/dlambda on the joint rows, 0 on the normalisations */
} mb_joint_coupling;

/* y (ncon) += B x: Phi_z x (Phi_z that of jd), with couple (may be NULL) also
   sum_a lz_a (gz_a . x). */
void mb_joint_rows_mul(const mb_joint_model* jm, const mb_joint_data* jd,
                       const mb_joint_coupling* couple, const double* x, double* y);

/* x (nz) solving P x + B^T mult = b0, Phi_z x + rhs = 0 (transposed: P^T x + Phi_z^T mult = b0,
   B x + rhs = 0) by the augmented Lagrangian iteration of mb_project_iterate on the factorised
   f = P + pen Phi_z^T S Phi_z, Phi_z that of jd, B = Phi_z unless coupled (couple, may be NULL),
   to at most iterations and the tolerance tol (relative: mb_projection.relative); mult (ncon)
   starts the iteration and receives the multipliers; work: nz + ncon. Returns the final
   violation. */
double mb_joint_kkt(const mb_joint_model* jm, mb_joint_data* jd, mb_factor* f, int transpose,
                    const mb_joint_coupling* couple, double pen, int iterations, double tol,
                    int relative, const double* b0, double* x, const double* rhs, double* mult,
                    double* work);

/* Factorises jd->projection = M + pen Phi_z^T S Phi_z at the positions of the last
   mb_joint_constraints and jd->M, pen (jd->proj_penalty) by the natural formulation's rule
   (mbu_projection_penalty). */
mb_status mb_joint_factor_projection(const mb_joint_model* jm, mb_joint_data* jd, mb_error* err);

/* The rest of mb_joint_assemble once the natural model is assembled in jd->aux. */
mb_status mb_joint_read_assembly(const mb_joint_model* jm, mb_joint_data* jd, mb_error* err);

/* One step of jm->aux->opt.step, retried on sub-steps as the natural formulation's are
   (simulation.max_substeps), with the natural model's state in jd->aux made current; *substeps
   (unless NULL): how many it took, 1 for the step whole. */
mb_status mb_joint_step(const mb_joint_model* jm, mb_joint_data* jd, int* substeps, mb_error* err);

/* Called after each sub-step of mb_joint_substeps with the sub-steps' settings. */
typedef mb_status (*mb_joint_substep_hook)(void* user, const mb_settings* sub, mb_error* err);

/* The step mb_joint_step just took on n sub-steps, again from its start (the same states: the
   sensitivities follow them), calling after (may be NULL) with user after each. */
mb_status mb_joint_substeps(const mb_joint_model* jm, mb_joint_data* jd, int n,
                            mb_joint_substep_hook after, void* user, mb_error* err);

/* The sensitivities in joint coordinates (joint_sens.c): mbd_forward and mbd_adjoint of a model
   whose natural coordinates serve jm. The adjoint keeps every step's state or, with checkpoint =
   k > 0, every k-th and takes the steps between again (memory: the bytes it kept). */
mb_status mb_joint_forward(const mb_desc* desc, const mb_joint_model* jm, mb_joint_data* jd,
                           double* psi, double* grad, mb_error* err);
mb_status mb_joint_adjoint(const mb_desc* desc, const mb_joint_model* jm, mb_joint_data* jd,
                           int checkpoint, double* psi, double* grad, size_t* memory,
                           mb_error* err);

/* The explicit parameter derivatives of the equations of motion and constraints at jd's
   positions, multipliers and time and the rates zd, zdd: r (nz x p, by parameter) = -dF/drho and
   g (ncon x p) = -dPhi/drho at fixed joint coordinates, F = M zdd + Phi_z^T lambda - Q and
   p = mb_desc_gradient_count(desc); the right-hand side of the forward sensitivity's tangent
   linear model (joint_sens.c), for its tests. */
mb_status mb_joint_explicit_dynamics(const mb_desc* desc, const mb_joint_model* jm,
                                     mb_joint_data* jd, const double* zd, const double* zdd,
                                     double* r, double* g, mb_error* err);

/* The same for the velocity (level 1) or acceleration (level 2) projection at jd's z, zd, zdd,
   multipliers (sigma, kappa) and time, whose unprojected rates were x_star (nz): r = -d(M y +
   Phi_z^T mult)/drho at fixed y = x - x_star and mult, g = -d(d^level Phi/dt^level)/drho at fixed
   z, zd, zdd. */
mb_status mb_joint_explicit_projection(const mb_desc* desc, const mb_joint_model* jm,
                                       mb_joint_data* jd, int level, const double* x_star,
                                       double* r, double* g, mb_error* err);

/* mb_simulate in joint coordinates: the observer sees the natural model and its workspace. */
mb_status mb_joint_simulate(const mb_joint_model* jm, mb_joint_data* jd, mb_observer obs,
                            void* user, mb_error* err);

#endif
