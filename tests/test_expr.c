/* Expressions of parameters: values against the same formulas written in C, derivatives against
   central finite differences, precedence, and the errors of malformed texts. Then the loader:
   an expression stands wherever a parameter may, is evaluated again when a parameter is set,
   carries the rule of its scalar (a mass stays > 0), and its derivative reaches the gradients
   (forward and adjoint against finite differences of whole simulations). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mbopt/gradient.h"
#include "testing.h"

/* parameters a = 0.7, b = -1.3, c = 2.5 (c[0], c[1] as a vector would be named) */
static const char* const names[] = {"a", "b", "c", "u[0]", "u[1]"};
static double values[] = {0.7, -1.3, 2.5, 0.4, 3.0};
enum { NPARAM = 5 };

static int resolve(const char* name, char* why, size_t why_size, void* user) {
  (void)user;
  for (int k = 0; k < NPARAM; k++)
    if (!strcmp(name, names[k])) return k;
  snprintf(why, why_size, "unknown parameter \"%s\"", name);
  return -1;
}

/* each expression with the value the same formula gives in C */
static void test_values(mbt_tally* t) {
  const double a = values[0], b = values[1], c = values[2], u0 = values[3], u1 = values[4];
  const struct {
    const char* text;
    double expected;
  } cases[] = {
      {"-$a", -a},
      {"2 * $a", 2 * a},
      {"1 + 2 * 3", 7},
      {"(1 + 2) * 3", 9},
      {"2 ^ 3 ^ 2", 512},
      {"-2 ^ 2", -4},
      {"2 ^ -1", 0.5},
      {"$a - $b - $c", a - b - c},
      {"$a / $b / $c", a / b / c},
      {"+$a", a},
      {"--$a", a},
      {"1.5e-3 * $c", 1.5e-3 * c},
      {".5", 0.5},
      {"sqrt($c) + exp($a) - log($c)", sqrt(c) + exp(a) - log(c)},
      {"sin($a) * cos($b) / tan($c)", sin(a) * cos(b) / tan(c)},
      {"asin($a) + acos($a) + atan($b)", asin(a) + acos(a) + atan(b)},
      {"atan2($b, $a)", atan2(b, a)},
      {"abs($b) + min($a, $b) + max($a, $c)", fabs(b) + fmin(a, b) + fmax(a, c)},
      {"2 * pi * $u[0]", 2 * 3.14159265358979323846 * u0},
      {"$c ^ $a", pow(c, a)},
      {"$b ^ 3", pow(b, 3)},
      {"  $u[1]*( $a+1 )  ", u1 * (a + 1)},
      {"$m * 9.81 / 4", NAN}, /* unknown: below */
  };
  for (size_t i = 0; i + 1 < sizeof cases / sizeof cases[0]; i++) {
    mb_expr e;
    char why[160];
    char what[96];
    snprintf(what, sizeof what, "value of \"%s\"", cases[i].text);
    if (mb_expr_parse(cases[i].text, resolve, NULL, &e, why, sizeof why)) {
      printf("  %s: %s\n", cases[i].text, why);
      mbt_check(t, 0, what, NAN, 0);
      continue;
    }
    const double v = mb_expr_eval(&e, values, -1, NULL);
    mbt_check(t, fabs(v - cases[i].expected) <= 1e-15 * fmax(1, fabs(cases[i].expected)), what,
              v - cases[i].expected, 1e-15);
    mb_expr_free(&e);
  }
}

/* the derivative of every operation and function with respect to each parameter against central
   differences (step 1e-6, error about 1e-12 relative) */
