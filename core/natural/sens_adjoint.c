/* Discrete adjoint sensitivity of ALI3-P with projections: the transpose of the forward
   sensitivity's per-step linear maps (sens.h, sens_forward.c), swept backward in time.

   Forward, step n maps the sensitivities y_{n-1} = (q, qd, qdd)_rho of the last step through
     hat_v = c1 q + c2 qd + c3 qdd,  hat_a = d1 q + d2 qd + d3 qdd          (Newmark history)
     K1 [x; mu] = [r1 + M hat_a + C hat_v; g1]                               (eq. 23)
     qd* = cv x - hat_v,  qdd* = ca x - hat_a
     K2 [u; .] = [M qd* - H_sigma x + r2; -Phi'_q x + g2]                    (velocity projection)
     K3 [v; .] = [M qdd* - H_kappa x + r3; -Phi''_q x - 2 Phi'_q u + g3]     (acceleration
   projection) with K1 = [A Phi_q^T; Phi_q 0] (A the Newton matrix over beta h^2), K2 = K3 = [M
   Phi_q^T; Phi_q 0] and r, g the explicit parameter terms. The adjoint runs these backward with
   K^T, one column per functional: the cost does not grow with the number of parameters, whose
   explicit terms enter only as dot products at the steps where they act. The forward run stores
   each step's states (or, with checkpointing, every k-th state, and recomputes each segment before
   sweeping it). A step retried on sub-steps (ali3p.c) is stored and swept as its sub-steps, each
   a step of its sub-step model; the functionals take their share at the full steps only. */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "formulation.h"
#include "mbopt/sensitivity.h"
#include "mbopt/simulate.h"
#include "sens.h"
#include "stepper.h"

/* what one step stores: the dynamic state (q, qd*, qdd*, lambda) and the projected one
   (qd, qdd, sigma, kappa) */
enum { REC_Q, REC_QDS, REC_QDDS, REC_LAM, REC_QD, REC_QDD, REC_SIG, REC_KAP, REC_COUNT };

/* What the tape knows of a record: the end of a full step, or of one of its sub-steps when the
   step was retried on sub-steps (ali3p.c); each sub-step is a step of its own sub-step model. */
typedef struct point {
  double t;
  long step;             /* the full step it belongs to */
  const mb_model* model; /* the run's model, or the sub-step model the step was retried with */
  int last; /* it ends the full step: the functionals take their share of the step there */
} point;

/* A step retried on sub-steps, and on how many. */
typedef struct retry {
  long step;
  int substeps;
} retry;

typedef struct tape {
  int nq, nc, k; /* checkpoint interval k (>= number of steps: everything is stored) */
  long nstep;
  size_t rec;     /* doubles per step record */
  long cap, used; /* records the buffers hold, and those filled */
  double* steps;  /* (cap) records: the current segment, slot 0 its start */
  point* points;  /* (cap) */
  double* marks;  /* (nstep / k + 1) x mark_size checkpoints: q, qd, qdd, lambda and the
                     sensors' state (mb_sensor_state_copy: a controller's angle reads its branch) */
  size_t mark_size;
  /* the steps retried on sub-steps, ascending: a recomputed segment takes them the same way */
  retry* retried;
  long nretried, retried_cap;
  mb_model* sub; /* (max_substeps levels) the models of 2, 4, ... sub-steps */
  size_t bytes;
} tape;

static size_t rec_offset(const tape* tp, int field) {
  const size_t nq = tp->nq, nc = tp->nc;
  static const int is_con[REC_COUNT] = {0, 0, 0, 1, 0, 0, 1, 1};
  size_t off = 0;
  for (int f = 0; f < field; f++) off += is_con[f] ? nc : nq;
  return off;
}

static double* rec_field(const tape* tp, long slot, int field) {
  return tp->steps + (size_t)slot * tp->rec + rec_offset(tp, field);
}

/* Records the state of d in the next slot, growing the buffers when a segment holds sub-steps;
   -1 when out of memory. */
