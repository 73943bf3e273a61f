#include "vips_shim.h"

#include <string.h>
#include <vips/vips.h>

static GOnce start_once = G_ONCE_INIT;

static void ignore_warning(const gchar *domain, GLogLevelFlags level, const gchar *message, gpointer unused) {
    (void)domain;
    (void)level;
    (void)message;
    (void)unused;
}

static gpointer start(gpointer unused) {
    (void)unused;
    if (VIPS_INIT("hearth") != 0) return GINT_TO_POINTER(0);
    // What a damaged upload makes libvips warn about ("invalid chunk type") is the uploader's
    // doing: it is answered INVALID_ARGUMENT, not written to the process's standard error.
    g_log_set_handler("VIPS", G_LOG_LEVEL_WARNING, ignore_warning, NULL);
    // Uploads are untrusted: no loader libvips marks unsafe for them (ImageMagick, PDF, SVG,
    // matrix files, ...) may run, whatever the bytes claim.
    vips_block_untrusted_set(TRUE);
    return GINT_TO_POINTER(1);
}

int hearth_vips_start(void) {
    return GPOINTER_TO_INT(g_once(&start_once, start, NULL)) ? 0 : -1;
}

/// libvips keeps one error buffer for the whole process, which uploads decoded at the same
/// time would share: its text is dropped, never shown to a caller, and cleared so that it does
/// not grow.
static void forget_error(void) {
    vips_error_clear();
}

/// The format from the file's signature, never from the caller.
static int sniff(const void *bytes, size_t length) {
    static const unsigned char jpeg[] = {0xFF, 0xD8, 0xFF};
    static const unsigned char png[] = {0x89, 'P', 'N', 'G', 0x0D, 0x0A, 0x1A, 0x0A};
    if (length >= sizeof(jpeg) && memcmp(bytes, jpeg, sizeof(jpeg)) == 0) return HEARTH_IMAGE_JPEG;
    if (length >= sizeof(png) && memcmp(bytes, png, sizeof(png)) == 0) return HEARTH_IMAGE_PNG;
    return HEARTH_IMAGE_OTHER;
}

/// Opens the header with the loader of `format` only (JPEG or PNG): nothing else may parse it.
/// `shrink` (JPEG: 1, 2, 4 or 8) decodes at that fraction of the size, which costs that much less.
static VipsImage *load(const void *bytes, size_t length, int format, int shrink) {
    VipsImage *image = NULL;
    int status = format == HEARTH_IMAGE_JPEG
        ? vips_jpegload_buffer((void *)bytes, length, &image, "access", VIPS_ACCESS_SEQUENTIAL,
            "shrink", shrink, "fail_on", VIPS_FAIL_ON_TRUNCATED, NULL)
        : vips_pngload_buffer((void *)bytes, length, &image, "access", VIPS_ACCESS_SEQUENTIAL,
            "fail_on", VIPS_FAIL_ON_TRUNCATED, NULL);
    if (status != 0) {
        forget_error();
        return NULL;
    }
    return image;
}

int hearth_image_probe(const void *bytes, size_t length, int *format, int *width, int *height, int *has_profile) {
    *format = sniff(bytes, length);
    if (*format == HEARTH_IMAGE_OTHER) return 0;
    VipsImage *image = load(bytes, length, *format, 1);
    if (image == NULL) return -1;
    *width = vips_image_get_width(image);
    *height = vips_image_get_height(image);
    *has_profile = vips_image_get_typeof(image, VIPS_META_ICC_NAME) != 0;
    g_object_unref(image);
    return 0;
}

int hearth_image_decode(
    const void *bytes, size_t length, int format, int long_edge, int max_edge, int to_srgb, void **decoded)
{
    // A JPEG is decoded at the largest power-of-two fraction (at most 1/8) that keeps its long
    // edge at or above the one wanted: shrink-on-load, as vips_thumbnail_buffer does.
    int shrink = 1;
    if (format == HEARTH_IMAGE_JPEG) {
        while (shrink < 8 && long_edge / (shrink * 2) >= max_edge) shrink *= 2;
    }
    VipsImage *loaded = load(bytes, length, format, shrink);
    if (loaded == NULL) return -1;
    // vips_thumbnail_image applies the EXIF orientation and never enlarges with VIPS_SIZE_DOWN.
    // The profile is stripped when encoding, and a viewer takes an image without one as sRGB:
    // pixels in an embedded profile's space (a phone's Display P3, Adobe RGB) are moved to sRGB
    // first, or their colours would shift (P3's red, 232 51 34, shown as a dull sRGB red). One
    // without a profile is sRGB already and left as it is (`to_srgb` 0).
    VipsImage *shrunk = NULL;
    int status = to_srgb
        ? vips_thumbnail_image(loaded, &shrunk, max_edge, "height", max_edge, "size", VIPS_SIZE_DOWN,
            "export_profile", "srgb", NULL)
        : vips_thumbnail_image(loaded, &shrunk, max_edge, "height", max_edge, "size", VIPS_SIZE_DOWN, NULL);
    g_object_unref(loaded);
    if (status != 0) {
        forget_error();
        return -1;
    }
    // Decoded once, into memory: every encoding below starts from these pixels. A file cut short
    // fails here (libvips would fill the missing rows with grey): an upload that broke off is
    // refused, so that the client sends it again, not kept half grey.
    VipsImage *pixels = vips_image_copy_memory(shrunk);
    g_object_unref(shrunk);
    if (pixels == NULL) {
        forget_error();
        return -1;
    }
    *decoded = pixels;
    return 0;
}

int hearth_image_encode(
    void *decoded, int max_edge, int format, int quality, void **out, size_t *out_length, int *out_width,
    int *out_height)
{
    VipsImage *image = decoded;
    VipsImage *shrunk = image;
    int long_edge = VIPS_MAX(vips_image_get_width(image), vips_image_get_height(image));
    if (long_edge > max_edge) {
        // From the decoded pixels, already upright and in sRGB.
        if (vips_thumbnail_image(image, &shrunk, max_edge, "height", max_edge, "size", VIPS_SIZE_DOWN,
                "no_rotate", TRUE, NULL) != 0) {
            forget_error();
            return -1;
        }
    }
    int status;
    if (format == HEARTH_IMAGE_PNG) {
        status = vips_pngsave_buffer(shrunk, out, out_length, "strip", TRUE, "compression", 9, NULL);
    } else {
        // Flatten any alpha onto white: JPEG has none.
        VipsImage *opaque = shrunk;
        status = 0;
        if (vips_image_hasalpha(shrunk)) {
            double white[] = {255, 255, 255};
            status = vips_flatten(shrunk, &opaque, "background", vips_array_double_new(white, 3), NULL);
        }
        if (status == 0) {
            status = vips_jpegsave_buffer(opaque, out, out_length, "Q", quality, "strip", TRUE,
                "optimize_coding", TRUE, NULL);
        }
        if (opaque != shrunk) g_object_unref(opaque);
    }
    if (status == 0) {
        *out_width = vips_image_get_width(shrunk);
        *out_height = vips_image_get_height(shrunk);
    } else {
        forget_error();
    }
    if (shrunk != image) g_object_unref(shrunk);
    return status == 0 ? 0 : -1;
}

void hearth_image_release(void *decoded) {
    g_object_unref((VipsImage *)decoded);
}

void hearth_image_free(void *pointer) {
    g_free(pointer);
}
