import Foundation
import HearthContracts
import HearthCore
import HearthRPC
import HearthTestSupport
import SwiftProtobuf
import Testing

@testable import CheckinsService

/// Limits of check-ins and photos pinned at their boundary: the last value accepted and the
/// first refused.
@Suite("Check-in boundaries")
struct CheckinBoundaryTests {
    @Test("photo pixels: 10000x5000 (50,000,000) passes the pixel check; 2217x22553 (50,000,001) is refused")
    func pixelBoundary() throws {
        #expect(PhotoNormalizer.maxPixels == 50_000_000)
        #expect(10_000 * 5_000 == 50_000_000)
        #expect(2_217 * 22_553 == 50_000_001)
        // Headers only (as the 60-megapixel test does): past the pixel check there is nothing to
        // decode, so the upload may still be refused, but never for its pixels.
        var atLimit: FieldViolation?
        do {
            _ = try PhotoNormalizer.normalize(Images.pngHeader(width: 10_000, height: 5_000))
        } catch {
            atLimit = error
        }
        if let atLimit {
            #expect(atLimit.field == "photo")
            #expect(!atLimit.description.contains("pixels"), "refused by the pixel check: \(atLimit.description)")
        }
        do {
            _ = try PhotoNormalizer.normalize(Images.pngHeader(width: 2_217, height: 22_553))
            Issue.record("a 50,000,001-pixel header was accepted")
        } catch {
            #expect(error.field == "photo")
            #expect(error.description == "has 2217x22553 = 50000001 pixels; at most 50000000")
        }
    }

    @Test("upload size: exactly 10 MiB (10,485,760 bytes) is accepted and stored; 10 MiB + 1 byte is refused by size")
    func uploadSizeBoundary() throws {
        #expect(PhotoNormalizer.maxUploadBytes == 10_485_760)
        let image = Images.png(width: 64, height: 48) { x, y in (UInt8(x * 4), UInt8(y * 5), 128) }
        // Bytes after the PNG's IEND are never read by the decoder: they only make the upload
        // exactly the size under test.
        var upload = image + Data(repeating: 0, count: PhotoNormalizer.maxUploadBytes - image.count)
        #expect(upload.count == 10_485_760)
        let photo = try PhotoNormalizer.normalize(upload)
        #expect(photo.full.format == .png)
        #expect(photo.full.width == 64 && photo.full.height == 48)

        upload.append(0)
        #expect(upload.count == 10_485_761)
        do {
            _ = try PhotoNormalizer.normalize(upload)
            Issue.record("an upload of 10 MiB + 1 byte was accepted")
        } catch {
            #expect(error.field == "photo")
            #expect(error.description == "is 10485761 bytes; at most 10485760")
        }
    }

    @Test("ListCheckIns: page_size 100 is accepted, 101 is refused with a violation on page_size")
    func listPageSizeBoundary() async throws {
        let fixture = try Fixture()
        let (_, session) = try await fixture.nestAndSession()
        var ids: [String] = []
        for i in 0..<3 {
            ids.append(try await fixture.checkIn(session, at: Fixture.start.addingTimeInterval(Double(i))).id)
        }
        var request = Hearth_Checkins_V1_ListCheckInsRequest()
        request.sessionID = session.id
        request.order = .newestFirst
        request.pageSize = 100
        let page = try await fixture.service.listCheckIns(request, fixture.context("olivia"))
        #expect(page.checkIns.map(\.id) == ids.reversed())
        #expect(page.nextPageToken.isEmpty)

        request.pageSize = 101
        let fields = await violatedFields {
            _ = try await fixture.service.listCheckIns(request, fixture.context("olivia"))
        }
        #expect(fields == ["page_size"])
    }

    @Test("ListCheckIns: a page of the longest texts ends early to fit half a frame; paging still gives every one once")
    func listPageFitsItsFrame() async throws {
        let fixture = try Fixture()
        let (_, session) = try await fixture.nestAndSession(hours: 240)
        // 280 characters of 63 bytes each (a letter and 31 combining accents), and a request id
        // of 128 such: about 25 KB a check-in, so a page of 100 would be 2.5 MB.
        let heavy = "e" + String(repeating: "\u{301}", count: 31)
        let caption = String(repeating: heavy, count: 280)
        var ids: Set<String> = []
        for day in 0..<10 {  // at most 10 a day
            for i in 0..<10 {
                let id = "\(day)-\(i)-" + String(repeating: heavy, count: 120)
                ids.insert(
                    try await fixture.checkIn(session, caption: caption, at: fixture.clock.now(), requestID: id).id
                )
                fixture.clock.advance(by: 1)
            }
            fixture.clock.advance(by: 86_400)
        }
        var request = Hearth_Checkins_V1_ListCheckInsRequest()
        request.sessionID = session.id
        request.pageSize = 100
        var seen: [String] = []
        var pages = 0
        repeat {
            let page = try await fixture.service.listCheckIns(request, fixture.context("olivia"))
            #expect(page.encodedSize <= ServerConfiguration.defaultMaxFrameSize / 2 + 64 * 1024)
            seen += page.checkIns.map(\.id)
            pages += 1
            request.pageToken = page.nextPageToken
        } while !request.pageToken.isEmpty
        #expect(pages == 2, "the first page ends early")
        #expect(seen.count == 100 && Set(seen) == ids)
    }
}