static int record_step(const mb_model* m, const mb_data* d, tape* tp, point at) {
  const size_t nq = m->nq, nc = m->ncon;
  if (tp->used == tp->cap) {
    const long cap = 2 * tp->cap;
    double* steps = realloc(tp->steps, (size_t)cap * tp->rec * sizeof(double) + 1);
    if (steps) tp->steps = steps;
    point* points = realloc(tp->points, (size_t)cap * sizeof(point));
    if (points) tp->points = points;
    if (!steps || !points) return -1;
    tp->bytes += (size_t)(cap - tp->cap) * (tp->rec * sizeof(double) + sizeof(point));
    tp->cap = cap;
  }
  const long slot = tp->used++;
  tp->points[slot] = at;
  memcpy(rec_field(tp, slot, REC_Q), d->q, nq * sizeof(double));
  memcpy(rec_field(tp, slot, REC_QDS), d->qd_star, nq * sizeof(double));
  memcpy(rec_field(tp, slot, REC_QDDS), d->qdd_star, nq * sizeof(double));
  memcpy(rec_field(tp, slot, REC_LAM), d->lambda, nc * sizeof(double));
  memcpy(rec_field(tp, slot, REC_QD), d->qd, nq * sizeof(double));
  memcpy(rec_field(tp, slot, REC_QDD), d->qdd, nq * sizeof(double));
  memcpy(rec_field(tp, slot, REC_SIG), d->sigma, nc * sizeof(double));
  memcpy(rec_field(tp, slot, REC_KAP), d->kappa, nc * sizeof(double));
  return 0;
}

static int compare_steps(const void* key, const void* entry) {
  const long x = *(const long*)key, y = ((const retry*)entry)->step;
  return (x > y) - (x < y);
}

/* The sub-steps step n took (1 for none). */
static int substeps_of(const tape* tp, long n) {
  const retry* hit =
      tp->nretried ? bsearch(&n, tp->retried, tp->nretried, sizeof(retry), compare_steps) : NULL;
  return hit ? hit->substeps : 1;
}

static int note_retried(tape* tp, long n, int substeps) {
  if (tp->nretried == tp->retried_cap) {
    const long cap = 2 * tp->retried_cap + 8;
    retry* grown = realloc(tp->retried, (size_t)cap * sizeof(retry));
    if (!grown) return -1;
    tp->retried = grown;
    tp->retried_cap = cap;
  }
  tp->retried[tp->nretried++] = (retry){n, substeps};
  return 0;
}

/* Records the step n just taken on `substeps` sub-steps from `start`: one record, or the step
   taken again from start with a record after each sub-step. */
typedef struct recorder {
  tape* tp;
  long step;
  const mb_model* model; /* the step's, kept by the tape (the hook's copy lives for one call) */
  int substeps, taken;
} recorder;

static mb_status record_substep(const mb_model* sub, mb_data* d, void* user, mb_error* err) {
  recorder* r = user;
  r->taken++;
  const point at = {d->t, r->step, r->model, r->taken == r->substeps};
  return record_step(sub, d, r->tp, at) == 0
             ? MB_OK
             : mb_error_set(err, MB_ERR_MEMORY, "adjoint sensitivity: out of memory");
}

static mb_status record_taken_step(const mb_model* m, mb_data* d, tape* tp,
                                   const mb_step_start* start, long n, int substeps,
                                   mb_error* err) {
  int level = 0; /* substeps = 2^level */
  while ((1 << level) < substeps) level++;
  recorder r = {tp, n, level ? &tp->sub[level - 1] : m, substeps, 0};
  if (substeps == 1) return record_substep(m, d, &r, err);
  return mb_substeps(m, d, start, substeps, record_substep, &r, err);
}

