import Foundation
import HearthContracts
import HearthCore
import HearthRPC
import HearthRelay
import HearthStore
import HearthTestSupport
import SwiftProtobuf
import Testing

@testable import CheckinsService
@testable import RoutinesService

@Suite("Routines: listing")
struct RoutineListingTests {
    @Test("ListRoutines pages by creation, none twice; a page of heavy routines ends early, under half a frame")
    func pages() async throws {
        try await System.with { system in
            let (nest, _) = try await system.nest()
            // 280 characters of 25 bytes each: 7,000 bytes an action, 70,000 a routine.
            let heavy = String(repeating: "\u{1F468}\u{200D}\u{1F469}\u{200D}\u{1F467}\u{200D}\u{1F466}", count: 280)
            var made: [String] = []
            for index in 0..<40 {
                let actions = index < 35 ? Array(repeating: heavy, count: 10) : ["Teeth"]
                made.append(try await system.routine(in: nest, actions: actions).id)
                system.clock.advance(by: 1)
            }
            func walk(size: UInt32) async throws -> (ids: [String], pages: [Int], largest: Int) {
                var request = Hearth_Routines_V1_ListRoutinesRequest()
                request.nestID = nest
                request.pageSize = size
                var ids: [String] = []
                var pages: [Int] = []
                var largest = 0
                repeat {
                    let page = try await system.routines.listRoutines(request, callContext("sam"))
                    ids += page.routines.map(\.id)
                    pages.append(page.routines.count)
                    largest = max(largest, page.encodedSize)
                    request.pageToken = page.nextPageToken
                } while !request.pageToken.isEmpty
                return (ids, pages, largest)
            }
            let full = try await walk(size: 0)
            #expect(full.ids == made)
            #expect(
                full.pages.count == 2 && full.pages[0] < 35,
                "the heavy routines end the first page early: \(full.pages)"
            )
            #expect(full.largest <= RoutinesService.listBudget)
            let small = try await walk(size: 7)
            #expect(small.ids == made && small.pages == [7, 7, 7, 7, 7, 5])
            var tooBig = Hearth_Routines_V1_ListRoutinesRequest()
            tooBig.nestID = nest
            tooBig.pageSize = 101
            #expect(
                await violatedFields { _ = try await system.routines.listRoutines(tooBig, callContext("sam")) } == [
                    "page_size"
                ]
            )
        }
    }
}
