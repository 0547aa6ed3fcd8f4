/* Expressions of parameters: a recursive-descent parser to a postfix program, and its evaluation
   with forward-mode derivatives (each stack entry carries its value and its derivative with
   respect to one parameter). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mbopt/desc.h"

typedef enum code {
  OP_NUMBER,
  OP_PARAM,
  OP_ADD,
  OP_SUB,
  OP_MUL,
  OP_DIV,
  OP_POW,
  OP_NEG,
  OP_SQRT,
  OP_EXP,
  OP_LOG,
  OP_SIN,
  OP_COS,
  OP_TAN,
  OP_ASIN,
  OP_ACOS,
  OP_ATAN,
  OP_ABS,
  OP_ATAN2,
  OP_MIN,
  OP_MAX
} code;

/* the functions by name, with their number of arguments */
static const struct {
  const char* name;
  code code;
  int args;
} functions[] = {{"sqrt", OP_SQRT, 1}, {"exp", OP_EXP, 1},     {"log", OP_LOG, 1},
                 {"sin", OP_SIN, 1},   {"cos", OP_COS, 1},     {"tan", OP_TAN, 1},
                 {"asin", OP_ASIN, 1}, {"acos", OP_ACOS, 1},   {"atan", OP_ATAN, 1},
                 {"abs", OP_ABS, 1},   {"atan2", OP_ATAN2, 2}, {"min", OP_MIN, 2},
                 {"max", OP_MAX, 2}};

typedef struct parser {
  const char* text;
  const char* at;
  mb_expr_resolve resolve;
  void* user;
  mb_expr_op op[MB_EXPR_MAX_OPS];
  int nop, depth;
  char* why;
  size_t why_size;
  int failed;
} parser;

static int error(parser* p, const char* format, ...) __attribute__((format(printf, 2, 3)));
static int error(parser* p, const char* format, ...) {
  if (p->failed) return -1;
  p->failed = 1;
  int n = snprintf(p->why, p->why_size, "at column %d: ", (int)(p->at - p->text) + 1);
  if (n < 0 || (size_t)n >= p->why_size) return -1;
  va_list args;
  va_start(args, format);
  vsnprintf(p->why + n, p->why_size - (size_t)n, format, args);
  va_end(args);
  return -1;
}

static void skip_space(parser* p) {
  while (*p->at == ' ' || *p->at == '\t') p->at++;
}

static int emit(parser* p, code c, int param, double value) {
  if (p->nop == MB_EXPR_MAX_OPS) return error(p, "longer than %d operations", MB_EXPR_MAX_OPS);
  p->op[p->nop++] = (mb_expr_op){(int)c, param, value};
  return 0;
}

static int is_digit(char c) {
  return c >= '0' && c <= '9';
}

static int is_name(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || is_digit(c) || c == '_';
}

static int parse_sum(parser* p);

/* a number: digits with an optional fraction and exponent (no sign, no "inf" or "nan") */
static int parse_number(parser* p) {
  const char* start = p->at;
  while (is_digit(*p->at)) p->at++;
  if (*p->at == '.') p->at++;
  while (is_digit(*p->at)) p->at++;
  if (p->at == start || (p->at == start + 1 && *start == '.')) {
    p->at = start;
    return error(p, "expected a number");
  }
  if (*p->at == 'e' || *p->at == 'E') {
    const char* e = p->at + 1;
    if (*e == '+' || *e == '-') e++;
    if (!is_digit(*e)) return error(p, "expected the digits of an exponent");
    while (is_digit(*e)) e++;
    p->at = e;
  }
  char buf[64];
  const size_t len = (size_t)(p->at - start);
  if (len >= sizeof buf) return error(p, "number too long");
  memcpy(buf, start, len);
  buf[len] = 0;
  const double v = strtod(buf, NULL);
  if (!isfinite(v)) return error(p, "number out of range");
  return emit(p, OP_NUMBER, -1, v);
}

/* "$name" or "$name[i]" */
static int parse_reference(parser* p) {
  const char* start = ++p->at;
  while (is_name(*p->at)) p->at++;
  if (p->at == start) return error(p, "expected a parameter name after '$'");
  if (*p->at == '[') {
    p->at++;
    while (is_digit(*p->at)) p->at++;
    if (*p->at != ']') return error(p, "expected ']' closing the index");
    p->at++;
  }
  char name[MB_NAME_LEN + 16];
  const size_t len = (size_t)(p->at - start);
  if (len >= sizeof name) return error(p, "parameter name too long");
  memcpy(name, start, len);
  name[len] = 0;
  char why[160] = "";
  const int k = p->resolve(name, why, sizeof why, p->user);
  if (k < 0) {
    p->at = start - 1;
    return error(p, "%s", why[0] ? why : "unknown parameter");
  }
  return emit(p, OP_PARAM, k, 0);
}

