import Foundation
public import HearthContracts
public import HearthCore
public import HearthRPC
import Synchronization

/// Where routines learns a user's role in a nest: the checkins service.
public protocol NestRoleSource: Sendable {
    /// - Throws: ``RPCError`` UNAVAILABLE when the answer cannot be had (routines fails closed).
    func role(nestID: String, userID: String) async throws -> Hearth_Checkins_V1_NestRole
    /// Forgets whatever is remembered of `nests` (erased): the next role in them is asked anew.
    func forget(nests: Set<String>)
}

extension NestRoleSource {
    /// A source that remembers nothing has nothing to forget.
    public func forget(nests: Set<String>) {}
}

/// Asks checkins' `GetNestRole` over RPC, acting as the user asked about.
public struct CheckinsNestRoles: NestRoleSource {
    let checkins: Hearth_Checkins_V1_Checkins.Client
    let credential: String
    let timeout: Duration

    public init(client: RPCClient, internalCredential: String, timeout: Duration = .seconds(2)) {
        self.checkins = Hearth_Checkins_V1_Checkins.Client(client)
        self.credential = internalCredential
        self.timeout = timeout
    }

    public func role(nestID: String, userID: String) async throws -> Hearth_Checkins_V1_NestRole {
        let options = CallOptions(
            timeout: self.timeout,
            metadata: [TrustedMetadata.credential: self.credential, TrustedMetadata.user: userID]
        )
        do {
            var request = Hearth_Checkins_V1_GetNestRoleRequest()
            request.nestID = nestID
            request.userID = userID
            return try await self.checkins.getNestRole(request, options: options).role
        } catch {
            // Whatever went wrong, access cannot be decided: fail closed.
            let cause = RPCError(answering: error)
            throw RPCError(.unavailable, "checkins cannot say who may see this nest now (\(cause.code.name))")
        }
    }
}

/// Remembers roles for at most `lifetime` (checkins stays the authority: a sitter whose
/// session ended loses access within that time). Failures are never remembered.
public final class CachedNestRoles: NestRoleSource {
    public static let defaultLifetime: Duration = .seconds(30)

    private struct Entry {
        var role: Hearth_Checkins_V1_NestRole
        var expires: Date
    }

    private let source: any NestRoleSource
    private let clock: any WallClock
    private let lifetime: TimeInterval
    private let capacity: Int
    private let entries = Mutex<[String: Entry]>([:])
    private let misses = Atomic<Int>(0)

    public init(
        source: any NestRoleSource,
        clock: any WallClock,
        lifetime: Duration = CachedNestRoles.defaultLifetime,
        capacity: Int = 10_000
    ) {
        self.source = source
        self.clock = clock
        self.lifetime = lifetime.seconds
        self.capacity = capacity
    }

    /// How many answers had to be asked of the source (for tests and metrics).
    public var missCount: Int { self.misses.load(ordering: .relaxed) }

    /// Erased nests (``forget(nests:)``), each until the moment a lookup begun before it was
    /// forgotten can no longer be remembered: none of their answers is kept until then.
    private let forgotten = Mutex<[String: Date]>([:])

    public func forget(nests: Set<String>) {
        guard !nests.isEmpty else { return }
        let until = self.clock.now().addingTimeInterval(self.lifetime)
        self.forgotten.withLock { forgotten in
            let now = self.clock.now()
            forgotten = forgotten.filter { $0.value > now }
            for nest in nests { forgotten[nest] = until }
        }
        self.entries.withLock { entries in
            entries = entries.filter { key, _ in
                !nests.contains(String(key.prefix { $0 != "\u{0}" }))
            }
        }
    }

    public func role(nestID: String, userID: String) async throws -> Hearth_Checkins_V1_NestRole {
        let key = "\(nestID)\u{0}\(userID)"
        let now = self.clock.now()
        if let entry = self.entries.withLock({ $0[key] }), entry.expires > now {
            return entry.role
        }
        self.misses.add(1, ordering: .relaxed)
        let role = try await self.source.role(nestID: nestID, userID: userID)
        let fetched = self.clock.now()
        // An answer about an erased nest is not kept: it may have been asked before the nest went.
        if let until = self.forgotten.withLock({ $0[nestID] }), until > fetched { return role }
        self.entries.withLock { entries in
            if entries.count >= self.capacity {
                entries = entries.filter { $0.value.expires > fetched }
                if entries.count >= self.capacity { entries.removeAll(keepingCapacity: true) }
            }
            entries[key] = Entry(role: role, expires: fetched.addingTimeInterval(self.lifetime))
        }
        return role
    }
}
