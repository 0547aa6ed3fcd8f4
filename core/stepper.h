/* What one ALI3-P step asks of a formulation: its coordinates and multipliers, and a table of
   functions for its constraints, its Newton residual and matrix, and its projections (the GSL
   step-method pattern). ali3p_step.c holds the step itself, the same for every formulation:
   Newmark prediction, the Newton iteration on positions with the multiplier update, the handling
   of singular positions and the projections (seed 001, section 2, eqs. 1-7). Internal. */
#ifndef MBOPT_STEPPER_H
#define MBOPT_STEPPER_H

#include "mbopt/model.h"
#include "mbopt/simulate.h"

typedef struct mb_stepper mb_stepper;

/* A factorised Newton matrix kept from one step for the next, in the formulation's workspace
   (ali3p_step.c says when a step keeps it). */
typedef struct mb_kept_matrix {
  int valid;            /* the next step may use it; 0 forgets it (a new run) */
  double step, penalty; /* the step and the penalty it was formed with */
  double rate;          /* its last measured contraction per iteration; < 0 before one is */
} mb_kept_matrix;

/* The formulation's functions; ctx is the stepper's. */
typedef struct mb_stepper_ops {
  /* Phi (into phi) and whatever the residual needs of the positions, at q and *t */
  void (*positions)(const mb_stepper* s);
  /* r (n) = beta h^2 (M qdd + Phi_q^T (lambda + alpha S Phi) - Q) at the current state, with
     alpha the step's penalty; with tangent, the Newton matrix too, factorised: returns 0, 1 when
     that matrix is singular */
  int (*residual)(const mb_stepper* s, double alpha, double* r, int tangent);
  /* r = T^-1 r with the last factorised Newton matrix */
  void (*solve)(const mb_stepper* s, double* r);
  /* the projections of qd and qdd at the positions the last iteration evaluated (eqs. 6, 7) */
  mb_status (*project)(const mb_stepper* s, mb_error* err);
  /* the name of constraint i, for messages */
  const char* (*label)(const mb_stepper* s, int i);
} mb_stepper_ops;

struct mb_stepper {
  const mb_stepper_ops* ops;
  void* ctx;
  const mb_settings* opt; /* step, Newmark coefficients, penalty, tolerances */
  int n, nc;              /* coordinates, constraints */
  double *q, *qd, *qdd;   /* (n) state */
  double *qd_star, *qdd_star, *qhat_v, *qhat_a; /* (n) */
  double *lambda, *phi;                         /* (nc) */
  const double* scale;                          /* (nc) the penalty scale of each constraint */
  double* r;                                    /* (n) scratch */
  double* t;
  mb_report* report;
  double penalty_remedy; /* the penalty that passes slow singular positions (0: none known) */
  const char* lock_hint; /* added to integration failures ("" for none) */
  /* where the formulation keeps its Newton matrix from step to step; NULL: every step forms its
     own (natural coordinates: the penalty term dominates the matrix, and the rotation of the
     bodies between steps turns its directions enough to stall the iteration) */
  mb_kept_matrix* kept;
};

/* The projection of the velocities or accelerations (eqs. 6, 7): x minimising
   (x - x*)^T P (x - x*) subject to Phi_q x + rhs = 0, by the iteration
     (P + pen Phi_q^T S Phi_q) x = P x* - Phi_q^T (mult + pen S rhs),  mult += pen S (Phi_q x + rhs)
   of a formulation's products and factorised leading matrix. */
typedef struct mb_projection {
  int n, nc;
  const double* scale; /* (nc) S */
  double penalty;      /* pen */
  int iterations;      /* at most; 1: non-iterative */
  double tol;          /* stops when |Phi_q x + rhs| <= tol (1 + |rhs| + |x|) */
  void* ctx;
  void (*phi_mul)(void* ctx, const double* x, double* y);   /* y += Phi_q x */
  void (*phi_mul_t)(void* ctx, const double* w, double* y); /* y -= Phi_q^T w */
  void (*solve)(void* ctx, double* b);                      /* b = (P + pen Phi_q^T S Phi_q)^-1 b */
  int relative; /* 1: tol relative to |rhs| + |x| alone, for solutions of any size (sensitivities)
                 */
} mb_projection;

