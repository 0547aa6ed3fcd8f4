/* mbopt optimize and mbopt compare: run a spec's optimisation with one or several algorithms,
   writing every evaluation to a history file as it happens and a summary at the end, even when
   the run is interrupted, into an output folder locked for the run (outdir.h). */
#define _XOPEN_SOURCE 700 /* realpath */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include <cJSON.h>

#include "cli.h"
#include "commands.h"
#include "history.h"
#include "mbopt/optim.h"
#include "mbopt/optimize.h"
#include "outdir.h"
#include "report.h"

static void optimize_help(FILE* out) {
  fprintf(out,
          "Usage: mbopt optimize SPEC.json [options]\n"
          "Minimises the objective of SPEC.json's \"optimization\" section over its design\n"
          "variables, with gradients from the sensitivity analysis (gradient-free algorithms\n"
          "use simulations only). Writes DIR/history.csv (one row per evaluation, in\n"
          "DIR/history.csv.part while the run lasts) and DIR/summary.json. A run that cannot\n"
          "start or whose every evaluation fails leaves DIR as it was; a second run into DIR\n"
          "is refused. SIGINT (Ctrl-C), SIGTERM and SIGHUP stop the run at its next time step\n"
          "with both files written (exit 130, 143, 129); a second signal stops it at once.\n"
          "A run that was interrupted, killed, or ran out of evaluations goes on with\n"
          "'mbopt optimize --resume DIR': the algorithm is started again with the spec and\n"
          "settings the run recorded in DIR/summary.json, its evaluations are replayed from\n"
          "DIR/history.csv (so the optimiser's state is rebuilt exactly, without simulating)\n"
          "and the run continues from the first evaluation the history does not hold.\n\n"
          "Usage: mbopt optimize --resume DIR [--maxeval N] [--quiet]\n\n"
          "Options:\n"
          "  --algorithm A         lbfgs, slsqp, mma, ccsaq, tnewton (gradient-based),\n"
          "                        bobyqa, cobyla, neldermead, sbplx (gradient-free); default:\n"
          "                        the spec's\n"
          "  --out DIR             output folder (default out/optimize-<spec name>)\n"
          "  --maxeval N           most evaluations, those of the record included (default:\n"
          "                        the spec's, or the resumed run's)\n"
          "  --resume DIR          continue the run whose files are in DIR (no SPEC,\n"
          "                        --algorithm, --out or the options below: the run's own)\n");
  cli_run_options_help(out, 24, CLI_REFRESH_DEFAULT, 1);
  fprintf(out,
          "  --quiet               no progress lines\n"
          "  -h, --help            show this help\n"
          "The start is the design variables' values in the spec, after --parameters and --set.\n");
}

/* compare's algorithms unless --algorithms names them: for bounds only, for inequality
   constraints, and for equality constraints */
#define DEFAULT_ALGORITHMS "lbfgs,slsqp,mma,bobyqa"
#define DEFAULT_CONSTRAINED "slsqp,mma,ccsaq,cobyla"
#define DEFAULT_EQUALITY "slsqp,cobyla"

static void compare_help(FILE* out) {
  fprintf(out,
          "Usage: mbopt compare SPEC.json [options]\n"
          "Runs the optimisation of SPEC.json from the same start with several algorithms and\n"
          "prints a table (status, final objective, evaluations, gradient evaluations, seconds,\n"
          "feasible).\n"
          "Writes DIR/comparison.json, DIR/<algorithm>/history.csv and summary.json, and the\n"
          "convergence plot DIR/convergence.svg (against evaluations, on log scales: the best\n"
          "feasible objective, and its distance to the best any algorithm found; gnuplot).\n\n"
          "Options:\n"
          "  --algorithms A,B,C    algorithms to compare (default " DEFAULT_ALGORITHMS
          ",\n"
          "                        or " DEFAULT_CONSTRAINED
          " when the spec has constraints,\n"
          "                        " DEFAULT_EQUALITY
          " with an equality among them)\n"
          "  --out DIR             output folder (default out/compare-<spec name>)\n"
          "  --maxeval N           most evaluations per algorithm (default: the spec's)\n");
  cli_run_options_help(out, 24, CLI_REFRESH_DEFAULT, 1);
  fprintf(out,
          "  --quiet               no progress lines\n"
          "  -h, --help            show this help\n");
}

/* ---------------------------------------------------------------------------------------------
   files of a run */

typedef struct run_files {
  const mb_desc* desc;
  cli_staged history;
  cli_staged best; /* evaluation and best feasible objective so far, for the plot */
  double best_f;
  int progress, maxeval;
  /* the summary's start (the first evaluation: x, then the constraints; NaN until seen, and
     its objective NaN when it failed) and the points of the successful evaluations (each x
     then c), among which the returned one */
  double* start;
  double start_f;
  double* points;
  int npoints, point_cap;
  unsigned char* feasible; /* (nfeasible) whether each evaluation met every constraint */
  int nfeasible, feasible_cap;
} run_files;

/* x and c of an evaluation, appended to rf->points (0 when out of memory) */
static int keep_point(run_files* rf, const mb_opt_evaluation* e) {
  const size_t width = (size_t)e->nvar + e->ncon;
  if (rf->npoints == rf->point_cap) {
    const int cap = rf->point_cap ? 2 * rf->point_cap : 64;
    double* grown = realloc(rf->points, (size_t)cap * width * sizeof(double));
    if (!grown) return 0;
    rf->points = grown, rf->point_cap = cap;
  }
  double* p = rf->points + (size_t)rf->npoints++ * width;
  memcpy(p, e->x, (size_t)e->nvar * sizeof(double));
  if (e->ncon) memcpy(p + e->nvar, e->c, (size_t)e->ncon * sizeof(double));
  return 1;
}

