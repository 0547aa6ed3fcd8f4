/* Partial derivatives of every output column and every functional (core/outputs/sensor_partials.c,
   core/outputs/functionals.c) against central differences, at random states of models that use every
   sensor type, every term shape and every kind of reference:
   - d/dq, d/dqd, d/dqdd of each output column against differences of its value, grouped by
     sensor type; the values agree with mb_sensors, angles follow the unwrapped branch of d->out;
   - the same for the integrand and the final value of each functional, whose values agree with
     an independent evaluation of the term shapes on d->out;
   - the explicit parameter derivatives (mbd_output_param, mbd_functional_param, through a tangent
     model) against differences of the outputs of models compiled with the parameter moved.
   Central differences use two steps, 1e-6 and 1e-5 relative, and the closer one counts for each
   entry: rounding limits the first on large values, the curvature of smooth_abs the second.
   Each model is extended in memory before it is compiled: outputs of every kind on every body,
   marker, joint coordinate and spring; functionals of every shape and reference kind over all
   output columns; parameters bound to gravity, masses, centres of mass, spring constants, term
   weights, references and smoothing. Run from the repository root. */
#include <cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "mbopt/sensitivity.h"
#include "testing.h"

static const char* models[] = {"tests/models/ok/features_planar.json",
                               "tests/models/ok/features_spatial.json",
                               "tests/models/ok/params_planar.json",
                               "tests/models/ok/params_spatial.json",
                               "problems/fivebar.json",
                               "problems/slider_crank.json",
                               "tests/models/ok/controller_planar.json",
                               "problems/control/pendulum_pid.json"};

#define NSTATE 2                           /* random states per model */
#define LIMIT 1e-6                         /* relative error allowed against central differences */
#define NTYPE (MB_SENSOR_NORMAL_FORCE + 1) /* sensor types */
#define NSTEP 2 /* difference steps; the closer result counts for each entry */

/* central difference steps relative to the variable (at least 1): rounding limits the first on
   large values (squared energies), the curvature of smooth_abs the second */
static const double step_rel[NSTEP] = {1e-6, 1e-5};

static const char* const type_name[] = {"position",
                                        "velocity",
                                        "acceleration",
                                        "angular velocity",
                                        "angular velocity (body axes)",
                                        "angles",
                                        "joint",
                                        "joint rate",
                                        "spring length",
                                        "spring force",
                                        "kinetic energy",
                                        "gravity energy",
                                        "elastic energy",
                                        "total energy",
                                        "control",
                                        "control error",
                                        "reaction force",
                                        "reaction torque",
                                        "multipliers",
                                        "friction force",
                                        "normal force"};
_Static_assert(sizeof type_name / sizeof *type_name == NTYPE, "a name for every sensor type");

/* random q near the approximate initial pose, random qd, qdd, multipliers and t */
static void random_state(const mb_model* m, mb_data* d, unsigned* seed) {
  for (int e = 0; e < m->nelem; e++)
    if (m->elem_qadr[e] >= 0)
      for (int k = 0; k < m->dim; k++)
        d->q[m->elem_qadr[e] + k] = m->elem_q0[3 * e + k] + 0.1 * mbt_uniform(seed);
  for (int i = 0; i < m->nq; i++) d->qd[i] = mbt_uniform(seed), d->qdd[i] = mbt_uniform(seed);
  for (int i = 0; i < m->ncon; i++) d->lambda[i] = 10 * mbt_uniform(seed);
  d->t = 1.2 + mbt_uniform(seed);
}

/* largest difference of a (n) from the closer of the differences b[k] (NSTEP x n) over the
   entries, relative to the larger of 1 and the largest |a| */
static double rel_err(int n, const double* a, const double* b) {
  double diff = 0, scale = 1;
  for (int i = 0; i < n; i++) {
    double e = INFINITY;
    for (int k = 0; k < NSTEP; k++) e = fmin(e, fabs(a[i] - b[(size_t)k * n + i]));
    diff = fmax(diff, e), scale = fmax(scale, fabs(a[i]));
  }
  return diff / scale;
}

/* ---------------------------------------------------------------------------------------------
   models extended in memory */

