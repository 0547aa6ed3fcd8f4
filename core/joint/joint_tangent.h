/* The exact derivatives of the joint formulation's equations of motion (joint_tangent.c), for
   its Newton matrix and its sensitivities: written through the natural coordinates q(z) of the
   exploded model,
     M zdd + Phi_z^T lambda - Q = R^T w,   w = M^n qdd - Q^n + Phi_q^T lambda,
   with qd = R zd and qdd = R zdd + Rdot zd, their derivatives are the natural model's (K, C,
   M^n, the constraints' Hessians) carried by R and the derivatives of the natural state
   (tree_tangent.c). Dense in the joint coordinates. Internal. */
#ifndef MBOPT_JOINT_TANGENT_H
#define MBOPT_JOINT_TANGENT_H

#include "joint_model.h"

typedef struct mb_joint_tangent {
  const mb_joint_model* jm;
  mb_joint_data* jd;
  const mb_model* aux;
  mb_data* da;
  int nz, nt, nc, nq;
  mb_tree_spatial *sp, *sy;  /* the motion at the state's rates; at a projection's rate change */
  double *R, *Rv, *Ra, *Rad; /* (nq x nz, by columns) dq/dz, dqd/dz, dqdd/dz, dqdd/dzd */
  int columns_current;       /* whether they are those of the last mb_joint_tangent_state */
  double *K, *C, *M, *T;     /* (nz x nz, by columns) */
  double* KH;                /* (natural system pattern) K^n + the constraints' Hessian, or the
                                Hessian alone, on hess_entries alone */
  int nhess, *hess_entries;  /* the entries the imposed rows' Hessians reach, ascending */
  int nentries, *entries;    /* those and the entries between the force elements' coordinates,
                                ascending: every nonzero of KH and of the damping matrix */
  mb_compact kh, damp;       /* KH's and the damping matrix's nonzero entries, for products */
  double *phid_q, *phidd_q;  /* (pattern of Phi_q) d(dPhi/dt)/dq, d(d2Phi/dt2)/dq */
  double* lam;               /* (aux ncon) multipliers of the imposed rows, zero elsewhere */
  double *w, *u, *v, *scr, *rows; /* (nq) x 3, (6 nq), (aux ncon) scratch; w the natural residual */
  double* col;                    /* (nz) scratch */
  double* pattern;                /* (nnz of the dense pattern) a matrix's values on it */
  double *wrench, *projected;     /* (12 nbody), (nz) scratch of mb_joint_tangent_rt_mul */
} mb_joint_tangent;

mb_joint_tangent* mb_joint_tangent_create(const mb_joint_model* jm, mb_joint_data* jd);
void mb_joint_tangent_free(mb_joint_tangent* tg);

/* The natural model's rates at joint rates zd, zdd (positions: the last mb_joint_constraints),
   the imposed constraint rows and their rate Jacobians, and the spatial motion. */
void mb_joint_tangent_state(mb_joint_tangent* tg, const double* zd, const double* zdd);

/* R, Rv, Ra and Rad at the motion tg->sp. */
void mb_joint_tangent_columns(mb_joint_tangent* tg);

/* y (nz) = s R^T x (+ y when add). */
void mb_joint_tangent_rt_mul(mb_joint_tangent* tg, const double* x, double s, int add, double* y);

/* dq, dqd, dqdd (nq each, may be NULL) = the natural state's derivatives along the joint
   coordinates' dz, dzd, dzdd (nz each, may be NULL) at the motion sp: R dz, Rv dz + R dzd and
   Ra dz + Rad dzd + R dzdd, in one pass of the tree, or from the columns when they are those of
   the state (sp = tg->sp). */
void mb_joint_tangent_along(mb_joint_tangent* tg, mb_tree_spatial* sp, const double* dz,
                            const double* dzd, const double* dzdd, double* dq, double* dqd,
                            double* dqdd);

/* mb_joint_tangent_along at the state's motion with dz, dzd alone, its results at the elements the
   imposed rows read alone (zero elsewhere, unless the columns are current). */
