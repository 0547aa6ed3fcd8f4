/* Shared pieces of the mbopt command line. */
#include "cli.h"

#include <cJSON.h>

#include "mbopt/gradient.h"
#include "mbopt/sensitivity.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

void cli_error(const char* format, ...) {
  va_list args;
  va_start(args, format);
  fputs("mbopt: error: ", stderr);
  vfprintf(stderr, format, args);
  fputc('\n', stderr);
  va_end(args);
}

int cli_path(char* buf, const char* option, const char* format, ...) {
  va_list args;
  va_start(args, format);
  const int n = vsnprintf(buf, CLI_PATH_MAX, format, args);
  va_end(args);
  if (n < 0 || n >= CLI_PATH_MAX) {
    cli_error("%s: path longer than %d characters", option, CLI_PATH_MAX - 1);
    return 0;
  }
  return 1;
}

int cli_exit_code(mb_status st) {
  switch (st) {
    case MB_OK:
      return CLI_OK;
    case MB_ERR_IO:
    case MB_ERR_JSON:
    case MB_ERR_MODEL:
    case MB_ERR_ASSEMBLY:
    case MB_ERR_SINGULAR:
    case MB_ERR_ARGUMENT:
      return CLI_BAD_INPUT;
    case MB_INTERRUPTED:
      return cli_signal_exit_code();
    default:
      return CLI_RUN_FAILED;
  }
}

int cli_set_named(mb_desc* d, const char* name, double value, const char* where) {
  mb_error err;
  if (mb_desc_set_named(d, name, value, &err) == MB_OK) return CLI_OK;
  cli_error("%s: %s", where, err.message);
  return CLI_USAGE;
}

/* Sets parameter NAME of d from "NAME=VALUE" (option --set); prints why not and returns an exit
   code. */
static int set_parameter(mb_desc* d, const char* assignment) {
  const char* eq = strchr(assignment, '=');
  char name[MB_NAME_LEN], *end;
  if (!eq || eq == assignment || (size_t)(eq - assignment) >= sizeof name) {
    cli_error("--set: expected NAME=VALUE, got '%s'", assignment);
    return CLI_USAGE;
  }
  memcpy(name, assignment, (size_t)(eq - assignment));
  name[eq - assignment] = 0;
  const double value = strtod(eq + 1, &end);
  if (end == eq + 1 || *end) {
    cli_error("--set: '%s' is not a number", eq + 1);
    return CLI_USAGE;
  }
  return cli_set_named(d, name, value, "--set");
}

char* cli_read_file(const char* path, size_t* size) {
  FILE* f = fopen(path, "rb");
  if (!f) return NULL;
  char* text = NULL;
  long n = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
  if (n >= 0 && fseek(f, 0, SEEK_SET) == 0 && (text = malloc((size_t)n + 1))) {
    if (fread(text, 1, (size_t)n, f) != (size_t)n) {
      free(text);
      text = NULL;
    } else {
      text[n] = 0;
      if (size) *size = (size_t)n;
    }
  }
  fclose(f);
  return text;
}

/* the run of a comparison with the lowest objective among those that did not fail */
static const cJSON* best_run(const cJSON* runs) {
  const cJSON* best = NULL;
  double lowest = INFINITY;
  for (const cJSON* r = runs->child; r; r = r->next) {
    const cJSON* f = cJSON_GetObjectItemCaseSensitive(r, "objective");
    const cJSON* status = cJSON_GetObjectItemCaseSensitive(r, "status");
    if (!cJSON_IsNumber(f) || !(f->valuedouble < lowest) || !cJSON_IsString(status) ||
        !strcmp(status->valuestring, "failed"))
      continue;
    best = r, lowest = f->valuedouble;
  }
  return best;
}

const cJSON* cli_parameters_run(const cJSON* root) {
  const cJSON* runs = cJSON_GetObjectItemCaseSensitive(root, "runs");
  return cJSON_IsArray(runs) ? best_run(runs) : root;
}

/* Sets the parameters of d from the "parameters" and "x" of an optimisation's summary.json, or of
   the best run of a comparison.json (option --parameters); prints why not and returns an exit
   code. */