/* x (n) from b0 = P x* (n) and rhs (nc), with the multipliers into mult (nc); work: n + nc.
   Returns the largest final violation |Phi_q x + rhs|. */
double mb_project_iterate(const mb_projection* p, const double* b0, double* x, const double* rhs,
                          double* mult, double* work);

/* The Newmark history of a step of settings opt (eqs. 2): hat_v = a[0] q + a[1] qd + a[2] qdd and
   hat_a = b[0] q + b[1] qd + b[2] qdd of the state before it; a[0] and b[0] are also the new
   positions' weights in the rates, qd = a[0] q - hat_v, qdd = b[0] q - hat_a. */
void mb_newmark_coefficients(const mb_settings* opt, double a[3], double b[3]);

/* hat_v, hat_a (n each) of q, qd, qdd (n each): the history of the integrator's positions, or of
   their sensitivities */
void mb_newmark_history(const mb_settings* opt, size_t n, const double* q, const double* qd,
                        const double* qdd, double* hat_v, double* hat_a);

/* The settings of a step's n sub-steps: h / n with the penalty raised n^2 times, which keeps
   every constraint's alpha beta h^2 scale as compiled. */
mb_settings mb_substep_settings(const mb_settings* opt, int n);

/* The state at a step's start, saved into x (3 n + nc) or restored from it: q, qd, qdd (n each)
   and lambda (nc). */
void mb_state_copy(double* q, double* qd, double* qdd, int n, double* lambda, int nc, double* x,
                   int save);

/* One full step: mb_ali3p_step to the next step of the grid, the time counted, not accumulated,
   so that t_end is hit exactly, and counted in s->report->steps; MB_INTERRUPTED once
   s->opt->interrupt is set. */
mb_status mb_ali3p_full_step(const mb_stepper* s, mb_error* err);

/* One step from *s->t to t_new; MB_NEWTON_FAILED (recoverable: a smaller step may pass) or
   another error with the message, which names the time, what did not converge and what helps. */
mb_status mb_ali3p_step(const mb_stepper* s, double t_new, mb_error* err);

/* A step retried on sub-steps when its Newton iteration fails: what the retry asks of a
   formulation. */
typedef struct mb_retry {
  void* ctx;
  const mb_settings* opt;                                 /* max_substeps */
  mb_report* report;                                      /* substepped_steps, finest_substeps */
  mb_status (*step)(void* ctx, mb_error* err);            /* the full step */
  mb_status (*substeps)(void* ctx, int n, mb_error* err); /* it again from its start, on n */
  void (*save)(void* ctx);                                /* keeps the state at the step's start */
  void (*restore)(void* ctx);                             /* goes back to it */
} mb_retry;

/* The step; when its Newton iteration fails, the step again from its start on 2, 4, ... up to
   opt->max_substeps sub-steps, the fewest that pass (*count unless NULL, 1 for the full step).
   When every count fails, the state goes back to the step's start and the full step's message
   says "(also on N sub-steps)". */
mb_status mb_step_retrying(const mb_retry* r, int* count, mb_error* err);

/* What a simulation asks of a formulation, beyond the natural model's outputs: its assembly,
   its steps, and the power of its drivers. After each, the natural model's state in d (q, qd,
   qdd, t) is current, so that sensors, functionals and the energy balance read it. */
typedef struct mb_run {
  void* ctx;
  mb_status (*assemble)(void* ctx, mb_error* err);
  mb_status (*step)(void* ctx, mb_error* err); /* one full step, on sub-steps where it retries */
  double (*driver_power)(void* ctx);           /* lambda^T Phi_t, W */
  /* the kinetic energy from the formulation's own mass matrix, J; NULL: the natural model's */
  double (*kinetic_energy)(void* ctx);
} mb_run;

/* The simulation loop of mb_simulate over a formulation's run: outputs of m, d at the output
   interval to obs (may be NULL), the energy balance and the functionals at every step. */
mb_status mb_run_simulation(const mb_model* m, mb_data* d, const mb_run* run, mb_observer obs,
                            void* user, mb_error* err);

#endif
