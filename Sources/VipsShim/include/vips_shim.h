// Non-variadic wrappers over libvips, callable from Swift (which cannot call C variadic
// functions such as vips_thumbnail_buffer).
#ifndef HEARTH_VIPS_SHIM_H
#define HEARTH_VIPS_SHIM_H

#include <stddef.h>

enum hearth_image_format { HEARTH_IMAGE_OTHER = 0, HEARTH_IMAGE_JPEG = 1, HEARTH_IMAGE_PNG = 2 };

/// Starts libvips once per process. Returns 0 on success.
int hearth_vips_start(void);

/// Reads only the header: the format (from the bytes), width and height as stored, and
/// whether it carries an ICC profile. Returns 0 on success, -1 if the bytes are no image
/// libvips knows.
int hearth_image_probe(const void *bytes, size_t length, int *format, int *width, int *height, int *has_profile);

/// Decodes, applies the EXIF orientation to the pixels, moves them to sRGB from the image's
/// ICC profile when `to_srgb` (the probe found one), shrinks so the long edge is at most
/// `max_edge`, and encodes as `format` (JPEG at `quality`, or PNG) with every metadata block
/// stripped. `*out` is allocated by libvips: release it with hearth_image_free.
/// Returns 0 on success.
int hearth_image_normalize(
    const void *bytes, size_t length, int max_edge, int format, int quality, int to_srgb,
    void **out, size_t *out_length, int *out_width, int *out_height);

void hearth_image_free(void *pointer);

#endif
