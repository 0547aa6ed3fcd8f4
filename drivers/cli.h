/* Shared pieces of the mbopt command line: argument parsing, loading a model, reporting errors. */
#ifndef MBOPT_CLI_H
#define MBOPT_CLI_H

#include <signal.h>
#include <stdio.h>

#include "mbopt/mbopt.h"
#include "mbopt/gradient.h"
#include "options.h"

/* exit codes */
enum {
  CLI_OK = 0,
  CLI_RUN_FAILED = 1, /* the computation failed (Newton divergence, NaN, ...) */
  CLI_USAGE = 2,      /* bad command line */
  CLI_BAD_INPUT = 3   /* the model or spec is invalid, or a file cannot be read or written */
};

/* Longest path the command line builds, with its terminating zero */
#define CLI_PATH_MAX 4096

/* Prints "mbopt: error: <message>" on stderr (one line). */
void cli_error(const char* format, ...) __attribute__((format(printf, 1, 2)));

/* Formats a path into buf (CLI_PATH_MAX bytes); a path that would not fit is an error naming
   `option` (printed), never cut: returns 0 then. */
int cli_path(char* buf, const char* option, const char* format, ...)
    __attribute__((format(printf, 3, 4)));

/* Most --set options of one command line */
#define CLI_MAX_SET 64

/* Command-line overrides of the spec's simulation settings and parameters (values <= 0 and a
   negative linear_solver, refresh or threads keep the spec's). */
typedef struct cli_run {
  double step, t_end;
  int linear_solver;            /* mb_linear_solver */
  int refresh;                  /* simulation.tangent_refresh: 0 step, 1 iteration */
  int threads;                  /* simulation.threads: 0 chooses, 1 or 2 */
  int formulation;              /* simulation.formulation: mb_formulation */
  int equilibrium;              /* 1: start from the static equilibrium (--equilibrium) */
  const char* parameters;       /* --parameters: a summary.json or comparison.json, or NULL */
  const char* set[CLI_MAX_SET]; /* --set NAME=VALUE, applied after --parameters */
  int nset;
} cli_run;
#define CLI_RUN_SPEC \
  { .linear_solver = -1, .refresh = -1, .threads = -1, .formulation = -1 }

/* Loads a model description and applies the overrides of run (may be NULL): settings, then the
   parameters of --parameters, then each --set; from then on SIGINT, SIGTERM and SIGHUP stop its
   runs at their next time step (MB_INTERRUPTED). Returns an exit code. */
int cli_load_desc(const char* path, const cli_run* run, mb_desc* d);

/* Sets the parameter called `name` to value, checked as the loader checks it; prints why not,
   naming `where`, and returns an exit code. */
int cli_set_named(mb_desc* d, const char* name, double value, const char* where);

/* The contents of a file with a terminating zero, its length in *size (may be NULL); NULL when
   it cannot be read (errno says why). Free with free(). */
char* cli_read_file(const char* path, size_t* size);

/* o as JSON text (formatted for people, or on one line), every number written so that it reads
   back to the same double (cJSON's printer drops the last bits); NULL when out of memory. Free
   with cJSON_free. */
struct cJSON;
char* cli_json_text(const struct cJSON* o, int formatted);

/* The summary that --parameters takes its values from: root itself (an optimisation's
   summary.json), or the best run of a comparison.json (the lowest objective of the runs that did
   not fail; NULL when none) */
const struct cJSON* cli_parameters_run(const struct cJSON* root);

/* o on one line of stdout, as cli_json_text writes it */
void cli_print_json(const struct cJSON* o);

/* Compiles a description, printing the error; returns an exit code. */
int cli_compile(const char* path, const mb_desc* d, mb_model** m);

/* Runs the functionals of m (compiled from d) and, when grad is not NULL, their gradients by
   `method` (mb_method), saying in info (may be NULL) which method ran and why; prints the error.
   Returns a library status. */
mb_status cli_functionals(const mb_desc* d, const mb_model* m, int method, double* psi,
                          double* grad, mb_gradient_info* info);

/* simulation.threads as the command line gives it: 0, 1 or 2; -1 otherwise */
int cli_threads_parse(const char* text);

/* The options of cli_run, shared by the commands that simulate a SPEC (entries of their
   cli_option tables), and --threads for those that may run an adjoint */
#define CLI_RUN_OPTIONS(run)                                                                 \
  {.name = "--step", .kind = CLI_POSITIVE, .target = &(run).step},                           \
      {.name = "--t-end", .kind = CLI_POSITIVE, .target = &(run).t_end},                     \
      {.name = "--set",                                                                      \
       .kind = CLI_LIST,                                                                     \
       .target = (run).set,                                                                  \
       .limit = CLI_MAX_SET,                                                                 \
       .count = &(run).nset},                                                                \
      {.name = "--parameters", .kind = CLI_TEXT, .target = &(run).parameters},               \
      {.name = "--equilibrium", .kind = CLI_FLAG, .target = &(run).equilibrium, .limit = 1}, \
      {.name = "--linear-solver",                                                            \
       .kind = CLI_CHOICE,                                                                   \
       .target = &(run).linear_solver,                                                       \
       .choice = mb_linear_solver_parse,                                                     \
       .expected = "auto, dense, sparse or klu"},                                            \
      {.name = "--formulation",                                                              \
       .kind = CLI_CHOICE,                                                                   \
       .target = &(run).formulation,                                                         \
       .choice = mb_formulation_parse,                                                       \
       .expected = "natural or joint"},                                                      \
  {                                                                                          \
    .name = "--tangent-refresh", .kind = CLI_CHOICE, .target = &(run).refresh,               \
    .choice = mb_tangent_refresh_parse, .expected = "step or iteration"                      \
  }
#define CLI_THREADS_OPTION(run)                                        \
  {                                                                    \
    .name = "--threads", .kind = CLI_CHOICE, .target = &(run).threads, \
    .choice = cli_threads_parse, .expected = "0, 1 or 2"               \
  }

/* --method: an mb_method in *(int*)target */
#define CLI_METHOD_OPTION(method)                                                           \
  {                                                                                         \
    .name = "--method", .kind = CLI_CHOICE, .target = &(method), .choice = mb_method_parse, \
    .expected = "forward, adjoint or auto"                                                  \
  }

/* Prints the help lines of those options, their descriptions from column `column` (0-based);
   refresh_default: what --tangent-refresh defaults to; --threads only with `adjoint` (the
   commands that may run an adjoint). */
void cli_run_options_help(FILE* out, int column, const char* refresh_default, int adjoint);

/* The default of --tangent-refresh, as the help says it */
#define CLI_REFRESH_DEFAULT "the spec's simulation.tangent_refresh, else step"

/* Exit code of a library status. */
int cli_exit_code(mb_status st);

/* The first of SIGINT, SIGTERM or SIGHUP received since cli_signals_install (0: none). A command
   stops at its next safe point (end of a time step or an evaluation), completes its files and
   exits with cli_signal_exit_code(). A second signal ends the process at once, with a one-line
   note, leaving files as they are between rows. */
extern volatile sig_atomic_t cli_stop_signal;
void cli_signals_install(void);

/* 128 + the signal received (130 SIGINT, 143 SIGTERM, 129 SIGHUP; 130 when none was) */
int cli_signal_exit_code(void);

/* Seconds of a monotonic clock. */
double cli_now(void);

/* 1 when stderr is a terminal (progress lines are shown). */
int cli_stderr_is_terminal(void);

#endif
