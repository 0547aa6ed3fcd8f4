/* What forward and adjoint sensitivity share (see sens.h). The discrete solution of every step
   satisfies M qdd* + Phi_q^T lambda = Q, Phi = 0 with the Newmark rates qd*, qdd* of q (seed 001,
   eqs. 2, 3), then the mass-orthogonal projections M (qd - qd*) + Phi_q^T sigma = 0,
   dPhi/dt = 0 and M (qdd - qdd*) + Phi_q^T kappa = 0, d2Phi/dt2 = 0 (eqs. 6, 7, converged).
   Their derivatives are three KKT systems per step; this file holds their matrices and the
   explicit parameter terms of their right-hand sides. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mbopt/sensitivity.h"
#include "sens.h"

/* ---------------------------------------------------------------------------------------------
   what a parameter reaches */

static int nonzero(size_t n, const double* x) {
  for (size_t i = 0; i < n; i++)
    if (x[i] != 0) return 1;
  return 0;
}

static int lvec_depends(const mb_model* dm, int lv) {
  if (lv < 0) return 0;
  if (nonzero(3, dm->lvec_const + 3 * lv)) return 1;
  return nonzero(9 * (size_t)dm->lvec_termnum[lv], dm->term_W + 9 * dm->lvec_termadr[lv]);
}

static int func_depends(const mb_model* m, const mb_model* dm, int fn) {
  if (fn < 0) return 0;
  int n = m->func_type[fn] == MB_FUNC_TABLE ? 3 * m->func_num[fn] : m->func_num[fn];
  return nonzero(n, dm->func_data + m->func_adr[fn]);
}

/* The constraints, force elements and mass matrix that parameter k reaches. */
static void dependence(const mb_model* m, sens_ws* ws, int k) {
  const mb_model* dm = ws->dm[k];
  ws->ncon_dep[k] = 0;
  for (int i = 0; i < m->ncon; i++) {
    int dep = dm->con_value[i] != 0 || func_depends(m, dm, m->con_func[i]);
    for (int j = 0; j < 4; j++) dep |= lvec_depends(dm, m->con_lvec[4 * i + j]);
    if (dep) ws->con_dep[(size_t)k * m->ncon + ws->ncon_dep[k]++] = i;
  }
  for (int i = 0; i < m->nforce; i++) {
    int dep =
        dm->force_k[i] != 0 || dm->force_c[i] != 0 || dm->force_l0[i] != 0 || dm->force_f0[i] != 0;
    for (int j = 0; j < 3; j++) dep |= dm->force_slip[3 * i + j] != 0;
    for (int j = 0; j < 2; j++) dep |= lvec_depends(dm, m->force_lvec[2 * i + j]);
    for (int j = 0; j < 3; j++) dep |= func_depends(m, dm, m->force_func[3 * i + j]);
    if (m->force_type[i] == MB_FORCE_TORQUE || mb_tyre_has_slip(m, i))
      for (int j = 0; j < m->dim; j++)
        dep |= lvec_depends(dm, m->body_axes[3 * m->force_body[i] + j]);
    ws->force_dep[(size_t)k * m->nforce + i] = (unsigned char)dep;
  }
  ws->mass_dep[k] = (unsigned char)nonzero(9 * (size_t)m->nmass, dm->mass);
}

/* A state of d with every coordinate, rate, acceleration and output away from zero and from any
   special value, for telling structural zeros: a derivative that vanishes there is built from
   the zero entries of a tangent model and vanishes everywhere. */
static void probe_state(const mb_model* m, mb_data* d) {
  for (int i = 0; i < m->nq; i++)
    d->q[i] = sin(1.0 + i), d->qd[i] = cos(2.0 + i), d->qdd[i] = sin(3.0 + 2 * i);
  for (int i = 0; i < m->nout; i++) d->out[i] = cos(0.5 + i);
  d->t = 0.377;
}

/* Whether the functionals depend on parameter k explicitly: when it acts on the model (window
   computed: it moves only time functions) and some functional's explicit derivative does not
   vanish at the probe state, or when it moves the reference of a functional term. */
static void functional_dependence(const mb_model* m, sens_ws* ws, mb_data* probe, int k) {
  int dep = 0;
  if (isinf(ws->window[2 * k]) && isinf(ws->window[2 * k + 1]))
    for (int f = 0; f < m->nfunctional && !dep; f++)
      dep = mbd_functional_param(m, ws->dm[k], probe, f, 0) != 0 ||
            mbd_functional_param(m, ws->dm[k], probe, f, 1) != 0;
  for (int i = 0; i < m->nfterm && !dep; i++) dep = func_depends(m, ws->dm[k], m->fterm_ref[i]);
  ws->func_dep[k] = (unsigned char)dep;
}

/* The times at which parameter k acts explicitly: always, unless it only moves control values of
   B-splines, which act on four segments each. */
