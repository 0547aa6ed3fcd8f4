/* The sensitivity workspace and the pieces forward and adjoint sensitivity share: tangent models
   with what each parameter reaches, the explicit parameter terms of the discrete equations, the
   factorisations of a step, KKT solves, and the initial-state sensitivities. Internal. */
#ifndef MBOPT_SENS_H
#define MBOPT_SENS_H

#include "internal.h"

typedef enum sens_factor {
  SENS_NEWTON,            /* the Newton matrix (d->newton) */
  SENS_NEWTON_TRANSPOSED, /* its transpose, for the adjoint */
  SENS_PROJECTION         /* M + pen Phi_q^T S Phi_q (d->projection) */
} sens_factor;

/* The joints' friction linearised at a state: its dependence on the multipliers (the
   multiplier block of the tangent linear model, sens_kkt_solve) and, for the initial state's
   accelerations, on the positions (sens_friction_stiffness_mul; the Newton matrix holds it). */
typedef struct sens_friction {
  int n;        /* rates of the joints' friction (mb_friction_rates) */
  int* joint;   /* (n) the joint of each */
  int* rate;    /* (n) its index among the joint's rates */
  double* F;    /* (n) the friction force or torque on the rate */
  double* g;    /* (n x nq) the rate's gradient: Q = -sum F g */
  double* dq;   /* (n x nq) dF/dq at fixed rates and multipliers */
  double* dlam; /* (n x nc) dF/dlambda */
} sens_friction;

/* One step's state prepared for the sensitivity solves: the state and its factorisations in d,
   with what the solves need beside them. The adjoint prepares the next step's point while it
   solves with this one (sens_adjoint.c). */
typedef struct sens_point {
  mb_data* d;
  double* phid_q;     /* (nnz of Phi_q) d(dPhi/dt)/dq at the projected state, Phi_q's pattern */
  double* phidd_q;    /* (nnz of Phi_q) d(d2Phi/dt2)/dq */
  double* gram;       /* (nnz) Phi_q^T S Phi_q of the projected state whose projection matrix was
                         factorised here, for the Newton matrix at the same positions */
  double* save;       /* (2 nq) the projected rates while the dynamic state is in d */
  double pen;         /* penalty of the factorised projection */
  sens_friction fric; /* at the dynamic state (sens_dynamic_state) */
  double* buffer;
} sens_point;

/* The buffers of a point for d (not owned); returns 0, or -1 when out of memory. */
int sens_point_init(const mb_model* m, sens_point* pt, mb_data* d);
void sens_point_free(sens_point* pt);

typedef struct sens_ws {
  const mb_desc* desc; /* the description the parameters come from, for messages */
  int p;               /* parameters */
  int ncol;            /* columns of the right-hand-side arrays: max(p, functionals, 1) */
  mb_model** dm;       /* (p) tangent models */
  mb_model* zero;      /* zero tangent shared by the parameters of function coefficients */
  double* window;      /* (p x 2) times outside of which a parameter has no explicit effect */
  int* order;          /* (p) parameters acting always, then the others by window start */
  int nalways;         /* how many act always */
  double widest;       /* the widest finite window */
  int* active;         /* (p) scratch of sens_active_list */
  /* which parts of the model each parameter reaches: the work for the others is skipped */
  int* con_dep;  /* (p x ncon) the constraints parameter k reaches: con_dep[k ncon + j], j <
                    ncon_dep[k] */
  int* ncon_dep; /* (p) */
  unsigned char* force_dep; /* (p x nforce) */
  unsigned char* mass_dep;  /* (p) */
  unsigned char* func_dep;  /* (p) the functionals depend on it explicitly */
  /* sensitivities of the state, one column per parameter */
  double* qr;   /* (nq x ncol) */
  double* qdr;  /* (nq x ncol) */
  double* qddr; /* (nq x ncol) */
  double* lamr; /* (nc x ncol) */
  /* scratch */
  double* rhs;      /* (nq x ncol) */
  double* g;        /* (nc x ncol) */
  double* s;        /* (2 x nc x ncol) multipliers of the velocity and acceleration projection
                       sensitivities, kept from one step to the next as the start of their
                       iterations */
  double* H;        /* (nhess_unique) Hessian products on the compact Hessian entries */
  double* scatter;  /* (nq) zero between uses */
  double* vec;      /* (nq) */
  double* gq;       /* (3 nq) partials of a functional */
  double* glam;     /* (nc) its partials with respect to the multipliers */
  int reads_lambda; /* some functional term reads multipliers (a reaction output) */
  sens_point pt;    /* the step being solved (its d: the caller's) */
} sens_ws;

/* Workspace with tangent models for the first p gradient parameters of desc (column k:
   mb_desc_gradient_param(desc, k); p may be 0). */
sens_ws* sens_create(const mb_desc* desc, const mb_model* m, int p, mb_error* err);
void sens_free(sens_ws* ws);