static void restore_step(const mb_model* m, mb_data* d, const tape* tp, long slot) {
  const size_t nq = m->nq, nc = m->ncon;
  memcpy(d->q, rec_field(tp, slot, REC_Q), nq * sizeof(double));
  memcpy(d->qd_star, rec_field(tp, slot, REC_QDS), nq * sizeof(double));
  memcpy(d->qdd_star, rec_field(tp, slot, REC_QDDS), nq * sizeof(double));
  memcpy(d->lambda, rec_field(tp, slot, REC_LAM), nc * sizeof(double));
  memcpy(d->qd, rec_field(tp, slot, REC_QD), nq * sizeof(double));
  memcpy(d->qdd, rec_field(tp, slot, REC_QDD), nq * sizeof(double));
  memcpy(d->sigma, rec_field(tp, slot, REC_SIG), nc * sizeof(double));
  memcpy(d->kappa, rec_field(tp, slot, REC_KAP), nc * sizeof(double));
}

static double* mark(const tape* tp, long index) {
  return tp->marks + (size_t)index * tp->mark_size;
}

static void save_mark(const mb_model* m, mb_data* d, tape* tp, long index) {
  double* x = mark(tp, index);
  memcpy(x, d->q, m->nq * sizeof(double));
  memcpy(x + m->nq, d->qd, m->nq * sizeof(double));
  memcpy(x + 2 * m->nq, d->qdd, m->nq * sizeof(double));
  memcpy(x + 3 * m->nq, d->lambda, m->ncon * sizeof(double));
  mb_sensor_state_copy(m, d, x + 3 * m->nq + m->ncon, 1);
}

static void load_mark(const mb_model* m, mb_data* d, const tape* tp, long index, long step) {
  double* x = mark(tp, index);
  memcpy(d->q, x, m->nq * sizeof(double));
  memcpy(d->qd, x + m->nq, m->nq * sizeof(double));
  memcpy(d->qdd, x + 2 * m->nq, m->nq * sizeof(double));
  memcpy(d->lambda, x + 3 * m->nq, m->ncon * sizeof(double));
  mb_sensor_state_copy(m, d, x + 3 * m->nq + m->ncon, 0);
  /* the assembled state's multipliers are whole (its outputs read them); later marks only
     restart the integration, which projects again */
  if (step == 0) {
    memset(d->sigma, 0, m->ncon * sizeof(double));
    memset(d->kappa, 0, m->ncon * sizeof(double));
  }
  d->report.steps = (int)step;
  d->t = step * m->opt.step;
}

static int tape_init(const mb_model* m, tape* tp, long nstep, int k) {
  tp->nq = m->nq, tp->nc = m->ncon, tp->nstep = nstep;
  tp->k = k > 0 && k < nstep ? k : (int)(nstep > 0 ? nstep : 1);
  tp->rec = 6 * (size_t)m->nq + 3 * (size_t)m->ncon;
  tp->cap = tp->k + 1;
  const size_t nmark = (size_t)(nstep / tp->k) + 1;
  tp->mark_size = 3 * (size_t)m->nq + m->ncon + mb_sensor_state_size(m);
  tp->steps = calloc((size_t)tp->cap * tp->rec + 1, sizeof(double));
  tp->points = calloc((size_t)tp->cap, sizeof(point));
  tp->marks = calloc(nmark * tp->mark_size + 1, sizeof(double));
  int levels = 0;
  while ((2 << levels) <= m->opt.max_substeps) levels++;
  tp->sub = calloc((size_t)levels + 1, sizeof(mb_model));
  for (int l = 0; tp->sub && l < levels; l++) tp->sub[l] = mb_substep_model(m, 2 << l);
  tp->bytes = (size_t)tp->cap * (tp->rec * sizeof(double) + sizeof(point)) +
              nmark * tp->mark_size * sizeof(double);
  return tp->steps && tp->points && tp->marks && tp->sub;
}

static void tape_free(tape* tp) {
  free(tp->steps);
  free(tp->points);
  free(tp->marks);
  free(tp->retried);
  free(tp->sub);
}

/* ---------------------------------------------------------------------------------------------
   the backward sweep */

