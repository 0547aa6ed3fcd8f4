/* JSON model loader: reads the format of docs/model-format.md into an mb_desc and checks every
   field, so that the compiler only ever sees a well-formed, physically meaningful description.
   Each error is one line naming the JSON path of the offending value and the reason, e.g.
   "fivebar.json: bodies[1].mass: must be > 0 (got -1)". */
#include <cJSON.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mbopt/desc.h"

#define PATH_LEN 256              /* JSON paths in messages; longer ones are truncated */
#define REASON_LEN 320            /* the reason part of a message */
#define MAX_VECTOR 100000         /* values of one vector parameter */
#define MAX_PARAM 1000000         /* parameters in all (vector elements included) */
#define MAX_FILE_BYTES (64 << 20) /* size of a model or spec file */
#define PI 3.14159265358979323846

/* a vector parameter "u": parameters first .. first + n - 1 of the description, named "u[0]" ..
   "u[n-1]" */
typedef struct json_vec {
  char name[MB_NAME_LEN];
  int first, n;
} json_vec;

/* the loader state: where messages go, the description being filled and its vector parameters */
typedef struct json_ctx {
  const char* source; /* file name or caller's label, first field of every message */
  mb_desc* d;
  mb_error* err;
  json_vec* vec; /* (nvec) the vector parameters, in the order of "parameters" */
  int nvec;
} json_ctx;

/* returns from the calling function when a step fails (the description owns every allocation,
   so there is nothing to release on the way out) */
#define TRY(expr)                                 \
  do {                                            \
    mb_status try_status_ = (expr);               \
    if (try_status_ != MB_OK) return try_status_; \
  } while (0)

static const char* const joint_type_name[] = {"revolute",  "prismatic", "spherical", "cylindrical",
                                              "universal", "planar",    "fixed"};
static const char* const force_type_name[] = {"spring", "force", "torque", "tyre"};
static const char* const coord_name[] = {"angle", "translation"};
static const char* const axis_name[] = {"x", "y", "z"};
static const char* const euler_name[] = {"yaw", "pitch", "roll"};

/* ---------------------------------------------------------------------------------------------
   messages */

/* replaces line breaks and other control characters (which may come from file names or JSON
   strings) so that the message stays on one line */
static void one_line(mb_error* err) {
  if (!err) return;
  for (char* p = err->message; *p; p++)
    if ((unsigned char)*p < 0x20 || *p == 0x7f) *p = ' ';
}

static mb_status fail(json_ctx* c, const char* path, const char* format, ...)
    __attribute__((format(printf, 3, 4)));

/* stores "<source>: <path>: <reason>" as an MB_ERR_MODEL error */
static mb_status fail(json_ctx* c, const char* path, const char* format, ...) {
  char reason[REASON_LEN];
  va_list args;
  va_start(args, format);
  vsnprintf(reason, sizeof reason, format, args);
  va_end(args);
  mb_error_set(c->err, MB_ERR_MODEL, "%s: %s: %s", c->source, path, reason);
  one_line(c->err);
  return MB_ERR_MODEL;
}

static mb_status no_memory(json_ctx* c) {
  mb_error_set(c->err, MB_ERR_MEMORY, "%s: out of memory while loading the model", c->source);
  one_line(c->err);
  return MB_ERR_MEMORY;
}

/* the JSON type of a value, as messages name it */
static const char* json_type(const cJSON* v) {
  if (cJSON_IsNumber(v)) return "number";
  if (cJSON_IsString(v)) return "string";
  if (cJSON_IsArray(v)) return "array";
  if (cJSON_IsObject(v)) return "object";
  if (cJSON_IsBool(v)) return "boolean";
  if (cJSON_IsNull(v)) return "null";
  return "invalid value";
}

/* "string \"1 kg\"" for strings (the text usually shows the mistake), the bare type otherwise */
static const char* describe(const cJSON* v, char* buf, size_t size) {
  if (cJSON_IsString(v))
    snprintf(buf, size, "string \"%.40s%s\"", v->valuestring,
             strlen(v->valuestring) > 40 ? "..." : "");
  else
    snprintf(buf, size, "%s", json_type(v));
  return buf;
}

/* marks a path cut short by the buffer (only absurdly deep or long keys get there) */
static void path_truncated(char* out, int n) {
  if (n >= PATH_LEN) memcpy(out + PATH_LEN - 4, "...", 4);
}

static void path_key(char* out, const char* path, const char* key) {
  path_truncated(out, path[0] ? snprintf(out, PATH_LEN, "%s.%s", path, key)
                              : snprintf(out, PATH_LEN, "%s", key));
}

static void path_index(char* out, const char* path, int i) {
  path_truncated(out, snprintf(out, PATH_LEN, "%s[%d]", path, i));
}

/* ---------------------------------------------------------------------------------------------
   objects, keys and plain values */

static int compare_keys(const void* a, const void* b) {
  return strcmp((*(const cJSON* const*)a)->string, (*(const cJSON* const*)b)->string);
}

/* rejects keys outside `allowed` (NULL-terminated; NULL allows any key) and repeated keys:
   cJSON keeps duplicates, and a silently ignored second value would be a hard mistake to find.
   Repeats are found by sorting, so that objects with many keys (markers) load in n log n. */
static mb_status check_keys(json_ctx* c, const cJSON* obj, const char* path,
                            const char* const* allowed) {
  char sub[PATH_LEN];
  int n = 0;
  for (const cJSON* a = obj->child; a; a = a->next, n++) {
    if (!allowed) continue;
    int known = 0;
    for (const char* const* k = allowed; *k && !known; k++) known = strcmp(*k, a->string) == 0;
    if (known) continue;
    path_key(sub, path, a->string);
    return fail(c, sub, "unknown key");
  }
  if (n < 2) return MB_OK;
  const cJSON** keys = malloc(sizeof *keys * (size_t)n);
  if (!keys) return mb_error_set(c->err, MB_ERR_MEMORY, "%s: out of memory", c->source);
  n = 0;
  for (const cJSON* a = obj->child; a; a = a->next) keys[n++] = a;
  qsort(keys, (size_t)n, sizeof *keys, compare_keys);
  const char* repeated = NULL;
  for (int i = 1; i < n && !repeated; i++)
    if (strcmp(keys[i - 1]->string, keys[i]->string) == 0) repeated = keys[i]->string;
  free(keys);
  if (!repeated) return MB_OK;
  path_key(sub, path, repeated);
  return fail(c, sub, "duplicate key");
}

static const cJSON* get(const cJSON* obj, const char* key) {
  return cJSON_GetObjectItemCaseSensitive(obj, key);
}

static mb_status expect_object(json_ctx* c, const cJSON* v, const char* path) {
  char what[64];
  if (!cJSON_IsObject(v))
    return fail(c, path, "expected an object, got %s", describe(v, what, sizeof what));
  return MB_OK;
}

static mb_status expect_array(json_ctx* c, const cJSON* v, const char* path) {
  char what[64];
  if (!cJSON_IsArray(v))
    return fail(c, path, "expected an array, got %s", describe(v, what, sizeof what));
  return MB_OK;
}

/* a plain finite number (no parameter binding) */
static mb_status read_number(json_ctx* c, const cJSON* v, const char* path, double* out) {
  char what[64];
  if (!cJSON_IsNumber(v))
    return fail(c, path, "expected a number, got %s", describe(v, what, sizeof what));
  if (!isfinite(v->valuedouble)) return fail(c, path, "not a finite number");
  *out = v->valuedouble;
  return MB_OK;
}

static mb_status read_int(json_ctx* c, const cJSON* v, const char* path, int* out) {
  double x = 0;
  TRY(read_number(c, v, path, &x));
  if (x != floor(x) || x < INT_MIN || x > INT_MAX)
    return fail(c, path, "must be an integer (got %g)", x);
  *out = (int)x;
  return MB_OK;
}

/* the vector parameter called `name` (`len` characters of it), or NULL */
static const json_vec* find_vec(const json_ctx* c, const char* name, size_t len) {
  for (int i = 0; i < c->nvec; i++)
    if (strlen(c->vec[i].name) == len && strncmp(c->vec[i].name, name, len) == 0) return &c->vec[i];
  return NULL;
}

/* the parameter a "$name" reference names (`name` is the text after "$"): a scalar parameter
   "k", an element "u[3]" of a vector parameter (decimal index without leading zeros), or a whole
   vector "u", for which *vec is set (else NULL) and *k is its first element. Returns 0, or -1
   with the reason in why. */
static int resolve_name(const json_ctx* c, const char* name, int* k, const json_vec** vec,
                        char* why, size_t why_size) {
  const char* open = strchr(name, '[');
  *vec = NULL;

  /* a whole vector */
  if ((*vec = find_vec(c, name, strlen(name))) != NULL) {
    *k = (*vec)->first;
    return 0;
  }

  /* an element of a vector: the index must be one the vector has, written as in its name */
  if (open) {
    const json_vec* v = find_vec(c, name, (size_t)(open - name));
    const char* p = open + 1;
    long i = 0;
    int ok = v && *p >= '0' && *p <= '9' && !(p[0] == '0' && p[1] != ']');
    for (; ok && *p >= '0' && *p <= '9'; p++)
      if ((i = 10 * i + (*p - '0')) >= MAX_VECTOR) ok = 0;
    ok = ok && p[0] == ']' && p[1] == '\0' && i < v->n;
    if (ok) {
      *k = v->first + (int)i;
      return 0;
    }
    if (v) {
      snprintf(why, why_size,
               "unknown parameter \"%.64s\" (the vector \"%s\" has %d values: \"$%s[0]\" to "
               "\"$%s[%d]\")",
               name, v->name, v->n, v->name, v->name, v->n - 1);
      return -1;
    }
    if ((size_t)(open - name) < MB_NAME_LEN) {
      char base[MB_NAME_LEN];
      memcpy(base, name, (size_t)(open - name));
      base[open - name] = '\0';
      if (mb_desc_param_index(c->d, base) >= 0) {
        snprintf(why, why_size,
                 "unknown parameter \"%.64s\" (\"%s\" is a scalar parameter: write \"$%s\")", name,
                 base, base);
        return -1;
      }
    }
  }

  /* a scalar parameter */
  *k = open ? -1 : mb_desc_param_index(c->d, name);
  if (*k >= 0) return 0;
  snprintf(why, why_size, "unknown parameter \"%.64s\" (not in \"parameters\")", name);
  return -1;
}

/* resolve_name, failing with the reason at `path` */
static mb_status find_param(json_ctx* c, const char* path, const char* name, int* k,
                            const json_vec** vec) {
  char why[REASON_LEN];
  if (resolve_name(c, name, k, vec, why, sizeof why)) return fail(c, path, "%s", why);
  return MB_OK;
}

/* a parameter an expression reads: a scalar or one element of a vector */
static int resolve_scalar(const char* name, char* why, size_t why_size, void* user) {
  const json_ctx* c = user;
  int k;
  const json_vec* vec;
  if (resolve_name(c, name, &k, &vec, why, why_size)) return -1;
  if (!vec) return k;
  snprintf(why, why_size, "\"$%s\" is a vector parameter (%d values); use \"$%s[i]\"", vec->name,
           vec->n, vec->name);
  return -1;
}

/* 1 when text is one parameter reference, "$" and a name with no operator, space or
   parenthesis (a '-' only inside brackets, "$u[-1]"), so that a mistyped reference gets the
   messages of references; any other string is an expression */
static int is_reference(const char* text) {
  if (text[0] != '$') return 0;
  int in_brackets = 0;
  for (const char* p = text + 1; *p; p++) {
    if (*p == '[' || *p == ']') in_brackets = *p == '[';
    if (strchr(" \t+*/^(),$", *p) || (*p == '-' && !in_brackets)) return 0;
  }
  return 1;
}

/* the expression `text` (a scalar at `path`) parsed into d's expressions and evaluated */
static mb_status read_expression(json_ctx* c, const char* text, const char* path, mb_real* out) {
  mb_desc* d = c->d;
  char why[REASON_LEN];
  mb_expr e;
  if (mb_expr_parse(text, resolve_scalar, c, &e, why, sizeof why))
    return fail(c, path, "expression \"%.80s\": %s", text, why);
  const double value = mb_expr_eval(&e, d->param_value, -1, NULL);
  mb_expr* grown = realloc(d->expr, sizeof(mb_expr) * ((size_t)d->nexpr + 1));
  if (!grown) {
    mb_expr_free(&e);
    return no_memory(c);
  }
  snprintf(e.where, sizeof e.where, "%.*s", (int)sizeof e.where - 1, path);
  d->expr = grown;
  d->expr[d->nexpr++] = e;
  if (!isfinite(value))
    return fail(c, path, "expression \"%.80s\" = %g is not a finite number", text, value);
  *out = (mb_real){value, -1, d->nexpr};
  return MB_OK;
}

/* a scalar: a finite number, "$name" bound to the current value of a parameter (a scalar
   parameter or one element "$u[i]" of a vector parameter), or an expression of parameters */
static mb_status read_real(json_ctx* c, const cJSON* v, const char* path, mb_real* out) {
  char what[64];
  if (cJSON_IsNumber(v)) {
    if (!isfinite(v->valuedouble)) return fail(c, path, "not a finite number");
    *out = (mb_real){v->valuedouble, -1, 0};
    return MB_OK;
  }
  if (cJSON_IsString(v) && is_reference(v->valuestring)) {
    const json_vec* vec;
    int k;
    TRY(find_param(c, path, v->valuestring + 1, &k, &vec));
    if (vec)
      return fail(c, path, "\"$%s\" is a vector parameter (%d values); use \"$%s[i]\"", vec->name,
                  vec->n, vec->name);
    *out = (mb_real){c->d->param_value[k], k, 0};
    return MB_OK;
  }
  if (cJSON_IsString(v)) return read_expression(c, v->valuestring, path, out);
  return fail(c, path, "expected a number, \"$parameter\" or an expression, got %s",
              describe(v, what, sizeof what));
}

/* an array of scalars of variable length (polynomial coefficients, table values, B-spline
   coefficients): a JSON array, or "$u" naming a whole vector parameter, element i bound to u[i] */
typedef struct scalar_list {
  const cJSON* array;  /* the JSON array, or NULL */
  const json_vec* vec; /* the vector parameter, or NULL */
  int n;               /* number of scalars */
} scalar_list;

static mb_status read_scalar_list(json_ctx* c, const cJSON* v, const char* path, scalar_list* l) {
  char what[64];
  l->array = NULL, l->vec = NULL, l->n = 0;
  if (cJSON_IsArray(v)) {
    l->array = v;
    l->n = cJSON_GetArraySize(v);
    return MB_OK;
  }
  if (cJSON_IsString(v) && v->valuestring[0] == '$') {
    int k;
    TRY(find_param(c, path, v->valuestring + 1, &k, &l->vec));
    if (!l->vec)
      return fail(
          c, path,
          "\"%.64s\" is a scalar parameter; expected an array or a vector parameter \"$name\"",
          v->valuestring);
    l->n = l->vec->n;
    return MB_OK;
  }
  return fail(c, path, "expected an array or a vector parameter \"$name\", got %s",
              describe(v, what, sizeof what));
}

