/* The tangent model (exact parameter derivatives of every real array of the compiled model)
   against central differences of the compiler, for parameters bound to every kind of quantity:
   mass, centre of mass, inertia, marker points on and off joints, ground points, spring
   stiffness, damping, natural length and force, function coefficients of loads and drivers,
   prescribed initial values and rates, gravity. */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "mbopt/sensitivity.h"
#include "testing.h"

static const char* models[] = {"problems/fivebar.json", "tests/models/ok/params_spatial.json",
                               "tests/models/ok/params_planar.json"};

typedef struct array_view {
  const char* name;
  size_t offset; /* offset of the double* field in mb_model */
  int (*count)(const mb_model* m);
} array_view;

static int n_lvec(const mb_model* m) {
  return 3 * m->nlvec;
}
static int n_term(const mb_model* m) {
  return 9 * m->nterm;
}
static int n_con(const mb_model* m) {
  return m->ncon;
}
static int n_pres(const mb_model* m) {
  return m->npres;
}
static int n_force(const mb_model* m) {
  return m->nforce;
}
static int n_funcdata(const mb_model* m) {
  return m->nfuncdata;
}
static int n_mass(const mb_model* m) {
  return 9 * m->nmass;
}
static int n_q(const mb_model* m) {
  return m->nq;
}
static int n_body(const mb_model* m) {
  return m->nbody;
}
static int n_elem(const mb_model* m) {
  return 3 * m->nelem;
}
static int n_fterm(const mb_model* m) {
  return m->nfterm;
}

#define VIEW(field, count) \
  { #field, offsetof(mb_model, field), count }
static const array_view views[] = {
    VIEW(lvec_const, n_lvec),    VIEW(term_W, n_term),    VIEW(con_value, n_con),
    VIEW(pres_value, n_pres),    VIEW(pres_rate, n_pres), VIEW(force_k, n_force),
    VIEW(force_c, n_force),      VIEW(force_l0, n_force), VIEW(force_f0, n_force),
    VIEW(func_data, n_funcdata), VIEW(mass, n_mass),      VIEW(gravity_force, n_q),
    VIEW(body_mass, n_body),     VIEW(elem_q0, n_elem),   VIEW(fterm_weight, n_fterm),
    VIEW(fterm_eps, n_fterm)};

static const double* field(const mb_model* m, const array_view* v) {
  return *(double* const*)((const char*)m + v->offset);
}

/* Free elements' initial guesses do not depend on parameters in a way the tangent tracks. */
static int skip_entry(const mb_model* m, const array_view* v, int i) {
  return !strcmp(v->name, "elem_q0") && m->elem_qadr[i / 3] >= 0;
}

static void check_param(mbt_tally* t, const char* path, mb_desc* d, const mb_model* m, int p) {
  char what[200];
  mb_error err;
  mb_model *dm = NULL, *mp = NULL, *mm = NULL;
  if (mbd_model_tangent(d, m, p, &dm, &err) != MB_OK) {
    printf("     %s\n", err.message);
    snprintf(what, sizeof what, "%s: tangent model of %s", path, d->param_name[p]);
    mbt_check(t, 0, what, 1, 0);
    return;
  }
  const double v0 = d->param_value[p], eps = 1e-6 * fmax(1, fabs(v0));
  mb_desc_set_param(d, p, v0 + eps);
  mb_status sp = mb_compile(d, &mp, &err);
  mb_desc_set_param(d, p, v0 - eps);
  mb_status sm = mb_compile(d, &mm, &err);
  mb_desc_set_param(d, p, v0);
  double worst = sp == MB_OK && sm == MB_OK ? 0 : INFINITY;
  const char* where = "";
  for (size_t k = 0; k < sizeof views / sizeof views[0] && isfinite(worst); k++) {
    const array_view* v = &views[k];
    const double *a = field(dm, v), *hi = field(mp, v), *lo = field(mm, v), *ref = field(m, v);
    for (int i = 0; i < v->count(m); i++) {
      if (skip_entry(m, v, i)) continue;
      double fd = (hi[i] - lo[i]) / (2 * eps);
      double e = fabs(fd - a[i]) / fmax(1, fabs(ref[i]));
      if (e > worst) worst = e, where = v->name;
    }
  }
  snprintf(what, sizeof what, "%s: d/d%s of the model (worst in %s)", path, d->param_name[p],
           where);
  mbt_check(t, worst < 1e-7, what, worst, 1e-7);
  mb_model_free(dm);
  mb_model_free(mp);
  mb_model_free(mm);
}

int main(void) {
  mbt_tally t = {0};
  for (size_t k = 0; k < sizeof models / sizeof models[0]; k++) {
    mb_desc d;
    mb_model* m = mbt_load(models[k], &d);
    if (!m) {
      t.failed++;
      continue;
    }
    const char* name = strrchr(models[k], '/') + 1;
    for (int p = 0; p < d.nparam; p++) check_param(&t, name, &d, m, p);
    mb_model_free(m);
    mb_desc_free(&d);
  }
  return mbt_finish(&t);
}
