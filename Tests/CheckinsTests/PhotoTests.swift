import Foundation
import GRDB
import HearthBench
import HearthContracts
import HearthCore
import HearthRPC
import HearthStore
import HearthTestSupport
import SwiftProtobuf
import Testing
import VipsShim

@testable import CheckinsService

/// Minimal image files made by the test itself: a PNG encoder (stored deflate blocks) and a
/// JPEG made from it by libvips, then tagged by exiftool.
enum Images {
    static func png(width: Int, height: Int, pixel: (Int, Int) -> (UInt8, UInt8, UInt8)) -> Data {
        PNGFile.rgb(width: width, height: height, pixel: pixel)
    }

    /// A PNG of one colour, stored without compression: about `width` x `height` x 3 bytes.
    static func flatPNG(width: Int, height: Int) -> Data {
        var row = Data([0])  // filter: none
        row.append(Data(repeating: 0x80, count: width * 3))
        var raw = Data(capacity: row.count * height)
        for _ in 0..<height { raw.append(row) }
        return PNGFile.rgb(rows: raw, width: width, height: height)
    }

    /// Only a PNG header claiming `width` x `height`: enough for the size check, nothing to decode.
    static func pngHeader(width: Int, height: Int) -> Data {
        PNGFile.file(chunks: [
            ("IHDR", PNGFile.header(width: width, height: height)),
            ("IDAT", Data([0x78, 0x01, 0x01, 0x00, 0x00, 0xFF, 0xFF])), ("IEND", Data()),
        ])
    }

    /// A JPEG of the PNG, re-encoded by libvips.
    static func jpeg(from png: Data) throws -> Data {
        _ = hearth_vips_start()
        var decoded: UnsafeMutableRawPointer?
        let side = Int32(10_000)
        let loaded = png.withUnsafeBytes {
            // The test's PNGs carry no profile.
            hearth_image_decode($0.baseAddress, $0.count, Int32(HEARTH_IMAGE_PNG.rawValue), side, 0, &decoded)
        }
        guard loaded == 0, let decoded else {
            throw FieldViolation(field: "fixture", description: "libvips could not read the PNG")
        }
        defer { hearth_image_release(decoded) }
        var out: UnsafeMutableRawPointer?
        var length = 0
        var width: Int32 = 0
        var height: Int32 = 0
        let status = hearth_image_encode(
            decoded,
            side,
            Int32(HEARTH_IMAGE_JPEG.rawValue),
            90,
            &out,
            &length,
            &width,
            &height
        )
        guard status == 0, let out else {
            throw FieldViolation(field: "fixture", description: "libvips could not make a JPEG")
        }
        defer { hearth_image_free(out) }
        return Data(bytes: out, count: length)
    }

    /// The APPn markers of a JPEG (our own parser: walks the segments up to the scan).
    static func jpegAppMarkers(_ jpeg: Data) -> [UInt8] {
        let bytes = [UInt8](jpeg)
        var markers: [UInt8] = []
        var i = 2
        while i + 4 <= bytes.count, bytes[i] == 0xFF {
            let marker = bytes[i + 1]
            if marker == 0xDA { break }  // start of scan
            if (0xE0...0xEF).contains(marker) || marker == 0xFE { markers.append(marker) }
            i += 2 + Int(bytes[i + 2]) << 8 + Int(bytes[i + 3])
        }
        return markers
    }
}

