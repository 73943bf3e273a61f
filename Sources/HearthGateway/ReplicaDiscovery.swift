import Foundation
import Logging
import NIOCore
import NIOPosix
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Looks up the addresses a host name has now.
public protocol AddressResolver: Sendable {
    /// Every address of `host` (IPv4 and IPv6, as text), once each, in the resolver's order.
    func addresses(of host: String) async throws -> [String]
}

/// A host name the resolver could not look up.
public struct ResolutionFailed: Error, CustomStringConvertible {
    public let host: String
    public let reason: String

    public var description: String { "could not look up \(self.host): \(self.reason)" }
}

/// The system's resolver (`getaddrinfo`), on NIO's thread pool: what Kubernetes' DNS answers for
/// a headless Service, an address per ready pod.
public struct SystemResolver: AddressResolver {
    public init() {}

    public func addresses(of host: String) async throws -> [String] {
        try await NIOThreadPool.singleton.runIfActive { try Self.lookUp(host) }
    }

    static func lookUp(_ host: String) throws -> [String] {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        // Only the families this host has an address of (no IPv6 replica on an IPv4-only pod).
        hints.ai_flags = AI_ADDRCONFIG
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, nil, &hints, &list)
        guard status == 0, let list else {
            throw ResolutionFailed(host: host, reason: String(cString: gai_strerror(status)))
        }
        defer { freeaddrinfo(list) }
        var addresses: [String] = []
        var next: UnsafeMutablePointer<addrinfo>? = list
        while let info = next {
            next = info.pointee.ai_next
            guard let address = info.pointee.ai_addr, let text = Self.text(of: address) else { continue }
            if !addresses.contains(text) { addresses.append(text) }
        }
        return addresses
    }

    private static func text(of address: UnsafeMutablePointer<sockaddr>) -> String? {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        let written: UnsafePointer<CChar>?
        switch Int32(address.pointee.sa_family) {
        case AF_INET:
            written = address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { ipv4 in
                var raw = ipv4.pointee.sin_addr
                return inet_ntop(AF_INET, &raw, &buffer, socklen_t(buffer.count))
            }
        case AF_INET6:
            written = address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { ipv6 in
                var raw = ipv6.pointee.sin6_addr
                return inet_ntop(AF_INET6, &raw, &buffer, socklen_t(buffer.count))
            }
        default:
            return nil
        }
        guard written != nil else { return nil }
        let text = buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
        return String(decoding: text, as: UTF8.self)
    }

    /// Whether `host` is an address already (nothing to look up).
    static func isAddress(_ host: String) -> Bool {
        var ipv4 = in_addr()
        var ipv6 = in6_addr()
        return inet_pton(AF_INET, host, &ipv4) == 1 || inet_pton(AF_INET6, host, &ipv6) == 1
    }
}

/// A route's replicas, found by name: each backend given as a host name stands for every address
/// the name has (a Kubernetes headless Service has one per ready pod). Looked up again at each
/// ``refresh(_:)`` (the gateway calls it periodically, and soon after a replica failed to
/// connect): a new address is health-checked and admitted once it answers SERVING; a replica
/// whose address is gone leaves the rotation at once and is closed once its calls in flight have
/// ended. A lookup that fails, or answers nothing, changes nothing (a DNS hiccup must not empty
/// the pool), and the last replicas never leave without a replacement. Backends given as
/// addresses are fixed.
final class ReplicaDiscovery: Sendable {
    typealias MakeReplica = @Sendable (_ host: String, _ port: Int, _ origin: String) -> Replica

    /// The route's backends as configured.
    let backends: [(host: String, port: Int)]
    private let resolver: any AddressResolver
    let makeReplica: MakeReplica
    /// The longest a retired replica's calls may still run (the route's timeout).
    private let drainLimit: Duration
    /// How soon an address that did not answer its health check is checked again, at first.
    private let recheckAfter: Duration
    private let logger: Logger
    /// Addresses that did not answer their health check: when each is checked again (after
    /// `recheckAfter` at first, as a pod starting; then twice as long each time, up to a minute),
    /// and how often it failed.
    private let notReady = Mutex<[String: (failures: Int, next: ContinuousClock.Instant)]>([:])

    init(
        backends: [(host: String, port: Int)],
        resolver: any AddressResolver,
        drainLimit: Duration,
        recheckAfter: Duration,
        logger: Logger,
        makeReplica: @escaping MakeReplica
    ) {
        self.recheckAfter = recheckAfter
        self.backends = backends
        self.resolver = resolver
        self.drainLimit = drainLimit
        self.logger = logger
        self.makeReplica = makeReplica
    }

    /// Whether any backend is a name (else there is nothing to look up).
    var findsByName: Bool { self.backends.contains { !SystemResolver.isAddress($0.host) } }

    /// Looks the names up again and brings `pool`'s replicas in line with what they answer.
    func refresh(_ pool: BackendPool) async {
        var wanted: [String: (host: String, port: Int, origin: String)] = [:]
        // Names whose lookup failed: their replicas stay as they are.
        var unanswered: Set<String> = []
        for backend in self.backends {
            if SystemResolver.isAddress(backend.host) {
                wanted[Replica.address(host: backend.host, port: backend.port)] = (
                    backend.host, backend.port, backend.host
                )
                continue
            }
            do {
                let addresses = try await self.resolver.addresses(of: backend.host)
                if addresses.isEmpty { unanswered.insert(backend.host) }
                for address in addresses {
                    wanted[Replica.address(host: address, port: backend.port)] = (address, backend.port, backend.host)
                }
            } catch {
                unanswered.insert(backend.host)
                self.logger.warning(
                    "could not look up a backend; its replicas stay as they were",
                    metadata: ["backend": "\(backend.host)", "error": "\(error)"]
                )
            }
        }
        let current = pool.replicas
        let known = Set(current.map(\.address))
        let now = ContinuousClock.now
        // Forget what is no longer announced.
        self.notReady.withLock { $0 = $0.filter { wanted[$0.key] != nil } }
        var admitted = 0
        for (address, target) in wanted.sorted(by: { $0.key < $1.key }) where !known.contains(address) {
            if let waiting = self.notReady.withLock({ $0[address] }), now < waiting.next { continue }
            let replica = self.makeReplica(target.host, target.port, target.origin)
            guard await replica.isServing() else {
                await replica.close()
                let failures = self.notReady.withLock { notReady in
                    let failures = (notReady[address]?.failures ?? 0) + 1
                    let wait = min(.seconds(60), self.recheckAfter * (1 << min(failures - 1, 4)))
                    notReady[address] = (failures, .now + wait)
                    return failures
                }
                if failures == 1 {
                    self.logger.notice(
                        "a backend's address does not answer its health check yet; not admitted",
                        metadata: ["backend": "\(address)", "name": "\(target.origin)"]
                    )
                }
                continue
            }
            self.notReady.withLock { _ = $0.removeValue(forKey: address) }
            pool.admit(replica)
            admitted += 1
            self.logger.notice("admitted backend", metadata: ["backend": "\(address)", "name": "\(target.origin)"])
        }
        let leaving = current.filter { wanted[$0.address] == nil && !unanswered.contains($0.origin) }
        // Never the last ones: they may still answer, and an empty pool answers nothing.
        guard !leaving.isEmpty, leaving.count < current.count + admitted else { return }
        pool.retire(leaving, drainLimit: self.drainLimit)
        for replica in leaving {
            self.logger.notice("backend left; closed once its calls end", metadata: ["backend": "\(replica.address)"])
        }
    }
}
