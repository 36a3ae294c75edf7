/* gs_op_names.h: the printable names of the unary, binary and reduction
 * ops (gs_op_list.h), for messages and the profiler. They live in the core
 * because backends name their kernels with them and backends sit below the
 * op layer. */
#ifndef GS_OP_NAMES_H
#define GS_OP_NAMES_H

#include "core/gs_backend.h"

const char *gs_unary_name(gs_unary_op op);
const char *gs_binary_name(gs_binary_op op);
const char *gs_reduce_name(gs_reduce_op op);

#endif
