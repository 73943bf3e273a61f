import Foundation
public import HearthContracts
public import HearthCore
public import HearthRPC
import Synchronization

/// Where routines learns a user's role in a nest: the checkins service.
public protocol NestRoleSource: Sendable {
    /// - Throws: ``RPCError`` UNAVAILABLE when the answer cannot be had (routines fails closed).
    func role(nestID: String, userID: String) async throws -> Hearth_Checkins_V1_NestRole
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

    public func role(nestID: String, userID: String) async throws -> Hearth_Checkins_V1_NestRole {
        let key = "\(nestID)\u{0}\(userID)"
        let now = self.clock.now()
        if let entry = self.entries.withLock({ $0[key] }), entry.expires > now {
            return entry.role
        }
        self.misses.add(1, ordering: .relaxed)
        let role = try await self.source.role(nestID: nestID, userID: userID)
        let fetched = self.clock.now()
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
