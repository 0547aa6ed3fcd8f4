/* Output folders and staged files (outdir.h). */
#include "outdir.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

/* mkdir -p; 0 with errno set on failure */
static int make_dirs(const char* path) {
  char buf[CLI_PATH_MAX];
  snprintf(buf, sizeof buf, "%s", path); /* callers' paths fit: they come from cli_path */
  for (char* p = buf + 1; *p; p++)
    if (*p == '/') {
      *p = '\0';
      if (mkdir(buf, 0755) != 0 && errno != EEXIST) return 0;
      *p = '/';
    }
  if (mkdir(buf, 0755) == 0) return 1;
  struct stat st;
  if (errno == EEXIST && stat(buf, &st) == 0 && !S_ISDIR(st.st_mode)) {
    errno = ENOTDIR;
    return 0;
  }
  return errno == EEXIST;
}

int cli_make_dirs(const char* option, const char* path) {
  if (make_dirs(path)) return CLI_OK;
  cli_error("%s: cannot create '%s': %s", option, path, strerror(errno));
  return CLI_BAD_INPUT;
}

int cli_outdir_open(cli_outdir* o, const char* option, const char* path) {
  o->lock = -1;
  if (!cli_path(o->path, option, "%s", path)) return CLI_USAGE;
  int code = cli_make_dirs(option, o->path);
  if (code != CLI_OK) return code;
  char lock[CLI_PATH_MAX];
  if (!cli_path(lock, option, "%s/.mbopt-lock", o->path)) return CLI_USAGE;
  /* flock: released by the kernel however the process ends, so no stale lock survives a kill */
  o->lock = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (o->lock < 0) {
    cli_error("%s: cannot write in '%s': %s", option, o->path, strerror(errno));
    return CLI_BAD_INPUT;
  }
  if (flock(o->lock, LOCK_EX | LOCK_NB) != 0) {
    char pid[32] = "";
    ssize_t n = pread(o->lock, pid, sizeof pid - 1, 0);
    pid[n > 0 ? n : 0] = 0;
    pid[strcspn(pid, "\n")] = 0;
    cli_error(
        "%s: '%s' is in use by another mbopt run%s%s%s; choose another folder or wait for "
        "it to end",
        option, o->path, pid[0] ? " (process " : "", pid, pid[0] ? ")" : "");
    close(o->lock);
    o->lock = -1;
    return CLI_BAD_INPUT;
  }
  /* the pid only improves a second run's message: a failure to write it changes nothing */
  char pid[32];
  const int n = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
  const ssize_t written = ftruncate(o->lock, 0) == 0 ? pwrite(o->lock, pid, (size_t)n, 0) : -1;
  (void)written;
  return CLI_OK;
}

void cli_outdir_close(cli_outdir* o) {
  if (o->lock >= 0) close(o->lock);
  o->lock = -1;
}

/* Opens s->part for writing, emptied, and locked for as long as it stays open: two runs
   writing one file (two simulations into one CSV) would interleave their rows; the second is
   refused. Prints the error and returns 0 when it cannot. */
static int open_locked(cli_staged* s) {
  const int fd = open(s->part, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) != 0) {
    cli_error(
        "%s: '%s' is being written by another mbopt run; choose another name or wait for "
        "it to end",
        s->option, s->part);
    close(fd);
    return 0;
  }
  if (fd < 0 || ftruncate(fd, 0) != 0 || !(s->f = fdopen(fd, "w"))) {
    cli_error("%s: cannot write '%s': %s", s->option, s->part, strerror(errno));
    if (fd >= 0) close(fd);
    return 0;
  }
  return 1;
}

int cli_staged_open(cli_staged* s, const char* option, const char* path) {
  s->f = NULL;
  s->option = option;
  s->replacing = s->keep = 0;
  if (!cli_path(s->path, option, "%s", path) || !cli_path(s->part, option, "%s.part", path))
    return 0;
  return open_locked(s);
}

int cli_staged_open_beside(cli_staged* s, const char* option, const char* path) {
  s->f = NULL;
  s->option = option;
  s->keep = 0;
  if (!cli_path(s->path, option, "%s", path) || !cli_path(s->part, option, "%s.part.new", path) ||
      !cli_path(s->record, option, "%s.part", path))
    return 0;
  s->replacing = open_locked(s);
  return s->replacing;
}

int cli_staged_replace(cli_staged* s) {
  if (!s->f || fflush(s->f) != 0 || fsync(fileno(s->f)) != 0 || rename(s->part, s->record) != 0) {
    cli_error("%s: cannot write '%s': %s", s->option, s->record, strerror(errno));
    return 0;
  }
  memcpy(s->part, s->record, sizeof s->part);
  s->replacing = 0, s->keep = 1;
  return 1;
}

/* The file is renamed or deleted before it is closed, while it is still locked: another run
   waiting for the name finds a new file, never this one. */
int cli_staged_commit(cli_staged* s) {
  if (!s->f) return 0;
  int ok = fflush(s->f) == 0 && fsync(fileno(s->f)) == 0 && rename(s->part, s->path) == 0;
  if (ok && s->replacing) unlink(s->record);
  if (!ok) {
    cli_error("%s: cannot write '%s': %s", s->option, s->path, strerror(errno));
    if (!s->keep) unlink(s->part);
  }
  ok = fclose(s->f) == 0 && ok;
  s->f = NULL;
  return ok;
}

void cli_staged_discard(cli_staged* s) {
  if (!s->f) return;
  if (!s->keep) unlink(s->part);
  fclose(s->f);
  s->f = NULL;
}

int cli_write_json(const char* dir, const char* name, const cJSON* o) {
  char path[CLI_PATH_MAX];
  cli_staged s;
  if (!cli_path(path, "--out", "%s/%s", dir, name) || !cli_staged_open(&s, "--out", path)) return 0;
  char* text = cli_json_text(o, 1);
  const int ok = text && fputs(text, s.f) >= 0 && fputc('\n', s.f) != EOF;
  cJSON_free(text);
  if (ok) return cli_staged_commit(&s);
  cli_staged_discard(&s);
  cli_error("--out: cannot write '%s'", path);
  return 0;
}
