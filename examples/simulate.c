/* Load a model, compile it, simulate it and read its outputs: the five-bar's point P2 every
   half second and its functionals at the end.
   Usage: examples/simulate [MODEL.json]   (default problems/fivebar.json) */
#include <stdio.h>

#include <mbopt/mbopt.h>

typedef struct printer {
  int x, y; /* the outputs' columns in d->out */
  double next;
} printer;

/* called after the assembly and at every output time; non-zero would stop the run */
static int print_point(const mb_model* m, const mb_data* d, void* user) {
  printer* p = user;
  if (d->t + 1e-12 < p->next) return 0;
  printf("t = %4.2f s  P2 = (%+.6f, %+.6f) m\n", d->t, d->out[p->x], d->out[p->y]);
  p->next += 0.5;
  return 0;
}

int main(int argc, char** argv) {
  const char* path = argc > 1 ? argv[1] : "problems/fivebar.json";
  mb_desc desc;
  mb_error err;
  if (mb_desc_load_json(path, &desc, &err) != MB_OK) {
    fprintf(stderr, "%s\n", err.message); /* names the file, the JSON path and the reason */
    return 1;
  }
  mb_model* model = NULL;
  mb_data* data = NULL;
  int code = 1;
  if (mb_compile(&desc, &model, &err) != MB_OK || !(data = mb_data_create(model))) {
    fprintf(stderr, "%s\n", model ? "out of memory" : err.message);
    goto done;
  }
  printer p = {mb_model_output(model, "x2"), mb_model_output(model, "y2"), 0};
  if (p.x < 0 || p.y < 0) {
    fprintf(stderr, "%s has no outputs x2 and y2\n", path);
    goto done;
  }
  if (mb_simulate(model, data, print_point, &p, &err) != MB_OK) {
    fprintf(stderr, "%s\n", err.message);
    goto done;
  }
  printf("%d steps, %ld Newton iterations\n", data->report.steps, data->report.newton_iterations);
  for (int f = 0; f < model->nfunctional; f++)
    printf("%s = %.9g\n", model->functional_name + MB_NAME_LEN * f, data->psi[f]);
  code = 0;
done:
  mb_data_free(data);
  mb_model_free(model);
  mb_desc_free(&desc);
  return code;
}
