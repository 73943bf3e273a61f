import SwiftProtobufPluginLibrary

/// One `rpc` of a service, as the generated code names and documents it.
struct ContractMethod {
    /// `hearth.safety.v1.Safety/GetStatus`
    let name: String
    /// `getStatus`
    let swiftName: String
    let requestType: String
    let responseType: String
    /// The rpc's comment, or its request message's when it has none.
    let documentation: String
    let servicesOnly: Bool
    let requestShape: String
    let responseName: String

    init(_ method: MethodDescriptor, namer: SwiftProtobufNamer) throws {
        self.name = "\(method.service.fullName)/\(method.name)"
        self.swiftName = Self.swiftName(method.name)
        guard isValidSwiftIdentifier(self.swiftName) else {
            throw GenerationError("\(self.name): \(self.swiftName) is not a Swift identifier")
        }
        self.requestType = namer.fullName(message: method.inputType)
        self.responseType = namer.fullName(message: method.outputType)
        let own = method.comment()
        self.documentation = own.isEmpty ? method.inputType.comment() : own
        self.servicesOnly = self.documentation.hasPrefix("Internal:")
        self.requestShape = RequestShape.render(method.inputType)
        self.responseName = method.outputType.fullName
    }

    /// `GetStatus` -> `getStatus`, `URLCheck` -> `urlCheck`; a Swift keyword gets a trailing
    /// underscore (`Import` -> `import_`).
    static func swiftName(_ name: String) -> String {
        let scalars = Array(name)
        var upperRun = scalars.prefix { $0.isUppercase }.count
        // Of "URLCheck", the run "URLC" ends at the "C" that starts the next word.
        if upperRun > 1 && upperRun < scalars.count { upperRun -= 1 }
        let lowered = String(scalars.prefix(upperRun)).lowercased() + String(scalars.dropFirst(upperRun))
        return swiftKeywordsUsedInDeclarations.union(swiftKeywordsUsedInStatements)
            .union(swiftKeywordsUsedInExpressionsAndTypes).contains(lowered) ? lowered + "_" : lowered
    }

    private var docLines: [String] {
        ContractFile.docLines(self.documentation, fallback: "`\(self.name)`.")
    }

    func printDescriptor(to out: inout CodePrinter) {
        out.print(lines: self.docLines)
        out.print(
            "public static let \(self.swiftName) = RPCMethodDescriptor<\(self.requestType), \(self.responseType)>("
        )
        out.withIndentation { out in
            out.print("name: \(ContractFile.literal(self.name)),")
            out.print("servicesOnly: \(self.servicesOnly),")
            out.print("documentation: \(ContractFile.literal(self.documentation)),")
            out.print("requestShape: \(ContractFile.literal(self.requestShape))")
        }
        out.print(")")
    }

    func printRequirement(to out: inout CodePrinter) {
        out.print(lines: self.docLines)
        out.print(
            "func \(self.swiftName)(_ request: \(self.requestType), _ context: RPCContext) async throws -> \(self.responseType)"
        )
    }

    func printClientCall(to out: inout CodePrinter) {
        out.print("")
        out.print(lines: self.docLines)
        out.print(
            "public func \(self.swiftName)(_ request: \(self.requestType) = .init(), options: CallOptions = CallOptions())"
        )
        out.withIndentation { out in out.print("async throws -> \(self.responseType)") }
        out.print("{")
        out.withIndentation { out in
            out.print("try await self.rpc.call(Method.\(self.swiftName), request, options: options)")
        }
        out.print("}")
    }
}

struct GenerationError: Error, CustomStringConvertible {
    let description: String

    init(_ description: String) {
        self.description = description
    }
}