static char* read_text(const char* path) {
  FILE* f = fopen(path, "rb");
  char* text = NULL;
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  text = calloc((size_t)n + 1, 1);
  if (text && fread(text, 1, (size_t)n, f) != (size_t)n) free(text), text = NULL;
  fclose(f);
  return text;
}

/* the object member `key`, created empty when absent (arrays when `array`) */
static cJSON* member(cJSON* obj, const char* key, int array) {
  cJSON* v = cJSON_GetObjectItemCaseSensitive(obj, key);
  if (!v) v = array ? cJSON_AddArrayToObject(obj, key) : cJSON_AddObjectToObject(obj, key);
  return v;
}

/* replaces a positive number (member `key` of obj, or entry `index` of array obj) by "$name",
   a new parameter with its value */
static void bind(cJSON* root, cJSON* obj, const char* key, int index, const char* name) {
  char ref[80];
  cJSON* v = key ? cJSON_GetObjectItemCaseSensitive(obj, key) : cJSON_GetArrayItem(obj, index);
  if (!cJSON_IsNumber(v) || !(v->valuedouble > 0)) return;
  cJSON_AddNumberToObject(member(root, "parameters", 0), name, v->valuedouble);
  snprintf(ref, sizeof ref, "$%s", name);
  if (key)
    cJSON_ReplaceItemInObjectCaseSensitive(obj, key, cJSON_CreateString(ref));
  else
    cJSON_ReplaceItemInArray(obj, index, cJSON_CreateString(ref));
}

/* parameters on gravity, masses, centres of mass and spring constants, and the ones the
   generated functionals use */
static void add_parameters(cJSON* root, int dim) {
  char name[64];
  cJSON* g = cJSON_GetObjectItemCaseSensitive(root, "gravity");
  if (g) {
    /* gravity points down: bind its magnitude through a negated copy */
    cJSON* last = cJSON_GetArrayItem(g, dim - 1);
    if (cJSON_IsNumber(last) && last->valuedouble < 0) {
      cJSON_AddNumberToObject(member(root, "parameters", 0), "t_g", last->valuedouble);
      cJSON_ReplaceItemInArray(g, dim - 1, cJSON_CreateString("$t_g"));
    }
  }
  int i = 0;
  for (cJSON* b = member(root, "bodies", 1)->child; b; b = b->next, i++) {
    snprintf(name, sizeof name, "t_m%d", i);
    bind(root, b, "mass", 0, name);
    cJSON* com = cJSON_GetObjectItemCaseSensitive(b, "com");
    snprintf(name, sizeof name, "t_cx%d", i);
    if (com) bind(root, com, NULL, 0, name);
  }
  static const char* const spring_keys[] = {"stiffness", "damping", "natural_length", "force"};
  i = 0;
  for (cJSON* f = member(root, "forces", 1)->child; f; f = f->next, i++) {
    const cJSON* type = cJSON_GetObjectItemCaseSensitive(f, "type");
    if (!cJSON_IsString(type) || strcmp(type->valuestring, "spring") != 0) continue;
    for (int k = 0; k < 4; k++) {
      snprintf(name, sizeof name, "t_%s%d", spring_keys[k], i);
      bind(root, f, spring_keys[k], 0, name);
    }
  }
  cJSON* p = member(root, "parameters", 0);
  cJSON_AddNumberToObject(p, "t_wf", 1.3);
  cJSON_AddNumberToObject(p, "t_rf", 0.2);
  cJSON_AddNumberToObject(p, "t_ef", 0.05);
  cJSON_AddNumberToObject(p, "t_om", 2.5);
}

/* appends output {"name": "g<n>_<type>_<label>", "type": type, key: ref (+ component)} */
static void add_output(cJSON* outputs, const char* type, const char* key, const char* ref,
                       const char* component, const char* coordinate) {
  char name[64], *p;
  snprintf(name, sizeof name, "g%d_%s_%s", cJSON_GetArraySize(outputs), type, ref ? ref : "");
  for (p = name; *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9')))
      *p = '_';
  cJSON* o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "name", name);
  cJSON_AddStringToObject(o, "type", type);
  if (key) cJSON_AddStringToObject(o, key, ref);
  if (component) cJSON_AddStringToObject(o, "component", component);
  if (coordinate) cJSON_AddStringToObject(o, "coordinate", coordinate);
  cJSON_AddItemToArray(outputs, o);
}

