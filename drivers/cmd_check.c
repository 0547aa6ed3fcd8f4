/* mbopt check: the analytic gradient against central finite differences of whole simulations. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "cli.h"
#include "commands.h"
#include "mbopt/gradient.h"

static void check_help(FILE* out) {
  fprintf(out,
          "Usage: mbopt check SPEC.json [options]\n"
          "Compares the analytic gradient of every functional of SPEC.json with\n"
          "central finite differences of whole simulations, run with tight Newton and projection\n"
          "tolerances and Newton's method at steps h and h/2 per parameter and combined by\n"
          "Richardson extrapolation (error O(h^4)), and prints the relative difference of every\n"
          "entry. Exits with 1 when an entry differs by more than the tolerance.\n\n"
          "Options:\n"
          "  --fd-step E       relative finite-difference step h_k = E |rho_k| (default 1e-3)\n"
          "  --fd-abs A        step of parameters whose value is 0 (default 1e-5)\n"
          "  --tolerance TOL   largest accepted relative difference (default 1e-5)\n"
          "  --method M        gradient method checked: forward, adjoint or auto (default: the\n"
          "                    spec's \"sensitivity\", else auto)\n");
  cli_run_options_help(out, 20, "iteration, whatever the spec says", 1);
  fprintf(out,
          "  --json            print the table as one JSON object\n"
          "  -h, --help        show this help\n");
}

/* Relative difference of an entry, with a floor at 1e-6 of the functional's largest entry so that
   entries that vanish are judged against the scale of their row. */
static double relative_difference(double a, double fd, double row_scale) {
  double denom = fmax(fmax(fabs(a), fabs(fd)), 1e-6 * row_scale);
  return denom > 0 ? fabs(a - fd) / denom : 0;
}

typedef struct check_args {
  const char* spec;
  cli_run run;
  int method; /* mb_method; -1: the spec's */
  double fd_step, fd_abs, tolerance;
  int json;
} check_args;

static int check_parse(int argc, char** argv, check_args* a) {
  *a = (check_args){
      .run = CLI_RUN_SPEC, .method = -1, .fd_step = 1e-3, .fd_abs = 1e-5, .tolerance = 1e-5};
  const cli_option options[] = {
      CLI_RUN_OPTIONS(a->run),
      CLI_THREADS_OPTION(a->run),
      CLI_METHOD_OPTION(a->method),
      {.name = "--fd-step", .kind = CLI_POSITIVE, .target = &a->fd_step},
      {.name = "--fd-abs", .kind = CLI_POSITIVE, .target = &a->fd_abs},
      {.name = "--tolerance", .kind = CLI_POSITIVE, .target = &a->tolerance},
      {.name = "--json", .kind = CLI_FLAG, .target = &a->json, .limit = 1}};
  return cli_parse_options("check", argc, argv, options, sizeof options / sizeof *options, 1,
                           &a->spec);
}

int cmd_check_parse(int argc, char** argv) {
  check_args a;
  return check_parse(argc, argv, &a);
}