static void test_derivatives(mbt_tally* t) {
  const char* const texts[] = {"-$a + $b - $c",
                               "$a * $b / $c",
                               "$c ^ $a",
                               "$b ^ 3",
                               "$a ^ $c",
                               "sqrt($c * $u[0])",
                               "exp($a * $b)",
                               "log($c + $a)",
                               "sin($a * $c)",
                               "cos($b / $c)",
                               "tan($a)",
                               "asin($a / 2)",
                               "acos($u[0])",
                               "atan($b * $c)",
                               "abs($b * $a)",
                               "atan2($b, $a)",
                               "atan2($a * $c, -$u[1])",
                               "min($a, $b * $c)",
                               "max($a * $a, $c)",
                               "2 * pi * $u[1] ^ 2",
                               "$u[1] * ($a + 1) / sqrt($c)"};
  for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
    mb_expr e;
    char why[160];
    if (mb_expr_parse(texts[i], resolve, NULL, &e, why, sizeof why)) {
      printf("  %s: %s\n", texts[i], why);
      mbt_check(t, 0, texts[i], NAN, 0);
      continue;
    }
    for (int k = 0; k < NPARAM; k++) {
      double analytic = 0;
      mb_expr_eval(&e, values, k, &analytic);
      const double v = values[k], h = 1e-6 * fmax(1, fabs(v));
      values[k] = v + h;
      const double plus = mb_expr_eval(&e, values, -1, NULL);
      values[k] = v - h;
      const double minus = mb_expr_eval(&e, values, -1, NULL);
      values[k] = v;
      const double fd = (plus - minus) / (2 * h);
      const double error = fabs(analytic - fd) / fmax(1, fabs(fd));
      char what[96];
      snprintf(what, sizeof what, "d(%s)/d%s", texts[i], names[k]);
      mbt_check(t, error < 1e-8 && (mb_expr_depends(&e, k) || analytic == 0), what, error, 1e-8);
    }
    mb_expr_free(&e);
  }
}