/* outputs of every type on every body, marker, joint coordinate and spring */
static void add_outputs(cJSON* root, int dim) {
  static const char* const point_types[] = {"position", "velocity", "acceleration"};
  char ref[160];
  cJSON* outputs = member(root, "outputs", 1);
  cJSON* ground = cJSON_GetObjectItemCaseSensitive(root, "ground");
  cJSON* gm = ground ? cJSON_GetObjectItemCaseSensitive(ground, "markers") : NULL;
  if (gm && gm->child) {
    snprintf(ref, sizeof ref, "ground.%s", gm->child->string);
    add_output(outputs, "position", "marker", ref, NULL, NULL);
  }
  int first = 1;
  for (cJSON* b = member(root, "bodies", 1)->child; b; b = b->next) {
    const char* body = cJSON_GetObjectItemCaseSensitive(b, "name")->valuestring;
    add_output(outputs, "angles", "body", body, NULL, NULL);
    add_output(outputs, "angular_velocity", "body", body, NULL, NULL);
    if (first) {
      /* single components of vector outputs */
      add_output(outputs, "angles", "body", body, dim == 2 ? "angle" : "roll", NULL);
      add_output(outputs, "angular_velocity", "body", body, "z", NULL);
    }
    cJSON* mk = cJSON_GetObjectItemCaseSensitive(b, "markers");
    for (cJSON* k = mk ? mk->child : NULL; k; k = k->next) {
      snprintf(ref, sizeof ref, "%s.%s", body, k->string);
      for (int t = 0; t < 3; t++) add_output(outputs, point_types[t], "marker", ref, NULL, NULL);
      if (first) add_output(outputs, "position", "marker", ref, "y", NULL);
      first = 0;
    }
  }
  for (cJSON* j = member(root, "joints", 1)->child; j; j = j->next) {
    const char* joint = cJSON_GetObjectItemCaseSensitive(j, "name")->valuestring;
    const char* type = cJSON_GetObjectItemCaseSensitive(j, "type")->valuestring;
    int angle = !strcmp(type, "revolute") || !strcmp(type, "cylindrical");
    int translation = !strcmp(type, "prismatic") || !strcmp(type, "cylindrical");
    for (int r = 0; r < 2; r++) {
      const char* kind = r ? "joint_rate" : "joint";
      if (angle) add_output(outputs, kind, "joint", joint, NULL, "angle");
      if (translation) add_output(outputs, kind, "joint", joint, NULL, "translation");
    }
    /* reactions in both frames, and the multipliers */
    add_output(outputs, "reaction_force", "joint", joint, NULL, NULL);
    add_output(outputs, "reaction_torque", "joint", joint, NULL, NULL);
    cJSON_AddStringToObject(cJSON_GetArrayItem(outputs, cJSON_GetArraySize(outputs) - 1), "frame",
                            "joint");
    add_output(outputs, "reaction_force", "joint", joint, NULL, NULL);
    cJSON_AddStringToObject(cJSON_GetArrayItem(outputs, cJSON_GetArraySize(outputs) - 1), "frame",
                            "joint");
    add_output(outputs, "reaction_torque", "joint", joint, NULL, NULL);
    add_output(outputs, "multipliers", "joint", joint, NULL, NULL);
  }
  for (cJSON* f = member(root, "forces", 1)->child; f; f = f->next) {
    if (strcmp(cJSON_GetObjectItemCaseSensitive(f, "type")->valuestring, "spring") != 0) continue;
    const char* force = cJSON_GetObjectItemCaseSensitive(f, "name")->valuestring;
    add_output(outputs, "spring_length", "force", force, NULL, NULL);
    add_output(outputs, "spring_force", "force", force, NULL, NULL);
  }
  add_output(outputs, "kinetic_energy", NULL, NULL, NULL, NULL);
  add_output(outputs, "gravity_energy", NULL, NULL, NULL, NULL);
  add_output(outputs, "elastic_energy", NULL, NULL, NULL, NULL);
  add_output(outputs, "total_energy", NULL, NULL, NULL, NULL);
}

/* references of the generated functionals, by kind */
#define NREF 6
static const char* const ref_name[NREF] = {"none",       "constant", "parameter",
                                           "polynomial", "harmonic", "table"};
