/* Walking every scalar of a description: setting a parameter, finding where one is bound. */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "mbopt/desc.h"

typedef void (*visit_fn)(mb_real* r, int in_function, void* user);

static void visit_reals(mb_real* r, int n, int in_function, visit_fn visit, void* user) {
  for (int i = 0; i < n; i++) visit(&r[i], in_function, user);
}

static void visit_func(mb_func_desc* f, visit_fn visit, void* user) {
  if (f->coef) visit_reals(f->coef, f->ncoef, 1, visit, user);
}

static void visit_markers(mb_marker_desc* mk, int n, visit_fn visit, void* user) {
  for (int i = 0; i < n; i++) {
    visit_reals(mk[i].point, 3, 0, visit, user);
    visit_reals(mk[i].axis, 3, 0, visit, user);
    visit_reals(mk[i].ref, 3, 0, visit, user);
  }
}

void mb_desc_visit(mb_desc* d, visit_fn visit, void* user) {
  visit_reals(d->gravity, 3, 0, visit, user);
  visit_markers(d->ground_marker, d->nground_marker, visit, user);
  for (int b = 0; b < d->nbody; b++) {
    mb_body_desc* bd = &d->body[b];
    visit_reals(&bd->mass, 1, 0, visit, user);
    visit_reals(bd->com, 3, 0, visit, user);
    visit_reals(bd->inertia, 6, 0, visit, user);
    visit_markers(bd->marker, bd->nmarker, visit, user);
  }
  for (int j = 0; j < d->njoint; j++) {
    mb_friction_desc* f = &d->joint[j].friction;
    if (!f->enabled) continue;
    visit_reals(&f->mu_static, 1, 0, visit, user);
    visit_reals(&f->mu_dynamic, 1, 0, visit, user);
    visit_reals(&f->transition_velocity, 1, 0, visit, user);
    visit_reals(&f->viscous, 1, 0, visit, user);
    visit_reals(&f->radius, 1, 0, visit, user);
    visit_reals(&f->length, 1, 0, visit, user);
    visit_reals(&f->width, 1, 0, visit, user);
    visit_reals(&f->thrust_radius, 1, 0, visit, user);
  }
  for (int i = 0; i < d->nforce; i++) {
    mb_force_desc* f = &d->force[i];
    visit_reals(&f->stiffness, 1, 0, visit, user);
    visit_reals(&f->damping, 1, 0, visit, user);
    visit_reals(&f->natural_length, 1, 0, visit, user);
    visit_reals(&f->force, 1, 0, visit, user);
    visit_reals(&f->radius, 1, 0, visit, user);
    visit_reals(f->slip, 3, 0, visit, user);
    for (int k = 0; k < 3; k++) visit_func(&f->func[k], visit, user);
  }
  for (int i = 0; i < d->ndriver; i++) visit_func(&d->driver[i].func, visit, user);
  for (int i = 0; i < d->nprescribe; i++) {
    visit_reals(&d->prescribe[i].value, 1, 0, visit, user);
    visit_reals(&d->prescribe[i].rate, 1, 0, visit, user);
  }
  for (int i = 0; i < d->ncontroller; i++) {
    mb_controller_desc* c = &d->controller[i];
    visit_reals(&c->kp, 1, 0, visit, user);
    visit_reals(&c->ki, 1, 0, visit, user);
    visit_reals(&c->kd, 1, 0, visit, user);
    visit_reals(&c->saturation, 1, 0, visit, user);
    visit_func(&c->reference, visit, user);
  }
  for (int f = 0; f < d->nfunctional; f++)
    for (int j = 0; j < d->functional[f].nterm; j++) {
      mb_fterm_desc* t = &d->functional[f].term[j];
      visit_reals(&t->weight, 1, 0, visit, user);
      visit_reals(&t->epsilon, 1, 0, visit, user);
      visit_func(&t->reference, visit, user);
    }
}

