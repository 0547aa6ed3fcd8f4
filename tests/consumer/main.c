/* A program of another project linking mbopt (as a subdirectory, through find_package or
   pkg-config): the version and one description parsed. */
#include <stdio.h>
#include <string.h>

#include <mbopt/mbopt.h>

int main(void) {
  mb_desc d;
  mb_error err;
  const int ok = strcmp(mb_version(), MBOPT_VERSION_STRING) == 0 &&
                 mb_desc_parse_json("{\"dimension\": 5}", "consumer", &d, &err) == MB_ERR_MODEL;
  printf("%s: linked mbopt %s\n", ok ? "PASS" : "FAIL", mb_version());
  return ok ? 0 : 1;
}
