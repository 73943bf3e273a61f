import ArgumentParser
import Foundation
import HearthStore
import HearthTestSupport
import Testing

@testable import HearthCommandLine
@testable import HearthCommands

@Suite("Secrets: one credential per link, at least 32 bytes")
struct LinkSecretsTests {
    @Test("a process loads the credentials of its own links only; under the data folder missing ones are made, once")
    func ownLinksOnly() async throws {
        try await withScratchFolder("hearth-links") { data in
            let options = try SecretOptions.parse([])
            let checkins = try options.load(
                dataDirectory: data,
                links: ProcessLink.touching(.checkins),
                includingJWT: false
            )
            #expect(
                Set(checkins.links.keys) == [
                    ProcessLink(.gateway, .checkins), ProcessLink(.tasks, .checkins),
                    ProcessLink(.routines, .checkins), ProcessLink(.checkins, .safety),
                ]
            )
            #expect(checkins.jwtSecret == nil)
            #expect(throws: CommandFailure.self) { try checkins.credential(.gateway, to: .safety) }
            // Each link its own, and the same for every process that reads it.
            #expect(Set(checkins.links.values).count == 4)
            let safety = try options.load(
                dataDirectory: data,
                links: ProcessLink.touching(.safety),
                includingJWT: false
            )
            #expect(try safety.credential(.checkins, to: .safety) == checkins.credential(.checkins, to: .safety))
            let files = try FileManager.default.contentsOfDirectory(atPath: data.appendingPathComponent("secrets").path)
            #expect(
                Set(files) == Set((ProcessLink.touching(.checkins) + ProcessLink.touching(.safety)).map(\.fileName))
            )
        }
    }

    @Test(
        "in a folder named by --secrets-dir a missing credential is an error naming the link and the file; none is made"
    )
    func namedFolderMakesNothing() async throws {
        try await withScratchFolder("hearth-links") { folder in
            let options = try SecretOptions.parse(["--secrets-dir", folder.path])
            let link = ProcessLink(.routines, .checkins)
            do {
                _ = try options.credential(of: link, dataDirectory: folder.appendingPathComponent("data"))
                Issue.record("a missing credential was taken")
            } catch let failure as CommandFailure {
                #expect("\(failure)".contains("routines -> checkins"))
                #expect("\(failure)".contains(folder.appendingPathComponent(link.fileName).path))
            }
            #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).isEmpty)
        }
    }

    @Test("a secret of 31 bytes is refused at start, naming where it is and how long it is; one of 32 is taken")
    func minimumLength() async throws {
        try await withScratchFolder("hearth-links") { folder in
            let options = try SecretOptions.parse(["--secrets-dir", folder.path])
            let link = ProcessLink(.gateway, .safety)
            let file = folder.appendingPathComponent(link.fileName)
            // Surrounding whitespace is not part of the secret; multibyte characters count in bytes.
            try " \(String(repeating: "é", count: 15))a\n".write(to: file, atomically: true, encoding: .utf8)
            do {
                _ = try options.credential(of: link, dataDirectory: folder)
                Issue.record("a 31-byte secret was taken")
            } catch let failure as CommandFailure {
                #expect("\(failure)".contains("is 31 bytes; at least 32 are required"))
                #expect("\(failure)".contains(file.path))
            }
            let fit = String(repeating: "é", count: 16)
            try "\(fit)\n".write(to: file, atomically: true, encoding: .utf8)
            #expect(try options.credential(of: link, dataDirectory: folder) == fit)
        }
    }

    @Test("the token secret is held to 32 bytes too: from a flag's file, the environment or DATA/secrets")
    func shortTokenSecret() async throws {
        try await withScratchFolder("hearth-links") { folder in
            let file = folder.appendingPathComponent("jwt.key")
            try "short-secret\n".write(to: file, atomically: true, encoding: .utf8)
            let fallback = folder.appendingPathComponent("secrets/jwt.key")
            #expect(throws: CommandFailure.self) {
                try SecretOptions.secret(environment: nil, file: file.path, fallback: fallback, creating: true)
            }
            #expect(throws: CommandFailure.self) {
                try SecretOptions.secret(environment: "short", file: nil, fallback: fallback, creating: true)
            }
            // One already in the data folder, as a process starting reads it.
            try FileManager.default.createDirectory(
                at: fallback.deletingLastPathComponent(),
                withIntermediateDirectories: true
            )
            try "short-secret\n".write(to: fallback, atomically: true, encoding: .utf8)
            #expect(throws: CommandFailure.self) {
                try SecretOptions.parse([]).load(dataDirectory: folder, links: [], includingJWT: true)
            }
        }
    }

    @Test(
        "two links with one credential are refused at start, naming both files: the first would take the other's calls"
    )
    func sharedCredentialRefused() async throws {
        try await withScratchFolder("hearth-links") { folder in
            let shared = String(repeating: "s", count: 64)
            for link in ProcessLink.touching(.safety) {
                let value =
                    link == ProcessLink(.gateway, .safety) || link == ProcessLink(.checkins, .safety)
                    ? shared : "\(link.fileName)-" + String(repeating: "x", count: 40)
                try "\(value)\n".write(
                    to: folder.appendingPathComponent(link.fileName),
                    atomically: true,
                    encoding: .utf8
                )
            }
            let options = try SecretOptions.parse(["--secrets-dir", folder.path])
            do {
                _ = try options.load(dataDirectory: folder, links: ProcessLink.touching(.safety), includingJWT: false)
                Issue.record("a credential shared by two links was taken")
            } catch let failure as CommandFailure {
                #expect("\(failure)".contains("gateway-safety.key") && "\(failure)".contains("checkins-safety.key"))
                #expect("\(failure)".contains("hold the same credential"))
            }
        }
    }

    @Test("with --secrets-dir the token secret is DIR/jwt.key, never made; operators' tools make no credential")
    func nothingMadeUpForOthers() async throws {
        try await withScratchFolder("hearth-links") { folder in
            let named = folder.appendingPathComponent("named")
            try FileManager.default.createDirectory(at: named, withIntermediateDirectories: true)
            let options = try SecretOptions.parse(["--secrets-dir", named.path])
            #expect(throws: CommandFailure.self) {
                try options.load(dataDirectory: folder, links: [], includingJWT: true)
            }
            let jwt = String(repeating: "j", count: 40)
            try "\(jwt)\n".write(to: named.appendingPathComponent("jwt.key"), atomically: true, encoding: .utf8)
            #expect(try options.load(dataDirectory: folder, links: [], includingJWT: true).jwtSecret == jwt)
            #expect(try options.existingJWTSecret(dataDirectory: folder) == jwt)
            // A tool run where no deployment keeps its secrets: an error, not a key no process has.
            #expect(throws: CommandFailure.self) {
                try SecretOptions.parse([]).credential(of: ProcessLink(.gateway, .safety), dataDirectory: folder)
            }
            #expect(!FileManager.default.fileExists(atPath: folder.appendingPathComponent("secrets").path))
        }
    }

    @Test("HEARTH_INTERNAL_SECRET, the one secret every link shared, is refused at start, saying what replaced it")
    func oldSharedSecretRefused() async throws {
        try await withScratchFolder("hearth-old-secret") { data in
            var environment = ProcessInfo.processInfo.environment
            environment["HEARTH_INTERNAL_SECRET"] = String(repeating: "s", count: 40)
            let started = try await runProcess(
                try builtProduct(named: "hearth"),
                ["serve", "echo", "--port", "0", "--data", data.path],
                environment: environment
            )
            #expect(started.status != 0)
            #expect(started.stderr.contains("HEARTH_INTERNAL_SECRET is no longer read"), "\(started.stderr)")
            #expect(started.stderr.contains("hearth make-secrets"))
            // Refused before anything is made.
            #expect(!FileManager.default.fileExists(atPath: data.appendingPathComponent("secrets").path))
        }
    }

    @Test("make-secrets writes every link's credential and the token secret, owner-only, keeping what is there")
    func makeSecrets() async throws {
        try await withScratchFolder("hearth-links") { folder in
            let out = folder.appendingPathComponent("secrets")
            try MakeSecrets.parse(["--out", out.path]).run()
            let kept = try String(contentsOf: out.appendingPathComponent("tasks-safety.key"), encoding: .utf8)
            try FileManager.default.removeItem(at: out.appendingPathComponent("jwt.key"))
            try MakeSecrets.parse(["--out", out.path]).run()
            let files = try FileManager.default.contentsOfDirectory(atPath: out.path)
            #expect(Set(files) == Set(ProcessLink.all.map(\.fileName) + ["jwt.key"]))
            #expect(try String(contentsOf: out.appendingPathComponent("tasks-safety.key"), encoding: .utf8) == kept)
            for file in files {
                let attributes = try FileManager.default.attributesOfItem(atPath: out.appendingPathComponent(file).path)
                #expect((attributes[.posixPermissions] as? Int) == 0o600, "\(file)")
            }
            // What a deployment made this way starts with.
            let options = try SecretOptions.parse([
                "--secrets-dir", out.path, "--jwt-secret-file", out.appendingPathComponent("jwt.key").path,
            ])
            let all = try options.load(dataDirectory: folder, links: ProcessLink.all, includingJWT: true)
            #expect(Set(all.links.values).count == ProcessLink.all.count && all.jwtSecret?.count == 64)
            // The data key every safety replica shares, made once and then kept.
            let keyFile = folder.appendingPathComponent("data.key")
            try MakeSecrets.parse(["--out", out.path, "--data-key", keyFile.path]).run()
            let ring = try String(contentsOf: keyFile, encoding: .utf8)
            _ = try DataKeys(file: keyFile)
            try MakeSecrets.parse(["--out", out.path, "--data-key", keyFile.path]).run()
            #expect(try String(contentsOf: keyFile, encoding: .utf8) == ring)
        }
    }
}
