public import Foundation

/// Small real PNG files (8-bit RGB), made without zlib: rows kept in stored (uncompressed)
/// deflate blocks, about 3 bytes a pixel. libvips' PNG loader reads them like any upload. The
/// fault writer's check-ins carry one; the photo tests build theirs with it.
public enum PNGFile {
    /// A `width` x `height` image, each pixel's red, green and blue from `pixel(x, y)`.
    public static func rgb(width: Int, height: Int, pixel: (Int, Int) -> (UInt8, UInt8, UInt8)) -> Data {
        var rows = Data(capacity: (1 + width * 3) * height)
        for y in 0..<height {
            rows.append(0)  // filter: none
            for x in 0..<width {
                let (r, g, b) = pixel(x, y)
                rows.append(contentsOf: [r, g, b])
            }
        }
        return Self.rgb(rows: rows, width: width, height: height)
    }

    /// An image of filtered rows `rows` (each a filter byte, then 3 bytes a pixel).
    public static func rgb(rows: Data, width: Int, height: Int) -> Data {
        Self.file(chunks: [
            ("IHDR", Self.header(width: width, height: height)), ("IDAT", Self.zlibStored(rows)), ("IEND", Data()),
        ])
    }

    /// The IHDR chunk's body: `width` x `height`, 8-bit RGB, not interlaced.
    public static func header(width: Int, height: Int) -> Data {
        var header = Self.bigEndian(UInt32(width)) + Self.bigEndian(UInt32(height))
        header.append(contentsOf: [8, 2, 0, 0, 0])  // 8 bits, RGB, deflate, no filter method, not interlaced
        return header
    }

    /// The PNG signature, then each chunk with its length and CRC.
    public static func file(chunks: [(type: String, body: Data)]) -> Data {
        var file = Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])
        for (type, body) in chunks {
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