static void activity_window(const mb_model* m, sens_ws* ws, int k) {
  const mb_model* dm = ws->dm[k];
  double* w = ws->window + 2 * k;
  w[0] = -INFINITY, w[1] = INFINITY;
  const size_t nq = m->nq;
  if (nonzero(3 * (size_t)m->nlvec, dm->lvec_const) || nonzero(9 * (size_t)m->nterm, dm->term_W) ||
      nonzero(m->ncon, dm->con_value) || nonzero(m->npres, dm->pres_value) ||
      nonzero(m->npres, dm->pres_rate) || nonzero(m->nforce, dm->force_k) ||
      nonzero(m->nforce, dm->force_c) || nonzero(m->nforce, dm->force_l0) ||
      nonzero(m->nforce, dm->force_f0) || nonzero(3 * (size_t)m->nforce, dm->force_slip) ||
      nonzero(9 * (size_t)m->nmass, dm->mass) || nonzero(nq, dm->gravity_force) ||
      nonzero(m->nbody, dm->body_mass) || nonzero(3 * (size_t)m->nelem, dm->elem_q0) ||
      nonzero(m->nfterm, dm->fterm_weight) || nonzero(m->nfterm, dm->fterm_eps) ||
      nonzero(3, dm->gravity) || nonzero(4 * (size_t)m->nctrl, dm->ctrl_gain) ||
      nonzero(8 * (size_t)m->njoint, dm->joint_fric))
    return;
  double lo = INFINITY, hi = -INFINITY;
  for (int f = 0; f < m->nfunc; f++) {
    if (!func_depends(m, dm, f)) continue;
    if (m->func_type[f] != MB_FUNC_BSPLINE) return;
    const int n = m->func_num[f];
    const double* c = m->func_data + m->func_adr[f];
    const double* dc = dm->func_data + m->func_adr[f];
    for (int j = 0; j < n; j++) {
      if (dc[j] == 0) continue;
      double a, b;
      mbu_bspline_support(n, c[n], c[n + 1], j, &a, &b);
      lo = fmin(lo, a), hi = fmax(hi, b);
    }
  }
  w[0] = lo, w[1] = hi;
}

int sens_active(const sens_ws* ws, int k, double t) {
  const double* w = ws->window + 2 * k;
  const double slack = 1e-12 * (1 + fabs(t));
  return t >= w[0] - slack && t <= w[1] + slack;
}

static const sens_ws* sort_ws; /* qsort has no context argument; set only during the sort */

static int by_window_start(const void* a, const void* b) {
  const double sa = sort_ws->window[2 * *(const int*)a], sb = sort_ws->window[2 * *(const int*)b];
  return (sa > sb) - (sa < sb);
}

/* ws->order: the parameters that always act, then the windowed ones by start */
static void order_by_window(sens_ws* ws) {
  int n = 0;
  for (int k = 0; k < ws->p; k++)
    if (isinf(ws->window[2 * k]) && isinf(ws->window[2 * k + 1])) ws->order[n++] = k;
  ws->nalways = n;
  ws->widest = 0;
  for (int k = 0; k < ws->p; k++)
    if (!(isinf(ws->window[2 * k]) && isinf(ws->window[2 * k + 1]))) {
      ws->order[n++] = k;
      const double lo = isinf(ws->window[2 * k]) ? 0 : ws->window[2 * k];
      const double hi = isinf(ws->window[2 * k + 1]) ? lo : ws->window[2 * k + 1];
      ws->widest = fmax(ws->widest, hi - lo);
    }
  sort_ws = ws;
  qsort(ws->order + ws->nalways, (size_t)(ws->p - ws->nalways), sizeof(int), by_window_start);
  sort_ws = NULL;
}

int sens_active_list(sens_ws* ws, double t) {
  int n = 0;
  for (int i = 0; i < ws->nalways; i++) ws->active[n++] = ws->order[i];
  /* windowed ones start by t; those opening before t - widest have closed, unless they open at
     -infinity (held B-spline ends), which sort first */
  int lo = ws->nalways, hi = ws->p;
  const double first = t - ws->widest - 1e-9 * (1 + fabs(t));
  while (lo < hi) {
    int mid = (lo + hi) / 2;
    double start = ws->window[2 * ws->order[mid]];
    if (!isinf(start) && start < first)
      lo = mid + 1;
    else
      hi = mid;
  }
  for (int i = ws->nalways; i < lo && isinf(ws->window[2 * ws->order[i]]); i++)
    if (sens_active(ws, ws->order[i], t)) ws->active[n++] = ws->order[i];
  for (int i = lo; i < ws->p; i++) {
    const int k = ws->order[i];
    if (ws->window[2 * k] > t + 1e-9 * (1 + fabs(t))) break;
    if (sens_active(ws, k, t)) ws->active[n++] = k;
  }
  return n;
}