/* a function call or the constant pi */
static int parse_call(parser* p) {
  const char* start = p->at;
  while (is_name(*p->at)) p->at++;
  const size_t len = (size_t)(p->at - start);
  if (len == 2 && !strncmp(start, "pi", 2)) return emit(p, OP_NUMBER, -1, 3.14159265358979323846);
  for (size_t f = 0; f < sizeof functions / sizeof functions[0]; f++) {
    if (strlen(functions[f].name) != len || strncmp(start, functions[f].name, len)) continue;
    skip_space(p);
    if (*p->at != '(') return error(p, "expected '(' after %s", functions[f].name);
    p->at++;
    for (int a = 0; a < functions[f].args; a++) {
      if (a > 0) {
        skip_space(p);
        if (*p->at != ',')
          return error(p, "%s takes %d arguments", functions[f].name, functions[f].args);
        p->at++;
      }
      if (parse_sum(p)) return -1;
    }
    skip_space(p);
    if (*p->at != ')') return error(p, "expected ')' closing %s(", functions[f].name);
    p->at++;
    return emit(p, functions[f].code, -1, 0);
  }
  p->at = start;
  return error(p,
               "unknown name '%.*s' (functions: sqrt, exp, log, sin, cos, tan, asin, acos, "
               "atan, atan2, abs, min, max; the constant pi; parameters as $name)",
               (int)(len < 32 ? len : 32), start);
}

/* number | $parameter | function(...) | pi | ( sum ) */
static int parse_primary(parser* p) {
  skip_space(p);
  const char c = *p->at;
  if (c == '(') {
    p->at++;
    if (parse_sum(p)) return -1;
    skip_space(p);
    if (*p->at != ')') return error(p, "expected ')'");
    p->at++;
    return 0;
  }
  if (c == '$') return parse_reference(p);
  if (is_digit(c) || c == '.') return parse_number(p);
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return parse_call(p);
  if (c == 0) return error(p, "expression ends too early");
  return error(p, "unexpected '%c'", c);
}

/* [+-] unary | primary [^ unary]: the power binds tighter than a sign (-x^2 = -(x^2)) and
   groups to the right */
static int parse_unary(parser* p) {
  if (++p->depth > MB_EXPR_MAX_DEPTH) return error(p, "nested deeper than %d", MB_EXPR_MAX_DEPTH);
  skip_space(p);
  int status;
  if (*p->at == '-' || *p->at == '+') {
    const int negate = *p->at++ == '-';
    status = parse_unary(p);
    if (!status && negate) status = emit(p, OP_NEG, -1, 0);
  } else {
    status = parse_primary(p);
    skip_space(p);
    if (!status && *p->at == '^') {
      p->at++;
      status = parse_unary(p);
      if (!status) status = emit(p, OP_POW, -1, 0);
    }
  }
  p->depth--;
  return status;
}

static int parse_product(parser* p) {
  if (parse_unary(p)) return -1;
  for (;;) {
    skip_space(p);
    const char c = *p->at;
    if (c != '*' && c != '/') return 0;
    p->at++;
    if (parse_unary(p) || emit(p, c == '*' ? OP_MUL : OP_DIV, -1, 0)) return -1;
  }
}

static int parse_sum(parser* p) {
  if (++p->depth > MB_EXPR_MAX_DEPTH) return error(p, "nested deeper than %d", MB_EXPR_MAX_DEPTH);
  int status = parse_product(p);
  while (!status) {
    skip_space(p);
    const char c = *p->at;
    if (c != '+' && c != '-') break;
    p->at++;
    status = parse_product(p);
    if (!status) status = emit(p, c == '+' ? OP_ADD : OP_SUB, -1, 0);
  }
  p->depth--;
  return status;
}

