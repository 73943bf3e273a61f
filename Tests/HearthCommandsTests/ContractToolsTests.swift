import Foundation
import HearthCommandLine
import HearthContracts
import HearthRPC
import HearthTestSupport
import Testing

@testable import HearthCommands

/// The generated contracts as tools and other Swift code see them: `hearth list`, `hearth
/// describe`, the catalog, and the library product an app depends on.
@Suite("Generated contracts", .timeLimit(.minutes(2)))
struct ContractToolsTests {
    private func hearth(_ arguments: String...) async throws -> ProcessOutput {
        try await runProcess(try builtProduct(named: "hearth"), arguments)
    }

    /// `service` and `rpc` lines of every `.proto` under proto/hearth: what the catalog must hold.
    private static func declaredMethods() throws -> [String: [String]] {
        var services: [String: [String]] = [:]
        let folder = repositoryRoot.appendingPathComponent("proto/hearth")
        for case let file as URL in FileManager.default.enumerator(at: folder, includingPropertiesForKeys: nil)!
        where file.pathExtension == "proto" {
            let lines = try String(contentsOf: file, encoding: .utf8).split(separator: "\n")
            guard let package = lines.first(where: { $0.hasPrefix("package ") })?.dropFirst(8).dropLast() else {
                continue
            }
            var service: String?
            for line in lines {
                if line.hasPrefix("service ") { service = "\(package).\(line.split(separator: " ")[1])" }
                let trimmed = line.trimmingCharacters(in: .whitespaces)
                if let service, trimmed.hasPrefix("rpc ") {
                    let name = trimmed.dropFirst(4).prefix { $0 != "(" }
                    services[service, default: []].append("\(service)/\(name)")
                }
            }
        }
        return services
    }

    @Test("the catalog holds every service and method the .proto files declare, in their order")
    func catalogMatchesProtos() throws {
        let declared = try Self.declaredMethods()
        #expect(declared.count == 9)
        let generated = Dictionary(
            uniqueKeysWithValues: MethodCatalog.services.map { ($0.name, $0.methods.map(\.name)) }
        )
        #expect(generated == declared)
        // Each method's documentation is its rpc comment: none is left without one.
        let undocumented = MethodCatalog.services.flatMap(\.methods).filter(\.documentation.isEmpty).map(\.name)
        #expect(undocumented.isEmpty, "\(undocumented)")
    }

    @Test("every method but health's has a process that serves it by default")
    func everyMethodHasAProcess() {
        for method in Contracts.services.flatMap(\.methods) {
            #expect(ProcessName.owner(of: method.name) != nil, "\(method.name)")
        }
    }

