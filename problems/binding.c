/* Flat functions for language bindings (include/mbopt/binding.h): each wraps the C API so that a
   binding passes handles, numbers and arrays only. */
#include "mbopt/binding.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mbopt/gradient.h"
#include "mbopt/optimize.h"
#include "mbopt/simulate.h"

static void put(char* message, size_t size, const char* text) {
  if (message && size) snprintf(message, size, "%s", text);
}

static mb_status fail(char* message, size_t size, mb_status st, const char* format, ...)
    __attribute__((format(printf, 4, 5)));
static mb_status fail(char* message, size_t size, mb_status st, const char* format, ...) {
  if (message && size) {
    va_list args;
    va_start(args, format);
    vsnprintf(message, size, format, args);
    va_end(args);
  }
  return st;
}

mb_desc* mb_binding_open(const char* path, char* message, size_t size) {
  mb_desc* d = malloc(sizeof *d);
  mb_error err;
  if (!d) {
    put(message, size, "out of memory");
    return NULL;
  }
  if (mb_desc_load_json(path, d, &err) != MB_OK) {
    put(message, size, err.message);
    free(d);
    return NULL;
  }
  put(message, size, "");
  return d;
}

void mb_binding_close(mb_desc* d) {
  mb_desc_free(d);
  free(d);
}

int mb_binding_parameter_count(const mb_desc* d) {
  return d->nparam;
}

const char* mb_binding_parameter_name(const mb_desc* d, int k) {
  return k >= 0 && k < d->nparam ? d->param_name[k] : "";
}

double mb_binding_parameter_value(const mb_desc* d, int k) {
  return k >= 0 && k < d->nparam ? d->param_value[k] : 0;
}

int mb_binding_functional_count(const mb_desc* d) {
  return d->nfunctional;
}

const char* mb_binding_functional_name(const mb_desc* d, int f) {
  return f >= 0 && f < d->nfunctional ? d->functional[f].name : "";
}

double mb_binding_t_end(const mb_desc* d) {
  return d->settings.t_end;
}

double mb_binding_step(const mb_desc* d) {
  return d->settings.step;
}

int mb_binding_design_count(const mb_desc* d) {
  return d->optimization.objective >= 0 ? d->optimization.nvar : 0;
}

const char* mb_binding_design_name(const mb_desc* d, int v) {
  return v >= 0 && v < mb_binding_design_count(d) ? d->param_name[d->optimization.var[v].param]
                                                  : "";
}

mb_status mb_binding_set_parameter(mb_desc* d, const char* name, double value, char* message,
                                   size_t size) {
  mb_error err;
  const mb_status st = mb_desc_set_named(d, name, value, &err);
  if (st != MB_OK) put(message, size, err.message);
  return st;
}

mb_status mb_binding_set_span(mb_desc* d, double t_end, double step, char* message, size_t size) {
  const double t = t_end > 0 ? t_end : d->settings.t_end, h = step > 0 ? step : d->settings.step;
  if (!(h <= t))
    return fail(message, size, MB_ERR_ARGUMENT, "step %g is longer than the time span %g", h, t);
  d->settings.t_end = t, d->settings.step = h;
  return MB_OK;
}

/* the table being filled by the observer of mb_binding_simulate */
typedef struct table {
  double* values;
  int rows, capacity, width, out_of_memory;
} table;

static int collect(const mb_model* m, const mb_data* d, void* user) {
  table* t = user;
  if (t->rows == t->capacity) {
    const int capacity = t->capacity ? 2 * t->capacity : 256;
    double* grown = realloc(t->values, sizeof(double) * (size_t)capacity * t->width);
    if (!grown) return t->out_of_memory = 1; /* stops the run */
    t->values = grown, t->capacity = capacity;
  }
  double* row = t->values + (size_t)t->rows++ * t->width;
  row[0] = d->t;
  memcpy(row + 1, d->out, sizeof(double) * m->nout);
  return 0;
}

mb_status mb_binding_simulate(const mb_desc* d, double interval, double** values, int* rows,
                              int* columns, char** names, double* psi, char* message, size_t size) {
  *values = NULL, *names = NULL, *rows = *columns = 0;
  mb_desc run = *d; /* the arrays shared and only read; the interval of this run */
  run.settings.output_interval = interval > 0 ? interval : 0;
  mb_error err;
  mb_model* m = NULL;
  if (mb_compile(&run, &m, &err) != MB_OK) {
    put(message, size, err.message);
    return err.status;
  }
  mb_data* data = mb_data_create(m);
  table t = {NULL, 0, 0, 1 + m->nout, 0};
  char* text = malloc((size_t)(m->nout + 1) * MB_LABEL_LEN + 4);
  mb_status st = MB_ERR_MEMORY;
  if (data && text) {
    st = mb_simulate(m, data, collect, &t, &err);
    if (t.out_of_memory) st = MB_ERR_MEMORY;
  }
  if (st == MB_OK) {
    strcpy(text, "t\n");
    for (int c = 0; c < m->nout; c++) {
      strcat(text, m->out_name + MB_LABEL_LEN * c);
      strcat(text, "\n");
    }
    if (psi) memcpy(psi, data->psi, sizeof(double) * m->nfunctional);
    *values = t.values, *names = text, *rows = t.rows, *columns = m->nout;
    t.values = NULL, text = NULL;
  } else if (st == MB_ERR_MEMORY) {
    put(message, size, "out of memory");
  } else {
    put(message, size, err.message);
  }
  free(t.values);
  free(text);
  mb_data_free(data);
  mb_model_free(m);
  return st;
}

mb_status mb_binding_gradient(const mb_desc* d, int method, double* psi, double* grad,
                              char* method_name, char* reason, char* message, size_t size) {
  mb_error err;
  mb_model* m = NULL;
  if (mb_compile(d, &m, &err) != MB_OK) {
    put(message, size, err.message);
    return err.status;
  }
  mb_gradient_info info;
  const mb_status st = mb_gradient(d, m, (mb_method)method, 0, psi, grad, &info, &err);
  mb_model_free(m);
  if (st != MB_OK) {
    put(message, size, err.message);
    return st;
  }
  snprintf(method_name, 16, "%s", mb_method_name(info.method));
  snprintf(reason, 256, "%s", info.reason);
  return MB_OK;
}

/* the binding's observer behind mb_optimize's */
typedef struct relay {
  mb_binding_observer observer;
  void* user;
} relay;

static void relay_evaluation(const mb_opt_evaluation* e, void* user) {
  const relay* r = user;
  r->observer(e->index, e->x, e->nvar, e->objective, e->with_gradient, e->failed, r->user);
}

mb_status mb_binding_optimize(mb_desc* d, const char* algorithm, mb_binding_observer observer,
                              void* user, double* x, char* status, double* objective,
                              int* evaluations, char* message, size_t size) {
  mb_error err;
  mb_opt_result r;
  relay rl = {observer, user};
  const mb_status st =
      mb_optimize(d, algorithm, observer ? relay_evaluation : NULL, &rl, NULL, x, &r, &err);
  if (st != MB_OK) {
    put(message, size, err.message);
    return st;
  }
  snprintf(status, 32, "%s", r.status);
  *objective = r.objective, *evaluations = r.evaluations;
  put(message, size, r.message);
  return MB_OK;
}

void mb_binding_free(void* p) {
  free(p);
}