typedef struct adjoint {
  int nf;
  double *abar, *bbar, *cbar; /* (nq x nf) adjoints of q_rho, qd_rho, qdd_rho */
  double *hv, *ha;            /* (nq x nf) adjoints of the Newmark history */
  double* zeta;               /* (nq x nf) */
  double* lbar;               /* (nc x nf) adjoints of lambda_rho of the step: the objective's
                                 partials in the multipliers (reaction outputs) */
  double* eta[3];             /* (nc x nf) multipliers of the tangent linear model (0) and the
                                 velocity (1) and acceleration (2) projections, kept from one step
                                 to the next as the starting point of their iterations */
  double* zero;               /* (nc x nf) */
  double *r, *g;              /* (nq), (nc) explicit terms of one parameter */
} adjoint;

/* local objective at the state of d: adjoints += weight partials, grad += weight explicit */
static void objective_terms(const mb_model* m, mb_data* d, sens_ws* ws, adjoint* a, int final,
                            double weight, double* grad) {
  const int nq = m->nq, nc = m->ncon;
  double *gq = ws->gq, *gqd = ws->gq + nq, *gqdd = ws->gq + 2 * nq;
  for (int f = 0; f < a->nf; f++) {
    mbd_functional_partials(m, d, f, final, gq, gqd, gqdd);
    for (int j = 0; j < nq; j++) {
      a->abar[(size_t)f * nq + j] += weight * gq[j];
      a->bbar[(size_t)f * nq + j] += weight * gqd[j];
      a->cbar[(size_t)f * nq + j] += weight * gqdd[j];
    }
    if (ws->reads_lambda && mbd_functional_lambda(m, d, f, final, ws->glam) > 0)
      for (int i = 0; i < nc; i++) a->lbar[(size_t)f * nc + i] += weight * ws->glam[i];
    const int nactive = sens_active_list(ws, d->t);
    for (int i = 0; i < nactive; i++) {
      const int k = ws->active[i];
      if (ws->func_dep[k])
        grad[(size_t)f * ws->p + k] += weight * mbd_functional_param(m, ws->dm[k], d, f, final);
    }
  }
}

/* grad[f][k] += zeta_f . r_k + eta_f . g_k for the explicit terms of `level` (0: dynamics) */
static void explicit_terms(const mb_model* m, mb_data* d, sens_ws* ws, adjoint* a, int level,
                           double* grad) {
  const int nq = m->nq, nc = m->ncon;
  const int nactive = sens_active_list(ws, d->t);
  for (int i = 0; i < nactive; i++) {
    const int k = ws->active[i];
    if (level == 0)
      sens_explicit_dynamics(m, d, ws, k, a->r, a->g);
    else
      sens_explicit_projection(m, d, ws, k, level, a->r, a->g);
    for (int f = 0; f < a->nf; f++)
      grad[(size_t)f * ws->p + k] += mbu_dot(nq, a->zeta + (size_t)f * nq, a->r) +
                                     mbu_dot(nc, a->eta[level] + (size_t)f * nc, a->g);
  }
}

/* The adjoint of one projection: K^T [zeta; eta] = [xbar; 0] (acceleration projection: [xbar;
   lbar], its multipliers kappa entering the reactions as lambda does); then the inputs' adjoints:
   abar -= H_mult zeta + (d^level Phi)_q^T eta, [level 2: bbar -= 2 (dPhi/dt)_q^T eta],
   star = M zeta (the adjoint of x*). */
static void projection_adjoint(const mb_model* m, const sens_point* pt, sens_ws* ws, adjoint* a,
                               int level, const double* xbar, double* star, double* grad) {
  const int nq = m->nq, nc = m->ncon, nf = a->nf;
  const mb_rows* rows = &m->structure->phiq;
  mb_data* d = pt->d;
  sens_kkt_solve(m, d, SENS_PROJECTION, pt->pen, nf, xbar, level == 2 ? a->lbar : a->zero, a->zeta,
                 a->eta[level], NULL);
  sens_hessian(m, d, ws, level == 1 ? d->sigma : d->kappa);
  const double* rates = level == 1 ? pt->phid_q : pt->phidd_q;
  for (int f = 0; f < nf; f++) {
    const double *z = a->zeta + (size_t)f * nq, *e = a->eta[level] + (size_t)f * nc;
    double *ab = a->abar + (size_t)f * nq, *bb = a->bbar + (size_t)f * nq;
    sens_hessian_mul(m, ws, z, -1, ab);
    mb_rows_mul_t(rows, rates, e, -1, ab);
    if (level == 2) mb_rows_mul_t(rows, pt->phid_q, e, -2, bb);
    memset(star + (size_t)f * nq, 0, sizeof(double) * nq);
    mb_mass_mul(m, z, 1, star + (size_t)f * nq);
  }
  explicit_terms(m, d, ws, a, level, grad);
}

