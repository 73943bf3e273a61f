import ArgumentParser
import CheckinsService
import Foundation
import HearthGateway
import HearthRPC
import Logging
import Testing

@testable import HearthCommandLine
@testable import HearthCommands

@Suite("Command-line arguments")
struct OptionsTests {
    @Test(
        "durations",
        arguments: [
            ("250ms", Duration.milliseconds(250)), ("5s", .seconds(5)), ("1.5s", .milliseconds(1500)),
            ("2m", .seconds(120)), ("1h", .seconds(3600)), ("0s", .zero),
        ]
    )
    func durations(text: String, expected: Duration) {
        #expect(DurationArgument(argument: text)?.duration == expected)
    }

    @Test("bad durations are refused", arguments: ["", "5", "s", "-1s", "5x", "abcms"])
    func badDurations(text: String) {
        #expect(DurationArgument(argument: text) == nil)
    }

    @Test("targets")
    func targets() {
        #expect(Target(argument: "127.0.0.1:7105")?.description == "127.0.0.1:7105")
        #expect(Target(argument: ":7105")?.host == "127.0.0.1")
        #expect(Target(argument: "[::1]:80")?.host == "::1")
        #expect(Target(argument: "localhost") == nil)
        #expect(Target(argument: "h:0") == nil)
        #expect(Target(argument: "h:65536") == nil)
    }

    @Test("hearth up wires the gateway and the services' peers to the address they listen on")
    func upWiring() throws {
        for (host, reached) in [
            ("127.0.0.1", "127.0.0.1"), ("127.0.0.2", "127.0.0.2"), ("0.0.0.0", "127.0.0.1"), ("::", "::1"),
        ] {
            let (gateway, peers) = try Up.wiring(listeningOn: host)
            let routes = try gateway.configuration(secrets: .forTests).routes
            #expect(routes.count == ProcessName.services.flatMap(\.packages).count)
            for process in ProcessName.services {
                for package in process.packages {
                    #expect(routes[package]?.map { "\($0.host):\($0.port)" } == ["\(reached):\(process.defaultPort)"])
                }
            }
            #expect(peers.checkins.host == reached && peers.safety.host == reached)
            #expect(peers.safety.port == ProcessName.safety.defaultPort)
        }
    }

