import Foundation
import Logging
import PostgresNIO
import ServiceLifecycle
import Synchronization

/// The pool's `PostgresClient`, replaced by a fresh one once PostgreSQL answers again after it
/// went away. A client that failed to connect for a while waits longer and longer between its
/// attempts (PostgresNIO's backoff: 100 ms growing by a quarter each time, 2.3 s after a 10 s
/// outage), so calls could wait seconds after the server is back. While calls see the server
/// gone (a session closed under one, or the pool could not connect), this connects on its own
/// every ``probeEvery``; the first time it can while the client still lends no connection, new
/// calls go to a fresh client and the old one is shut down (its calls answered UNAVAILABLE).
final class PostgresClientSlot: Sendable {
    private struct State {
        var client: PostgresClient
        var running: Task<Void, Never>?
        /// When calls began to see the server gone, none served since; nil while it serves.
        var goneSince: ContinuousClock.Instant?
        var replacements = 0
    }

    /// How often it tries to connect while the server is gone.
    static let probeEvery: Duration = .milliseconds(250)

    private let state: Mutex<State>
    private let make: @Sendable () -> PostgresClient
    private let probe: @Sendable () async -> Bool
    private let logger: Logger

    /// - Parameters:
    ///   - make: a new client (not yet run).
    ///   - probe: whether a connection of its own can be made now.
    init(logger: Logger, make: @escaping @Sendable () -> PostgresClient, probe: @escaping @Sendable () async -> Bool) {
        self.state = Mutex(State(client: make()))
        self.make = make
        self.probe = probe
        self.logger = logger
    }

    /// The client calls lease their connections from.
    var client: PostgresClient { self.state.withLock { $0.client } }

    /// How many times a fresh client replaced the one before (tests read it).
    var replacements: Int { self.state.withLock { $0.replacements } }

    /// A call was served by `client`: the server is there.
    func served(by client: PostgresClient) {
        self.state.withLock { state in
            if state.client === client { state.goneSince = nil }
        }
    }

    /// A call on `client` found the server gone: its session closed under it, or no connection
    /// could be made. Reports from a client already replaced are left out.
    func sawServerGone(from client: PostgresClient) {
        self.state.withLock { state in
            if state.client === client, state.goneSince == nil { state.goneSince = .now }
        }
    }

    /// Runs the current client, and replaces it when the server is back after it went away,
    /// until cancelled or shut down gracefully.
    func run() async {
        self.startCurrent()
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                try? await Task.sleep(for: Self.probeEvery)
                guard !Task.isCancelled, self.state.withLock({ $0.goneSince != nil }) else { continue }
                guard await self.probe() else { continue }
                // The server answers: replaced only when the client cannot serve (one session
                // ended, say by pg_terminate_backend, leaves a working pool alone).
                let client = self.client
                if await Self.serves(client) {
                    self.served(by: client)
                } else {
                    self.replace()
                }
            }
        }
        let running = self.state.withLock { $0.running }
        running?.cancel()
        await running?.value
    }

    /// Whether `client` lends a connection within ``probeEvery``.
    private static func serves(_ client: PostgresClient) async -> Bool {
        await withTaskGroup(of: Bool.self) { group in
            group.addTask { (try? await client.withConnection { _ in true }) ?? false }
            group.addTask {
                try? await Task.sleep(for: Self.probeEvery)
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
    }

    private func startCurrent() {
        self.state.withLock { state in
            let client = state.client
            state.running = Task { await client.run() }
        }
    }

    private func replace() {
        let fresh = self.make()
        let old = self.state.withLock { state -> Task<Void, Never>? in
            let old = state.running
            state.client = fresh
            state.running = Task { await fresh.run() }
            state.goneSince = nil
            state.replacements += 1
            return old
        }
        self.logger.notice("PostgreSQL answers again: calls go to a fresh pool of connections")
        // Its waiting calls fail (the pool shut down) and are answered UNAVAILABLE.
        old?.cancel()
    }
}