/* the constraints of the last successful evaluation at x, or NULL */
static const double* constraints_at(const run_files* rf, const double* x, int nvar, int ncon) {
  const size_t width = (size_t)nvar + ncon;
  for (int i = rf->npoints - 1; i >= 0; i--) {
    const double* p = rf->points + (size_t)i * width;
    if (!memcmp(p, x, (size_t)nvar * sizeof(double))) return p + nvar;
  }
  return NULL;
}

/* seconds as people read them: 42 s, 3 min 5 s, 2 h 10 min */
static void print_duration(double s) {
  if (s < 60)
    fprintf(stderr, "%.0f s", s);
  else if (s < 3600)
    fprintf(stderr, "%d min %d s", (int)(s / 60), (int)fmod(s, 60));
  else
    fprintf(stderr, "%d h %d min", (int)(s / 3600), (int)fmod(s / 60, 60));
}

static void observe(const mb_opt_evaluation* e, void* user) {
  run_files* rf = user;
  /* a resumed run's history takes the place of the record once the record is all in it */
  const int first_live = rf->history.replacing && !e->replayed;
  if (first_live) cli_staged_replace(&rf->history);
  history_row(rf->history.f, e);
  if (e->index == 1) {
    memcpy(rf->start, e->x, (size_t)e->nvar * sizeof(double));
    rf->start_f = e->failed ? NAN : e->objective;
    for (int k = 0; k < e->ncon; k++) rf->start[e->nvar + k] = e->failed ? NAN : e->c[k];
  }
  if (!e->failed) keep_point(rf, e); /* without it the summary's constraints stay unknown */
  /* each evaluation's feasibility, for the report (without it the report has none) */
  if (rf->nfeasible == rf->feasible_cap) {
    const int cap = rf->feasible_cap ? 2 * rf->feasible_cap : 256;
    unsigned char* grown = realloc(rf->feasible, (size_t)cap);
    if (grown) rf->feasible = grown, rf->feasible_cap = cap;
  }
  if (rf->nfeasible < rf->feasible_cap) rf->feasible[rf->nfeasible++] = (unsigned char)e->feasible;
  /* the best feasible objective: an infeasible point's lower one is no progress to plot */
  if (e->feasible && e->objective < rf->best_f) rf->best_f = e->objective;
  if (isfinite(rf->best_f)) {
    fprintf(rf->best.f, "%d %.17g\n", e->index, rf->best_f);
    fflush(rf->best.f);
  }
  if (!rf->progress || e->replayed) return;
  if (first_live && e->index > 1)
    fprintf(stderr, "  resumed after %d evaluations replayed from the history\n", e->index - 1);
  if (e->with_gradient || e->index % 10 == 0) {
    fprintf(stderr, "  evaluation %4d of at most %d  objective %-14.8g best %-14.8g ", e->index,
            rf->maxeval, e->objective, rf->best_f);
    print_duration(e->seconds);
    if (e->index < rf->maxeval) {
      fprintf(stderr, ", at most ");
      print_duration(e->seconds / e->index * (rf->maxeval - e->index));
      fprintf(stderr, " more");
    }
    fprintf(stderr, "%s\n", e->failed ? "  (failed)" : "");
  }
}

/* a number, or null for NaN (an unknown value) and infinities (a bound that is absent) */
static cJSON* number_or_null(double v) {
  return isfinite(v) ? cJSON_CreateNumber(v) : cJSON_CreateNull();
}

static cJSON* number_array(const double* v, int n) {
  cJSON* a = cJSON_CreateArray();
  for (int i = 0; i < n; i++) cJSON_AddItemToArray(a, number_or_null(v[i]));
  return a;
}

/* The summary of a run: the result at x, where it started (the first evaluation), the bounds,
   and each constraint's bounds and values at the start and at x. */
static cJSON* summary_json(const mb_desc* d, const double* x, const mb_opt_result* r,
                           const run_files* rf) {
  const mb_optim_desc* o = &d->optimization;
  cJSON* s = cJSON_CreateObject();
  cJSON_AddStringToObject(s, "algorithm", r->algorithm);
  cJSON_AddStringToObject(s, "status", r->status);
  cJSON_AddStringToObject(s, "message", r->message);
  cJSON* names = cJSON_AddArrayToObject(s, "parameters");
  for (int v = 0; v < o->nvar; v++)
    cJSON_AddItemToArray(names, cJSON_CreateString(d->param_name[o->var[v].param]));
  cJSON_AddItemToObject(s, "x", cJSON_CreateDoubleArray(x, o->nvar));
  cJSON_AddNumberToObject(s, "objective", r->objective);
  cJSON_AddBoolToObject(s, "feasible", r->feasible);
  cJSON_AddItemToObject(s, "violation", number_or_null(r->violation));
  cJSON* start = cJSON_AddObjectToObject(s, "start");
  cJSON_AddItemToObject(start, "x", number_array(rf->start, o->nvar));
  cJSON_AddItemToObject(start, "objective", number_or_null(rf->start_f));
  cJSON* bounds = cJSON_AddObjectToObject(s, "bounds");
  cJSON* lower = cJSON_AddArrayToObject(bounds, "lower");
  cJSON* upper = cJSON_AddArrayToObject(bounds, "upper");
  cJSON* log_scale = cJSON_AddArrayToObject(bounds, "log_scale");
  for (int v = 0; v < o->nvar; v++) {
    cJSON_AddItemToArray(lower, cJSON_CreateNumber(o->var[v].lower));
    cJSON_AddItemToArray(upper, cJSON_CreateNumber(o->var[v].upper));
    cJSON_AddItemToArray(log_scale, cJSON_CreateBool(o->var[v].log_scale));
  }
  const double* at_x = constraints_at(rf, x, o->nvar, o->ncon);
  cJSON* constraints = cJSON_AddArrayToObject(s, "constraints");
  for (int k = 0; k < o->ncon; k++) {
    cJSON* c = cJSON_CreateObject();
    cJSON_AddStringToObject(c, "name", d->functional[o->con[k].functional].name);
    cJSON_AddItemToObject(c, "lower", number_or_null(o->con[k].lower));
    cJSON_AddItemToObject(c, "upper", number_or_null(o->con[k].upper));
    cJSON_AddItemToObject(c, "start", number_or_null(rf->start[o->nvar + k]));
    cJSON_AddItemToObject(c, "value", number_or_null(at_x ? at_x[k] : NAN));
    cJSON_AddItemToArray(constraints, c);
  }
  cJSON_AddNumberToObject(s, "iterations", r->iterations);
  cJSON_AddNumberToObject(s, "evaluations", r->evaluations);
  cJSON_AddNumberToObject(s, "gradient_evaluations", r->gradient_evaluations);
  cJSON_AddNumberToObject(s, "failed_evaluations", r->failed_evaluations);
  cJSON_AddNumberToObject(s, "seconds", r->seconds);
  cJSON_AddStringToObject(s, "sensitivity_method", r->sensitivity_method);
  return s;
}

