public import Foundation

/// Debian's aiosmtpd (smtp_sink.py) in a child process: every message it accepts lands in a
/// folder as JSON, decoded by Python's email package.
public final class SMTPSink: Sendable {
    public let port: Int
    public let folder: URL
    private let process: Process
    /// The sink's standard input: it exits when this closes, even if the test process dies.
    private let lifeline = Pipe()

    public init(arguments: [String] = []) async throws {
        self.folder = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-smtp-\(UUID())")
        try FileManager.default.createDirectory(at: self.folder, withIntermediateDirectories: true)
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("smtp_sink.py")
        self.process = Process()
        self.process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        self.process.arguments = [script.path, self.folder.path] + arguments
        let output = Pipe()
        self.process.standardOutput = output
        // Not the test's own stderr: a child holding it open would keep `swift test` waiting.
        self.process.standardError = FileHandle.nullDevice
        self.process.standardInput = self.lifeline
        try self.process.run()
        // The first line is "PORT n" once it listens (or nothing, if it failed to start).
        let reader = output.fileHandleForReading
        let line = try await offThePool {
            var line = Data()
            while !line.contains(UInt8(ascii: "\n")) {
                let chunk = reader.availableData
                if chunk.isEmpty { break }
                line.append(chunk)
            }
            return line
        }
        let text = String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard text.hasPrefix("PORT "), let port = Int(text.dropFirst(5)) else {
            self.process.terminate()
            throw SinkFailed()
        }
        self.port = port
    }

    deinit {
        self.stop()
        try? FileManager.default.removeItem(at: self.folder)
    }

    /// Ends the server: its open connections close (the messages it kept stay readable).
    public func stop() {
        // Not waitUntilExit: it spins a run loop that a test's thread does not have.
        try? self.lifeline.fileHandleForWriting.close()
        if self.process.isRunning { self.process.terminate() }
    }

    /// The messages received so far, oldest first.
    public func messages() throws -> [[String: Any]] {
        let files = try FileManager.default.contentsOfDirectory(atPath: self.folder.path)
            .filter { $0.hasSuffix(".json") }
            .sorted()
        return try files.map { name in
            let data = try Data(contentsOf: self.folder.appendingPathComponent(name))
            return try JSONSerialization.jsonObject(with: data) as? [String: Any] ?? [:]
        }
    }
}

/// The SMTP sink did not print its port: python3-aiosmtpd missing (scripts/bootstrap installs it).
public struct SinkFailed: Error {}
