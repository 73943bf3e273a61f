import Foundation

/// The photo every check-in of a fault run carries: a real PNG (8-bit RGB, a colour gradient),
/// made here without zlib, its rows kept in stored (uncompressed) deflate blocks. Checkins
/// decodes it with libvips' PNG loader and stores it, and its thumbnail, like any upload.
enum FaultPhoto {
    /// A `width` x `height` PNG: about 3 bytes a pixel.
    static func png(width: Int = 32, height: Int = 32) -> Data {
        var rows = Data(capacity: (1 + width * 3) * height)
        for y in 0..<height {
            rows.append(0)  // filter: none
            for x in 0..<width {
                rows.append(contentsOf: [
                    UInt8(x * 255 / max(1, width - 1)), UInt8(y * 255 / max(1, height - 1)), 0x80,
                ])
            }
        }
        var header = Self.bigEndian(UInt32(width)) + Self.bigEndian(UInt32(height))
        header.append(contentsOf: [8, 2, 0, 0, 0])  // 8 bits, RGB, deflate, no filter method, not interlaced
        var file = Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])
        for (type, body) in [("IHDR", header), ("IDAT", Self.zlibStored(rows)), ("IEND", Data())] {
            file.append(Self.bigEndian(UInt32(body.count)))
            let typed = Data(type.utf8) + body
            file.append(typed)
            file.append(Self.bigEndian(Self.crc32(typed)))
        }
        return file
    }

    /// `bytes` as a zlib stream of stored deflate blocks (at most 65,535 bytes each).
    private static func zlibStored(_ bytes: Data) -> Data {
        var stream = Data([0x78, 0x01])  // deflate, 32 KiB window; no dictionary, fastest
        var offset = bytes.startIndex
        repeat {
            let end = min(offset + 65_535, bytes.endIndex)
            let length = UInt16(end - offset)
            stream.append(end == bytes.endIndex ? 1 : 0)  // BFINAL on the last; BTYPE 00: stored
            stream.append(contentsOf: [
                UInt8(length & 0xFF), UInt8(length >> 8), UInt8(~length & 0xFF), UInt8(~length >> 8),
            ])
            stream.append(bytes[offset..<end])
            offset = end
        } while offset < bytes.endIndex
        stream.append(Self.bigEndian(Self.adler32(bytes)))
        return stream
    }

    private static func bigEndian(_ value: UInt32) -> Data {
        withUnsafeBytes(of: value.bigEndian) { Data($0) }
    }

    /// The CRC-32 a PNG chunk ends with (ISO 3309, reflected, polynomial 0xEDB88320).
    private static func crc32(_ bytes: Data) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0..<8 {
                crc = crc & 1 == 1 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1
            }
        }
        return ~crc
    }

    /// The Adler-32 checksum a zlib stream ends with.
    private static func adler32(_ bytes: Data) -> UInt32 {
        var a: UInt32 = 1
        var b: UInt32 = 0
        for byte in bytes {
            a = (a + UInt32(byte)) % 65_521
            b = (b + a) % 65_521
        }
        return b << 16 | a
    }
}
