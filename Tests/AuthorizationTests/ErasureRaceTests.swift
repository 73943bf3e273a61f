import Foundation
import HearthContracts
import HearthCore
import HearthRPC
import HearthTestSupport
import SwiftProtobuf
import Synchronization
import Testing

/// An account erasure takes a while (a service down is asked again for minutes), and the user's
/// apps may write meanwhile. What they write before routines' part is made goes with the erasure:
/// checkins erases the user's nests first, then routines' part has checkins erase any nest made
/// since and erases the routines of every nest that went. Every service on a real file behind real
/// TCP (``AccountErasureTests``' helpers).
@Suite("Account erasure while the user writes", .timeLimit(.minutes(2)))
struct ErasureRaceTests {
    static let checkinsErase = Hearth_Checkins_V1_Checkins.Method.eraseUser.name
    static let routinesErase = Hearth_Routines_V1_Routines.Method.eraseUser.name

    @Test(
        "a nest and a routine in it, made after the erasure was asked for and before routines' part, are erased with it"
    )
    func madeWhileErasing() async throws {
        try await withScratchFolder("hearth-erasure-race") { folder in
            let services = try AccountErasureTests.Services(folder: folder, now: Date())
            let gate = MethodGate()
            let olivia = AccountErasureTests.options("olivia")
            try await AccountErasureTests.withServices(services, interceptors: [gate]) { client in
                let checkins = Hearth_Checkins_V1_Checkins.Client(client)
                let routines = Hearth_Routines_V1_Routines.Client(client)
                /// A nest of Olivia's and a routine in it, both named `name`: their ids.
                func nestWithRoutine(_ name: String) async throws -> (nest: String, routine: String) {
                    let nest = try await checkins.createNest(.with { $0.name = name }, options: olivia)
                    let routine = try await routines.createRoutine(
                        .with {
                            $0.nestID = nest.id
                            $0.title = name
                            $0.actions = ["\(name) plants watered"]
                        },
                        options: olivia
                    )
                    return (nest.id, routine.id)
                }
                let before = try await nestWithRoutine("RACE-BEFORE")
                // The control: the names are written, in checkins' file and in routines'.
                let written = try services.files(holding: "RACE-BEFORE")
                #expect(written.contains { $0.hasPrefix("checkins") } && written.contains { $0.hasPrefix("routines") })

                try await AccountErasureTests.withAccount(
                    services,
                    checkins: client,
                    routines: client,
                    safety: client
                ) { account in
                    // Checkins down: the erasure is asked for, and its checkins part fails.
                    gate.close(Self.checkinsErase)
                    _ = try await account.eraseAccount(.init(), options: olivia)
                    try await eventually("checkins' part was tried") { gate.refusals(of: Self.checkinsErase) >= 1 }
                    let whileCheckinsDown = try await nestWithRoutine("RACE-WHILE-CHECKINS-DOWN")

                    // Checkins back, routines down: checkins' part is made, routines' tried.
                    gate.close(Self.routinesErase)
                    gate.open(Self.checkinsErase)
                    try await eventually("checkins' part is done and routines' part was made or tried") {
                        services.clock.advance(by: 1)
                        let parts = try await account.getErasure(.init(), options: olivia).services
                        let state = { (service: String) in parts.first { $0.service == service }?.state }
                        return state("checkins") == .done
                            && (state("routines") == .done || gate.refusals(of: Self.routinesErase) >= 1)
                    }
                    let between = try await account.getErasure(.init(), options: olivia)
                    #expect(
                        between.services.first { $0.service == "routines" }?.state == .pending,
                        "routines' part comes after checkins': \(between.services)"
                    )
                    #expect(try await checkins.listMyNests(.init(), options: olivia).nests.isEmpty)
                    // After checkins' part, before routines' is made.
                    let afterCheckins = try await nestWithRoutine("RACE-AFTER-CHECKINS")

                    gate.open(Self.routinesErase)
                    let erasure = try await AccountErasureTests.erased(account, clock: services.clock)
                    #expect(erasure.services.allSatisfy { $0.state == .done })

                    // Every nest and every routine went: none is left to find, in any file.
                    #expect(try await checkins.listMyNests(.init(), options: olivia).nests.isEmpty)
                    let made = [before, whileCheckinsDown, afterCheckins]
                    let left = try await routines.exportUser(
                        .with { $0.ownedNestIds = made.map(\.nest) },
                        options: olivia
                    )
                    #expect(left.routines.map(\.id) == [], "routines outlived their nests")
                    #expect(try services.files(holding: "RACE-") == [], "no byte of them is left")
                }
            }
        }
    }
}

/// Refuses the calls of the methods it is told to, UNAVAILABLE (as a service down would leave
/// them), and counts each refusal; lets every other call through.
final class MethodGate: ServerInterceptor {
    private struct State {
        var closed: Set<String> = []
        var refusals: [String: Int] = [:]
    }

    private let state = Mutex(State())

    func close(_ method: String) {
        self.state.withLock { _ = $0.closed.insert(method) }
    }

    func open(_ method: String) {
        self.state.withLock { _ = $0.closed.remove(method) }
    }

    /// How many calls of `method` it refused.
    func refusals(of method: String) -> Int {
        self.state.withLock { $0.refusals[method, default: 0] }
    }

    func intercept(_ payload: Data, context: RPCContext, next: RawHandler) async throws -> Data {
        let refused = self.state.withLock { state in
            guard state.closed.contains(context.method) else { return false }
            state.refusals[context.method, default: 0] += 1
            return true
        }
        if refused { throw RPCError(.unavailable, "\(context.method) is down for the test") }
        return try await next(payload, context)
    }
}