int sens_point_init(const mb_model* m, sens_point* pt, mb_data* d) {
  const size_t nq = m->nq, nc = m->ncon, nnz = m->structure->sys->nnz;
  int rates;
  mb_friction_count(m, &rates);
  const size_t nphiq = m->structure->phiq.nnz, nf = (size_t)rates;
  memset(pt, 0, sizeof *pt);
  pt->d = d;
  pt->buffer = calloc(2 * nphiq + nnz + 2 * nq + nf * (1 + 2 * nq + nc) + 1, sizeof(double));
  pt->fric.joint = calloc(2 * nf + 1, sizeof(int));
  if (!pt->buffer || !pt->fric.joint) return -1;
  pt->fric.rate = pt->fric.joint + nf;
  pt->phid_q = pt->buffer, pt->phidd_q = pt->phid_q + nphiq;
  pt->gram = pt->phidd_q + nphiq, pt->save = pt->gram + nnz;
  sens_friction* f = &pt->fric;
  f->n = (int)nf;
  f->F = pt->save + 2 * nq, f->g = f->F + nf, f->dq = f->g + nf * nq, f->dlam = f->dq + nf * nq;
  for (int j = 0, k = 0; j < m->njoint; j++)
    for (int a = 0; m->joint_friction[j] && a < mb_friction_rates(m, j); a++, k++)
      f->joint[k] = j, f->rate[k] = a;
  return 0;
}

void sens_point_free(sens_point* pt) {
  free(pt->buffer);
  free(pt->fric.joint);
  pt->buffer = NULL;
  pt->fric.joint = NULL;
}

void sens_friction_linearise(const mb_model* m, sens_point* pt) {
  const size_t nq = m->nq, nc = m->ncon;
  sens_friction* f = &pt->fric;
  const mb_data* d = pt->d;
  mb_friction fr;
  for (int k = 0; k < f->n; k++) {
    const int j = f->joint[k], a = f->rate[k];
    double *g = f->g + k * nq, *dq = f->dq + k * nq, *dlam = f->dlam + k * nc;
    if (a == 0) mb_friction_eval(m, d, j, d->lambda, &fr);
    f->F[k] = fr.force[a];
    memset(g, 0, sizeof(double) * nq);
    memset(dq, 0, sizeof(double) * nq);
    memset(dlam, 0, sizeof(double) * nc);
    mbd_friction_rate_partials(m, d, j, a, 1, NULL, g);
    mbd_friction_partials(m, d, j, a, d->lambda, &fr, 1, dq, NULL, dlam, NULL, NULL);
  }
}

void sens_friction_stiffness_mul(const mb_model* m, const sens_point* pt, const double* x,
                                 int transposed, double s, double* y) {
  const size_t nq = m->nq;
  const sens_friction* f = &pt->fric;
  /* K_f = sum_a F_a dg_a/dq + g_a dF_a/dq^T */
  for (int k = 0; k < f->n; k++) {
    const double *g = f->g + k * nq, *dq = f->dq + k * nq;
    mbd_friction_rate_hessian_mul(m, pt->d, f->joint[k], f->rate[k], x, transposed, s * f->F[k], y);
    const double c = s * mbu_dot((int)nq, transposed ? g : dq, x);
    const double* v = transposed ? dq : g;
    for (size_t i = 0; i < nq; i++) y[i] += c * v[i];
  }
}

void sens_free(sens_ws* ws) {
  if (!ws) return;
  sens_point_free(&ws->pt);
  if (ws->dm)
    for (int k = 0; k < ws->p; k++) mb_model_free_natural(ws->dm[k]);
  mb_model_free_natural(ws->zero);
  free(ws->dm);
  free(ws->qr);
  free(ws->con_dep);
  free(ws->force_dep);
  free(ws->window);
  free(ws->order);
  free(ws);
}