/* " from \"$u\"" when the list is a vector parameter, "" otherwise (for messages on counts) */
static const char* list_origin(const scalar_list* l, char* buf, size_t size) {
  if (l->vec)
    snprintf(buf, size, " from \"$%s\"", l->vec->name);
  else
    buf[0] = '\0';
  return buf;
}

/* 1 when neither scalar is an expression, or both are the same text */
static int same_expression(const mb_desc* d, const mb_real* a, const mb_real* b) {
  if (!a->expr || !b->expr) return !a->expr && !b->expr;
  return !strcmp(d->expr[a->expr - 1].text, d->expr[b->expr - 1].text);
}

/* the l->n scalars of a list into out */
static mb_status fill_scalar_list(json_ctx* c, const scalar_list* l, const char* path,
                                  mb_real* out) {
  char sub[PATH_LEN];
  int i = 0;
  if (l->vec) {
    for (i = 0; i < l->n; i++)
      out[i] = (mb_real){c->d->param_value[l->vec->first + i], l->vec->first + i, 0};
    return MB_OK;
  }
  for (const cJSON* e = l->array->child; e; e = e->next, i++) {
    path_index(sub, path, i);
    TRY(read_real(c, e, sub, &out[i]));
  }
  return MB_OK;
}

/* optional or required members: a missing optional member takes `fallback` */
static mb_status member_real(json_ctx* c, const cJSON* obj, const char* path, const char* key,
                             int required, double fallback, mb_real* out) {
  char sub[PATH_LEN];
  const cJSON* v = get(obj, key);
  path_key(sub, path, key);
  if (!v) {
    if (required) return fail(c, sub, "missing");
    *out = (mb_real){fallback, -1, 0};
    return MB_OK;
  }
  return read_real(c, v, sub, out);
}

static mb_status member_number(json_ctx* c, const cJSON* obj, const char* path, const char* key,
                               double* out) {
  char sub[PATH_LEN];
  const cJSON* v = get(obj, key);
  if (!v) return MB_OK; /* keeps the default already in *out */
  path_key(sub, path, key);
  return read_number(c, v, sub, out);
}

static mb_status member_int(json_ctx* c, const cJSON* obj, const char* path, const char* key,
                            int* out) {
  char sub[PATH_LEN];
  const cJSON* v = get(obj, key);
  if (!v) return MB_OK;
  path_key(sub, path, key);
  return read_int(c, v, sub, out);
}

/* a string member; *out is NULL when it is absent and optional */
static mb_status member_string(json_ctx* c, const cJSON* obj, const char* path, const char* key,
                               int required, const char** out) {
  char sub[PATH_LEN], what[64];
  const cJSON* v = get(obj, key);
  path_key(sub, path, key);
  *out = NULL;
  if (!v) return required ? fail(c, sub, "missing") : MB_OK;
  if (!cJSON_IsString(v))
    return fail(c, sub, "expected a string, got %s", describe(v, what, sizeof what));
  *out = v->valuestring;
  return MB_OK;
}

