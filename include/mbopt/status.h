/* Status codes and error reporting shared by every mbopt module. */
#ifndef MBOPT_STATUS_H
#define MBOPT_STATUS_H

#ifdef __cplusplus
extern "C" {
#endif

/* One list generates both the enum and the messages, so codes and texts never drift apart.
   Positive codes are recoverable (a caller may retry, for instance with a smaller step);
   negative codes are fatal for the run. */
#define MB_STATUS_LIST(X)                                       \
  X(MB_OK, 0, "success")                                        \
  X(MB_NEWTON_FAILED, 1, "Newton iteration did not converge")   \
  X(MB_INTERRUPTED, 2, "interrupted")                           \
  X(MB_ERR_IO, -1, "cannot read or write a file")               \
  X(MB_ERR_JSON, -2, "malformed JSON")                          \
  X(MB_ERR_MODEL, -3, "invalid model")                          \
  X(MB_ERR_ASSEMBLY, -4, "initial assembly failed")             \
  X(MB_ERR_SINGULAR, -5, "singular configuration")              \
  X(MB_ERR_NONFINITE, -6, "non-finite value (NaN or infinity)") \
  X(MB_ERR_LINALG, -7, "linear solver failed")                  \
  X(MB_ERR_MEMORY, -8, "out of memory")                         \
  X(MB_ERR_ARGUMENT, -9, "invalid argument")

typedef enum mb_status {
#define MB_STATUS_ENUM(name, code, text) name = code,
  MB_STATUS_LIST(MB_STATUS_ENUM)
#undef MB_STATUS_ENUM
} mb_status;

/* Room for an error message: an integration failure's cause, remedy and friction hint fit. */
#define MB_MESSAGE_LEN 1024

/* The last detailed error of an operation: its status and a one-line message with context,
   for example "bodies[2].mass: must be > 0". */
typedef struct mb_error {
  mb_status status;
  char message[MB_MESSAGE_LEN];
} mb_error;

/* Returns the generic text of a status code (never NULL). */
const char* mb_status_str(mb_status status);

/* Clears err (may be NULL). */
void mb_error_clear(mb_error* err);

/* Stores status and a printf-style message in err (may be NULL) and returns status, so that
   callers can write `return mb_error_set(err, MB_ERR_MODEL, "bodies[%d].mass: must be > 0", i);`.
 */
mb_status mb_error_set(mb_error* err, mb_status status, const char* format, ...)
    __attribute__((format(printf, 3, 4)));

#ifdef __cplusplus
}
#endif

#endif
