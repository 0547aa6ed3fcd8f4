/* mbopt: the command line. Each command is a function with its own --help. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cblas.h>

#include "cli.h"
#include "commands.h"

typedef struct command {
  const char* name;
  int (*run)(int argc, char** argv);
  const char* summary;
} command;

static const command commands[] = {
    {"simulate", cmd_simulate, "integrate a model with ALI3-P and write its outputs"},
    {"gradient", cmd_gradient,
     "functionals and their exact gradients (forward or adjoint sensitivity)"},
    {"check", cmd_check, "analytic gradient against central finite differences"},
    {"bench", cmd_bench, "time a simulation, the gradients and finite differences side by side"},
    {"optimize", cmd_optimize, "minimise a spec's objective over its design variables"},
    {"compare", cmd_compare, "run a spec's optimisation with several algorithms side by side"},
    {"view", cmd_view, "simulate and write an HTML page: the mechanism in 3-D and its outputs"},
};

static void usage(FILE* out) {
  fprintf(out,
          "Usage: mbopt COMMAND [ARGS]\n"
          "Gradient-based design optimisation of multibody systems.\n\n"
          "Commands:\n");
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
  fprintf(out,
          "\nRun 'mbopt COMMAND --help' for the options of a command. An option takes its value\n"
          "as '--name value' or '--name=value'; '--' ends the options.\n"
          "'mbopt --version' prints the version.\n"
          "Exit codes: 0 success, 1 the computation failed, 2 bad command line,\n"
          "3 invalid model or unreadable file.\n");
}

int main(int argc, char** argv) {
  /* BLAS serves only the initial assembly (least squares and singular values of matrices of a
     few hundred rows), where threads cost more than they bring: one, unless the caller's
     OPENBLAS_NUM_THREADS says otherwise */
  if (!getenv("OPENBLAS_NUM_THREADS")) openblas_set_num_threads(1);
  if (argc < 2) {
    usage(stderr);
    return CLI_USAGE;
  }
  if (!strcmp(argv[1], "--version")) {
    printf("mbopt %s\n", mb_version());
    return CLI_OK;
  }
  if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
    usage(stdout);
    return CLI_OK;
  }
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    if (!strcmp(argv[1], commands[i].name)) return commands[i].run(argc - 1, argv + 1);
  cli_error("unknown command '%s' (run 'mbopt --help')", argv[1]);
  return CLI_USAGE;
}