/* 1 when parameter k may have explicit effects at time t. */
int sens_active(const sens_ws* ws, int k, double t);

/* The parameters that may have explicit effects at time t, into ws->active; returns how many.
   Costs the number found plus a binary search, not the number of parameters. */
int sens_active_list(sens_ws* ws, double t);

/* Solves [A B^T; Phi_q 0] [x; s] = [r; g] (or the transposed system) for ncol right-hand sides
   by the augmented Lagrangian iteration on the factorisation `kind` (A: the Newton matrix divided
   by beta h^2, its transpose, or M). B = Phi_q, or with joint friction fric (may be NULL)
   Phi_q - Q_lambda^T, the friction force reading the multipliers (the Newton matrix holds the
   matching alpha B^T S Phi_q). s holds the starting multipliers and receives the final ones. */
double sens_kkt_solve(const mb_model* m, mb_data* d, sens_factor kind, double pen, int ncol,
                      const double* r, const double* g, double* x, double* s,
                      const sens_friction* fric);

/* The friction's linearisation pt->fric at the state of pt->d (positions, the rates the forces
   read, multipliers); sens_dynamic_state calls it. */
void sens_friction_linearise(const mb_model* m, sens_point* pt);

/* y (nq) += s K_f x for the friction's stiffness K_f = -dQ_f/dq (at fixed rates and multipliers)
   of pt->fric, or its transpose. */
void sens_friction_stiffness_mul(const mb_model* m, const sens_point* pt, const double* x,
                                 int transposed, double s, double* y);

/* The rates of the dynamic state, the Newmark rates qd*, qdd*, into pt->d, keeping the projected
   ones in pt->save; and back. */
void sens_use_star_rates(const mb_model* m, sens_point* pt);
void sens_use_projected_rates(const mb_model* m, sens_point* pt);

/* The dynamic state: puts the Newmark rates into d (sens_use_star_rates), evaluates the forces
   there and factorises the exact Newton matrix (the step's own factorisation is that of its first
   iteration, at the predicted positions). Phi and Phi_q must be those of d->q; gram their Gram
   product (pt->gram after sens_projected_state without reuse), or NULL to form it. */
mb_status sens_dynamic_state(const mb_model* m, sens_point* pt, const double* gram, mb_error* err);

/* The projected state (its rates in d): evaluates Phi, Phi_q and the rate Jacobians pt->phid_q
   and pt->phidd_q; factorises the projection matrix unless reuse is set (d holds it from the
   step's own projection, at the same positions). Its penalty goes to pt->pen. */
mb_status sens_projected_state(const mb_model* m, sens_point* pt, int reuse, mb_error* err);

/* Explicit parameter terms of the dynamic equations at the dynamic state, for parameter k:
   r = Q_rho - M_rho qdd* - (dPhi_q/drho)^T lambda and g = -Phi_rho. */
void sens_explicit_dynamics(const mb_model* m, mb_data* d, sens_ws* ws, int k, double* r,
                            double* g);

/* sens_explicit_dynamics with the constraint terms' multipliers mult, the joints' friction
   reading d->lambda still (the joint formulation's recovery of the tree's reactions, whose
   friction reads the cut joints' lambda while their reactions are lambda + kappa). */
void sens_explicit_dynamics_with(const mb_model* m, mb_data* d, sens_ws* ws, int k,
                                 const double* mult, double* r, double* g);

/* Explicit parameter terms of the velocity (level 1) or acceleration (level 2) projection at the
   projected state: r = -M_rho (x - x*) - (dPhi_q/drho)^T mult and g = -(d^level Phi/dt)_rho. */
void sens_explicit_projection(const mb_model* m, mb_data* d, sens_ws* ws, int k, int level,
                              double* r, double* g);

/* ws->H = sum_i w_i Hessian(Phi_i), on the compact Hessian entries (mb_structure.hess_rc). */
void sens_hessian(const mb_model* m, const mb_data* d, sens_ws* ws, const double* w);

/* y += s ws->H x (as mb_spmv would with ws->H on the system pattern). */
void sens_hessian_mul(const mb_model* m, const sens_ws* ws, const double* x, double s, double* y);

/* psi += weight (the integrand g, or with final the final value w), grad (functionals x p, may be
   NULL) += weight dg/drho at the state of d, from the state sensitivities ws->qr, qdr, qddr
   (and ws->lamr with the acceleration projection's, for outputs reading multipliers). */
void sens_accumulate(const mb_model* m, mb_data* d, sens_ws* ws, int final, double weight,
                     double* psi, double* grad);

/* Sensitivities of the assembled initial state (positions, velocities, accelerations and
   multipliers) into ws->qr, qdr, qddr, lamr, one column per parameter. */
mb_status sens_initial(const mb_model* m, mb_data* d, sens_ws* ws, mb_error* err);

#endif
