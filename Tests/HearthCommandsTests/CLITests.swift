import CheckinsService
import Foundation
import HearthStore
import HearthTestSupport
import Testing

/// The `hearth` binary, as a person runs it.
@Suite("hearth CLI", .timeLimit(.minutes(2)))
struct CLITests {
    /// The deadline of a call meant to be answered: on a loaded 2-core CI machine a process
    /// can wait seconds for its first turn, and the default 2 s of `hearth health` ran out once.
    private static let patience = "60s"

    private func hearth(_ arguments: String...) async throws -> ProcessOutput {
        try await runProcess(try builtProduct(named: "hearth"), arguments)
    }

    @Test("call prints the response as JSON")
    func callSuccess() async throws {
        try await withEchoServer { port in
            let result = try await self.hearth(
                "call",
                "--target",
                "127.0.0.1:\(port)",
                "--timeout",
                Self.patience,
                "--metadata",
                "x-request-id=cli-1",
                "hearth.echo.v1.Echo/Echo",
                #"{"text": "hi", "payload": "AAEC"}"#
            )
            #expect(result.status == 0, "\(result.stderr)")
            let json = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: String]
            #expect(json == ["text": "hi", "payload": "AAEC"])
        }
    }

    @Test("an error prints CODE_NAME: message and each violation, and exits with the code")
    func callErrors() async throws {
        try await withEchoServer { port in
            let target = "127.0.0.1:\(port)"
            let notFound = try await self.hearth(
                "call",
                "--target",
                target,
                "--timeout",
                Self.patience,
                "hearth.echo.v1.Echo/Echo",
                #"{"failWithCode": 5}"#
            )
            #expect(notFound.status == 5)
            #expect(notFound.stderr.hasPrefix("NOT_FOUND: "))

            let invalid = try await self.hearth(
                "call",
                "--target",
                target,
                "--timeout",
                Self.patience,
                "hearth.echo.v1.Echo/Echo",
                #"{"failWithCode": 99}"#
            )
            #expect(invalid.status == 3)
            #expect(invalid.stderr.contains("INVALID_ARGUMENT: "))
            #expect(invalid.stderr.contains("fail_with_code: must be a status code"))

            let deadline = try await self.hearth(
                "call",
                "--target",
                target,
                "--timeout",
                "100ms",
                "hearth.echo.v1.Echo/Echo",
                #"{"sleepMs": 3000}"#
            )
            #expect(deadline.status == 4)
            #expect(deadline.stderr.hasPrefix("DEADLINE_EXCEEDED: "))

            // Refused before anything is sent, as the server would: its code, its exit code.
            let badJSON = try await self.hearth("call", "--target", target, "hearth.echo.v1.Echo/Echo", #"{"nope": 1}"#)
            #expect(badJSON.status == 3)
            #expect(badJSON.stderr.hasPrefix("INVALID_ARGUMENT: the request is not a valid hearth.echo.v1.EchoRequest"))
            #expect(badJSON.stderr.contains("no field 'nope'"), "names the field: \(badJSON.stderr)")
            let badTime = try await self.hearth(
                "call",
                "--target",
                target,
                "hearth.safety.v1.Safety/Pause",
                #"{"until": "tomorrow"}"#
            )
            #expect(badTime.status == 3 && badTime.stderr.contains("RFC 3339"), "\(badTime.stderr)")

            let unknown = try await self.hearth(
                "call",
                "--target",
                target,
                "--timeout",
                Self.patience,
                "hearth.echo.v1.Echo/Nope"
            )
            #expect(unknown.status == 12)
            #expect(unknown.stderr.hasPrefix("UNIMPLEMENTED: unknown method hearth.echo.v1.Echo/Nope"))
            #expect(unknown.stderr.contains("hearth.echo.v1.Echo has: Echo"), "its service's methods, not all 67")
            let nowhere = try await self.hearth(
                "call",
                "--target",
                target,
                "--timeout",
                Self.patience,
                "hearth.nope.v1.Nope/Nope"
            )
            #expect(nowhere.status == 12 && nowhere.stderr.contains("the services are"))
            #expect(nowhere.stderr.contains("hearth.safety.v1.Safety"))

            // A malformed option is a usage error, named as such (it was INTERNAL, exit 13).
            let metadata = try await self.hearth(
                "call",
                "--target",
                target,
                "--metadata",
                "novalue",
                "hearth.echo.v1.Echo/Echo"
            )
            #expect(metadata.status == 64)
            #expect(metadata.stderr.contains("--metadata"), "\(metadata.stderr)")
        }
    }

    @Test("token where no secret is kept: an error naming where it looked, and no secret made up")
    func tokenWithoutSecret() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-token-\(UUID())")
        defer { try? FileManager.default.removeItem(at: folder) }
        let result = try await self.hearth("token", "--user", "olivia", "--data", folder.path)
        #expect(result.status == 1 && result.stdout.isEmpty)
        // Not a command-line mistake: no usage text after it.
        #expect(result.stderr.contains("no token secret") && !result.stderr.contains("Usage:"), "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: folder.path))
    }

    @Test("a refused connection is UNAVAILABLE")
    func unavailable() async throws {
        // Port 1 on loopback: nothing listens there.
        let result = try await self.hearth("call", "--target", "127.0.0.1:1", "hearth.echo.v1.Echo/Echo", "{}")
        #expect(result.status == 14)
        #expect(result.stderr.hasPrefix("UNAVAILABLE: "))
    }

    @Test("health reports SERVING")
    func health() async throws {
        try await withEchoServer { port in
            let result = try await self.hearth("health", "--target", "127.0.0.1:\(port)", "--timeout", Self.patience)
            #expect(result.status == 0)
            #expect(result.stdout.contains("SERVING"))
            let unknown = try await self.hearth(
                "health",
                "--target",
                "127.0.0.1:\(port)",
                "--timeout",
                Self.patience,
                "--service",
                "x.y.Z"
            )
            #expect(unknown.status != 0)
            #expect(unknown.stdout.contains("SERVICE_UNKNOWN"))
        }
    }

    @Test("bench runs a fixed number of calls and writes a JSON report")
    func bench() async throws {
        try await withEchoServer { port in
            let report = FileManager.default.temporaryDirectory.appendingPathComponent("bench-\(UUID()).json")
            defer { try? FileManager.default.removeItem(at: report) }
            let result = try await self.hearth(
                "bench",
                "--target",
                "127.0.0.1:\(port)",
                "--total",
                "500",
                "--concurrency",
                "8",
                "--connections",
                "2",
                "--warmup",
                "0s",
                "--timeout",
                Self.patience,
                "--json",
                report.path,
                "hearth.echo.v1.Echo/Echo",
                #"{"text": "x"}"#
            )
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.stdout.contains("QPS"))
            let json = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: report)) as? [String: Any])
            #expect(json["calls"] as? Int == 500)
            #expect((json["codes"] as? [String: Int])?["OK"] == 500)
            let latency = try #require(json["latency"] as? [String: Int])
            #expect(latency["p50Micros"]! <= latency["p99Micros"]!)

            // Every call refused: the report, and an exit code that says so.
            let refused = try await self.hearth(
                "bench",
                "--target",
                "127.0.0.1:\(port)",
                "--total",
                "20",
                "--warmup",
                "0s",
                "hearth.echo.v1.Echo/Echo",
                #"{"failWithCode": 7}"#
            )
            #expect(refused.status == 1 && refused.stdout.contains("PERMISSION_DENIED 20"), "\(refused.stdout)")
            #expect(refused.stderr.contains("no call succeeded"))
        }
    }

    @Test("bench-checkins makes every check-in a new one and walks every page of a timeline")
    func benchCheckins() async throws {
        try await withServer(services: [try CheckinsService(location: .inMemory)]) { _, port in
            for (scenario, total) in [("create", 45), ("list", 30)] {
                let report = FileManager.default.temporaryDirectory.appendingPathComponent("bench-\(UUID()).json")
                defer { try? FileManager.default.removeItem(at: report) }
                let result = try await self.hearth(
                    "bench-checkins",
                    "--target",
                    "127.0.0.1:\(port)",
                    "--internal-secret",
                    "unused-by-this-server",
                    "--concurrency",
                    "4",
                    "--total",
                    "\(total)",
                    "--warmup",
                    "5",
                    "--json",
                    report.path,
                    scenario
                )
                #expect(result.status == 0, "\(scenario): \(result.stderr)")
                let json = try #require(
                    try JSONSerialization.jsonObject(with: Data(contentsOf: report)) as? [String: Any]
                )
                // Any repeated request id or capture day past the cap would not be all OK.
                #expect((json["codes"] as? [String: Int]) == ["OK": total], "\(scenario)")
            }
        }
    }

    @Test("bench refuses contradictory options")
    func benchValidation() async throws {
        let both = try await self.hearth(
            "bench",
            "--target",
            "127.0.0.1:1",
            "--total",
            "5",
            "--duration",
            "1s",
            "hearth.echo.v1.Echo/Echo"
        )
        #expect(both.status != 0)
        #expect(both.stderr.contains("not both"))
        let zero = try await self.hearth(
            "bench",
            "--target",
            "127.0.0.1:1",
            "--concurrency",
            "0",
            "hearth.echo.v1.Echo/Echo"
        )
        #expect(zero.status != 0)
    }

    @Test("every subcommand explains itself")
    func help() async throws {
        for command in ["up", "serve", "call", "health", "bench"] {
            let result = try await self.hearth(command, "--help")
            #expect(result.status == 0)
            #expect(result.stdout.contains("hearth \(command)"))
            #expect(!result.stdout.contains("DurationArgument"), "durations shown as written: \(command)")
        }
        #expect(try await self.hearth("call", "--help").stdout.contains("5s)"))
    }
}