/* An algorithm the command line names (after `option`, "--algorithm" or "--algorithms") that
   does not exist: prints why, with the nearest name, and returns 0. */
static int known_algorithm(const char* option, const char* name) {
  if (mbo_algorithm_parse(name) >= 0) return 1;
  const char* names[32];
  char known[256] = "";
  size_t n = 0;
  for (; n < 32 && strcmp(mbo_algorithm_name((mbo_algorithm)n), "?"); n++) {
    names[n] = mbo_algorithm_name((mbo_algorithm)n);
    const size_t len = strlen(known);
    snprintf(known + len, sizeof known - len, "%s%s", n ? ", " : "", names[n]);
  }
  const char* nearest = cli_nearest(name, names, n);
  if (nearest)
    cli_error("%s: unknown algorithm '%s' (did you mean %s? known: %s)", option, name, nearest,
              known);
  else
    cli_error("%s: unknown algorithm '%s' (known: %s)", option, name, known);
  return 0;
}

/* Loads the spec at `path` with the overrides of run and checks that it can be optimised with
   `algorithm` (NULL: the spec's), touching no file. An algorithm given on the command line
   (after `option`; NULL when the algorithm is the spec's or a record's) that cannot run this
   spec is a command-line error naming the option. Prints the error and returns an exit code. */
static int load_checked(const char* path, const cli_run* run, const char* option,
                        const char* algorithm, long maxeval, mb_desc* d) {
  if (option && algorithm && !known_algorithm(option, algorithm)) return CLI_USAGE;
  int code = cli_load_desc(path, run, d);
  if (code != CLI_OK) return code;
  if (maxeval > 0) d->optimization.maxeval = (int)maxeval;
  mb_error err;
  /* cobyla takes every kind of constraint: what fails with it is the spec's fault */
  mb_status st = mb_optimize_check(d, option && algorithm ? "cobyla" : algorithm, &err);
  if (st == MB_OK && option && algorithm && mb_optimize_check(d, algorithm, &err) != MB_OK) {
    cli_error("%s: %s cannot run %s: %s", option, algorithm, path, err.message);
    mb_desc_free(d);
    return CLI_USAGE;
  }
  if (st == MB_OK) return CLI_OK;
  cli_error("%s: %s", path, err.message);
  mb_desc_free(d);
  return cli_exit_code(st);
}

/* FNV-1a, 64 bits, of a file's bytes as 16 hexadecimal digits: tells a resumed run whether its
   spec changed since the run began */
static int file_hash(const char* path, char out[17]) {
  size_t size = 0;
  char* text = cli_read_file(path, &size);
  if (!text) return 0;
  unsigned long long h = 14695981039346656037ULL;
  for (size_t i = 0; i < size; i++) h = (h ^ (unsigned char)text[i]) * 1099511628211ULL;
  free(text);
  snprintf(out, 17, "%016llx", h);
  return 1;
}

/* What a resumed run needs to start again as this one did: the spec (absolute path and hash),
   the algorithm, the evaluation budget, the simulation settings as the command line left them
   ("run") and every parameter's value at the start ("start", after --parameters and --set).
   NULL, the error printed, when the spec cannot be read again. */
static cJSON* run_settings(const char* path, const char* algorithm, const mb_desc* d) {
  char absolute[PATH_MAX], hash[17];
  if (!realpath(path, absolute) || !file_hash(absolute, hash)) {
    cli_error("%s: cannot read the spec again: %s", path, strerror(errno));
    return NULL;
  }
  cJSON* s = cJSON_CreateObject();
  cJSON_AddStringToObject(s, "spec", absolute);
  cJSON_AddStringToObject(s, "spec_hash", hash);
  cJSON_AddStringToObject(s, "algorithm", algorithm ? algorithm : d->optimization.algorithm);
  cJSON_AddNumberToObject(s, "maxeval", d->optimization.maxeval);
  const mb_settings* set = &d->settings;
  cJSON* run = cJSON_AddObjectToObject(s, "run");
  cJSON_AddNumberToObject(run, "step", set->step);
  cJSON_AddNumberToObject(run, "t_end", set->t_end);
  cJSON_AddStringToObject(run, "linear_solver", mb_linear_solver_name(set->linear_solver));
  cJSON_AddStringToObject(run, "tangent_refresh",
                          set->refresh_each_iteration ? "iteration" : "step");
  cJSON_AddNumberToObject(run, "threads", set->threads);
  cJSON_AddBoolToObject(run, "equilibrium", set->equilibrium);
  cJSON* start = cJSON_AddObjectToObject(s, "start");
  for (int p = 0; p < d->nparam; p++)
    cJSON_AddNumberToObject(start, d->param_name[p], d->param_value[p]);
  return s;
}

