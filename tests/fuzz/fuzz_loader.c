/* libFuzzer harness of the model/spec loader: any bytes as a JSON file. A description that loads
   is compiled, assembled, and runs a few time steps and both sensitivity methods, so that the
   checks of the loader are tested against everything that trusts them. Built by
   -DMBOPT_FUZZ=ON with clang (tests/fuzz/CMakeLists.txt); run by scripts/fuzz.sh. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "mbopt/mbopt.h"
#include "mbopt/gradient.h"

/* time steps a loaded model runs: enough to reach every phase of a step and of both sweeps */
enum { STEPS = 3 };

static void run_gradients(const mb_desc* d, const mb_model* m) {
  const int nf = m->nfunctional, np = mb_desc_gradient_count(d);
  double* psi = calloc((size_t)nf + 1, sizeof(double));
  double* grad = calloc((size_t)nf * np + 1, sizeof(double));
  mb_error err;
  if (psi && grad) {
    mb_gradient(d, m, MB_METHOD_FORWARD, 0, psi, grad, NULL, &err);
    mb_gradient(d, m, MB_METHOD_ADJOINT, 2, psi, grad, NULL, &err);
  }
  free(psi);
  free(grad);
}

/* one BLAS thread, as the mbopt command sets it: threads waiting for one another on a busy
   machine made a 2-second input take over 20 s */
int LLVMFuzzerInitialize(int* argc, char*** argv) {
  openblas_set_num_threads(1);
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
  char* text = malloc(size + 1);
  if (!text) return 0;
  memcpy(text, bytes, size);
  text[size] = 0;
  mb_desc d;
  mb_error err;
  const mb_status st = mb_desc_parse_json(text, "fuzz.json", &d, &err);
  free(text);
  if (st != MB_OK) return 0;
  if (d.settings.t_end > STEPS * d.settings.step) d.settings.t_end = STEPS * d.settings.step;
  mb_model* m = NULL;
  if (mb_compile(&d, &m, &err) == MB_OK) {
    mb_data* data = mb_data_create(m);
    int k = 0;
    if (data && mb_assemble(m, data, &err) == MB_OK)
      while (k < STEPS && mb_step(m, data, &err) == MB_OK) k++;
    mb_data_free(data);
    run_gradients(&d, m);
    mb_model_free(m);
  }
  mb_desc_free(&d);
  return 0;
}