    @Test("hearth list prints every service, one a line, health included")
    func listServices() async throws {
        let result = try await self.hearth("list")
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.split(separator: "\n").map(String.init) == MethodCatalog.services.map(\.name).sorted())
        #expect(result.stdout.contains("hearth.health.v1.Health\n"))
    }

    @Test("hearth list SERVICE prints its methods, those only services may call marked")
    func listMethods() async throws {
        let result = try await self.hearth("list", "hearth.safety.v1.Safety")
        #expect(result.status == 0, "\(result.stderr)")
        let lines = result.stdout.split(separator: "\n").map(String.init)
        #expect(lines.count == 19)
        #expect(lines.first == "hearth.safety.v1.Safety/UpsertProfile")
        #expect(lines.contains("hearth.safety.v1.Safety/ForwardActivity (services only)"))
        #expect(lines.contains("hearth.safety.v1.Safety/AnswerContactLink (services only)"))
        #expect(lines.filter { $0.hasSuffix("(services only)") }.count == 6)
        #expect(lines.contains("hearth.safety.v1.Safety/ReloadDataKeys (services only)"))
    }

    @Test("hearth describe METHOD prints its comment and its request's JSON shape with the contract's comments")
    func describeMethod() async throws {
        let result = try await self.hearth("describe", "hearth.tasks.v1.Tasks/CreateTask")
        #expect(result.status == 0, "\(result.stderr)")
        let text = result.stdout
        #expect(text.hasPrefix("hearth.tasks.v1.Tasks/CreateTask\n// Creates a task"))
        #expect(text.contains("request hearth.tasks.v1.CreateTaskRequest:\n{\n"))
        // A field's comment, a repeated message with a oneof of an enum and a string, and the
        // response's type.
        #expect(text.contains("  // 1-200 characters after trimming.\n  \"title\": string,\n"))
        #expect(text.contains("\"checkInTimes\": [ {\n"))
        #expect(text.contains("\"preset\": \"TIME_OF_DAY_UNSPECIFIED\" | \"MORNING\""))
        #expect(text.contains("// one of time: preset, custom"))
        #expect(text.contains("}, ... ],\n"))
        #expect(text.hasSuffix("response hearth.tasks.v1.CreateTaskResponse\n"))

        let pause = try await self.hearth("describe", "hearth.safety.v1.Safety/Pause")
        #expect(pause.stdout.contains(#""until": "2026-11-27T09:00:00Z" (RFC 3339 timestamp)"#))
        let rule = try await self.hearth("describe", "hearth.tasks.v1.Activities/SetLocationRule")
        #expect(rule.stdout.contains(#""cooldownMinutes": integer,  // optional: left out means unset"#))
    }

    @Test("hearth describe SERVICE prints its methods as rpc lines under their comments")
    func describeService() async throws {
        let result = try await self.hearth("describe", "hearth.checkins.v1.Checkins")
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("service hearth.checkins.v1.Checkins {\n"))
        #expect(
            result.stdout.contains(
                "  rpc GetNestRole(hearth.checkins.v1.GetNestRoleRequest) returns (hearth.checkins.v1.GetNestRoleResponse);"
            )
        )
        #expect(result.stdout.contains("  // Internal: "))
    }

    @Test("an unknown service or method fails with exit status 1 and says what there is")
    func unknownNames() async throws {
        let method = try await self.hearth("describe", "hearth.safety.v1.Safety/Nope")
        #expect(method.status == 1)
        #expect(method.stderr.contains("hearth.safety.v1.Safety has: UpsertProfile, GetProfile"))
        let service = try await self.hearth("list", "hearth.nope.v1.Nope")
        #expect(service.status == 1)
        #expect(service.stderr.contains("the services are hearth.account.v1.Account, hearth.checkins.v1.Checkins"))
    }

    @Test("the HearthContracts library needs no store, libvips or service to build")
    func libraryStandsAlone() async throws {
        let swift = try #require(
            ProcessInfo.processInfo.environment["PATH"]?.split(separator: ":")
                .map { URL(fileURLWithPath: String($0)).appendingPathComponent("swift") }
                .first { FileManager.default.isExecutableFile(atPath: $0.path) }
        )
        // The root manifest alone, in a scratch folder of its own: the one this test runs from is
        // locked by `swift test`.
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("dump-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: scratch) }
        let dumped = try await runProcess(
            swift,
            ["package", "--package-path", repositoryRoot.path, "--scratch-path", scratch.path, "dump-package"]
        )
        #expect(dumped.status == 0, "\(dumped.stderr)")
        let manifest = try #require(
            try JSONSerialization.jsonObject(with: Data(dumped.stdout.utf8)) as? [String: Any]
        )
        let targets = try #require(manifest["targets"] as? [[String: Any]])
        // Each target's dependencies: {"byName": [name, condition]}, {"target": [...]} or
        // {"product": [name, package, ...]}.
        var dependencies: [String: [(kind: String, name: String)]] = [:]
        for target in targets {
            guard let name = target["name"] as? String else { continue }
            dependencies[name] = (target["dependencies"] as? [[String: [Any]]] ?? []).compactMap { entry in
                guard let (kind, values) = entry.first, let first = values.first as? String else { return nil }
                return (kind, first)
            }
        }
        var reached: Set<String> = []
        var products: Set<String> = []
        var pending = ["HearthContracts"]
        while let name = pending.popLast() {
            guard reached.insert(name).inserted else { continue }
            for dependency in dependencies[name] ?? [] {
                if dependency.kind == "product" {
                    products.insert(dependency.name)
                } else {
                    pending.append(dependency.name)
                }
            }
        }
        #expect(reached == ["HearthContracts", "HearthRPC", "HearthCore", "AllocatorTuning"])
        #expect(!products.contains { $0.hasPrefix("GRDB") })
        #expect(
            products.isSubset(of: [
                "SwiftProtobuf", "NIOCore", "NIOPosix", "NIOHTTP1", "Logging", "ServiceLifecycle", "Histogram",
            ])
        )
    }
}
