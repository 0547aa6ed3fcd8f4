/* mbopt optimize and mbopt compare: run a spec's optimisation with one or several algorithms,
   writing every evaluation to a history file as it happens and a summary at the end, even when
   the run is interrupted. */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cJSON.h>

#include "cli.h"
#include "commands.h"
#include "mbopt/optimize.h"

/* set by SIGINT; the optimisation stops at its next evaluation */
static volatile sig_atomic_t interrupted;

static void on_sigint(int sig) {
  (void)sig;
  interrupted = 1;
}

static void optimize_help(FILE* out) {
  fprintf(out,
          "Usage: mbopt optimize SPEC.json [options]\n"
          "Minimises the objective of SPEC.json's \"optimization\" section over its design\n"
          "variables, with gradients from the sensitivity analysis (gradient-free algorithms\n"
          "use simulations only). Writes DIR/history.csv (one row per evaluation, as it\n"
          "happens) and DIR/summary.json. Ctrl-C stops the run cleanly with both files written.\n\n"
          "Options:\n"
          "  --algorithm A   lbfgs, slsqp, mma, ccsaq, tnewton (gradient-based), bobyqa,\n"
          "                  cobyla, neldermead, sbplx (gradient-free); default: the spec's\n"
          "  --out DIR       output folder (default out/optimize-<spec name>)\n"
          "  --maxeval N     most evaluations (default: the spec's)\n"
          "  --quiet         no progress lines\n"
          "  -h, --help      show this help\n");
}

static void compare_help(FILE* out) {
  fprintf(out,
          "Usage: mbopt compare SPEC.json [options]\n"
          "Runs the optimisation of SPEC.json from the same start with several algorithms and\n"
          "prints a table (final objective, evaluations, gradient evaluations, seconds, status).\n"
          "Writes DIR/comparison.json, DIR/<algorithm>/history.csv and summary.json, and the\n"
          "convergence plot DIR/convergence.svg (best objective against evaluations; gnuplot).\n\n"
          "Options:\n"
          "  --algorithms A,B,C  algorithms to compare (default lbfgs,slsqp,mma,bobyqa)\n"
          "  --out DIR           output folder (default out/compare-<spec name>)\n"
          "  --maxeval N         most evaluations per algorithm (default: the spec's)\n"
          "  --quiet             no progress lines\n"
          "  -h, --help          show this help\n");
}

/* ---------------------------------------------------------------------------------------------
   files of a run */

/* mkdir -p */
static int make_dirs(const char* path) {
  char buf[1024];
  snprintf(buf, sizeof buf, "%s", path);
  for (char* p = buf + 1; *p; p++)
    if (*p == '/') {
      *p = '\0';
      if (mkdir(buf, 0755) != 0 && errno != EEXIST) return 0;
      *p = '/';
    }
  return mkdir(buf, 0755) == 0 || errno == EEXIST;
}

typedef struct run_files {
  const mb_desc* desc;
  FILE* history;
  FILE* best; /* evaluation and best objective so far, for the plot */
  double best_f;
  int progress;
} run_files;

static void write_history_header(const mb_desc* d, FILE* f) {
  const mb_optim_desc* o = &d->optimization;
  fprintf(f, "evaluation,seconds,objective");
  for (int v = 0; v < o->nvar; v++) fprintf(f, ",%s", d->param_name[o->var[v].param]);
  for (int k = 0; k < o->ncon; k++) fprintf(f, ",%s", d->functional[o->con[k].functional].name);
  fprintf(f, ",gradient,failed\n");
  fflush(f);
}

static void observe(const mb_opt_evaluation* e, void* user) {
  run_files* rf = user;
  if (rf->history) {
    fprintf(rf->history, "%d,%.6f,%.17g", e->index, e->seconds, e->failed ? NAN : e->objective);
    for (int v = 0; v < e->nvar; v++) fprintf(rf->history, ",%.17g", e->x[v]);
    for (int k = 0; k < e->ncon; k++) fprintf(rf->history, ",%.17g", e->failed ? NAN : e->c[k]);
    fprintf(rf->history, ",%d,%d\n", e->with_gradient, e->failed);
    fflush(rf->history);
  }
  if (!e->failed && e->objective < rf->best_f) rf->best_f = e->objective;
  if (rf->best && isfinite(rf->best_f)) {
    fprintf(rf->best, "%d %.17g\n", e->index, rf->best_f);
    fflush(rf->best);
  }
  if (rf->progress && (e->with_gradient || e->index % 10 == 0))
    fprintf(stderr, "  evaluation %4d  objective %-14.8g best %-14.8g %8.1f s%s\n", e->index,
            e->objective, rf->best_f, e->seconds, e->failed ? "  (failed)" : "");
}

static cJSON* summary_json(const mb_desc* d, const double* x, const mb_opt_result* r) {
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
  cJSON_AddNumberToObject(s, "iterations", r->iterations);
  cJSON_AddNumberToObject(s, "evaluations", r->evaluations);
  cJSON_AddNumberToObject(s, "gradient_evaluations", r->gradient_evaluations);
  cJSON_AddNumberToObject(s, "failed_evaluations", r->failed_evaluations);
  cJSON_AddNumberToObject(s, "seconds", r->seconds);
  cJSON_AddStringToObject(s, "sensitivity_method", r->sensitivity_method);
  return s;
}

