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
/// Decodes an upload at most twice for each image kept (a JPEG at a fraction of its size when
/// much larger than kept): streamed into its first encoding, then, only when that is too large,
/// into memory, where every other encoding tried starts from. CPU-heavy: run it on the ``PhotoPool``, off the event loops.
enum PhotoNormalizer {
    static let maxUploadBytes = 10 * 1024 * 1024
    static let maxPixels = 50_000_000
    static let maxEdge = 2048
    static let thumbnailEdge = 320
    static let maxStoredBytes = 1_000_000

    /// Counts the decodes of the normalizations run on this task while it is set: one or two
    /// for each image kept (the photo and its thumbnail), never one for each encoding tried. A
    /// count of this task's own, so that other uploads under way meanwhile do not add to it.
    @TaskLocal static var decodeCount: DecodeCount?

    final class DecodeCount: Sendable {
        private let count = Atomic<Int>(0)
        var value: Int { self.count.load(ordering: .relaxed) }
        func add() { self.count.add(1, ordering: .relaxed) }
    }

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
        let upload = Upload(bytes: upload, format: kind, code: format, toSRGB: hasProfile)
        let full = try Self.fit(upload, edge: Self.maxEdge, shouldStop: shouldStop)
        let thumbnail = try Self.fit(upload, edge: Self.thumbnailEdge, shouldStop: shouldStop)
        return NormalizedPhoto(full: full, thumbnail: thumbnail)
    }

    /// An upload whose header checked out.
    private struct Upload {
        var bytes: Data
        var format: EncodedImage.Format
        var code: Int32
        var toSRGB: Int32
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

    /// The upload encoded within ``maxStoredBytes`` with its long edge at most `edge`: first
    /// decoded and encoded in one stream at the best quality (what most photos need); when that
    /// is too large, decoded once more, into memory, and lower JPEG qualities, then smaller
    /// edges, are tried from those pixels. At most two decodes, whatever it takes to fit.
    private static func fit(_ upload: Upload, edge: Int, shouldStop: () -> Bool) throws(NormalizeFailure)
        -> EncodedImage
    {
        let qualities = upload.format == .jpeg ? [85, 75, 65, 55] : [0]
        guard !shouldStop() else { throw .stopped }
        let first = try Self.streamed(upload, edge: edge, quality: qualities[0])
        if first.data.count <= Self.maxStoredBytes { return first }
        guard !shouldStop() else { throw .stopped }
        var decoded: UnsafeMutableRawPointer?
        Self.decodeCount?.add()
        let status = upload.bytes.withUnsafeBytes {
            hearth_image_decode($0.baseAddress, $0.count, upload.code, Int32(edge), upload.toSRGB, &decoded)
        }
        guard status == 0, let decoded else { throw .invalid(Self.undecodable) }
        defer { hearth_image_release(decoded) }
        var edge = edge
        var tries = qualities.dropFirst()  // the first was the stream's
        while edge >= 64 {
            for quality in tries {
                guard !shouldStop() else { throw .stopped }
                let image = try Self.encode(decoded, format: upload.format, edge: edge, quality: quality)
                if image.data.count <= Self.maxStoredBytes { return image }
            }
            edge = edge * 3 / 4
            tries = qualities[...]
        }
        throw .invalid(
            FieldViolation(field: "photo", description: "cannot be stored within \(Self.maxStoredBytes) bytes")
        )
    }

    /// Decoded and encoded in one stream.
    private static func streamed(_ upload: Upload, edge: Int, quality: Int) throws(NormalizeFailure) -> EncodedImage {
        var out: UnsafeMutableRawPointer?
        var length = 0
        var width: Int32 = 0
        var height: Int32 = 0
        Self.decodeCount?.add()
        let status = upload.bytes.withUnsafeBytes {
            hearth_image_normalize(
                $0.baseAddress,
                $0.count,
                upload.code,
                Int32(edge),
                upload.toSRGB,
                Int32(quality),
                &out,
                &length,
                &width,
                &height
            )
        }
        guard status == 0, let out else { throw .invalid(Self.undecodable) }
        defer { hearth_image_free(out) }
        return EncodedImage(
            data: Data(bytes: out, count: length),
            width: Int(width),
            height: Int(height),
            format: upload.format
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
