/* The history of an optimisation run (history.h). */
#include "history.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

void history_header(const mb_desc* d, FILE* f) {
  const mb_optim_desc* o = &d->optimization;
  const char* objective = d->functional[o->objective].name;
  fprintf(f, "evaluation,seconds,objective");
  for (int v = 0; v < o->nvar; v++) fprintf(f, ",%s", d->param_name[o->var[v].param]);
  for (int k = 0; k < o->ncon; k++) fprintf(f, ",%s", d->functional[o->con[k].functional].name);
  fprintf(f, ",gradient,failed");
  for (int v = 0; v < o->nvar; v++)
    fprintf(f, ",d%s/d%s", objective, d->param_name[o->var[v].param]);
  for (int k = 0; k < o->ncon; k++)
    for (int v = 0; v < o->nvar; v++)
      fprintf(f, ",d%s/d%s", d->functional[o->con[k].functional].name,
              d->param_name[o->var[v].param]);
  fprintf(f, "\n");
  fflush(f);
}

void history_row(FILE* f, const mb_opt_evaluation* e) {
  fprintf(f, "%d,%.6f,%.17g", e->index, e->seconds, e->failed ? NAN : e->objective);
  for (int v = 0; v < e->nvar; v++) fprintf(f, ",%.17g", e->x[v]);
  for (int k = 0; k < e->ncon; k++) fprintf(f, ",%.17g", e->failed ? NAN : e->c[k]);
  fprintf(f, ",%d,%d", e->with_gradient, e->failed);
  const int gradients = e->df != NULL;
  for (int v = 0; v < e->nvar; v++) gradients ? fprintf(f, ",%.17g", e->df[v]) : fputc(',', f);
  for (int j = 0; j < e->ncon * e->nvar; j++)
    gradients ? fprintf(f, ",%.17g", e->dc[j]) : fputc(',', f);
  fputc('\n', f);
  fflush(f);
}

/* one field of a row: a number, or (when `empty_ok`) nothing; 0 when it is neither */
static int parse_field(const char* text, size_t length, int empty_ok, double* out) {
  if (length == 0) {
    *out = NAN;
    return empty_ok;
  }
  char buf[64], *end;
  if (length >= sizeof buf) return 0;
  memcpy(buf, text, length);
  buf[length] = 0;
  *out = strtod(buf, &end);
  return *end == 0;
}

/* fields of a row: evaluation, seconds, objective, x, c, gradient, failed, then the gradients */
static int row_fields(int nvar, int ncon) {
  return 5 + nvar + ncon + nvar * (1 + ncon);
}

/* Parses one row (the text up to its newline) into e, whose arrays point into `values`
   (the row's numbers, in file order); prints the error and returns 0 when it is malformed. */
static int parse_row(const char* path, int line, const char* text, const char* end, int nvar,
                     int ncon, double* values, mb_opt_evaluation* e) {
  const int fields = row_fields(nvar, ncon), first_gradient = 5 + nvar + ncon;
  int k = 0;
  for (const char* field = text;; k++) {
    const char* stop = memchr(field, ',', (size_t)(end - field));
    if (!stop) stop = end;
    if (k == fields) {
      cli_error("%s: line %d: more than the %d fields of its header", path, line, fields);
      return 0;
    }
    /* gradients are empty without them; every other field is a number */
    if (!parse_field(field, (size_t)(stop - field), k >= first_gradient, &values[k])) {
      cli_error("%s: line %d, field %d: '%.*s' is not a number", path, line, k + 1,
                (int)(stop - field < 40 ? stop - field : 40), field);
      return 0;
    }
    if (stop == end) break;
    field = stop + 1;
  }
  if (k + 1 < fields) {
    cli_error("%s: line %d: %d fields, expected %d", path, line, k + 1, fields);
    return 0;
  }
  const double index = values[0], gradient = values[3 + nvar + ncon],
               failed = values[4 + nvar + ncon];
  if (index != line - 1 || (gradient != 0 && gradient != 1) || (failed != 0 && failed != 1)) {
    cli_error(
        "%s: line %d: evaluation %g, gradient %g, failed %g: expected evaluation %d and "
        "0 or 1",
        path, line, index, gradient, failed, line - 1);
    return 0;
  }
  const int with_gradient = gradient == 1 && failed == 0;
  for (int j = first_gradient; j < fields; j++)
    if (with_gradient != !isnan(values[j])) {
      cli_error("%s: line %d: gradient %s, but field %d is %s", path, line,
                with_gradient ? "1" : "0 or failed", j + 1, with_gradient ? "empty" : "set");
      return 0;
    }
  *e = (mb_opt_evaluation){.index = line - 1,
                           .nvar = nvar,
                           .ncon = ncon,
                           .seconds = values[1],
                           .objective = values[2],
                           .x = values + 3,
                           .c = values + 3 + nvar,
                           .with_gradient = gradient == 1,
                           .failed = failed == 1,
                           .df = with_gradient ? values + first_gradient : NULL,
                           .dc = with_gradient ? values + first_gradient + nvar : NULL};
  return 1;
}

int history_read(const char* path, const mb_desc* d, history_record* r) {
  memset(r, 0, sizeof *r);
  const mb_optim_desc* o = &d->optimization;
  const int nvar = o->nvar, ncon = o->ncon, fields = row_fields(nvar, ncon);
  char* header = NULL;
  size_t header_length = 0;
  FILE* h = open_memstream(&header, &header_length);
  if (h) {
    history_header(d, h);
    fclose(h);
  }
  size_t size = 0;
  char* text = cli_read_file(path, &size);
  int code = CLI_BAD_INPUT;
  if (!header || !text) {
    cli_error("%s: cannot read the history", path);
    goto done;
  }
  if (size < header_length && !memcmp(text, header, size)) {
    /* killed before its header was whole: no evaluation yet */
    r->dropped_partial_row = size > 0;
    code = CLI_OK;
    goto done;
  }
  if (size < header_length || memcmp(text, header, header_length)) {
    cli_error("%s: its first line is not the header of this spec's history (%.60s...)", path,
              header);
    goto done;
  }
  /* whole rows only: a row without its newline was cut short by a kill */
  size_t rows_end = size;
  while (rows_end > header_length && text[rows_end - 1] != '\n') rows_end--;
  r->dropped_partial_row = rows_end < size;
  int rows = 0;
  for (size_t i = header_length; i < rows_end; i++) rows += text[i] == '\n';
  r->rows = calloc((size_t)rows + 1, sizeof *r->rows);
  r->values = calloc((size_t)rows * fields + 1, sizeof(double));
  if (!r->rows || !r->values) {
    cli_error("%s: out of memory", path);
    goto done;
  }
  const char* line = text + header_length;
  for (int k = 0; k < rows; k++) {
    const char* end = memchr(line, '\n', (size_t)(text + rows_end - line));
    if (!parse_row(path, k + 2, line, end, nvar, ncon, r->values + (size_t)k * fields, &r->rows[k]))
      goto done;
    line = end + 1;
  }
  r->count = rows;
  code = CLI_OK;
done:
  free(header);
  free(text);
  if (code != CLI_OK) history_free(r);
  return code;
}

void history_free(history_record* r) {
  free(r->rows);
  free(r->values);
  memset(r, 0, sizeof *r);
}
