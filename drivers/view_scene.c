/* The motion of a design recorded for an HTML page (view_scene.h). */
#include "view_scene.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* ---------------------------------------------------------------------------------------------
   body frames from the model's linear vectors */

static double dot3(const double* a, const double* b) {
  return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}

static void cross3(const double* a, const double* b, double* c) {
  c[0] = a[1] * b[2] - a[2] * b[1];
  c[1] = a[2] * b[0] - a[0] * b[2];
  c[2] = a[0] * b[1] - a[1] * b[0];
}

static void normalise3(double* a) {
  const double n = sqrt(dot3(a, a));
  if (n > 0)
    for (int k = 0; k < 3; k++) a[k] /= n;
}

/* A body's frame at q: origin o and the rotation R whose columns are its axes (row-major),
   made orthonormal (the constraints hold them so to their tolerance); the ground when b < 0. */
static void body_frame(const mb_model* m, int b, const double* q, double* o, double R[9]) {
  double x[3] = {1, 0, 0}, y[3] = {0, 1, 0}, z[3] = {0, 0, 1};
  o[0] = o[1] = o[2] = 0;
  if (b >= 0) {
    mb_lvec_eval(m, m->body_origin[b], q, o);
    mb_lvec_eval(m, m->body_axes[3 * b], q, x);
    mb_lvec_eval(m, m->body_axes[3 * b + 1], q, y);
    normalise3(x);
    const double xy = dot3(x, y);
    for (int k = 0; k < 3; k++) y[k] -= xy * x[k];
    normalise3(y);
    cross3(x, y, z);
  }
  for (int r = 0; r < 3; r++) R[3 * r] = x[r], R[3 * r + 1] = y[r], R[3 * r + 2] = z[r];
}

/* unit quaternion (w, x, y, z) of a rotation matrix (row-major) */
static void quaternion(const double R[9], double* qt) {
  const double tr = R[0] + R[4] + R[8];
  if (tr > 0) {
    const double s = 2 * sqrt(tr + 1);
    qt[0] = s / 4, qt[1] = (R[7] - R[5]) / s, qt[2] = (R[2] - R[6]) / s, qt[3] = (R[3] - R[1]) / s;
  } else if (R[0] > R[4] && R[0] > R[8]) {
    const double s = 2 * sqrt(1 + R[0] - R[4] - R[8]);
    qt[0] = (R[7] - R[5]) / s, qt[1] = s / 4, qt[2] = (R[1] + R[3]) / s, qt[3] = (R[2] + R[6]) / s;
  } else if (R[4] > R[8]) {
    const double s = 2 * sqrt(1 + R[4] - R[0] - R[8]);
    qt[0] = (R[2] - R[6]) / s, qt[1] = (R[1] + R[3]) / s, qt[2] = s / 4, qt[3] = (R[5] + R[7]) / s;
  } else {
    const double s = 2 * sqrt(1 + R[8] - R[0] - R[4]);
    qt[0] = (R[3] - R[1]) / s, qt[1] = (R[2] + R[6]) / s, qt[2] = (R[5] + R[7]) / s, qt[3] = s / 4;
  }
}

/* ---------------------------------------------------------------------------------------------
   JSON text */

void view_json_string(FILE* f, const char* text) {
  fputc('"', f);
  for (const unsigned char* c = (const unsigned char*)text; *c; c++) {
    if (*c == '"' || *c == '\\')
      fprintf(f, "\\%c", *c);
    else if (*c < 0x20 || *c == '<' || *c == 0x7f)
      fprintf(f, "\\u%04x", *c);
    else
      fputc(*c, f);
  }
  fputc('"', f);
}

/* a number as JSON: %.*g, null when not finite */
static void number(FILE* f, double v, int digits) {
  if (isfinite(v))
    fprintf(f, "%.*g", digits, v);
  else
    fputs("null", f);
}

static void vector(FILE* f, const double* v, int n, int digits) {
  fputc('[', f);
  for (int k = 0; k < n; k++) {
    if (k) fputc(',', f);
    number(f, v[k], digits);
  }
  fputc(']', f);
}