/* DIR/NAME.part when a run left it (it was killed, or is running) */
static int has_part(const char* dir, const char* name) {
  char part[CLI_PATH_MAX];
  struct stat st;
  return cli_path(part, "--out", "%s/%s.part", dir, name) && stat(part, &st) == 0;
}

/* A fresh run into dir would overwrite the history a killed run left there: refused. */
static int check_no_record(const char* dir) {
  if (!has_part(dir, "history.csv")) return CLI_OK;
  cli_error(
      "--out: '%s' holds the history of a run that stopped without finishing "
      "(history.csv.part); continue it with 'mbopt optimize --resume %s', or delete that file",
      dir, dir);
  return CLI_BAD_INPUT;
}

/* Runs one algorithm on d, the spec at `path` as load_checked left it, with its files in dir;
   with a record (not NULL), resumes the run that wrote it. While the run lasts, its history is
   DIR/history.csv.part and its settings DIR/summary.json.part (which --resume reads if the run
   is killed). History and summary replace an earlier run's only when this run evaluated a point
   successfully: a run that could not start or whose every evaluation failed leaves the folder
   as it was, and a resumed run never loses its record. The result, the summary and whether each
   evaluation was feasible (*feasible, *nfeasible of them; free it) are returned; the exit code
   says whether it could run. */
static int run_one(const char* path, const char* algorithm, mb_desc* d, const char* dir,
                   const history_record* record, int progress, mb_opt_result* r, cJSON** summary,
                   unsigned char** feasible, int* nfeasible) {
  int code = CLI_BAD_INPUT;
  const mb_optim_desc* o = &d->optimization;
  run_files rf = {d, {0}, {0}, INFINITY, progress, o->maxeval, NULL, NAN, NULL, 0, 0, NULL, 0, 0};
  double* x = calloc(o->nvar + 1, sizeof(double));
  rf.start = malloc(((size_t)o->nvar + o->ncon) * sizeof(double));
  for (int i = 0; rf.start && i < o->nvar + o->ncon; i++) rf.start[i] = NAN;
  char history[CLI_PATH_MAX], best[CLI_PATH_MAX], running[CLI_PATH_MAX];
  cJSON* settings = run_settings(path, algorithm, d);
  cJSON* state = cJSON_CreateObject();
  cJSON_AddStringToObject(state, "status", "running");
  cJSON_AddStringToObject(state, "spec", path);
  if (!settings || !x || !rf.start || !cli_path(history, "--out", "%s/history.csv", dir) ||
      !cli_path(best, "--out", "%s/best.dat", dir) ||
      !cli_path(running, "--out", "%s/summary.json.part", dir) ||
      !(record ? cli_staged_open_beside : cli_staged_open)(&rf.history, "--out", history) ||
      !cli_staged_open(&rf.best, "--out", best))
    goto done;
  /* whole rows per write: a row is far shorter than this buffer */
  setvbuf(rf.history.f, NULL, _IOFBF, 1 << 16);
  history_header(d, rf.history.f);
  cJSON_AddItemReferenceToObject(state, "settings", settings);
  if (!cli_write_json(dir, "summary.json.part", state)) goto done;
  mb_error err;
  mb_error_clear(&err);
  mb_status st =
      mb_optimize_resume(d, algorithm, record ? record->rows : NULL, record ? record->count : 0,
                         observe, &rf, &cli_stop_signal, x, r, &err);
  if (st != MB_OK) {
    cli_error("%s: %s", path, err.message);
    code = cli_exit_code(st);
    goto done;
  }
  if (r->evaluations == r->failed_evaluations) {
    cli_error("%s: %s: no evaluation succeeded (%s); %s left as it was", path, r->algorithm,
              r->message, dir);
    code = CLI_RUN_FAILED;
    goto done;
  }
  *summary = summary_json(d, x, r, &rf);
  cJSON_AddStringToObject(*summary, "spec", path);
  cJSON_AddItemToObject(*summary, "settings", cJSON_Duplicate(settings, 1));
  if (record) {
    cJSON_AddNumberToObject(*summary, "replayed_evaluations", r->replayed);
    if (r->left_record_at)
      fprintf(stderr,
              "mbopt: warning: the resumed run asked at evaluation %d for a point the history "
              "does not hold (evaluations %d to %d were evaluated again)\n",
              r->left_record_at, r->left_record_at, r->evaluations);
  }
  if (cli_staged_commit(&rf.history) && cli_staged_commit(&rf.best) &&
      cli_write_json(dir, "summary.json", *summary))
    code = CLI_OK;
  unlink(running);

done:
  /* a record, or the history that replaced it, stays for --resume */
  if (code != CLI_OK && !record && !rf.history.keep) unlink(running);
  cli_staged_discard(&rf.history);
  cli_staged_discard(&rf.best);
  if (code != CLI_OK) {
    cJSON_Delete(*summary);
    *summary = NULL;
  }
  cJSON_Delete(state);
  cJSON_Delete(settings);
  free(x);
  free(rf.start);
  free(rf.points);
  *feasible = rf.feasible, *nfeasible = rf.nfeasible;
  return code;
}

/* The simulation settings a run recorded ("run" of its settings) into run; a record from before
   they were kept has none and ran with the spec's. Returns 0 when "run" is malformed. */
