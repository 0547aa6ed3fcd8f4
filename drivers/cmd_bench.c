/* mbopt bench: the cost of a simulation, of the forward gradient and of a central-difference
   gradient, measured side by side in one run. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "cli.h"
#include "commands.h"
#include "mbopt/gradient.h"

static void bench_help(FILE* out) {
  fprintf(out,
          "Usage: mbopt bench SPEC.json [options]\n"
          "Times, in one run, one simulation of SPEC.json (with its functionals), the gradient of\n"
          "its functionals by forward sensitivity and by adjoint sensitivity, and their\n"
          "central-difference gradient (2 simulations per parameter), and prints the times and\n"
          "their ratios. Each is repeated and the fastest run is kept.\n\n"
          "Options:\n"
          "  --repeat N    runs of each measurement (default 5)\n"
          "  --fd          time central differences even with more than 20 parameters\n"
          "  --no-fd       do not time central differences\n");
  cli_run_options_help(out, 16, CLI_REFRESH_DEFAULT, 1);
  fprintf(out,
          "  --json        print the results as one JSON object\n"
          "  -h, --help    show this help\n");
}

enum { RUN_SIMULATION, RUN_FORWARD, RUN_ADJOINT, RUN_DIFFERENCES, RUN_COUNT };
static const char* run_names[RUN_COUNT] = {"simulation", "forward gradient", "adjoint gradient",
                                           "central differences"};
static const char* run_keys[RUN_COUNT] = {"simulation_seconds", "forward_seconds",
                                          "adjoint_seconds", "central_difference_seconds"};

/* Fastest of `repeat` runs of one kind. */
static double time_runs(mb_desc* d, const mb_model* m, int kind, int repeat, double* psi,
                        double* grad, mb_status* st) {
  double best = INFINITY;
  for (int r = 0; r < repeat && *st == MB_OK; r++) {
    double start = cli_now();
    if (kind == RUN_SIMULATION) {
      *st = cli_functionals(d, m, MB_METHOD_FORWARD, psi, NULL, NULL);
    } else if (kind != RUN_DIFFERENCES) {
      *st = cli_functionals(d, m, kind == RUN_FORWARD ? MB_METHOD_FORWARD : MB_METHOD_ADJOINT, psi,
                            grad, NULL);
    } else {
      /* the same work as `mbopt check` at one level: compile and simulate at rho_k +- h */
      for (int k = 0; k < d->nparam && *st == MB_OK; k++) {
        const double v = d->param_value[k];
        for (int side = 0; side < 2 && *st == MB_OK; side++) {
          mb_model* mk = NULL;
          mb_error err;
          mb_desc_set_param(d, k, v + (side ? -1e-4 : 1e-4) * fmax(fabs(v), 1));
          *st = mb_compile(d, &mk, &err);
          if (*st == MB_OK) *st = cli_functionals(d, mk, MB_METHOD_FORWARD, psi, NULL, NULL);
          mb_model_free(mk);
        }
        mb_desc_set_param(d, k, v);
      }
    }
    best = fmin(best, cli_now() - start);
  }
  return best;
}

typedef struct bench_args {
  const char* spec;
  cli_run run;
  long repeat;
  int json, fd; /* fd: 1 --fd, 0 --no-fd, -1 as the default says */
} bench_args;

static int bench_parse(int argc, char** argv, bench_args* a) {
  *a = (bench_args){.run = CLI_RUN_SPEC, .repeat = 5, .fd = -1};
  const cli_option options[] = {
      CLI_RUN_OPTIONS(a->run),
      CLI_THREADS_OPTION(a->run),
      {.name = "--repeat", .kind = CLI_COUNT, .target = &a->repeat, .limit = 1000000},
      {.name = "--fd", .kind = CLI_FLAG, .target = &a->fd, .limit = 1},
      {.name = "--no-fd", .kind = CLI_FLAG, .target = &a->fd, .limit = 0},
      {.name = "--json", .kind = CLI_FLAG, .target = &a->json, .limit = 1}};
  return cli_parse_options("bench", argc, argv, options, sizeof options / sizeof *options, 1,
                           &a->spec);
}

int cmd_bench_parse(int argc, char** argv) {
  bench_args a;
  return bench_parse(argc, argv, &a);
}

int cmd_bench(int argc, char** argv) {
  bench_args a;
  int code = bench_parse(argc, argv, &a);
  if (code != CLI_OK) return cli_parse_exit(code, bench_help);
  const char* spec = a.spec;
  const long repeat = a.repeat;
  const int json = a.json;
  int fd = a.fd;

  mb_desc d;
  code = cli_load_desc(spec, &a.run, &d);
  if (code != CLI_OK) return code;
  mb_model* m = NULL;
  double *psi = NULL, *grad = NULL;
  if ((code = cli_compile(spec, &d, &m)) != CLI_OK) goto done;
  if (m->nfunctional == 0 || d.nparam == 0) {
    cli_error("%s: bench needs \"functionals\" and \"parameters\" in the spec", spec);
    code = CLI_BAD_INPUT;
    goto done;
  }
  if (fd < 0) fd = d.nparam <= 20;
  psi = calloc(m->nfunctional, sizeof(double));
  grad = calloc((size_t)m->nfunctional * d.nparam, sizeof(double));
  mb_status st = MB_OK;
  double seconds[RUN_COUNT];
  for (int kind = 0; kind < RUN_COUNT; kind++)
    seconds[kind] =
        kind == RUN_DIFFERENCES && !fd ? NAN : time_runs(&d, m, kind, (int)repeat, psi, grad, &st);
  if (st != MB_OK) {
    code = cli_exit_code(st);
    goto done;
  }
  const long steps = mb_step_count(m);
  if (json) {
    cJSON* o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "model", d.name);
    cJSON_AddNumberToObject(o, "parameters", d.nparam);
    cJSON_AddNumberToObject(o, "functionals", m->nfunctional);
    cJSON_AddStringToObject(o, "formulation", mb_formulation_name(m->opt.formulation));
    cJSON_AddNumberToObject(o, "coordinates", mb_model_coordinate_count(m));
    cJSON_AddStringToObject(o, "linear_solver", mb_model_linear_solver(m));
    cJSON_AddNumberToObject(o, "steps", steps);
    cJSON_AddNumberToObject(o, "repeat", repeat);
    for (int kind = 0; kind < RUN_COUNT; kind++) {
      if (isnan(seconds[kind])) continue;
      cJSON_AddNumberToObject(o, run_keys[kind], seconds[kind]);
      char key[64];
      snprintf(key, sizeof key, "%s_over_simulation", run_keys[kind]);
      key[strlen(key) - strlen("_seconds_over_simulation")] = '\0';
      strcat(key, "_over_simulation");
      if (kind > RUN_SIMULATION) cJSON_AddNumberToObject(o, key, seconds[kind] / seconds[0]);
    }
    cli_print_json(o);
    cJSON_Delete(o);
  } else {
    printf(
        "model                 %s: %d %s, %ld steps of %g s, %d parameters, %d "
        "functionals\n",
        d.name, mb_model_coordinate_count(m), mb_model_coordinate_name(m), steps, m->opt.step,
        d.nparam, m->nfunctional);
    printf("fastest of %ld runs     seconds   / simulation\n", repeat);
    for (int kind = 0; kind < RUN_COUNT; kind++)
      if (!isnan(seconds[kind]))
        printf("%-20s  %8.4f   %8.2f\n", run_names[kind], seconds[kind],
               seconds[kind] / seconds[0]);
  }

done:
  free(psi);
  free(grad);
  mb_model_free(m);
  mb_desc_free(&d);
  return code;
}
