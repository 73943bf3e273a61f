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
static VipsImage *load(const void *bytes, size_t length, int format) {
    VipsImage *image = NULL;
    int status = format == HEARTH_IMAGE_JPEG
        ? vips_jpegload_buffer((void *)bytes, length, &image, "access", VIPS_ACCESS_SEQUENTIAL,
            "fail_on", VIPS_FAIL_ON_TRUNCATED, NULL)
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
    VipsImage *image = load(bytes, length, *format);
    if (image == NULL) return -1;
    *width = vips_image_get_width(image);
    *height = vips_image_get_height(image);
    *has_profile = vips_image_get_typeof(image, VIPS_META_ICC_NAME) != 0;
    g_object_unref(image);
    return 0;
}

/// The upload decoded (lazily: libvips streams it through whatever reads the result) and shrunk
/// so the long edge is at most `max_edge`; NULL when it cannot be.
static VipsImage *shrunk_upload(const void *bytes, size_t length, int format, int max_edge, int to_srgb) {
    // Only a file whose own signature says JPEG or PNG gets here (and the probe opened it with
    // that loader alone); with the untrusted loaders blocked, libvips picks the same one.
    if (sniff(bytes, length) != format) return NULL;
    // vips_thumbnail_buffer decodes a JPEG at the largest fraction of its size that stays at
    // or above the edge wanted (libjpeg scales while decoding), applies the EXIF orientation,
    // and never enlarges with VIPS_SIZE_DOWN. The profile is stripped when encoding, and a
    // viewer takes an image without one as sRGB: pixels in an embedded profile's space (a
    // phone's Display P3, Adobe RGB) are moved to sRGB first, or their colours would shift
    // (P3's red, 232 51 34, shown as a dull sRGB red). One without a profile is sRGB already
    // and left as it is (`to_srgb` 0). A file cut short fails (libvips would fill the missing
    // rows with grey): an upload that broke off is refused, so that the client sends it again.
    VipsImage *shrunk = NULL;
    int status = to_srgb
        ? vips_thumbnail_buffer((void *)bytes, length, &shrunk, max_edge, "height", max_edge,
            "size", VIPS_SIZE_DOWN, "option_string", "fail_on=truncated", "export_profile", "srgb", NULL)
        : vips_thumbnail_buffer((void *)bytes, length, &shrunk, max_edge, "height", max_edge,
            "size", VIPS_SIZE_DOWN, "option_string", "fail_on=truncated", NULL);
    if (status != 0) {
        forget_error();
        return NULL;
    }
    return shrunk;
}

/// Encodes `image` as `format` (JPEG at `quality`, or PNG) with every metadata block stripped.
static int save(VipsImage *image, int format, int quality, void **out, size_t *out_length) {
    int status;
    if (format == HEARTH_IMAGE_PNG) {
        status = vips_pngsave_buffer(image, out, out_length, "strip", TRUE, "compression", 9, NULL);
    } else {
        // Flatten any alpha onto white: JPEG has none.
        VipsImage *opaque = image;
        status = 0;
        if (vips_image_hasalpha(image)) {
            double white[] = {255, 255, 255};
            status = vips_flatten(image, &opaque, "background", vips_array_double_new(white, 3), NULL);
        }
        if (status == 0) {
            status = vips_jpegsave_buffer(opaque, out, out_length, "Q", quality, "strip", TRUE,
                "optimize_coding", TRUE, NULL);
        }
        if (opaque != image) g_object_unref(opaque);
    }
    if (status != 0) forget_error();
    return status == 0 ? 0 : -1;
}

int hearth_image_normalize(
    const void *bytes, size_t length, int format, int max_edge, int to_srgb, int quality, void **out,
    size_t *out_length, int *out_width, int *out_height)
{
    VipsImage *shrunk = shrunk_upload(bytes, length, format, max_edge, to_srgb);
    if (shrunk == NULL) return -1;
    // Decoding and encoding stream together: the pixels are never all in memory at once.
    int status = save(shrunk, format, quality, out, out_length);
    *out_width = vips_image_get_width(shrunk);
    *out_height = vips_image_get_height(shrunk);
    g_object_unref(shrunk);
    return status;
}

int hearth_image_decode(const void *bytes, size_t length, int format, int max_edge, int to_srgb, void **decoded) {
    VipsImage *shrunk = shrunk_upload(bytes, length, format, max_edge, to_srgb);
    if (shrunk == NULL) return -1;
    // Decoded once, into memory: every encoding tried from here starts from these pixels.
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
    int status = save(shrunk, format, quality, out, out_length);
    if (status == 0) {
        *out_width = vips_image_get_width(shrunk);
        *out_height = vips_image_get_height(shrunk);
    }
    if (shrunk != image) g_object_unref(shrunk);
    return status;
}

void hearth_image_release(void *decoded) {
    g_object_unref((VipsImage *)decoded);
}

void hearth_image_free(void *pointer) {
    g_free(pointer);
}
