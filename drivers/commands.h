/* The mbopt commands; each takes its own argv (argv[0] is the command name). */
#ifndef MBOPT_COMMANDS_H
#define MBOPT_COMMANDS_H

int cmd_simulate(int argc, char** argv);
int cmd_gradient(int argc, char** argv);
int cmd_check(int argc, char** argv);
int cmd_bench(int argc, char** argv);
int cmd_optimize(int argc, char** argv);
int cmd_compare(int argc, char** argv);
int cmd_view(int argc, char** argv);

/* Each command's argument parsing alone, as the command does it, with nothing run or written
   (for the fuzzing of the parser); returns CLI_OK, CLI_HELP or CLI_USAGE. */
int cmd_simulate_parse(int argc, char** argv);
int cmd_gradient_parse(int argc, char** argv);
int cmd_check_parse(int argc, char** argv);
int cmd_bench_parse(int argc, char** argv);
int cmd_optimize_parse(int argc, char** argv);
int cmd_compare_parse(int argc, char** argv);
int cmd_view_parse(int argc, char** argv);

#endif
