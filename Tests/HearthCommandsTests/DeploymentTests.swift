import ArgumentParser
import Foundation
import HearthTestSupport
import Testing

@testable import HearthCommandLine
@testable import HearthCommands

/// docker-compose.yml, checked by Compose v1 (which validates without an engine) and parsed.
@Suite("Deployment files")
struct DeploymentTests {
    private func tool(_ name: String) throws -> URL {
        let url = URL(fileURLWithPath: "/usr/bin/\(name)")
        try #require(
            FileManager.default.isExecutableFile(atPath: url.path),
            "\(name) is missing: run scripts/bootstrap (Debian package docker-compose)"
        )
        return url
    }

    /// The value after `flag` in `command`; nil when the flag is not there.
    private func value(of flag: String, in command: [String]) -> String? {
        command.firstIndex(of: flag).flatMap { command.indices.contains($0 + 1) ? command[$0 + 1] : nil }
    }

    @Test(
        "docker-compose.yml is valid, runs each process in its own container with its own volume, with flags serve takes"
    )
    func compose() async throws {
        let file = repositoryRoot.appendingPathComponent("docker-compose.yml").path
        let valid = try await runProcess(try self.tool("docker-compose"), ["-f", file, "config", "-q"])
        #expect(valid.status == 0, "\(valid.stderr)")

        // Compose v1 is Python with PyYAML: use the same interpreter to turn the file into JSON.
        let json = try await runProcess(
            try self.tool("python3"),
            ["-c", "import json, sys, yaml; json.dump(yaml.safe_load(open(sys.argv[1])), sys.stdout)", file]
        )
        try #require(json.status == 0, "\(json.stderr)")
        let root = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        let services = try #require(root["services"] as? [String: [String: Any]])
        let volumes = try #require(root["volumes"] as? [String: Any?])
        // A Compose secret for each link, and the token secret, each from its own file.
        let secrets = try #require(root["secrets"] as? [String: [String: Any]])
        var secretFiles: [String: String] = [:]
        for (name, secret) in secrets {
            secretFiles[name] = try #require(secret["file"] as? String, "secret \(name) names its file")
        }
        let allFiles = (ProcessLink.all.map(\.fileName) + ["jwt.key"]).map { "./secrets/\($0)" }
        #expect(Set(secretFiles.values) == Set(allFiles))

        #expect(Set(services.keys) == Set(ProcessName.allCases.map(\.rawValue)))
        var usedVolumes: Set<String> = []
        for process in ProcessName.allCases {
            let service = try #require(services[process.rawValue])
            let command = try #require(service["command"] as? [String])
            #expect(Array(command.prefix(2)) == ["serve", process.rawValue])
            // Flags `hearth serve` takes, its production refusals passed: the gateway on 0.0.0.0
            // says TLS or --plaintext, safety says SMTP or --mail-to-log.
            #expect(throws: Never.self, "\(process)") { try Serve.parse(Array(command.dropFirst())) }
            #expect(command.contains("--data") && command[command.firstIndex(of: "--data")! + 1] == "/data")
            #expect(command.contains("\(process.defaultPort)"))
            let mounts = try #require(service["volumes"] as? [String])
            let volume = try #require(
                mounts.first { $0.hasSuffix(":/data") }?.split(separator: ":").first.map(String.init)
            )
            #expect(volumes.keys.contains(volume), "\(volume) is a named volume")
            #expect(usedVolumes.insert(volume).inserted, "\(process) has a volume of its own")
            #expect(service["healthcheck"] != nil)
            #expect(service["restart"] != nil)

            // The credentials of its own links and no others (the gateway also the token
            // secret), each mounted under the name of its file in the folder --secrets-dir names:
            // a process taken over holds no credential of a link it is not an end of.
            #expect(self.value(of: "--secrets-dir", in: command) == "/run/secrets/hearth", "\(process)")
            let secretMounts = try #require(
                service["secrets"] as? [[String: String]],
                "\(process) mounts its secrets with the long syntax (source, target)"
            )
            var mounted: [String] = []
            for mount in secretMounts {
                let source = mount["source"] ?? ""
                let target = mount["target"] ?? ""
                #expect(target.hasPrefix("hearth/"), "\(process): \(target) is in /run/secrets/hearth")
                let name = String(target.dropFirst("hearth/".count))
                #expect(
                    secretFiles[source] == "./secrets/\(name)",
                    "\(process): \(target) is mounted from the file of that name"
                )
                mounted.append(name)
            }
            let links = ProcessLink.touching(process).map(\.fileName)
            let expected = process == .gateway ? links + ["jwt.key"] : links
            #expect(mounted.sorted() == expected.sorted(), "\(process)")
            if process == .gateway {
                #expect(self.value(of: "--jwt-secret-file", in: command) == "/run/secrets/hearth/jwt.key")
            }
        }
    }
}
