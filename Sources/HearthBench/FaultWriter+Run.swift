import Foundation
import HearthGateway
import HearthRPC

/// What every writer of one fault run shares: the gateway, the token signer, when to stop.
struct FaultRun: Sendable {
    /// Sets this run's users and request ids apart from any other run's.
    let id: String
    let end: Date
    let client: RPCClient
    let signer: TokenSigner
    let callTimeout: Duration

    var isOver: Bool { Date() >= self.end }

    /// User number `part` of writer `writer` (a writer goes on as a new user when one is full).
    func user(_ writer: Int, _ part: Int) -> String { "fault-\(self.id)-\(writer)-\(part)" }

    /// Options that act as `user` through the gateway: a token minted for them, valid for the
    /// rest of the run and 10 minutes more (an hour at least, a day at most: the gateway refuses
    /// a token that lives longer).
    func options(as user: String) async throws -> CallOptions {
        try await self.signer.options(
            as: user,
            lifetime: min(86_000, max(3600, self.end.timeIntervalSinceNow + 600)),
            timeout: self.callTimeout
        )
    }

    /// The pause after each call, 25 ms (35 after a failure): each writer stays under the gateway's
    /// per-user limit (50 a second), and an outage is not met with a spin.
    func pause<Answer>(after result: Result<Answer, RPCError>) async {
        if case .failure = result { try? await Task.sleep(for: .milliseconds(10)) }
        try? await Task.sleep(for: .milliseconds(25))
    }
}

extension TokenSigner {
    /// Options that act as `user` through the gateway: a token minted for them now, valid for
    /// `lifetime` seconds.
    func options(as user: String, lifetime: TimeInterval, timeout: Duration) async throws -> CallOptions {
        let now = Date()
        let token = try await self.token(
            for: HearthClaims(subject: user, issuedAt: now, expiresAt: now.addingTimeInterval(lifetime))
        )
        return CallOptions(timeout: timeout, metadata: ["authorization": "Bearer \(token)"])
    }
}

/// One writer's calls, each timed and kept as a log ``FaultWriter/Entry``.
struct CallLog: Sendable {
    private(set) var entries: [FaultWriter.Entry] = []

    /// Makes `call`, writing `kind` for `user`, and logs it: acknowledged with the id at `id` in
    /// its answer, or failed with its status code. Returns the answer, or the error as the caller
    /// saw it.
    mutating func record<Answer>(
        _ kind: FaultWriter.Kind,
        user: String,
        id: KeyPath<Answer, String>,
        _ call: () async throws -> Answer
    ) async -> Result<Answer, RPCError> {
        let started = Date()
        let result = await Self.outcome(of: call)
        self.append(kind, user: user, started: started, result.map { $0[keyPath: id] })
        return result
    }

    /// Makes `call`, writing `kind` for `user`, and logs it: acknowledged with `id` (chosen by the
    /// caller: a request id, a user id), or failed with its status code.
    mutating func record<Answer>(
        _ kind: FaultWriter.Kind,
        user: String,
        id: String,
        _ call: () async throws -> Answer
    ) async -> Result<Answer, RPCError> {
        let started = Date()
        let result = await Self.outcome(of: call)
        self.append(kind, user: user, started: started, result.map { _ in id })
        return result
    }

    private static func outcome<Answer>(of call: () async throws -> Answer) async -> Result<Answer, RPCError> {
        do {
            let answer = try await call()
            return .success(answer)
        } catch {
            return .failure(RPCError(answering: error))
        }
    }

    private mutating func append(
        _ kind: FaultWriter.Kind,
        user: String,
        started: Date,
        _ outcome: Result<String, RPCError>
    ) {
        var entry = FaultWriter.Entry(
            t: started.timeIntervalSince1970,
            user: user,
            ok: true,
            kind: kind,
            ms: Date().timeIntervalSince(started) * 1000
        )
        switch outcome {
        case .success(let id): entry.id = id
        case .failure(let error): (entry.ok, entry.code) = (false, error.code.name)
        }
        self.entries.append(entry)
    }
}