/* a name that fits in MB_NAME_LEN; `ident` restricts it to [A-Za-z0-9_] */
static mb_status check_name(json_ctx* c, const char* path, const char* s, int ident) {
  size_t n = strlen(s);
  if (n == 0) return fail(c, path, "must not be empty");
  if (n > MB_NAME_LEN - 1)
    return fail(c, path, "name \"%.24s...\" is longer than %d characters", s, MB_NAME_LEN - 1);
  if (ident)
    for (const char* p = s; *p; p++)
      if (!(*p == '_' || (*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') ||
            (*p >= 'A' && *p <= 'Z')))
        return fail(c, path, "name \"%s\" may contain only letters, digits and '_'", s);
  return MB_OK;
}

/* the "name" member of a list entry, unique among the first n entries of a list whose names
   are `stride` bytes apart */
static mb_status member_name(json_ctx* c, const cJSON* obj, const char* path, int ident,
                             const char* list, size_t stride, int n, const char* what,
                             char out[MB_NAME_LEN]) {
  char sub[PATH_LEN];
  const char* s;
  path_key(sub, path, "name");
  TRY(member_string(c, obj, path, "name", 1, &s));
  TRY(check_name(c, sub, s, ident));
  for (int i = 0; i < n; i++)
    if (strcmp(list + (size_t)i * stride, s) == 0)
      return fail(c, sub, "duplicate %s name \"%s\"", what, s);
  strcpy(out, s);
  return MB_OK;
}

/* the "output" member of a term: an output column name. The compiler resolves it ("x2", "v2.x");
   here it must only be present and fit in `size` bytes */
static mb_status member_column(json_ctx* c, const cJSON* e, const char* path, char* out,
                               size_t size) {
  char sub[PATH_LEN];
  const char* output;
  path_key(sub, path, "output");
  TRY(member_string(c, e, path, "output", 1, &output));
  if (!output[0]) return fail(c, sub, "must not be empty");
  if (strlen(output) > size - 1)
    return fail(c, sub, "output column \"%.24s...\" is longer than %d characters", output,
                (int)size - 1);
  strcpy(out, output);
  return MB_OK;
}

/* a vector of exactly dim scalars; planar z = 0 */
static mb_status read_vec(json_ctx* c, const cJSON* v, const char* path, mb_real out[3]) {
  char sub[PATH_LEN];
  int dim = c->d->dim, i = 0;
  TRY(expect_array(c, v, path));
  if (cJSON_GetArraySize(v) != dim)
    return fail(c, path, "expected %d components, got %d", dim, cJSON_GetArraySize(v));
  for (const cJSON* e = v->child; e; e = e->next, i++) {
    path_index(sub, path, i);
    TRY(read_real(c, e, sub, &out[i]));
  }
  for (; i < 3; i++) out[i] = (mb_real){0, -1, 0};
  return MB_OK;
}

/* the same with plain numbers (initial pose), n components */
static mb_status read_plain_vec(json_ctx* c, const cJSON* v, const char* path, int n, double* out) {
  char sub[PATH_LEN];
  int i = 0;
  TRY(expect_array(c, v, path));
  if (cJSON_GetArraySize(v) != n)
    return fail(c, path, "expected %d components, got %d", n, cJSON_GetArraySize(v));
  for (const cJSON* e = v->child; e; e = e->next, i++) {
    path_index(sub, path, i);
    TRY(read_number(c, e, sub, &out[i]));
  }
  return MB_OK;
}

static mb_status member_vec(json_ctx* c, const cJSON* obj, const char* path, const char* key,
                            int required, mb_real out[3]) {
  char sub[PATH_LEN];
  const cJSON* v = get(obj, key);
  path_key(sub, path, key);
  for (int i = 0; i < 3; i++) out[i] = (mb_real){0, -1, 0};
  if (!v) return required ? fail(c, sub, "missing") : MB_OK;
  return read_vec(c, v, sub, out);
}

static double vec_norm(const mb_real* v) {
  return sqrt(v[0].value * v[0].value + v[1].value * v[1].value + v[2].value * v[2].value);
}

/* checks that a bounded scalar value lies in its range; `strict` selects > rather than >= */
static mb_status check_min(json_ctx* c, const char* path, const char* key, double x, int strict) {
  char sub[PATH_LEN];
  path_key(sub, path, key);
  if (strict && !(x > 0)) return fail(c, sub, "must be > 0 (got %g)", x);
  if (!strict && !(x >= 0)) return fail(c, sub, "must be >= 0 (got %g)", x);
  return MB_OK;
}

/* a scalar that must be >= 0, or > 0 when `strict`; when a parameter sets it, the rule goes
   with the parameter, so that values set later (--set) are held to it */
static mb_status check_real_min(json_ctx* c, const char* path, const char* key, const mb_real* r,
                                int strict) {
  mb_param_rule* rule = r->param >= 0 ? &c->d->param_rule[r->param] : NULL;
  if (rule && rule->min < 1 + strict) {
    char sub[PATH_LEN];
    path_key(sub, path, key);
    rule->min = 1 + strict;
    snprintf(rule->where, sizeof rule->where, "%.*s", (int)sizeof rule->where - 1, sub);
  }
  if (r->expr > 0) c->d->expr[r->expr - 1].min = 1 + strict;
  return check_min(c, path, key, r->value, strict);
}

/* a scalar member (fallback 0) that must be >= 0, or > 0 when `strict` */
static mb_status member_bounded(json_ctx* c, const cJSON* obj, const char* path, const char* key,
                                int required, int strict, mb_real* out) {
  TRY(member_real(c, obj, path, key, required, 0, out));
  return check_real_min(c, path, key, out, strict);
}

/* allocates n zeroed elements (none for n = 0) */
static mb_status alloc_array(json_ctx* c, void** out, int n, size_t size) {
  *out = NULL;
  if (n <= 0) return MB_OK;
  *out = calloc((size_t)n, size);
  return *out ? MB_OK : no_memory(c);
}

/* an optional list member: NULL when absent, an error when not an array */
static mb_status member_list(json_ctx* c, const cJSON* obj, const char* key, const cJSON** out) {
  *out = get(obj, key);
  if (*out) TRY(expect_array(c, *out, key));
  return MB_OK;
}

/* ---------------------------------------------------------------------------------------------
   references by name */

static int find_body(const mb_desc* d, const char* name) {
  for (int i = 0; i < d->nbody; i++)
    if (strcmp(d->body[i].name, name) == 0) return i;
  return -1;
}

static int find_joint(const mb_desc* d, const char* name) {
  for (int i = 0; i < d->njoint; i++)
    if (strcmp(d->joint[i].name, name) == 0) return i;
  return -1;
}

static int find_force(const mb_desc* d, const char* name) {
  for (int i = 0; i < d->nforce; i++)
    if (strcmp(d->force[i].name, name) == 0) return i;
  return -1;
}

static int find_controller(const mb_desc* d, const char* name) {
  for (int i = 0; i < d->ncontroller; i++)
    if (strcmp(d->controller[i].name, name) == 0) return i;
  return -1;
}

static int find_marker(const mb_marker_desc* m, int n, const char* name) {
  for (int i = 0; i < n; i++)
    if (strcmp(m[i].name, name) == 0) return i;
  return -1;
}

/* "body.marker" (body may be "ground") to body index (-1: ground) and marker index */
static mb_status member_marker_ref(json_ctx* c, const cJSON* obj, const char* path, const char* key,
                                   int* body, int* marker) {
  char sub[PATH_LEN], bname[MB_NAME_LEN];
  const char *s, *dot;
  const mb_desc* d = c->d;
  path_key(sub, path, key);
  TRY(member_string(c, obj, path, key, 1, &s));
  dot = strchr(s, '.');
  if (!dot || dot == s || !dot[1])
    return fail(c, sub, "expected \"body.marker\", got \"%.64s\"", s);
  if ((size_t)(dot - s) > MB_NAME_LEN - 1) return fail(c, sub, "unknown body \"%.24s...\"", s);
  memcpy(bname, s, (size_t)(dot - s));
  bname[dot - s] = '\0';

  /* the ground, then the bodies */
  if (strcmp(bname, "ground") == 0) {
    *body = -1;
    *marker = find_marker(d->ground_marker, d->nground_marker, dot + 1);
    if (*marker < 0) return fail(c, sub, "unknown marker \"%.64s\" on the ground", dot + 1);
    return MB_OK;
  }
  *body = find_body(d, bname);
  if (*body < 0) return fail(c, sub, "unknown body \"%s\" in \"%.128s\"", bname, s);
  *marker = find_marker(d->body[*body].marker, d->body[*body].nmarker, dot + 1);
  if (*marker < 0) return fail(c, sub, "unknown marker \"%.64s\" on body \"%s\"", dot + 1, bname);
  return MB_OK;
}

/* a moving body by name (the ground has no motion to sense or load) */
static mb_status member_body_ref(json_ctx* c, const cJSON* obj, const char* path, const char* key,
                                 int* body) {
  char sub[PATH_LEN];
  const char* s;
  path_key(sub, path, key);
  TRY(member_string(c, obj, path, key, 1, &s));
  if (strcmp(s, "ground") == 0) return fail(c, sub, "must be a moving body, not the ground");
  *body = find_body(c->d, s);
  if (*body < 0) return fail(c, sub, "unknown body \"%.64s\"", s);
  return MB_OK;
}

static mb_status member_joint_ref(json_ctx* c, const cJSON* obj, const char* path, int* joint) {
  char sub[PATH_LEN];
  const char* s;
  path_key(sub, path, "joint");
  TRY(member_string(c, obj, path, "joint", 1, &s));
  *joint = find_joint(c->d, s);
  if (*joint < 0) return fail(c, sub, "unknown joint \"%.64s\"", s);
  return MB_OK;
}

/* number of scalar coordinates (angle, translation) a joint type defines */
static int joint_has_coord(mb_joint_type t, mb_coord_type k) {
  if (t == MB_JOINT_CYLINDRICAL) return 1;
  if (t == MB_JOINT_REVOLUTE) return k == MB_COORD_ANGLE;
  if (t == MB_JOINT_PRISMATIC) return k == MB_COORD_TRANSLATION;
  return 0;
}

/* checks that joint j has coordinate k; `path` names the place that asked for it */
static mb_status check_coord(json_ctx* c, const char* path, int j, mb_coord_type k) {
  const mb_joint_desc* jd = &c->d->joint[j];
  if (!joint_has_coord(jd->type, k))
    return fail(c, path, "joint \"%s\" (%s) has no %s coordinate", jd->name,
                joint_type_name[jd->type], coord_name[k]);
  return MB_OK;
}

/* the "coordinate" member for joint j; when absent, the joint's only coordinate */
static mb_status member_coord(json_ctx* c, const cJSON* obj, const char* path, int j,
                              mb_coord_type* out) {
  char sub[PATH_LEN];
  const char* s;
  const mb_joint_desc* jd = &c->d->joint[j];
  path_key(sub, path, "coordinate");
  TRY(member_string(c, obj, path, "coordinate", 0, &s));
  if (s) {
    if (strcmp(s, "angle") == 0)
      *out = MB_COORD_ANGLE;
    else if (strcmp(s, "translation") == 0)
      *out = MB_COORD_TRANSLATION;
    else
      return fail(c, sub, "unknown coordinate \"%.64s\" (use \"angle\" or \"translation\")", s);
    return check_coord(c, sub, j, *out);
  }
  if (jd->type == MB_JOINT_REVOLUTE)
    *out = MB_COORD_ANGLE;
  else if (jd->type == MB_JOINT_PRISMATIC)
    *out = MB_COORD_TRANSLATION;
  else if (jd->type == MB_JOINT_CYLINDRICAL)
    return fail(c, sub, "missing (joint \"%s\" is cylindrical: give \"angle\" or \"translation\")",
                jd->name);
  else {
    path_key(sub, path, "joint");
    return fail(c, sub, "joint \"%s\" (%s) has no angle or translation coordinate", jd->name,
                joint_type_name[jd->type]);
  }
  return MB_OK;
}

/* ---------------------------------------------------------------------------------------------
   time functions */

/* n coefficients and ntime zeroed times (none for ntime = 0) */
static mb_status func_alloc(json_ctx* c, mb_func_desc* f, mb_func_type type, int n, int ntime) {
  f->type = type;
  TRY(alloc_array(c, (void**)&f->coef, n, sizeof *f->coef));
  TRY(alloc_array(c, (void**)&f->time, ntime, sizeof *f->time));
  f->ncoef = n;
  return MB_OK;
}

/* a constant function (unused components of point forces and torques are constant zero, so
   every func[k] of a load can be evaluated; springs leave func empty) */
static mb_status func_constant(json_ctx* c, mb_func_desc* f, double value) {
  TRY(func_alloc(c, f, MB_FUNC_CONSTANT, 1, 0));
  f->coef[0] = (mb_real){value, -1, 0};
  return MB_OK;
}

static mb_status read_table(json_ctx* c, const cJSON* v, const char* path, mb_func_desc* f) {
  static const char* const keys[] = {"t", "values", NULL};
  char sub[PATH_LEN], tpath[PATH_LEN], vpath[PATH_LEN], from[MB_NAME_LEN + 16];
  const cJSON *t = get(v, "t"), *y = get(v, "values");
  scalar_list values;
  int n, i;
  TRY(expect_object(c, v, path));
  TRY(check_keys(c, v, path, keys));
  path_key(tpath, path, "t");
  path_key(vpath, path, "values");
  if (!t) return fail(c, tpath, "missing");
  if (!y) return fail(c, vpath, "missing");
  TRY(expect_array(c, t, tpath));
  TRY(read_scalar_list(c, y, vpath, &values));
  n = cJSON_GetArraySize(t);
  if (n < 2) return fail(c, tpath, "needs at least 2 samples, got %d", n);
  if (values.n != n)
    return fail(c, vpath, "expected %d values (one per time in \"t\"), got %d%s", n, values.n,
                list_origin(&values, from, sizeof from));
  TRY(func_alloc(c, f, MB_FUNC_TABLE, n, n));

  /* sample times are plain numbers and strictly increasing, so the spline is well defined */
  i = 0;
  for (const cJSON* e = t->child; e; e = e->next, i++) {
    path_index(sub, tpath, i);
    TRY(read_number(c, e, sub, &f->time[i]));
    if (i > 0 && !(f->time[i] > f->time[i - 1]))
      return fail(c, sub, "times must be strictly increasing (got %g after %g)", f->time[i],
                  f->time[i - 1]);
  }
  return fill_scalar_list(c, &values, vpath, f->coef);
}

/* uniform cubic B-spline: {"t0", "t1", "coefficients"}, time = {t0, t1} */
static mb_status read_bspline(json_ctx* c, const cJSON* v, const char* path, mb_func_desc* f) {
  static const char* const keys[] = {"t0", "t1", "coefficients", NULL};
  char sub[PATH_LEN], from[MB_NAME_LEN + 16];
  const cJSON* coef = get(v, "coefficients");
  scalar_list list;
  double t0 = 0, t1 = 0;
  TRY(expect_object(c, v, path));
  TRY(check_keys(c, v, path, keys));

  /* the time span: plain numbers, t1 > t0 */
  path_key(sub, path, "t0");
  if (!get(v, "t0")) return fail(c, sub, "missing");
  TRY(read_number(c, get(v, "t0"), sub, &t0));
  path_key(sub, path, "t1");
  if (!get(v, "t1")) return fail(c, sub, "missing");
  TRY(read_number(c, get(v, "t1"), sub, &t1));
  if (!(t1 > t0)) return fail(c, sub, "must be greater than t0 (got %g <= %g)", t1, t0);

  /* the control values: at least 4 (one segment) */
  path_key(sub, path, "coefficients");
  if (!coef) return fail(c, sub, "missing");
  TRY(read_scalar_list(c, coef, sub, &list));
  if (list.n < 4)
    return fail(c, sub, "needs at least 4 values (got %d%s)", list.n,
                list_origin(&list, from, sizeof from));
  TRY(func_alloc(c, f, MB_FUNC_BSPLINE, list.n, 2));
  f->time[0] = t0, f->time[1] = t1;
  return fill_scalar_list(c, &list, sub, f->coef);
}

/* a time function: a scalar (constant) or an object with exactly one of table, polynomial,
   harmonic, bspline */
static mb_status read_func(json_ctx* c, const cJSON* v, const char* path, mb_func_desc* f) {
  static const char* const kinds[] = {"table", "polynomial", "harmonic", "bspline", NULL};
  static const char* const harmonic_keys[] = {"offset", "amplitude", "omega", "phase", NULL};
  char sub[PATH_LEN], what[64];
  const cJSON* body = NULL;
  int nkind = 0, kind = -1;

  /* constants */
  if (cJSON_IsNumber(v) || (cJSON_IsString(v) && v->valuestring[0] == '$')) {
    TRY(func_alloc(c, f, MB_FUNC_CONSTANT, 1, 0));
    return read_real(c, v, path, &f->coef[0]);
  }
  if (!cJSON_IsObject(v))
    return fail(c, path,
                "expected a number, \"$parameter\" or a function object (\"table\", "
                "\"polynomial\", \"harmonic\" or \"bspline\"), got %s",
                describe(v, what, sizeof what));

  /* which kind of function */
  TRY(check_keys(c, v, path, kinds));
  for (int k = 0; kinds[k]; k++)
    if (get(v, kinds[k])) nkind++, kind = k, body = get(v, kinds[k]);
  if (nkind != 1)
    return fail(c, path,
                "expected exactly one of \"table\", \"polynomial\", \"harmonic\" or "
                "\"bspline\", got %d",
                nkind);
  path_key(sub, path, kinds[kind]);

  if (kind == 0) return read_table(c, body, sub, f);
  if (kind == 3) return read_bspline(c, body, sub, f);
  if (kind == 1) {
    scalar_list list;
    TRY(read_scalar_list(c, body, sub, &list));
    if (list.n < 1) return fail(c, sub, "needs at least 1 coefficient");
    TRY(func_alloc(c, f, MB_FUNC_POLYNOMIAL, list.n, 0));
    return fill_scalar_list(c, &list, sub, f->coef);
  }

  /* harmonic: coef = [offset, amplitude, omega, phase] */
  TRY(expect_object(c, body, sub));
  TRY(check_keys(c, body, sub, harmonic_keys));
  TRY(func_alloc(c, f, MB_FUNC_HARMONIC, 4, 0));
  TRY(member_real(c, body, sub, "offset", 0, 0, &f->coef[0]));
  TRY(member_real(c, body, sub, "amplitude", 1, 0, &f->coef[1]));
  TRY(member_real(c, body, sub, "omega", 1, 0, &f->coef[2]));
  TRY(member_real(c, body, sub, "phase", 0, 0, &f->coef[3]));
  return MB_OK;
}

static void func_free(mb_func_desc* f) {
  free(f->coef);
  free(f->time);
  f->coef = NULL;
  f->time = NULL;
  f->ncoef = 0;
}

/* ---------------------------------------------------------------------------------------------
   sections */

/* one entry of "parameters": a number, an array of numbers, or {"repeat": x, "count": n}; checks
   its form, sets *n to the number of values and, when out is not NULL, writes them to out */
static mb_status read_param_entry(json_ctx* c, const cJSON* e, const char* path, double* out,
                                  int* n) {
  static const char* const repeat_keys[] = {"repeat", "count", NULL};
  char sub[PATH_LEN], what[64];
  double x = 0;
  int i = 0;

  /* a number: one scalar parameter */
  if (cJSON_IsNumber(e)) {
    TRY(read_number(c, e, path, &x));
    if (out) out[0] = x;
    *n = 1;
    return MB_OK;
  }

  /* an array of numbers: a vector parameter with these values */
  if (cJSON_IsArray(e)) {
    *n = cJSON_GetArraySize(e);
    if (*n < 1) return fail(c, path, "a vector parameter needs at least 1 value");
    if (*n > MAX_VECTOR)
      return fail(c, path, "a vector parameter has at most %d values (got %d)", MAX_VECTOR, *n);
    for (const cJSON* v = e->child; v; v = v->next, i++) {
      path_index(sub, path, i);
      TRY(read_number(c, v, sub, &x));
      if (out) out[i] = x;
    }
    return MB_OK;
  }

  /* {"repeat": x, "count": n}: a vector parameter of n equal values */
  if (cJSON_IsObject(e)) {
    TRY(check_keys(c, e, path, repeat_keys));
    path_key(sub, path, "repeat");
    if (!get(e, "repeat")) return fail(c, sub, "missing");
    TRY(read_number(c, get(e, "repeat"), sub, &x));
    path_key(sub, path, "count");
    if (!get(e, "count")) return fail(c, sub, "missing");
    TRY(read_int(c, get(e, "count"), sub, n));
    if (*n < 1) return fail(c, sub, "must be >= 1 (got %d)", *n);
    if (*n > MAX_VECTOR) return fail(c, sub, "must be <= %d (got %d)", MAX_VECTOR, *n);
    for (i = 0; out && i < *n; i++) out[i] = x;
    return MB_OK;
  }
  return fail(c, path,
              "expected a number, an array of numbers or {\"repeat\": number, \"count\": "
              "integer}, got %s",
              describe(e, what, sizeof what));
}

/* scalar parameters "k" and vector parameters "u", whose elements become the parameters "u[0]",
   "u[1]", ... (consecutive, in the order of the file) */
static mb_status read_parameters(json_ctx* c, const cJSON* root) {
  char sub[PATH_LEN], last[MB_NAME_LEN + 16];
  mb_desc* d = c->d;
  const cJSON* p = get(root, "parameters");
  int total = 0, nvec = 0, n;
  if (!p) return MB_OK;
  TRY(expect_object(c, p, "parameters"));
  TRY(check_keys(c, p, "parameters", NULL));

  /* first pass: names and forms, and how many parameters there are. Names are identifiers, so
     that "$name" and the optimiser's references are unambiguous; element names must fit too */
  for (const cJSON* e = p->child; e; e = e->next) {
    path_key(sub, "parameters", e->string);
    TRY(check_name(c, sub, e->string, 1));
    TRY(read_param_entry(c, e, sub, NULL, &n));
    if (n > MAX_PARAM - total) return fail(c, sub, "more than %d parameters in all", MAX_PARAM);
    total += n;
    if (cJSON_IsNumber(e)) continue;
    if (snprintf(last, sizeof last, "%s[%d]", e->string, n - 1) > MB_NAME_LEN - 1)
      return fail(c, sub,
                  "too long for a vector of %d values (\"%.24s...\" is longer than %d characters)",
                  n, last, MB_NAME_LEN - 1);
    nvec++;
  }
  TRY(alloc_array(c, (void**)&d->param_name, total, sizeof *d->param_name));
  TRY(alloc_array(c, (void**)&d->param_value, total, sizeof *d->param_value));
  TRY(alloc_array(c, (void**)&d->param_rule, total, sizeof *d->param_rule));
  if (nvec > 0) {
    c->vec = calloc((size_t)nvec, sizeof *c->vec);
    if (!c->vec) return no_memory(c);
  }

  /* second pass: the values, the names and the vectors (the forms are known to be right) */
  for (const cJSON* e = p->child; e; e = e->next) {
    path_key(sub, "parameters", e->string);
    TRY(read_param_entry(c, e, sub, d->param_value + d->nparam, &n));
    if (cJSON_IsNumber(e)) {
      strcpy(d->param_name[d->nparam++], e->string);
      continue;
    }
    json_vec* v = &c->vec[c->nvec++];
    strcpy(v->name, e->string);
    v->first = d->nparam, v->n = n;
    for (int i = 0; i < n; i++)
      snprintf(d->param_name[d->nparam++], MB_NAME_LEN, "%s[%d]", e->string, i);
  }
  return MB_OK;
}

static mb_status read_settings(json_ctx* c, const cJSON* root) {
  static const char* const keys[] = {"t_end",
                                     "step",
                                     "output_interval",
                                     "beta",
                                     "gamma",
                                     "penalty",
                                     "newton_tolerance",
                                     "constraint_tolerance",
                                     "max_newton",
                                     "max_substeps",
                                     "projection_iterations",
                                     "projection_tolerance",
                                     "tangent",
                                     "assembly_tolerance",
                                     "max_assembly",
                                     "linear_solver",
                                     "threads",
                                     "tangent_refresh",
                                     "formulation",
                                     "reference_point",
                                     NULL};
  const char* p = "simulation";
  const cJSON* v = get(root, p);
  mb_settings* s = &c->d->settings;
  const char *tangent, *solver, *refresh;
  char sub[PATH_LEN];

  mb_settings_default(s);
  if (v) {
    TRY(expect_object(c, v, p));
    TRY(check_keys(c, v, p, keys));
    TRY(member_number(c, v, p, "t_end", &s->t_end));
    TRY(member_number(c, v, p, "step", &s->step));
    TRY(member_number(c, v, p, "output_interval", &s->output_interval));
    TRY(member_number(c, v, p, "beta", &s->beta));
    TRY(member_number(c, v, p, "gamma", &s->gamma));
    TRY(member_number(c, v, p, "penalty", &s->penalty));
    if (get(v, "penalty")) s->penalty_auto = 0;
    TRY(member_number(c, v, p, "newton_tolerance", &s->tol_newton));
    TRY(member_number(c, v, p, "constraint_tolerance", &s->tol_constraint));
    TRY(member_int(c, v, p, "max_newton", &s->max_newton));
    TRY(member_int(c, v, p, "max_substeps", &s->max_substeps));
    TRY(member_int(c, v, p, "projection_iterations", &s->projection_iterations));
    TRY(member_number(c, v, p, "projection_tolerance", &s->tol_projection));
    TRY(member_number(c, v, p, "assembly_tolerance", &s->tol_assembly));
    TRY(member_int(c, v, p, "max_assembly", &s->max_assembly));
    TRY(member_string(c, v, p, "linear_solver", 0, &solver));
    if (solver && (s->linear_solver = mb_linear_solver_parse(solver)) < 0) {
      path_key(sub, p, "linear_solver");
      return fail(c, sub, "must be \"auto\", \"dense\", \"sparse\" or \"klu\" (got \"%.64s\")",
                  solver);
    }
    TRY(member_int(c, v, p, "threads", &s->threads));
    const char *formulation, *reference;
    TRY(member_string(c, v, p, "formulation", 0, &formulation));
    if (formulation && (s->formulation = mb_formulation_parse(formulation)) < 0) {
      path_key(sub, p, "formulation");
      return fail(c, sub, "must be \"natural\" or \"joint\" (got \"%.64s\")", formulation);
    }
    TRY(member_string(c, v, p, "reference_point", 0, &reference));
    if (reference && (s->reference = mb_reference_parse(reference)) < 0) {
      path_key(sub, p, "reference_point");
      return fail(c, sub, "must be \"centre_of_mass\" or \"global_origin\" (got \"%.64s\")",
                  reference);
    }
    TRY(member_string(c, v, p, "tangent_refresh", 0, &refresh));
    if (refresh && (s->refresh_each_iteration = mb_tangent_refresh_parse(refresh)) < 0) {
      path_key(sub, p, "tangent_refresh");
      return fail(c, sub, "must be \"step\" or \"iteration\" (got \"%.64s\")", refresh);
    }
    TRY(member_string(c, v, p, "tangent", 0, &tangent));
    if (tangent) {
      path_key(sub, p, "tangent");
      if (strcmp(tangent, "exact") == 0)
        s->exact_tangent = 1;
      else if (strcmp(tangent, "approximate") == 0)
        s->exact_tangent = 0;
      else
        return fail(c, sub, "must be \"exact\" or \"approximate\" (got \"%.64s\")", tangent);
    }
  }

  /* ranges, checked on the final values so that defaults and overrides agree */
  TRY(check_min(c, p, "t_end", s->t_end, 1));
  TRY(check_min(c, p, "step", s->step, 1));
  if (s->step > s->t_end) {
    path_key(sub, p, "step");
    return fail(c, sub, "must be <= t_end (got %g > %g)", s->step, s->t_end);
  }
  TRY(check_min(c, p, "output_interval", s->output_interval, 0));
  TRY(check_min(c, p, "beta", s->beta, 1));
  TRY(check_min(c, p, "gamma", s->gamma, 1));
  TRY(check_min(c, p, "penalty", s->penalty, 1));
  TRY(check_min(c, p, "newton_tolerance", s->tol_newton, 1));
  TRY(check_min(c, p, "constraint_tolerance", s->tol_constraint, 1));
  TRY(check_min(c, p, "projection_tolerance", s->tol_projection, 1));
  TRY(check_min(c, p, "assembly_tolerance", s->tol_assembly, 1));
  if (s->max_newton < 1) {
    path_key(sub, p, "max_newton");
    return fail(c, sub, "must be >= 1 (got %d)", s->max_newton);
  }
  if (s->max_substeps < 1 || s->max_substeps > MB_MAX_SUBSTEPS) {
    path_key(sub, p, "max_substeps");
    return fail(c, sub, "must be between 1 (no retry) and %d (got %d)", MB_MAX_SUBSTEPS,
                s->max_substeps);
  }
  if (s->projection_iterations < 1) {
    path_key(sub, p, "projection_iterations");
    return fail(c, sub, "must be >= 1 (got %d)", s->projection_iterations);
  }
  if (s->threads < 0 || s->threads > 2) {
    path_key(sub, p, "threads");
    return fail(c, sub, "must be 0 (chosen), 1 or 2 (got %d)", s->threads);
  }
  if (s->max_assembly < 1) {
    path_key(sub, p, "max_assembly");
    return fail(c, sub, "must be >= 1 (got %d)", s->max_assembly);
  }
  return MB_OK;
}

/* the "markers" map of a body or of the ground (`path` names the owner) */
static mb_status read_markers(json_ctx* c, const cJSON* owner, const char* path,
                              mb_marker_desc** out, int* nout) {
  static const char* const keys[] = {"point", "axis", "ref", NULL};
  char mpath[PATH_LEN], sub[PATH_LEN], sub2[PATH_LEN];
  const cJSON* ms = get(owner, "markers");
  int n = 0;
  if (!ms) return MB_OK;
  path_key(mpath, path, "markers");
  TRY(expect_object(c, ms, mpath));
  TRY(check_keys(c, ms, mpath, NULL));
  TRY(alloc_array(c, (void**)out, cJSON_GetArraySize(ms), sizeof **out));
  *nout = cJSON_GetArraySize(ms);

  for (const cJSON* e = ms->child; e; e = e->next, n++) {
    mb_marker_desc* m = &(*out)[n];
    path_key(sub, mpath, e->string);
    TRY(check_name(c, sub, e->string, 0));
    strcpy(m->name, e->string);
    TRY(expect_object(c, e, sub));
    TRY(check_keys(c, e, sub, keys));
    TRY(member_vec(c, e, sub, "point", 1, m->point));
    TRY(member_vec(c, e, sub, "axis", 0, m->axis));
    m->has_axis = get(e, "axis") != NULL;
    path_key(sub2, sub, "axis");
    if (m->has_axis && vec_norm(m->axis) == 0) return fail(c, sub2, "must be non-zero");

    /* the reference direction fixes rotation about the axis: spatial only, perpendicular */
    if (!get(e, "ref")) continue;
    path_key(sub2, sub, "ref");
    if (c->d->dim == 2) return fail(c, sub2, "only in spatial models");
    if (!m->has_axis) return fail(c, sub2, "needs \"axis\" in the same marker");
    TRY(member_vec(c, e, sub, "ref", 0, m->ref));
    m->has_ref = 1;
    double nr = vec_norm(m->ref), na = vec_norm(m->axis);
    if (nr == 0) return fail(c, sub2, "must be non-zero");
    double dot = m->axis[0].value * m->ref[0].value + m->axis[1].value * m->ref[1].value +
                 m->axis[2].value * m->ref[2].value;
    if (fabs(dot) > 1e-9 * na * nr)
      return fail(c, sub2, "not perpendicular to the axis (cosine %g)", dot / (na * nr));
  }
  return MB_OK;
}

/* eigenvalues of a symmetric 3x3 [xx, yy, zz, xy, xz, yz], ascending (closed form) */
static void sym3_eigenvalues(const double* a, double* ev) {
  double p1 = a[3] * a[3] + a[4] * a[4] + a[5] * a[5];
  if (p1 == 0) {
    ev[0] = a[0], ev[1] = a[1], ev[2] = a[2];
  } else {
    double q = (a[0] + a[1] + a[2]) / 3;
    double p2 =
        (a[0] - q) * (a[0] - q) + (a[1] - q) * (a[1] - q) + (a[2] - q) * (a[2] - q) + 2 * p1;
    double p = sqrt(p2 / 6);
    double b0 = (a[0] - q) / p, b1 = (a[1] - q) / p, b2 = (a[2] - q) / p;
    double b3 = a[3] / p, b4 = a[4] / p, b5 = a[5] / p;
    double r = (b0 * (b1 * b2 - b5 * b5) - b3 * (b3 * b2 - b5 * b4) + b4 * (b3 * b5 - b1 * b4)) / 2;
    double phi = r <= -1 ? PI / 3 : r >= 1 ? 0 : acos(r) / 3;
    ev[0] = q + 2 * p * cos(phi);
    ev[2] = q + 2 * p * cos(phi + 2 * PI / 3);
    ev[1] = 3 * q - ev[0] - ev[2];
  }
  /* sort the three values */
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 2 - i; j++)
      if (ev[j] > ev[j + 1]) {
        double t = ev[j];
        ev[j] = ev[j + 1], ev[j + 1] = t;
      }
}