@Suite("Photos")
struct PhotoTests {
    @Test(
        "a photo near 10 MiB goes over the wire at the checkins process's frame limit; one byte over 10 MiB is refused by name"
    )
    func largeUploadOverTheWire() async throws {
        let fixture = try Fixture()
        let (_, session) = try await fixture.nestAndSession()
        let configuration = ServerConfiguration(
            maxFrameSize: CheckinsService.maxFrameSize,
            callers: .anyMethod("secret")
        )
        try await withServer(configuration: configuration, services: [fixture.service]) { _, port in
            let client = RPCClient(
                configuration: .init(host: "127.0.0.1", port: port, maxFrameSize: CheckinsService.maxFrameSize)
            )
            var request = Hearth_Checkins_V1_CreateCheckInRequest()
            request.sessionID = session.id
            request.capturedAt = Google_Protobuf_Timestamp(date: fixture.clock.now())
            request.clientRequestID = "big-1"
            // 10,378,813 bytes, made off the task pool (its checksum is seconds of CPU in a
            // debug build, which would hold a pool thread the tests beside this one need).
            request.photo = try await offThePool { Images.flatPNG(width: 1_860, height: 1_860) }
            #expect(request.photo.count > 10_300_000 && request.photo.count <= 10 * 1024 * 1024)
            let options = CallOptions(
                timeout: .seconds(60),
                metadata: [TrustedMetadata.credential: "secret", TrustedMetadata.user: "sam"]
            )
            let created = try await Hearth_Checkins_V1_Checkins.Client(client).createCheckIn(request, options: options)
            #expect(created.hasPhoto_p)
            #expect(created.photo.width == 1_860)
            // One byte over 10 MiB still fits the frame: the service names the field.
            request.clientRequestID = "big-2"
            request.photo = Data(repeating: 0x89, count: 10 * 1024 * 1024 + 1)
            do {
                _ = try await Hearth_Checkins_V1_Checkins.Client(client).createCheckIn(request, options: options)
                Issue.record("an upload over 10 MiB was accepted")
            } catch let error as RPCError {
                #expect(error.code == .invalidArgument)
                #expect(error.violations.map(\.field) == ["photo"])
            }
            await client.close()
        }
    }

    private func exiftool(_ arguments: [String]) async throws -> ProcessOutput {
        try await self.run("exiftool", arguments)
    }

    private func vips(_ arguments: [String]) async throws -> ProcessOutput {
        try await self.run("vips", arguments)
    }