static int set_parameters_from_summary(mb_desc* d, const char* path) {
  char* text = cli_read_file(path, NULL);
  if (!text) {
    cli_error("--parameters: cannot read '%s'", path);
    return CLI_BAD_INPUT;
  }
  cJSON* root = cJSON_Parse(text);
  free(text);
  const cJSON* run = cli_parameters_run(root);
  const cJSON* names = cJSON_GetObjectItemCaseSensitive(run, "parameters");
  const cJSON* x = cJSON_GetObjectItemCaseSensitive(run, "x");
  int code = CLI_OK;
  if (!cJSON_IsArray(names) || !cJSON_IsArray(x) ||
      cJSON_GetArraySize(names) != cJSON_GetArraySize(x)) {
    cli_error(
        "--parameters: '%s' is neither an optimisation's summary.json nor a comparison.json with "
        "a successful run (arrays \"parameters\" and \"x\" of the same length)",
        path);
    code = CLI_BAD_INPUT;
  }
  for (const cJSON *n = names ? names->child : NULL, *v = x ? x->child : NULL;
       code == CLI_OK && n && v; n = n->next, v = v->next) {
    if (!cJSON_IsString(n) || !cJSON_IsNumber(v)) {
      cli_error("--parameters: '%s': names must be strings and values numbers", path);
      code = CLI_BAD_INPUT;
    } else {
      code = cli_set_named(d, n->valuestring, v->valuedouble, path);
    }
  }
  cJSON_Delete(root);
  return code;
}

int cli_load_desc(const char* path, const cli_run* run, mb_desc* d) {
  mb_error err;
  mb_status st = mb_desc_load_json(path, d, &err);
  if (st != MB_OK) {
    cli_error("%s", err.message);
    return cli_exit_code(st);
  }
  if (run && run->step > 0) d->settings.step = run->step;
  if (run && run->t_end > 0) d->settings.t_end = run->t_end;
  if (run && run->linear_solver >= 0) d->settings.linear_solver = run->linear_solver;
  if (run && run->refresh >= 0) d->settings.refresh_each_iteration = run->refresh;
  if (run && run->threads >= 0) d->settings.threads = run->threads;
  if (run && run->formulation >= 0) d->settings.formulation = run->formulation;
  if (run && run->equilibrium) d->settings.equilibrium = 1;
  /* a signal stops the run at its next time step */
  cli_signals_install();
  d->settings.interrupt = &cli_stop_signal;
  int code = CLI_OK;
  if (d->settings.step > d->settings.t_end) {
    cli_error("%s: step %g is longer than the time span %g", path, d->settings.step,
              d->settings.t_end);
    code = CLI_USAGE;
  }
  if (code == CLI_OK && run && run->parameters)
    code = set_parameters_from_summary(d, run->parameters);
  for (int k = 0; code == CLI_OK && run && k < run->nset; k++) code = set_parameter(d, run->set[k]);
  if (code != CLI_OK) mb_desc_free(d);
  return code;
}

/* number nodes of o turned into raw text: the shortest of 15, 16 or 17 digits that reads back
   exactly; NaN and infinities stay numbers, which cJSON writes as null */
static int exact_numbers(cJSON* o) {
  for (cJSON* c = o; c; c = c->next) {
    if (cJSON_IsNumber(c) && isfinite(c->valuedouble)) {
      char text[32];
      for (int digits = 15; digits <= 17; digits++) {
        snprintf(text, sizeof text, "%.*g", digits, c->valuedouble);
        if (strtod(text, NULL) == c->valuedouble) break;
      }
      c->valuestring = cJSON_malloc(strlen(text) + 1);
      if (!c->valuestring) return 0;
      strcpy(c->valuestring, text);
      c->type = cJSON_Raw;
    }
    if (c->child && !exact_numbers(c->child)) return 0;
  }
  return 1;
}

char* cli_json_text(const cJSON* o, int formatted) {
  cJSON* copy = cJSON_Duplicate(o, 1);
  char* text = NULL;
  if (copy && exact_numbers(copy))
    text = formatted ? cJSON_Print(copy) : cJSON_PrintUnformatted(copy);
  cJSON_Delete(copy);
  return text;
}

void cli_print_json(const cJSON* o) {
  char* text = cli_json_text(o, 0);
  if (text) puts(text);
  cJSON_free(text);
}

int cli_compile(const char* path, const mb_desc* d, mb_model** m) {
  mb_error err;
  mb_status st = mb_compile(d, m, &err);
  if (st != MB_OK) {
    cli_error("%s: %s", path, err.message);
    return cli_exit_code(st);
  }
  return CLI_OK;
}