    @Test("secrets: a file named by a flag wins over the environment, which wins over the data folder's file")
    func secretPrecedence() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-secrets-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let named = folder.appendingPathComponent("named.key")
        let fromFile = "from-file-" + String(repeating: "f", count: 22)
        let fromEnvironment = "from-env-" + String(repeating: "e", count: 23)
        try "\(fromFile)\n".write(to: named, atomically: true, encoding: .utf8)
        let fallback = folder.appendingPathComponent("secrets/jwt.key")
        let secret = { (environment: String?, file: String?, creating: Bool) in
            try SecretOptions.secret(environment: environment, file: file, fallback: fallback, creating: creating)
        }
        #expect(try secret(fromEnvironment, named.path, false) == fromFile)
        #expect(try secret(fromEnvironment, nil, false) == fromEnvironment)
        #expect(try secret(nil, nil, false) == nil, "nothing made up when not asked to")
        #expect(!FileManager.default.fileExists(atPath: fallback.path))
        let made = try #require(try secret("", nil, true))
        let readBack = try secret(nil, nil, false)
        #expect(made.count == 64 && readBack == made, "made once, then read back")
    }

    @Test(
        "the data folder's secret is never replaced: an unreadable one is an error; processes starting together share one"
    )
    func secretNeverReplaced() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-secrets-\(UUID())")
        try FileManager.default.createDirectory(
            at: folder.appendingPathComponent("secrets"),
            withIntermediateDirectories: true
        )
        defer { try? FileManager.default.removeItem(at: folder) }
        let fallback = folder.appendingPathComponent("secrets/jwt.key")
        let secret = { try SecretOptions.secret(environment: nil, file: nil, fallback: fallback, creating: true) }

        // An operator's binary key (not UTF-8): refused, and left as it was.
        let binary = Data([0xff, 0xfe, 0x00, 0x81, 0xc3, 0x28])
        try binary.write(to: fallback)
        #expect(throws: (any Error).self) { try secret() }
        #expect(try Data(contentsOf: fallback) == binary)
        // An empty one too.
        try Data().write(to: fallback)
        #expect(throws: (any Error).self) { try secret() }
        #expect(try Data(contentsOf: fallback).isEmpty)

        // A new folder, eight processes' worth of first starts at once: one key for all.
        try FileManager.default.removeItem(at: fallback)
        let keys = try await withThrowingTaskGroup(of: String?.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    try SecretOptions.secret(environment: nil, file: nil, fallback: fallback, creating: true)
                }
            }
            return try await group.reduce(into: Set<String?>()) { $0.insert($1) }
        }
        let key = try #require(try secret())
        #expect(keys == [key] && key.count == 64)
        let mode = try FileManager.default.attributesOfItem(atPath: fallback.path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
    }

    @Test("TLS flags are the gateway's: given to a service they are refused, not left out")
    func tlsOnlyOnTheGateway() throws {
        let tls = ["--tls-cert", "cert.pem", "--tls-key", "key.pem"]
        #expect(throws: (any Error).self) { try Serve.parse(["echo"] + tls) }
        #expect(throws: Never.self) { try Serve.parse(["gateway"] + tls) }
        #expect(throws: Never.self) { try Serve.parse(["echo"]) }
    }

    @Test("a push webhook must be an https URL with a host; http only when the operator allows it")
    func pushWebhook() throws {
        #expect(throws: Never.self) { try PushOptions.parse(["--push-webhook", "https://push.example.com/hook"]) }
        #expect(throws: (any Error).self) { try PushOptions.parse(["--push-webhook", "http://127.0.0.1:8080/push"]) }
        #expect(throws: Never.self) {
            try PushOptions.parse(["--push-webhook", "http://127.0.0.1:8080/push", "--allow-http-webhook"])
        }
        #expect(throws: (any Error).self) { try PushOptions.parse(["--allow-http-webhook"]) }
        for bad in ["example.com/hook", "ftp://example.com/x", "https://", "http:///path", "https:///path", ""] {
            #expect(throws: (any Error).self, "\(bad)") {
                try PushOptions.parse(["--push-webhook", bad, "--allow-http-webhook"])
            }
        }
    }

    @Test("metadata pairs")
    func metadata() throws {
        #expect(try parseMetadata(["X-Request-Id=a=b", "k="]) == ["x-request-id": "a=b", "k": ""])
        #expect(throws: (any Error).self) { try parseMetadata(["novalue"]) }
        #expect(throws: (any Error).self) { try parseMetadata(["=v"]) }
    }

    @Test("every method's package has a process to call by default")
    func methodOwners() {
        #expect(ProcessName.owner(of: "hearth.echo.v1.Echo/Echo") == .echo)
        #expect(ProcessName.owner(of: "hearth.nope.v1.Nope/Nope") == nil)
    }

    @Test(
        "checkins, and the gateway in front of it, take frames a 10 MiB photo fits in; the rest, and the gateway's other routes, keep 4 MiB"
    )
    func frameLimits() throws {
        #expect(CheckinsService.maxFrameSize > 10 * 1024 * 1024)
        #expect(ProcessName.checkins.maxFrameSize == CheckinsService.maxFrameSize)
        #expect(ProcessName.gateway.maxFrameSize == CheckinsService.maxFrameSize)
        for process in [ProcessName.tasks, .safety, .routines, .echo] {
            #expect(process.maxFrameSize == ServerConfiguration.defaultMaxFrameSize)
        }
        // What the gateway sends each route's replicas: no more than they take.
        let gateway = try GatewaySettings.parse([]).configuration(secrets: .forTests)
        #expect(gateway.maxRequestFrameSizes["hearth.checkins."] == CheckinsService.maxFrameSize)
        #expect(gateway.maxRequestFrameSizes["hearth.tasks."] == ServerConfiguration.defaultMaxFrameSize)
        #expect(gateway.maxFrameSize == CheckinsService.maxFrameSize, "answers: a photo")
        let routes = try GatewaySettings.parse([
            "--backend", "hearth.checkins.v1.=10.0.0.5:7101", "--backend", "hearth.safety.=10.0.0.6:7200",
        ]).configuration(secrets: .forTests)
        #expect(
            routes.maxRequestFrameSizes == [
                "hearth.checkins.v1.": CheckinsService.maxFrameSize,
                "hearth.safety.": ServerConfiguration.defaultMaxFrameSize,
            ]
        )
        // A route no Hearth process serves has no link, so no credential to call it with.
        #expect(throws: ValidationError.self) {
            try GatewaySettings.parse(["--backend", "hearth.other.=10.0.0.6:7200"]).configuration(secrets: .forTests)
        }
        #expect(ProcessName.largestFrameSize == CheckinsService.maxFrameSize)
    }

    @Test("the gateway refuses clients exactly the methods whose contracts say Internal")
    func servicesOnlyMethods() throws {
        // Each message whose comment begins "Internal:" is the request of one such method.
        var servicesOnly: Set<String> = []
        let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../proto/hearth").standardized
        for case let file as URL in FileManager.default.enumerator(at: folder, includingPropertiesForKeys: nil)!
        where file.pathExtension == "proto" {
            let lines = try String(contentsOf: file, encoding: .utf8).split(separator: "\n").map(String.init)
            let package = lines.first { $0.hasPrefix("package ") }?.dropFirst(8).dropLast()
            let service = lines.first { $0.hasPrefix("service ") }?.split(separator: " ")[1]
            var inInternalComment = false
            for line in lines {
                if line.hasPrefix("// Internal:") { inInternalComment = true }
                guard inInternalComment, !line.hasPrefix("//") else { continue }
                inInternalComment = false
                guard line.hasPrefix("message "), let package, let service else { continue }
                let request = "(\(line.split(separator: " ")[1]))"
                let rpc = try #require(lines.first { $0.contains("rpc ") && $0.contains(request) })
                let name = rpc.split(separator: "rpc ")[1].split(separator: "(")[0]
                servicesOnly.insert("\(package).\(service)/\(name)")
            }
        }
        #expect(servicesOnly.count == 12, "\(servicesOnly)")
        let gateway = try GatewaySettings.parse([]).configuration(secrets: .forTests)
        #expect(gateway.internalMethods == servicesOnly)
    }

    @Test("the gateway's per-user limits: 50 a second, bursts of 100, 100 in flight unless told; at least 1 in flight")
    func gatewayLimits() throws {
        let defaults = try GatewaySettings.parse([]).configuration(secrets: .forTests).rateLimit
        #expect(defaults.perSecond == 50 && defaults.burst == 100 && defaults.maxInFlight == 100)
        let one = try GatewaySettings.parse(["--max-in-flight", "1"]).configuration(secrets: .forTests)
        #expect(one.rateLimit.maxInFlight == 1)
        #expect(throws: ValidationError.self) {
            try GatewaySettings.parse(["--max-in-flight", "0"]).configuration(secrets: .forTests)
        }
    }

    @Test(
        "the gateway's edge: 256 connections an address and 10 s to authenticate unless told; at least 1 and more than 0"
    )
    func gatewayEdge() throws {
        let defaults = try GatewaySettings.parse([])
        #expect(defaults.maxConnectionsPerAddress == 256)
        #expect(defaults.authenticationWindow.duration == .seconds(10))
        let one = try GatewaySettings.parse(["--max-connections-per-address", "1", "--authentication-window", "1ms"])
        #expect(throws: Never.self) { try one.configuration(secrets: .forTests) }
        #expect(throws: ValidationError.self) {
            try GatewaySettings.parse(["--max-connections-per-address", "0"]).configuration(secrets: .forTests)
        }
        #expect(throws: ValidationError.self) {
            try GatewaySettings.parse(["--authentication-window", "0s"]).configuration(secrets: .forTests)
        }
    }

    @Test(
        "64 KiB frames until authenticated unless told; from 16 KiB (what clients assume) to the gateway's frame limit"
    )
    func gatewayFramesBeforeAuthentication() throws {
        #expect(try GatewaySettings.parse([]).frameKibBeforeAuthentication == 64)
        #expect(
            GatewaySettings.minimumFrameKibBeforeAuthentication * 1024 == RPCClient.gatewayFrameSizeBeforeAuthentication
        )
        let largest = ProcessName.gateway.maxFrameSize / 1024
        for (kib, valid) in [(15, false), (16, true), (largest, true), (largest + 1, false)] {
            let settings = try GatewaySettings.parse(["--frame-kib-before-authentication", "\(kib)"])
            if valid {
                #expect(throws: Never.self) { try settings.configuration(secrets: .forTests) }
            } else {
                #expect(throws: ValidationError.self, "\(kib) KiB") { try settings.configuration(secrets: .forTests) }
            }
        }
    }

    @Test("one address may open 50 connections a second in bursts of 256 unless told; more than 0 and at least 1")
    func gatewayAcceptRate() throws {
        let defaults = try GatewaySettings.parse([])
        #expect(defaults.acceptRatePerAddress == 50 && defaults.acceptBurstPerAddress == 256)
        let slow = try GatewaySettings.parse(["--accept-rate-per-address", "0.1", "--accept-burst-per-address", "1"])
        #expect(throws: Never.self) { try slow.configuration(secrets: .forTests) }
        for arguments in [["--accept-rate-per-address", "0"], ["--accept-burst-per-address", "0.5"]] {
            #expect(throws: ValidationError.self) {
                try GatewaySettings.parse(arguments).configuration(secrets: .forTests)
            }
        }
    }

    @Test("one address may hold 128 MiB of requests still arriving unless told; from one photo upload to 512 MiB")
    func gatewayPartialFrameShare() throws {
        #expect(try GatewaySettings.parse([]).partialFrameMibPerAddress == 128)
        let photo = (ProcessName.gateway.maxFrameSize + GatewaySettings.mib - 1) / GatewaySettings.mib
        #expect(photo == 11)
        for (mib, valid) in [(photo - 1, false), (photo, true), (512, true), (513, false)] {
            let settings = try GatewaySettings.parse(["--partial-frame-mib-per-address", "\(mib)"])
            if valid {
                #expect(throws: Never.self) { try settings.configuration(secrets: .forTests) }
            } else {
                #expect(throws: ValidationError.self) { try settings.configuration(secrets: .forTests) }
            }
        }
    }

    @Test(
        "the gateway's token checks: --jwt-issuer, --jwt-audience, --jwt-max-lifetime (24h unless told), --accept-hs256"
    )
    func gatewayTokenPolicy() throws {
        #expect(try GatewaySettings.parse([]).tokenPolicy() == TokenPolicy(maxLifetime: 24 * 3600))
        let given = try GatewaySettings.parse([
            "--jwt-issuer", "https://id.example.com", "--jwt-audience", "hearth-api", "--jwt-max-lifetime", "1h",
            "--eddsa-public-key", "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo", "--accept-hs256",
        ]).tokenPolicy()
        #expect(
            given
                == TokenPolicy(
                    issuer: "https://id.example.com",
                    audience: "hearth-api",
                    maxLifetime: 3600,
                    acceptsHS256WithEdDSA: true
                )
        )
        #expect(try GatewaySettings.parse(["--jwt-max-lifetime", "90s"]).tokenPolicy().maxLifetime == 90)
        #expect(throws: (any Error).self, "a duration takes its unit") {
            try GatewaySettings.parse(["--jwt-max-lifetime", "3600"])
        }
        for (arguments, message) in [
            (["--jwt-max-lifetime", "0s"], "--jwt-max-lifetime must be longer than 0"),
            (["--accept-hs256"], "--accept-hs256 is for a gateway given --eddsa-public-key"),
            (["--jwt-issuer", ""], "must not be empty"),
            (["--jwt-audience", ""], "must not be empty"),
        ] {
            let error = #expect(throws: ValidationError.self, "\(arguments)") {
                try GatewaySettings.parse(arguments).tokenPolicy()
            }
            #expect(error?.message.contains(message) == true, "\(arguments): \(String(describing: error))")
        }
    }

    @Test("a gateway beyond loopback without TLS refuses to start unless --plaintext; loopback needs nothing")
    func gatewayExposure() throws {
        for host in ["127.0.0.1", "127.0.0.2", "127.255.255.254", "::1", "localhost", "LocalHost", "::ffff:127.0.0.1"] {
            #expect(isLoopback(host), "\(host)")
            #expect(throws: Never.self, "\(host)") { try Serve.parse(["gateway", "--host", host]) }
        }
        for host in [
            "0.0.0.0", "::", "10.0.0.5", "192.168.1.2", "128.0.0.1", "126.255.255.255", "::2", "2001:db8::1",
            "::ffff:10.0.0.1", "gateway.example.com", "localhost.example.com",
        ] {
            #expect(!isLoopback(host), "\(host)")
            do {
                _ = try Serve.parse(["gateway", "--host", host])
                Issue.record("\(host): a gateway without TLS started")
            } catch {
                let message = Serve.message(for: error)
                #expect(
                    message.contains("without TLS: give --tls-cert and --tls-key, or --plaintext"),
                    "\(host): \(message)"
                )
            }
            #expect(throws: Never.self, "\(host)") { try Serve.parse(["gateway", "--host", host, "--plaintext"]) }
            #expect(throws: Never.self, "\(host)") {
                try Serve.parse(["gateway", "--host", host, "--tls-cert", "cert.pem", "--tls-key", "key.pem"])
            }
        }
        #expect(throws: (any Error).self, "TLS and plaintext at once") {
            try Serve.parse(["gateway", "--plaintext", "--tls-cert", "cert.pem", "--tls-key", "key.pem"])
        }
        // A service has no TLS: --plaintext, like --tls-cert, is the gateway's.
        #expect(throws: Never.self) { try Serve.parse(["echo", "--host", "0.0.0.0"]) }
        #expect(throws: (any Error).self) { try Serve.parse(["echo", "--plaintext"]) }
        // hearth up's gateway is held to the same.
        #expect(throws: Never.self) { try Up.parse([]) }
        #expect(throws: (any Error).self) { try Up.parse(["--host", "0.0.0.0"]) }
        #expect(throws: Never.self) { try Up.parse(["--host", "0.0.0.0", "--plaintext"]) }
    }

    @Test("safety without an SMTP server refuses to start unless --mail-to-log; not both; hearth up logs them itself")
    func safetyMailDestination() throws {
        do {
            _ = try Serve.parse(["safety"])
            Issue.record("safety started with its emails going nowhere")
        } catch {
            let message = Serve.message(for: error)
            #expect(message.contains("give --smtp-host") && message.contains("or --mail-to-log"), "\(message)")
        }
        #expect(throws: Never.self) { try Serve.parse(["safety", "--mail-to-log"]) }
        #expect(throws: Never.self) { try Serve.parse(["safety", "--smtp-host", "smtp.example.com"]) }
        #expect(throws: (any Error).self, "SMTP and the log at once") {
            try Serve.parse(["safety", "--smtp-host", "smtp.example.com", "--mail-to-log"])
        }
        #expect(throws: Never.self, "the other processes send no email") { try Serve.parse(["tasks"]) }

        // Whatever builds safety's mail must have been told where it goes, not only `hearth serve`.
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        #expect(throws: ValidationError.self) { _ = try MailOptions.parse([]).transport(logger: logger) }
        #expect(throws: Never.self) { _ = try MailOptions.parse(["--mail-to-log"]).transport(logger: logger) }
        let up = try Up.parse([])
        #expect(up.mail.mailToLog, "hearth up without SMTP: to the log")
        #expect(throws: Never.self) { _ = try up.mail.transport(logger: logger) }
        let upWithSMTP = try Up.parse(["--smtp-host", "smtp.example.com"]).mail
        #expect(!upWithSMTP.mailToLog && upWithSMTP.smtpHost == "smtp.example.com")
    }
}
