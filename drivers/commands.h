/* The mbopt commands; each takes its own argv (argv[0] is the command name). */
#ifndef MBOPT_COMMANDS_H
#define MBOPT_COMMANDS_H

int cmd_simulate(int argc, char** argv);
int cmd_gradient(int argc, char** argv);
int cmd_check(int argc, char** argv);
int cmd_bench(int argc, char** argv);
int cmd_optimize(int argc, char** argv);
int cmd_compare(int argc, char** argv);

#endif