sens_ws* sens_create(const mb_desc* desc, const mb_model* m, int p, mb_error* err) {
  sens_ws* ws = calloc(1, sizeof *ws);
  if (!ws) return NULL;
  const size_t nq = m->nq, nc = m->ncon, np = p > 0 ? p : 1;
  int ncol = p > m->nfunctional ? p : m->nfunctional;
  ws->desc = desc, ws->p = p, ws->ncol = ncol > 0 ? ncol : 1;
  const size_t nk = ws->ncol;
  const size_t nhess = (size_t)m->structure->nhess_unique;
  double** fields[] = {&ws->qr, &ws->qdr, &ws->qddr, &ws->lamr, &ws->rhs,  &ws->g,
                       &ws->s,  &ws->H,   &ws->vec,  &ws->gq,   &ws->glam, &ws->scatter};
  const size_t counts[] = {nq * nk,     nq * nk, nq * nk, nc * nk, nq * nk, nc * nk,
                           2 * nc * nk, nhess,   nq,      3 * nq,  nc,      nq};
  size_t total = 8;
  for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) total += counts[i];
  double* b = calloc(total, sizeof(double));
  ws->dm = calloc(np, sizeof(mb_model*));
  ws->con_dep = calloc(np * (nc + 1) + 1, sizeof(int));
  ws->force_dep = calloc(np * (m->nforce + 2) + 1, 1);
  ws->window = calloc(2 * np, sizeof(double));
  ws->order = calloc(2 * np, sizeof(int));
  if (!b || !ws->dm || !ws->con_dep || !ws->force_dep || !ws->window || !ws->order ||
      sens_point_init(m, &ws->pt, NULL)) {
    free(b);
    sens_free(ws);
    mb_error_set(err, MB_ERR_MEMORY, "sensitivity: out of memory");
    return NULL;
  }
  for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) *fields[i] = b, b += counts[i];
  ws->ncon_dep = ws->con_dep + np * nc;
  ws->mass_dep = ws->force_dep + np * m->nforce;
  ws->func_dep = ws->mass_dep + np;
  for (int j = 0; j < m->nfterm; j++)
    ws->reads_lambda |= mb_output_reads_multipliers(m, m->fterm_column[j]);
  ws->zero = p > 0 ? mb_model_zero_clone(m) : NULL;
  mb_data* probe = p > 0 ? mb_data_create_natural(m) : NULL;
  if (p > 0 && !probe) {
    sens_free(ws);
    mb_error_set(err, MB_ERR_MEMORY, "sensitivity: out of memory");
    return NULL;
  }
  if (probe) probe_state(m, probe);
  for (int k = 0; k < p; k++) {
    const int param = mb_desc_gradient_param(desc, k);
    ws->dm[k] = ws->zero ? mbd_function_tangent(desc, m, ws->zero, param) : NULL;
    if (!ws->dm[k] && mbd_model_tangent(desc, m, param, &ws->dm[k], err) != MB_OK) {
      mb_data_free_natural(probe);
      sens_free(ws);
      return NULL;
    }
    dependence(m, ws, k);
    activity_window(m, ws, k);
    functional_dependence(m, ws, probe, k);
  }
  mb_data_free_natural(probe);
  ws->active = ws->order + np;
  order_by_window(ws);
  return ws;
}

/* ---------------------------------------------------------------------------------------------
   KKT solves by the augmented Lagrangian iteration */

double sens_kkt_solve(const mb_model* m, mb_data* d, sens_factor kind, double pen, int ncol,
                      const double* r, const double* g, double* x, double* s,
                      const sens_friction* fric) {
  const int nf = fric ? fric->n : 0;
  const int nq = m->nq, nc = m->ncon;
  const mb_rows* rows = &m->structure->phiq;
  const double bh2 = m->opt.beta * m->opt.step * m->opt.step;
  mb_factor* f = kind == SENS_PROJECTION ? d->projection : d->newton;
  double worst = 0;
  for (int it = 0; it < 100; it++) {
    /* x = (A + pen Phi_q^T S Phi_q)^-1 (r - Phi_q^T (s - pen S g)), the Newton matrix being
       beta h^2 (A + alpha Phi_q^T S Phi_q) */
    for (int k = 0; k < ncol; k++) {
      double* xk = x + (size_t)k * nq;
      const double *sk = s + (size_t)k * nc, *gk = g + (size_t)k * nc;
      memcpy(xk, r + (size_t)k * nq, sizeof(double) * nq);
      for (int i = 0; i < nc; i++) {
        const double w = sk[i] - pen * m->con_scale[i] * gk[i];
        if (w != 0) mb_rows_axpy(rows, i, d->phiq, -w, xk);
      }
      /* with friction the multipliers' block is B^T = Phi_q^T - Q_lambda, Q_lambda w =
         -g (dF/dlambda . w) (the transposed system keeps Phi_q^T here, B in the update) */
      for (int f = 0; f < nf && kind != SENS_NEWTON_TRANSPOSED; f++) {
        const double *gf = fric->g + (size_t)f * nq, *lf = fric->dlam + (size_t)f * nc;
        double c = 0;
        for (int i = 0; i < nc; i++) c += lf[i] * (sk[i] - pen * m->con_scale[i] * gk[i]);
        for (int j = 0; j < nq; j++) xk[j] -= c * gf[j];
      }
      if (kind != SENS_PROJECTION)
        for (int j = 0; j < nq; j++) xk[j] *= bh2;
    }
    mb_factor_solve(f, kind == SENS_NEWTON_TRANSPOSED, ncol, x);
    /* s += pen S (Phi_q x - g) */
    /* relative to the largest column, with no absolute floor: models whose sensitivities are
       all small converge as far as those with large ones */
    worst = 0;
    double scale = 0;
    for (int k = 0; k < ncol; k++) {
      const double* xk = x + (size_t)k * nq;
      double* sk = s + (size_t)k * nc;
      const double* gk = g + (size_t)k * nc;
      /* the transposed system's constraint rows are B = Phi_q + dF/dlambda g^T */
      double* gx = d->fric_work; /* (nf <= nq) the products g . x */
      for (int f = 0; f < nf && kind == SENS_NEWTON_TRANSPOSED; f++)
        gx[f] = mbu_dot(nq, fric->g + (size_t)f * nq, xk);
      for (int i = 0; i < nc; i++) {
        double v = mb_rows_dot(rows, i, d->phiq, xk, -gk[i]);
        for (int f = 0; f < nf && kind == SENS_NEWTON_TRANSPOSED; f++)
          v += fric->dlam[(size_t)f * nc + i] * gx[f];
        sk[i] += pen * m->con_scale[i] * v;
        if (fabs(v) > worst) worst = fabs(v); /* as fmax, without its call */
      }
      const double norm = mbu_norm_inf(nq, xk);
      if (norm > scale) scale = norm;
    }
    if (worst <= 1e-13 * scale || worst < 1e-300) break;
  }
  return worst;
}