static const char* const ref_json[NREF] = {
    NULL,
    "0.3",
    "\"$t_rf\"",
    "{\"polynomial\": [0.1, \"$t_rf\", -0.2]}",
    "{\"harmonic\": {\"offset\": 0.1, \"amplitude\": \"$t_rf\", \"omega\": \"$t_om\", \"phase\": "
    "\"$t_rf\"}}",
    "{\"table\": {\"t\": [0, 0.6, 1.3, 2.5], \"values\": [0.1, \"$t_rf\", -0.3, 0.2]}}"};

/* functionals "g_<shape>_<reference>" for every shape and reference kind, each over a third of
   the output columns, alternating integral and final terms, weights and smoothing */
static void add_functionals(cJSON* root, const mb_model* m) {
  static const char* const shapes[] = {"squared_error", "smooth_abs", "value"};
  char name[64];
  cJSON* list = member(root, "functionals", 1);
  int index = 0;
  for (int s = 0; s < 3; s++)
    for (int r = 0; r < (s == 2 ? 1 : NREF); r++, index++) {
      cJSON* f = cJSON_CreateObject();
      snprintf(name, sizeof name, "g_%s_%s", shapes[s], ref_name[r]);
      cJSON_AddStringToObject(f, "name", name);
      cJSON* integral = cJSON_AddArrayToObject(f, "integral");
      cJSON* final = cJSON_AddArrayToObject(f, "final");
      for (int col = 0; col < m->nout; col++) {
        if ((col + index) % 3 != 0) continue;
        cJSON* t = cJSON_CreateObject();
        cJSON_AddStringToObject(t, "output", m->out_name + MB_LABEL_LEN * col);
        cJSON_AddStringToObject(t, "shape", shapes[s]);
        if (col % 4 == 0)
          cJSON_AddStringToObject(t, "weight", "$t_wf");
        else
          cJSON_AddNumberToObject(t, "weight", 0.7);
        if (ref_json[r]) cJSON_AddItemToObject(t, "reference", cJSON_Parse(ref_json[r]));
        if (s == 1) {
          if (col % 2)
            cJSON_AddStringToObject(t, "epsilon", "$t_ef");
          else
            cJSON_AddNumberToObject(t, "epsilon", 0.02);
        }
        cJSON_AddItemToArray(col % 2 ? final : integral, t);
      }
      cJSON_AddItemToArray(list, f);
    }
}

/* parses and compiles a model text; prints the error and returns NULL on failure */
static mb_model* compile_text(const char* text, const char* source, mb_desc* d) {
  mb_error err;
  mb_model* m = NULL;
  if (mb_desc_parse_json(text, source, d, &err) != MB_OK || mb_compile(d, &m, &err) != MB_OK) {
    printf("     %s\n", err.message);
    return NULL;
  }
  return m;
}

/* the extended model of a file: its JSON tree (for parameter changes), description and model */
typedef struct test_model {
  const char* name;
  cJSON* root;
  mb_desc desc;
  mb_model* m;
} test_model;

static int build_model(const char* path, test_model* tm) {
  memset(tm, 0, sizeof *tm);
  tm->name = strrchr(path, '/') + 1;
  char* text = read_text(path);
  tm->root = text ? cJSON_Parse(text) : NULL;
  free(text);
  if (!tm->root) return 0;
  const cJSON* dim = cJSON_GetObjectItemCaseSensitive(tm->root, "dimension");
  add_parameters(tm->root, dim ? dim->valueint : 2);
  add_outputs(tm->root, dim ? dim->valueint : 2);

  /* the output columns decide the functional terms */
  mb_desc d0;
  text = cJSON_PrintUnformatted(tm->root);
  mb_model* m0 = compile_text(text, tm->name, &d0);
  free(text);
  if (!m0) return 0;
  add_functionals(tm->root, m0);
  mb_model_free(m0);
  mb_desc_free(&d0);

  text = cJSON_PrintUnformatted(tm->root);
  tm->m = compile_text(text, tm->name, &tm->desc);
  free(text);
  return tm->m != NULL;
}

static void free_model(test_model* tm) {
  cJSON_Delete(tm->root);
  mb_desc_free(&tm->desc);
  mb_model_free(tm->m);
}

