/* Self-contained HTML pages (mbopt view, report.html): one file that opens from disk without a
   network, holding its data as JSON, the page's own script and style (drivers/view/) and the
   JavaScript libraries compiled into the program. */
#ifndef MBOPT_VIEW_PAGE_H
#define MBOPT_VIEW_PAGE_H

#include <stdio.h>

/* NULL when the program holds the JavaScript libraries, else why not and how to get them */
const char* view_libraries_missing(void);

/* 1 when the program holds the JavaScript libraries; else prints the one-line error that says
   how to get them and returns 0. */
int view_libraries_present(void);

/* Writes the page to `path` through a staged file (replaced whole, never half-written): its
   title, and its data, a JSON object that write_data prints to the stream it is given (with
   every '<' inside strings escaped, view_json_string). Returns 0 (error printed, naming
   `option`) on failure. */
int view_page_write(const char* option, const char* path, const char* title,
                    void (*write_data)(FILE* f, void* user), void* user);

#endif