/* ---------------------------------------------------------------------------------------------
   the two states of a step and their factorisations */

void sens_use_star_rates(const mb_model* m, sens_point* pt) {
  const size_t len = sizeof(double) * m->nq;
  mb_data* d = pt->d;
  memcpy(pt->save, d->qd, len);
  memcpy(pt->save + m->nq, d->qdd, len);
  memcpy(d->qd, d->qd_star, len);
  memcpy(d->qdd, d->qdd_star, len);
}

void sens_use_projected_rates(const mb_model* m, sens_point* pt) {
  const size_t len = sizeof(double) * m->nq;
  memcpy(pt->d->qd, pt->save, len);
  memcpy(pt->d->qdd, pt->save + m->nq, len);
}

/* the Gram product of the Phi_q in d into pt->gram */
static void form_gram(const mb_model* m, sens_point* pt) {
  memset(pt->gram, 0, sizeof(double) * m->structure->sys->nnz);
  mb_constraints_add_gram(m, pt->d->phiq, NULL, 1, pt->gram);
}

mb_status sens_dynamic_state(const mb_model* m, sens_point* pt, const double* gram, mb_error* err) {
  mb_data* d = pt->d;
  sens_use_star_rates(m, pt);
  if (!gram) {
    /* formed here as sens_projected_state forms it, so that forward and adjoint sensitivities
       solve with the same matrices to the last bit */
    form_gram(m, pt);
    gram = pt->gram;
  }
  mb_newton_matrix(m, d, m->opt.penalty, d->lambda, 1, gram, d->tangent, d->damp);
  if (mb_factor_compute(d->newton, d->tangent) != 0)
    return mb_error_set(err, MB_ERR_SINGULAR, "t = %g: singular tangent linear model", d->t);
  sens_friction_linearise(m, pt);
  return MB_OK;
}

mb_status sens_projected_state(const mb_model* m, sens_point* pt, int reuse, mb_error* err) {
  mb_data* d = pt->d;
  mbd_constraints_rows(m, d, pt->phid_q, pt->phidd_q);
  if (reuse && d->projection->valid) {
    pt->pen = d->proj_penalty;
    return MB_OK;
  }
  form_gram(m, pt);
  if (mb_factor_projection(m, d, pt->gram, err) != MB_OK)
    return mb_error_set(err, MB_ERR_SINGULAR, "t = %g: singular projection matrix", d->t);
  pt->pen = d->proj_penalty;
  return MB_OK;
}

void sens_hessian(const mb_model* m, const mb_data* d, sens_ws* ws, const double* w) {
  const mb_structure* st = m->structure;
  memset(ws->H, 0, sizeof(double) * st->nhess_unique);
  for (int i = 0; i < m->ncon; i++) mbd_expr_hessian(m, d, i, w[i], ws->H, st->hess_slot);
}

void sens_hessian_mul(const mb_model* m, const sens_ws* ws, const double* x, double s, double* y) {
  const mb_structure* st = m->structure;
  const int* rc = st->hess_rc;
  for (int u = 0; u < st->nhess_unique; u++) {
    const double xj = s * x[rc[2 * u + 1]];
    if (xj != 0) y[rc[2 * u]] += ws->H[u] * xj;
  }
}

/* g = -(the level's derivative of Phi) with respect to rho_k, and, with r, r -= (dPhi_q/drho_k)^T
   w: the explicit terms of the constraints parameter k reaches */
static void constraint_terms(const mb_model* m, const mb_data* d, sens_ws* ws, int k, int level,
                             const double* w, double* r, double* g) {
  const int* dep = ws->con_dep + (size_t)k * m->ncon;
  memset(g, 0, sizeof(double) * m->ncon);
  if (ws->ncon_dep[k] == 0) return;
  if (r) memset(ws->vec, 0, sizeof(double) * m->nq);
  for (int j = 0; j < ws->ncon_dep[k]; j++) {
    double par[3];
    const int i = dep[j];
    if (r) mbd_expr_rows_param(m, ws->dm[k], d, i, w[i], ws->vec);
    mbd_expr_param(m, ws->dm[k], d, i, par);
    g[i] = -par[level];
  }
  if (r)
    for (int j = 0; j < m->nq; j++) r[j] -= ws->vec[j];
}

