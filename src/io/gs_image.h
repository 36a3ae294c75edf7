/* gs_image.h: image operations the data transforms need, on CPU tensors
 * (engine side, no backend: data sets are prepared on the host before a
 * batch is copied to a device). */
#ifndef GS_IMAGE_H
#define GS_IMAGE_H

#include "core/gs_tensor.h"

/* Bilinear resize of the last two dims of x (..., H, W) to (oh, ow), as
 * PyTorch's interpolate(mode="bilinear", align_corners=False, no
 * antialias) and torchvision's Resize on tensors compute it: half-pixel
 * centres, source positions below 0 clamped to 0, float32 weights for
 * uint8 and float32 images (float64 for float64). A uint8 image gives a
 * uint8 result rounded half to even (torchvision rounds before casting).
 * channels: how many channels each image has (PyTorch rounds images of one
 * channel and of several differently; gs_image.c says how). x: a CPU
 * tensor of dtype uint8, float32 or float64 with at least two dims; any
 * layout (it is read through a contiguous copy when needed). */
gs_status gs_resize_bilinear(const gs_tensor *x, int64_t oh, int64_t ow, int64_t channels, gs_tensor **out);

#endif