/* the text a memory stream (open_memstream) wrote, or NULL when it failed */
static char* stream_text(FILE* f, char** text) {
  if (fclose(f) == 0) return *text;
  free(*text);
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
   the geometry at t = 0 */

/* the model's marker of a description's marker: ground markers first, then each body's */
static int marker_index(const mb_desc* d, int body, int marker) {
  int k = d->nground_marker;
  if (body < 0) return marker;
  for (int b = 0; b < body; b++) k += d->body[b].nmarker;
  return k + marker;
}

/* a point or direction (lvec lv at q) in body b's frame (the ground's: global) */
static void local(const mb_model* m, int b, int lv, const double* q, int direction, double* out) {
  double o[3], R[9], v[3];
  body_frame(m, b, q, o, R);
  mb_lvec_eval(m, lv, q, v);
  if (!direction)
    for (int k = 0; k < 3; k++) v[k] -= o[k];
  for (int k = 0; k < 3; k++) out[k] = R[k] * v[0] + R[3 + k] * v[1] + R[6 + k] * v[2];
}

/* "p":[..] and, when the marker has one, "axis":[..] of marker (body, marker) in its body's
   frame; a planar model's joint axis is the plane's normal */
static void marker_place(FILE* f, const mb_desc* d, const mb_model* m, const double* q, int body,
                         int marker, const char* key) {
  const int k = marker_index(d, body, marker);
  double p[3];
  local(m, body, m->marker_point[k], q, 0, p);
  fprintf(f, "\"%s\":", key);
  vector(f, p, 3, 9);
  if (m->marker_axis[k] >= 0) {
    double a[3];
    local(m, body, m->marker_axis[k], q, 1, a);
    fprintf(f, ",\"%saxis\":", key);
    vector(f, a, 3, 9);
  }
}

/* The scene at t = 0 as a JSON object: dimension, gravity, the ground's markers, each body's
   mass, inertia, centre of mass and markers in its frame, the joints at their first marker
   and the force elements at theirs. */
static char* geometry_json(const mb_desc* d, const mb_model* m, const double* q) {
  char* text = NULL;
  size_t size = 0;
  FILE* f = open_memstream(&text, &size);
  if (!f) return NULL;
  fprintf(f, "{\"dim\":%d,\"gravity\":", m->dim);
  vector(f, m->gravity, 3, 9);
  fputs(",\"ground\":[", f);
  for (int k = 0; k < d->nground_marker; k++) {
    fprintf(f, "%s{\"name\":", k ? "," : "");
    view_json_string(f, d->ground_marker[k].name);
    fputc(',', f);
    marker_place(f, d, m, q, -1, k, "p");
    fputc('}', f);
  }
  fputs("],\"bodies\":[", f);
  for (int b = 0; b < d->nbody; b++) {
    const mb_body_desc* body = &d->body[b];
    double com[3], inertia[6];
    local(m, b, m->body_com[b], q, 0, com);
    for (int k = 0; k < 6; k++) inertia[k] = body->inertia[k].value;
    fprintf(f, "%s{\"name\":", b ? "," : "");
    view_json_string(f, body->name);
    fputs(",\"mass\":", f);
    number(f, m->body_mass[b], 9);
    fputs(",\"inertia\":", f);
    vector(f, inertia, 6, 9);
    fputs(",\"com\":", f);
    vector(f, com, 3, 9);
    fputs(",\"markers\":[", f);
    for (int k = 0; k < body->nmarker; k++) {
      fprintf(f, "%s{\"name\":", k ? "," : "");
      view_json_string(f, body->marker[k].name);
      fputc(',', f);
      marker_place(f, d, m, q, b, k, "p");
      fputc('}', f);
    }
    fputs("]}", f);
  }
  fputs("],\"joints\":[", f);
  for (int j = 0; j < d->njoint; j++) {
    const mb_joint_desc* jd = &d->joint[j];
    fprintf(f, "%s{\"name\":", j ? "," : "");
    view_json_string(f, jd->name);
    fprintf(f, ",\"type\":\"%s\",\"body\":%d,\"body2\":%d,", mb_joint_type_name(jd->type),
            jd->body[0], jd->body[1]);
    marker_place(f, d, m, q, jd->body[0], jd->marker[0], "p");
    fputc(',', f);
    marker_place(f, d, m, q, jd->body[1], jd->marker[1], "p2");
    fputc('}', f);
  }
  fputs("],\"forces\":[", f);
  for (int i = 0; i < d->nforce; i++) {
    const mb_force_desc* fd = &d->force[i];
    fprintf(f, "%s{\"name\":", i ? "," : "");
    view_json_string(f, fd->name);
    fprintf(f, ",\"type\":\"%s\",\"body\":%d", mb_force_type_name(fd->type), fd->body[0]);
    if (fd->type == MB_FORCE_SPRING || fd->type == MB_FORCE_POINT || fd->type == MB_FORCE_TYRE) {
      fputc(',', f);
      marker_place(f, d, m, q, fd->body[0], fd->marker[0], "p");
    }
    if (fd->type == MB_FORCE_SPRING) {
      fprintf(f, ",\"body2\":%d,", fd->body[1]);
      marker_place(f, d, m, q, fd->body[1], fd->marker[1], "p2");
    }
    if (fd->type == MB_FORCE_TYRE) {
      fputs(",\"radius\":", f);
      number(f, m->force_l0[i], 9);
      fputs(",\"road\":", f);
      vector(f, m->force_road + 3 * i, 3, 9);
    }
    fputc('}', f);
  }
  fputs("]}", f);
  return stream_text(f, &text);
}

/* ---------------------------------------------------------------------------------------------
   the outputs: units and targets of each panel */

/* the unit of sensor s's values, from its type ("" when it has none) */
static const char* sensor_unit(const mb_desc* d, int s) {
  const mb_sensor_desc* sd = &d->sensor[s];
  const int translation = sd->coord == MB_COORD_TRANSLATION;
  switch (sd->type) {
    case MB_SENSOR_POINT_POSITION:
    case MB_SENSOR_SPRING_LENGTH:
      return "m";
    case MB_SENSOR_POINT_VELOCITY:
      return "m/s";
    case MB_SENSOR_POINT_ACCELERATION:
      return "m/s^2";
    case MB_SENSOR_BODY_ANGULAR_VELOCITY:
    case MB_SENSOR_BODY_ANGULAR_VELOCITY_BODY:
      return "rad/s";
    case MB_SENSOR_BODY_ANGLES:
      return "rad";
    case MB_SENSOR_JOINT_COORDINATE:
      return translation ? "m" : "rad";
    case MB_SENSOR_JOINT_RATE:
      return translation ? "m/s" : "rad/s";
    case MB_SENSOR_SPRING_FORCE:
    case MB_SENSOR_REACTION_FORCE:
      return "N";
    case MB_SENSOR_REACTION_TORQUE:
      return "N m";
    case MB_SENSOR_NORMAL_FORCE:
      return "N";
    case MB_SENSOR_FRICTION_FORCE: /* a torque on a pin or a ball, a force on a slide */
      if (sd->joint >= 0 && sd->joint < d->njoint) {
        const int type = d->joint[sd->joint].type;
        return type == MB_JOINT_REVOLUTE || type == MB_JOINT_SPHERICAL ? "N m"
               : type == MB_JOINT_CYLINDRICAL                          ? "N m, N"
                                                                       : "N";
      }
      return "";
    case MB_SENSOR_KINETIC_ENERGY:
    case MB_SENSOR_GRAVITY_ENERGY:
    case MB_SENSOR_ELASTIC_ENERGY:
    case MB_SENSOR_TOTAL_ENERGY:
      return "J";
    case MB_SENSOR_CONTROL:
      if (sd->force >= 0 && sd->force < d->ncontroller)
        return d->controller[sd->force].actuator == MB_ACTUATOR_TORQUE ? "N m" : "N";
      return "";
    default:
      return "";
  }
}

/* the constant value of a reference, or 0 with *ok = 0 when it varies in time; no reference is
   zero */
static double constant_reference(int has, const mb_func_desc* r, int* ok) {
  *ok = !has || r->type == MB_FUNC_CONSTANT;
  return has && *ok && r->ncoef > 0 ? r->coef[0].value : 0;
}

/* "targets":[[...] per column] of the columns [first, first + n) */
static void targets_write(FILE* f, const mb_desc* d, const mb_model* m, int first, int n) {
  fputs("\"targets\":[", f);
  for (int c = first; c < first + n; c++) {
    fprintf(f, "%s[", c > first ? "," : "");
    int written = 0;
    for (int k = 0; k < d->nfunctional; k++)
      for (int t = 0; t < d->functional[k].nterm; t++) {
        const mb_fterm_desc* term = &d->functional[k].term[t];
        int ok;
        const double r = constant_reference(term->has_reference, &term->reference, &ok);
        if (term->shape == MB_SHAPE_VALUE || !ok || mb_model_output(m, term->output) != c) continue;
        fprintf(f, "%s%.15g", written++ ? "," : "", r);
      }
    for (int k = 0; k < d->ncontroller; k++) {
      const mb_controller_desc* cd = &d->controller[k];
      int ok;
      const double r = constant_reference(cd->has_reference, &cd->reference, &ok);
      if (cd->nterm != 1 || !ok || cd->term[0].weight == 0 ||
          mb_model_output(m, cd->term[0].output) != c)
        continue;
      fprintf(f, "%s%.15g", written++ ? "," : "", r / cd->term[0].weight);
    }
    fputc(']', f);
  }
  fputc(']', f);
}

/* One panel per output: its name, unit, columns (index into the samples after t, and name) and
   targets. */
static char* outputs_json(const mb_desc* d, const mb_model* m) {
  char* text = NULL;
  size_t size = 0;
  FILE* f = open_memstream(&text, &size);
  if (!f) return NULL;
  fputc('[', f);
  const int known = d->nsensor == m->nsensor;
  for (int s = 0; s < m->nsensor; s++) {
    const int first = m->sensor_outadr[s], n = m->sensor_outnum[s];
    fprintf(f, "%s{\"name\":", s ? "," : "");
    view_json_string(f, known ? d->sensor[s].name : m->out_name + (size_t)MB_LABEL_LEN * first);
    fputs(",\"unit\":", f);
    view_json_string(f, known ? sensor_unit(d, s) : "");
    fprintf(f, ",\"columns\":[");
    for (int c = first; c < first + n; c++) fprintf(f, "%s%d", c > first ? "," : "", c);
    fputs("],\"labels\":[", f);
    for (int c = first; c < first + n; c++) {
      if (c > first) fputc(',', f);
      view_json_string(f, m->out_name + (size_t)MB_LABEL_LEN * c);
    }
    fputs("],", f);
    targets_write(f, d, m, first, n);
    fputc('}', f);
  }
  fputc(']', f);
  return stream_text(f, &text);
}

/* ---------------------------------------------------------------------------------------------
   recording */

typedef struct recorder {
  view_design* v;
  const mb_desc* d;
  int frame_every; /* samples per frame */
  double t_end, h;
  int out_of_memory;
} recorder;

/* room for one more row of `width` doubles in *rows (count, cap) */
static double* grow(double** rows, int* count, int* cap, int width) {
  if (*count == *cap) {
    const int bigger = *cap ? 2 * *cap : 256;
    double* p = realloc(*rows, (size_t)bigger * width * sizeof(double));
    if (!p) return NULL;
    *rows = p, *cap = bigger;
  }
  return *rows + (size_t)(*count)++ * width;
}

static int frame_width(const view_design* v) {
  return 1 + 7 * v->nbody + 3 * v->nforce;
}

/* a force's vector at t: a point force's or a torque's global components (planar torque: z) */
static void force_vector(const mb_model* m, int i, double t, double* out) {
  out[0] = out[1] = out[2] = 0;
  const int n = m->force_type[i] == MB_FORCE_TORQUE && m->dim == 2 ? 1 : m->dim;
  if (m->force_type[i] != MB_FORCE_POINT && m->force_type[i] != MB_FORCE_TORQUE) return;
  for (int k = 0; k < n; k++)
    if (m->force_func[3 * i + k] >= 0) {
      double value = 0;
      mb_func_eval(m, m->force_func[3 * i + k], t, &value, NULL, NULL);
      out[n == 1 ? 2 : k] = value;
    }
}

static int observe(const mb_model* m, const mb_data* d, void* user) {
  recorder* r = user;
  view_design* v = r->v;
  if (!v->geometry) {
    v->geometry = geometry_json(r->d, m, d->q);
    v->outputs = outputs_json(r->d, m);
    if (!v->geometry || !v->outputs) {
      r->out_of_memory = 1;
      return 1;
    }
  }
  /* a sample at every call, a frame at every frame_every-th and at the end */
  const int last = d->t >= r->t_end - 0.5 * r->h;
  double* s = grow(&v->sample, &v->nsample, &v->sample_cap, 1 + v->nout);
  if (!s) {
    r->out_of_memory = 1;
    return 1;
  }
  s[0] = d->t;
  memcpy(s + 1, d->out, (size_t)v->nout * sizeof(double));
  if ((v->nsample - 1) % r->frame_every && !last) return 0;
  double* fr = grow(&v->frame, &v->nframe, &v->frame_cap, frame_width(v));
  if (!fr) {
    r->out_of_memory = 1;
    return 1;
  }
  fr[0] = d->t;
  for (int b = 0; b < v->nbody; b++) {
    double R[9];
    body_frame(m, b, d->q, fr + 1 + 7 * b, R);
    quaternion(R, fr + 4 + 7 * b);
  }
  for (int i = 0; i < v->nforce; i++) force_vector(m, i, d->t, fr + 1 + 7 * v->nbody + 3 * i);
  return 0;
}

/* the design's parameters and functionals' names, copied from d */
static int copy_names(const mb_desc* d, view_design* v) {
  v->nparam = d->nparam, v->nfunctional = d->nfunctional;
  v->param_name = calloc((size_t)d->nparam + 1, sizeof *v->param_name);
  v->param_value = calloc((size_t)d->nparam + 1, sizeof(double));
  v->functional_name = calloc((size_t)d->nfunctional + 1, sizeof *v->functional_name);
  v->psi = calloc((size_t)d->nfunctional + 1, sizeof(double));
  if (!v->param_name || !v->param_value || !v->functional_name || !v->psi) return 0;
  for (int p = 0; p < d->nparam; p++) {
    memcpy(v->param_name[p], d->param_name[p], MB_NAME_LEN);
    v->param_value[p] = d->param_value[p];
  }
  for (int k = 0; k < d->nfunctional; k++) {
    memcpy(v->functional_name[k], d->functional[k].name, MB_NAME_LEN);
    v->psi[k] = NAN;
  }
  return 1;
}

int view_design_record(const char* spec, const mb_desc* d, const char* label, view_design* v) {
  memset(v, 0, sizeof *v);
  snprintf(v->label, sizeof v->label, "%s", label);
  /* samples every k steps, at most VIEW_MAX_SAMPLES of them; frames every j samples, about 50
     a second but at least 150 over a short run and at most VIEW_MAX_FRAMES */
  mb_desc copy = *d;
  const double T = d->settings.t_end, h = d->settings.step;
  const double k = ceil(T / VIEW_MAX_SAMPLES / h * (1 - 1e-12));
  copy.settings.output_interval = (k > 1 ? k : 1) * h;
  const double dt = copy.settings.output_interval;
  double frame_dt = fmax(fmin(1.0 / 50, T / 150), T / VIEW_MAX_FRAMES);
  recorder r = {v, d, (int)fmax(1, ceil(frame_dt / dt * (1 - 1e-12))), T, h, 0};
  mb_model* m = NULL;
  mb_data* data = NULL;
  if (!copy_names(d, v)) {
    cli_error("out of memory");
    return CLI_RUN_FAILED;
  }
  int code = cli_compile(spec, &copy, &m);
  if (code != CLI_OK) return code;
  v->nbody = m->nbody, v->nforce = m->nforce, v->nout = m->nout;
  if (d->nbody != m->nbody || d->nforce != m->nforce) {
    cli_error("%s: the compiled model's bodies or forces do not match its description", spec);
    code = CLI_RUN_FAILED;
    goto done;
  }
  data = mb_data_create(m);
  if (!data) {
    cli_error("out of memory");
    code = CLI_RUN_FAILED;
    goto done;
  }
  mb_error err;
  mb_error_clear(&err);
  const double start = cli_now();
  const mb_status st = mb_simulate(m, data, observe, &r, &err);
  v->seconds = cli_now() - start;
  v->completed = st == MB_OK && !r.out_of_memory && fabs(data->t - T) < 0.5 * h;
  if (v->completed) memcpy(v->psi, data->psi, (size_t)m->nfunctional * sizeof(double));
  snprintf(v->status, sizeof v->status, "%s",
           r.out_of_memory ? "out of memory"
           : st == MB_OK   ? "completed"
                           : (err.message[0] ? err.message : mb_status_str(st)));
  if (!v->geometry) {
    cli_error("%s: %s", spec, v->status);
    code = r.out_of_memory ? CLI_RUN_FAILED : cli_exit_code(st);
  }
done:
  mb_data_free(data);
  mb_model_free(m);
  return code;
}

void view_design_free(view_design* v) {
  free(v->param_name);
  free(v->param_value);
  free(v->functional_name);
  free(v->psi);
  free(v->geometry);
  free(v->outputs);
  free(v->frame);
  free(v->sample);
  memset(v, 0, sizeof *v);
}

double view_design_last_time(const view_design* v) {
  return v->nsample ? v->sample[(size_t)(v->nsample - 1) * (1 + v->nout)] : 0;
}

void view_design_write(FILE* f, const view_design* v) {
  fputs("{\"label\":", f);
  view_json_string(f, v->label);
  fputs(",\"status\":", f);
  view_json_string(f, v->status);
  fprintf(f, ",\"completed\":%s,\"seconds\":%.3f,\"parameters\":{", v->completed ? "true" : "false",
          v->seconds);
  for (int p = 0; p < v->nparam; p++) {
    if (p) fputc(',', f);
    view_json_string(f, v->param_name[p]);
    fputc(':', f);
    number(f, v->param_value[p], 12);
  }
  fputs("},\"functionals\":{", f);
  for (int k = 0; k < v->nfunctional; k++) {
    if (k) fputc(',', f);
    view_json_string(f, v->functional_name[k]);
    fputc(':', f);
    number(f, v->psi[k], 12);
  }
  fprintf(f, "},\"geometry\":%s,\"outputs\":%s", v->geometry, v->outputs);
  /* frames: times, then per body origin (7 digits: a 10 m run to a tenth of a millimetre) and
     quaternion, per force its vector */
  const int width = frame_width(v);
  fputs(",\"frames\":[", f);
  for (int i = 0; i < v->nframe; i++) {
    if (i) fputc(',', f);
    const double* fr = v->frame + (size_t)i * width;
    fputc('[', f);
    number(f, fr[0], 9);
    for (int b = 0; b < v->nbody; b++) {
      for (int k = 0; k < 7; k++) {
        fputc(',', f);
        number(f, fr[1 + 7 * b + k], k < 3 ? 7 : 6);
      }
    }
    for (int k = 0; k < 3 * v->nforce; k++) {
      fputc(',', f);
      number(f, fr[1 + 7 * v->nbody + k], 6);
    }
    fputc(']', f);
  }
  /* samples by column, t first: 7 digits for the curves; each column's smallest, largest and
     mean value in full, so that the page can tell noise from a signal */
  fputs("],\"samples\":[", f);
  for (int c = 0; c <= v->nout; c++) {
    fprintf(f, "%s[", c ? "," : "");
    for (int i = 0; i < v->nsample; i++) {
      if (i) fputc(',', f);
      number(f, v->sample[(size_t)i * (1 + v->nout) + c], c ? 7 : 9);
    }
    fputc(']', f);
  }
  fputs("],\"stats\":[", f);
  for (int c = 1; c <= v->nout; c++) {
    double lo = INFINITY, hi = -INFINITY, sum = 0;
    int n = 0;
    for (int i = 0; i < v->nsample; i++) {
      const double x = v->sample[(size_t)i * (1 + v->nout) + c];
      if (!isfinite(x)) continue;
      lo = fmin(lo, x), hi = fmax(hi, x), sum += x, n++;
    }
    fprintf(f, "%s[", c > 1 ? "," : "");
    number(f, lo, 17);
    fputc(',', f);
    number(f, hi, 17);
    fputc(',', f);
    number(f, n ? sum / n : NAN, 17);
    fputc(']', f);
  }
  fputs("]}", f);
}
