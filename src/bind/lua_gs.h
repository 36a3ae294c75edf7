/* lua_gs.h: what the Lua binding files share. Only this layer raises Lua
 * errors; engine calls return a status that gsL_check turns into one. */
#ifndef LUA_GS_H
#define LUA_GS_H

#include <lauxlib.h>
#include <lua.h>
#include "ops/gs_ops.h"
#include "core/gs_streams.h"

#define GSL_TENSOR_MT "torch.Tensor"
#define GSL_DEVICE_MT "torch.device"
#define GSL_DTYPE_MT "torch.dtype"
#define GSL_SIZE_MT "torch.Size"

/* Raises the engine's last error as a Lua error when s != GS_OK; after a
 * call that synchronised with a device in sync debug mode 'warn', prints
 * the warning naming the user's line (lua_stream.c). */
#define gsL_check(L, s)                               \
  do {                                                \
    if ((s) != GS_OK) gsL_raise(L);                   \
    else if (gs_sync_warning) gsL_sync_warn(L);       \
  } while (0)
int gsL_raise(lua_State *L);
void gsL_sync_warn(lua_State *L);

/* Tensors: the userdata holds one reference to a gs_tensor. push takes
 * over the caller's reference (and releases it if Lua cannot allocate). */
void gsL_pushtensor(lua_State *L, gs_tensor *t);
gs_tensor *gsL_checktensor(lua_State *L, int idx);
/* Records the tensor object at idx as its tensor's one Lua value (done
 * when the engine starts holding the tensor, e.g. x.grad = g). */
void gsL_register(lua_State *L, int idx);
int gsL_gc_pacing(lua_State *L); /* torch._gc_pacing() */
gs_tensor *gsL_testtensor(lua_State *L, int idx);   /* NULL for non-tensors and closed ones */
void gsL_set_tensor_mt(const void *mt);

/* Devices and dtypes: a device object, string or integer ordinal; a dtype
 * object or name. */
gs_device gsL_checkdevice(lua_State *L, int idx);
void gsL_pushdevice(lua_State *L, gs_device d);
gs_dtype gsL_checkdtype(lua_State *L, int idx);
bool gsL_testdtype(lua_State *L, int idx, gs_dtype *out);
void gsL_pushdtype(lua_State *L, gs_dtype t);

/* Sizes given as numbers (2, 3), a table {2, 3} or a torch.Size, from
 * stack position idx up to `last` (a trailing options table excluded). */
int gsL_checksizes(lua_State *L, int idx, int last, int64_t *shape);
void gsL_pushsize(lua_State *L, int ndim, const int64_t *shape);

/* A 1-based Lua dim (negatives from the end) to a 0-based engine dim. */
int gsL_checkdim(lua_State *L, int idx, int ndim);
/* The value on top of the stack (a list element, an option) as an integer
 * or a number; `what` names it in the error ("view: size 2"). */
lua_Integer gsL_topinteger(lua_State *L, const char *what);
lua_Number gsL_topnumber(lua_State *L, const char *what);
int gsL_optdim(lua_State *L, int idx, int ndim, int def);
/* A 1-based Lua position (negatives from the end) as the engine's 0-based
 * one; the op checks the bounds (0 becomes GS_INDEX_ZERO). */
static inline int64_t gsL_pos0(lua_Integer i) { return i > 0 ? i - 1 : i == 0 ? GS_INDEX_ZERO : i; }

/* Options table helpers: field of the table at idx, or nil. */
bool gsL_optfield(lua_State *L, int idx, const char *name); /* pushes it when present */
/* An unknown key in the options table at idx is an error naming it, the
 * nearest allowed key and all of them (lua_options.c). _problem pushes the
 * message and returns it, or returns NULL and pushes nothing. */
void gsL_checkoptions(lua_State *L, int idx, const char *fname, const char *const *allowed, int n);
const char *gsL_options_problem(lua_State *L, int idx, const char *fname, const char *const *allowed, int n);
#define GSL_NKEYS(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* The default device and dtype factories use. */
gs_device gsL_default_device(void);
void gsL_set_default_device(gs_device d);

/* Module parts, each registering its functions into the table on top. */
void gsL_open_tensor(lua_State *L);   /* lua_tensor*.c: metatable and methods */
void gsL_open_factory(lua_State *L);  /* lua_factory.c */
void gsL_open_device(lua_State *L);   /* lua_device.c: torch.device, dtypes, torch.cuda */
void gsL_open_options(lua_State *L);  /* lua_options.c: torch._options_error */
void gsL_open_core(lua_State *L);     /* lua_core.c */
void gsL_open_autograd(lua_State *L); /* lua_autograd.c */
void gsL_open_serialize(lua_State *L); /* lua_serialize.c: torch._save, _load */
void gsL_open_dist(lua_State *L);      /* lua_dist.c: torch._comm, torch._dist */
void gsL_open_interrupt(lua_State *L); /* lua_interrupt.c: test stand-ins for Ctrl-C */
void gsL_open_stream(lua_State *L);   /* lua_stream.c: torch._stream */
void gsL_open_prof(lua_State *L);      /* lua_prof.c: torch._prof, the profiler's recorder */
void gsL_open_conv(lua_State *L);      /* lua_conv.c: torch._conv, torch._conv_col_cap (convolution) */
void gsL_open_cpu(lua_State *L);       /* lua_cpu.c: the CPU kernels' instruction set (issue 32) */
void gsL_open_pool(lua_State *L);      /* lua_pool.c: torch._pool2d, _batch_norm, ... (issue 20) */
/* data sets (issue 21): */
void gsL_open_image(lua_State *L);     /* lua_image.c: torch._read_idx, _resize_bilinear */
/* d2l pictures: */
void gsL_open_gpu_model(lua_State *L); /* lua_gpu_model.c: torch.cuda.gpu_model, allow_tf32 (issue 29) */
void gsL_open_kernel_lab(lua_State *L); /* lua_kernel_lab.c: torch._lab_* (the kernel lab, issue 30) */
void gsL_open_picture(lua_State *L);   /* lua_picture.c: torch._png_encode, _isatty, _term_size */
/* The Lua state's allocator with its small-block pool (lua_alloc.c). */
void gsL_install_allocator(lua_State *L);
/* Tensor methods, each adding to the methods table on top. */
void gsL_register_methods(lua_State *L);          /* lua_tensor_methods.c */
void gsL_register_math(lua_State *L);             /* lua_tensor_math.c */
void gsL_register_autograd_methods(lua_State *L); /* lua_autograd.c */
/* The operands at 1 and 2 of a binary op: each a tensor (its scalar
 * unused) or a number (its tensor NULL); at least one tensor. */
void gsL_operands(lua_State *L, gs_tensor **a, gs_scalar *as, gs_tensor **b, gs_scalar *bs);
/* a op b for the tensor or number arguments 1 and 2 (lua_tensor.c). */
int gsL_binary(lua_State *L, gs_binary_op op);

int luaopen_torch(lua_State *L);

#endif
