/* Self-contained HTML pages (view_page.h). */
#include "view_page.h"

#include <string.h>

#include "cli.h"
#include "outdir.h"
#include "view_assets.h"

const char* view_libraries_missing(void) {
  return mbv_libraries_found ? NULL
                             : "the JavaScript libraries of the HTML pages (three.js, uPlot) were "
                               "not installed when mbopt was built: run scripts/install-deps.sh, "
                               "then build again";
}

int view_libraries_present(void) {
  const char* missing = view_libraries_missing();
  if (missing) cli_error("%s", missing);
  return !missing;
}

/* text as HTML character data */
static void html_text(FILE* f, const char* text) {
  for (const char* c = text; *c; c++) {
    if (*c == '<')
      fputs("&lt;", f);
    else if (*c == '>')
      fputs("&gt;", f);
    else if (*c == '&')
      fputs("&amp;", f);
    else
      fputc(*c, f);
  }
}

/* an asset inside an element (embed.cmake refuses a file that holds "</script") */
static void asset(FILE* f, const char* open, const unsigned char* bytes, size_t size,
                  const char* close) {
  fputs(open, f);
  fwrite(bytes, 1, size, f);
  fputs(close, f);
}

int view_page_write(const char* option, const char* path, const char* title,
                    void (*write_data)(FILE* f, void* user), void* user) {
  cli_staged page;
  if (!cli_staged_open(&page, option, path)) return 0;
  FILE* f = page.f;
  fputs(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>",
      f);
  html_text(f, title);
  fputs("</title>\n", f);
  asset(f, "<style>\n", mbv_uplot_style, mbv_uplot_style_size, "\n</style>\n");
  asset(f, "<style>\n", mbv_style, mbv_style_size, "\n</style>\n</head>\n<body>\n");
  fwrite(mbv_page, 1, mbv_page_size, f);
  fputs("<script type=\"application/json\" id=\"mbopt-data\">\n", f);
  write_data(f, user);
  fputs("\n</script>\n", f);
  asset(f, "<script type=\"text/plain\" id=\"lib-three-core\">", mbv_three_core,
        mbv_three_core_size, "</script>\n");
  asset(f, "<script type=\"text/plain\" id=\"lib-three\">", mbv_three, mbv_three_size,
        "</script>\n");
  asset(f, "<script type=\"text/plain\" id=\"lib-orbit\">", mbv_orbit, mbv_orbit_size,
        "</script>\n");
  asset(f, "<script>\n", mbv_uplot, mbv_uplot_size, "\n</script>\n");
  asset(f, "<script>\n", mbv_script, mbv_script_size, "\n</script>\n</body>\n</html>\n");
  if (ferror(f)) {
    cli_error("%s: cannot write '%s'", option, path);
    cli_staged_discard(&page);
    return 0;
  }
  return cli_staged_commit(&page);
}