static int write_json(const char* path, const cJSON* o) {
  FILE* f = fopen(path, "w");
  if (!f) return 0;
  char* text = cJSON_Print(o);
  int ok = text && fputs(text, f) >= 0 && fputc('\n', f) != EOF;
  cJSON_free(text);
  return fclose(f) == 0 && ok;
}

/* Runs one algorithm on the spec at `path` from its start, with its files in dir. The result and
   best point are returned; the exit code says whether it could run. */
static int run_one(const char* path, const char* algorithm, const char* dir, int maxeval,
                   int progress, mb_opt_result* r, cJSON** summary) {
  mb_desc d;
  int code = cli_load_desc(path, NULL, &d);
  if (code != CLI_OK) return code;
  if (maxeval > 0) d.optimization.maxeval = maxeval;
  char file[1100];
  run_files rf = {&d, NULL, NULL, INFINITY, progress};
  double* x = calloc(d.optimization.nvar + 1, sizeof(double));
  if (!make_dirs(dir)) {
    cli_error("--out: cannot create '%s'", dir);
    code = CLI_BAD_INPUT;
    goto done;
  }
  snprintf(file, sizeof file, "%s/history.csv", dir);
  rf.history = fopen(file, "w");
  snprintf(file, sizeof file, "%s/best.dat", dir);
  rf.best = fopen(file, "w");
  if (!rf.history || !rf.best) {
    cli_error("--out: cannot write in '%s'", dir);
    code = CLI_BAD_INPUT;
    goto done;
  }
  write_history_header(&d, rf.history);
  mb_error err;
  mb_error_clear(&err);
  mb_status st = mb_optimize(&d, algorithm, observe, &rf, &interrupted, x, r, &err);
  if (st != MB_OK) {
    cli_error("%s: %s", path, err.message);
    code = cli_exit_code(st);
    goto done;
  }
  *summary = summary_json(&d, x, r);
  cJSON_AddStringToObject(*summary, "spec", path);
  snprintf(file, sizeof file, "%s/summary.json", dir);
  if (!write_json(file, *summary)) {
    cli_error("--out: cannot write '%s'", file);
    code = CLI_BAD_INPUT;
  }

done:
  if (rf.history) fclose(rf.history);
  if (rf.best) fclose(rf.best);
  free(x);
  mb_desc_free(&d);
  return code;
}

/* exit code of a finished run: interrupted or failed runs are not successes */
static int status_code(const mb_opt_result* r) {
  if (!strcmp(r->status, "interrupted")) return 130;
  if (!strcmp(r->status, "failed") || !strcmp(r->status, "evaluation_failed"))
    return CLI_RUN_FAILED;
  return CLI_OK;
}

static void default_out(char* out, size_t len, const char* kind, const char* spec) {
  const char* base = strrchr(spec, '/');
  base = base ? base + 1 : spec;
  int n = (int)strcspn(base, ".");
  snprintf(out, len, "out/%s-%.*s", kind, n, base);
}

static void install_sigint(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);
}

/* ---------------------------------------------------------------------------------------------
   the commands */

typedef struct opt_args {
  const char* spec;
  const char* algorithms;
  const char* out;
  double maxeval;
  int quiet;
} opt_args;

static int parse_args(int argc, char** argv, const char* algorithms_key, void (*help)(FILE*),
                      opt_args* a) {
  memset(a, 0, sizeof *a);
  for (int i = 1; i < argc; i++) {
    const char* s = argv[i];
    const char* next = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(s, "-h") || !strcmp(s, "--help")) {
      help(stdout);
      return -1;
    } else if (!strcmp(s, algorithms_key) || !strcmp(s, "--out")) {
      if (!next) {
        cli_error("%s: missing value", s);
        return CLI_USAGE;
      }
      if (!strcmp(s, "--out"))
        a->out = next;
      else
        a->algorithms = next;
      i++;
    } else if (!strcmp(s, "--maxeval")) {
      if (!cli_parse_positive(s, next, &a->maxeval)) return CLI_USAGE;
      i++;
    } else if (!strcmp(s, "--quiet")) {
      a->quiet = 1;
    } else if (cli_spec_argument(argv[0], s, &a->spec) != CLI_OK) {
      return CLI_USAGE;
    }
  }
  if (!a->spec) {
    help(stderr);
    return CLI_USAGE;
  }
  return CLI_OK;
}

static void print_result_row(const mb_opt_result* r) {
  printf("%-11s %-18s %16.10g %6d %6d %9.3f\n", r->algorithm, r->status, r->objective,
         r->evaluations, r->gradient_evaluations, r->seconds);
}

static void print_table_head(void) {
  printf("%-11s %-18s %16s %6s %6s %9s\n", "algorithm", "status", "objective", "evals", "grads",
         "seconds");
}

