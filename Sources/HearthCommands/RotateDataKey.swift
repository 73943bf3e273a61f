import ArgumentParser
import Foundation
import HearthCommandLine
import HearthContracts
import HearthCore
import HearthRPC
import HearthStore

/// `hearth rotate-data-key`: a new key seals safety's personal data, and the old keys go, while
/// safety runs.
struct RotateDataKey: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rotate-data-key",
        abstract: "Seal safety's personal data under a new key while it runs, and retire the old keys.",
        discussion: """
            Adds a key to the data key file safety was started with, asks the running safety
            process to read the file again and seal every name and address under the new key,
            then removes the older keys from the file. Safety refuses a file without a key some
            value is still sealed with, so nothing is left that cannot be read.
              hearth rotate-data-key
              hearth rotate-data-key --data-key-file /etc/hearth/data.key --safety 10.0.0.5:7103 \\
                --secrets-dir /etc/hearth/secrets    # holds gateway-safety.key
            """
    )

    @Option(help: "Folder holding the default secrets.")
    var data = "./data"

    @Option(help: "Where the safety process listens.")
    var safety = Target(host: "127.0.0.1", port: ProcessName.safety.defaultPort)

    @Option(help: "How long safety may take to seal everything again.")
    var timeout = DurationArgument(.seconds(600))

    @OptionGroup var secrets: SecretOptions

    func run() async throws {
        let dataDirectory = URL(fileURLWithPath: self.data)
        let file =
            self.secrets.dataKeyFile.map { URL(fileURLWithPath: $0) }
            ?? dataDirectory.appendingPathComponent("secrets/data.key")
        guard FileManager.default.fileExists(atPath: file.path) else {
            throw CommandFailure("\(file.path) does not exist: name the file safety was started with (--data-key-file)")
        }
        // The operator calls safety as the gateway does.
        let credential = try self.secrets.credential(of: ProcessLink(.gateway, .safety), dataDirectory: dataDirectory)
        let client = RPCClient(configuration: .init(host: self.safety.host, port: self.safety.port))
        let result: Result<DataKeyRotation.Outcome, any Error>
        do {
            let rotation = DataKeyRotation(
                file: file,
                safety: Hearth_Safety_V1_Safety.Client(client),
                options: CallOptions(
                    timeout: self.timeout.duration,
                    metadata: [TrustedMetadata.credential: credential]
                )
            )
            result = .success(try await rotation.run())
        } catch {
            result = .failure(error)
        }
        await client.close()
        let outcome = try result.get()
        print(
            "data key \(outcome.sealingKey) seals safety's personal data; "
                + "retired: \(outcome.retired.map(String.init).joined(separator: ", ")); "
                + "\(outcome.resealed) values sealed again"
        )
    }
}

/// The steps of a rotation, against the data key file and the safety process that reads it.
struct DataKeyRotation {
    var file: URL
    var safety: Hearth_Safety_V1_Safety.Client
    var options: CallOptions

    struct Outcome: Equatable {
        var sealingKey: UInt32
        var retired: [UInt32]
        var resealed: UInt64
    }

    func run() async throws -> Outcome {
        // One rotation at a time: two would each add their own key under the same id.
        let lock = try Self.lock(self.file)
        defer { close(lock) }
        let before = try DataKeyRing(parsing: String(contentsOf: self.file, encoding: .utf8), source: self.file.path)
        let added = before.addingKey()
        try Self.replace(self.file, with: added.text)
        let sealed: Hearth_Safety_V1_ReloadDataKeysResponse
        do {
            sealed = try await self.safety.reloadDataKeys(.init(), options: self.options)
        } catch {
            // Safety may have sealed with the new key before failing: the file keeps it.
            throw CommandFailure(
                "key \(added.sealing.id) was added to \(self.file.path), but safety did not finish sealing with it "
                    + "(\(error)); the older keys are kept. Run this again once safety is up."
            )
        }
        guard sealed.keyIds == added.ids else {
            try Self.replace(self.file, with: before.text)
            throw CommandFailure(
                "safety at the address given reads another data key file (keys \(sealed.keyIds)); "
                    + "\(self.file.path) is as it was"
            )
        }
        let retired = added.retiringOldKeys()
        try Self.replace(self.file, with: retired.text)
        let checked: Hearth_Safety_V1_ReloadDataKeysResponse
        do {
            checked = try await self.safety.reloadDataKeys(.init(), options: self.options)
        } catch {
            try Self.replace(self.file, with: added.text)
            throw CommandFailure("safety refused the file without the older keys (\(error)); they are kept")
        }
        return Outcome(
            sealingKey: added.sealing.id,
            retired: before.ids,
            resealed: sealed.resealed + checked.resealed
        )
    }

    /// Holds `<file>.lock` exclusively until the descriptor answered is closed.
    /// - Throws: ``CommandFailure`` when another rotation holds it.
    static func lock(_ file: URL) throws -> Int32 {
        let path = file.path + ".lock"
        let descriptor = open(path, O_CREAT | O_RDWR | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw CommandFailure("cannot open \(path): \(String(cString: strerror(errno)))")
        }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            close(descriptor)
            throw CommandFailure("another rotation of \(file.path) is under way (it holds \(path))")
        }
        return descriptor
    }

    /// Writes `text` to a new file beside `url`, readable by the owner only, and renames it over
    /// `url`: a reader sees the old file or the new one, never half of one.
    static func replace(_ url: URL, with text: String) throws {
        let draft = url.deletingLastPathComponent().appendingPathComponent(".\(url.lastPathComponent).\(UUID())")
        guard
            FileManager.default.createFile(
                atPath: draft.path,
                contents: Data(text.utf8),
                attributes: [.posixPermissions: 0o600]
            )
        else { throw CommandFailure("cannot write \(draft.path)") }
        guard rename(draft.path, url.path) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(draft.path)
            throw CommandFailure("cannot replace \(url.path): \(reason)")
        }
    }
}
