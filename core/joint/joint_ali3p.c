/* ALI3-P in joint coordinates: the formulation's half of the step (stepper.h), its assembly and
   its simulation (A. Lopez Varela, D. Dopico, A. Luaces, "Augmented Lagrangian index-3
   semi-recursive formulations with projections: direct sensitivity analysis", eqs. 9-11, with
   P = M^d and zeta = 1 in the projections). The Newton matrix is
     M^d + gamma h R^T C R + beta h^2 (R^T K R + Phi_z^T alpha S Phi_z),
   the natural model's force Jacobians carried to the joint coordinates through R = dq/dz; the
   derivatives of R and of the inertial forces are left out, which the iteration absorbs. */
#include <math.h>
#include <string.h>

#include "internal.h"
#include "joint_model.h"
#include "stepper.h"
#include "structure.h"

typedef struct joint_step {
  const mb_joint_model* jm;
  mb_joint_data* jd;
  mb_factor* factor;               /* the projections' and KKT solves' leading matrix */
  int transpose;                   /* solve with its transpose */
  const mb_joint_coupling* couple; /* the friction's multiplier coupling of a KKT solve, or NULL */
} joint_step;

/* A (values on the full pattern) = the dense row-major D. */
static void to_pattern(const mb_joint_model* jm, const double* D, double* A) {
  const int n = jm->nz;
  for (int k = 0; k < n * n; k++) A[jm->entry[k]] = D[k];
}

/* D (nz x nz, row-major) += R^T (ks K + cs C) R, the natural force Jacobians (values on the
   natural system pattern) carried to the joint coordinates. They are nonzero only between the
   force elements' coordinates, and dq/dz of a coordinate only in the columns of the joints on its
   body's path from the ground: the products run over the force coordinates and their paths
   alone. */
static void add_carried(const mb_joint_model* jm, mb_joint_data* jd, double ks, const double* K,
                        double cs, const double* C, double* D) {
  const int nz = jm->nz, nf = jm->nforce_coord;
  const int *adr = jm->coord_path_adr, *cpath = jm->coord_path;
  double* XR = D + (size_t)nz * nz;       /* (nf x nz) X R at the force coordinates */
  double* path_R = XR + (size_t)nf * nz;  /* (nf x nz) their rows of R along their paths, packed */
  double* sum = path_R + (size_t)nf * nz; /* (nz) */
  memset(XR, 0, (size_t)nf * nz * sizeof(double));
  for (int b = 0; b < nf; b++) {
    const double* r = jd->Rq + (size_t)jm->need_coord[b] * nz;
    for (int k = adr[b]; k < adr[b + 1]; k++) path_R[(size_t)b * nz + k - adr[b]] = r[cpath[k]];
  }
  /* the pairs come by row; a run of partners on one body shares that body's path, summed packed
     and scattered once */
  for (int p = 0; p < jm->nforce_pair;) {
    const int a = jm->force_pair[2 * p], first = jm->force_pair[2 * p + 1];
    const int body = jm->coord_body[first];
    const int *path = cpath + adr[first], n = adr[first + 1] - adr[first];
    memset(sum, 0, (size_t)n * sizeof(double));
    for (; p < jm->nforce_pair && jm->force_pair[2 * p] == a &&
           jm->coord_body[jm->force_pair[2 * p + 1]] == body;
         p++) {
      const int e = jm->force_entry[p];
      const double x = ks * K[e] + cs * C[e], *r = path_R + (size_t)jm->force_pair[2 * p + 1] * nz;
      if (x != 0)
        for (int k = 0; k < n; k++) sum[k] += x * r[k];
    }
    for (int k = 0; k < n; k++) XR[(size_t)a * nz + path[k]] += sum[k];
  }
  /* whole rows of XR, zero beyond the columns their row of K R reaches: unit-stride loops that
     vectorise, where a list of those columns would not */
  for (int a = 0; a < nf; a++) {
    const double* xr = XR + (size_t)a * nz;
    for (int k = adr[a]; k < adr[a + 1]; k++) {
      double* d = D + (size_t)cpath[k] * nz;
      const double r = path_R[(size_t)a * nz + k - adr[a]];
      for (int c = 0; c < nz; c++) d[c] += r * xr[c];
    }
  }
}