/* planar: Izz >= 0; spatial: [Ixx, Iyy, Izz] or a symmetric 3x3 matrix that a real mass
   distribution can have (positive definite, triangle inequalities) */
static mb_status read_inertia(json_ctx* c, const cJSON* body, const char* path, mb_real* out) {
  char ipath[PATH_LEN], sub[PATH_LEN], sub2[PATH_LEN];
  const cJSON* v = get(body, "inertia");
  mb_real m[3][3];
  double a[6], ev[3];
  int n = 0;
  path_key(ipath, path, "inertia");
  for (int i = 0; i < 6; i++) out[i] = (mb_real){0, -1, 0};
  if (!v) return fail(c, ipath, "missing");

  if (c->d->dim == 2) {
    TRY(read_real(c, v, ipath, &out[2]));
    return check_real_min(c, path, "inertia", &out[2], 0);
  }

  /* spatial: principal moments or the full matrix */
  if (!cJSON_IsArray(v))
    return fail(c, ipath, "expected [Ixx, Iyy, Izz] or a 3x3 matrix, got %s", json_type(v));
  if (cJSON_GetArraySize(v) != 3)
    return fail(c, ipath, "expected [Ixx, Iyy, Izz] or a 3x3 matrix, got %d components",
                cJSON_GetArraySize(v));
  if (!cJSON_IsArray(v->child)) {
    for (const cJSON* e = v->child; e; e = e->next, n++) {
      path_index(sub, ipath, n);
      TRY(read_real(c, e, sub, &out[n]));
    }
  } else {
    for (const cJSON* row = v->child; row; row = row->next, n++) {
      int k = 0;
      path_index(sub, ipath, n);
      TRY(expect_array(c, row, sub));
      if (cJSON_GetArraySize(row) != 3)
        return fail(c, sub, "expected 3 components, got %d", cJSON_GetArraySize(row));
      for (const cJSON* e = row->child; e; e = e->next, k++) {
        path_index(sub2, sub, k);
        TRY(read_real(c, e, sub2, &m[n][k]));
      }
    }
    /* symmetry: the lower triangle must repeat the upper one, value and parameter */
    for (int i = 1; i < 3; i++)
      for (int j = 0; j < i; j++) {
        double scale = fabs(m[0][0].value) + fabs(m[1][1].value) + fabs(m[2][2].value);
        if (fabs(m[i][j].value - m[j][i].value) > 1e-12 * scale || m[i][j].param != m[j][i].param ||
            !same_expression(c->d, &m[i][j], &m[j][i])) {
          path_index(sub, ipath, i);
          path_index(sub2, sub, j);
          return fail(c, sub2, "matrix not symmetric: %g differs from inertia[%d][%d] = %g",
                      m[i][j].value, j, i, m[j][i].value);
        }
      }
    out[0] = m[0][0], out[1] = m[1][1], out[2] = m[2][2];
    out[3] = m[0][1], out[4] = m[0][2], out[5] = m[1][2];
  }

  /* physical checks on the principal moments */
  for (int i = 0; i < 6; i++) a[i] = out[i].value;
  sym3_eigenvalues(a, ev);
  if (!(ev[0] > 1e-12 * fabs(ev[2])))
    return fail(c, ipath, "not positive definite (principal moments %g, %g, %g)", ev[0], ev[1],
                ev[2]);
  if (ev[2] > ev[0] + ev[1] + 1e-6 * (ev[0] + ev[1] + ev[2]))
    return fail(c, ipath,
                "violates the triangle inequality (principal moments %g, %g, %g: %g > %g + %g)",
                ev[0], ev[1], ev[2], ev[2], ev[0], ev[1]);
  return MB_OK;
}

static mb_status read_ground(json_ctx* c, const cJSON* root) {
  static const char* const keys[] = {"markers", NULL};
  const cJSON* g = get(root, "ground");
  if (!g) return MB_OK;
  TRY(expect_object(c, g, "ground"));
  TRY(check_keys(c, g, "ground", keys));
  return read_markers(c, g, "ground", &c->d->ground_marker, &c->d->nground_marker);
}

static mb_status read_bodies(json_ctx* c, const cJSON* root) {
  static const char* const keys[] = {"name",  "mass",        "com",     "inertia", "position",
                                     "angle", "orientation", "markers", NULL};
  char path[PATH_LEN], sub[PATH_LEN];
  mb_desc* d = c->d;
  const cJSON* list = get(root, "bodies");
  int i = 0;
  if (!list) return fail(c, "bodies", "missing");
  TRY(expect_array(c, list, "bodies"));
  if (cJSON_GetArraySize(list) == 0) return fail(c, "bodies", "needs at least one body");
  TRY(alloc_array(c, (void**)&d->body, cJSON_GetArraySize(list), sizeof *d->body));

  for (const cJSON* e = list->child; e; e = e->next, i++) {
    mb_body_desc* b = &d->body[i];
    const char* name;
    path_index(path, "bodies", i);
    TRY(expect_object(c, e, path));

    /* pose keys of the other dimension get a pointed message rather than "unknown key" */
    if (d->dim == 2 && get(e, "orientation")) {
      path_key(sub, path, "orientation");
      return fail(c, sub, "only in spatial models (planar bodies use \"angle\")");
    }
    if (d->dim == 3 && get(e, "angle")) {
      path_key(sub, path, "angle");
      return fail(c, sub, "only in planar models (spatial bodies use \"orientation\")");
    }
    TRY(check_keys(c, e, path, keys));

    /* names: unique, and distinguishable from the ground and from "body.marker" references */
    path_key(sub, path, "name");
    TRY(member_string(c, e, path, "name", 1, &name));
    TRY(check_name(c, sub, name, 0));
    if (strcmp(name, "ground") == 0)
      return fail(c, sub, "\"ground\" is reserved for the fixed frame");
    if (strchr(name, '.')) return fail(c, sub, "name \"%s\" must not contain '.'", name);
    if (find_body(d, name) >= 0) return fail(c, sub, "duplicate body name \"%s\"", name);
    strcpy(b->name, name);
    d->nbody = i + 1;

    /* mass properties */
    TRY(member_bounded(c, e, path, "mass", 1, 1, &b->mass));
    TRY(member_vec(c, e, path, "com", 0, b->com));
    TRY(read_inertia(c, e, path, b->inertia));

    /* approximate initial pose (planar angle about z is stored as the yaw) */
    if (get(e, "position")) {
      path_key(sub, path, "position");
      TRY(read_plain_vec(c, get(e, "position"), sub, d->dim, b->position));
    }
    if (get(e, "angle")) {
      path_key(sub, path, "angle");
      TRY(read_number(c, get(e, "angle"), sub, &b->orientation[0]));
    }
    if (get(e, "orientation")) {
      path_key(sub, path, "orientation");
      TRY(read_plain_vec(c, get(e, "orientation"), sub, 3, b->orientation));
    }
    TRY(read_markers(c, e, path, &b->marker, &b->nmarker));
  }
  return MB_OK;
}

/* a joint's friction: the law's coefficients, and the dimensions its type needs */
static mb_status read_friction(json_ctx* c, const cJSON* e, const char* path, mb_joint_desc* j) {
  static const char* const keys[] = {"static",  "dynamic",       "transition_velocity",
                                     "viscous", "radius",        "length",
                                     "width",   "thrust_radius", NULL};
  mb_friction_desc* f = &j->friction;
  const int dim = c->d->dim, t = j->type;
  TRY(expect_object(c, e, path));
  TRY(check_keys(c, e, path, keys));
  if (!mb_joint_friction_rates(t))
    return fail(c, path,
                "friction is available on revolute, prismatic, cylindrical and spherical joints "
                "(not on %s)",
                joint_type_name[t]);
  TRY(member_bounded(c, e, path, "static", 1, 0, &f->mu_static));
  TRY(member_bounded(c, e, path, "dynamic", 1, 0, &f->mu_dynamic));
  TRY(member_bounded(c, e, path, "transition_velocity", 1, 1, &f->transition_velocity));
  TRY(member_bounded(c, e, path, "viscous", 0, 0, &f->viscous));
  /* the dimensions: the radius of a pin, sleeve or ball; the length over which spatial joints
     (and planar prismatic ones) carry moments; a prismatic joint's width across the axis */
  const int radius = t != MB_JOINT_PRISMATIC;
  const int length = (dim == 3 && t != MB_JOINT_SPHERICAL) || t == MB_JOINT_PRISMATIC;
  const int width = dim == 3 && t == MB_JOINT_PRISMATIC;
  const int thrust = dim == 3 && t == MB_JOINT_REVOLUTE;
  char sub[PATH_LEN];
  const struct {
    const char* key;
    int needed;
    mb_real* out;
  } dims[] = {{"radius", radius, &f->radius},
              {"length", length, &f->length},
              {"width", width, &f->width},
              {"thrust_radius", thrust, &f->thrust_radius}};
  for (size_t k = 0; k < sizeof dims / sizeof dims[0]; k++) {
    if (!dims[k].needed && get(e, dims[k].key)) {
      path_key(sub, path, dims[k].key);
      return fail(c, sub, "not used by the friction of a %s %s joint",
                  dim == 2 ? "planar" : "spatial", joint_type_name[t]);
    }
    const int required = dims[k].needed && strcmp(dims[k].key, "thrust_radius") != 0;
    TRY(member_bounded(c, e, path, dims[k].key, required, required, dims[k].out));
  }
  f->enabled = 1;
  return MB_OK;
}