int mb_real_depends(const mb_desc* d, const mb_real* r, int p) {
  return r->param == p || (r->expr > 0 && mb_expr_depends(&d->expr[r->expr - 1], p));
}

typedef struct param_change {
  const mb_desc* d;
  int param;
} param_change;

static void set_value(mb_real* r, int in_function, void* user) {
  const param_change* c = user;
  (void)in_function;
  if (r->param == c->param)
    r->value = c->d->param_value[c->param];
  else if (r->expr > 0 && mb_expr_depends(&c->d->expr[r->expr - 1], c->param))
    r->value = mb_expr_eval(&c->d->expr[r->expr - 1], c->d->param_value, -1, NULL);
}

void mb_desc_set_param(mb_desc* d, int p, double value) {
  if (p < 0 || p >= d->nparam) return;
  d->param_value[p] = value;
  param_change c = {d, p};
  mb_desc_visit(d, set_value, &c);
}

/* The expressions reading p, each evaluated with p at value: finite, and within its rule. */
static mb_status check_expressions(const mb_desc* d, int p, double value, mb_error* err) {
  if (d->nexpr == 0) return MB_OK;
  double* values = malloc(sizeof(double) * (size_t)d->nparam);
  if (!values) return mb_error_set(err, MB_ERR_MEMORY, "out of memory");
  memcpy(values, d->param_value, sizeof(double) * (size_t)d->nparam);
  values[p] = value;
  mb_status st = MB_OK;
  for (int i = 0; i < d->nexpr && st == MB_OK; i++) {
    const mb_expr* e = &d->expr[i];
    if (!mb_expr_depends(e, p)) continue;
    const double x = mb_expr_eval(e, values, -1, NULL);
    if (!isfinite(x))
      st = mb_error_set(err, MB_ERR_MODEL,
                        "parameter \"%s\" = %g: %s = \"%s\" is not a finite number",
                        d->param_name[p], value, e->where, e->text);
    else if ((e->min == 2 && !(x > 0)) || (e->min == 1 && !(x >= 0)))
      st =
          mb_error_set(err, MB_ERR_MODEL, "parameter \"%s\" = %g: %s = \"%s\" = %g must be %s",
                       d->param_name[p], value, e->where, e->text, x, e->min == 2 ? "> 0" : ">= 0");
  }
  free(values);
  return st;
}

mb_status mb_desc_check_param(const mb_desc* d, int p, double value, mb_error* err) {
  if (p < 0 || p >= d->nparam)
    return mb_error_set(err, MB_ERR_ARGUMENT, "parameter %d: no such parameter", p);
  if (!isfinite(value))
    return mb_error_set(err, MB_ERR_MODEL, "parameter \"%s\": %g is not a finite number",
                        d->param_name[p], value);
  const mb_param_rule* r = d->param_rule ? &d->param_rule[p] : NULL;
  if (r && ((r->min == 2 && !(value > 0)) || (r->min == 1 && !(value >= 0))))
    return mb_error_set(err, MB_ERR_MODEL, "parameter \"%s\" = %g: %s must be %s", d->param_name[p],
                        value, r->where, r->min == 2 ? "> 0" : ">= 0");
  return check_expressions(d, p, value, err);
}

mb_status mb_desc_set_named(mb_desc* d, const char* name, double value, mb_error* err) {
  const int k = mb_desc_param_index(d, name);
  if (k < 0) return mb_error_set(err, MB_ERR_ARGUMENT, "the spec has no parameter \"%s\"", name);
  const mb_status st = mb_desc_check_param(d, k, value, err);
  if (st == MB_OK) mb_desc_set_param(d, k, value);
  return st;
}

int mb_desc_gradient_count(const mb_desc* d) {
  return d->gradient_param ? d->ngradient_param : d->nparam;
}

int mb_desc_gradient_param(const mb_desc* d, int k) {
  return d->gradient_param ? d->gradient_param[k] : k;
}