/// What the check reads with: the gateway, acting as each user, and the service itself with the
/// credential of the gateway's link to it (for what only its Internal methods show).
struct FaultCheck: Sendable {
    let client: RPCClient
    let direct: RPCClient?
    let signer: TokenSigner
    let internalCredential: String
    let callTimeout: Duration

    /// Options that act as `user` through the gateway (a token valid an hour).
    func options(as user: String) async throws -> CallOptions {
        try await self.signer.options(as: user, lifetime: 3600, timeout: self.callTimeout)
    }

    /// Options for a call made to the service itself, for `user`, as another Hearth process
    /// makes it.
    func internalOptions(as user: String) -> CallOptions {
        CallOptions(
            timeout: self.callTimeout,
            metadata: [TrustedMetadata.credential: self.internalCredential, TrustedMetadata.user: user]
        )
    }

    /// Runs `read` again while it fails with UNAVAILABLE or DEADLINE_EXCEEDED, for at most 60 s:
    /// the check reads what was stored, and the gateway may still be reconnecting to the service
    /// restarted last (its backoff), or a loaded machine answer late, which is no verdict on the
    /// data.
    static func retryingUnanswered<T>(_ read: () async throws -> T) async throws -> T {
        let deadline = ContinuousClock.now + .seconds(60)
        while true {
            do {
                return try await read()
            } catch let error as RPCError
                where [.unavailable, .deadlineExceeded].contains(error.code) && ContinuousClock.now < deadline
            {
                try await Task.sleep(for: .milliseconds(100))
            }
        }
    }

    /// Every page of a listing: `page` is asked with each page token in turn (the empty one
    /// first) and answers its items and the next token, empty on the last page.
    static func allPages<Item>(_ page: (String) async throws -> (items: [Item], next: String)) async throws -> [Item] {
        var items: [Item] = []
        var token = ""
        repeat {
            let answer = try await Self.retryingUnanswered { try await page(token) }
            items += answer.items
            token = answer.next
        } while !token.isEmpty
        return items
    }
}

/// What a check found: acknowledged writes and those not stored, by kind.
struct FaultVerdict: Sendable {
    let service: FaultService
    private(set) var acknowledged: [FaultWriter.Kind: Int] = [:]
    private(set) var missing: [FaultWriter.Kind: Int] = [:]

    init(service: FaultService) {
        self.service = service
    }

    /// Counts the `acknowledged` ids of `kind`, and those of them not in `stored`.
    mutating func check(_ kind: FaultWriter.Kind, acknowledged ids: Set<String>, stored: Set<String>) {
        guard !ids.isEmpty else { return }
        self.acknowledged[kind, default: 0] += ids.count
        self.missing[kind, default: 0] += ids.subtracting(stored).count
    }

    var missingTotal: Int { self.missing.values.reduce(0, +) }

    /// One line of JSON: `{"acknowledged": N, "missing": M, "service": ..., "kinds": {KIND:
    /// {"acknowledged": N, "missing": M}}}` (scripts/faults reads it).
    func json() throws -> String {
        struct Count: Encodable {
            var acknowledged: Int
            var missing: Int
        }
        struct Report: Encodable {
            var service: String
            var acknowledged: Int
            var missing: Int
            var kinds: [String: Count]
        }
        var kinds: [String: Count] = [:]
        for (kind, count) in self.acknowledged {
            kinds[kind.rawValue] = Count(acknowledged: count, missing: self.missing[kind] ?? 0)
        }
        let report = Report(
            service: self.service.rawValue,
            acknowledged: self.acknowledged.values.reduce(0, +),
            missing: self.missingTotal,
            kinds: kinds
        )
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return String(decoding: try encoder.encode(report), as: UTF8.self)
    }
}