int cmd_optimize(int argc, char** argv) {
  opt_args a;
  int code = parse_args(argc, argv, "--algorithm", optimize_help, &a);
  if (code != CLI_OK) return code < 0 ? CLI_OK : code;
  char out[512];
  if (a.out)
    snprintf(out, sizeof out, "%s", a.out);
  else
    default_out(out, sizeof out, "optimize", a.spec);
  install_sigint();
  mb_opt_result r;
  cJSON* summary = NULL;
  int progress = !a.quiet && cli_stderr_is_terminal();
  code = run_one(a.spec, a.algorithms, out, (int)a.maxeval, progress, &r, &summary);
  if (code != CLI_OK) return code;
  print_table_head();
  print_result_row(&r);
  cJSON* x = cJSON_GetObjectItem(summary, "x");
  cJSON* names = cJSON_GetObjectItem(summary, "parameters");
  const int nx = cJSON_GetArraySize(x), shown = nx > 12 ? 10 : nx;
  for (int v = 0; v < shown; v++)
    printf("  %-16s %.12g\n", cJSON_GetArrayItem(names, v)->valuestring,
           cJSON_GetArrayItem(x, v)->valuedouble);
  if (shown < nx) printf("  ... %d more in summary.json\n", nx - shown);
  printf("%s\nwrote %s/summary.json and %s/history.csv\n", r.message, out, out);
  cJSON_Delete(summary);
  return status_code(&r);
}

/* convergence plot with gnuplot: best objective against evaluations, log scale */
static void plot(const char* out, const char* spec, char (*algs)[32], int n) {
  char cmd[1200];
  snprintf(cmd, sizeof cmd, "gnuplot > /dev/null 2>&1");
  FILE* g = popen(cmd, "w");
  if (!g) return;
  fprintf(g,
          "set terminal svg size 800,500 background rgb 'white'\n"
          "set output '%s/convergence.svg'\n"
          "set title \"%s: best objective against evaluations\" noenhanced\n"
          "set logscale y\nset xlabel 'evaluations'\nset ylabel 'best objective'\n"
          "set key top right\nset grid\nplot ",
          out, spec);
  for (int i = 0; i < n; i++)
    fprintf(g, "%s'%s/%s/best.dat' using 1:2 with linespoints title '%s'", i ? ", " : "", out,
            algs[i], algs[i]);
  fprintf(g, "\n");
  int rc = pclose(g);
  char svg[1200];
  snprintf(svg, sizeof svg, "%s/convergence.svg", out);
  struct stat st;
  if (rc != 0 || stat(svg, &st) != 0 || st.st_size == 0)
    fprintf(stderr, "mbopt: warning: no convergence plot (gnuplot missing or failed)\n");
}

int cmd_compare(int argc, char** argv) {
  opt_args a;
  int code = parse_args(argc, argv, "--algorithms", compare_help, &a);
  if (code != CLI_OK) return code < 0 ? CLI_OK : code;
  char out[512];
  if (a.out)
    snprintf(out, sizeof out, "%s", a.out);
  else
    default_out(out, sizeof out, "compare", a.spec);
  const char* list = a.algorithms ? a.algorithms : "lbfgs,slsqp,mma,bobyqa";
  char algs[16][32];
  int n = 0;
  for (const char* p = list; *p && n < 16;) {
    size_t len = strcspn(p, ",");
    snprintf(algs[n++], sizeof algs[0], "%.*s", (int)(len < 31 ? len : 31), p);
    p += len + (p[len] == ',');
  }
  install_sigint();
  cJSON* comparison = cJSON_CreateObject();
  cJSON_AddStringToObject(comparison, "spec", a.spec);
  cJSON* runs = cJSON_AddArrayToObject(comparison, "runs");
  int progress = !a.quiet && cli_stderr_is_terminal(), worst = CLI_OK, ran = 0;
  mb_opt_result results[16];
  for (int i = 0; i < n && !interrupted; i++) {
    char dir[1100];
    snprintf(dir, sizeof dir, "%s/%s", out, algs[i]);
    if (progress) fprintf(stderr, "%s:\n", algs[i]);
    cJSON* summary = NULL;
    code = run_one(a.spec, algs[i], dir, (int)a.maxeval, progress, &results[ran], &summary);
    if (code != CLI_OK) {
      worst = code;
      continue;
    }
    cJSON_AddItemToArray(runs, summary);
    if (status_code(&results[ran]) != CLI_OK && worst == CLI_OK) worst = status_code(&results[ran]);
    snprintf(algs[ran], sizeof algs[0], "%s", results[ran].algorithm);
    ran++;
  }
  print_table_head();
  for (int i = 0; i < ran; i++) print_result_row(&results[i]);
  char file[1200];
  snprintf(file, sizeof file, "%s/comparison.json", out);
  if (ran > 0 && !write_json(file, comparison)) {
    cli_error("--out: cannot write '%s'", file);
    worst = CLI_BAD_INPUT;
  }
  cJSON_Delete(comparison);
  if (ran > 0) {
    plot(out, a.spec, algs, ran);
    printf("wrote %s/comparison.json, %s/convergence.svg and one folder per algorithm\n", out, out);
  }
  return interrupted ? 130 : worst;
}
