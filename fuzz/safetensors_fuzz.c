/* safetensors_fuzz.c: libFuzzer target for the safetensors loader
 * (src/io/gs_safetensors.c). Each input is tried twice: as a whole file
 * (length prefix, header, data: every tensor the header accepts is read
 * and touched) and as bare header JSON. Whatever the bytes, the loader
 * must return an error or tensors, never read out of bounds, leak or hit
 * undefined behaviour. Build and run with fuzz/run.sh. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "io/gs_safetensors.h"

static volatile uint64_t sink;

static void touch_header(const gs_st_header *h) {
  for (int i = 0; i < h->ntensors; i++) {
    const gs_st_info *t = &h->tensors[i];
    if (gs_st_find(h, t->name) < 0) abort(); /* every listed name is found */
    if (t->begin > t->end || t->end > h->data_len) abort(); /* validation held */
  }
  for (int i = 0; i < h->nmeta; i++)
    if (!gs_st_meta_get(h, h->meta[i].key)) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  gs_st_source src = gs_st_source_mem(data, size);
  gs_st_header h;
  if (gs_st_read_header(&src, &h) == GS_OK) {
    touch_header(&h);
    for (int i = 0; i < h.ntensors; i++) {
      gs_tensor *x;
      if (gs_st_read_tensor(&src, &h, i, &x) != GS_OK) continue;
      size_t n = (size_t)gs_numel(x) * gs_dtype_size(x->dtype);
      const uint8_t *p = n ? (const uint8_t *)gs_tensor_ptr(x) : NULL;
      uint64_t acc = 0;
      for (size_t k = 0; k < n; k++) acc += p[k];
      if (x->dtype == GS_BOOL)
        for (size_t k = 0; k < n; k++)
          if (p[k] > 1) abort(); /* bools are normalised to 0/1 */
      if (n) acc += (uint64_t)gs_load_i64(x->dtype, p) + (gs_load_f64(x->dtype, p) > 0);
      sink += acc;
      gs_tensor_release(x);
    }
    gs_st_header_free(&h);
  }
  /* The same bytes as bare header JSON, against a data section as long
   * as the input (so offsets within it can validate). */
  if (gs_st_parse_json((const char *)data, size, size, &h) == GS_OK) {
    touch_header(&h);
    gs_st_header_free(&h);
  }
  return 0;
}