static int recorded_run(const cJSON* settings, cli_run* run) {
  const cJSON* r = cJSON_GetObjectItemCaseSensitive(settings, "run");
  if (!r) return 1;
  const cJSON* step = cJSON_GetObjectItemCaseSensitive(r, "step");
  const cJSON* t_end = cJSON_GetObjectItemCaseSensitive(r, "t_end");
  const cJSON* solver = cJSON_GetObjectItemCaseSensitive(r, "linear_solver");
  const cJSON* refresh = cJSON_GetObjectItemCaseSensitive(r, "tangent_refresh");
  const cJSON* threads = cJSON_GetObjectItemCaseSensitive(r, "threads");
  if (!cJSON_IsNumber(step) || !cJSON_IsNumber(t_end) || !cJSON_IsString(solver) ||
      !cJSON_IsString(refresh) || !cJSON_IsNumber(threads))
    return 0;
  run->step = step->valuedouble, run->t_end = t_end->valuedouble;
  run->linear_solver = mb_linear_solver_parse(solver->valuestring);
  run->refresh = mb_tangent_refresh_parse(refresh->valuestring);
  run->threads = threads->valuedouble >= 0 && threads->valuedouble <= 2 ? threads->valueint : -1;
  /* records from before the static equilibrium have none and ran without it, as their spec */
  const cJSON* equilibrium = cJSON_GetObjectItemCaseSensitive(r, "equilibrium");
  if (equilibrium && !cJSON_IsBool(equilibrium)) return 0;
  run->equilibrium = cJSON_IsTrue(equilibrium);
  return isfinite(run->step) && run->step > 0 && isfinite(run->t_end) && run->t_end > 0 &&
         run->linear_solver >= 0 && run->refresh >= 0 && run->threads >= 0;
}

/* Every parameter's value at a run's start as it recorded them ("start" of its settings), set
   in d; prints why not and returns an exit code. */
static int set_recorded_start(const cJSON* settings, mb_desc* d) {
  const cJSON* start = cJSON_GetObjectItemCaseSensitive(settings, "start");
  int code = CLI_OK;
  for (const cJSON* p = start ? start->child : NULL; p && code == CLI_OK; p = p->next) {
    if (!cJSON_IsNumber(p) || !p->string) {
      cli_error("--resume: the recorded start value of \"%s\" is not a number",
                p->string ? p->string : "?");
      return CLI_BAD_INPUT;
    }
    code = cli_set_named(d, p->string, p->valuedouble, "--resume");
  }
  return code == CLI_OK ? CLI_OK : CLI_BAD_INPUT;
}

/* The settings a run recorded in dir (summary.json.part while it ran or after it was killed,
   else summary.json): its spec, loaded with its simulation settings and start values and
   checked as load_checked does into d, its algorithm (into algorithm) and its budget unless
   maxeval > 0. Prints the error and returns an exit code. */
static int load_recorded(const char* dir, long maxeval, mb_desc* d, char spec[PATH_MAX],
                         char algorithm[32]) {
  char path[CLI_PATH_MAX];
  if (!cli_path(path, "--resume", "%s/%s", dir,
                has_part(dir, "summary.json") ? "summary.json.part" : "summary.json"))
    return CLI_USAGE;
  char* text = cli_read_file(path, NULL);
  if (!text) {
    cli_error("--resume: '%s' holds no run to resume (%s: %s)", dir, path, strerror(errno));
    return CLI_BAD_INPUT;
  }
  cJSON* root = cJSON_Parse(text);
  free(text);
  const cJSON* settings = cJSON_GetObjectItemCaseSensitive(root, "settings");
  const cJSON* file = cJSON_GetObjectItemCaseSensitive(settings, "spec");
  const cJSON* hash = cJSON_GetObjectItemCaseSensitive(settings, "spec_hash");
  const cJSON* alg = cJSON_GetObjectItemCaseSensitive(settings, "algorithm");
  const cJSON* budget = cJSON_GetObjectItemCaseSensitive(settings, "maxeval");
  int code = CLI_BAD_INPUT;
  char now[17] = "";
  cli_run run = CLI_RUN_SPEC;
  if (!cJSON_IsString(file) || !cJSON_IsString(hash) || !cJSON_IsString(alg) ||
      !cJSON_IsNumber(budget) || strlen(file->valuestring) >= PATH_MAX ||
      strlen(alg->valuestring) >= 32 || !(budget->valuedouble >= 1) ||
      budget->valuedouble > INT_MAX) {
    cli_error("--resume: %s: no valid \"settings\" (spec, spec_hash, algorithm, maxeval)", path);
  } else if (!recorded_run(settings, &run)) {
    cli_error(
        "--resume: %s: settings.run must hold step and t_end (> 0), linear_solver, "
        "tangent_refresh and threads as mbopt writes them (equilibrium, if there, true or false)",
        path);
  } else if (!file_hash(file->valuestring, now)) {
    cli_error("--resume: the run's spec '%s' cannot be read: %s", file->valuestring,
              strerror(errno));
  } else if (strcmp(now, hash->valuestring)) {
    cli_error(
        "--resume: the run's spec '%s' changed since the run began; a run resumes only "
        "with the spec it began with",
        file->valuestring);
  } else {
    snprintf(spec, PATH_MAX, "%s", file->valuestring);
    snprintf(algorithm, 32, "%s", alg->valuestring);
    code = load_checked(spec, &run, NULL, algorithm,
                        maxeval > 0 ? maxeval : (long)budget->valuedouble, d);
    if (code == CLI_OK && (code = set_recorded_start(settings, d)) != CLI_OK) mb_desc_free(d);
  }
  cJSON_Delete(root);
  return code;
}

/* exit code of a finished run: interrupted or failed runs are not successes */
static int status_code(const mb_opt_result* r) {
  if (!strcmp(r->status, "interrupted")) return cli_signal_exit_code();
  if (!strcmp(r->status, "failed") || !strcmp(r->status, "evaluation_failed"))
    return CLI_RUN_FAILED;
  return CLI_OK;
}

/* the output folder: --out, or out/<kind>-<spec file name without extension> */
static int open_out(cli_outdir* dir, const char* out, const char* kind, const char* spec) {
  if (out) return cli_outdir_open(dir, "--out", out);
  const char* base = strrchr(spec, '/');
  base = base ? base + 1 : spec;
  char path[CLI_PATH_MAX];
  if (!cli_path(path, "SPEC", "out/%s-%.*s", kind, (int)strcspn(base, "."), base)) return CLI_USAGE;
  return cli_outdir_open(dir, "--out", path);
}