void mb_joint_add_gram(const mb_joint_model* jm, const mb_joint_data* jd, const double* w, double s,
                       double* D) {
  const int nz = jm->nz;
  /* the rows of D the row's nonzeros reach, each whole: unit-stride loops that vectorise */
  for (int i = 0; i < jm->ncon; i++) {
    const double* a = jd->phiz + (size_t)i * nz;
    const double c = s * w[i];
    for (int j = 0; j < nz; j++) {
      if (a[j] == 0) continue;
      const double ca = c * a[j];
      double* d = D + (size_t)j * nz;
      for (int q = 0; q < nz; q++) d[q] += ca * a[q];
    }
  }
}

/* Phi_z waits for the Newton matrix or the projections: most positions need neither */
static void joint_positions(const mb_stepper* s) {
  const joint_step* c = s->ctx;
  mb_joint_positions(c->jm, c->jd);
}

static int joint_residual(const mb_stepper* s, double alpha, double* r, int tangent) {
  const joint_step* c = s->ctx;
  const mb_joint_model* jm = c->jm;
  mb_joint_data* jd = c->jd;
  const int nz = jm->nz, nc = jm->ncon;
  const double h = s->opt->step, gh = s->opt->gamma * h, bh2 = s->opt->beta * h * h;
  mb_joint_friction_multipliers(jm, jd->aux, jd->lambda, alpha, jd->phi);
  mb_joint_motion(jm, jd, jd->zdd, 0);
  mb_forces(jm->aux, jd->aux, tangent);
  /* r = beta h^2 (M zdd + Phi_z^T (lambda + alpha S Phi) - Q) */
  double* mult = jd->work;
  for (int i = 0; i < nc; i++) mult[i] = jd->lambda[i] + alpha * jm->scale[i] * jd->phi[i];
  mb_joint_inverse_dynamics(jm, jd, mult, bh2, r);
  if (!tangent) return 0;
  mb_joint_constraint_jacobian(jm, jd);
  mb_joint_force_jacobian(jm, jd);
  mb_joint_mass(jm, jd);     /* its scratch is jd->work */
  double* D = jd->work + nc; /* the Newton matrix, then add_carried's scratch */
  memcpy(D, jd->M, (size_t)nz * nz * sizeof(double));
  if (jm->friction) mb_friction_tangent(jm->aux, jd->aux, alpha, jm->row_scale, 1, jd->aux->stiff);
  add_carried(jm, jd, bh2, jd->aux->stiff, gh, jd->aux->damp, D);
  mb_joint_add_gram(jm, jd, jm->scale, bh2 * alpha, D);
  to_pattern(jm, D, jd->tangent);
  return mb_factor_compute(&jd->newton, jd->tangent) != 0;
}

static void joint_solve(const mb_stepper* s, double* r) {
  const joint_step* c = s->ctx;
  mb_factor_solve(&c->jd->newton, 0, 1, r);
}

void mb_joint_rows_mul(const mb_joint_model* jm, const mb_joint_data* jd,
                       const mb_joint_coupling* couple, const double* x, double* y) {
  const int nz = jm->nz, nc = jm->ncon;
  for (int i = 0; i < nc; i++) y[i] += mbu_dot(nz, jd->phiz + (size_t)i * nz, x);
  for (int a = 0; couple && a < couple->n; a++) {
    const double gx = mbu_dot(nz, couple->gz + (size_t)a * nz, x);
    for (int i = 0; i < nc; i++) y[i] += couple->lz[(size_t)a * nc + i] * gx;
  }
}

/* y += Phi_z x, or B x of a transposed coupled solve */
static void joint_phi_mul(void* ctx, const double* x, double* y) {
  const joint_step* c = ctx;
  mb_joint_rows_mul(c->jm, c->jd, c->transpose ? c->couple : NULL, x, y);
}

