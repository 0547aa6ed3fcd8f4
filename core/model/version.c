/* The library's version. */
#include "mbopt/version.h"

const char* mb_version(void) {
  return MBOPT_VERSION_STRING;
}
