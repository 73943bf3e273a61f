import ArgumentParser
import HearthCommandLine
import HearthRPC
import SwiftProtobuf

/// `hearth list [SERVICE]`: the services, or one service's methods (like `grpcurl list`).
struct ListCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "List the services, or the methods of one.",
        discussion: """
              hearth list
              hearth list hearth.safety.v1.Safety
            Methods marked (services only) are refused by the gateway: other services call them.
            """
    )

    @Argument(help: "A service, package.Service. Default: every service.")
    var service: String?

    func run() throws {
        guard let name = self.service else {
            for service in MethodCatalog.services.sorted(by: { $0.name < $1.name }) { print(service.name) }
            return
        }
        guard let service = MethodCatalog.service(named: name) else {
            throw CommandFailure(MethodCatalog.unknownService(name))
        }
        for method in service.methods {
            print(method.name + (method.servicesOnly ? " (services only)" : ""))
        }
    }
}

/// `hearth describe SERVICE|METHOD`: what a service's methods take and return, or a method's
/// request as JSON with the contract's comments (like `grpcurl describe`).
struct DescribeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "describe",
        abstract: "Describe a service, or a method and the JSON its request takes.",
        discussion: """
              hearth describe hearth.safety.v1.Safety
              hearth describe hearth.safety.v1.Safety/AddContact
            """
    )

    @Argument(help: "A service (package.Service) or a method (package.Service/Method).")
    var name: String

    func run() throws {
        if let service = MethodCatalog.service(named: self.name) {
            print(Self.describe(service))
        } else if let method = MethodCatalog.method(named: self.name) {
            print(Self.describe(method))
        } else {
            throw CommandFailure(MethodCatalog.unknown(self.name))
        }
    }

    static func describe(_ service: RPCServiceInfo) -> String {
        var lines = Self.comment(service.documentation, indent: "")
        lines.append("service \(service.name) {")
        for (index, method) in service.methods.enumerated() {
            if index > 0 { lines.append("") }
            lines += Self.comment(method.documentation, indent: "  ")
            lines.append(
                "  rpc \(method.shortName)(\(method.requestType.protoMessageName))"
                    + " returns (\(method.responseType.protoMessageName));"
            )
        }
        lines.append("}")
        return lines.joined(separator: "\n")
    }

    static func describe(_ method: RPCMethodInfo) -> String {
        var lines = [method.name]
        lines += Self.comment(method.documentation, indent: "")
        if method.servicesOnly {
            lines.append("Services only: the gateway refuses it to clients.")
        }
        lines.append("")
        lines.append("request \(method.requestType.protoMessageName):")
        lines.append(method.requestShape)
        lines.append("")
        lines.append("response \(method.responseType.protoMessageName)")
        return lines.joined(separator: "\n")
    }

    /// `text` as `//` lines.
    private static func comment(_ text: String, indent: String) -> [String] {
        guard !text.isEmpty else { return [] }
        return text.split(separator: "\n", omittingEmptySubsequences: false).map { line in
            line.isEmpty ? indent + "//" : indent + "// " + line
        }
    }
}
