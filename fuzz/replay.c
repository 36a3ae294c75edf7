/* replay.c: runs a fuzz target (fuzz/NAME_fuzz.c) over files, without
 * libFuzzer: `make fuzz-smoke` links each target with this main and the
 * plain engine objects and replays the seed corpora, so CI notices in
 * seconds when a fuzzer no longer builds, links or runs (issue 33: a
 * library missing from the fuzz rule went unseen), without the minutes
 * the instrumented clang build takes. Arguments: files or folders (their
 * regular files, one level). */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) { fprintf(stderr, "replay: cannot open %s\n", path); return 1; }
  size_t cap = 1 << 16, n = 0;
  uint8_t *buf = malloc(cap);
  for (size_t r; buf && (r = fread(buf + n, 1, cap - n, f)) > 0;) {
    n += r;
    if (n == cap) {
      uint8_t *bigger = realloc(buf, cap *= 2);
      if (!bigger) { free(buf); buf = NULL; }
      else buf = bigger;
    }
  }
  fclose(f);
  if (!buf) { fprintf(stderr, "replay: out of memory reading %s\n", path); return 1; }
  LLVMFuzzerTestOneInput(buf, n);
  free(buf);
  return 0;
}

int main(int argc, char **argv) {
  int bad = 0, files = 0;
  for (int i = 1; i < argc; i++) {
    struct stat st;
    if (stat(argv[i], &st) != 0) { fprintf(stderr, "replay: no such file %s\n", argv[i]); return 1; }
    if (!S_ISDIR(st.st_mode)) { bad |= run_file(argv[i]); files++; continue; }
    DIR *d = opendir(argv[i]);
    if (!d) { fprintf(stderr, "replay: cannot read folder %s\n", argv[i]); return 1; }
    for (struct dirent *e; (e = readdir(d));) {
      char p[4096];
      snprintf(p, sizeof p, "%s/%s", argv[i], e->d_name);
      if (stat(p, &st) == 0 && S_ISREG(st.st_mode)) { bad |= run_file(p); files++; }
    }
    closedir(d);
  }
  printf("replay: %d inputs\n", files);
  return bad || files == 0;
}