/* malformed texts: refused with the column and the reason */
static void test_errors(mbt_tally* t) {
  const struct {
    const char* text;
    const char* reason;
  } cases[] = {
      {"", "at column 1: expression ends too early"},
      {"2 *", "at column 4: expression ends too early"},
      {"(1 + 2", "at column 7: expected ')'"},
      {"1 + 2)", "at column 6: unexpected ')' after a complete expression"},
      {"12 m", "at column 4: unexpected 'm' after a complete expression"},
      {"$x + 1", "at column 1: unknown parameter \"x\""},
      {"$ + 1", "at column 2: expected a parameter name after '$'"},
      {"$u[1 + 1", "at column 5: expected ']' closing the index"},
      {"sqr($a)", "at column 1: unknown name 'sqr'"},
      {"sqrt $a", "at column 6: expected '(' after sqrt"},
      {"atan2($a)", "at column 9: atan2 takes 2 arguments"},
      {"min($a, $b", "at column 11: expected ')' closing min("},
      {"1e", "at column 2: expected the digits of an exponent"},
      {"inf", "at column 1: unknown name 'inf'"},
      {"1 # 2", "at column 3: unexpected '#' after a complete expression"},
      {"2 ** 3", "at column 4: unexpected '*'"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    mb_expr e;
    char why[160] = "";
    const int status = mb_expr_parse(cases[i].text, resolve, NULL, &e, why, sizeof why);
    const int ok = status != 0 && strstr(why, cases[i].reason) == why && e.nop == 0;
    if (!ok) printf("  \"%s\": got \"%s\", expected \"%s\"\n", cases[i].text, why, cases[i].reason);
    char what[96];
    snprintf(what, sizeof what, "refused: \"%s\"", cases[i].text);
    mbt_check(t, ok, what, 0, 0);
  }
  /* nesting and length have limits, so that no text can exhaust the stack */
  char deep[400], longer[4000];
  memset(deep, '(', 300);
  strcpy(deep + 300, "1");
  mb_expr e;
  char why[160] = "";
  mbt_check(t,
            mb_expr_parse(deep, resolve, NULL, &e, why, sizeof why) && strstr(why, "nested deeper"),
            "300 parentheses refused", 0, 0);
  strcpy(longer, "1");
  for (int i = 0; i < 300; i++) strcat(longer, " + 1");
  mbt_check(t,
            mb_expr_parse(longer, resolve, NULL, &e, why, sizeof why) && strstr(why, "longer than"),
            "301 terms refused", 0, 0);
}

/* a spring-supported pendulum written with expressions: the spring's stiffness "$k * $s", its
   natural length "$L / 2 + 0.1 * sqrt($k - 30)", the body's mass "2 * $m - $s", the attachment
   point "-$L"; the same model with the expressions' values as numbers simulates to the same
   functionals, and the gradients with respect to k, L, m and s, by both methods, agree with
   central differences of whole simulations */
static const char* model_text =
    "{\"dimension\": 2, \"gravity\": [0, -9.81],"
    " \"parameters\": {\"k\": 40, \"L\": 0.8, \"m\": 1.1, \"s\": 1.5},"
    " \"ground\": {\"markers\": {\"O\": {\"point\": [0, 0]}, \"S\": {\"point\": [\"-$L\", 0.3]}}},"
    " \"bodies\": [{\"name\": \"bar\", \"mass\": \"2 * $m - $s\", \"inertia\": 0.05,"
    "   \"position\": [0.4, 0], \"markers\": {\"P\": {\"point\": [-0.4, 0]}, \"T\": {\"point\": "
    "[0.4, 0]}}}],"
    " \"joints\": [{\"name\": \"pin\", \"type\": \"revolute\", \"marker1\": \"ground.O\", "
    "\"marker2\": \"bar.P\"}],"
    " \"forces\": [{\"name\": \"spring\", \"type\": \"spring\", \"marker1\": \"ground.S\", "
    "\"marker2\": \"bar.T\","
    "   \"stiffness\": \"$k * $s\", \"natural_length\": \"$L / 2 + 0.1 * sqrt($k - 30)\", "
    "\"damping\": "
    "0.5}],"
    " \"outputs\": [{\"name\": \"tip\", \"type\": \"position\", \"marker\": \"bar.T\", "
    "\"component\": \"y\"}],"
    " \"functionals\": [{\"name\": \"height\", \"integral\": [{\"output\": \"tip\", \"shape\": "
    "\"squared_error\", \"reference\": 0}]}],"
    " \"simulation\": {\"t_end\": 1.0, \"step\": 1e-3}}";

static mb_status functionals(const mb_desc* d, double* psi, double* grad, mb_method method) {
  mb_model* m = NULL;
  mb_error err;
  mb_status st = mb_compile(d, &m, &err);
  if (st == MB_OK) st = mb_gradient(d, m, method, 0, psi, grad, NULL, &err);
  if (st != MB_OK) printf("  %s\n", err.message);
  mb_model_free(m);
  return st;
}

static void test_model(mbt_tally* t) {
  mb_desc d, plain;
  mb_error err;
  if (mb_desc_parse_json(model_text, "expressions", &d, &err) != MB_OK) {
    printf("  %s\n", err.message);
    mbt_check(t, 0, "model with expressions loads", 0, 0);
    return;
  }
  mbt_check(t, d.nexpr == 4, "four expressions", d.nexpr, 4);
  /* differences need solutions converged far below their step */
  d.settings.tol_newton = d.settings.tol_constraint = 1e-13;
  d.settings.tol_projection = 1e-14;
  d.settings.refresh_each_iteration = 1;
  /* the values of the expressions as numbers */
  char* text = malloc(strlen(model_text) + 64);
  strcpy(text, model_text);
  char numbers[4][32];
  snprintf(numbers[0], 32, "%.17g", -0.8);
  snprintf(numbers[1], 32, "%.17g", 2 * 1.1 - 1.5);
  snprintf(numbers[2], 32, "%.17g", 40 * 1.5);
  snprintf(numbers[3], 32, "%.17g", 0.8 / 2 + 0.1 * sqrt(40.0 - 30));
  const char* replace[][2] = {{"\"-$L\"", numbers[0]},
                              {"\"2 * $m - $s\"", numbers[1]},
                              {"\"$k * $s\"", numbers[2]},
                              {"\"$L / 2 + 0.1 * sqrt($k - 30)\"", numbers[3]}};
  for (int i = 0; i < 4; i++) {
    char* at = strstr(text, replace[i][0]);
    const size_t old = strlen(replace[i][0]), new = strlen(replace[i][1]);
    memmove(at + new, at + old, strlen(at + old) + 1);
    memcpy(at, replace[i][1], new);
  }
  const int loaded = mb_desc_parse_json(text, "numbers", &plain, &err) == MB_OK;
  free(text);
  if (loaded) plain.settings = d.settings;
  double psi[1], grad[4], psi_plain[1], dummy[4];
  if (loaded && functionals(&d, psi, grad, MB_METHOD_FORWARD) == MB_OK &&
      functionals(&plain, psi_plain, dummy, MB_METHOD_FORWARD) == MB_OK)
    mbt_check(t, fabs(psi[0] - psi_plain[0]) <= 1e-14 * fabs(psi_plain[0]),
              "expressions simulate as their values", psi[0] - psi_plain[0], 1e-14);
  else
    mbt_check(t, 0, "both models simulate", 0, 0);
  if (loaded) mb_desc_free(&plain);

  /* gradients by both methods against central differences */
  double adjoint[4];
  functionals(&d, psi, adjoint, MB_METHOD_ADJOINT);
  for (int k = 0; k < 4; k++) {
    const double v = d.param_value[k], h = 1e-4 * fabs(v);
    double plus[1], minus[1], none[4];
    mb_desc_set_param(&d, k, v + h);
    functionals(&d, plus, none, MB_METHOD_FORWARD);
    mb_desc_set_param(&d, k, v - h);
    functionals(&d, minus, none, MB_METHOD_FORWARD);
    mb_desc_set_param(&d, k, v);
    const double fd = (plus[0] - minus[0]) / (2 * h);
    const double scale = fmax(fabs(fd), 1e-8);
    char what[96];
    snprintf(what, sizeof what, "d height / d %s: forward against differences", d.param_name[k]);
    mbt_check(t, fabs(grad[k] - fd) <= 1e-6 * scale, what, fabs(grad[k] - fd) / scale, 1e-6);
    snprintf(what, sizeof what, "d height / d %s: adjoint against forward", d.param_name[k]);
    mbt_check(t, fabs(adjoint[k] - grad[k]) <= 1e-9 * scale, what,
              fabs(adjoint[k] - grad[k]) / scale, 1e-9);
  }

  /* setting a parameter evaluates its expressions again; the mass stays > 0 */
  const int m = mb_desc_param_index(&d, "m");
  mb_desc_set_param(&d, m, 1.2);
  mbt_check(t, fabs(d.body[0].mass.value - 0.9) < 1e-15, "mass follows m", d.body[0].mass.value,
            0.9);
  mb_status st = mb_desc_check_param(&d, m, 0.7, &err);
  mbt_check(
      t,
      st == MB_ERR_MODEL &&
          strstr(err.message,
                 "parameter \"m\" = 0.7: bodies[0].mass = \"2 * $m - $s\" = -0.1 must be > 0"),
      "m = 0.7 refused: the mass would be -0.1", 0, 0);
  if (st != MB_OK) printf("  %s\n", err.message);
  const int k = mb_desc_param_index(&d, "k");
  st = mb_desc_check_param(&d, k, 20, &err);
  mbt_check(
      t,
      st == MB_ERR_MODEL && strstr(err.message,
                                   "parameter \"k\" = 20: forces[0].natural_length = \"$L / 2 + "
                                   "0.1 * sqrt($k - 30)\" is not a finite number"),
      "k = 20 refused: the square root of -10", 0, 0);
  if (st != MB_OK) printf("  %s\n", err.message);
  mb_desc_free(&d);

  /* the loader: the expression and its place in each message */
  const char* bad[][2] = {{"\"mass\": \"2 * $m - $s\"", "\"mass\": \"$s - 2 * $m\""},
                          {"\"mass\": \"2 * $m - $s\"", "\"mass\": \"2 * $q\""},
                          {"\"mass\": \"2 * $m - $s\"", "\"mass\": \"2 * ($m\""},
                          {"\"mass\": \"2 * $m - $s\"", "\"mass\": \"log($m - $m)\""}};
  const char* reasons[] = {"bodies[0].mass: must be > 0 (got -0.7)",
                           "bodies[0].mass: expression \"2 * $q\": at column 5: unknown parameter "
                           "\"q\" (not in \"parameters\")",
                           "bodies[0].mass: expression \"2 * ($m\": at column 8: expected ')'",
                           "bodies[0].mass: expression \"log($m - $m)\" = -inf is not a finite "
                           "number"};
  for (int i = 0; i < 4; i++) {
    char* broken = malloc(strlen(model_text) + 64);
    strcpy(broken, model_text);
    char* at = strstr(broken, bad[i][0]);
    const size_t old = strlen(bad[i][0]), new = strlen(bad[i][1]);
    memmove(at + new, at + old, strlen(at + old) + 1);
    memcpy(at, bad[i][1], new);
    mb_desc e;
    st = mb_desc_parse_json(broken, "bad", &e, &err);
    free(broken);
    const int ok = st == MB_ERR_MODEL && strstr(err.message, reasons[i]);
    if (!ok) printf("  got \"%s\"\n", err.message);
    mbt_check(t, ok, reasons[i], 0, 0);
    if (st == MB_OK) mb_desc_free(&e);
  }
}

int main(void) {
  mbt_tally t = {0};
  test_values(&t);
  test_derivatives(&t);
  test_errors(&t);
  test_model(&t);
  return mbt_finish(&t);
}