void sens_explicit_dynamics(const mb_model* m, mb_data* d, sens_ws* ws, int k, double* r,
                            double* g) {
  sens_explicit_dynamics_with(m, d, ws, k, d->lambda, r, g);
}

void sens_explicit_dynamics_with(const mb_model* m, mb_data* d, sens_ws* ws, int k,
                                 const double* mult, double* r, double* g) {
  mbd_forces_param(m, ws->dm[k], d, ws->force_dep + (size_t)k * m->nforce, r);
  /* friction: Q = -sum_a F_a g_a, with F_a and g_a through the parameter at fixed state and
     multipliers */
  for (int j = 0; j < m->njoint; j++) {
    if (!m->joint_friction[j]) continue;
    mb_friction f;
    mb_friction_eval(m, d, j, d->lambda, &f);
    for (int a = 0; a < f.n; a++) {
      double dF = 0;
      mbd_friction_partials(m, d, j, a, d->lambda, &f, 1, NULL, NULL, NULL, ws->dm[k], &dF);
      mbd_friction_rate_partials(m, d, j, a, -dF, NULL, r);
      mbd_friction_gradient_param(m, ws->dm[k], d, j, a, -f.force[a], r);
    }
  }
  if (ws->mass_dep[k]) mb_mass_mul(ws->dm[k], d->qdd, -1, r);
  constraint_terms(m, d, ws, k, 0, mult, r, g);
}

void sens_explicit_projection(const mb_model* m, mb_data* d, sens_ws* ws, int k, int level,
                              double* r, double* g) {
  const int nq = m->nq;
  const double* star = level == 1 ? d->qd_star : d->qdd_star;
  const double* x = level == 1 ? d->qd : d->qdd;
  const double* mult = level == 1 ? d->sigma : d->kappa;
  memset(r, 0, sizeof(double) * nq);
  if (ws->mass_dep[k]) {
    double* diff = ws->gq; /* scratch of 3 nq */
    for (int j = 0; j < nq; j++) diff[j] = x[j] - star[j];
    mb_mass_mul(ws->dm[k], diff, -1, r);
  }
  constraint_terms(m, d, ws, k, level, mult, r, g);
}

/* ---------------------------------------------------------------------------------------------
   initial state */

/* The rows of the assembly: constraints, then prescribed values (level 0) or rates (level 1). */
static int assembly_rows(const mb_model* m, int level, int* which) {
  int rows = 0;
  for (int i = 0; i < m->ncon; i++) which[rows++] = i;
  for (int i = 0; i < m->npres; i++)
    if (level == 0 ? m->pres_has_value[i] : m->pres_has_rate[i]) which[rows++] = m->ncon + i;
  return rows;
}

/* Positions of an assembly: d(rows)/dq q_rho = -d(rows)/drho, with the buffers of sens_initial */
static mb_status assembled_positions(const mb_model* m, mb_data* d, sens_ws* ws, int* which,
                                     double* B, int ld, double* rows_q, double* par,
                                     mb_error* err) {
  const int nq = m->nq, p = ws->p;
  const int rows = assembly_rows(m, 0, which);
  mb_status st;
  for (int r = 0; r < rows; r++) mbd_expr_rows(m, d, which[r], rows_q + (size_t)r * nq, NULL, NULL);
  for (int k = 0; k < p; k++) {
    if (!sens_active(ws, k, d->t)) continue;
    for (int r = 0; r < rows; r++) {
      mbd_expr_param(m, ws->dm[k], d, which[r], par);
      B[(size_t)k * ld + r] = -par[0];
    }
  }
  const int moved = nonzero((size_t)ld * p, B);
  int rank = nq;
  if (p > 0 && (st = mbu_least_squares_rows(rows, nq, p, rows_q, B, ld, &rank)) != MB_OK) return st;
  /* an under-determined assembly (fewer independent rows than coordinates, redundant rows
     counted once) ends where its iteration happens to stop: its sensitivity is defined only
     when the parameters do not move it */
  if (rank < nq && moved)
    return mb_error_set(err, MB_ERR_MODEL,
                        "initial: the parameters move the initial configuration, which the "
                        "\"initial\" entries leave undetermined (%d of %d coordinates fixed): "
                        "prescribe one coordinate per degree of freedom, or start in static "
                        "equilibrium",
                        rank, nq);
  for (int k = 0; k < p; k++)
    memcpy(ws->qr + (size_t)k * nq, B + (size_t)k * ld, sizeof(double) * nq);
  return MB_OK;
}

