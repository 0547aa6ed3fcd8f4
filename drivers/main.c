/* mbopt: the command line. Each command is a function with its own --help. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "commands.h"

typedef struct command {
  const char* name;
  int (*run)(int argc, char** argv);
  const char* summary;
} command;

static const command commands[] = {
    {"simulate", cmd_simulate, "integrate a model with ALI3-P and write its outputs"},
    {"gradient", cmd_gradient, "functionals and their exact gradients (forward sensitivity)"},
    {"check", cmd_check, "analytic gradient against central finite differences"},
    {"bench", cmd_bench, "time a simulation, the gradients and finite differences side by side"},
    {"optimize", cmd_optimize, "minimise a spec's objective over its design variables"},
    {"compare", cmd_compare, "run a spec's optimisation with several algorithms side by side"},
};

static void usage(FILE* out) {
  fprintf(out,
          "Usage: mbopt COMMAND [ARGS]\n"
          "Gradient-based design optimisation of multibody systems.\n\n"
          "Commands:\n");
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
  fprintf(out,
          "\nRun 'mbopt COMMAND --help' for the options of a command.\n"
          "Exit codes: 0 success, 1 the computation failed, 2 bad command line,\n"
          "3 invalid model or unreadable file.\n");
}

int main(int argc, char** argv) {
  /* The matrices are small (a few hundred rows at most), and BLAS threads only cost: OpenBLAS
     starts them when it loads, before main, and they spin between calls even after
     openblas_set_num_threads(1) (the five-bar: 0.053 s a simulation against 0.034 s without
     threads). OpenBLAS reads OPENBLAS_NUM_THREADS only when it loads, so without it the program
     runs itself again with it set to 1; the caller's value, when set, decides. */
  if (!getenv("OPENBLAS_NUM_THREADS") && setenv("OPENBLAS_NUM_THREADS", "1", 1) == 0)
    execv("/proc/self/exe", argv); /* returns only on failure: go on with the threads */
  if (argc < 2) {
    usage(stderr);
    return CLI_USAGE;
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
