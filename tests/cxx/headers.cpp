// The public headers compile as C++ and link against the C library: every header through the
// umbrella, a call into each part (version, status, description, optimiser layer).
#include <mbopt/mbopt.h>

#include <cstdio>
#include <cstring>

int main() {
  int failed = 0;
  if (std::strcmp(mb_version(), MBOPT_VERSION_STRING) != 0) failed++;
  if (std::strcmp(mb_status_str(MB_OK), "success") != 0) failed++;
  mb_desc d;
  mb_error err;
  if (mb_desc_parse_json("{\"dimension\": 5}", "c++", &d, &err) != MB_ERR_MODEL) failed++;
  if (mbo_algorithm_parse("slsqp") < 0 || std::strcmp(mb_method_name(MB_METHOD_ADJOINT), "adjoint"))
    failed++;
  std::printf("%s: mbopt %s from C++, %d failed\n", failed ? "FAIL" : "PASS", mb_version(), failed);
  return failed ? 1 : 0;
}