/* the model compiled with parameter p set to value */
static mb_model* model_with_param(test_model* tm, int p, double value) {
  cJSON* v = cJSON_GetObjectItemCaseSensitive(
      cJSON_GetObjectItemCaseSensitive(tm->root, "parameters"), tm->desc.param_name[p]);
  const double v0 = v->valuedouble;
  cJSON_SetNumberValue(v, value);
  char* text = cJSON_PrintUnformatted(tm->root);
  cJSON_SetNumberValue(v, v0);
  mb_desc d;
  mb_model* m = compile_text(text, tm->name, &d);
  free(text);
  mb_desc_free(&d);
  return m;
}

/* ---------------------------------------------------------------------------------------------
   derivatives against differences */

/* a scalar of the state: output column `which`, or functional `which` (final or integrand) */
typedef double (*state_fn)(const mb_model* m, const mb_data* d, int which, int final);

static double output_value(const mb_model* m, const mb_data* d, int col, int final) {
  (void) final;
  return mbd_output_partials(m, d, col, NULL, NULL, NULL);
}

static double functional_value(const mb_model* m, const mb_data* d, int f, int final) {
  return mb_functional_value(m, d, f, final);
}

/* central differences of fn along each entry of x (d->q, d->qd or d->qdd) into g (NSTEP x nq,
   one row per step) */
static void fd_gradient(const mb_model* m, mb_data* d, double* x, state_fn fn, int which, int final,
                        double* g) {
  for (int k = 0; k < NSTEP; k++)
    for (int i = 0; i < m->nq; i++) {
      const double x0 = x[i], h = step_rel[k] * fmax(1, fabs(x0));
      x[i] = x0 + h;
      const double plus = fn(m, d, which, final);
      x[i] = x0 - h;
      const double minus = fn(m, d, which, final);
      x[i] = x0;
      g[(size_t)k * m->nq + i] = (plus - minus) / (2 * h);
    }
}

/* worst errors of the three partials of one scalar: analytic ga[3 x nq] against differences */
static void compare_partials(const mb_model* m, mb_data* d, state_fn fn, int which, int final,
                             double* ga, double* gfd, double worst[3]) {
  double* x[3] = {d->q, d->qd, d->qdd};
  for (int k = 0; k < 3; k++) {
    fd_gradient(m, d, x[k], fn, which, final, gfd);
    worst[k] = fmax(worst[k], rel_err(m->nq, ga + (size_t)k * m->nq, gfd));
  }
}

/* the sensor type of output column col */
static int column_type(const mb_model* m, int col) {
  for (int i = 0; i < m->nsensor; i++)
    if (col >= m->sensor_outadr[i] && col < m->sensor_outadr[i] + m->sensor_outnum[i])
      return m->sensor_type[i];
  return -1;
}

/* whether output column col is an angle (unwrapped by mb_sensors) */
static int column_is_angle(const mb_model* m, int col) {
  for (int i = 0; i < m->nsensor; i++)
    if (col >= m->sensor_outadr[i] && col < m->sensor_outadr[i] + m->sensor_outnum[i])
      return m->sensor_type[i] == MB_SENSOR_BODY_ANGLES ||
             (m->sensor_type[i] == MB_SENSOR_JOINT_COORDINATE &&
              m->sensor_ref[2 * i + 1] == MB_COORD_ANGLE);
  return 0;
}

/* an independent value of functional f: the term shapes on the recorded outputs d->out */
static double functional_from_out(const mb_model* m, const mb_data* d, int f, int final) {
  double sum = 0;
  for (int j = 0; j < m->nfterm; j++) {
    if (m->fterm_functional[j] != f || m->fterm_final[j] != final) continue;
    double s = d->out[m->fterm_column[j]], r = 0, w = m->fterm_weight[j], eps = m->fterm_eps[j];
    if (m->fterm_ref[j] >= 0) mb_func_eval(m, m->fterm_ref[j], d->t, &r, NULL, NULL);
    if (m->fterm_shape[j] == MB_SHAPE_SQUARED_ERROR) sum += w * (s - r) * (s - r);
    if (m->fterm_shape[j] == MB_SHAPE_VALUE) sum += w * s;
    if (m->fterm_shape[j] == MB_SHAPE_SMOOTH_ABS)
      sum += w * (sqrt((s - r) * (s - r) + eps * eps) - eps);
  }
  return sum;
}

