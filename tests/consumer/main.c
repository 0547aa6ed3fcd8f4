/* A program of another project linking mbopt: the version and one description parsed. */
#include <stdio.h>
#include <string.h>

#include <mbopt/mbopt.h>

int main(void) {
  mb_desc d;
  mb_error err;
  const int ok = strcmp(mb_version(), MBOPT_VERSION_STRING) == 0 &&
                 mb_desc_parse_json("{\"dimension\": 5}", "consumer", &d, &err) == MB_ERR_MODEL;
  printf("%s: mbopt %s as a subdirectory\n", ok ? "PASS" : "FAIL", mb_version());
  return ok ? 0 : 1;
}
