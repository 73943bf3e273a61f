import Foundation
import HearthRPC
import Logging
import NIOCore
import Synchronization

/// When a replica that keeps refusing connections is taken out of rotation, and for how long.
public struct EjectionPolicy: Sendable {
    /// Consecutive connection failures that eject a replica.
    public var consecutiveFailures: Int
    /// How long an ejected replica stays out before a health check may readmit it.
    public var duration: Duration

    public init(consecutiveFailures: Int = 5, duration: Duration = .seconds(30)) {
        self.consecutiveFailures = consecutiveFailures
        self.duration = duration
    }
}

/// One backend replica: its connection pool, and its standing with the gateway.
final class Replica: Sendable {
    private struct Standing {
        var consecutiveFailures = 0
        var ejectedUntil: ContinuousClock.Instant?
    }

    let address: String
    let client: RPCClient
    private let policy: EjectionPolicy
    private let standing = Mutex(Standing())

    init(host: String, port: Int, connections: Int, policy: EjectionPolicy) {
        self.address = "\(host):\(port)"
        // Short backoff: a restarted backend should be used again within about a second.
        self.client = RPCClient(
            configuration: .init(
                host: host,
                port: port,
                connections: connections,
                connectTimeout: .seconds(2),
                backoff: Backoff(initial: .milliseconds(50), maximum: .seconds(1))
            )
        )
        self.policy = policy
    }

    var isEjected: Bool { self.standing.withLock { $0.ejectedUntil != nil } }

    /// Whether the ejection is over and a health check may readmit it.
    func isDueForReadmission(now: ContinuousClock.Instant) -> Bool {
        self.standing.withLock { standing in standing.ejectedUntil.map { $0 <= now } ?? false }
    }

    func recordSuccess() {
        self.standing.withLock { $0.consecutiveFailures = 0 }
    }

    /// Counts a failure to connect; returns true when it ejects the replica.
    func recordConnectionFailure(now: ContinuousClock.Instant) -> Bool {
        self.standing.withLock { standing in
            standing.consecutiveFailures += 1
            guard standing.ejectedUntil == nil, standing.consecutiveFailures >= self.policy.consecutiveFailures else {
                return false
            }
            standing.ejectedUntil = now + self.policy.duration
            return true
        }
    }

    func readmit() {
        self.standing.withLock { $0 = Standing() }
    }
}

/// The replicas of one service, used round-robin. A call that certainly never reached a
/// replica (no connection) is tried once more on another; one that may have reached it is
/// never retried.
final class BackendPool: Sendable {
    /// The method prefix this pool serves, e.g. `hearth.echo.`.
    let prefix: String
    let replicas: [Replica]
    private let turn = Atomic<Int>(0)
    private let logger: Logger

    init(prefix: String, replicas: [Replica], logger: Logger) {
        self.prefix = prefix
        self.replicas = replicas
        self.logger = logger
    }

    func call(_ method: String, payload: Data, options: CallOptions) async throws -> Data {
        var tried: [Int] = []
        while tried.count < 2, let index = self.pick(excluding: tried) {
            tried.append(index)
            let replica = self.replicas[index]
            do {
                let response = try await replica.client.callRaw(method, payload: payload, options: options)
                replica.recordSuccess()
                return response
            } catch let error as RPCError where error.wasNeverSent {
                if replica.recordConnectionFailure(now: .now) {
                    self.logger.warning("ejecting backend", metadata: ["backend": "\(replica.address)"])
                }
                self.logger.debug(
                    "backend unreachable",
                    metadata: ["backend": "\(replica.address)", "error": "\(error)"]
                )
            } catch let error as RPCError {
                replica.recordSuccess()  // it answered: the connection works
                throw error
            }
        }
        throw RPCError(
            .unavailable,
            "\(self.prefix.dropLast()) is unavailable; try again shortly",
            retryAfter: .milliseconds(200)
        )
    }

    /// The next replica in rotation that is not ejected and not tried yet. When every replica
    /// is ejected, ejection is ignored (as Envoy's panic threshold does): trying them is no worse
    /// than refusing every call, and it finds a restarted backend at once.
    private func pick(excluding tried: [Int]) -> Int? {
        let count = self.replicas.count
        let start = self.turn.wrappingAdd(1, ordering: .relaxed).oldValue & Int.max
        let panic = self.replicas.allSatisfy(\.isEjected)
        for offset in 0..<count {
            let index = (start + offset) % count
            if !tried.contains(index), panic || !self.replicas[index].isEjected { return index }
        }
        return nil
    }

    /// Health-checks each ejected replica whose ejection is over; readmits those SERVING.
    func probeEjected() async {
        let now = ContinuousClock.now
        for replica in self.replicas where replica.isDueForReadmission(now: now) {
            let status = try? await HealthClient(client: replica.client).check(
                options: CallOptions(timeout: .seconds(1))
            )
            if status == .serving {
                replica.readmit()
                self.logger.notice("readmitted backend", metadata: ["backend": "\(replica.address)"])
            }
        }
    }

    func close() async {
        for replica in self.replicas { await replica.client.close() }
    }
}