/* the partials of every output and functional with respect to the multipliers against central
   differences */
static void check_lambda_partials(mbt_tally* t, test_model* tm, mb_data* d) {
  const mb_model* m = tm->m;
  const int nc = m->ncon;
  double* ga = calloc((size_t)nc + 1, sizeof(double));
  double worst = 0, fworst = 0;
  int reading = 0;
  char what[200];
  for (int col = 0; col < m->nout + 2 * m->nfunctional; col++) {
    const int f = (col - m->nout) / 2, final = (col - m->nout) % 2, is_f = col >= m->nout;
    if (is_f)
      reading += mbd_functional_lambda(m, d, f, final, ga) > 0;
    else
      mbd_output_lambda(m, d, col, ga);
    double e = 0;
    for (int i = 0; i < nc; i++) {
      double ei = INFINITY;
      for (int k = 0; k < NSTEP; k++) {
        const double l0 = d->lambda[i], h = step_rel[k] * fmax(1, fabs(l0));
        d->lambda[i] = l0 + h;
        double plus = is_f ? mb_functional_value(m, d, f, final) : output_value(m, d, col, 0);
        d->lambda[i] = l0 - h;
        double minus = is_f ? mb_functional_value(m, d, f, final) : output_value(m, d, col, 0);
        d->lambda[i] = l0;
        ei = fmin(ei, fabs(ga[i] - (plus - minus) / (2 * h)) / fmax(1, fabs(ga[i])));
      }
      e = fmax(e, ei);
    }
    if (is_f)
      fworst = fmax(fworst, e);
    else
      worst = fmax(worst, e);
  }
  snprintf(what, sizeof what, "%s: outputs d/dlambda", tm->name);
  mbt_check(t, worst < LIMIT, what, worst, LIMIT);
  snprintf(what, sizeof what, "%s: functionals d/dlambda (%d read multipliers)", tm->name, reading);
  mbt_check(t, fworst < LIMIT && reading > 0, what, fworst, LIMIT);
  free(ga);
}

static void check_state_partials(mbt_tally* t, test_model* tm) {
  const mb_model* m = tm->m;
  const int nq = m->nq;
  char what[200];
  mb_data* d = mb_data_create(m);
  double* ga = calloc(3 * (size_t)nq + 1, sizeof(double));
  double* gfd = calloc(NSTEP * (size_t)nq + 1, sizeof(double));
  double worst[NTYPE][3] = {{0}}, fworst[64][3] = {{0}};
  int ncol[NTYPE] = {0};
  double value_diff = 0, fvalue_diff = 0, unwrap_diff = 0;
  int nangle = 0;
  unsigned seed = 2024;
  const int nf = m->nfunctional < 64 ? m->nfunctional : 64;

  for (int s = 0; s < NSTATE; s++) {
    random_state(m, d, &seed);
    d->have_unwrap = 0;
    mb_sensors(m, d);

    /* outputs: values as recorded, partials against differences */
    for (int col = 0; col < m->nout; col++) {
      const int type = column_type(m, col);
      double v = mbd_output_partials(m, d, col, ga, ga + nq, ga + 2 * nq);
      value_diff = fmax(value_diff, fabs(v - d->out[col]) / fmax(1, fabs(d->out[col])));
      compare_partials(m, d, output_value, col, 0, ga, gfd, worst[type]);
      if (s == 0) ncol[type]++;
      if (column_is_angle(m, col)) {
        /* another turn recorded: the value follows it */
        nangle += s == 0;
        d->out[col] += 4 * MB_PI;
        unwrap_diff = fmax(unwrap_diff, fabs(output_value(m, d, col, 0) - v - 4 * MB_PI));
        d->out[col] -= 4 * MB_PI;
      }
    }

    /* functionals: integrands and final values */
    for (int f = 0; f < nf; f++)
      for (int final = 0; final < 2; final++) {
        double v = mbd_functional_partials(m, d, f, final, ga, ga + nq, ga + 2 * nq);
        double ref = functional_from_out(m, d, f, final);
        fvalue_diff = fmax(fvalue_diff, fabs(v - ref) / fmax(1, fabs(ref)));
        fvalue_diff = fmax(fvalue_diff, fabs(v - mb_functional_value(m, d, f, final)));
        compare_partials(m, d, functional_value, f, final, ga, gfd, fworst[f]);
      }
  }

  check_lambda_partials(t, tm, d);
  snprintf(what, sizeof what, "%s: %d output values equal mb_sensors", tm->name, m->nout);
  mbt_check(t, value_diff < 1e-14, what, value_diff, 1e-14);
  snprintf(what, sizeof what, "%s: %d angle outputs follow the recorded branch", tm->name, nangle);
  mbt_check(t, unwrap_diff < 1e-12, what, unwrap_diff, 1e-12);
  for (int type = 0; type < NTYPE; type++) {
    if (!ncol[type]) continue;
    static const char* const wrt[3] = {"q", "qd", "qdd"};
    for (int k = 0; k < 3; k++) {
      snprintf(what, sizeof what, "%s: %s (%d columns) d/d%s", tm->name, type_name[type],
               ncol[type], wrt[k]);
      mbt_check(t, worst[type][k] < LIMIT, what, worst[type][k], LIMIT);
    }
  }
  snprintf(what, sizeof what, "%s: %d functional values from the recorded outputs", tm->name, nf);
  mbt_check(t, fvalue_diff < 1e-12, what, fvalue_diff, 1e-12);
  for (int f = 0; f < nf; f++) {
    double w = fmax(fworst[f][0], fmax(fworst[f][1], fworst[f][2]));
    snprintf(what, sizeof what, "%s: functional %s d/d(q, qd, qdd)", tm->name,
             m->functional_name + MB_NAME_LEN * f);
    mbt_check(t, w < LIMIT, what, w, LIMIT);
  }
  free(ga);
  free(gfd);
  mb_data_free(d);
}