mb_status cli_functionals(const mb_desc* d, const mb_model* m, int method, double* psi,
                          double* grad, mb_gradient_info* info) {
  mb_error err;
  mb_error_clear(&err);
  mb_status st;
  if (grad) {
    st = mb_gradient(d, m, (mb_method)method, 0, psi, grad, info, &err);
  } else {
    /* the values alone: a simulation, in whichever formulation the model was compiled for */
    mb_data* data = mb_data_create(m);
    st = data ? mb_simulate(m, data, NULL, NULL, &err) : MB_ERR_MEMORY;
    if (st == MB_OK) memcpy(psi, data->psi, sizeof(double) * m->nfunctional);
    mb_data_free(data);
  }
  if (st != MB_OK) cli_error("%s", err.message[0] ? err.message : mb_status_str(st));
  return st;
}

int cli_threads_parse(const char* text) {
  return text[0] >= '0' && text[0] <= '2' && !text[1] ? text[0] - '0' : -1;
}

/* words of text wrapped to lines of at most width characters, each started at column `column`
   (the first one where the caller's cursor stands) */
static void print_wrapped(FILE* out, const char* text, int column, int width) {
  int used = 0;
  while (*text) {
    const int len = (int)strcspn(text, " ");
    if (used > 0 && used + 1 + len > width) {
      fprintf(out, "\n%*s", column, "");
      used = 0;
    } else if (used > 0) {
      fputc(' ', out);
      used++;
    }
    fprintf(out, "%.*s", len, text);
    used += len;
    text += len;
    text += strspn(text, " ");
  }
  fputc('\n', out);
}

void cli_run_options_help(FILE* out, int column, const char* refresh_default, int adjoint) {
  char refresh[256];
  snprintf(refresh, sizeof refresh,
           "step or iteration: the Newton matrix refactorised once per step (then chord "
           "iterations) or at every iteration (default: %s)",
           refresh_default);
  const char* options[][2] = {
      {"--step H", "integration step in s (default: the spec's simulation.step)"},
      {"--t-end T", "final time in s (default: the spec's simulation.t_end)"},
      {"--set NAME=VALUE", "set a parameter of the spec (repeatable)"},
      {"--parameters FILE",
       "set the parameters from an optimisation's summary.json or the best run of a "
       "comparison.json (before any --set)"},
      {"--equilibrium",
       "start from the static equilibrium, as \"initial\": {\"equilibrium\": true} does"},
      {"--linear-solver S",
       "auto, dense, sparse or klu: how the Newton and projection matrices "
       "are factorised (default: the spec's simulation.linear_solver, else "
       "auto)"},
      {"--formulation F",
       "natural or joint: the coordinates of the equations of motion (default: the spec's "
       "simulation.formulation, else natural)"},
      {"--tangent-refresh R", refresh},
      {"--threads N",
       "adjoint only: threads of the backward sweep, 1 or 2; 0 takes 2 from 64 "
       "coordinates when two processors are online (default: the spec's "
       "simulation.threads, else 0)"}};
  const int width = column < 60 ? 88 - column : 28; /* as wide as the hand-set help lines */
  const size_t count = sizeof options / sizeof options[0] - (adjoint ? 0 : 1);
  for (size_t k = 0; k < count; k++) {
    /* the description beside the option when it fits, else from the next line */
    const int name = 2 + (int)strlen(options[k][0]);
    fprintf(out, "  %s", options[k][0]);
    if (name + 2 <= column)
      fprintf(out, "%*s", column - name, "");
    else
      fprintf(out, "\n%*s", column, "");
    print_wrapped(out, options[k][1], column, width);
  }
}

volatile sig_atomic_t cli_stop_signal;
static double first_signal_time;

/* A signal repeated within half a second is the same request: tools such as timeout(1) send it
   to the process and to its group, and a terminal to every process of a pipeline. */
static void on_signal(int sig) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts); /* async-signal-safe */
  const double now = ts.tv_sec + 1e-9 * ts.tv_nsec;
  if (!cli_stop_signal) {
    first_signal_time = now;
    cli_stop_signal = sig;
    return;
  }
  if (now - first_signal_time < 0.5) return;
  static const char note[] = "mbopt: error: stopped at once by a second signal\n";
  const ssize_t written = write(STDERR_FILENO, note, sizeof note - 1);
  (void)written; /* nothing better to do: the process ends either way */
  _exit(128 + sig);
}

void cli_signals_install(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  const int signals[] = {SIGINT, SIGTERM, SIGHUP};
  for (size_t k = 0; k < sizeof signals / sizeof signals[0]; k++) sigaction(signals[k], &sa, NULL);
}

int cli_signal_exit_code(void) {
  return 128 + (cli_stop_signal ? cli_stop_signal : SIGINT);
}

double cli_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

int cli_stderr_is_terminal(void) {
  return isatty(STDERR_FILENO);
}
