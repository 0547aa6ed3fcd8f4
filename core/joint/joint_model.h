/* The joint formulation of a description: its kinematic tree (tree.h), the exploded natural model
   through which it evaluates forces, constraints and outputs (mb_compile_exploded), and the
   rows of that model the tree does not hold by construction: those of the cut joints and of the
   drivers, to which the formulation adds one normalisation row per Euler-parameter quadruple
   (D. Dopico, A. Lopez Varela, A. Luaces, "Augmented Lagrangian index-3 semi-recursive
   formulations with projections: direct sensitivity analysis", section 3: Phi(z) of eqs. 9-11).
   Internal. */
#ifndef MBOPT_JOINT_MODEL_H
#define MBOPT_JOINT_MODEL_H

#include "mbopt/model.h"
#include "tree.h"

typedef struct mb_joint_model {
  mb_tree* tree;
  mb_model* aux; /* the exploded natural model */
  int ref;       /* mb_reference_point */
  int nrow;      /* rows of aux imposed as constraints */
  int* row;      /* (nrow) their indices in aux */
  int ncon;      /* constraints Phi(z): the rows, then the normalisations */
} mb_joint_model;

/* Builds the joint formulation of d with reference points ref. */
mb_status mb_joint_model_create(const mb_desc* d, mb_reference_point ref, mb_joint_model** out,
                                mb_error* err);
void mb_joint_model_free(mb_joint_model* jm);

/* Per-run workspace. */
typedef struct mb_joint_data {
  mb_tree_state* st;
  mb_data* aux; /* the natural model's state: q, qd, qdd placed by the tree, its rows, forces */
  double t;
  double *z, *zd, *zdd; /* (nz) */
  double* phi;          /* (ncon) */
  double* phiz;         /* (ncon x nz, row-major) Phi_z */
  double* phit;         /* (ncon) dPhi/dt */
  double* phidd_rhs;    /* (ncon) d2Phi/dt2 at zdd = 0: d2Phi/dt2 = Phi_z zdd + phidd_rhs */
  double* M;            /* (nz x nz, row-major) the accumulated mass matrix R^T M R */
  double* Q;            /* (nz) the accumulated forces R^T (Q - M Rdot zd) */
  double* W;            /* (nbody x 6) body wrenches */
  double* work;         /* scratch: max(36 nbody, aux nq) */
} mb_joint_data;

mb_joint_data* mb_joint_data_create(const mb_joint_model* jm);
void mb_joint_data_free(mb_joint_data* jd);

/* Poses at jd->z and the natural positions; Phi and Phi_z at jd->z, jd->t. */
void mb_joint_constraints(const mb_joint_model* jm, mb_joint_data* jd);

/* After mb_joint_constraints: twists at jd->zd and the natural velocities, Phi_t, and the
   acceleration remainder phidd_rhs (with the natural accelerations of zdd = 0). */
void mb_joint_constraint_rates(const mb_joint_model* jm, mb_joint_data* jd);

/* After mb_joint_constraint_rates: M and Q of the equations of motion M zdd + Phi_z^T lambda = Q
   (eq. 8), the forces being the natural model's at its positions and velocities. */
void mb_joint_dynamics(const mb_joint_model* jm, mb_joint_data* jd);

#endif
