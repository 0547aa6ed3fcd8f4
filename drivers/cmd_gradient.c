/* mbopt gradient: the functionals of a spec and their exact gradients with respect to its
   parameters, by forward or adjoint sensitivity. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "cli.h"
#include "commands.h"
#include "mbopt/gradient.h"

static void gradient_help(FILE* out) {
  fprintf(out,
          "Usage: mbopt gradient SPEC.json [options]\n"
          "Simulates the model of SPEC.json and prints its functionals and their gradients with\n"
          "respect to every parameter of its \"parameters\" table.\n\n"
          "Options:\n"
          "  --method M       forward (direct differentiation), adjoint (discrete adjoint) or\n"
          "                   auto: adjoint when the parameters outnumber the functionals,\n"
          "                   else forward (default: the spec's \"sensitivity\", else auto)\n"
          "  --checkpoint K   adjoint only: store every K-th state and recompute the segments\n"
          "                   in between (less memory, about one more simulation)\n");
  cli_run_options_help(out, 19, CLI_REFRESH_DEFAULT, 1);
  fprintf(out,
          "  --json           print one JSON object: parameters, functionals with value and\n"
          "                   gradient, method, reason, substepped_steps, seconds\n"
          "                   (memory_bytes for adjoint)\n"
          "  -h, --help       show this help\n");
}

static void print_table(const mb_desc* d, const mb_model* m, const double* psi, const double* grad,
                        const mb_gradient_info* info, double seconds) {
  const int p = d->nparam;
  printf("model     %s: %d parameters, %d functionals\n", d->name, p, m->nfunctional);
  printf("method    %s (%s)\n", mb_method_name(info->method), info->reason);
  if (info->method == MB_METHOD_ADJOINT)
    printf("memory    %.3g MB of trajectory\n", info->memory_bytes / 1e6);
  if (info->substepped_steps)
    printf("steps     %d retried on sub-steps (simulation.max_substeps)\n", info->substepped_steps);
  /* wide tables (many parameters) list one entry per line */
  if (p > 8) {
    for (int f = 0; f < m->nfunctional; f++) {
      printf("%s = %.9g\n", m->functional_name + MB_NAME_LEN * f, psi[f]);
      for (int k = 0; k < p; k++) printf("  %-16s %16.9g\n", d->param_name[k], grad[f * p + k]);
    }
  } else {
    printf("%-24s", "");
    for (int k = 0; k < p; k++) printf(" %14s", d->param_name[k]);
    printf("\n");
    for (int f = 0; f < m->nfunctional; f++) {
      char label[MB_NAME_LEN + 32];
      snprintf(label, sizeof label, "%s = %.9g", m->functional_name + MB_NAME_LEN * f, psi[f]);
      printf("%-24s", label);
      for (int k = 0; k < p; k++) printf(" %14.8g", grad[f * p + k]);
      printf("\n");
    }
  }
  printf("seconds   %.4f\n", seconds);
}

static void print_json(const mb_desc* d, const mb_model* m, const double* psi, const double* grad,
                       const mb_gradient_info* info, double seconds) {
  cJSON* o = cJSON_CreateObject();
  cJSON* params = cJSON_AddArrayToObject(o, "parameters");
  for (int k = 0; k < d->nparam; k++)
    cJSON_AddItemToArray(params, cJSON_CreateString(d->param_name[k]));
  cJSON* funcs = cJSON_AddArrayToObject(o, "functionals");
  for (int f = 0; f < m->nfunctional; f++) {
    cJSON* item = cJSON_CreateObject();
    cJSON_AddStringToObject(item, "name", m->functional_name + MB_NAME_LEN * f);
    cJSON_AddNumberToObject(item, "value", psi[f]);
    cJSON_AddItemToObject(item, "gradient",
                          cJSON_CreateDoubleArray(grad + (size_t)f * d->nparam, d->nparam));
    cJSON_AddItemToArray(funcs, item);
  }
  cJSON_AddStringToObject(o, "method", mb_method_name(info->method));
  cJSON_AddStringToObject(o, "reason", info->reason);
  if (info->method == MB_METHOD_ADJOINT)
    cJSON_AddNumberToObject(o, "memory_bytes", (double)info->memory_bytes);
  cJSON_AddNumberToObject(o, "substepped_steps", info->substepped_steps);
  cJSON_AddNumberToObject(o, "seconds", seconds);
  cli_print_json(o);
  cJSON_Delete(o);
}

typedef struct gradient_args {
  const char* spec;
  cli_run run;
  int method; /* mb_method; -1: the spec's */
  long checkpoint;
  int json;
} gradient_args;

static int gradient_parse(int argc, char** argv, gradient_args* a) {
  *a = (gradient_args){.run = CLI_RUN_SPEC, .method = -1};
  const cli_option options[] = {
      CLI_RUN_OPTIONS(a->run),
      CLI_THREADS_OPTION(a->run),
      CLI_METHOD_OPTION(a->method),
      {.name = "--checkpoint", .kind = CLI_COUNT, .target = &a->checkpoint, .limit = INT_MAX},
      {.name = "--json", .kind = CLI_FLAG, .target = &a->json, .limit = 1}};
  return cli_parse_options("gradient", argc, argv, options, sizeof options / sizeof *options, 1,
                           &a->spec);
}

int cmd_gradient_parse(int argc, char** argv) {
  gradient_args a;
  return gradient_parse(argc, argv, &a);
}

int cmd_gradient(int argc, char** argv) {
  gradient_args a;
  int code = gradient_parse(argc, argv, &a);
  if (code != CLI_OK) return cli_parse_exit(code, gradient_help);
  const char* spec = a.spec;

  mb_desc d;
  code = cli_load_desc(spec, &a.run, &d);
  if (code != CLI_OK) return code;
  mb_model* m = NULL;
  double *psi = NULL, *grad = NULL;
  if ((code = cli_compile(spec, &d, &m)) != CLI_OK) goto done;
  if (m->nfunctional == 0 || d.nparam == 0) {
    cli_error("%s: gradient needs \"functionals\" and \"parameters\" in the spec", spec);
    code = CLI_BAD_INPUT;
    goto done;
  }
  psi = calloc(m->nfunctional, sizeof(double));
  grad = calloc((size_t)m->nfunctional * d.nparam, sizeof(double));
  mb_gradient_info info;
  mb_error err;
  mb_error_clear(&err);
  const mb_method chosen = (mb_method)(a.method >= 0 ? a.method : d.sensitivity);
  double start = cli_now();
  mb_status st = mb_gradient(&d, m, chosen, (int)a.checkpoint, psi, grad, &info, &err);
  double seconds = cli_now() - start;
  code = cli_exit_code(st);
  if (st != MB_OK) {
    cli_error("%s: %s", spec, err.message[0] ? err.message : mb_status_str(st));
    goto done;
  }
  if (a.json)
    print_json(&d, m, psi, grad, &info, seconds);
  else
    print_table(&d, m, psi, grad, &info, seconds);

done:
  free(psi);
  free(grad);
  mb_model_free(m);
  mb_desc_free(&d);
  return code;
}
