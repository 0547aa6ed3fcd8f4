/* The version of mbopt: the macros give the headers' version at compile time, mb_version() the
   library's at run time. CMakeLists.txt reads its project version from this file. */
#ifndef MBOPT_VERSION_H
#define MBOPT_VERSION_H

#ifdef __cplusplus
extern "C" {
#endif

#define MBOPT_VERSION_MAJOR 0
#define MBOPT_VERSION_MINOR 1
#define MBOPT_VERSION_PATCH 0
#define MBOPT_VERSION_TEXT_(major, minor, patch) #major "." #minor "." #patch
#define MBOPT_VERSION_TEXT(major, minor, patch) MBOPT_VERSION_TEXT_(major, minor, patch)
#define MBOPT_VERSION_STRING \
  MBOPT_VERSION_TEXT(MBOPT_VERSION_MAJOR, MBOPT_VERSION_MINOR, MBOPT_VERSION_PATCH)

/* The library's version, "MAJOR.MINOR.PATCH" (MBOPT_VERSION_STRING of the build). */
const char* mb_version(void);

#ifdef __cplusplus
}
#endif

#endif
