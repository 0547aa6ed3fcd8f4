/* DIR/report.html of mbopt optimize and mbopt compare (report.h). */
#include "report.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "history.h"
#include "view_page.h"
#include "view_scene.h"

typedef struct report_data {
  const char* spec;
  const mb_desc* d;
  const report_run* runs;
  const history_record* records;
  int nrun, best;
  view_design designs[2];
  int ndesign;
} report_data;

static void number(FILE* f, double v) {
  if (isfinite(v))
    fprintf(f, "%.12g", v);
  else
    fputs("null", f);
}

/* "key":[...] of one field of every row of a history */
static void column(FILE* f, const char* key, const history_record* r,
                   double (*get)(const mb_opt_evaluation*, int), int k) {
  fprintf(f, "\"%s\":[", key);
  for (int i = 0; i < r->count; i++) {
    if (i) fputc(',', f);
    number(f, get(&r->rows[i], k));
  }
  fputc(']', f);
}

static double get_objective(const mb_opt_evaluation* e, int k) {
  return e->failed ? NAN : e->objective;
}
static double get_x(const mb_opt_evaluation* e, int k) {
  return e->x[k];
}
static double get_c(const mb_opt_evaluation* e, int k) {
  return e->failed ? NAN : e->c[k];
}
static double get_failed(const mb_opt_evaluation* e, int k) {
  return e->failed;
}
static double get_gradient(const mb_opt_evaluation* e, int k) {
  return e->with_gradient;
}

/* the problem: objective, design variables with bounds, constraints with bounds, settings */
static void write_problem(FILE* f, const mb_desc* d) {
  const mb_optim_desc* o = &d->optimization;
  fputs("\"objective\":", f);
  view_json_string(f, d->functional[o->objective].name);
  fputs(",\"variables\":[", f);
  for (int v = 0; v < o->nvar; v++) {
    fprintf(f, "%s{\"name\":", v ? "," : "");
    view_json_string(f, d->param_name[o->var[v].param]);
    fputs(",\"lower\":", f);
    number(f, o->var[v].lower);
    fputs(",\"upper\":", f);
    number(f, o->var[v].upper);
    fprintf(f, ",\"log\":%s}", o->var[v].log_scale ? "true" : "false");
  }
  fputs("],\"constraints\":[", f);
  for (int k = 0; k < o->ncon; k++) {
    fprintf(f, "%s{\"name\":", k ? "," : "");
    view_json_string(f, d->functional[o->con[k].functional].name);
    fputs(",\"lower\":", f);
    number(f, o->con[k].lower);
    fputs(",\"upper\":", f);
    number(f, o->con[k].upper);
    fputc('}', f);
  }
  fprintf(f, "],\"step\":%.9g,\"t_end\":%.9g", d->settings.step, d->settings.t_end);
}

static void write_run(FILE* f, const report_data* p, int i) {
  const report_run* run = &p->runs[i];
  const history_record* r = &p->records[i];
  const mb_optim_desc* o = &p->d->optimization;
  char* summary = cli_json_text(run->summary, 0);
  fprintf(f, "{\"summary\":%s,\"history\":{", summary ? summary : "null");
  cJSON_free(summary);
  column(f, "objective", r, get_objective, 0);
  fputc(',', f);
  column(f, "failed", r, get_failed, 0);
  fputc(',', f);
  column(f, "gradient", r, get_gradient, 0);
  fputs(",\"feasible\":[", f);
  for (int e = 0; e < r->count; e++)
    fprintf(f, "%s%s", e ? "," : "", e < run->nfeasible ? (run->feasible[e] ? "1" : "0") : "null");
  fputs("],\"x\":[", f);
  for (int v = 0; v < o->nvar; v++) {
    fputs(v ? ",{" : "{", f);
    column(f, "values", r, get_x, v);
    fputc('}', f);
  }
  fputs("],\"c\":[", f);
  for (int k = 0; k < o->ncon; k++) {
    fputs(k ? ",{" : "{", f);
    column(f, "values", r, get_c, k);
    fputc('}', f);
  }
  fputs("]}}", f);
}

