/* gs_idx.h: the IDX file format of the MNIST-style data sets, engine side
 * (no Lua).
 *
 * A file is a 4-byte magic 0x00 0x00 TYPE NDIM, then NDIM big-endian
 * 32-bit unsigned dimension sizes, then the payload: the product of the
 * sizes in elements of TYPE, row-major, and nothing after it. The data
 * sets use TYPE 0x08 (unsigned byte): 0x00000803 is an images file
 * (N x rows x cols), 0x00000801 a labels file (N). Files may be gzipped;
 * zlib reads both forms.
 *
 * Reading never trusts the file: the header is validated before anything
 * is allocated (type, NDIM, sizes against overflow and against what the
 * file can hold), and the payload must have exactly the announced length.
 * Errors name the file and say what was expected. */
#ifndef GS_IDX_H
#define GS_IDX_H

#include "core/gs_tensor.h"

/* The element type gshell reads: unsigned bytes. */
#define GS_IDX_UBYTE 0x08
/* The most dimensions a file may announce. */
#define GS_IDX_MAX_DIMS 4

/* Reads the IDX file at path (gzipped or not) into a fresh contiguous CPU
 * uint8 tensor shaped as the header says. */
gs_status gs_idx_read(const char *path, gs_tensor **out);

/* gs_idx_read through a decompressed copy at cache_path (a plain IDX
 * file): when the copy exists, is at least as new as path and reads back
 * valid, it is read instead (no decompression: a plain read of the
 * payload); otherwise path is read and the copy is written atomically for
 * next time (its directory created). Failing to write the copy is not an
 * error (a read-only cache is only slower). *hit: whether the copy was used. */
gs_status gs_idx_read_cached(const char *path, const char *cache_path, gs_tensor **out, bool *hit);

/* The same from an open descriptor (not closed, its offset is moved); name
 * is what errors call the file. */
gs_status gs_idx_read_fd(int fd, const char *name, gs_tensor **out);

#endif