/* Positions of a static equilibrium: the balance's Jacobian A (at the equilibrium, with the
   multipliers that balance it) times [q_rho; y_rho] = the explicit derivatives of the balance,
   (Q_rho - (dPhi_q/drho)^T lambda - (dP_q/drho)^T mu) / scale, -Phi_rho and -P_rho. The minimum-
   norm solution leaves the motions nothing resists alone; a parameter that pushes along one has
   no derivative of its equilibrium. */
static mb_status equilibrium_positions(const mb_model* m, mb_data* d, sens_ws* ws, mb_error* err) {
  const int nq = m->nq, nc = m->ncon, p = ws->p;
  const double t = d->t;
  mb_balance* b = mb_balance_create(m);
  double* saved = malloc(sizeof(double) * (2 * (size_t)nq + nc + 1));
  double *B = NULL, *X = NULL;
  mb_status st = MB_ERR_MEMORY;
  if (!b || !saved) goto done;
  const int n = b->n;
  B = calloc((size_t)n * p + 1, sizeof(double));
  X = calloc((size_t)n * p + 1, sizeof(double));
  if (!B || !X) goto done;
  memcpy(saved, d->qd, sizeof(double) * nq);
  memcpy(saved + nq, d->qdd, sizeof(double) * nq);
  memcpy(saved + 2 * nq, d->lambda, sizeof(double) * nc);
  if ((st = mb_balance_setup(m, d, b)) != MB_OK) goto restore;
  mb_balance_eval(m, d, b, 1);
  for (int i = 0; i < nc; i++) d->lambda[i] = b->y[i] * b->scale;
  for (int k = 0; k < p; k++) {
    if (!sens_active(ws, k, d->t)) continue;
    double *col = B + (size_t)k * n, *r = ws->rhs, par[3];
    sens_explicit_dynamics(m, d, ws, k, r, col + nq);
    for (int j = 0; j < b->npv; j++) {
      const int row = nc + b->pres[j];
      mbd_expr_rows_param(m, ws->dm[k], d, row, -b->y[nc + j] * b->scale, r);
      mbd_expr_param(m, ws->dm[k], d, row, par);
      col[nq + nc + j] = -par[0];
    }
    for (int i = 0; i < nq; i++) col[i] = b->held[i] ? 0 : r[i] / b->scale;
  }
  memcpy(X, B, sizeof(double) * (size_t)n * p);
  if (p > 0 && (st = mbu_least_squares_rows(n, n, p, b->A, X, n, NULL)) != MB_OK) goto restore;
  for (int k = 0; k < p; k++) {
    /* the columns the balance's Jacobian cannot reach */
    const double* x = X + (size_t)k * n;
    double *col = B + (size_t)k * n, size = mbu_norm_inf(n, col);
    for (int i = 0; i < n; i++)
      for (int j = 0; j < n; j++) col[i] -= b->A[(size_t)i * n + j] * x[j];
    if (mbu_norm_inf(n, col) > 1e-6 * size) {
      st = mb_error_set(err, MB_ERR_MODEL,
                        "initial: parameter \"%s\" pushes the static equilibrium along a motion "
                        "that nothing resists, so the equilibrium has no derivative: hold that "
                        "coordinate with an entry of \"initial\"",
                        ws->desc->param_name[mb_desc_gradient_param(ws->desc, k)]);
      goto restore;
    }
    memcpy(ws->qr + (size_t)k * nq, x, sizeof(double) * nq);
  }
  st = MB_OK;
restore:
  d->t = t;
  memcpy(d->qd, saved, sizeof(double) * nq);
  memcpy(d->qdd, saved + nq, sizeof(double) * nq);
  memcpy(d->lambda, saved + 2 * nq, sizeof(double) * nc);
done:
  mb_balance_free(b);
  free(saved), free(B), free(X);
  return st;
}