/* ---------------------------------------------------------------------------------------------
   the commands */

typedef struct opt_args {
  const char* spec;
  const char* algorithms;
  const char* out;
  const char* resume; /* optimize only */
  long maxeval;
  int quiet;
  cli_run run;
} opt_args;

/* The first run option given on the command line (a resumed run takes its own), or NULL */
static const char* run_option_given(const cli_run* r) {
  return r->step > 0             ? "--step"
         : r->t_end > 0          ? "--t-end"
         : r->nset > 0           ? "--set"
         : r->parameters         ? "--parameters"
         : r->linear_solver >= 0 ? "--linear-solver"
         : r->refresh >= 0       ? "--tangent-refresh"
         : r->threads >= 0       ? "--threads"
         : r->equilibrium        ? "--equilibrium"
                                 : NULL;
}

/* options of optimize (algorithms_key "--algorithm") and compare ("--algorithms") */
static int parse_args(const char* command, int argc, char** argv, const char* algorithms_key,
                      opt_args* a) {
  *a = (opt_args){.run = CLI_RUN_SPEC};
  const cli_option options[] = {
      {.name = algorithms_key, .kind = CLI_TEXT, .target = &a->algorithms},
      {.name = "--out", .kind = CLI_TEXT, .target = &a->out},
      {.name = "--maxeval", .kind = CLI_COUNT, .target = &a->maxeval, .limit = INT_MAX},
      {.name = "--quiet", .kind = CLI_FLAG, .target = &a->quiet, .limit = 1},
      CLI_RUN_OPTIONS(a->run),
      CLI_THREADS_OPTION(a->run),
      {.name = "--resume", .kind = CLI_TEXT, .target = &a->resume}};
  /* --resume DIR takes the place of SPEC, for optimize only (the table's last entry) */
  const int resumable = !strcmp(command, "optimize");
  const size_t count = sizeof options / sizeof *options - !resumable;
  int code = cli_parse_options(command, argc, argv, options, count, !resumable, &a->spec);
  if (code != CLI_OK || !resumable) return code;
  if (!a->resume && !a->spec) {
    cli_error(
        "optimize: no SPEC given (usage: mbopt optimize SPEC.json [options], or mbopt "
        "optimize --resume DIR; see 'mbopt optimize --help')");
    return CLI_USAGE;
  }
  const char* own = a->spec         ? "SPEC"
                    : a->algorithms ? "--algorithm"
                    : a->out        ? "--out"
                                    : run_option_given(&a->run);
  if (a->resume && own) {
    cli_error(
        "--resume: continues the run in '%s' with its own spec, algorithm, folder, "
        "simulation settings and start; give no %s",
        a->resume, own);
    return CLI_USAGE;
  }
  return CLI_OK;
}

int cmd_optimize_parse(int argc, char** argv) {
  opt_args a;
  return parse_args("optimize", argc, argv, "--algorithm", &a);
}

int cmd_compare_parse(int argc, char** argv) {
  opt_args a;
  return parse_args("compare", argc, argv, "--algorithms", &a);
}

static void print_result_row(const mb_opt_result* r) {
  printf("%-11s %-18s %16.10g %6d %6d %9.3f %s\n", r->algorithm, r->status, r->objective,
         r->evaluations, r->gradient_evaluations, r->seconds, r->feasible ? "yes" : "no");
}

static void print_table_head(void) {
  printf("%-11s %-18s %16s %6s %6s %9s %s\n", "algorithm", "status", "objective", "evals", "grads",
         "seconds", "feasible");
}

/* the start's objective and the constraints of a summary, for people */
static void print_start_and_constraints(const cJSON* summary) {
  const cJSON* start = cJSON_GetObjectItem(cJSON_GetObjectItem(summary, "start"), "objective");
  if (cJSON_IsNumber(start)) printf("objective at the start %.10g\n", start->valuedouble);
  const cJSON* constraints = cJSON_GetObjectItem(summary, "constraints");
  for (const cJSON* c = constraints ? constraints->child : NULL; c; c = c->next) {
    const cJSON* lo = cJSON_GetObjectItem(c, "lower");
    const cJSON* hi = cJSON_GetObjectItem(c, "upper");
    const cJSON* v = cJSON_GetObjectItem(c, "value");
    printf("  constraint %-16s %-14.8g", cJSON_GetObjectItem(c, "name")->valuestring,
           cJSON_IsNumber(v) ? v->valuedouble : NAN);
    if (cJSON_IsNumber(lo) && cJSON_IsNumber(hi) && lo->valuedouble == hi->valuedouble)
      printf(" = %g\n", lo->valuedouble);
    else if (cJSON_IsNumber(lo) && cJSON_IsNumber(hi))
      printf(" in [%g, %g]\n", lo->valuedouble, hi->valuedouble);
    else if (cJSON_IsNumber(lo))
      printf(" >= %g\n", lo->valuedouble);
    else
      printf(" <= %g\n", cJSON_IsNumber(hi) ? hi->valuedouble : NAN);
  }
  if (constraints && constraints->child) {
    const cJSON* violation = cJSON_GetObjectItem(summary, "violation");
    if (cJSON_IsTrue(cJSON_GetObjectItem(summary, "feasible")))
      printf("feasible\n");
    else
      printf("infeasible: largest violation %g (relative to max(1, |bound|))\n",
             cJSON_IsNumber(violation) ? violation->valuedouble : NAN);
  }
}