/* The point of the record in `slot`: restored into pt->d, the projected state and the dynamic
   state factorised with the model of its step, the projected rates in d. Depends on the tape
   only. */
static mb_status prepare_step(const mb_model* m, const tape* tp, sens_point* pt, long slot,
                              mb_error* err) {
  const mb_model* sm = tp->points[slot].model;
  restore_step(sm, pt->d, tp, slot);
  pt->d->t = tp->points[slot].t;
  mb_status st = sens_projected_state(sm, pt, 0, err);
  if (st == MB_OK) st = sens_dynamic_state(sm, pt, pt->gram, err);
  sens_use_projected_rates(m, pt);
  return st;
}

/* One backward step through the record in `slot` (a step, or a sub-step), prepared in pt. On
   entry the adjoints hold the derivatives of the functionals with respect to (q, qd, qdd)_rho of
   that record without its own objective terms; on exit those of the record before, the same. */
static void backward_step(const mb_model* run, const tape* tp, sens_point* pt, sens_ws* ws,
                          adjoint* a, long slot, double* grad) {
  const point* at = &tp->points[slot];
  const mb_model* m = at->model;
  const int nq = m->nq, nf = a->nf;
  const size_t len = (size_t)nq * nf;
  double c[3], dd[3]; /* the Newmark history's coefficients */
  mb_newmark_coefficients(&m->opt, c, dd);
  const double c1 = c[0], c2 = c[1], c3 = c[2], d1 = dd[0], d2 = dd[1], d3 = dd[2];
  double *qd_star_bar = a->hv, *qdd_star_bar = a->ha;
  mb_data* d = pt->d;
  memset(a->lbar, 0, sizeof(double) * (size_t)m->ncon * nf);
  /* the angles on their branch at step n: unwrapped backward from the final ones, step by step */
  mb_sensors_angles(m, d);
  if (at->last) {
    const int final = at->step == tp->nstep;
    if (final) objective_terms(run, d, ws, a, 1, 1, grad);
    objective_terms(run, d, ws, a, 0, final ? 0.5 * run->opt.step : run->opt.step, grad);
  }

  /* projections, last first: the acceleration projection reads the projected velocities */
  projection_adjoint(m, pt, ws, a, 2, a->cbar, qdd_star_bar, grad);
  projection_adjoint(m, pt, ws, a, 1, a->bbar, qd_star_bar, grad);

  /* qd* = cv x - hat_v, qdd* = ca x - hat_a */
  for (size_t i = 0; i < len; i++) a->abar[i] += c1 * qd_star_bar[i] + d1 * qdd_star_bar[i];

  /* the tangent linear model at the dynamic state: K1^T [zeta; eta] = [abar; lbar] */
  sens_use_star_rates(m, pt);
  sens_kkt_solve(m, d, SENS_NEWTON_TRANSPOSED, m->opt.penalty, nf, a->abar, a->lbar, a->zeta,
                 a->eta[0], &pt->fric);
  explicit_terms(m, d, ws, a, 0, grad);

  /* hat_a and hat_v: -qdd*_bar + M zeta, -qd*_bar + C^T zeta; then the previous step's rates */
  for (int f = 0; f < nf; f++) {
    const double* z = a->zeta + (size_t)f * nq;
    double *hv = a->hv + (size_t)f * nq, *ha = a->ha + (size_t)f * nq;
    for (int j = 0; j < nq; j++) hv[j] = -hv[j], ha[j] = -ha[j];
    mb_mass_mul(m, z, 1, ha);
    mb_spmv_t(m->structure->sys, d->damp, z, 1, hv);
  }
  for (size_t i = 0; i < len; i++) {
    a->abar[i] = c1 * a->hv[i] + d1 * a->ha[i];
    a->bbar[i] = c2 * a->hv[i] + d2 * a->ha[i];
    a->cbar[i] = c3 * a->hv[i] + d3 * a->ha[i];
  }
}