int mb_expr_parse(const char* text, mb_expr_resolve resolve, void* user, mb_expr* e, char* why,
                  size_t why_size) {
  memset(e, 0, sizeof *e);
  parser* p = calloc(1, sizeof *p);
  if (!p) {
    snprintf(why, why_size, "out of memory");
    return -1;
  }
  p->text = p->at = text, p->resolve = resolve, p->user = user;
  p->why = why, p->why_size = why_size;
  int status = parse_sum(p);
  skip_space(p);
  if (!status && *p->at) status = error(p, "unexpected '%c' after a complete expression", *p->at);
  if (!status) {
    e->text = malloc(strlen(text) + 1);
    e->op = malloc(sizeof(mb_expr_op) * (size_t)p->nop);
    if (!e->text || !e->op) {
      mb_expr_free(e);
      snprintf(why, why_size, "out of memory");
      status = -1;
    } else {
      strcpy(e->text, text);
      memcpy(e->op, p->op, sizeof(mb_expr_op) * (size_t)p->nop);
      e->nop = p->nop;
    }
  }
  free(p);
  return status;
}

double mb_expr_eval(const mb_expr* e, const double* param_value, int seed, double* derivative) {
  double v[MB_EXPR_MAX_OPS], d[MB_EXPR_MAX_OPS];
  int n = 0;
  for (int i = 0; i < e->nop; i++) {
    const mb_expr_op* op = &e->op[i];
    if (op->code == OP_NUMBER) {
      v[n] = op->value, d[n++] = 0;
      continue;
    }
    if (op->code == OP_PARAM) {
      v[n] = param_value[op->param], d[n++] = op->param == seed ? 1 : 0;
      continue;
    }
    /* a: the last operand; for binary operations b is the last and a the one before */
    const int binary = op->code == OP_ADD || op->code == OP_SUB || op->code == OP_MUL ||
                       op->code == OP_DIV || op->code == OP_POW || op->code == OP_ATAN2 ||
                       op->code == OP_MIN || op->code == OP_MAX;
    if (binary) n--;
    const double a = v[n - 1], da = d[n - 1];
    const double b = binary ? v[n] : 0, db = binary ? d[n] : 0;
    double r, dr;
    switch ((code)op->code) {
      case OP_ADD:
        r = a + b, dr = da + db;
        break;
      case OP_SUB:
        r = a - b, dr = da - db;
        break;
      case OP_MUL:
        r = a * b, dr = da * b + a * db;
        break;
      case OP_DIV:
        r = a / b, dr = (da - r * db) / b;
        break;
      case OP_POW:
        r = pow(a, b);
        /* a constant exponent keeps negative bases with whole exponents differentiable */
        dr = (da != 0 ? b * pow(a, b - 1) * da : 0) + (db != 0 ? r * log(a) * db : 0);
        break;
      case OP_NEG:
        r = -a, dr = -da;
        break;
      case OP_SQRT:
        r = sqrt(a), dr = da / (2 * r);
        break;
      case OP_EXP:
        r = exp(a), dr = r * da;
        break;
      case OP_LOG:
        r = log(a), dr = da / a;
        break;
      case OP_SIN:
        r = sin(a), dr = cos(a) * da;
        break;
      case OP_COS:
        r = cos(a), dr = -sin(a) * da;
        break;
      case OP_TAN:
        r = tan(a), dr = (1 + r * r) * da;
        break;
      case OP_ASIN:
        r = asin(a), dr = da / sqrt(1 - a * a);
        break;
      case OP_ACOS:
        r = acos(a), dr = -da / sqrt(1 - a * a);
        break;
      case OP_ATAN:
        r = atan(a), dr = da / (1 + a * a);
        break;
      case OP_ABS:
        r = fabs(a), dr = a < 0 ? -da : da;
        break;
      case OP_ATAN2: /* atan2(y = a, x = b) */
        r = atan2(a, b), dr = (b * da - a * db) / (a * a + b * b);
        break;
      case OP_MIN:
        r = a <= b ? a : b, dr = a <= b ? da : db;
        break;
      case OP_MAX:
        r = a >= b ? a : b, dr = a >= b ? da : db;
        break;
      default:
        r = dr = NAN;
    }
    v[n - 1] = r, d[n - 1] = dr;
  }
  if (derivative) *derivative = n == 1 ? d[0] : NAN;
  return n == 1 ? v[0] : NAN;
}

int mb_expr_depends(const mb_expr* e, int param) {
  for (int i = 0; i < e->nop; i++)
    if (e->op[i].code == OP_PARAM && e->op[i].param == param) return 1;
  return 0;
}

void mb_expr_free(mb_expr* e) {
  if (!e) return;
  free(e->text);
  free(e->op);
  memset(e, 0, sizeof *e);
}
