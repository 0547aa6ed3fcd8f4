/* The functionals of a spec and their exact gradients, then the same after changing a
   parameter: the five-bar benchmark's gradient with respect to its five parameters.
   Usage: examples/gradient [SPEC.json]   (default problems/fivebar.json) */
#include <stdio.h>
#include <stdlib.h>

#include <mbopt/mbopt.h>

/* psi and grad (nfunctional x parameters, row-major) of desc by `method`; prints them */
static int run(const mb_desc* desc, mb_method method) {
  mb_error err;
  mb_model* model = NULL;
  if (mb_compile(desc, &model, &err) != MB_OK) {
    fprintf(stderr, "%s\n", err.message);
    return 1;
  }
  const int nf = model->nfunctional, p = mb_desc_gradient_count(desc);
  double* psi = malloc(sizeof(double) * nf);
  double* grad = malloc(sizeof(double) * nf * p);
  mb_gradient_info info;
  int code = 1;
  if (psi && grad && mb_gradient(desc, model, method, 0, psi, grad, &info, &err) == MB_OK) {
    printf("method %s (%s)\n", mb_method_name(info.method), info.reason);
    for (int f = 0; f < nf; f++) {
      printf("%-6s = %-12.9g", model->functional_name + MB_NAME_LEN * f, psi[f]);
      for (int k = 0; k < p; k++) printf(" %12.6g", grad[f * p + k]);
      printf("\n");
    }
    code = 0;
  } else {
    fprintf(stderr, "%s\n", psi && grad ? err.message : "out of memory");
  }
  free(psi);
  free(grad);
  mb_model_free(model); /* a model is read-only while it runs: one per description state */
  return code;
}

int main(int argc, char** argv) {
  mb_desc desc;
  mb_error err;
  if (mb_desc_load_json(argc > 1 ? argv[1] : "problems/fivebar.json", &desc, &err) != MB_OK) {
    fprintf(stderr, "%s\n", err.message);
    return 1;
  }
  printf("parameters:");
  for (int k = 0; k < desc.nparam; k++) printf(" %s = %g", desc.param_name[k], desc.param_value[k]);
  printf("\n");
  int code = run(&desc, MB_METHOD_AUTO);

  /* a parameter is checked against the rules of the fields it sets, then set; the description
     is compiled again for the change to reach a model */
  const int k = mb_desc_param_index(&desc, "m_A1");
  if (code == 0 && k >= 0) {
    if (mb_desc_check_param(&desc, k, 0, &err) != MB_OK) printf("refused: %s\n", err.message);
    if (mb_desc_check_param(&desc, k, 1.5, &err) == MB_OK) {
      mb_desc_set_param(&desc, k, 1.5);
      printf("with m_A1 = 1.5, by the forward method:\n");
      code = run(&desc, MB_METHOD_FORWARD);
    }
  }
  mb_desc_free(&desc);
  return code;
}