/* ---------------------------------------------------------------------------------------------
   the sweep of one segment, with the next step prepared on a second thread

   A step's preparation (the constraints, forces and both factorisations at its recorded state)
   depends on the tape only, and costs about as much as its backward solves, which depend on the
   later steps. With two cores the preparation of step n - 1 runs beside the solves of step n, in
   a second point: two slots, each free or ready, handed over under a mutex. The results are
   those of the plain sweep, bit for bit. */

typedef struct sweep {
  const mb_model* m;
  const tape* tp;
  sens_point* pt[2];
  long last;           /* records last down to 1; record r uses point (last - r) % 2 */
  atomic_int ready[2]; /* slot prepared, not yet consumed */
  mb_status st[2];     /* the preparation's status */
  mb_error err[2];     /* and its error */
  atomic_int stop;     /* the consumer failed: the worker ends */
  pthread_mutex_t mu;
  pthread_cond_t cv;
} sweep;

/* Spins of a wait before it sleeps: the other thread usually hands a slot over within a few
   microseconds, less than putting a thread to sleep and waking it costs. */
#define SWEEP_SPIN 20000

/* Waits until slot k is ready (want 1) or free (want 0), or the sweep stops. */
static void wait_slot(sweep* sw, int k, int want) {
  for (int spin = 0; spin < SWEEP_SPIN; spin++)
    if (atomic_load_explicit(&sw->ready[k], memory_order_acquire) == want ||
        atomic_load_explicit(&sw->stop, memory_order_acquire))
      return;
  pthread_mutex_lock(&sw->mu);
  while (atomic_load(&sw->ready[k]) != want && !atomic_load(&sw->stop))
    pthread_cond_wait(&sw->cv, &sw->mu);
  pthread_mutex_unlock(&sw->mu);
}

/* Marks slot k ready (1) or free (0), or (k < 0) stops the sweep, and wakes the other thread. */
static void hand_over(sweep* sw, int k, int value) {
  pthread_mutex_lock(&sw->mu);
  atomic_store_explicit(k < 0 ? &sw->stop : &sw->ready[k], value, memory_order_release);
  pthread_cond_broadcast(&sw->cv);
  pthread_mutex_unlock(&sw->mu);
}

static void* worker(void* arg) {
  sweep* sw = arg;
  for (long r = sw->last; r > 0; r--) {
    const int k = (int)((sw->last - r) % 2);
    wait_slot(sw, k, 0);
    if (atomic_load(&sw->stop)) break;
    sw->st[k] = prepare_step(sw->m, sw->tp, sw->pt[k], r, &sw->err[k]);
    hand_over(sw, k, 1);
    if (sw->st[k] != MB_OK) break;
  }
  return NULL;
}

/* The backward sweep of the tape's records from the last down to slot 1; threaded when pt[1] is
   given. */