int cmd_optimize(int argc, char** argv) {
  opt_args a;
  int code = parse_args("optimize", argc, argv, "--algorithm", &a);
  if (code != CLI_OK) return cli_parse_exit(code, optimize_help);
  /* everything is checked before the output folder is touched */
  mb_desc d;
  char spec[PATH_MAX], algorithm[32];
  if (a.resume) {
    code = load_recorded(a.resume, a.maxeval, &d, spec, algorithm);
    a.spec = spec, a.algorithms = algorithm;
  } else {
    code = load_checked(a.spec, &a.run, "--algorithm", a.algorithms, a.maxeval, &d);
  }
  if (code != CLI_OK) return code;
  cli_outdir out;
  code = a.resume ? cli_outdir_open(&out, "--resume", a.resume)
                  : open_out(&out, a.out, "optimize", a.spec);
  /* the record is read once the folder is this run's */
  history_record record = {0};
  char recorded[CLI_PATH_MAX];
  if (code == CLI_OK && a.resume &&
      cli_path(recorded, "--resume", "%s/%s", out.path,
               has_part(out.path, "history.csv") ? "history.csv.part" : "history.csv"))
    code = history_read(recorded, &d, &record);
  else if (code == CLI_OK && !a.resume)
    code = check_no_record(out.path);
  mb_opt_result r;
  cJSON* summary = NULL;
  unsigned char* feasible = NULL;
  int nfeasible = 0;
  if (code == CLI_OK) {
    const int progress = !a.quiet && cli_stderr_is_terminal();
    if (progress && a.resume)
      fprintf(stderr, "resuming %s (%s) from %d evaluations in %s%s\n", a.spec, a.algorithms,
              record.count, recorded,
              record.dropped_partial_row ? " (a last row cut short left out)" : "");
    code = run_one(a.spec, a.algorithms, &d, out.path, a.resume ? &record : NULL, progress, &r,
                   &summary, &feasible, &nfeasible);
  }
  const report_run report = {summary, out.path, feasible, nfeasible};
  const int reported = code == CLI_OK && report_write(out.path, a.spec, &d, &report, 1);
  free(feasible);
  history_free(&record);
  cli_outdir_close(&out);
  mb_desc_free(&d);
  if (code != CLI_OK) return cli_stop_signal ? cli_signal_exit_code() : code;
  print_table_head();
  print_result_row(&r);
  cJSON* x = cJSON_GetObjectItem(summary, "x");
  cJSON* names = cJSON_GetObjectItem(summary, "parameters");
  const int nx = cJSON_GetArraySize(x), shown = nx > 12 ? 10 : nx;
  for (int v = 0; v < shown; v++)
    printf("  %-16s %.12g\n", cJSON_GetArrayItem(names, v)->valuestring,
           cJSON_GetArrayItem(x, v)->valuedouble);
  if (shown < nx) printf("  ... %d more in summary.json\n", nx - shown);
  print_start_and_constraints(summary);
  if (a.resume) printf("%d evaluations replayed from the history\n", r.replayed);
  printf("%s\nwrote %s/summary.json and %s/history.csv\n", r.message, out.path, out.path);
  if (reported) printf("wrote %s/report.html\n", out.path);
  cJSON_Delete(summary);
  return status_code(&r);
}

/* text as a single-quoted gnuplot string: no substitution happens inside single quotes, a quote
   is doubled, and control characters (which would end the command) become spaces */
static void gnuplot_quote(FILE* g, const char* text) {
  fputc('\'', g);
  for (const unsigned char* c = (const unsigned char*)text; *c; c++) {
    if (*c == '\'') fputc('\'', g);
    fputc(*c < 0x20 || *c == 0x7f ? ' ' : *c, g);
  }
  fputc('\'', g);
}

/* convergence plot with gnuplot, two panels against evaluations: the best feasible objective,
   and its distance to the best any algorithm found (best_found), both on log scales, so that
   late progress shows; the second panel's floor, 1e-15 of the largest objective plotted, is
   where a run has reached the best to rounding. The legend sits beside the panels, never over a
   curve. The script is fixed; the spec's name, the folder and the algorithms enter it only as
   quoted strings. The plot is drawn beside its name and renamed into place. */
static void plot(const char* out, const char* spec, char (*algs)[32], int n, double best_found) {
  char svg[CLI_PATH_MAX], part[CLI_PATH_MAX], data[CLI_PATH_MAX];
  if (!cli_path(svg, "--out", "%s/convergence.svg", out) ||
      !cli_path(part, "--out", "%s/convergence.svg.part", out))
    return;
  FILE* g = popen("gnuplot > /dev/null 2>&1", "w");
  if (!g) return;
  /* each run's plot data and name, once */
  fprintf(g, "array file[%d]\narray name[%d]\n", n, n);
  for (int i = 0; i < n; i++) {
    if (!cli_path(data, "--out", "%s/%s/best.dat", out, algs[i])) break; /* written: it fits */
    fprintf(g, "file[%d] = ", i + 1);
    gnuplot_quote(g, data);
    fprintf(g, "\nname[%d] = ", i + 1);
    gnuplot_quote(g, algs[i]);
    fprintf(g, "\n");
  }
  fprintf(g,
          "best = %.17g\ntop = abs(best)\n"
          "do for [i = 1:%d] {\n  stats file[i] using (abs($2)) nooutput\n"
          "  top = STATS_max > top ? STATS_max : top\n}\n"
          "floor = top > 0 ? 1e-15 * top : 1e-300\n",
          best_found, n);
  fprintf(g, "set terminal svg size 900,700 background rgb 'white'\nset output ");
  gnuplot_quote(g, part);
  fprintf(g, "\nset multiplot layout 2,1 title ");
  gnuplot_quote(g, spec);
  fprintf(g,
          " noenhanced\nset logscale y\nset grid\nset key outside right top noenhanced\n"
          "set lmargin 12\nset rmargin 16\nset xlabel 'evaluations'\n"
          "set ylabel 'best feasible objective'\n"
          "plot for [i = 1:%d] file[i] using 1:2 with linespoints title name[i]\n"
          "set ylabel 'best feasible - best found (%.3g)'\n"
          "plot for [i = 1:%d] file[i] using 1:(($2 - best) > floor ? $2 - best : floor) "
          "with linespoints title name[i]\n",
          n, best_found, n);
  fprintf(g, "unset multiplot\nset output\n");
  int rc = pclose(g);
  struct stat st;
  if (rc != 0 || stat(part, &st) != 0 || st.st_size == 0 || rename(part, svg) != 0) {
    unlink(part);
    fprintf(stderr, "mbopt: warning: no convergence plot (gnuplot missing or failed)\n");
  }
}