static mb_status read_joints(json_ctx* c, const cJSON* root) {
  static const char* const keys[] = {"name", "type", "marker1", "marker2", "friction", NULL};
  char path[PATH_LEN], sub[PATH_LEN];
  mb_desc* d = c->d;
  const cJSON* list;
  int i = 0;
  TRY(member_list(c, root, "joints", &list));
  if (!list) return MB_OK;
  TRY(alloc_array(c, (void**)&d->joint, cJSON_GetArraySize(list), sizeof *d->joint));

  for (const cJSON* e = list->child; e; e = e->next, i++) {
    mb_joint_desc* j = &d->joint[i];
    const char* type;
    int t = -1;
    path_index(path, "joints", i);
    mb_friction_desc* fr = &j->friction; /* literal zeros until "friction" gives them */
    mb_real* reals[] = {&fr->mu_static, &fr->mu_dynamic,   &fr->transition_velocity,
                        &fr->viscous,   &fr->radius,       &fr->length,
                        &fr->width,     &fr->thrust_radius};
    for (size_t k = 0; k < sizeof reals / sizeof reals[0]; k++) *reals[k] = (mb_real){0, -1, 0};
    TRY(expect_object(c, e, path));
    TRY(check_keys(c, e, path, keys));
    TRY(member_name(c, e, path, 0, d->joint[0].name, sizeof *d->joint, i, "joint", j->name));
    d->njoint = i + 1;

    /* type, and the types a planar model can have */
    path_key(sub, path, "type");
    TRY(member_string(c, e, path, "type", 1, &type));
    for (int k = 0; k <= MB_JOINT_FIXED; k++)
      if (strcmp(type, joint_type_name[k]) == 0) t = k;
    if (t < 0)
      return fail(c, sub,
                  "unknown joint type \"%.64s\" (revolute, prismatic, spherical, cylindrical, "
                  "universal, planar or fixed)",
                  type);
    j->type = (mb_joint_type)t;
    if (d->dim == 2 && t != MB_JOINT_REVOLUTE && t != MB_JOINT_PRISMATIC && t != MB_JOINT_FIXED)
      return fail(c, sub, "\"%s\" is not available in planar models (revolute, prismatic or fixed)",
                  type);

    /* the two markers, on different bodies */
    TRY(member_marker_ref(c, e, path, "marker1", &j->body[0], &j->marker[0]));
    TRY(member_marker_ref(c, e, path, "marker2", &j->body[1], &j->marker[1]));
    path_key(sub, path, "marker2");
    if (j->body[0] == j->body[1])
      return fail(c, sub, "on the same body as marker1 (%s): a joint connects two bodies",
                  j->body[0] < 0 ? "ground" : d->body[j->body[0]].name);

    /* the directions each joint type needs */
    for (int k = 0; k < 2; k++) {
      int need = d->dim == 3 ? (t != MB_JOINT_SPHERICAL && t != MB_JOINT_FIXED)
                             : (t == MB_JOINT_PRISMATIC && k == 0);
      const mb_marker_desc* m = j->body[k] < 0 ? &d->ground_marker[j->marker[k]]
                                               : &d->body[j->body[k]].marker[j->marker[k]];
      if (need && !m->has_axis) {
        path_key(sub, path, k ? "marker2" : "marker1");
        return fail(c, sub, "marker \"%s.%s\" has no \"axis\", which a %s %s joint needs",
                    j->body[k] < 0 ? "ground" : d->body[j->body[k]].name, m->name,
                    d->dim == 2 ? "planar" : "spatial", type);
      }
    }
    if (get(e, "friction")) {
      path_key(sub, path, "friction");
      TRY(read_friction(c, get(e, "friction"), sub, j));
    }
  }
  return MB_OK;
}

/* the components of a point force or torque: dim (torque: planar 1, spatial 3) time functions;
   the others stay constant zero */
static mb_status read_load(json_ctx* c, const cJSON* e, const char* path, int n,
                           mb_func_desc* func) {
  char sub[PATH_LEN], sub2[PATH_LEN];
  const cJSON* v = get(e, "value");
  int k = 0;
  path_key(sub, path, "value");
  if (!v) return fail(c, sub, "missing");
  if (n == 1) {
    if (cJSON_IsArray(v))
      return fail(c, sub, "a planar torque is one function (about z), got array");
    TRY(read_func(c, v, sub, &func[0]));
    k = 1;
  } else {
    TRY(expect_array(c, v, sub));
    if (cJSON_GetArraySize(v) != n)
      return fail(c, sub, "expected %d components, got %d", n, cJSON_GetArraySize(v));
    for (const cJSON* x = v->child; x; x = x->next, k++) {
      path_index(sub2, sub, k);
      TRY(read_func(c, x, sub2, &func[k]));
    }
  }
  for (; k < 3; k++) TRY(func_constant(c, &func[k], 0));
  return MB_OK;
}

/* a tyre on a wheel marker of a moving body (spatial only), with an optional road step */
static mb_status read_tyre(json_ctx* c, const cJSON* e, const char* path, mb_force_desc* f) {
  static const char* const road_keys[] = {"step", NULL};
  static const char* const step_keys[] = {"x", "height", "width", NULL};
  char sub[PATH_LEN], sub2[PATH_LEN];
  path_key(sub, path, "type");
  if (c->d->dim != 3) return fail(c, sub, "a tyre needs a spatial model (dimension 3)");
  TRY(member_marker_ref(c, e, path, "wheel", &f->body[0], &f->marker[0]));
  path_key(sub, path, "wheel");
  if (f->body[0] < 0) return fail(c, sub, "must be on a moving body, not the ground");
  const mb_marker_desc* mk = &c->d->body[f->body[0]].marker[f->marker[0]];
  if (!mk->has_axis)
    return fail(c, sub, "marker has no \"axis\", which a tyre needs as its spin axis");
  TRY(member_bounded(c, e, path, "radius", 1, 1, &f->radius));
  TRY(member_bounded(c, e, path, "stiffness", 1, 1, &f->stiffness));
  TRY(member_bounded(c, e, path, "damping", 0, 0, &f->damping));
  const cJSON* slip = get(e, "slip");
  if (slip) {
    static const char* const slip_keys[] = {"longitudinal", "lateral", "friction", NULL};
    path_key(sub, path, "slip");
    TRY(expect_object(c, slip, sub));
    TRY(check_keys(c, slip, sub, slip_keys));
    for (int k = 0; k < 3; k++)
      TRY(member_bounded(c, slip, sub, slip_keys[k], 1, k == 2, &f->slip[k]));
  }
  const cJSON* road = get(e, "road");
  if (!road) return MB_OK;
  path_key(sub, path, "road");
  TRY(expect_object(c, road, sub));
  TRY(check_keys(c, road, sub, road_keys));
  const cJSON* step = get(road, "step");
  if (!step) return MB_OK;
  path_key(sub2, sub, "step");
  TRY(expect_object(c, step, sub2));
  TRY(check_keys(c, step, sub2, step_keys));
  static const char* const need[] = {"x", "height", "width"};
  for (int k = 0; k < 3; k++) {
    if (!get(step, need[k])) {
      path_key(sub, sub2, need[k]);
      return fail(c, sub, "missing");
    }
    TRY(member_number(c, step, sub2, need[k], &f->road[k]));
  }
  return check_min(c, sub2, "width", f->road[2], 1);
}

static mb_status read_forces(json_ctx* c, const cJSON* root) {
  static const char* const spring_keys[] = {"name",           "type",      "marker1",
                                            "marker2",        "stiffness", "damping",
                                            "natural_length", "force",     NULL};
  static const char* const point_keys[] = {"name", "type", "marker", "value", NULL};
  static const char* const torque_keys[] = {"name", "type", "body", "value", NULL};
  static const char* const tyre_keys[] = {"name",    "type", "wheel", "radius", "stiffness",
                                          "damping", "road", "slip",  NULL};
  char path[PATH_LEN], sub[PATH_LEN];
  mb_desc* d = c->d;
  const cJSON* list;
  int i = 0;
  TRY(member_list(c, root, "forces", &list));
  if (!list) return MB_OK;
  TRY(alloc_array(c, (void**)&d->force, cJSON_GetArraySize(list), sizeof *d->force));
  d->nforce = cJSON_GetArraySize(list); /* so that mb_desc_free reaches every func */

  for (const cJSON* e = list->child; e; e = e->next, i++) {
    mb_force_desc* f = &d->force[i];
    const char* type;
    path_index(path, "forces", i);
    f->body[0] = f->body[1] = f->marker[0] = f->marker[1] = -1;
    f->radius = f->slip[0] = f->slip[1] = f->slip[2] = (mb_real){0, -1, 0};
    TRY(expect_object(c, e, path));

    /* the type decides the keys */
    path_key(sub, path, "type");
    TRY(member_string(c, e, path, "type", 1, &type));
    int t = -1;
    for (int k = 0; k <= MB_FORCE_TYRE; k++)
      if (strcmp(type, force_type_name[k]) == 0) t = k;
    if (t < 0)
      return fail(c, sub, "unknown force type \"%.64s\" (spring, force, torque or tyre)", type);
    f->type = (mb_force_type)t;
    TRY(check_keys(c, e, path,
                   f->type == MB_FORCE_SPRING   ? spring_keys
                   : f->type == MB_FORCE_POINT  ? point_keys
                   : f->type == MB_FORCE_TORQUE ? torque_keys
                                                : tyre_keys));
    TRY(member_name(c, e, path, 0, d->force[0].name, sizeof *d->force, i, "force", f->name));

    if (f->type == MB_FORCE_SPRING) {
      /* spring-damper-actuator between two points of different bodies */
      TRY(member_marker_ref(c, e, path, "marker1", &f->body[0], &f->marker[0]));
      TRY(member_marker_ref(c, e, path, "marker2", &f->body[1], &f->marker[1]));
      path_key(sub, path, "marker2");
      if (f->body[0] == f->body[1])
        return fail(c, sub, "on the same body as marker1 (%s): a spring connects two bodies",
                    f->body[0] < 0 ? "ground" : d->body[f->body[0]].name);
      TRY(member_bounded(c, e, path, "stiffness", 0, 0, &f->stiffness));
      TRY(member_bounded(c, e, path, "damping", 0, 0, &f->damping));
      TRY(member_bounded(c, e, path, "natural_length", 1, 0, &f->natural_length));
      TRY(member_real(c, e, path, "force", 0, 0, &f->force));
    } else if (f->type == MB_FORCE_POINT) {
      /* a force at a marker of a moving body, global components */
      TRY(member_marker_ref(c, e, path, "marker", &f->body[0], &f->marker[0]));
      path_key(sub, path, "marker");
      if (f->body[0] < 0) return fail(c, sub, "must be on a moving body, not the ground");
      TRY(read_load(c, e, path, d->dim, f->func));
    } else if (f->type == MB_FORCE_TYRE) {
      TRY(read_tyre(c, e, path, f));
    } else {
      /* a torque on a moving body: planar about z (func[0]), spatial global x, y, z */
      TRY(member_body_ref(c, e, path, "body", &f->body[0]));
      TRY(read_load(c, e, path, d->dim == 2 ? 1 : 3, f->func));
    }
  }
  return MB_OK;
}

static mb_status read_drivers(json_ctx* c, const cJSON* root) {
  static const char* const keys[] = {"name", "joint", "coordinate", "function", NULL};
  char path[PATH_LEN], sub[PATH_LEN];
  mb_desc* d = c->d;
  const cJSON* list;
  int i = 0;
  TRY(member_list(c, root, "drivers", &list));
  if (!list) return MB_OK;
  TRY(alloc_array(c, (void**)&d->driver, cJSON_GetArraySize(list), sizeof *d->driver));
  d->ndriver = cJSON_GetArraySize(list);

  for (const cJSON* e = list->child; e; e = e->next, i++) {
    mb_driver_desc* r = &d->driver[i];
    path_index(path, "drivers", i);
    TRY(expect_object(c, e, path));
    TRY(check_keys(c, e, path, keys));
    TRY(member_name(c, e, path, 0, d->driver[0].name, sizeof *d->driver, i, "driver", r->name));
    TRY(member_joint_ref(c, e, path, &r->joint));
    TRY(member_coord(c, e, path, r->joint, &r->coord));

    /* driving one coordinate twice gives redundant, generally inconsistent constraints */
    for (int k = 0; k < i; k++)
      if (d->driver[k].joint == r->joint && d->driver[k].coord == r->coord) {
        path_key(sub, path, "joint");
        return fail(c, sub, "the %s of joint \"%s\" is already driven by drivers[%d]",
                    coord_name[r->coord], d->joint[r->joint].name, k);
      }
    path_key(sub, path, "function");
    if (!get(e, "function")) return fail(c, sub, "missing");
    TRY(read_func(c, get(e, "function"), sub, &r->func));
  }
  return MB_OK;
}

/* component names: x, y (, z) for points and spatial angular velocity */
static int component_index(const char* s, const char* const* names, int n) {
  for (int k = 0; k < n; k++)
    if (strcmp(s, names[k]) == 0) return k;
  return -1;
}