void mb_joint_tangent_rows_along(mb_joint_tangent* tg, const double* dz, const double* dzd,
                                 double* dq, double* dqd, double* dqdd);

/* The natural model's forces at the state of tg with their Jacobians (its stiff and damp), the
   joint friction reading the multipliers mult (ncon) of the imposed rows: its stiffness at fixed
   multipliers in stiff, their own coupling apart (mb_joint_coupling). */
void mb_joint_tangent_forces(mb_joint_tangent* tg, const double* mult);

/* The friction's coupling through the multipliers (mb_joint_coupling) from its natural
   linearisation fr (sens_friction_linearise) at the state of mb_joint_tangent_forces: gz
   (rates x nz) = R^T g_a and lz (rates x ncon) = dF_a/dlambda on the joint rows, for each rate a
   of the joints' friction, F_a its force on the rate and -sum_a F_a g_a its natural generalised
   force. */
struct sens_friction;
void mb_joint_tangent_coupling(mb_joint_tangent* tg, const struct sens_friction* fr, double* gz,
                               double* lz);

/* tg->lam = the joint multipliers mult (ncon) on the imposed rows; tg->KH = the stiffness (with
   stiffness) plus sum lam_i Hessian(Phi_i). */
void mb_joint_tangent_multipliers(mb_joint_tangent* tg, const double* mult, int stiffness);

/* tg->w = M^n x + Phi_q^T lam (x: natural, may be NULL) - (with forces) Q^n. */
void mb_joint_tangent_residual(mb_joint_tangent* tg, const double* x, int forces);

/* A (nz x nz by columns) += d(R^T w)/dz at fixed w (tg->w): the tree's geometric term, and the
   Euler normalisations' Hessians 2 mult_e I. */
void mb_joint_tangent_add_geometric(mb_joint_tangent* tg, const double* mult, double* A);

/* The dynamic matrices at the state of tg (forces evaluated with their Jacobians) with
   multipliers mult (ncon): K = d(M zdd + Phi_z^T mult - Q)/dz, C = its derivative with respect
   to zd, M = R^T M^n R. */
void mb_joint_tangent_dynamics(mb_joint_tangent* tg, const double* mult);

/* A (nz x nz by columns) = K + cv C + ca M of mb_joint_tangent_dynamics at its state, one pass
   of the tree per column; tg->M = M. */
void mb_joint_tangent_newton(mb_joint_tangent* tg, const double* mult, double cv, double ca,
                             double* A);

/* y (nz) += s C x, C of mb_joint_tangent_dynamics, at the dynamic state. */
void mb_joint_tangent_damping_mul(mb_joint_tangent* tg, const double* x, double s, double* y);

/* y (nz) += s C^T x at the dynamic state of rates zd (mb_joint_tangent_newton's). */
void mb_joint_tangent_damping_mul_t(mb_joint_tangent* tg, const double* zd, const double* x,
                                    double s, double* y);

/* The state of a projection's derivatives at fixed y (joint rates: a projection's rate change)
   and mult: the multipliers, tg->v = R y, the residual tg->w = M^n R y + Phi_q^T lam with its
   wrench sums, and the motion tg->sy at the rates y. */
void mb_joint_tangent_projection_state(mb_joint_tangent* tg, const double* y, const double* mult);

/* out (nz) += s P x, P of mb_joint_tangent_projection, after mb_joint_tangent_projection_state
   with the same mult. */
void mb_joint_tangent_projection_mul(mb_joint_tangent* tg, const double* x, const double* mult,
                                     double s, double* out);

/* out (nz) += s P^T x, P of mb_joint_tangent_projection at the rates y, after
   mb_joint_tangent_projection_state with the same y and mult. */
void mb_joint_tangent_projection_mul_t(mb_joint_tangent* tg, const double* y, const double* x,
                                       const double* mult, double s, double* out);

/* P (nz x nz by columns) = d(M y + Phi_z^T mult)/dz at fixed y (joint rates: a projection's rate
   change) and mult, at the state's positions, after mb_joint_tangent_projection_state with the
   same mult; tg->v is used as scratch. */
void mb_joint_tangent_projection(mb_joint_tangent* tg, const double* mult, double* P);

#endif