/* explicit parameter derivatives at fixed states against differences of recompiled models */
static void check_param_partials(mbt_tally* t, test_model* tm) {
  const mb_model* m = tm->m;
  char what[200];
  mb_data* d = mb_data_create(m);
  unsigned seed = 777;
  for (int p = 0; p < tm->desc.nparam; p++) {
    mb_error err;
    mb_model* dm = NULL;
    const double v0 = tm->desc.param_value[p];
    double h[NSTEP];
    if (mbd_model_tangent(&tm->desc, m, p, &dm, &err) != MB_OK) {
      printf("     %s\n", err.message);
      snprintf(what, sizeof what, "%s: tangent model of %s", tm->name, tm->desc.param_name[p]);
      mbt_check(t, 0, what, 1, 0);
      continue;
    }
    mb_model *mp[NSTEP], *mm[NSTEP];
    int built = 1;
    for (int k = 0; k < NSTEP; k++) {
      h[k] = step_rel[k] * fmax(1, fabs(v0));
      mp[k] = model_with_param(tm, p, v0 + h[k]);
      mm[k] = model_with_param(tm, p, v0 - h[k]);
      built &= mp[k] && mm[k];
    }
    double worst = built ? 0 : INFINITY, fworst = worst;
    int where = -1;
    for (int s = 0; s < NSTATE && built; s++) {
      random_state(m, d, &seed);
      d->have_unwrap = 0;
      mb_sensors(m, d);
      for (int col = 0; col < m->nout; col++) {
        const double a = mbd_output_param(m, dm, d, col);
        double e = INFINITY;
        for (int k = 0; k < NSTEP; k++) {
          double fd =
              (output_value(mp[k], d, col, 0) - output_value(mm[k], d, col, 0)) / (2 * h[k]);
          e = fmin(e, fabs(a - fd) / fmax(1, fabs(a)));
        }
        if (e > worst) worst = e, where = col;
      }
      for (int f = 0; f < m->nfunctional; f++)
        for (int final = 0; final < 2; final++) {
          const double a = mbd_functional_param(m, dm, d, f, final);
          double e = INFINITY;
          for (int k = 0; k < NSTEP; k++) {
            double fd = (mb_functional_value(mp[k], d, f, final) -
                         mb_functional_value(mm[k], d, f, final)) /
                        (2 * h[k]);
            e = fmin(e, fabs(a - fd) / fmax(1, fabs(a)));
          }
          fworst = fmax(fworst, e);
        }
    }
    snprintf(what, sizeof what, "%s: d/d%s of %d outputs (worst %s)", tm->name,
             tm->desc.param_name[p], m->nout,
             where >= 0 ? m->out_name + MB_LABEL_LEN * where : "-");
    mbt_check(t, worst < LIMIT, what, worst, LIMIT);
    snprintf(what, sizeof what, "%s: d/d%s of %d functionals", tm->name, tm->desc.param_name[p],
             m->nfunctional);
    mbt_check(t, fworst < LIMIT, what, fworst, LIMIT);
    mb_model_free(dm);
    for (int k = 0; k < NSTEP; k++) mb_model_free(mp[k]), mb_model_free(mm[k]);
  }
  mb_data_free(d);
}

