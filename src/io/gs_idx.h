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

/* The most bytes of data a file may announce unless raised with
 * gs_idx_max_bytes (torchvision.datasets.max_bytes): a gzip file of n
 * bytes can expand about 1000 times, so without a cap a 20 MB file could
 * ask for 20 GB. 1 GiB holds every MNIST-style set (EMNIST's largest is
 * 0.55 GB). */
#define GS_IDX_DEFAULT_MAX_BYTES ((uint64_t)1 << 30)

/* Sets the cap (limit > 0) and returns the previous one; limit 0 only
 * reads it. */
uint64_t gs_idx_max_bytes(uint64_t limit);

/* gs_idx_read through a decompressed copy kept in cache_dir
 * (gs_idx_cache_path names it after the source's real path). The copy
 * records the source's identity (size, modification and change times in
 * ns, inode, device), its real path and a CRC-32 of its own contents;
 * it is used only when all of them match, and is read (copied into
 * memory), never mapped, so nothing done to the file later changes a
 * loaded tensor or can crash the process. Otherwise the source is read
 * and the copy written atomically for next time (its directory created);
 * failing to write it is not an error (a read-only cache is only
 * slower). *hit: whether the copy was used. */
gs_status gs_idx_read_cached(const char *path, const char *cache_dir, gs_tensor **out, bool *hit);

/* The copy's path for the source at path: cache_dir/datasets/ then the
 * source's file name (without .gz) and a 64-bit hash of its real path
 * (symbolic links, "." and ".." resolved). A malloc'd string, or NULL
 * with the error set when the source cannot be resolved. */
char *gs_idx_cache_path(const char *path, const char *cache_dir);

/* The same from an open descriptor (not closed, its offset is moved); name
 * is what errors call the file. */
gs_status gs_idx_read_fd(int fd, const char *name, gs_tensor **out);

#endif