mb_status sens_initial(const mb_model* m, mb_data* d, sens_ws* ws, mb_error* err) {
  const int nq = m->nq, nc = m->ncon, p = ws->p;
  const int maxrows = nc + m->npres;
  const int ld = maxrows > nq ? maxrows : nq;
  mb_status st = MB_ERR_MEMORY;
  int* which = malloc(sizeof(int) * (maxrows + 1));
  double* B = calloc((size_t)ld * p + 1, sizeof(double));
  double* rows_q = calloc((size_t)maxrows * nq + 1, sizeof(double));
  double* rows_v = calloc((size_t)maxrows * nq + 1, sizeof(double));
  double* par = calloc(3 * (size_t)maxrows + 1, sizeof(double));
  if (!which || !B || !rows_q || !rows_v || !par) goto done;
  memset(ws->qr, 0, sizeof(double) * nq * ws->ncol);
  memset(ws->qdr, 0, sizeof(double) * nq * ws->ncol);
  memset(ws->qddr, 0, sizeof(double) * nq * ws->ncol);
  memset(ws->lamr, 0, sizeof(double) * nc * ws->ncol);

  /* positions */
  st = m->opt.equilibrium ? equilibrium_positions(m, d, ws, err)
                          : assembled_positions(m, d, ws, which, B, ld, rows_q, par, err);
  if (st != MB_OK) goto done;

  /* velocities: rows qd_rho = -(d(rows qd)/dq q_rho + d(rows qd)/drho) + d(rate)/drho */
  int rows = assembly_rows(m, 1, which);
  memset(rows_q, 0, sizeof(double) * (size_t)maxrows * nq);
  memset(rows_v, 0, sizeof(double) * (size_t)maxrows * nq);
  memset(B, 0, sizeof(double) * (size_t)ld * p);
  for (int r = 0; r < rows; r++)
    mbd_expr_rows(m, d, which[r], rows_q + (size_t)r * nq, rows_v + (size_t)r * nq, NULL);
  for (int k = 0; k < p; k++) {
    const double* qr = ws->qr + (size_t)k * nq;
    const int active = sens_active(ws, k, d->t);
    for (int r = 0; r < rows; r++) {
      double v = 0;
      if (active) {
        mbd_expr_param(m, ws->dm[k], d, which[r], par);
        v = -par[1];
        if (which[r] >= nc) v += ws->dm[k]->pres_rate[which[r] - nc];
      }
      for (int j = 0; j < nq; j++) v -= rows_v[(size_t)r * nq + j] * qr[j];
      B[(size_t)k * ld + r] = v;
    }
  }
  int rank = nq;
  if (p > 0 && (st = mbu_least_squares_rows(rows, nq, p, rows_q, B, ld, &rank)) != MB_OK) goto done;
  /* the minimum-norm velocities of an under-determined system have a simple derivative only
     when they vanish */
  if (rank < nq && nonzero(nq, d->qd)) {
    st = mb_error_set(err, MB_ERR_MODEL,
                      "initial: the gradient needs the initial velocities determined: prescribe "
                      "one rate per degree of freedom (%d of %d fixed), or start at rest",
                      rank, nq);
    goto done;
  }
  for (int k = 0; k < p; k++)
    memcpy(ws->qdr + (size_t)k * nq, B + (size_t)k * ld, sizeof(double) * nq);

  /* accelerations and multipliers: M qdd_rho + Phi_q^T lambda_rho =
     Q_rho - K q_rho - C qd_rho - M_rho qdd - H_lambda q_rho - (dPhi_q/drho)^T lambda,
     Phi_q qdd_rho = -(d2Phi/dt2)_q q_rho - 2 (dPhi/dt)_q qd_rho - (d2Phi/dt2)_rho */
  mb_forces(m, d, 1);
  memcpy(d->qd_star, d->qd, sizeof(double) * nq);
  memcpy(d->qdd_star, d->qdd, sizeof(double) * nq);
  ws->pt.d = d;
  if ((st = sens_projected_state(m, &ws->pt, 0, err)) != MB_OK) goto done;
  sens_friction_linearise(m, &ws->pt);
  sens_hessian(m, d, ws, d->lambda);
  const mb_pattern* sys = m->structure->sys;
  const mb_rows* prows = &m->structure->phiq;
  for (int k = 0; k < p; k++) {
    const size_t cq = (size_t)k * nq, cc = (size_t)k * nc;
    double *r = ws->rhs + cq, *g = ws->g + cc;
    memset(r, 0, sizeof(double) * nq);
    memset(g, 0, sizeof(double) * nc);
    if (sens_active(ws, k, d->t)) sens_explicit_dynamics(m, d, ws, k, r, g);
    mb_spmv(sys, d->stiff, ws->qr + cq, -1, r);
    sens_friction_stiffness_mul(m, &ws->pt, ws->qr + cq, 0, -1, r);
    mb_spmv(sys, d->damp, ws->qdr + cq, -1, r);
    sens_hessian_mul(m, ws, ws->qr + cq, -1, r);
    if (sens_active(ws, k, d->t)) constraint_terms(m, d, ws, k, 2, NULL, NULL, g);
    mb_rows_mul(prows, ws->pt.phidd_q, ws->qr + cq, -1, g);
    mb_rows_mul(prows, ws->pt.phid_q, ws->qdr + cq, -2, g);
  }
  if (p > 0)
    sens_kkt_solve(m, d, SENS_PROJECTION, ws->pt.pen, p, ws->rhs, ws->g, ws->qddr, ws->lamr,
                   &ws->pt.fric);
  st = MB_OK;

done:
  if (st == MB_ERR_MEMORY)
    mb_error_set(err, st, "initial sensitivities: out of memory");
  else if (st == MB_ERR_LINALG)
    mb_error_set(err, st, "initial sensitivities: least-squares solve failed");
  free(which), free(B), free(rows_q), free(rows_v), free(par);
  return st;
}