/* ---------------------------------------------------------------------------------------------
   odds and ends */

static void check_misc(mbt_tally* t, test_model* tm) {
  const mb_model* m = tm->m;
  char what[200];
  mb_data* d = mb_data_create(m);
  unsigned seed = 99;
  random_state(m, d, &seed);
  mb_sensors(m, d);

  /* no scratch: the workspace's work array is left alone */
  const size_t nwork = 4 * (size_t)m->nq + 2 * (size_t)m->ncon;
  for (size_t i = 0; i < nwork; i++) d->work[i] = (double)i;
  double* g = calloc(3 * (size_t)m->nq + 1, sizeof(double));
  for (int col = 0; col < m->nout; col++) mbd_output_partials(m, d, col, g, g + m->nq, NULL);
  for (int f = 0; f < m->nfunctional; f++) mbd_functional_partials(m, d, f, 1, g, NULL, g);
  int kept = 1;
  for (size_t i = 0; i < nwork; i++) kept &= d->work[i] == (double)i;
  snprintf(what, sizeof what, "%s: partials leave d->work untouched", tm->name);
  mbt_check(t, kept, what, !kept, 0);

  /* out-of-range columns and functionals give NaN */
  int nan = isnan(mbd_output_partials(m, d, m->nout, g, NULL, NULL)) &&
            isnan(mbd_output_partials(m, d, -1, NULL, NULL, NULL)) &&
            isnan(mbd_functional_partials(m, d, m->nfunctional, 0, g, NULL, NULL)) &&
            isnan(mb_functional_value(m, d, -1, 1));
  snprintf(what, sizeof what, "%s: unknown column or functional gives NaN", tm->name);
  mbt_check(t, nan, what, !nan, 0);
  free(g);
  mb_data_free(d);
}

/* a term on a column the model does not have is an error of the compiler */
static void check_unknown_column(mbt_tally* t) {
  const char* text =
      "{\"dimension\": 2, \"bodies\": [{\"name\": \"b\", \"mass\": 1, \"inertia\": 1}],"
      " \"outputs\": [{\"name\": \"v\", \"type\": \"velocity\", \"marker\": \"ground.O\"}],"
      " \"ground\": {\"markers\": {\"O\": {\"point\": [0, 0]}}},"
      " \"functionals\": [{\"name\": \"psi\", \"integral\": [{\"output\": \"v\"}]}]}";
  mb_desc d;
  mb_error err;
  mb_model* m = NULL;
  mb_status s = mb_desc_parse_json(text, "unknown column", &d, &err);
  if (s == MB_OK) s = mb_compile(&d, &m, &err);
  int ok = s == MB_ERR_MODEL && strstr(err.message, "functionals[0] (psi)") &&
           strstr(err.message, "no output column \"v\"");
  if (!ok) printf("     %s\n", err.message);
  mbt_check(t, ok, "functional on a vector output's name (no such column) is rejected", !ok, 0);
  mb_model_free(m);
  mb_desc_free(&d);
}

int main(void) {
  mbt_tally t = {0};
  for (size_t k = 0; k < sizeof models / sizeof models[0]; k++) {
    test_model tm;
    if (!build_model(models[k], &tm)) {
      printf("FAIL cannot build the extended model of %s\n", models[k]);
      t.failed++;
      free_model(&tm);
      continue;
    }
    check_state_partials(&t, &tm);
    check_param_partials(&t, &tm);
    check_misc(&t, &tm);
    free_model(&tm);
  }
  check_unknown_column(&t);
  return mbt_finish(&t);
}