/* y -= Phi_z^T w, or B^T w of a coupled solve */
static void joint_phi_mul_t(void* ctx, const double* w, double* y) {
  const joint_step* c = ctx;
  const int nz = c->jm->nz, nc = c->jm->ncon;
  for (int i = 0; i < nc; i++)
    for (int j = 0; j < nz; j++) y[j] -= c->jd->phiz[(size_t)i * nz + j] * w[i];
  for (int a = 0; c->couple && !c->transpose && a < c->couple->n; a++) {
    const double lw = mbu_dot(nc, c->couple->lz + (size_t)a * nc, w);
    for (int j = 0; j < nz; j++) y[j] -= c->couple->gz[(size_t)a * nz + j] * lw;
  }
}

static void joint_projection_solve(void* ctx, double* b) {
  const joint_step* c = ctx;
  mb_factor_solve(c->factor, c->transpose, 1, b);
}

/* The projections' penalty: 1e4 over the largest ratio of a coordinate's constraint metric to its
   mass, so that pen Phi_z^T S Phi_z outweighs no coordinate's mass by much more than 1e4. One
   global mass scale, as in natural coordinates, would let it outweigh a light rod's angle by 1e6
   and more, and the factorisation would lose the angle's mass to rounding: results noisy at 1e-10
   of their parameters' effect. The normalisations stay out: they hold the Euler parameters' norm,
   a direction without mass. */
static double projection_penalty(const mb_joint_model* jm, const mb_joint_data* jd) {
  const int nz = jm->nz;
  double ratio = 0;
  for (int j = 0; j < nz; j++) {
    const double mass = jd->M[(size_t)j * nz + j];
    if (!(mass > 0)) continue;
    double metric = 0;
    for (int i = 0; i < jm->nrow; i++)
      metric += jm->scale[i] * jd->phiz[(size_t)i * nz + j] * jd->phiz[(size_t)i * nz + j];
    ratio = fmax(ratio, metric / mass);
  }
  return mbu_projection_penalty(jm->aux->opt.penalty, 1, ratio);
}

mb_status mb_joint_factor_projection(const mb_joint_model* jm, mb_joint_data* jd, mb_error* err) {
  const int nz = jm->nz;
  double* D = jd->work + jm->ncon;
  jd->proj_penalty = projection_penalty(jm, jd);
  memcpy(D, jd->M, (size_t)nz * nz * sizeof(double));
  mb_joint_add_gram(jm, jd, jm->scale, jd->proj_penalty, D);
  to_pattern(jm, D, jd->proj);
  if (mb_factor_compute(&jd->projection, jd->proj) != 0)
    return mb_error_set(err, MB_ERR_SINGULAR,
                        "t = %g: the projection matrix M + alpha Phi_z^T Phi_z is singular: some "
                        "motion has no mass and no constraint",
                        jd->t);
  return MB_OK;
}

double mb_joint_kkt(const mb_joint_model* jm, mb_joint_data* jd, mb_factor* f, int transpose,
                    const mb_joint_coupling* couple, double pen, int iterations, double tol,
                    int relative, const double* b0, double* x, const double* rhs, double* mult,
                    double* work) {
  joint_step c = {jm, jd, f, transpose, couple};
  const mb_projection p = {jm->nz,
                           jm->ncon,
                           jm->scale,
                           pen,
                           iterations,
                           tol,
                           &c,
                           joint_phi_mul,
                           joint_phi_mul_t,
                           joint_projection_solve,
                           relative};
  return mb_project_iterate(&p, b0, x, rhs, mult, work);
}

/* x = the projection of x* (b0 = M x*) onto Phi_z x + rhs = 0 */
static double project(const mb_joint_model* jm, mb_joint_data* jd, const double* b0, double* x,
                      const double* rhs, double* mult) {
  const mb_settings* o = &jm->aux->opt;
  return mb_joint_kkt(jm, jd, &jd->projection, 0, NULL, jd->proj_penalty, o->projection_iterations,
                      o->tol_projection, 0, b0, x, rhs, mult, jd->work);
}

/* b = M x */
static void mass_mul(const mb_joint_model* jm, const mb_joint_data* jd, const double* x,
                     double* b) {
  const int nz = jm->nz;
  for (int j = 0; j < nz; j++) b[j] = mbu_dot(nz, jd->M + (size_t)j * nz, x);
}

/* The natural model's accelerations and time of the joint state (its positions and velocities
   the last evaluations left). */
