/* gs_op_names.c: op names generated from the one X-macro list. */
#include "core/gs_op_names.h"

#define NAME_U(ID, name, ...) [GS_U_##ID] = #name,
#define NAME_B(ID, name, ...) [GS_B_##ID] = #name,
#define NAME_R(ID, name, ...) [GS_R_##ID] = #name,
static const char *const unary_names[GS_U_COUNT] = {GS_UNARY_OPS(NAME_U)};
static const char *const binary_names[GS_B_COUNT] = {GS_BINARY_OPS(NAME_B)};
static const char *const reduce_names[GS_R_COUNT] = {GS_REDUCE_OPS(NAME_R)};
const char *gs_unary_name(gs_unary_op op) { return unary_names[op]; }
const char *gs_binary_name(gs_binary_op op) { return binary_names[op]; }
const char *gs_reduce_name(gs_reduce_op op) { return reduce_names[op]; }
