/* dlopen_probe.c: drives gs_dlopen.c for spec/cuda_loader_spec.lua.
 *   dlopen_probe LABEL SONAME DEP WHEEL_DIR
 * (DEP "-" for none) opens the library as the engine would and prints
 * "found LABEL PATH" with the path the loader listed, or "missing MESSAGE". */
#include <stdio.h>
#include <string.h>
#include "core/gs_dlopen.h"

int main(int argc, char **argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: dlopen_probe LABEL SONAME DEP WHEEL_DIR\n");
    return 2;
  }
  const char *names[] = {argv[2], NULL};
  const char *deps[] = {argv[3], NULL};
  gs_cuda_lib_spec spec = {argv[1], names, strcmp(argv[3], "-") ? deps : NULL, argv[4]};
  char err[2048];
  void *h = gs_cuda_dlopen(&spec, err, sizeof err);
  if (!h) {
    printf("missing %s\n", err);
    return 1;
  }
  const char *label, *path;
  for (int i = 0; gs_cuda_loaded_library(i, &label, &path); i++) printf("found %s %s\n", label, path);
  return 0;
}
