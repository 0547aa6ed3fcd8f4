/* libFuzzer harness of the command-line option parser: the first byte picks a command, the rest
   is its argument list, split at NUL bytes; each command parses it exactly as `mbopt COMMAND ...`
   would, and nothing is run. Built by -DMBOPT_FUZZ=ON with clang; run by scripts/fuzz.sh. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"

enum { MOST_ARGUMENTS = 64 };

int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
  static int (*const parse[])(int, char**) = {
      cmd_simulate_parse, cmd_gradient_parse, cmd_check_parse, cmd_bench_parse,
      cmd_optimize_parse, cmd_compare_parse,  cmd_view_parse};
  if (size == 0) return 0;
  const size_t command = bytes[0] % (sizeof parse / sizeof parse[0]);
  char* text = malloc(size); /* the arguments, each ended by a zero */
  if (!text) return 0;
  memcpy(text, bytes + 1, size - 1);
  text[size - 1] = 0;
  char* argv[MOST_ARGUMENTS + 1];
  int argc = 0;
  argv[argc++] = "command";
  for (char* arg = text; arg < text + size && argc < MOST_ARGUMENTS; arg += strlen(arg) + 1)
    argv[argc++] = arg;
  argv[argc] = NULL;
  parse[command](argc, argv);
  free(text);
  return 0;
}
