/* The joint formulation of a description: its kinematic tree (tree.h), the exploded natural model
   through which it evaluates forces, constraints and outputs (mb_compile_exploded), and the
   rows of that model the tree does not hold by construction: those of the cut joints and of the
   drivers, to which the formulation adds one normalisation row per Euler-parameter quadruple
   (D. Dopico, A. Lopez Varela, A. Luaces, "Augmented Lagrangian index-3 semi-recursive
   formulations with projections: direct sensitivity analysis", section 3: Phi(z) of eqs. 9-11).
   Internal. */
#ifndef MBOPT_JOINT_MODEL_H
#define MBOPT_JOINT_MODEL_H

#include "linalg.h"
#include "mbopt/model.h"
#include "mbopt/simulate.h"
#include "tree.h"

typedef struct mb_joint_model {
  mb_tree* tree;
  mb_model* aux; /* the exploded natural model */
  int owns_aux;  /* 1: freed with this model; 0 when aux owns it (mb_model.joint) */
  int ref;       /* mb_reference */
  int nrow;      /* rows of aux imposed as constraints */
  int* row;      /* (nrow) their indices in aux */
  int ncon;      /* constraints Phi(z): the rows, then the normalisations */
  double* scale; /* (ncon) penalty scales, as the natural model's (compile.c) at the initial
                    poses */
  char (*norm_label)[MB_LABEL_LEN]; /* (nnorm) names of the normalisation rows */
  mb_pattern* full;                 /* the dense nz x nz pattern of the Newton and projection
                                       matrices */
  int* entry;                       /* (nz x nz) entry of element (i, j) in it */
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
  double* phidd_rhs;      /* (ncon) d2Phi/dt2 at zdd = 0: d2Phi/dt2 = Phi_z zdd + phidd_rhs */
  double* Rq;             /* (nz x aux nq) dq/dz, column k at k aux nq */
  double* M;              /* (nz x nz, row-major) the accumulated mass matrix R^T M R */
  double* Q;              /* (nz) the accumulated forces R^T (Q - M Rdot zd) */
  double *tangent, *proj; /* (nz x nz) on the full pattern: Newton and projection matrices */
  mb_factor newton, projection;
  double proj_penalty;
  double* W;    /* (nbody x 6) body wrenches */
  double* work; /* scratch: max(36 nbody, aux nq + 2 nz + 2 ncon + nz^2) */
} mb_joint_data;

/* The workspace of a run of jm, over the natural model's workspace aux (of jm->aux). */
mb_joint_data* mb_joint_data_create(const mb_joint_model* jm, mb_data* aux);
void mb_joint_data_free(mb_joint_data* jd);

/* Poses at jd->z and the natural positions; Phi and Phi_z at jd->z, jd->t. */
void mb_joint_constraints(const mb_joint_model* jm, mb_joint_data* jd);

/* After mb_joint_constraints: twists at jd->zd and the natural velocities, Phi_t, and the
   acceleration remainder phidd_rhs (with the natural accelerations of zdd = 0). */
void mb_joint_constraint_rates(const mb_joint_model* jm, mb_joint_data* jd);

/* After mb_joint_constraint_rates: M and Q of the equations of motion M zdd + Phi_z^T lambda = Q
   (eq. 8), the forces being the natural model's at its positions and velocities; with jacobians,
   also their K = -dQ/dq and C = -dQ/dqd in the natural model's workspace (stiff, damp). */
void mb_joint_dynamics(const mb_joint_model* jm, mb_joint_data* jd, int jacobians);

/* ALI3-P in joint coordinates (joint_ali3p.c) */

/* The initial state: the natural model assembled (its prescriptions, redundancy, equilibrium),
   read as joint coordinates and rates, then the accelerations and multipliers of the equations
   of motion. */
mb_status mb_joint_assemble(const mb_joint_model* jm, mb_joint_data* jd, mb_error* err);

/* One step of jm->aux->opt.step, with the natural model's state in jd->aux made current. */
mb_status mb_joint_step(const mb_joint_model* jm, mb_joint_data* jd, mb_error* err);

/* mb_simulate in joint coordinates: the observer sees the natural model and its workspace. */
mb_status mb_joint_simulate(const mb_joint_model* jm, mb_joint_data* jd, mb_observer obs,
                            void* user, mb_error* err);

#endif
