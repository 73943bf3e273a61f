import Foundation
import HearthRPC
import Synchronization
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
/// Decodes each upload once (JPEG at a reduced scale when it is much larger than kept), then
/// encodes from those pixels. CPU-heavy: run it on the ``PhotoPool``, off the event loops.
enum PhotoNormalizer {
    static let maxUploadBytes = 10 * 1024 * 1024
    static let maxPixels = 50_000_000
    static let maxEdge = 2048
    static let thumbnailEdge = 320
    static let maxStoredBytes = 1_000_000

    /// Uploads decoded since the process started (each at most once).
    static var decodes: Int { Self.decodeCount.load(ordering: .relaxed) }
    private static let decodeCount = Atomic<Int>(0)

    /// The upload as stored, all its work done whatever happens meanwhile.
    static func normalize(_ upload: Data) throws(FieldViolation) -> NormalizedPhoto {
        do {
            return try Self.normalize(upload, stoppingWhen: { false })
        } catch {
            switch error {
            case .invalid(let violation): throw violation
            case .stopped: preconditionFailure("told never to stop")
            }
        }
    }

    /// - Parameter shouldStop: asked between steps (the decode and each encoding tried); true
    ///   stops the work (``NormalizeFailure/stopped``): the call it was for was cancelled or ran
    ///   out of time.
    static func normalize(_ upload: Data, stoppingWhen shouldStop: () -> Bool) throws(NormalizeFailure)
        -> NormalizedPhoto
    {
        guard upload.count <= Self.maxUploadBytes else {
            throw .invalid(
                FieldViolation(field: "photo", description: "is \(upload.count) bytes; at most \(Self.maxUploadBytes)")
            )
        }
        guard hearth_vips_start() == 0 else {
            throw .invalid(FieldViolation(field: "photo", description: "cannot be processed right now"))
        }
        var format: Int32 = 0
        var width: Int32 = 0
        var height: Int32 = 0
        var hasProfile: Int32 = 0
        let probed = upload.withUnsafeBytes {
            hearth_image_probe($0.baseAddress, $0.count, &format, &width, &height, &hasProfile)
        }
        guard probed == 0 else {
            throw .invalid(FieldViolation(field: "photo", description: "is not an image (JPEG or PNG expected)"))
        }
        let kind: EncodedImage.Format
        switch UInt32(format) {
        case HEARTH_IMAGE_JPEG.rawValue: kind = .jpeg
        case HEARTH_IMAGE_PNG.rawValue: kind = .png
        default: throw .invalid(FieldViolation(field: "photo", description: "must be JPEG or PNG"))
        }
        let pixels = Int(width) * Int(height)
        guard pixels <= Self.maxPixels else {
            throw .invalid(
                FieldViolation(
                    field: "photo",
                    description: "has \(width)x\(height) = \(pixels) pixels; at most \(Self.maxPixels)"
                )
            )
        }
        guard !shouldStop() else { throw .stopped }
        var decoded: UnsafeMutableRawPointer?
        Self.decodeCount.add(1, ordering: .relaxed)
        let status = upload.withUnsafeBytes {
            hearth_image_decode(
                $0.baseAddress,
                $0.count,
                format,
                max(width, height),
                Int32(Self.maxEdge),
                hasProfile,
                &decoded
            )
        }
        guard status == 0, let decoded else { throw .invalid(Self.undecodable) }
        defer { hearth_image_release(decoded) }
        let full = try Self.fit(decoded, format: kind, edge: Self.maxEdge, shouldStop: shouldStop)
        let thumbnail = try Self.fit(decoded, format: kind, edge: Self.thumbnailEdge, shouldStop: shouldStop)
        return NormalizedPhoto(full: full, thumbnail: thumbnail)
    }

    /// Why a photo was not normalized.
    enum NormalizeFailure: Error, Equatable {
        /// The upload is refused: not a JPEG or PNG, too large, damaged.
        case invalid(FieldViolation)
        /// Its call was cancelled or ran out of time.
        case stopped
    }

    /// Not libvips' own text: it is shared by every upload decoded at the same time.
    private static let undecodable = FieldViolation(
        field: "photo",
        description: "cannot be decoded (a damaged or truncated JPEG or PNG)"
    )

    /// Encodes the decoded pixels within ``maxStoredBytes``: lower JPEG quality first, then
    /// smaller edges, each from the same pixels.
    private static func fit(
        _ decoded: UnsafeMutableRawPointer,
        format: EncodedImage.Format,
        edge: Int,
        shouldStop: () -> Bool
    ) throws(NormalizeFailure) -> EncodedImage {
        var edge = edge
        while edge >= 64 {
            for quality in format == .jpeg ? [85, 75, 65, 55] : [0] {
                guard !shouldStop() else { throw .stopped }
                let image = try Self.encode(decoded, format: format, edge: edge, quality: quality)
                if image.data.count <= Self.maxStoredBytes { return image }
            }
            edge = edge * 3 / 4
        }
        throw .invalid(
            FieldViolation(field: "photo", description: "cannot be stored within \(Self.maxStoredBytes) bytes")
        )
    }

    private static func encode(_ decoded: UnsafeMutableRawPointer, format: EncodedImage.Format, edge: Int, quality: Int)
        throws(NormalizeFailure) -> EncodedImage
    {
        var out: UnsafeMutableRawPointer?
        var length = 0
        var width: Int32 = 0
        var height: Int32 = 0
        let code = format == .jpeg ? Int32(HEARTH_IMAGE_JPEG.rawValue) : Int32(HEARTH_IMAGE_PNG.rawValue)
        let status = hearth_image_encode(decoded, Int32(edge), code, Int32(quality), &out, &length, &width, &height)
        guard status == 0, let out else { throw .invalid(Self.undecodable) }
        defer { hearth_image_free(out) }
        return EncodedImage(
            data: Data(bytes: out, count: length),
            width: Int(width),
            height: Int(height),
            format: format
        )
    }
}