int cmd_check(int argc, char** argv) {
  check_args a;
  int code = check_parse(argc, argv, &a);
  if (code != CLI_OK) return cli_parse_exit(code, check_help);
  const char* spec = a.spec;
  const double fd_step = a.fd_step, fd_abs = a.fd_abs, tolerance = a.tolerance;
  const int json = a.json;

  mb_desc d;
  code = cli_load_desc(spec, &a.run, &d);
  if (code != CLI_OK) return code;
  /* finite differences need solutions converged well below their step */
  d.settings.tol_newton = fmin(d.settings.tol_newton, 1e-13);
  d.settings.tol_constraint = fmin(d.settings.tol_constraint, 1e-13);
  d.settings.tol_projection = fmin(d.settings.tol_projection, 1e-14);
  d.settings.max_newton = d.settings.max_newton > 50 ? d.settings.max_newton : 50;
  /* and Newton's method, whose last iterate lies far inside the tolerance: chord iterations stop
     anywhere within it, a jump of the result with the parameter that the differences amplify */
  if (a.run.refresh < 0) d.settings.refresh_each_iteration = 1;
  mb_model* m = NULL;
  double *psi = NULL, *grad = NULL, *fd = NULL, *plus = NULL, *minus = NULL;
  if ((code = cli_compile(spec, &d, &m)) != CLI_OK) goto done;
  const int p = d.nparam, nf = m->nfunctional;
  if (nf == 0 || p == 0) {
    cli_error("%s: check needs \"functionals\" and \"parameters\" in the spec", spec);
    code = CLI_BAD_INPUT;
    goto done;
  }
  psi = calloc(nf, sizeof(double));
  grad = calloc((size_t)nf * p, sizeof(double));
  fd = calloc((size_t)nf * p, sizeof(double));
  plus = calloc(nf, sizeof(double));
  minus = calloc(nf, sizeof(double));
  const int chosen = a.method >= 0 ? a.method : d.sensitivity;
  mb_status st = cli_functionals(&d, m, chosen, psi, grad);

  /* central differences at h and h/2, one parameter at a time, extrapolated:
     D = (4 D(h/2) - D(h)) / 3 */
  for (int k = 0; k < p && st == MB_OK; k++) {
    const double v = d.param_value[k], h = v != 0 ? fd_step * fabs(v) : fd_abs;
    for (int level = 0; level < 2 && st == MB_OK; level++) {
      const double hl = level == 0 ? h : h / 2, weight = level == 0 ? -1.0 / 3 : 4.0 / 3;
      for (int side = 0; side < 2 && st == MB_OK; side++) {
        mb_model* mk = NULL;
        mb_desc_set_param(&d, k, side == 0 ? v + hl : v - hl);
        if ((code = cli_compile(spec, &d, &mk)) != CLI_OK)
          st = MB_ERR_MODEL;
        else
          st = cli_functionals(&d, mk, 0, side == 0 ? plus : minus, NULL);
        mb_model_free(mk);
      }
      for (int f = 0; f < nf; f++) fd[f * p + k] += weight * (plus[f] - minus[f]) / (2 * hl);
    }
    mb_desc_set_param(&d, k, v);
  }
  if (st != MB_OK) {
    code = cli_exit_code(st);
    goto done;
  }

  /* the table */
  double worst = 0;
  cJSON* o = json ? cJSON_CreateObject() : NULL;
  cJSON* entries = json ? cJSON_AddArrayToObject(o, "entries") : NULL;
  if (!json)
    printf("%-10s %-12s %16s %16s %12s\n", "functional", "parameter", "analytic", "finite diff.",
           "rel. diff.");
  for (int f = 0; f < nf; f++) {
    double row_scale = 0;
    for (int k = 0; k < p; k++) row_scale = fmax(row_scale, fabs(grad[f * p + k]));
    for (int k = 0; k < p; k++) {
      double a = grad[f * p + k], b = fd[f * p + k], r = relative_difference(a, b, row_scale);
      worst = fmax(worst, r);
      const char* fname = m->functional_name + MB_NAME_LEN * f;
      if (json) {
        cJSON* e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "functional", fname);
        cJSON_AddStringToObject(e, "parameter", d.param_name[k]);
        cJSON_AddNumberToObject(e, "analytic", a);
        cJSON_AddNumberToObject(e, "finite_difference", b);
        cJSON_AddNumberToObject(e, "relative_difference", r);
        cJSON_AddItemToArray(entries, e);
      } else {
        printf("%-10s %-12s %16.9g %16.9g %12.2e%s\n", fname, d.param_name[k], a, b, r,
               r > tolerance ? "  FAIL" : "");
      }
    }
  }
  code = worst > tolerance ? CLI_RUN_FAILED : CLI_OK;
  if (json) {
    cJSON_AddNumberToObject(o, "fd_step", fd_step);
    cJSON_AddNumberToObject(o, "fd_abs", fd_abs);
    cJSON_AddNumberToObject(o, "tolerance", tolerance);
    cJSON_AddNumberToObject(o, "worst", worst);
    cJSON_AddBoolToObject(o, "passed", code == CLI_OK);
    cli_print_json(o);
    cJSON_Delete(o);
  } else {
    printf("worst relative difference %.2e (tolerance %.1e): %s\n", worst, tolerance,
           code == CLI_OK ? "passed" : "FAILED");
  }

done:
  free(psi), free(grad), free(fd), free(plus), free(minus);
  mb_model_free(m);
  mb_desc_free(&d);
  return code;
}
