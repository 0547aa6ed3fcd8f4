/* The command-line option parser every command shares: a table of options per command, each
   taking "--name value" or "--name=value", parsed strictly (numbers whole and in range, choices
   from their list, no option given twice), with one error line naming the option and the reason. */
#ifndef MBOPT_OPTIONS_H
#define MBOPT_OPTIONS_H

#include <stddef.h>
#include <stdio.h>

/* what an option's value is, and where it is stored */
typedef enum cli_kind {
  CLI_FLAG,     /* no value: *(int*)target = limit */
  CLI_TEXT,     /* a non-empty text: *(const char**)target */
  CLI_COUNT,    /* a whole number from 1 to limit: *(long*)target */
  CLI_POSITIVE, /* a finite number > 0: *(double*)target */
  CLI_CHOICE,   /* one of a few names: *(int*)target = choice(value) */
  CLI_LIST      /* a text, repeatable: appended to (const char**)target, at most limit of them,
                   their number in *count */
} cli_kind;

typedef struct cli_option {
  const char* name; /* "--maxeval" */
  cli_kind kind;
  void* target;
  long limit;                      /* CLI_FLAG, CLI_COUNT, CLI_LIST: see cli_kind */
  int (*choice)(const char* text); /* CLI_CHOICE: the value's index, or < 0 when unknown */
  const char* expected; /* CLI_CHOICE: the names, for the message ("step or iteration") */
  int* count;           /* CLI_LIST */
} cli_option;

/* Returned by cli_parse_options for -h or --help: the command prints its help and exits 0. */
#define CLI_HELP (-1)

/* Parses argv[1..argc-1] of `command` against its options: "--" ends the options; the one
   argument that is not an option is the SPEC (*spec; NULL when none), required when
   spec_required. Returns CLI_OK, CLI_HELP, or CLI_USAGE after printing why. */
int cli_parse_options(const char* command, int argc, char** argv, const cli_option* options,
                      size_t noptions, int spec_required, const char** spec);

/* The candidate nearest to name for "did you mean", within two edits (insertions, deletions,
   substitutions; the first of equals), or NULL. */
const char* cli_nearest(const char* name, const char* const* candidates, size_t n);

/* The exit code of a command whose parsing returned `code` (not CLI_OK): for CLI_HELP the help
   printed on stdout and 0, else code. */
int cli_parse_exit(int code, void (*help)(FILE* out));

#endif
