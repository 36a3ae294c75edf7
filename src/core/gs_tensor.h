/* gs_tensor.h: a tensor is a shape, strides and an offset (in elements)
 * over a refcounted buffer that lives on one device. Views share the
 * buffer. Tensors are refcounted too: the Lua userdata holds one
 * reference, the autograd graph may hold others. */
#ifndef GS_TENSOR_H
#define GS_TENSOR_H

#include "core/gs_common.h"
#include "core/gs_device.h"
#include "core/gs_dtype.h"

/* The last task of one stream that uses a buffer (backend/sim/sim_queue.h, through the backend slots adopt,
 * release and host_wait). */
typedef struct { int16_t device, stream; uint64_t seq; } gs_use;
#define GS_BUFFER_USES 4

typedef struct gs_buffer {
  int refcount;
  gs_device device;     /* resolved: CUDA index >= 0 */
  void *data;           /* host or device pointer */
  size_t nbytes;
  uint64_t version;     /* bumped by every in-place write (autograd checks) */
  const char *writer;   /* the grad_fn name the last recorded in-place write gave (autograd's messages) */
  /* queued devices (backend/sim/sim_queue.h): the stream the block belongs to, and
   * the queued work that uses it; uses_lost: more streams used it than
   * fit, so a host access waits for every stream */
  int16_t stream;
  uint8_t nuses;
  bool uses_lost;
  bool pinned;          /* host memory for asynchronous copies (pin_memory) */
  gs_use uses[GS_BUFFER_USES];
  uint64_t qid;         /* queued devices: unique per buffer (0: none), names it in marks of failed work */
} gs_buffer;

struct gs_node;

typedef struct gs_tensor {
  int refcount;
  gs_buffer *buf;
  gs_dtype dtype;
  int ndim;
  int64_t shape[GS_MAX_DIMS];
  int64_t stride[GS_MAX_DIMS]; /* in elements */
  int64_t offset;              /* in elements */
  /* autograd */
  bool requires_grad;
  bool is_param;               /* printed as "Parameter containing:" */
  struct gs_tensor *grad;
  struct gs_node *grad_fn;     /* NULL for leaves */
  bool has_grad_hook;          /* a leaf with post-accumulate-grad hooks */
  int grad_pending;            /* its edges still to run in this backward */
  /* the tensor an autograd view op (x[i], x:view, x:t, ...) was taken
   * from, never itself a view (held; NULL when not a view): an in-place
   * write into the view changes the base's grad_fn (PyTorch's CopySlices) */
  struct gs_tensor *base;
  uint64_t view_version;       /* the buffer's version when a view's grad_fn was made */
  bool is_grad;                /* some tensor's .grad: kept out of autograd graphs (no cycles) */
} gs_tensor;

/* Buffers. gs_buffer_new fails with GS_ERR_OOM and a PyTorch-style message. */
gs_status gs_buffer_new(gs_device dev, size_t nbytes, gs_buffer **out);
void gs_buffer_retain(gs_buffer *b);
void gs_buffer_release(gs_buffer *b);

/* Tensors. Sizes are checked (negative, overflow of the element count). */
gs_status gs_tensor_empty(gs_device dev, gs_dtype dt, int ndim, const int64_t *shape, gs_tensor **out);
gs_status gs_tensor_empty_like(const gs_tensor *x, gs_tensor **out);
/* A new tensor header over x's buffer with the given geometry (a view). */
gs_tensor *gs_tensor_view_of(const gs_tensor *x, int ndim, const int64_t *shape, const int64_t *stride, int64_t offset);
void gs_tensor_retain(gs_tensor *t);
void gs_tensor_release(gs_tensor *t);
/* Frees a tensor or autograd node whose count reached zero, and what that
 * releases, without recursing once per object (deep graphs, .grad chains). */
void gs_release_dead(void *obj, bool is_node);
/* A tensor's grad_fn is an autograd node, which the core does not know:
 * autograd installs how to drop a reference to one and how to free one
 * that nothing refers to any more (as gs_oom_hook works), before any
 * node can exist. */
extern void (*gs_node_release_hook)(struct gs_node *n);
extern void (*gs_node_destroy_hook)(struct gs_node *n);

int64_t gs_numel(const gs_tensor *t);
bool gs_is_contiguous(const gs_tensor *t);
void gs_contiguous_strides(int ndim, const int64_t *shape, int64_t *stride);
/* The iteration shape of nops same-shaped operands (ops[0] gives the
 * shape; inputs may carry stride 0): size-1 dims dropped and neighbours
 * merged where every operand is contiguous across them, innermost first,
 * strides in elements (stride[k] for operand k). Returns the number of
 * dims, at least 1: a single element is shape 1 with strides 0. Shared by
 * the CPU iterator and the CUDA elementwise descriptor. */
int gs_merge_dims(int nops, const gs_tensor *const *ops, int64_t *shape, int64_t (*stride)[GS_MAX_DIMS]);
/* The one limit on dimensions: ndim must be 0..GS_MAX_DIMS. */
gs_status gs_check_ndim(int64_t ndim);
gs_status gs_check_shape(int ndim, const int64_t *shape, int64_t *numel); /* gs_check_ndim, negatives, overflow */
static inline gs_device gs_tensor_device(const gs_tensor *t) { return t->buf->device; }
static inline char *gs_tensor_ptr(const gs_tensor *t) {
  return (char *)t->buf->data + t->offset * (int64_t)gs_dtype_size(t->dtype);
}
static inline bool gs_tensor_on_cpu(const gs_tensor *t) { return t->buf->device.type == GS_CPU; }
/* Called once before an allocation reports out of memory, so the embedder
 * can free garbage tensors (lua_torch.c: a full Lua collection). */
extern void (*gs_oom_hook)(void);
/* Host-addressable: the tensor's backend has host_memory (cpu, simulated
 * GPUs): the CPU kernels may touch the data. */
bool gs_tensor_host_addressable(const gs_tensor *t);
/* Before the host reads or writes a host-addressable tensor's memory
 * directly: waits for the work its device queued on it (simulated GPUs
 * run asynchronously). `what` names the call for the sync debug mode. */
gs_status gs_tensor_host_wait(const gs_tensor *t, const char *what);

/* Bytes currently held by tensors on the host (the Lua collector is told). */
size_t gs_host_bytes_in_use(void);

#endif
