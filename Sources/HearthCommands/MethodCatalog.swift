import HearthContracts
import HearthRPC

/// Every service any process serves and its methods, as generated from the contracts, so that
/// tools can speak JSON (`hearth call`, `hearth bench`) and explain them (`hearth list`,
/// `hearth describe`).
enum MethodCatalog {
    static let services: [RPCServiceInfo] =
        Contracts.services + [Hearth_Health_V1_Health.info, Hearth_Gateway_V1_Gateway.info]

    static let all: [String: RPCMethodInfo] = Dictionary(
        uniqueKeysWithValues: Self.services.flatMap(\.methods).map { ($0.name, $0) }
    )

    static func method(named name: String) -> RPCMethodInfo? {
        Self.all[name]
    }

    static func service(named name: String) -> RPCServiceInfo? {
        Self.services.first { $0.name == name }
    }

    /// What to say of a service there is not: the services there are.
    static func unknownService(_ name: String) -> String {
        "unknown service \(name): services are named package.Service; the services are "
            + Self.services.map(\.name).sorted().joined(separator: ", ")
    }

    /// What to say of a method no service has: the methods of its service when that exists,
    /// else the services.
    static func unknown(_ name: String) -> String {
        let serviceName = name.split(separator: "/", maxSplits: 1).first.map(String.init) ?? name
        if let service = Self.service(named: serviceName) {
            return "unknown method \(name); \(serviceName) has: "
                + service.methods.map(\.shortName).joined(separator: ", ")
        }
        return "unknown method \(name): methods are named package.Service/Method; the services are "
            + Self.services.map(\.name).sorted().joined(separator: ", ")
    }
}
