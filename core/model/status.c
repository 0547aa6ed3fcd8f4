/* Status texts and the error record. */
#include "mbopt/status.h"

#include <stdarg.h>
#include <stdio.h>

const char* mb_status_str(mb_status status) {
  switch (status) {
#define MB_STATUS_CASE(name, code, text) \
  case name:                             \
    return text;
    MB_STATUS_LIST(MB_STATUS_CASE)
#undef MB_STATUS_CASE
  }
  return "unknown status";
}

void mb_error_clear(mb_error* err) {
  if (!err) return;
  err->status = MB_OK;
  err->message[0] = '\0';
}

mb_status mb_error_set(mb_error* err, mb_status status, const char* format, ...) {
  if (!err) return status;
  err->status = status;
  va_list args;
  va_start(args, format);
  vsnprintf(err->message, sizeof err->message, format, args);
  va_end(args);
  return status;
}
