import Foundation
import FuzzDriver

@testable import CheckinsService

/// The photo path as an upload takes it: `PhotoNormalizer.normalize` (the header probe with the
/// JPEG or PNG loader alone, one decode, the encodings that fit) over the input bytes. Crashes
/// and sanitizer reports are findings; so is a stored image that still holds a metadata block.
enum PhotoFuzzer {
    static func run(_ bytes: UnsafeRawBufferPointer) {
        guard let photo = try? PhotoNormalizer.normalize(Data(bytes)) else { return }
        for image in [photo.full, photo.thumbnail] {
            precondition(image.data.count <= PhotoNormalizer.maxStoredBytes, "a stored image over its limit")
            precondition(!Self.holdsMetadata(image), "a stored image kept a metadata block")
        }
    }

    /// Whether a stored JPEG has an APPn segment other than JFIF's APP0, or a comment; or a
    /// stored PNG a text, EXIF, profile or time chunk.
    static func holdsMetadata(_ image: EncodedImage) -> Bool {
        let bytes = [UInt8](image.data)
        switch image.format {
        case .jpeg:
            var offset = 2
            while offset + 4 <= bytes.count, bytes[offset] == 0xFF {
                let marker = bytes[offset + 1]
                if marker == 0xDA { return false }  // start of scan: the headers are over
                if (0xE1...0xEF).contains(marker) || marker == 0xFE { return true }
                offset += 2 + (Int(bytes[offset + 2]) << 8 | Int(bytes[offset + 3]))
            }
            return false
        case .png:
            var offset = 8
            while offset + 8 <= bytes.count {
                let length = bytes[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) }
                let type = String(decoding: bytes[offset + 4..<offset + 8], as: UTF8.self)
                if ["tEXt", "zTXt", "iTXt", "eXIf", "iCCP", "tIME"].contains(type) { return true }
                offset += 12 + length
            }
            return false
        }
    }
}

/// SwiftPM names an executable's entry point `<module>_main`; it hands over to libFuzzer.
@_cdecl("photo_fuzzer_main")
func fuzzerMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    runFuzzer(argc, argv) { start, size in
        PhotoFuzzer.run(UnsafeRawBufferPointer(start: start, count: size))
        return 0
    }
}
