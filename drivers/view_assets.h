/* The files of the HTML pages, compiled into the program (drivers/view/embed.cmake generates
   their definitions): the page, style and script of drivers/view/, and the JavaScript libraries
   installed from npm (three.js, its orbit controls, uPlot) that every page inlines. Each array
   ends in a zero byte not counted in its size. */
#ifndef MBOPT_VIEW_ASSETS_H
#define MBOPT_VIEW_ASSETS_H

#include <stddef.h>

/* 1 when the libraries were found at build time; without them the arrays below are empty */
extern const int mbv_libraries_found;
/* "three 0.185.1, uplot 1.6.32": the versions compiled in */
extern const char mbv_library_versions[];

#define MBV_ASSET(name)                    \
  extern const unsigned char mbv_##name[]; \
  extern const size_t mbv_##name##_size;
MBV_ASSET(page)        /* drivers/view/page.html: the body of a page */
MBV_ASSET(style)       /* drivers/view/view.css */
MBV_ASSET(script)      /* drivers/view/view.js */
MBV_ASSET(three_core)  /* three.js, three.core.min.js */
MBV_ASSET(three)       /* three.js, three.module.min.js (imports three.core.min.js) */
MBV_ASSET(orbit)       /* three.js, examples/jsm/controls/OrbitControls.js (imports three) */
MBV_ASSET(uplot)       /* uPlot, uPlot.iife.min.js */
MBV_ASSET(uplot_style) /* uPlot, uPlot.min.css */
#undef MBV_ASSET

#endif
