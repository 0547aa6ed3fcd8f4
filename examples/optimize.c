/* An optimisation of a spec's "optimization" section with an observer seeing every evaluation:
   the five-bar springs' natural lengths that hold it at rest.
   Usage: examples/optimize [SPEC.json] [ALGORITHM]   (default problems/fivebar_springs.json) */
#include <stdio.h>
#include <stdlib.h>

#include <mbopt/mbopt.h>

static void show(const mb_opt_evaluation* e, void* user) {
  (void)user;
  printf("evaluation %2d  objective %-12.6g%s%s\n", e->index, e->objective,
         e->with_gradient ? "  with gradient" : "", e->failed ? "  (failed)" : "");
}

int main(int argc, char** argv) {
  mb_desc desc;
  mb_error err;
  if (mb_desc_load_json(argc > 1 ? argv[1] : "problems/fivebar_springs.json", &desc, &err) !=
      MB_OK) {
    fprintf(stderr, "%s\n", err.message);
    return 1;
  }
  const char* algorithm = argc > 2 ? argv[2] : NULL; /* NULL: the spec's */
  int code = 1;
  /* checked before anything runs: an objective, design variables, constraints the algorithm
     takes */
  if (mb_optimize_check(&desc, algorithm, &err) != MB_OK) {
    fprintf(stderr, "%s\n", err.message);
    goto done;
  }
  double* x = malloc(sizeof(double) * desc.optimization.nvar);
  mb_opt_result r;
  if (x && mb_optimize(&desc, algorithm, show, NULL, NULL, x, &r, &err) == MB_OK) {
    printf("%s: %s after %d evaluations (%s), objective %.6g\n", r.algorithm, r.status,
           r.evaluations, r.message, r.objective);
    for (int v = 0; v < desc.optimization.nvar; v++)
      printf("  %s = %.10g\n", desc.param_name[desc.optimization.var[v].param], x[v]);
    code = 0;
  } else {
    fprintf(stderr, "%s\n", x ? err.message : "out of memory");
  }
  free(x);
done:
  mb_desc_free(&desc);
  return code;
}
