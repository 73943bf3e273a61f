// Non-variadic wrappers over libvips, callable from Swift (which cannot call C variadic
// functions such as vips_thumbnail_image).
#ifndef HEARTH_VIPS_SHIM_H
#define HEARTH_VIPS_SHIM_H

#include <stddef.h>

enum hearth_image_format { HEARTH_IMAGE_OTHER = 0, HEARTH_IMAGE_JPEG = 1, HEARTH_IMAGE_PNG = 2 };

/// Starts libvips once per process, its untrusted loaders blocked. Returns 0 on success.
int hearth_vips_start(void);

/// Reads only the header, with the JPEG or PNG loader alone: the format (from the bytes' own
/// signature; HEARTH_IMAGE_OTHER and 0 for anything else), width and height as stored, and
/// whether it carries an ICC profile. Returns 0 on success, -1 if the bytes are no such image.
int hearth_image_probe(const void *bytes, size_t length, int *format, int *width, int *height, int *has_profile);

/// Decodes and encodes in one stream (the pixels never all in memory): a file whose signature is
/// `format`'s, shrunk and turned as hearth_image_decode does, encoded as that format (JPEG at
/// `quality`, or PNG) with every metadata block stripped. `*out` is allocated by libvips:
/// release it with hearth_image_free. Returns 0 on success.
int hearth_image_normalize(
    const void *bytes, size_t length, int format, int max_edge, int to_srgb, int quality, void **out,
    size_t *out_length, int *out_width, int *out_height);

/// Decodes a file whose signature is `format`'s (a JPEG at a fraction of its size when much
/// larger than `max_edge`), applies the EXIF orientation to the pixels, moves them to sRGB from
/// the image's ICC profile when `to_srgb` (the probe found one), and shrinks so the long edge is
/// at most `max_edge`. `*decoded` holds the pixels in memory: encode it with hearth_image_encode
/// (as often as needed), release it with hearth_image_release. Returns 0 on success, -1 for a
/// damaged or truncated file.
int hearth_image_decode(const void *bytes, size_t length, int format, int max_edge, int to_srgb, void **decoded);

/// Encodes decoded pixels as `format` (JPEG at `quality`, or PNG), shrunk so the long edge is at
/// most `max_edge`, with every metadata block stripped. `*out` is allocated by libvips: release
/// it with hearth_image_free. Returns 0 on success.
int hearth_image_encode(
    void *decoded, int max_edge, int format, int quality, void **out, size_t *out_length, int *out_width,
    int *out_height);

void hearth_image_release(void *decoded);

void hearth_image_free(void *pointer);

#endif