static mb_status sweep_segment(const mb_model* m, const tape* tp, sens_ws* ws, sens_point* pt0,
                               sens_point* pt1, adjoint* a, double* grad, mb_error* err) {
  sweep sw = {m,
              tp,
              {pt0, pt1 ? pt1 : pt0},
              tp->used - 1,
              {0, 0},
              {MB_OK, MB_OK},
              {{0}},
              0,
              PTHREAD_MUTEX_INITIALIZER,
              PTHREAD_COND_INITIALIZER};
  pthread_t thread;
  const int threaded = pt1 && sw.last > 1 && pthread_create(&thread, NULL, worker, &sw) == 0;
  mb_status st = MB_OK;
  const mb_data* last = NULL;
  for (long r = sw.last; r > 0 && st == MB_OK; r--) {
    const int k = threaded ? (int)((sw.last - r) % 2) : 0;
    if (threaded) {
      wait_slot(&sw, k, 1);
      if ((st = sw.st[k]) != MB_OK) {
        if (err) *err = sw.err[k];
        break;
      }
    } else if ((st = prepare_step(m, tp, sw.pt[k], r, err)) != MB_OK) {
      break;
    }
    /* the sensors unwrap their angles against the last step evaluated, in the other slot */
    mb_data* d = sw.pt[k]->d;
    if (last && last != d) mb_sensor_state_pass(m, last, d);
    backward_step(m, tp, sw.pt[k], ws, a, r, grad);
    last = d;
    if (threaded) hand_over(&sw, k, 0);
  }
  if (threaded) {
    hand_over(&sw, -1, 1);
    pthread_join(thread, NULL);
  }
  /* the caller's state continues from the last step swept */
  if (last && last != pt0->d) mb_sensor_state_pass(m, last, pt0->d);
  pthread_mutex_destroy(&sw.mu);
  pthread_cond_destroy(&sw.cv);
  return st;
}

/* By default the sweep takes a second thread from this many coordinates: below, a step costs
   too little for the hand-overs between the threads to pay. */
#define MB_THREADED_MIN_COORDINATES 64

/* The second point of a threaded sweep, when the settings ask for two threads or, by default,
   when it pays: the model's steps are costly and a second processor is online. Its d is NULL
   otherwise; returns -1 when out of memory. */
static int second_point(const mb_model* m, sens_point* pt) {
  memset(pt, 0, sizeof *pt);
  const int by_default =
      m->nq >= MB_THREADED_MIN_COORDINATES && sysconf(_SC_NPROCESSORS_ONLN) >= 2 ? 2 : 1;
  const int threads = m->opt.threads ? m->opt.threads : by_default;
  if (threads < 2) return 0;
  mb_data* d = mb_data_create_natural(m);
  if (!d || sens_point_init(m, pt, d) != 0) {
    mb_data_free_natural(d);
    return -1;
  }
  return 0;
}

