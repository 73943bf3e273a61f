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
public final class HealthState: Sendable {
    private let services: Set<String>
    private let serving = Atomic<Bool>(true)

    public init(serving services: [String]) {
        self.services = Set(services)
    }

    /// Marks every service of this process SERVING or NOT_SERVING (draining).
    public func setServing(_ serving: Bool) {
        self.serving.store(serving, ordering: .relaxed)
    }

    /// The status of `service`, or of the whole process when it is empty.
    public func status(of service: String) -> ServingStatus {
        guard service.isEmpty || self.services.contains(service) else { return .serviceUnknown }
        return self.serving.load(ordering: .relaxed) ? .serving : .notServing
    }
}

/// `hearth.health.v1.Health`, served by every process, unauthenticated.
public struct HealthService: RPCService {
    public static let checkMethod = "hearth.health.v1.Health/Check"

    public let state: HealthState
    public var serviceName: String { "hearth.health.v1.Health" }

    public init(state: HealthState) {
        self.state = state
    }

    public var methods: [RPCMethod] {
        [
            .unary(Self.checkMethod) { (request: Hearth_Health_V1_HealthCheckRequest, _) in
                var response = Hearth_Health_V1_HealthCheckResponse()
                response.status = self.state.status(of: request.service)
                return response
            }
        ]
    }
}
