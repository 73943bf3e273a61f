import HearthCore
public import Logging
public import NIOCore
import Synchronization

public typealias ServingStatus = Hearth_Health_V1_HealthCheckResponse.ServingStatus

extension ServingStatus {
    /// As grpc.health.v1 spells it: `SERVING`, `NOT_SERVING`, ...
    public var name: String {
        switch self {
        case .unknown: "UNKNOWN"
        case .serving: "SERVING"
        case .notServing: "NOT_SERVING"
        case .serviceUnknown: "SERVICE_UNKNOWN"
        case .UNRECOGNIZED(let raw): "STATUS_\(raw)"
        }
    }
}

/// Which services a process serves right now; every server answers health checks from it.
/// NOT_SERVING while draining, and for `storageFaultHold` after each failure (of a call, or of
/// the process's background work) because its store could not be written or read.
public final class HealthState: Sendable {
    private let services: Set<String>
    private let serving = Atomic<Bool>(true)
    /// Uptime in nanoseconds until which a storage fault keeps it NOT_SERVING.
    private let faultyUntil = Atomic<Int64>(0)
    private let storageFaultHold: TimeAmount
    private let now: @Sendable () -> NIODeadline

    public init(
        serving services: [String],
        storageFaultHold: TimeAmount = ServerConfiguration.defaultStorageFaultHold,
        now: @escaping @Sendable () -> NIODeadline = { .now() }
    ) {
        self.services = Set(services)
        self.storageFaultHold = max(storageFaultHold, .zero)
        self.now = now
    }

    /// Takes note of `error` when it says the store is at fault (``StorageFailure/isStoreFault``:
    /// a full disk, an I/O error, a read-only or damaged file): NOT_SERVING until
    /// `storageFaultHold` passes without another. The first of a run is logged as a warning.
    public func noteFailure(_ error: any Error, logger: Logger) {
        guard let fault = error as? any StorageFailure, fault.isStoreFault, self.noteStorageFault() else { return }
        let hold = Duration.nanoseconds(self.storageFaultHold.nanoseconds)
        logger.warning(
            "the store is at fault: health checks answer NOT_SERVING until none fails so for \(hold)",
            metadata: ["error": "\(String(reflecting: error))"]
        )
    }

    /// A store fault: NOT_SERVING until `storageFaultHold` passes without another. Returns
    /// whether it was not already so.
    @discardableResult
    func noteStorageFault() -> Bool {
        let now = Self.nanoseconds(self.now())
        let (sum, overflow) = now.addingReportingOverflow(self.storageFaultHold.nanoseconds)
        // The later end wins when two loops note faults at once.
        return self.faultyUntil.max(overflow ? .max : sum, ordering: .relaxed).oldValue <= now
    }

    /// Marks every service of this process SERVING or NOT_SERVING (draining).
    public func setServing(_ serving: Bool) {
        self.serving.store(serving, ordering: .relaxed)
    }

    /// The status of `service`, or of the whole process when it is empty.
    public func status(of service: String) -> ServingStatus {
        guard service.isEmpty || self.services.contains(service) else { return .serviceUnknown }
        guard self.serving.load(ordering: .relaxed) else { return .notServing }
        return Self.nanoseconds(self.now()) < self.faultyUntil.load(ordering: .relaxed) ? .notServing : .serving
    }

    private static func nanoseconds(_ deadline: NIODeadline) -> Int64 {
        Int64(clamping: deadline.uptimeNanoseconds)
    }
}

/// `hearth.health.v1.Health`, served by every process, unauthenticated.
public struct HealthService: Hearth_Health_V1_Health.Handler {
    public static let checkMethod = Hearth_Health_V1_Health.Method.check.name

    public let state: HealthState

    public init(state: HealthState) {
        self.state = state
    }

    public func check(_ request: Hearth_Health_V1_HealthCheckRequest, _ context: RPCContext) async throws
        -> Hearth_Health_V1_HealthCheckResponse
    {
        var response = Hearth_Health_V1_HealthCheckResponse()
        response.status = self.state.status(of: request.service)
        return response
    }
}
