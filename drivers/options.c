/* The command-line option parser every command shares (options.h). */
#include "options.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* whole number from 1 to max: decimal digits only (no sign, fraction, exponent or trailing
   text), accumulated without overflow */
static int parse_count(const char* text, long max, long* out) {
  long v = 0;
  const char* c = text;
  for (; *c >= '0' && *c <= '9' && v <= max; c++) v = 10 * v + (*c - '0');
  if (c == text || *c || v < 1 || v > max) return 0;
  *out = v;
  return 1;
}

static int parse_positive(const char* text, double* out) {
  char* end = NULL;
  const double v = strtod(text, &end);
  if (end == text || *end || !isfinite(v) || v <= 0) return 0;
  *out = v;
  return 1;
}

/* Stores the value of option o; prints why not and returns 0 when it is not valid. */
static int store(const cli_option* o, const char* value) {
  switch (o->kind) {
    case CLI_FLAG:
      *(int*)o->target = (int)o->limit;
      return 1;
    case CLI_TEXT:
      *(const char**)o->target = value;
      return 1;
    case CLI_COUNT:
      if (parse_count(value, o->limit, o->target)) return 1;
      cli_error("%s: expected a whole number from 1 to %ld, got '%s'", o->name, o->limit, value);
      return 0;
    case CLI_POSITIVE:
      if (parse_positive(value, o->target)) return 1;
      cli_error("%s: expected a positive number, got '%s'", o->name, value);
      return 0;
    case CLI_CHOICE: {
      const int index = o->choice(value);
      if (index >= 0) {
        *(int*)o->target = index;
        return 1;
      }
      cli_error("%s: expected %s, got '%s'", o->name, o->expected, value);
      return 0;
    }
    case CLI_LIST:
      if (*o->count >= o->limit) {
        cli_error("%s: given more than %ld times", o->name, o->limit);
        return 0;
      }
      ((const char**)o->target)[(*o->count)++] = value;
      return 1;
  }
  return 0;
}

/* edits (insertions, deletions, substitutions) from a to b; names longer than 32 characters are
   not compared (32 is returned) */
static size_t edit_distance(const char* a, const char* b) {
  enum { LONGEST = 32 };
  const size_t na = strlen(a), nb = strlen(b);
  if (na > LONGEST || nb > LONGEST) return LONGEST;
  size_t row[LONGEST + 1];
  for (size_t j = 0; j <= nb; j++) row[j] = j;
  for (size_t i = 1; i <= na; i++) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= nb; j++) {
      const size_t above = row[j];
      const size_t substitute = diagonal + (a[i - 1] != b[j - 1]);
      const size_t shorter = (above < row[j - 1] ? above : row[j - 1]) + 1;
      row[j] = substitute < shorter ? substitute : shorter;
      diagonal = above;
    }
  }
  return row[nb];
}

const char* cli_nearest(const char* name, const char* const* candidates, size_t n) {
  const char* closest = NULL;
  size_t best = 3; /* farther than two edits is no suggestion */
  for (size_t k = 0; k < n; k++) {
    const size_t d = edit_distance(name, candidates[k]);
    if (d < best) best = d, closest = candidates[k];
  }
  return closest;
}

static void unknown_option(const char* command, const char* arg, size_t name_length,
                           const cli_option* options, size_t noptions) {
  char name[40];
  snprintf(name, sizeof name, "%.*s", (int)(name_length < sizeof name - 1 ? name_length : 39), arg);
  const char* names[64];
  for (size_t k = 0; k < noptions; k++) names[k] = options[k].name;
  const char* closest = cli_nearest(name, names, noptions);
  if (closest)
    cli_error("%s: unknown option '%s' (did you mean %s? see 'mbopt %s --help')", command, name,
              closest, command);
  else
    cli_error("%s: unknown option '%s' (see 'mbopt %s --help')", command, name, command);
}

int cli_parse_options(const char* command, int argc, char** argv, const cli_option* options,
                      size_t noptions, int spec_required, const char** spec) {
  unsigned char given[64] = {0};
  if (noptions > sizeof given) return CLI_USAGE; /* a table this long is a programming error */
  *spec = NULL;
  /* a request for help wins over any mistake beside it */
  for (int i = 1; i < argc && strcmp(argv[i], "--"); i++)
    if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) return CLI_HELP;
  int options_end = 0;
  for (int i = 1; i < argc; i++) {
    const char* arg = argv[i];
    if (options_end || arg[0] != '-' || !arg[1]) {
      if (*spec) {
        cli_error("%s: more than one SPEC given ('%s' and '%s')", command, *spec, arg);
        return CLI_USAGE;
      }
      *spec = arg;
      continue;
    }
    if (!strcmp(arg, "--")) {
      options_end = 1;
      continue;
    }
    const char* equals = strncmp(arg, "--", 2) ? NULL : strchr(arg, '=');
    const size_t length = equals ? (size_t)(equals - arg) : strlen(arg);
    size_t k = 0;
    while (k < noptions && (strncmp(options[k].name, arg, length) || options[k].name[length])) k++;
    if (k == noptions) {
      unknown_option(command, arg, length, options, noptions);
      return CLI_USAGE;
    }
    const cli_option* o = &options[k];
    if (given[k] && o->kind != CLI_LIST && o->kind != CLI_FLAG) {
      cli_error("%s: given twice", o->name);
      return CLI_USAGE;
    }
    given[k] = 1;
    const char* value = equals ? equals + 1 : NULL;
    if (o->kind == CLI_FLAG && value) {
      cli_error("%s: takes no value, got '%s'", o->name, arg);
      return CLI_USAGE;
    }
    if (o->kind != CLI_FLAG && !value) {
      /* an option never takes the next option as its value: "--out --quiet" is a forgotten
         value, and --out=--quiet says it was meant */
      if (i + 1 == argc || !strncmp(argv[i + 1], "--", 2)) {
        cli_error("%s: missing value", o->name);
        return CLI_USAGE;
      }
      value = argv[++i];
    }
    if (o->kind != CLI_FLAG && !value[0]) {
      cli_error("%s: empty value", o->name);
      return CLI_USAGE;
    }
    if (!store(o, value)) return CLI_USAGE;
  }
  if (!*spec && spec_required) {
    cli_error("%s: no SPEC given (usage: mbopt %s SPEC.json [options]; see 'mbopt %s --help')",
              command, command, command);
    return CLI_USAGE;
  }
  return CLI_OK;
}

int cli_parse_exit(int code, void (*help)(FILE* out)) {
  if (code != CLI_HELP) return code;
  help(stdout);
  return CLI_OK;
}