static mb_status read_initial(json_ctx* c, const cJSON* root) {
  static const char* const body_keys[] = {"body", "angle", "rate", NULL};
  static const char* const joint_keys[] = {"joint", "angle",      "translation",
                                           "rate",  "coordinate", NULL};
  static const char* const marker_keys[] = {"marker", "component", "value", "rate", NULL};
  static const char* const section_keys[] = {"equilibrium", "coordinates", NULL};
  char path[PATH_LEN], sub[PATH_LEN], where[PATH_LEN] = "initial";
  mb_desc* d = c->d;
  const cJSON* list = get(root, "initial");
  int i = 0;
  /* either the list of coordinates, or {"equilibrium": bool, "coordinates": list} */
  if (cJSON_IsObject(list)) {
    const cJSON* eq = get(list, "equilibrium");
    TRY(check_keys(c, list, "initial", section_keys));
    if (eq) {
      char what[64];
      if (!cJSON_IsBool(eq))
        return fail(c, "initial.equilibrium", "expected true or false, got %s",
                    describe(eq, what, sizeof what));
      d->settings.equilibrium = cJSON_IsTrue(eq);
    }
    list = get(list, "coordinates");
    snprintf(where, sizeof where, "initial.coordinates");
    if (list) TRY(expect_array(c, list, where));
  } else if (list && !cJSON_IsArray(list)) {
    char what[64];
    return fail(c, "initial", "expected an array of coordinates or an object, got %s",
                describe(list, what, sizeof what));
  }
  if (!list) return MB_OK;
  TRY(alloc_array(c, (void**)&d->prescribe, cJSON_GetArraySize(list), sizeof *d->prescribe));
  d->nprescribe = cJSON_GetArraySize(list);

  for (const cJSON* e = list->child; e; e = e->next, i++) {
    mb_prescribe_desc* p = &d->prescribe[i];
    int kinds;
    path_index(path, where, i);
    p->joint = p->body = p->marker = p->component = -1;
    TRY(expect_object(c, e, path));
    kinds = (get(e, "body") != NULL) + (get(e, "joint") != NULL) + (get(e, "marker") != NULL);
    if (kinds != 1) return fail(c, path, "needs exactly one of \"body\", \"joint\" or \"marker\"");

    if (get(e, "body")) {
      /* the absolute angle of a planar body frame */
      p->type = MB_PRESCRIBE_BODY_ANGLE;
      path_key(sub, path, "body");
      if (d->dim != 2) return fail(c, sub, "body angles can be prescribed only in planar models");
      TRY(check_keys(c, e, path, body_keys));
      TRY(member_body_ref(c, e, path, "body", &p->body));
      TRY(member_real(c, e, path, "angle", 1, 0, &p->value));
      p->has_value = 1;
    } else if (get(e, "joint")) {
      /* a joint coordinate: the key "angle" or "translation" names it */
      const cJSON *a = get(e, "angle"), *t = get(e, "translation");
      p->type = MB_PRESCRIBE_JOINT;
      TRY(check_keys(c, e, path, joint_keys));
      TRY(member_joint_ref(c, e, path, &p->joint));
      if (a && t) {
        path_key(sub, path, "translation");
        return fail(c, sub, "give either \"angle\" or \"translation\" in one entry, not both");
      }
      if (a || t) {
        p->coord = a ? MB_COORD_ANGLE : MB_COORD_TRANSLATION;
        path_key(sub, path, coord_name[p->coord]);
        TRY(check_coord(c, sub, p->joint, p->coord));
        TRY(read_real(c, a ? a : t, sub, &p->value));
        p->has_value = 1;
        if (get(e, "coordinate")) {
          mb_coord_type k;
          TRY(member_coord(c, e, path, p->joint, &k));
          path_key(sub, path, "coordinate");
          if (k != p->coord)
            return fail(c, sub, "contradicts the key \"%s\"", coord_name[p->coord]);
        }
      } else {
        TRY(member_coord(c, e, path, p->joint, &p->coord));
      }
    } else {
      /* one global component of a marker point */
      const char* comp;
      p->type = MB_PRESCRIBE_POINT;
      TRY(check_keys(c, e, path, marker_keys));
      TRY(member_marker_ref(c, e, path, "marker", &p->body, &p->marker));
      path_key(sub, path, "marker");
      if (p->body < 0) return fail(c, sub, "must be on a moving body, not the ground");
      path_key(sub, path, "component");
      TRY(member_string(c, e, path, "component", 1, &comp));
      p->component = component_index(comp, axis_name, d->dim);
      if (p->component < 0)
        return fail(c, sub, "unknown component \"%.16s\" (%s)", comp,
                    d->dim == 2 ? "x or y" : "x, y or z");
      if (get(e, "value")) {
        TRY(member_real(c, e, path, "value", 1, 0, &p->value));
        p->has_value = 1;
      }
    }

    /* the rate, and something to prescribe at all */
    if (get(e, "rate")) {
      TRY(member_real(c, e, path, "rate", 1, 0, &p->rate));
      p->has_rate = 1;
    }
    if (!p->has_value && !p->has_rate)
      return fail(c, path, "prescribes nothing: give %s and/or \"rate\"",
                  p->type == MB_PRESCRIBE_POINT ? "\"value\"" : "\"angle\" or \"translation\"");
  }
  return MB_OK;
}

/* a required direction of n plain numbers, not all zero (stored as given: the compiler
   normalises); the components after n stay 0 */
static mb_status member_direction(json_ctx* c, const cJSON* obj, const char* path, const char* key,
                                  int n, double out[3]) {
  char sub[PATH_LEN];
  const cJSON* v = get(obj, key);
  path_key(sub, path, key);
  out[0] = out[1] = out[2] = 0;
  if (!v) return fail(c, sub, "missing");
  TRY(read_plain_vec(c, v, sub, n, out));
  if (out[0] == 0 && out[1] == 0 && out[2] == 0) return fail(c, sub, "must be non-zero");
  return MB_OK;
}

/* the actuator of a controller: a force at a marker of a moving body along a global direction,
   or a torque on a moving body about a global axis (planar: about z, no "axis") */
static mb_status read_actuator(json_ctx* c, const cJSON* e, const char* path,
                               mb_controller_desc* k) {
  static const char* const force_keys[] = {"type", "marker", "direction", NULL};
  static const char* const torque_keys[] = {"type", "body", "axis", NULL};
  char sub[PATH_LEN];
  const char* type;
  const int dim = c->d->dim;
  TRY(expect_object(c, e, path));

  /* the type decides the keys; a planar axis gets a pointed message rather than "unknown key" */
  path_key(sub, path, "type");
  TRY(member_string(c, e, path, "type", 1, &type));
  if (strcmp(type, "force") == 0)
    k->actuator = MB_ACTUATOR_FORCE;
  else if (strcmp(type, "torque") == 0)
    k->actuator = MB_ACTUATOR_TORQUE;
  else
    return fail(c, sub, "unknown actuator type \"%.64s\" (force or torque)", type);
  if (k->actuator == MB_ACTUATOR_TORQUE && dim == 2 && get(e, "axis")) {
    path_key(sub, path, "axis");
    return fail(c, sub, "only in spatial models (a planar torque acts about z)");
  }
  TRY(check_keys(c, e, path, k->actuator == MB_ACTUATOR_FORCE ? force_keys : torque_keys));

  /* a force: a marker of a moving body and a direction of dim components */
  if (k->actuator == MB_ACTUATOR_FORCE) {
    TRY(member_marker_ref(c, e, path, "marker", &k->body, &k->marker));
    path_key(sub, path, "marker");
    if (k->body < 0) return fail(c, sub, "must be on a moving body, not the ground");
    return member_direction(c, e, path, "direction", dim, k->direction);
  }

  /* a torque: a moving body and its axis (planar: z) */
  TRY(member_body_ref(c, e, path, "body", &k->body));
  k->marker = -1;
  if (dim == 2) {
    k->direction[0] = k->direction[1] = 0, k->direction[2] = 1;
    return MB_OK;
  }
  return member_direction(c, e, path, "axis", 3, k->direction);
}

/* one term of a controller's measured value: an output column and a plain weight (default 1) */
static mb_status read_cterm(json_ctx* c, const cJSON* e, const char* path, mb_cterm_desc* t) {
  static const char* const keys[] = {"output", "weight", NULL};
  TRY(expect_object(c, e, path));
  TRY(check_keys(c, e, path, keys));
  TRY(member_column(c, e, path, t->output, sizeof t->output));
  t->weight = 1;
  return member_number(c, e, path, "weight", &t->weight);
}

/* PID controllers: error terms on output columns (resolved by the compiler, so that controllers
   may measure outputs declared after them), reference, gains, saturation and actuator */
static mb_status read_controllers(json_ctx* c, const cJSON* root) {
  static const char* const keys[] = {"name", "type", "error",      "reference", "kp",
                                     "ki",   "kd",   "saturation", "actuator",  NULL};
  char path[PATH_LEN], sub[PATH_LEN], sub2[PATH_LEN];
  mb_desc* d = c->d;
  const cJSON* list;
  int i = 0;
  TRY(member_list(c, root, "controllers", &list));
  if (!list) return MB_OK;
  TRY(alloc_array(c, (void**)&d->controller, cJSON_GetArraySize(list), sizeof *d->controller));
  d->ncontroller = cJSON_GetArraySize(list); /* so that mb_desc_free reaches every term */

  for (const cJSON* e = list->child; e; e = e->next, i++) {
    mb_controller_desc* k = &d->controller[i];
    const char* type;
    path_index(path, "controllers", i);
    k->body = k->marker = -1;
    k->saturation = (mb_real){0, -1, 0}; /* unbound while absent (calloc gave param 0) */
    TRY(expect_object(c, e, path));

    /* the type (required, so that other kinds can come) decides the keys */
    path_key(sub, path, "type");
    TRY(member_string(c, e, path, "type", 1, &type));
    if (strcmp(type, "pid") != 0)
      return fail(c, sub, "unknown controller type \"%.64s\" (the only type is \"pid\")", type);
    TRY(check_keys(c, e, path, keys));
    TRY(member_name(c, e, path, 1, d->controller[0].name, sizeof *d->controller, i, "controller",
                    k->name));

    /* the measured value: at least one weighted output column */
    const cJSON* terms = get(e, "error");
    path_key(sub, path, "error");
    if (!terms) return fail(c, sub, "missing");
    TRY(expect_array(c, terms, sub));
    if (cJSON_GetArraySize(terms) == 0)
      return fail(c, sub, "needs at least one term {\"output\": name, \"weight\": number}");
    TRY(alloc_array(c, (void**)&k->term, cJSON_GetArraySize(terms), sizeof *k->term));
    k->nterm = cJSON_GetArraySize(terms);
    int j = 0;
    for (const cJSON* t = terms->child; t; t = t->next, j++) {
      path_index(sub2, sub, j);
      TRY(read_cterm(c, t, sub2, &k->term[j]));
    }

    /* the reference r(t) (default 0) and the gains (default 0) */
    path_key(sub, path, "reference");
    if (get(e, "reference")) {
      TRY(read_func(c, get(e, "reference"), sub, &k->reference));
      k->has_reference = 1;
    }
    TRY(member_real(c, e, path, "kp", 0, 0, &k->kp));
    TRY(member_real(c, e, path, "ki", 0, 0, &k->ki));
    TRY(member_real(c, e, path, "kd", 0, 0, &k->kd));

    /* the smooth saturation U tanh(u / U), U > 0 */
    if (get(e, "saturation")) {
      TRY(member_bounded(c, e, path, "saturation", 1, 1, &k->saturation));
      k->has_saturation = 1;
    }

    /* where u acts */
    path_key(sub, path, "actuator");
    if (!get(e, "actuator")) return fail(c, sub, "missing");
    TRY(read_actuator(c, get(e, "actuator"), sub, k));
  }
  return MB_OK;
}

/* output types, the sensor each gives, and the reference it needs */
enum {
  NEED_NONE,
  NEED_MARKER,
  NEED_BODY,
  NEED_JOINT,
  NEED_SPRING,
  NEED_CONTROLLER,
  NEED_REACTION,
  NEED_MULTIPLIERS
};
static const struct {
  const char* name;
  mb_sensor_type type;
  int need;
} output_types[] = {
    {"position", MB_SENSOR_POINT_POSITION, NEED_MARKER},
    {"velocity", MB_SENSOR_POINT_VELOCITY, NEED_MARKER},
    {"acceleration", MB_SENSOR_POINT_ACCELERATION, NEED_MARKER},
    {"angular_velocity", MB_SENSOR_BODY_ANGULAR_VELOCITY, NEED_BODY},
    {"angular_velocity_body", MB_SENSOR_BODY_ANGULAR_VELOCITY_BODY, NEED_BODY},
    {"angles", MB_SENSOR_BODY_ANGLES, NEED_BODY},
    {"joint", MB_SENSOR_JOINT_COORDINATE, NEED_JOINT},
    {"joint_rate", MB_SENSOR_JOINT_RATE, NEED_JOINT},
    {"spring_length", MB_SENSOR_SPRING_LENGTH, NEED_SPRING},
    {"spring_force", MB_SENSOR_SPRING_FORCE, NEED_SPRING},
    {"kinetic_energy", MB_SENSOR_KINETIC_ENERGY, NEED_NONE},
    {"gravity_energy", MB_SENSOR_GRAVITY_ENERGY, NEED_NONE},
    {"elastic_energy", MB_SENSOR_ELASTIC_ENERGY, NEED_NONE},
    {"total_energy", MB_SENSOR_TOTAL_ENERGY, NEED_NONE},
    {"control", MB_SENSOR_CONTROL, NEED_CONTROLLER},
    {"control_error", MB_SENSOR_CONTROL_ERROR, NEED_CONTROLLER},
    {"reaction_force", MB_SENSOR_REACTION_FORCE, NEED_REACTION},
    {"reaction_torque", MB_SENSOR_REACTION_TORQUE, NEED_REACTION},
    {"multipliers", MB_SENSOR_MULTIPLIERS, NEED_MULTIPLIERS},
    {"friction_force", MB_SENSOR_FRICTION_FORCE, NEED_MULTIPLIERS},
    {"normal_force", MB_SENSOR_NORMAL_FORCE, NEED_MULTIPLIERS},
};

/* the optional "component": an index into the sensor's values (-1: all of them) */
static mb_status read_component(json_ctx* c, const cJSON* e, const char* path, mb_sensor_desc* s) {
  static const char* const planar_angle[] = {"angle"};
  static const char* const planar_omega[] = {"z"};
  char sub[PATH_LEN];
  const char* comp;
  const char* const* names = axis_name;
  int n = c->d->dim;
  const char* hint = n == 2 ? "x or y" : "x, y or z";
  TRY(member_string(c, e, path, "component", 0, &comp));
  s->component = -1;
  if (!comp) return MB_OK;
  if (s->type == MB_SENSOR_BODY_ANGLES) {
    names = n == 2 ? planar_angle : euler_name;
    hint = n == 2 ? "planar models have only \"angle\"" : "yaw, pitch or roll";
    n = n == 2 ? 1 : 3;
  } else if ((s->type == MB_SENSOR_BODY_ANGULAR_VELOCITY ||
              s->type == MB_SENSOR_BODY_ANGULAR_VELOCITY_BODY ||
              s->type == MB_SENSOR_REACTION_TORQUE) &&
             n == 2) {
    names = planar_omega;
    hint = "planar models have only \"z\"";
    n = 1;
  }
  s->component = component_index(comp, names, n);
  path_key(sub, path, "component");
  if (s->component < 0) return fail(c, sub, "unknown component \"%.16s\" (%s)", comp, hint);
  return MB_OK;
}

