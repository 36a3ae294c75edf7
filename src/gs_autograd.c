/* gs_autograd.c: the autograd graph (filled in by the autograd work; for
 * now tensors never carry a grad_fn). */
#include <stdlib.h>
#include "gs_tensor.h"

void gs_grad_fn_release(struct gs_node *n) { (void)n; }

/* PyTorch's name of the node, e.g. "AddmmBackward0". */
const char *gs_grad_fn_name(const struct gs_node *n) { (void)n; return "UnknownBackward"; }