static void natural_accelerations(const mb_joint_model* jm, mb_joint_data* jd) {
  mb_tree_accelerations(jm->tree, jd->z, jd->zd, jd->zdd, jd->st);
  mb_tree_natural_accelerations(jd->st, jm->aux, 0, NULL, jd->aux->qdd);
  mb_joint_states_to_natural(jm, jd->zdd, jd->aux->qdd);
  jd->aux->t = jd->t;
}

/* The projections of zd and zdd at the positions the last Newton iteration evaluated (eqs. 10,
   11), then the natural model's state. */
static mb_status project_state(const mb_joint_model* jm, mb_joint_data* jd, mb_error* err) {
  const int nz = jm->nz;
  double* b0 = jd->r;
  mb_joint_constraint_jacobian(jm, jd);
  mb_joint_constraint_time(jm, jd);
  mb_joint_mass(jm, jd);
  mb_status st = mb_joint_factor_projection(jm, jd, err);
  if (st != MB_OK) return st;
  mass_mul(jm, jd, jd->zd, b0);
  const double phid = project(jm, jd, b0, jd->zd, jd->phit, jd->sigma);
  mb_joint_constraint_rates(jm, jd);
  mass_mul(jm, jd, jd->zdd, b0);
  const double phidd = project(jm, jd, b0, jd->zdd, jd->phidd_rhs, jd->kappa);
  mb_report* rep = &jd->aux->report;
  rep->max_phi = fmax(rep->max_phi, mbu_norm_inf(jm->ncon, jd->phi));
  rep->max_phid = fmax(rep->max_phid, phid);
  rep->max_phidd = fmax(rep->max_phidd, phidd);
  if (!mbu_all_finite(nz, jd->zd) || !mbu_all_finite(nz, jd->zdd))
    return mb_error_set(err, MB_ERR_NONFINITE, "t = %g: non-finite velocities or accelerations",
                        jd->t);
  natural_accelerations(jm, jd);
  return MB_OK;
}

static mb_status joint_project(const mb_stepper* s, mb_error* err) {
  const joint_step* c = s->ctx;
  return project_state(c->jm, c->jd, err);
}

static const char* joint_label(const mb_stepper* s, int i) {
  const joint_step* c = s->ctx;
  const mb_joint_model* jm = c->jm;
  return i < jm->nrow ? jm->aux->con_label + MB_LABEL_LEN * jm->row[i]
                      : jm->norm_label[i - jm->nrow];
}

static const mb_stepper_ops joint_ops = {joint_positions, joint_residual, joint_solve,
                                         joint_project, joint_label};

/* The joint formulation's stepper with the settings opt, the model's or a sub-step's (c its
   context, filled). */
static mb_stepper joint_stepper(const mb_joint_model* jm, mb_joint_data* jd, const mb_settings* opt,
                                joint_step* c) {
  *c = (joint_step){jm, jd, NULL, 0, NULL};
  return (mb_stepper){.ops = &joint_ops,
                      .ctx = c,
                      .opt = opt,
                      .n = jm->nz,
                      .nc = jm->ncon,
                      .q = jd->z,
                      .qd = jd->zd,
                      .qdd = jd->zdd,
                      .qd_star = jd->zd_star,
                      .qdd_star = jd->zdd_star,
                      .qhat_v = jd->zhat_v,
                      .qhat_a = jd->zhat_a,
                      .lambda = jd->lambda,
                      .phi = jd->phi,
                      .scale = jm->scale,
                      .r = jd->r,
                      .t = &jd->t,
                      .report = &jd->aux->report,
                      .penalty_remedy = 0,
                      .lock_hint = mb_friction_lock_hint(jm->aux),
                      .kept = &jd->kept};
}

/* the joint formulation's retry on sub-steps (stepper.h) */
static mb_status retry_step(void* ctx, mb_error* err) {
  joint_step *c = ctx, s_ctx;
  const mb_stepper s = joint_stepper(c->jm, c->jd, &c->jm->aux->opt, &s_ctx);
  return mb_ali3p_full_step(&s, err);
}

/* The state at the step's start: z, zd, zdd, lambda. */
static void start_copy(joint_step* c, int save) {
  mb_joint_data* jd = c->jd;
  mb_state_copy(jd->z, jd->zd, jd->zdd, c->jm->nz, jd->lambda, c->jm->ncon, jd->start, save);
}