static void write_data(FILE* f, void* user) {
  const report_data* p = user;
  fputs("{\"kind\":\"report\",\"title\":", f);
  view_json_string(f, p->d->name[0] ? p->d->name : p->spec);
  fputs(",\"spec\":", f);
  view_json_string(f, p->spec);
  fprintf(f, ",\"generator\":\"mbopt %s\",\"report\":{", mb_version());
  write_problem(f, p->d);
  fputs(",\"runs\":[", f);
  for (int i = 0; i < p->nrun; i++) {
    if (i) fputc(',', f);
    write_run(f, p, i);
  }
  fprintf(f, "],\"best\":%d},\"designs\":[", p->best);
  for (int k = 0; k < p->ndesign; k++) {
    if (k) fputc(',', f);
    view_design_write(f, &p->designs[k]);
  }
  fputs("]}", f);
}

/* a summary's number, NaN when absent */
static double summary_number(const cJSON* s, const char* key) {
  const cJSON* v = cJSON_GetObjectItemCaseSensitive(s, key);
  return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

/* the run whose result is best: the lowest feasible objective, else the lowest */
static int best_run(const report_run* runs, int nrun) {
  int best = -1, best_feasible = 0;
  for (int i = 0; i < nrun; i++) {
    const int feasible =
        cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(runs[i].summary, "feasible"));
    const double f = summary_number(runs[i].summary, "objective");
    if (!isfinite(f)) continue;
    if (best < 0 || (feasible && !best_feasible) ||
        (feasible == best_feasible && f < summary_number(runs[best].summary, "objective")))
      best = i, best_feasible = feasible;
  }
  return best;
}

/* the design variables of d set to an array x of a summary ("x", or "x" of its "start") */
static int set_design(mb_desc* d, const cJSON* x) {
  const mb_optim_desc* o = &d->optimization;
  if (cJSON_GetArraySize(x) != o->nvar) return 0;
  mb_error err;
  int v = 0;
  for (const cJSON* e = x->child; e; e = e->next, v++)
    if (!cJSON_IsNumber(e) ||
        mb_desc_set_named(d, d->param_name[o->var[v].param], e->valuedouble, &err) != MB_OK)
      return 0;
  return 1;
}

int report_write(const char* dir, const char* spec, mb_desc* d, const report_run* runs, int nrun) {
  /* a run stopped by a signal is to end now, not to simulate its designs */
  if (cli_stop_signal) return 0;
  const char* missing = view_libraries_missing();
  if (missing) {
    fprintf(stderr, "mbopt: warning: no report.html: %s\n", missing);
    return 0;
  }
  report_data p = {.spec = spec, .d = d, .runs = runs, .nrun = nrun, .best = best_run(runs, nrun)};
  history_record* records = calloc((size_t)nrun + 1, sizeof *records);
  char path[CLI_PATH_MAX];
  int ok = records != NULL && p.best >= 0 && cli_path(path, "--out", "%s/report.html", dir);
  for (int i = 0; ok && i < nrun; i++) {
    char history[CLI_PATH_MAX];
    ok = cli_path(history, "--out", "%s/history.csv", runs[i].dir) &&
         history_read(history, d, &records[i]) == CLI_OK;
  }
  p.records = records;
  /* the motion of the start and of the best result */
  const cJSON* best = ok ? runs[p.best].summary : NULL;
  const cJSON* start = cJSON_GetObjectItemCaseSensitive(
      cJSON_GetObjectItemCaseSensitive(runs[0].summary, "start"), "x");
  const char* algorithm = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(best, "algorithm"));
  char label[64];
  snprintf(label, sizeof label, "best (%s)", algorithm ? algorithm : "?");
  if (ok && set_design(d, start))
    ok = view_design_record(spec, d, "initial", &p.designs[p.ndesign++]) == CLI_OK;
  if (ok && set_design(d, cJSON_GetObjectItemCaseSensitive(best, "x")))
    ok = view_design_record(spec, d, label, &p.designs[p.ndesign++]) == CLI_OK;
  for (int k = 0; k < p.ndesign; k++)
    if (!p.designs[k].completed)
      fprintf(stderr, "mbopt: warning: report.html: the %s design stopped at t = %g s: %s\n",
              p.designs[k].label, view_design_last_time(&p.designs[k]), p.designs[k].status);
  if (ok) ok = view_page_write("--out", path, d->name[0] ? d->name : spec, write_data, &p);
  if (!ok) fprintf(stderr, "mbopt: warning: no report.html in %s (see above)\n", dir);
  for (int k = 0; k < p.ndesign; k++) view_design_free(&p.designs[k]);
  for (int i = 0; records && i < nrun; i++) history_free(&records[i]);
  free(records);
  return ok;
}