static mb_status read_outputs(json_ctx* c, const cJSON* root) {
  static const char* const keys[][6] = {
      [NEED_NONE] = {"name", "type", NULL},
      [NEED_MARKER] = {"name", "type", "marker", "component", NULL},
      [NEED_BODY] = {"name", "type", "body", "component", NULL},
      [NEED_JOINT] = {"name", "type", "joint", "coordinate", NULL},
      [NEED_SPRING] = {"name", "type", "force", NULL},
      [NEED_CONTROLLER] = {"name", "type", "controller", NULL},
      [NEED_REACTION] = {"name", "type", "joint", "component", "frame", NULL},
      [NEED_MULTIPLIERS] = {"name", "type", "joint", NULL},
  };
  const int ntype = (int)(sizeof output_types / sizeof output_types[0]);
  char path[PATH_LEN], sub[PATH_LEN];
  mb_desc* d = c->d;
  const cJSON* list;
  int i = 0;
  TRY(member_list(c, root, "outputs", &list));
  if (!list) return MB_OK;
  TRY(alloc_array(c, (void**)&d->sensor, cJSON_GetArraySize(list), sizeof *d->sensor));
  d->nsensor = cJSON_GetArraySize(list);

  for (const cJSON* e = list->child; e; e = e->next, i++) {
    mb_sensor_desc* s = &d->sensor[i];
    const char* type;
    int t = -1;
    path_index(path, "outputs", i);
    s->body = s->marker = s->joint = s->force = s->component = -1;
    TRY(expect_object(c, e, path));

    /* the type decides the keys */
    path_key(sub, path, "type");
    TRY(member_string(c, e, path, "type", 1, &type));
    for (int k = 0; k < ntype; k++)
      if (strcmp(type, output_types[k].name) == 0) t = k;
    if (t < 0)
      return fail(c, sub,
                  "unknown output type \"%.64s\" (position, velocity, acceleration, "
                  "angular_velocity, angular_velocity_body, angles, joint, joint_rate, "
                  "spring_length, spring_force, "
                  "kinetic_energy, gravity_energy, elastic_energy, total_energy, control, "
                  "control_error, reaction_force, reaction_torque, multipliers, friction_force "
                  "or normal_force)",
                  type);
    s->type = output_types[t].type;
    TRY(check_keys(c, e, path, keys[output_types[t].need]));

    /* names become CSV column headers */
    TRY(member_name(c, e, path, 1, d->sensor[0].name, sizeof *d->sensor, i, "output", s->name));

    switch (output_types[t].need) {
      case NEED_MARKER:
        TRY(member_marker_ref(c, e, path, "marker", &s->body, &s->marker));
        TRY(read_component(c, e, path, s));
        break;
      case NEED_BODY:
        TRY(member_body_ref(c, e, path, "body", &s->body));
        TRY(read_component(c, e, path, s));
        break;
      case NEED_JOINT:
        TRY(member_joint_ref(c, e, path, &s->joint));
        TRY(member_coord(c, e, path, s->joint, &s->coord));
        break;
      case NEED_REACTION: {
        static const char* const frames[] = {"global", "joint"};
        const char* frame;
        TRY(member_joint_ref(c, e, path, &s->joint));
        TRY(read_component(c, e, path, s));
        TRY(member_string(c, e, path, "frame", 0, &frame));
        path_key(sub, path, "frame");
        s->joint_frame = frame ? component_index(frame, frames, 2) : 0;
        if (s->joint_frame < 0)
          return fail(c, sub, "unknown frame \"%.16s\" (global or joint)", frame);
        break;
      }
      case NEED_MULTIPLIERS:
        TRY(member_joint_ref(c, e, path, &s->joint));
        path_key(sub, path, "joint");
        if ((s->type == MB_SENSOR_FRICTION_FORCE || s->type == MB_SENSOR_NORMAL_FORCE) &&
            !d->joint[s->joint].friction.enabled)
          return fail(c, sub, "joint \"%s\" has no \"friction\"", d->joint[s->joint].name);
        break;
      case NEED_SPRING: {
        const char* fname;
        path_key(sub, path, "force");
        TRY(member_string(c, e, path, "force", 1, &fname));
        s->force = find_force(d, fname);
        if (s->force < 0) return fail(c, sub, "unknown force \"%.64s\"", fname);
        if (d->force[s->force].type != MB_FORCE_SPRING)
          return fail(c, sub, "force \"%s\" is not a spring", fname);
        break;
      }
      case NEED_CONTROLLER: {
        /* the controller's output u or error e, one column; the index goes in `force` */
        const char* kname;
        path_key(sub, path, "controller");
        TRY(member_string(c, e, path, "controller", 1, &kname));
        s->force = find_controller(d, kname);
        if (s->force < 0)
          return fail(c, sub, "unknown controller \"%.64s\" (not in \"controllers\")", kname);
        break;
      }
      default:
        break;
    }
  }
  return MB_OK;
}

/* functional term shapes, in mb_shape order */
static const char* const shape_name[] = {"squared_error", "value", "smooth_abs"};

/* one term of a functional: an output column, its shape, weight, reference and smoothing */
static mb_status read_fterm(json_ctx* c, const cJSON* e, const char* path, int final,
                            mb_fterm_desc* t) {
  static const char* const keys[] = {"output", "shape", "weight", "reference", "epsilon", NULL};
  char sub[PATH_LEN];
  const char* shape;
  t->final = final;
  TRY(expect_object(c, e, path));
  TRY(check_keys(c, e, path, keys));

  /* the output column: the compiler resolves the name ("x2", "v2.x") */
  TRY(member_column(c, e, path, t->output, sizeof t->output));

  /* the shape, then what it uses */
  path_key(sub, path, "shape");
  TRY(member_string(c, e, path, "shape", 0, &shape));
  t->shape = MB_SHAPE_SQUARED_ERROR;
  if (shape) {
    int k = component_index(shape, shape_name, 3);
    if (k < 0)
      return fail(c, sub, "unknown shape \"%.64s\" (squared_error, value or smooth_abs)", shape);
    t->shape = (mb_shape)k;
  }
  TRY(member_real(c, e, path, "weight", 0, 1, &t->weight));
  TRY(member_real(c, e, path, "epsilon", 0, 1e-6, &t->epsilon));
  TRY(check_real_min(c, path, "epsilon", &t->epsilon, 1));
  if (get(e, "epsilon") && t->shape != MB_SHAPE_SMOOTH_ABS) {
    path_key(sub, path, "epsilon");
    return fail(c, sub, "used only by the shape \"smooth_abs\" (this term is \"%s\")",
                shape_name[t->shape]);
  }
  path_key(sub, path, "reference");
  if (get(e, "reference")) {
    if (t->shape == MB_SHAPE_VALUE)
      return fail(c, sub,
                  "the shape \"value\" has no reference (use \"squared_error\" or "
                  "\"smooth_abs\")");
    TRY(read_func(c, get(e, "reference"), sub, &t->reference));
    t->has_reference = 1;
  }
  return MB_OK;
}

static mb_status read_functionals(json_ctx* c, const cJSON* root) {
  static const char* const keys[] = {"name", "integral", "final", NULL};
  static const char* const kinds[] = {"integral", "final"};
  char path[PATH_LEN], sub[PATH_LEN], sub2[PATH_LEN];
  mb_desc* d = c->d;
  const cJSON* list;
  int i = 0;
  TRY(member_list(c, root, "functionals", &list));
  if (!list) return MB_OK;
  TRY(alloc_array(c, (void**)&d->functional, cJSON_GetArraySize(list), sizeof *d->functional));
  d->nfunctional = cJSON_GetArraySize(list); /* so that mb_desc_free reaches every term */

  for (const cJSON* e = list->child; e; e = e->next, i++) {
    mb_functional_desc* f = &d->functional[i];
    const cJSON* terms[2];
    path_index(path, "functionals", i);
    TRY(expect_object(c, e, path));
    TRY(check_keys(c, e, path, keys));
    TRY(member_name(c, e, path, 1, d->functional[0].name, sizeof *d->functional, i, "functional",
                    f->name));

    /* the integrated and the final terms, at least one in all */
    for (int k = 0; k < 2; k++) {
      path_key(sub, path, kinds[k]);
      terms[k] = get(e, kinds[k]);
      if (terms[k]) TRY(expect_array(c, terms[k], sub));
    }
    int n = (terms[0] ? cJSON_GetArraySize(terms[0]) : 0) +
            (terms[1] ? cJSON_GetArraySize(terms[1]) : 0);
    if (n == 0) return fail(c, path, "needs at least one term in \"integral\" or \"final\"");
    TRY(alloc_array(c, (void**)&f->term, n, sizeof *f->term));
    f->nterm = n;
    n = 0;
    for (int k = 0; k < 2; k++) {
      int j = 0;
      path_key(sub, path, kinds[k]);
      for (const cJSON* t = terms[k] ? terms[k]->child : NULL; t; t = t->next, j++, n++) {
        path_index(sub2, sub, j);
        TRY(read_fterm(c, t, sub2, k, &f->term[n]));
      }
    }
  }
  return MB_OK;
}

/* one design variable entry: a scalar parameter, or every element of a vector parameter */
static mb_status read_design_vars(json_ctx* c, const cJSON* e, const char* path) {
  static const char* const keys[] = {"lower", "upper", "initial", "scale", NULL};
  mb_desc* d = c->d;
  mb_optim_desc* o = &d->optimization;
  char sub[PATH_LEN];
  TRY(expect_object(c, e, path));
  TRY(check_keys(c, e, path, keys));
  double lower = NAN, upper = NAN, initial = NAN;
  TRY(member_number(c, e, path, "lower", &lower));
  TRY(member_number(c, e, path, "upper", &upper));
  TRY(member_number(c, e, path, "initial", &initial));
  if (isnan(lower)) {
    path_key(sub, path, "lower");
    return fail(c, sub, "missing");
  }
  if (isnan(upper)) {
    path_key(sub, path, "upper");
    return fail(c, sub, "missing");
  }
  if (!(lower < upper)) {
    path_key(sub, path, "upper");
    return fail(c, sub, "must be greater than lower (got %g <= %g)", upper, lower);
  }
  const char* scale;
  TRY(member_string(c, e, path, "scale", 0, &scale));
  int log_scale = scale && !strcmp(scale, "log");
  if (scale && !log_scale && strcmp(scale, "linear")) {
    path_key(sub, path, "scale");
    return fail(c, sub, "expected \"linear\" or \"log\", got \"%s\"", scale);
  }
  if (log_scale && !(lower > 0)) {
    path_key(sub, path, "lower");
    return fail(c, sub, "must be > 0 on a log scale (got %g)", lower);
  }

  /* the parameters this entry names: "k", or every "u[i]" of a vector "u" */
  const char* name = e->string;
  const size_t len = strlen(name);
  int found = 0;
  for (int k = 0; k < d->nparam; k++) {
    const char* pn = d->param_name[k];
    if (strcmp(pn, name) && !(strncmp(pn, name, len) == 0 && pn[len] == '[')) continue;
    for (int v = 0; v < o->nvar; v++)
      if (o->var[v].param == k) return fail(c, path, "parameter \"%s\" listed twice", pn);
    mb_design_var* var = &o->var[o->nvar++];
    var->param = k, var->lower = lower, var->upper = upper, var->log_scale = log_scale;
    /* the whole range must be a valid model, or the optimiser meets failures it cannot read */
    mb_error rule;
    if (mb_desc_check_param(d, k, lower, &rule) != MB_OK) {
      path_key(sub, path, "lower");
      return fail(c, sub, "%s", rule.message);
    }
    if (!isnan(initial)) mb_desc_set_param(d, k, initial);
    const double x = d->param_value[k];
    if (x < lower || x > upper)
      return fail(c, path, "initial value %g of \"%s\" is outside [%g, %g]", x, pn, lower, upper);
    found++;
  }
  if (!found) return fail(c, path, "unknown parameter (not in \"parameters\")");
  return MB_OK;
}

static int functional_index(const mb_desc* d, const char* name) {
  for (int f = 0; f < d->nfunctional; f++)
    if (!strcmp(d->functional[f].name, name)) return f;
  return -1;
}

static mb_status read_constraint(json_ctx* c, const cJSON* k, const char* path,
                                 mb_constraint_desc* con) {
  static const char* const keys[] = {"functional", "lower", "upper", NULL};
  const char* fname;
  TRY(expect_object(c, k, path));
  TRY(check_keys(c, k, path, keys));
  TRY(member_string(c, k, path, "functional", 1, &fname));
  con->functional = functional_index(c->d, fname);
  if (con->functional < 0)
    return fail(c, path, "unknown functional \"%s\" (not in \"functionals\")", fname);
  con->lower = -INFINITY, con->upper = INFINITY;
  TRY(member_number(c, k, path, "lower", &con->lower));
  TRY(member_number(c, k, path, "upper", &con->upper));
  if (isinf(con->lower) && isinf(con->upper))
    return fail(c, path, "needs \"lower\", \"upper\" or both");
  if (con->lower > con->upper)
    return fail(c, path, "lower %g is greater than upper %g", con->lower, con->upper);
  return MB_OK;
}

/* the "optimization" section: design variables, objective, constraints, optimiser settings */
static mb_status read_optimization(json_ctx* c, const cJSON* root) {
  static const char* const keys[] = {"parameters", "objective", "constraints", "algorithm",
                                     "ftol_rel",   "ftol_abs",  "xtol_rel",    "maxeval",
                                     "maxtime",    NULL};
  const char* path = "optimization";
  char sub[PATH_LEN], sub2[PATH_LEN];
  mb_desc* d = c->d;
  mb_optim_desc* o = &d->optimization;
  o->objective = -1;
  snprintf(o->algorithm, sizeof o->algorithm, "lbfgs");
  o->ftol_rel = 1e-10, o->ftol_abs = 0, o->xtol_rel = 1e-8, o->maxtime = 0, o->maxeval = 200;
  const cJSON* e = get(root, path);
  if (!e) return MB_OK;
  TRY(expect_object(c, e, path));
  TRY(check_keys(c, e, path, keys));

  /* design variables, at most one per parameter */
  const cJSON* vars = get(e, "parameters");
  path_key(sub, path, "parameters");
  if (!vars) return fail(c, sub, "missing");
  TRY(expect_object(c, vars, sub));
  TRY(alloc_array(c, (void**)&o->var, d->nparam, sizeof *o->var));
  for (const cJSON* v = vars->child; v; v = v->next) {
    path_key(sub2, sub, v->string);
    TRY(read_design_vars(c, v, sub2));
  }
  if (o->nvar == 0) return fail(c, sub, "needs at least one parameter");

  /* the objective and the constraints name functionals */
  const char* objective;
  TRY(member_string(c, e, path, "objective", 1, &objective));
  o->objective = functional_index(d, objective);
  if (o->objective < 0) {
    path_key(sub, path, "objective");
    return fail(c, sub, "unknown functional \"%s\" (not in \"functionals\")", objective);
  }
  const cJSON* list = get(e, "constraints");
  path_key(sub, path, "constraints");
  if (list) {
    TRY(expect_array(c, list, sub));
    TRY(alloc_array(c, (void**)&o->con, cJSON_GetArraySize(list), sizeof *o->con));
    int i = 0;
    for (const cJSON* k = list->child; k; k = k->next, i++) {
      path_index(sub2, sub, i);
      TRY(read_constraint(c, k, sub2, &o->con[o->ncon++]));
    }
  }

  /* optimiser settings; the optimiser checks the algorithm's name */
  const char* algorithm;
  TRY(member_string(c, e, path, "algorithm", 0, &algorithm));
  if (algorithm) snprintf(o->algorithm, sizeof o->algorithm, "%s", algorithm);
  TRY(member_number(c, e, path, "ftol_rel", &o->ftol_rel));
  TRY(member_number(c, e, path, "ftol_abs", &o->ftol_abs));
  TRY(member_number(c, e, path, "xtol_rel", &o->xtol_rel));
  TRY(member_number(c, e, path, "maxtime", &o->maxtime));
  TRY(member_int(c, e, path, "maxeval", &o->maxeval));
  const double tols[] = {o->ftol_rel, o->ftol_abs, o->xtol_rel, o->maxtime};
  static const char* const tol_names[] = {"ftol_rel", "ftol_abs", "xtol_rel", "maxtime"};
  for (int k = 0; k < 4; k++)
    if (tols[k] < 0) {
      path_key(sub, path, tol_names[k]);
      return fail(c, sub, "must be >= 0 (got %g)", tols[k]);
    }
  if (o->maxeval < 1) {
    path_key(sub, path, "maxeval");
    return fail(c, sub, "must be >= 1 (got %d)", o->maxeval);
  }
  return MB_OK;
}