static void retry_save(void* ctx) {
  joint_step* c = ctx;
  c->jd->start_t = c->jd->t, c->jd->start_steps = c->jd->aux->report.steps;
  start_copy(c, 1);
}

static void retry_restore(void* ctx) {
  joint_step* c = ctx;
  c->jd->t = c->jd->start_t;
  start_copy(c, 0);
}

mb_status mb_joint_substeps(const mb_joint_model* jm, mb_joint_data* jd, int n,
                            mb_joint_substep_hook after, void* user, mb_error* err) {
  joint_step c = {jm, jd, NULL, 0, NULL}, s_ctx;
  const mb_settings sub = mb_substep_settings(&jm->aux->opt, n);
  const mb_stepper s = joint_stepper(jm, jd, &sub, &s_ctx);
  const double t0 = jd->start_t, t_next = (jd->start_steps + 1) * jm->aux->opt.step;
  retry_restore(&c);
  mb_status st = MB_OK;
  for (int j = 1; j <= n && st == MB_OK; j++) {
    st = mb_ali3p_step(&s, t0 + (t_next - t0) * j / n, err);
    if (st == MB_OK && after) st = after(user, &sub, err);
  }
  if (st == MB_OK) jd->aux->report.steps = jd->start_steps + 1;
  return st;
}

static mb_status retry_substeps(void* ctx, int n, mb_error* err) {
  const joint_step* c = ctx;
  return mb_joint_substeps(c->jm, c->jd, n, NULL, NULL, err);
}

mb_status mb_joint_step(const mb_joint_model* jm, mb_joint_data* jd, int* substeps, mb_error* err) {
  joint_step c = {jm, jd, NULL, 0, NULL};
  const mb_retry r = {&c,         &jm->aux->opt, &jd->aux->report, retry_step, retry_substeps,
                      retry_save, retry_restore};
  return mb_step_retrying(&r, substeps, err);
}

/* the joint equilibrium as the natural assembly's (mb_assemble_with) */
static mb_status equilibrium(void* ctx, mb_error* err) {
  const joint_step* c = ctx;
  return mb_joint_equilibrium(c->jm, c->jd, err);
}

mb_status mb_joint_assemble_natural(const mb_joint_model* jm, mb_joint_data* jd, mb_error* err) {
  joint_step c = {jm, jd, NULL, 0, NULL};
  return mb_assemble_with(jm->aux, jd->aux, equilibrium, &c, err);
}

mb_status mb_joint_assemble(const mb_joint_model* jm, mb_joint_data* jd, mb_error* err) {
  const mb_status st = mb_joint_assemble_natural(jm, jd, err);
  return st != MB_OK ? st : mb_joint_read_assembly(jm, jd, err);
}

void mb_joint_read_positions(const mb_joint_model* jm, mb_joint_data* jd) {
  const mb_tree* t = jm->tree;
  const mb_model* aux = jm->aux;
  const mb_data* da = jd->aux;
  const int nb = t->nbody;
  double* pose = jd->work; /* A (9 nb), o (3 nb) */
  double* o = pose + 9 * nb;
  for (int b = 0; b < nb; b++) {
    double axis[3][3] = {{0}};
    for (int k = 0; k < 3; k++) {
      const int lv = aux->body_axes[3 * b + k];
      if (lv >= 0) mb_lvec_eval(aux, lv, da->q, axis[k]);
    }
    if (t->dim == 2) axis[2][2] = 1;
    for (int r = 0; r < 3; r++)
      for (int k = 0; k < 3; k++) pose[9 * b + 3 * r + k] = axis[k][r];
    mb_lvec_eval(aux, aux->body_origin[b], da->q, o + 3 * b);
  }
  mb_tree_coordinates(t, pose, o, jd->z);
  for (int k = 0; k < jm->nstate; k++) jd->z[t->nz + k] = da->q[jm->state_qadr[k]];
}

