#include "vips_shim.h"

#include <string.h>
#include <vips/vips.h>

static GOnce start_once = G_ONCE_INIT;

static gpointer start(gpointer unused) {
    (void)unused;
    return GINT_TO_POINTER(VIPS_INIT("hearth") == 0 ? 1 : 0);
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

int hearth_image_probe(const void *bytes, size_t length, int *format, int *width, int *height, int *has_profile) {
    // The format comes from the file's signature, never from the caller.
    static const unsigned char jpeg[] = {0xFF, 0xD8, 0xFF};
    static const unsigned char png[] = {0x89, 'P', 'N', 'G', 0x0D, 0x0A, 0x1A, 0x0A};
    if (length >= sizeof(jpeg) && memcmp(bytes, jpeg, sizeof(jpeg)) == 0) {
        *format = HEARTH_IMAGE_JPEG;
    } else if (length >= sizeof(png) && memcmp(bytes, png, sizeof(png)) == 0) {
        *format = HEARTH_IMAGE_PNG;
    } else {
        *format = HEARTH_IMAGE_OTHER;
        return 0;
    }
    VipsImage *image = vips_image_new_from_buffer(bytes, length, "", "access", VIPS_ACCESS_SEQUENTIAL, NULL);
    if (image == NULL) {
        forget_error();
        return -1;
    }
    *width = vips_image_get_width(image);
    *height = vips_image_get_height(image);
    *has_profile = vips_image_get_typeof(image, VIPS_META_ICC_NAME) != 0;
    g_object_unref(image);
    return 0;
}

int hearth_image_normalize(
    const void *bytes, size_t length, int max_edge, int format, int quality, int to_srgb,
    void **out, size_t *out_length, int *out_width, int *out_height)
{
    VipsImage *shrunk = NULL;
    // vips_thumbnail_buffer applies the EXIF orientation and never enlarges with VIPS_SIZE_DOWN.
    // A file cut short fails (libvips would fill the missing rows with grey): an upload that
    // broke off is refused, so that the client sends it again, not kept half grey.
    // The profile is stripped below, and a viewer takes an image without one as sRGB: pixels
    // in an embedded profile's space (a phone's Display P3, Adobe RGB) are moved to sRGB
    // first, or their colours would shift (P3's red, 232 51 34, shown as a dull sRGB red).
    // One without a profile is sRGB already and left as it is (`to_srgb` 0).
    int status = to_srgb
        ? vips_thumbnail_buffer((void *)bytes, length, &shrunk, max_edge, "height", max_edge,
            "size", VIPS_SIZE_DOWN, "option_string", "fail_on=truncated", "export_profile", "srgb", NULL)
        : vips_thumbnail_buffer((void *)bytes, length, &shrunk, max_edge, "height", max_edge,
            "size", VIPS_SIZE_DOWN, "option_string", "fail_on=truncated", NULL);
    if (status != 0) {
        forget_error();
        return -1;
    }
    if (format == HEARTH_IMAGE_PNG) {
        status = vips_pngsave_buffer(shrunk, out, out_length, "strip", TRUE, "compression", 9, NULL);
    } else {
        // Flatten any alpha onto white: JPEG has none.
        VipsImage *opaque = shrunk;
        if (vips_image_hasalpha(shrunk)) {
            double white[] = {255, 255, 255};
            if (vips_flatten(shrunk, &opaque, "background", vips_array_double_new(white, 3), NULL) != 0) {
                g_object_unref(shrunk);
                forget_error();
                return -1;
            }
        }
        status = vips_jpegsave_buffer(opaque, out, out_length, "Q", quality, "strip", TRUE, "optimize_coding", TRUE, NULL);
        if (opaque != shrunk) g_object_unref(opaque);
    }
    if (status != 0) {
        g_object_unref(shrunk);
        forget_error();
        return -1;
    }
    *out_width = vips_image_get_width(shrunk);
    *out_height = vips_image_get_height(shrunk);
    g_object_unref(shrunk);
    return 0;
}

void hearth_image_free(void *pointer) {
    g_free(pointer);
}