mb_status mb_natural_adjoint(const mb_desc* desc, const mb_model* m, mb_data* d, int checkpoint,
                             double* psi, double* grad, size_t* memory, mb_error* err) {
  const int p = mb_desc_gradient_count(desc), nf = m->nfunctional, nq = m->nq, nc = m->ncon;
  const double h = m->opt.step;
  const long nstep = mb_step_count(m);
  tape tp = {0};
  adjoint a = {0};
  sens_point pt1 = {0};
  mb_step_start start = {0};
  mb_status st = MB_ERR_MEMORY;
  double* buf = NULL;
  sens_ws* ws = sens_create(desc, m, p, err);
  if (!ws) {
    st = err && err->status != MB_OK ? err->status : MB_ERR_MEMORY;
    goto done;
  }
  const size_t cq = (size_t)nq * (nf > 0 ? nf : 1), cc = (size_t)nc * (nf > 0 ? nf : 1);
  buf = calloc(6 * cq + 5 * cc + nq + nc + 8, sizeof(double));
  if (!tape_init(m, &tp, nstep, checkpoint) || !buf || mb_step_start_init(m, &start) != 0) {
    mb_error_set(err, st, "adjoint sensitivity: out of memory");
    goto done;
  }
  a.nf = nf;
  a.abar = buf, a.bbar = buf + cq, a.cbar = buf + 2 * cq, a.hv = buf + 3 * cq;
  a.ha = buf + 4 * cq, a.zeta = buf + 5 * cq;
  for (int level = 0; level < 3; level++) a.eta[level] = buf + 6 * cq + level * cc;
  a.zero = a.eta[2] + cc;
  a.lbar = a.zero + cc;
  a.r = a.lbar + cc, a.g = a.r + nq;
  memset(psi, 0, sizeof(double) * nf);
  memset(grad, 0, sizeof(double) * nf * p);
  memset(&d->report, 0, sizeof d->report);

  /* forward: the functionals, and the tape */
  const int full = tp.k >= nstep;
  if ((st = mb_assemble_with(m, d, NULL, NULL, err)) != MB_OK) goto done;
  memcpy(d->qd_star, d->qd, sizeof(double) * nq);
  memcpy(d->qdd_star, d->qdd, sizeof(double) * nq);
  const point assembled = {0, 0, m, 1};
  if (full && record_step(m, d, &tp, assembled) != 0) goto out_of_memory;
  mb_sensors_angles(m, d);
  save_mark(m, d, &tp, 0);
  mb_functionals_accumulate(m, d, 0, nstep, psi);
  for (long n = 1; n <= nstep; n++) {
    int substeps;
    if ((st = mb_step_or_substeps(m, d, &start, &substeps, err)) != MB_OK) goto done;
    if (substeps > 1 && note_retried(&tp, n, substeps) != 0) goto out_of_memory;
    if (full && (st = record_taken_step(m, d, &tp, &start, n, substeps, err)) != MB_OK) goto done;
    mb_sensors_angles(m, d);
    if (n % tp.k == 0) save_mark(m, d, &tp, n / tp.k);
    mb_functionals_accumulate(m, d, n, nstep, psi);
  }

  /* backward, segment by segment: [s0 + 1, s1] recomputed from the checkpoint at s0, its steps
     taken as the forward run took them (slot 0 stays the segment's start) */
  ws->pt.d = d;
  if (second_point(m, &pt1) != 0) goto out_of_memory;
  for (long s1 = nstep; s1 > 0;) {
    const long s0 = ((s1 - 1) / tp.k) * tp.k;
    if (!full) {
      load_mark(m, d, &tp, s0 / tp.k, s0);
      tp.used = 1;
      for (long n = s0 + 1; n <= s1; n++) {
        const int substeps = substeps_of(&tp, n);
        if (substeps > 1)
          mb_step_start_save(m, d, &start);
        else if ((st = mb_step(m, d, err)) != MB_OK)
          goto done;
        if ((st = record_taken_step(m, d, &tp, &start, n, substeps, err)) != MB_OK) goto done;
        mb_sensors_angles(m, d); /* as forward: the next step's controllers read their branch */
      }
    }
    st = sweep_segment(m, &tp, ws, &ws->pt, pt1.d ? &pt1 : NULL, &a, grad, err);
    if (st != MB_OK) goto done;
    s1 = s0;
  }

  /* the initial state: its objective terms, then its sensitivities through the assembly */
  if (full) {
    restore_step(m, d, &tp, 0);
  } else {
    load_mark(m, d, &tp, 0, 0);
    memcpy(d->qd_star, d->qd, sizeof(double) * nq);
    memcpy(d->qdd_star, d->qdd, sizeof(double) * nq);
  }
  d->t = 0;
  memset(a.lbar, 0, sizeof(double) * cc);
  objective_terms(m, d, ws, &a, 0, nstep > 0 ? 0.5 * h : 0, grad);
  if (nstep == 0) objective_terms(m, d, ws, &a, 1, 1, grad);
  if (p > 0 && (st = sens_initial(m, d, ws, err)) != MB_OK) goto done;
  for (int f = 0; f < nf; f++)
    for (int k = 0; k < p; k++) {
      const size_t col = (size_t)k * nq, adj = (size_t)f * nq;
      grad[(size_t)f * p + k] += mbu_dot(nq, a.abar + adj, ws->qr + col) +
                                 mbu_dot(nq, a.bbar + adj, ws->qdr + col) +
                                 mbu_dot(nq, a.cbar + adj, ws->qddr + col) +
                                 mbu_dot(nc, a.lbar + (size_t)f * nc, ws->lamr + (size_t)k * nc);
    }
  st = MB_OK;
  goto done;

out_of_memory:
  st = mb_error_set(err, MB_ERR_MEMORY, "adjoint sensitivity: out of memory");
done:
  mb_data_free_natural(pt1.d);
  sens_point_free(&pt1);
  mb_step_start_free(&start);
  if (memory) *memory = tp.bytes;
  tape_free(&tp);
  free(buf);
  sens_free(ws);
  return st;
}