/* compare's algorithms for a spec's constraints when --algorithms names none */
static const char* default_algorithms(const mb_optim_desc* o) {
  if (o->ncon == 0) return DEFAULT_ALGORITHMS;
  for (int k = 0; k < o->ncon; k++)
    if (o->con[k].lower == o->con[k].upper) return DEFAULT_EQUALITY;
  return DEFAULT_CONSTRAINED;
}

int cmd_compare(int argc, char** argv) {
  opt_args a;
  int code = parse_args("compare", argc, argv, "--algorithms", &a);
  if (code != CLI_OK) return cli_parse_exit(code, compare_help);
  enum { MAX_ALGORITHMS = 16 };
  char algs[MAX_ALGORITHMS][32];
  mb_desc desc[MAX_ALGORITHMS]; /* one fresh start per algorithm: a run moves its parameters */
  int n = 0;
  /* the names first, then each algorithm against the spec: all before anything runs or is
     written */
  const char* list = a.algorithms;
  if (!list) {
    code = cli_load_desc(a.spec, &a.run, &desc[0]);
    if (code != CLI_OK) return code;
    list = default_algorithms(&desc[0].optimization);
    mb_desc_free(&desc[0]);
  }
  for (const char* p = list; *p; n++) {
    const size_t len = strcspn(p, ",");
    if (n == MAX_ALGORITHMS || len == 0 || len >= sizeof algs[0]) {
      cli_error(
          "--algorithms: expected a comma-separated list of at most %d algorithm names, "
          "got '%s'",
          MAX_ALGORITHMS, list);
      return CLI_USAGE;
    }
    snprintf(algs[n], sizeof algs[0], "%.*s", (int)len, p);
    p += len + (p[len] == ',');
    if (!known_algorithm("--algorithms", algs[n])) return CLI_USAGE;
  }
  for (int i = 0; i < n && code == CLI_OK; i++) {
    code = load_checked(a.spec, &a.run, a.algorithms ? "--algorithms" : NULL, algs[i], a.maxeval,
                        &desc[i]);
    if (code != CLI_OK) n = i; /* load_checked freed it */
  }
  cli_outdir out = {"", -1};
  if (code == CLI_OK) code = open_out(&out, a.out, "compare", a.spec);
  if (code != CLI_OK) {
    for (int i = 0; i < n; i++) mb_desc_free(&desc[i]);
    return code;
  }
  cJSON* comparison = cJSON_CreateObject();
  cJSON_AddStringToObject(comparison, "spec", a.spec);
  cJSON* runs = cJSON_AddArrayToObject(comparison, "runs");
  int progress = !a.quiet && cli_stderr_is_terminal(), worst = CLI_OK, ran = 0;
  mb_opt_result results[MAX_ALGORITHMS];
  report_run reports[MAX_ALGORITHMS];
  char dirs[MAX_ALGORITHMS][CLI_PATH_MAX];
  for (int i = 0; i < n && !cli_stop_signal; i++) {
    char dir[CLI_PATH_MAX];
    if (!cli_path(dir, "--out", "%s/%s", out.path, algs[i])) {
      worst = CLI_USAGE;
      break;
    }
    if ((code = cli_make_dirs("--out", dir)) != CLI_OK || (code = check_no_record(dir)) != CLI_OK) {
      worst = code;
      break;
    }
    if (progress) fprintf(stderr, "%s:\n", algs[i]);
    cJSON* summary = NULL;
    unsigned char* feasible = NULL;
    int nfeasible = 0;
    code = run_one(a.spec, algs[i], &desc[i], dir, NULL, progress, &results[ran], &summary,
                   &feasible, &nfeasible);
    if (code != CLI_OK) {
      free(feasible);
      worst = code;
      continue;
    }
    cJSON_AddItemToArray(runs, summary);
    memcpy(dirs[ran], dir, sizeof dirs[ran]);
    reports[ran] = (report_run){summary, dirs[ran], feasible, nfeasible};
    if (status_code(&results[ran]) != CLI_OK && worst == CLI_OK) worst = status_code(&results[ran]);
    snprintf(algs[ran], sizeof algs[0], "%s", results[ran].algorithm);
    ran++;
  }
  print_table_head();
  for (int i = 0; i < ran; i++) print_result_row(&results[i]);
  if (ran > 0 && !cli_write_json(out.path, "comparison.json", comparison)) worst = CLI_BAD_INPUT;
  if (ran > 0) {
    /* the best feasible objective any run returned (each run's best.dat ends there) */
    double best_found = INFINITY;
    for (int i = 0; i < ran; i++)
      if (results[i].feasible) best_found = fmin(best_found, results[i].objective);
    if (!isfinite(best_found))
      for (int i = 0; i < ran; i++) best_found = fmin(best_found, results[i].objective);
    plot(out.path, a.spec, algs, ran, best_found);
    const int reported = report_write(out.path, a.spec, &desc[0], reports, ran);
    printf("wrote %s/comparison.json, %s/convergence.svg,%s one folder per algorithm\n", out.path,
           out.path, reported ? " report.html and" : "");
  }
  for (int i = 0; i < ran; i++) free((void*)reports[i].feasible);
  cJSON_Delete(comparison);
  cli_outdir_close(&out);
  for (int i = 0; i < n; i++) mb_desc_free(&desc[i]);
  return cli_stop_signal ? cli_signal_exit_code() : worst;
}