    /// Runs a Debian tool that `scripts/bootstrap` installs.
    private func run(_ name: String, _ arguments: [String]) async throws -> ProcessOutput {
        let tool = URL(fileURLWithPath: "/usr/bin/\(name)")
        try #require(
            FileManager.default.isExecutableFile(atPath: tool.path),
            "\(name) is missing: scripts/bootstrap installs it"
        )
        return try await runProcess(tool, arguments)
    }

    @Test("a JPEG with GPS EXIF and orientation 6 comes out turned upright, with no metadata; a thumbnail too")
    func jpegWithExif() async throws {
        try await withScratchFolder("hearth-photo") { folder in
            let input = folder.appendingPathComponent("in.jpg")
            let png = Images.png(width: 400, height: 200) { x, _ in x < 200 ? (255, 0, 0) : (0, 0, 255) }
            try Images.jpeg(from: png).write(to: input)
            let tagged = try await self.exiftool([
                "-Orientation#=6", "-GPSLatitude=25.0330", "-GPSLatitudeRef=N", "-GPSLongitude=121.5654",
                "-GPSLongitudeRef=E", "-Comment=secret", "-overwrite_original", input.path,
            ])
            try #require(tagged.status == 0, "\(tagged.stderr)")
            let before = try await self.exiftool(["-s", "-GPSLatitude", "-Orientation", input.path]).stdout
            #expect(before.contains("GPSLatitude"))

            let photo = try PhotoNormalizer.normalize(try Data(contentsOf: input))
            #expect(photo.full.format == .jpeg)
            #expect((photo.full.width, photo.full.height) == (200, 400), "orientation 6 applied to the pixels")
            #expect(max(photo.thumbnail.width, photo.thumbnail.height) == 320)
            #expect(photo.full.data.count <= PhotoNormalizer.maxStoredBytes)
            #expect(!Images.jpegAppMarkers(photo.full.data).contains(0xE1), "no APP1 (EXIF/XMP) segment")
            #expect(!Images.jpegAppMarkers(photo.full.data).contains(0xFE), "no comment segment")

            let output = folder.appendingPathComponent("out.jpg")
            try photo.full.data.write(to: output)
            let after = try await self.exiftool([
                "-s", "-a", "-G1", "-GPS:all", "-EXIF:all", "-XMP:all", "-IPTC:all", "-Comment", output.path,
            ])
            #expect(after.stdout.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty, "left: \(after.stdout)")
        }
    }

    @Test("a PNG's tEXt, iTXt (XMP) and eXIf chunks (GPS among them) are gone from both images")
    func pngTextChunks() async throws {
        try await withScratchFolder("hearth-photo") { folder in
            let input = folder.appendingPathComponent("in.png")
            try Images.png(width: 400, height: 300) { x, y in (UInt8(x % 256), UInt8(y % 256), 9) }.write(to: input)
            let tagged = try await self.exiftool([
                "-PNG:Comment=secret-comment", "-PNG:Author=Mei Chen", "-XMP:Creator=mei-xmp",
                "-EXIF:Artist=mei-artist", "-GPSLatitude=25.0330", "-GPSLatitudeRef=N", "-overwrite_original",
                input.path,
            ])
            try #require(tagged.status == 0, "\(tagged.stderr)")
            let upload = try Data(contentsOf: input)
            #expect(Set(Self.pngChunks(upload)).isSuperset(of: ["tEXt", "iTXt", "eXIf"]), "the fixture has them")

            let photo = try PhotoNormalizer.normalize(upload)
            for (name, image) in [("full", photo.full), ("thumbnail", photo.thumbnail)] {
                #expect(image.format == .png)
                let chunks = Set(Self.pngChunks(image.data))
                #expect(
                    chunks.isDisjoint(with: ["tEXt", "zTXt", "iTXt", "eXIf", "iCCP", "tIME"]),
                    "\(name): \(chunks)"
                )
                let output = folder.appendingPathComponent("\(name).png")
                try image.data.write(to: output)
                let left = try await self.exiftool([
                    "-s", "-a", "-G1", "-PNG:Comment", "-PNG:Author", "-XMP:all", "-EXIF:all", "-GPS:all", output.path,
                ])
                #expect(
                    left.stdout.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty,
                    "\(name) kept: \(left.stdout)"
                )
                for secret in ["secret-comment", "Mei Chen", "mei-xmp", "mei-artist"] {
                    #expect(image.data.range(of: Data(secret.utf8)) == nil, "\(name) holds \(secret)")
                }
            }
        }
    }

    /// The chunk types of a PNG file, in order.
    private static func pngChunks(_ png: Data) -> [String] {
        let bytes = [UInt8](png)
        var types: [String] = []
        var offset = 8
        while offset + 8 <= bytes.count {
            let length = bytes[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) }
            types.append(String(decoding: bytes[offset + 4..<offset + 8], as: UTF8.self))
            offset += 12 + length
        }
        return types
    }

    @Test("a Display P3 photo (a phone's) keeps its colours: moved to sRGB before its profile is stripped")
    func displayP3() async throws {
        try await withScratchFolder("hearth-photo") { folder in
            let srgb = folder.appendingPathComponent("red.png")
            let p3 = folder.appendingPathComponent("red-p3.png")
            try Images.png(width: 64, height: 64) { _, _ in (255, 0, 0) }.write(to: srgb)
            // The same red in Display P3's numbers, with libvips' P3 profile embedded.
            let made = try await self.vips(["icc_transform", srgb.path, p3.path, "p3", "--input-profile", "srgb"])
            try #require(made.status == 0, "\(made.stderr)")
            let numbers = try await self.pixel(p3)
            #expect(numbers.count == 3 && numbers[0] < 240 && numbers[1] > 40, "P3's numbers for sRGB red: \(numbers)")
            let p3JPEG = folder.appendingPathComponent("red-p3.jpg")
            let copied = try await self.vips(["copy", p3.path, "\(p3JPEG.path)[Q=95]"])  // the profile kept
            try #require(copied.status == 0, "\(copied.stderr)")
            for (format, upload) in [("png", p3), ("jpeg", p3JPEG)] {
                let photo = try PhotoNormalizer.normalize(try Data(contentsOf: upload))
                for (name, image) in [("full", photo.full), ("thumbnail", photo.thumbnail)] {
                    let stored = folder.appendingPathComponent("\(format)-\(name)")
                    try image.data.write(to: stored)
                    let rgb = try await self.pixel(stored)
                    #expect(rgb[0] >= 245 && rgb[1] <= 12 && rgb[2] <= 12, "\(format) \(name): \(rgb), not red")
                }
            }
            // An image without a profile keeps its numbers.
            let plain = try PhotoNormalizer.normalize(try Data(contentsOf: srgb))
            let stored = folder.appendingPathComponent("plain.png")
            try plain.full.data.write(to: stored)
            #expect(try await self.pixel(stored) == [255, 0, 0])
        }
    }

    /// The pixel at (10, 10), as libvips reads it.
    private func pixel(_ file: URL) async throws -> [Int] {
        let read = try await self.vips(["getpoint", file.path, "10", "10"])
        try #require(read.status == 0, "\(read.stderr)")
        return read.stdout.split(whereSeparator: \.isWhitespace).compactMap { Double($0).map { Int($0) } }
    }

    @Test("a PNG stays a PNG, shrunk to a 2048 px long edge")
    func png() throws {
        let png = Images.png(width: 2500, height: 100) { x, y in (UInt8(x % 256), UInt8(y % 256), 128) }
        let photo = try PhotoNormalizer.normalize(png)
        #expect(photo.full.format == .png)
        #expect(photo.full.width == 2048)
        #expect(photo.thumbnail.width == 320)
    }

    @Test("garbage, unsupported formats, 60-megapixel headers and uploads over 10 MiB are refused")
    func refusals() throws {
        #expect(throws: FieldViolation.self) { _ = try PhotoNormalizer.normalize(Data("not an image".utf8)) }
        #expect(throws: FieldViolation.self) {
            _ = try PhotoNormalizer.normalize(Data(#"<svg xmlns="http://www.w3.org/2000/svg"/>"#.utf8))
        }
        do {
            _ = try PhotoNormalizer.normalize(Images.pngHeader(width: 10_000, height: 6_000))
            Issue.record("a 60-megapixel header was accepted")
        } catch {
            #expect(error.description.contains("60000000 pixels"))
        }
        #expect(throws: FieldViolation.self) {
            _ = try PhotoNormalizer.normalize(Data(count: PhotoNormalizer.maxUploadBytes + 1))
        }
        // A JPEG cut short: its header reads, its pixels do not. The answer names the field and
        // says nothing of libvips (whose error text every decode at the same time shares).
        let jpeg = try Images.jpeg(
            from: Images.png(width: 400, height: 300) { x, y in (UInt8(x % 256), UInt8(y % 256), 0) }
        )
        do {
            _ = try PhotoNormalizer.normalize(jpeg.prefix(jpeg.count / 3))
            Issue.record("a truncated JPEG was accepted")
        } catch {
            #expect(error.field == "photo")
            #expect(!error.description.lowercased().contains("vips"), "\(error.description)")
        }
    }

    @Test("a photo check-in: lists carry metadata but never bytes; both variants load; it goes with its check-in")
    func photoCheckIn() async throws {
        let fixture = try Fixture()
        let (_, session) = try await fixture.nestAndSession()
        var request = Hearth_Checkins_V1_CreateCheckInRequest()
        request.sessionID = session.id
        request.photo = Images.png(width: 640, height: 480) { _, _ in (10, 200, 30) }
        request.photoAltText = "The dog asleep"
        request.capturedAt = Google_Protobuf_Timestamp(date: fixture.clock.now())
        request.clientRequestID = "photo-1"
        let created = try await fixture.service.createCheckIn(request, fixture.context("sam"))
        #expect(created.hasPhoto_p)
        #expect(created.photo.width == 640 && created.photo.format == "png")

        var list = Hearth_Checkins_V1_ListCheckInsRequest()
        list.sessionID = session.id
        let listed = try await fixture.service.listCheckIns(list, fixture.context("olivia")).checkIns[0]
        #expect(listed.hasPhoto_p && listed.photo.height == 480)
        #expect(try listed.serializedData().count < 1000, "no photo bytes in lists")

        var get = Hearth_Checkins_V1_GetCheckInPhotoRequest()
        get.checkInID = created.id
        let full = try await fixture.service.getCheckInPhoto(get, fixture.context("olivia"))
        #expect(full.contentType == "image/png" && full.metadata.width == 640)
        get.variant = .thumbnail
        let thumbnail = try await fixture.service.getCheckInPhoto(get, fixture.context("sam"))
        #expect(thumbnail.metadata.width == 320 && thumbnail.metadata.height == 240)

        var delete = Hearth_Checkins_V1_DeleteCheckInRequest()
        delete.checkInID = created.id
        _ = try await fixture.service.deleteCheckIn(delete, fixture.context("olivia"))
        let left = try await fixture.service.store.base.writer.read { db in
            try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM photo")
        }
        #expect(left == 0)
    }
}
