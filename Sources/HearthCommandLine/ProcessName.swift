import ArgumentParser

/// The processes `hearth` can run. Each service issue adds its own.
public enum ProcessName: String, CaseIterable, ExpressibleByArgument, Sendable {
    case gateway
    case checkins
    case tasks
    case safety
    case routines
    case echo

    /// The loopback port `hearth up` gives it (DESIGN.md's table; echo after the services).
    public var defaultPort: Int {
        switch self {
        case .gateway: 7100
        case .checkins: 7101
        case .tasks: 7102
        case .safety: 7103
        case .routines: 7104
        case .echo: 7105
        }
    }

    /// The RPC packages it serves; the gateway routes these to it.
    public var packages: [String] {
        switch self {
        case .gateway: ["hearth.gateway."]
        case .checkins: ["hearth.checkins."]
        case .tasks: ["hearth.tasks.", "hearth.account."]
        case .safety: ["hearth.safety."]
        case .routines: ["hearth.routines."]
        case .echo: ["hearth.echo."]
        }
    }

    /// The processes behind the gateway.
    public static var services: [ProcessName] { Self.allCases.filter { $0 != .gateway } }

    /// Which process serves `method` (`package.Service/Method`).
    public static func owner(of method: String) -> ProcessName? {
        Self.allCases.first { process in process.packages.contains { method.hasPrefix($0) } }
    }
}
