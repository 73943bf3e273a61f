import Foundation
import GRDB
import HearthContracts
import HearthRPC
import HearthStore
import HearthTestSupport
import Logging
import NIOCore
import SwiftProtobuf
import Testing

@testable import HearthCommandLine
@testable import HearthCommands

/// `hearth rotate-data-key` against a safety process as `hearth serve safety` builds it: a real
/// key file, a real SQLite file, calls over TCP going on meanwhile.
@Suite("Data key rotation")
struct DataKeyRotationTests {
    /// What the operator's tool calls safety with: the gateway's link.
    static let credential = Secrets.forTests.links[ProcessLink(.gateway, .safety)]!

    /// Call options acting for `user` (nil: as a service, for no user).
    static func options(_ user: String?) -> CallOptions {
        var metadata = [TrustedMetadata.credential: Self.credential]
        if let user { metadata[TrustedMetadata.user] = user }
        return CallOptions(timeout: .seconds(30), metadata: metadata)
    }

    static func profile(_ name: String, _ email: String) -> Hearth_Safety_V1_UpsertProfileRequest {
        .with {
            $0.name = name
            $0.email = email
            $0.timeZone = "UTC"
            $0.thresholdHours = 24
            $0.preferredLanguage = "en"
        }
    }

    /// The ids of the keys `file`'s personal columns are sealed with.
    static func keyIDs(in file: String) throws -> Set<String> {
        var configuration = Configuration()
        configuration.readonly = true
        let queue = try DatabaseQueue(path: file, configuration: configuration)
        defer { try? queue.close() }
        return try queue.read { db in
            var ids = Set<String>()
            for (table, column) in [
                ("profile", "name"), ("profile", "email"), ("contact", "email"), ("contact", "name"),
            ] {
                ids.formUnion(
                    try String.fetchAll(db, sql: "SELECT DISTINCT hex(substr(\(column), 1, 5)) FROM \(table)")
                )
            }
            return ids
        }
    }

    @Test("a rotation seals every value under a new key while calls go on, and retires the old key")
    func rotation() async throws {
        try await withScratchFolder("hearth-rotation") { data in
            var logger = Logger(label: "test")
            logger.logLevel = .critical
            let settings = try ProcessWiringTests.settings(data: data, logger: logger)
            let keyFile = try #require(settings.dataKeyFile)
            let process = try await makeProcess(.safety, settings: settings)
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await process.server.run() }
                let port = try await process.server.localAddress.port!
                try await withClient(port: port) { rpc in
                    let safety = Hearth_Safety_V1_Safety.Client(rpc)
                    _ = try await safety.upsertProfile(
                        Self.profile("Marguerite Okonkwo", "marguerite@example.org"),
                        options: Self.options("mei")
                    )
                    _ = try await safety.addContact(
                        .with {
                            $0.email = "zebulon@example.net"
                            $0.name = "Zebulon Haversham"
                        },
                        options: Self.options("mei")
                    )
                    #expect(try Self.keyIDs(in: data.appendingPathComponent("safety.sqlite").path) == ["0100000001"])

                    // Profiles written while the rotation runs: each is sealed under one key or
                    // the other, and the rotation leaves none under the old one.
                    let writes = Task {
                        for index in 0..<40 {
                            _ = try await safety.upsertProfile(
                                Self.profile("User \(index)", "user\(index)@example.org"),
                                options: Self.options("user-\(index)")
                            )
                        }
                    }
                    let rotation = DataKeyRotation(file: keyFile, safety: safety, options: Self.options(nil))
                    let outcome = try await rotation.run()
                    try await writes.value
                    #expect(outcome.sealingKey == 2 && outcome.retired == [1])
                    #expect(outcome.resealed >= 4, "the profile's name and email, the contact's address and name")
                    let ring = try DataKeyRing(parsing: String(contentsOf: keyFile, encoding: .utf8), source: "")
                    #expect(ring.ids == [2])
                    #expect(try Self.keyIDs(in: data.appendingPathComponent("safety.sqlite").path) == ["0100000002"])
                    let contacts = try await safety.listContacts(.init(), options: Self.options("mei")).contacts
                    #expect(contacts.map(\.email) == ["zebulon@example.net"])
                    #expect(contacts.map(\.name) == ["Zebulon Haversham"])
                    #expect(try await safety.getProfile(.init(), options: Self.options("user-39")).name == "User 39")

                    // A file without key 2, which every value is sealed with now: refused, and
                    // nothing changes.
                    try DataKeyRotation.replace(keyFile, with: ring.addingKey().retiringOldKeys().text)
                    await #expect {
                        _ = try await safety.reloadDataKeys(.init(), options: Self.options(nil))
                    } throws: { error in
                        (error as? RPCError)?.code == .failedPrecondition
                            && "\(error)".contains("sealed under data key 2")
                    }
                    #expect(
                        try await safety.getProfile(.init(), options: Self.options("mei")).name == "Marguerite Okonkwo"
                    )
                    try DataKeyRotation.replace(keyFile, with: ring.text)
                }
                process.server.beginShutdown()
                try await group.waitForAll()
            }
        }
    }

    @Test("without a safety to ask, the new key stays in the file beside the old one, and nothing is retired")
    func safetyDown() async throws {
        try await withScratchFolder("hearth-rotation") { data in
            let keyFile = data.appendingPathComponent("data.key")
            let ring = DataKeyRing.generate()
            try DataKeyRotation.replace(keyFile, with: ring.text)
            // A port nothing listens on: bound, then closed.
            let port = try await withServer(services: []) { _, port in port }
            try await withClient(port: port) { rpc in
                let rotation = DataKeyRotation(
                    file: keyFile,
                    safety: Hearth_Safety_V1_Safety.Client(rpc),
                    options: CallOptions(timeout: .seconds(5), metadata: [:])
                )
                await #expect(throws: CommandFailure.self) { try await rotation.run() }
            }
            let after = try DataKeyRing(parsing: String(contentsOf: keyFile, encoding: .utf8), source: "")
            #expect(after.ids == [1, 2])
            // A second rotation while one holds the file's lock does not start. The first
            // rotation's lock is released, but a child another test spawns at that moment holds a
            // copy of the descriptor until its exec closes it (flock belongs to the open file):
            // taken with a bounded poll.
            var held: Int32 = -1
            try await eventually("the first rotation's lock is free") {
                held = (try? DataKeyRotation.lock(keyFile)) ?? -1
                return held >= 0
            }
            defer { close(held) }
            try await withClient(port: port) { rpc in
                let rotation = DataKeyRotation(
                    file: keyFile,
                    safety: Hearth_Safety_V1_Safety.Client(rpc),
                    options: CallOptions(timeout: .seconds(5), metadata: [:])
                )
                await #expect {
                    try await rotation.run()
                } throws: { error in
                    "\(error)".contains("another rotation")
                }
            }
            #expect(try String(contentsOf: keyFile, encoding: .utf8) == after.text)
            #expect(after.keys.first == ring.keys.first && after.index == ring.index)
            let mode = try FileManager.default.attributesOfItem(atPath: keyFile.path)[.posixPermissions] as? Int
            #expect(mode == 0o600)
        }
    }
}
