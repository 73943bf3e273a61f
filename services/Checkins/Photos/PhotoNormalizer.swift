import Foundation
import HearthRPC
import VipsShim

/// An encoded image and what it is.
struct EncodedImage: Sendable, Equatable {
    enum Format: String, Sendable {
        case jpeg, png

        var contentType: String { self == .jpeg ? "image/jpeg" : "image/png" }
    }

    var data: Data
    var width: Int
    var height: Int
    var format: Format
}

/// A photo as stored: the full image and its thumbnail.
struct NormalizedPhoto: Sendable, Equatable {
    var full: EncodedImage
    var thumbnail: EncodedImage
}

/// Turns an uploaded photo into what is stored (libvips, Debian's libvips-dev): the EXIF
/// orientation applied to the pixels, colours moved to sRGB from an embedded ICC profile (a
/// phone's Display P3), every metadata block removed (EXIF with GPS, XMP, IPTC, comments, ICC),
/// the long edge at most 2048 px, at most 1 MB, plus a 320 px thumbnail. The
/// format comes from the bytes, never from the caller; the size limits are checked from the
/// header before anything is decoded.
///
/// CPU-heavy: call it off the event loop (see ``normalizeOffLoop(_:)``).
enum PhotoNormalizer {
    static let maxUploadBytes = 10 * 1024 * 1024
    static let maxPixels = 50_000_000
    static let maxEdge = 2048
    static let thumbnailEdge = 320
    static let maxStoredBytes = 1_000_000

    static func normalize(_ upload: Data) throws(FieldViolation) -> NormalizedPhoto {
        guard upload.count <= Self.maxUploadBytes else {
            throw FieldViolation(
                field: "photo",
                description: "is \(upload.count) bytes; at most \(Self.maxUploadBytes)"
            )
        }
        guard hearth_vips_start() == 0 else {
            throw FieldViolation(field: "photo", description: "cannot be processed right now")
        }
        var format: Int32 = 0
        var width: Int32 = 0
        var height: Int32 = 0
        var hasProfile: Int32 = 0
        let probed = upload.withUnsafeBytes {
            hearth_image_probe($0.baseAddress, $0.count, &format, &width, &height, &hasProfile)
        }
        guard probed == 0 else {
            throw FieldViolation(field: "photo", description: "is not an image (JPEG or PNG expected)")
        }
        let kind: EncodedImage.Format
        switch UInt32(format) {
        case HEARTH_IMAGE_JPEG.rawValue: kind = .jpeg
        case HEARTH_IMAGE_PNG.rawValue: kind = .png
        default: throw FieldViolation(field: "photo", description: "must be JPEG or PNG")
        }
        let pixels = Int(width) * Int(height)
        guard pixels <= Self.maxPixels else {
            throw FieldViolation(
                field: "photo",
                description: "has \(width)x\(height) = \(pixels) pixels; at most \(Self.maxPixels)"
            )
        }
        let toSRGB = hasProfile != 0
        let full = try Self.fit(upload, format: kind, toSRGB: toSRGB, edge: Self.maxEdge, budget: Self.maxStoredBytes)
        let thumbnail = try Self.fit(
            upload,
            format: kind,
            toSRGB: toSRGB,
            edge: Self.thumbnailEdge,
            budget: Self.maxStoredBytes
        )
        return NormalizedPhoto(full: full, thumbnail: thumbnail)
    }

    /// Encodes within `budget` bytes: lower JPEG quality first, then smaller edges. `toSRGB`:
    /// the upload has an ICC profile, whose colours are moved to sRGB before it is stripped.
    private static func fit(
        _ upload: Data,
        format: EncodedImage.Format,
        toSRGB: Bool,
        edge: Int,
        budget: Int
    ) throws(FieldViolation) -> EncodedImage {
        var edge = edge
        while edge >= 64 {
            for quality in format == .jpeg ? [85, 75, 65, 55] : [0] {
                let image = try Self.encode(upload, format: format, toSRGB: toSRGB, edge: edge, quality: quality)
                if image.data.count <= budget { return image }
            }
            edge = edge * 3 / 4
        }
        throw FieldViolation(field: "photo", description: "cannot be stored within \(budget) bytes")
    }

    private static func encode(_ upload: Data, format: EncodedImage.Format, toSRGB: Bool, edge: Int, quality: Int)
        throws(FieldViolation)
        -> EncodedImage
    {
        var out: UnsafeMutableRawPointer?
        var length = 0
        var width: Int32 = 0
        var height: Int32 = 0
        let code = format == .jpeg ? Int32(HEARTH_IMAGE_JPEG.rawValue) : Int32(HEARTH_IMAGE_PNG.rawValue)
        let status = upload.withUnsafeBytes {
            hearth_image_normalize(
                $0.baseAddress,
                $0.count,
                Int32(edge),
                code,
                Int32(quality),
                toSRGB ? 1 : 0,
                &out,
                &length,
                &width,
                &height
            )
        }
        guard status == 0, let out else {
            // Not libvips' own text: it is shared by every upload decoded at the same time.
            throw FieldViolation(field: "photo", description: "cannot be decoded (a damaged or truncated JPEG or PNG)")
        }
        defer { hearth_image_free(out) }
        return EncodedImage(
            data: Data(bytes: out, count: length),
            width: Int(width),
            height: Int(height),
            format: format
        )
    }

    /// ``normalize(_:)`` on a global queue, so the calling event loop stays free.
    static func normalizeOffLoop(_ upload: Data) async throws -> NormalizedPhoto {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global(qos: .userInitiated).async {
                do throws(FieldViolation) {
                    continuation.resume(returning: try Self.normalize(upload))
                } catch {
                    continuation.resume(throwing: RPCError.invalidArgument([error]))
                }
            }
        }
    }
}