/* the whole model; sections in dependency order (parameters before any scalar, bodies before
   the references to them) */
static mb_status read_model(json_ctx* c, const cJSON* root) {
  static const char* const keys[] = {
      "name",        "dimension",  "gravity",     "parameters",   "ground",      "bodies",
      "joints",      "forces",     "drivers",     "initial",      "controllers", "outputs",
      "functionals", "simulation", "sensitivity", "optimization", "$schema",     NULL};
  mb_desc* d = c->d;
  const char* name;
  const cJSON* v;
  char what[64];
  if (!cJSON_IsObject(root))
    return fail(c, "top level", "expected an object, got %s", describe(root, what, sizeof what));
  TRY(check_keys(c, root, "", keys));
  /* the JSON Schema an editor checks the file against: a text, not read further */
  const char* schema;
  TRY(member_string(c, root, "", "$schema", 0, &schema));

  /* name and dimension */
  TRY(member_string(c, root, "", "name", 0, &name));
  if (name) {
    TRY(check_name(c, "name", name, 0));
    strcpy(d->name, name);
  }
  v = get(root, "dimension");
  if (!v) return fail(c, "dimension", "missing");
  TRY(read_int(c, v, "dimension", &d->dim));
  if (d->dim != 2 && d->dim != 3) return fail(c, "dimension", "must be 2 or 3 (got %d)", d->dim);

  TRY(read_parameters(c, root));
  TRY(member_vec(c, root, "", "gravity", 0, d->gravity));
  TRY(read_settings(c, root));
  TRY(read_ground(c, root));
  TRY(read_bodies(c, root));
  TRY(read_joints(c, root));
  TRY(read_forces(c, root));
  TRY(read_drivers(c, root));
  TRY(read_initial(c, root));
  TRY(read_controllers(c, root)); /* before the outputs, which name controllers */
  TRY(read_outputs(c, root));
  TRY(read_functionals(c, root));

  TRY(read_optimization(c, root));

  /* gradient method: the order of mb_method (include/mbopt/gradient.h) */
  static const char* const methods[] = {"auto", "forward", "adjoint", NULL};
  const char* method;
  TRY(member_string(c, root, "", "sensitivity", 0, &method));
  if (method) {
    d->sensitivity = -1;
    for (int i = 0; methods[i]; i++)
      if (!strcmp(method, methods[i])) d->sensitivity = i;
    if (d->sensitivity < 0)
      return fail(c, "sensitivity", "expected \"auto\", \"forward\" or \"adjoint\", got \"%s\"",
                  method);
  }
  return MB_OK;
}

/* ---------------------------------------------------------------------------------------------
   public functions */

/* the names of an enum's values, and their parsing */
static int name_index(const char* const* names, int n, const char* name) {
  for (int i = 0; i < n; i++)
    if (name && !strcmp(name, names[i])) return i;
  return -1;
}

static const char* const linear_solver_names[] = {"auto", "dense", "sparse", "klu"};

int mb_tangent_refresh_parse(const char* name) {
  return !name ? -1 : !strcmp(name, "step") ? 0 : !strcmp(name, "iteration") ? 1 : -1;
}

int mb_linear_solver_parse(const char* name) {
  return name_index(linear_solver_names,
                    (int)(sizeof linear_solver_names / sizeof linear_solver_names[0]), name);
}

const char* mb_linear_solver_name(int solver) {
  const int n = (int)(sizeof linear_solver_names / sizeof linear_solver_names[0]);
  return solver >= 0 && solver < n ? linear_solver_names[solver] : "?";
}

const char* mb_joint_type_name(mb_joint_type type) {
  const int n = (int)(sizeof joint_type_name / sizeof joint_type_name[0]);
  return (int)type >= 0 && (int)type < n ? joint_type_name[type] : "?";
}

const char* mb_force_type_name(mb_force_type type) {
  const int n = (int)(sizeof force_type_name / sizeof force_type_name[0]);
  return (int)type >= 0 && (int)type < n ? force_type_name[type] : "?";
}

static const char* const formulation_names[] = {"natural", "joint"};
static const char* const reference_names[] = {"centre_of_mass", "global_origin"};

int mb_formulation_parse(const char* name) { return name_index(formulation_names, 2, name); }

const char* mb_formulation_name(int formulation) {
  return formulation >= 0 && formulation < 2 ? formulation_names[formulation] : "?";
}

int mb_reference_parse(const char* name) { return name_index(reference_names, 2, name); }

const char* mb_reference_name(int reference) {
  return reference >= 0 && reference < 2 ? reference_names[reference] : "?";
}

void mb_settings_default(mb_settings* s) {
  if (!s) return;
  memset(s, 0, sizeof *s);
  s->t_end = 5;
  s->step = 1e-3;
  s->output_interval = 0;
  s->beta = 0.25;
  s->gamma = 0.5;
  s->penalty = 1e9;
  s->penalty_auto = 1;
  s->tol_newton = 1e-10;
  s->tol_constraint = 1e-10;
  s->max_newton = 50;
  s->max_substeps = 8;
  s->projection_iterations = 30;
  s->tol_projection = 1e-14;
  s->exact_tangent = 1;
  s->tol_assembly = 1e-12;
  s->max_assembly = 50;
}

void mb_desc_free(mb_desc* d) {
  if (!d) return;
  free(d->param_name);
  free(d->param_value);
  free(d->param_rule);
  for (int i = 0; i < d->nexpr && d->expr; i++) mb_expr_free(&d->expr[i]);
  free(d->expr);
  free(d->ground_marker);
  for (int i = 0; i < d->nbody && d->body; i++) free(d->body[i].marker);
  free(d->body);
  free(d->joint);
  for (int i = 0; i < d->nforce && d->force; i++)
    for (int k = 0; k < 3; k++) func_free(&d->force[i].func[k]);
  free(d->force);
  for (int i = 0; i < d->ndriver && d->driver; i++) func_free(&d->driver[i].func);
  free(d->driver);
  free(d->prescribe);
  free(d->sensor);
  for (int i = 0; i < d->nfunctional && d->functional; i++) {
    for (int j = 0; j < d->functional[i].nterm && d->functional[i].term; j++)
      func_free(&d->functional[i].term[j].reference);
    free(d->functional[i].term);
  }
  free(d->functional);
  for (int i = 0; i < d->ncontroller && d->controller; i++) {
    func_free(&d->controller[i].reference);
    free(d->controller[i].term);
  }
  free(d->controller);
  free(d->optimization.var);
  free(d->optimization.con);
  memset(d, 0, sizeof *d);
}

int mb_desc_param_index(const mb_desc* d, const char* name) {
  if (!d || !name) return -1;
  for (int i = 0; i < d->nparam; i++)
    if (strcmp(d->param_name[i], name) == 0) return i;
  return -1;
}

/* line and column (in characters) of position `where` of text */
static void text_position(const char* text, const char* where, int* line, int* column) {
  *line = 1, *column = 1;
  for (const char* p = text; p < where && *p; p++) {
    if (*p == '\n')
      ++*line, *column = 1;
    else if (((unsigned char)*p & 0xC0) != 0x80) /* count UTF-8 characters, not bytes */
      ++*column;
  }
}

/* The length of the UTF-8 sequence at p (1 to 4), or 0 when it is not valid UTF-8 (overlong
   forms, surrogates and code points above U+10FFFF included). */
static int utf8_length(const unsigned char* p) {
  if (p[0] < 0x80) return 1;
  int n;
  unsigned int cp;
  if ((p[0] & 0xE0) == 0xC0)
    n = 2, cp = p[0] & 0x1F;
  else if ((p[0] & 0xF0) == 0xE0)
    n = 3, cp = p[0] & 0x0F;
  else if ((p[0] & 0xF8) == 0xF0)
    n = 4, cp = p[0] & 0x07;
  else
    return 0;
  for (int k = 1; k < n; k++) {
    if ((p[k] & 0xC0) != 0x80) return 0;
    cp = cp << 6 | (p[k] & 0x3F);
  }
  static const unsigned int least[5] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < least[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n;
}

/* JSON text is UTF-8 (RFC 8259): anything else is refused where it starts, so that no name
   carries invalid bytes into the outputs */
static mb_status check_utf8(const char* text, const char* source, mb_error* err) {
  for (const unsigned char* p = (const unsigned char*)text; *p;) {
    const int n = utf8_length(p);
    if (n == 0) {
      int line, column;
      text_position(text, (const char*)p, &line, &column);
      mb_error_set(err, MB_ERR_JSON, "%s: line %d, column %d: invalid UTF-8 (byte 0x%02X)", source,
                   line, column, *p);
      return MB_ERR_JSON;
    }
    p += n;
  }
  return MB_OK;
}

/* 1 (with the error set) when the parse stopped at `where` because arrays and objects nest
   deeper than cJSON's limit, not because of a syntax error */
static int too_deep(const char* text, const char* where, const char* source, mb_error* err) {
  int depth = 0, in_string = 0;
  if (!where) return 0;
  for (const char* p = text; p <= where && *p; p++) { /* where: the bracket cJSON refused */
    if (in_string) {
      if (*p == '\\' && p[1])
        p++;
      else if (*p == '"')
        in_string = 0;
    } else if (*p == '"') {
      in_string = 1;
    } else if (*p == '[' || *p == '{') {
      if (++depth > CJSON_NESTING_LIMIT) {
        int line, column;
        text_position(text, p, &line, &column);
        mb_error_set(err, MB_ERR_JSON,
                     "%s: line %d, column %d: arrays and objects nested deeper than %d levels",
                     source, line, column, CJSON_NESTING_LIMIT);
        return 1;
      }
    } else if (*p == ']' || *p == '}') {
      depth--;
    }
  }
  return 0;
}

/* "line L, column C: syntax error near '...'" from the position where cJSON stopped */
static mb_status syntax_error(const char* text, const char* where, const char* source,
                              mb_error* err) {
  int line, column;
  char near[24];
  size_t n = 0;
  if (!where || where < text) where = text;
  text_position(text, where, &line, &column);
  while (n < 16 && where[n] && where[n] != '\n' && where[n] != '\r') n++;
  memcpy(near, where, n);
  near[n] = '\0';
  if (n == 0)
    mb_error_set(err, MB_ERR_JSON, "%s: line %d, column %d: syntax error near end of %s", source,
                 line, column, *where ? "line" : "input");
  else
    mb_error_set(err, MB_ERR_JSON, "%s: line %d, column %d: syntax error near '%s'", source, line,
                 column, near);
  one_line(err);
  return MB_ERR_JSON;
}

mb_status mb_desc_parse_json(const char* text, const char* source, mb_desc* d, mb_error* err) {
  json_ctx c = {source ? source : "<json>", d, err, NULL, 0};
  const char* end = NULL;
  cJSON* root = NULL;
  mb_status status;

  mb_error_clear(err);
  if (!d) return mb_error_set(err, MB_ERR_ARGUMENT, "mb_desc_parse_json: no description to fill");
  memset(d, 0, sizeof *d);
  if (!text) return mb_error_set(err, MB_ERR_ARGUMENT, "%s: no JSON text", c.source);

  /* syntax (a UTF-8 byte order mark is not JSON but editors write it) */
  if (strncmp(text, "\xEF\xBB\xBF", 3) == 0) text += 3;
  if ((status = check_utf8(text, c.source, err)) != MB_OK) goto done;
  root = cJSON_ParseWithOpts(text, &end, 1);
  if (!root) {
    status =
        too_deep(text, end, c.source, err) ? MB_ERR_JSON : syntax_error(text, end, c.source, err);
    goto done;
  }

  /* content */
  status = read_model(&c, root);

done:
  cJSON_Delete(root);
  free(c.vec);
  if (status != MB_OK) mb_desc_free(d);
  return status;
}

mb_status mb_desc_load_json(const char* path, mb_desc* d, mb_error* err) {
  FILE* file = NULL;
  char* text = NULL;
  size_t len = 0, cap = 0;
  mb_status status;

  mb_error_clear(err);
  if (!d) return mb_error_set(err, MB_ERR_ARGUMENT, "mb_desc_load_json: no description to fill");
  memset(d, 0, sizeof *d);
  if (!path) return mb_error_set(err, MB_ERR_ARGUMENT, "mb_desc_load_json: no file name");

  /* the whole file as one string, read in growing chunks (works for pipes too, and a directory
     fails in fread rather than with a nonsense size) */
  file = fopen(path, "rb");
  if (!file) {
    status = mb_error_set(err, MB_ERR_IO, "%s: cannot open the file (%s)", path, strerror(errno));
    goto done;
  }
  for (;;) {
    if (len + 1 >= cap) {
      char* grown = realloc(text, cap = cap ? 2 * cap : 65536);
      if (!grown) {
        status = mb_error_set(err, MB_ERR_MEMORY, "%s: out of memory reading the file", path);
        goto done;
      }
      text = grown;
    }
    size_t got = fread(text + len, 1, cap - 1 - len, file);
    /* a NUL byte would silently cut the text short; found as it comes, so that /dev/zero
       fails at once */
    const char* nul = memchr(text + len, '\0', got);
    if (nul) {
      status =
          mb_error_set(err, MB_ERR_JSON, "%s: contains a NUL byte at offset %zu (not a JSON text)",
                       path, (size_t)(nul - text));
      goto done;
    }
    len += got;
    if (len > MAX_FILE_BYTES) {
      status =
          mb_error_set(err, MB_ERR_JSON, "%s: larger than %d MB, more than any model or spec needs",
                       path, MAX_FILE_BYTES >> 20);
      goto done;
    }
    if (got == 0) break;
  }
  if (ferror(file)) {
    status = mb_error_set(err, MB_ERR_IO, "%s: cannot read the file (%s)", path, strerror(errno));
    goto done;
  }
  text[len] = '\0';
  status = mb_desc_parse_json(text, path, d, err);

done:
  one_line(err);
  if (file) fclose(file);
  free(text);
  return status;
}
