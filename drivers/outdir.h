/* Output folders and files that a run never leaves half-written: a folder is locked by the run
   that uses it, summaries are written to a temporary file and renamed into place, and files that
   grow during a run (histories) are written beside their final name and renamed when the run
   ends, so that a run which fails or is killed leaves what an earlier run wrote untouched. */
#ifndef MBOPT_OUTDIR_H
#define MBOPT_OUTDIR_H

#include <stdio.h>

#include <cJSON.h>

#include "cli.h"

typedef struct cli_outdir {
  char path[CLI_PATH_MAX];
  int lock; /* descriptor of the lock file, -1 when not locked */
} cli_outdir;

/* Creates folder `path` with its parents and locks it for this process; a folder locked by
   another run is refused. Prints the error (naming `option`) and returns an exit code. */
int cli_outdir_open(cli_outdir* o, const char* option, const char* path);

/* Creates folder `path` with its parents (mkdir -p); prints the error naming `option` and returns
   an exit code. */
int cli_make_dirs(const char* option, const char* path);

/* Releases the lock (the lock file stays, empty of meaning). */
void cli_outdir_close(cli_outdir* o);

/* A file written beside its final name (NAME.part) and renamed to NAME when committed. */
typedef struct cli_staged {
  FILE* f;
  const char* option; /* named in errors */
  char path[CLI_PATH_MAX], part[CLI_PATH_MAX];
  char record[CLI_PATH_MAX]; /* NAME.part, when replacing */
  int replacing; /* written as NAME.part.new, to replace a record NAME.part (cli_staged_replace) */
  int keep;      /* NAME.part holds a record to keep when the file is discarded */
} cli_staged;

/* Opens PATH.part for writing; prints the error (naming `option`) and returns 0 when it cannot. */
int cli_staged_open(cli_staged* s, const char* option, const char* path);

/* For a run that continues from PATH.part, the record an earlier run left: opens PATH.part.new,
   so that the record stays whole until cli_staged_replace puts the new file, which holds all
   of it by then, in its place. Returns 0 (error printed) when it cannot. */
int cli_staged_open_beside(cli_staged* s, const char* option, const char* path);

/* Renames PATH.part.new to PATH.part, which from then on is kept if the file is discarded: it
   is the record of the run. Returns 0 (error printed) on failure. */
int cli_staged_replace(cli_staged* s);

/* Flushes, syncs and renames the file into place (a record it was to replace is deleted);
   returns 0 (error printed) on failure. */
int cli_staged_commit(cli_staged* s);

/* Closes and deletes the staged file, unless it is a record to keep (no-op when not open). */
void cli_staged_discard(cli_staged* s);

/* Writes o as indented JSON to DIR/NAME through a staged file; returns 0 (error printed, naming
   --out) on failure. */
int cli_write_json(const char* dir, const char* name, const cJSON* o);

#endif