mb_status mb_joint_read_assembly(const mb_joint_model* jm, mb_joint_data* jd, mb_error* err) {
  const mb_tree* t = jm->tree;
  const mb_model* aux = jm->aux;
  mb_data* da = jd->aux;
  const int nb = t->nbody, nz = jm->nz;
  mb_status st;
  jd->t = 0;
  jd->kept.valid = 0;
  /* the assembled state's multipliers are whole (lambda below): no projection corrects them,
     whatever an earlier run of jd left */
  memset(jd->sigma, 0, (size_t)jm->ncon * sizeof(double));
  memset(jd->kappa, 0, (size_t)jm->ncon * sizeof(double));
  mb_joint_read_positions(jm, jd);
  /* the bodies' velocities in the assembled natural coordinates */
  double *w = jd->work, *v = w + 3 * nb;
  for (int b = 0; b < nb; b++) {
    mb_lvec_rate(aux, aux->body_origin[b], da->qd, v + 3 * b);
    mb_body_angular_velocity(aux, b, da->q, da->qd, w + 3 * b);
  }
  for (int k = 0; k < jm->nstate; k++) jd->zd[t->nz + k] = da->qd[jm->state_qadr[k]];
  mb_tree_positions(t, jd->z, jd->st);
  if ((st = mb_tree_rates(t, jd->z, jd->st, w, v, jd->zd)) != MB_OK)
    return mb_error_set(err, st, "initial assembly: joint rates: the least-squares solve failed");
  /* accelerations and multipliers: M zdd + Phi_z^T lambda = Q, Phi_z zdd + remainder = 0 */
  mb_joint_constraints(jm, jd);
  mb_joint_constraint_rates(jm, jd);
  mb_joint_dynamics(jm, jd, 0);
  if ((st = mb_joint_factor_projection(jm, jd, err)) != MB_OK) return st;
  memcpy(jd->r, jd->Q, (size_t)nz * sizeof(double));
  project(jm, jd, jd->r, jd->zdd, jd->phidd_rhs, jd->lambda);
  mb_tree_natural_velocities(jd->st, aux, 0, NULL, da->qd);
  mb_joint_states_to_natural(jm, jd->zd, da->qd);
  natural_accelerations(jm, jd);
  return MB_OK;
}

/* The natural multipliers the outputs read after a step or the assembly: the imposed rows' those
   the step converged to, and with reaction outputs the tree's recovered. */
static mb_status output_multipliers(joint_step* c, mb_status st, mb_error* err) {
  if (st != MB_OK) return st;
  mb_joint_imposed_multipliers(c->jm, c->jd);
  return mb_joint_natural_multipliers(c->jm, c->jd, 0, err);
}

/* the joint formulation's run (stepper.h) */
static mb_status run_assemble(void* ctx, mb_error* err) {
  joint_step* c = ctx;
  return output_multipliers(c, mb_joint_assemble(c->jm, c->jd, err), err);
}

static mb_status run_step(void* ctx, mb_error* err) {
  joint_step* c = ctx;
  return output_multipliers(c, mb_joint_step(c->jm, c->jd, NULL, err), err);
}

static double run_driver_power(void* ctx) {
  const joint_step* c = ctx;
  double p = 0;
  for (int i = 0; i < c->jm->ncon; i++) p += c->jd->lambda[i] * c->jd->phit[i];
  return p;
}

/* 1/2 zd^T M zd over the tree's coordinates, M of the positions the projections used (the
   controllers' states carry no physical energy): the natural model's quadratic form over its
   many more coordinates would cost as much as the projections' solves */
static double run_kinetic_energy(void* ctx) {
  const joint_step* c = ctx;
  const int nt = c->jm->tree->nz, nz = c->jm->nz;
  const double* zd = c->jd->zd;
  double T = 0;
  for (int i = 0; i < nt; i++) T += zd[i] * mbu_dot(nt, c->jd->M + (size_t)i * nz, zd);
  return 0.5 * T;
}

mb_status mb_joint_simulate(const mb_joint_model* jm, mb_joint_data* jd, mb_observer obs,
                            void* user, mb_error* err) {
  joint_step c = {jm, jd, NULL, 0, NULL};
  const mb_run run = {&c, run_assemble, run_step, run_driver_power, run_kinetic_energy};
  return mb_run_simulation(jm->aux, jd->aux, &run, obs, user, err);
}
