public import Foundation

/// Debian's aiosmtpd (smtp_sink.py) in a child process: every message it accepts lands in a
/// folder as JSON, decoded by Python's email package.
public final class SMTPSink: Sendable {
    public let port: Int
    public let folder: URL
    private let process: ChildProcess
    /// The sink's standard input: it exits when this closes, even if the test process dies.
    private let lifeline = Pipe()

    public init(arguments: [String] = []) async throws {
        self.folder = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-smtp-\(UUID())")
        try FileManager.default.createDirectory(at: self.folder, withIntermediateDirectories: true)
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("smtp_sink.py")
        let output = Pipe()
        // Not the test's own stderr: a child holding it open would keep `swift test` waiting.
        self.process = try ChildProcess(
            URL(fileURLWithPath: "/usr/bin/python3"),
            [script.path, self.folder.path] + arguments,
            input: .pipe(self.lifeline),
            output: .pipe(output)
        )
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
            self.process.send(SIGTERM)
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
        try? self.lifeline.fileHandleForWriting.close()
        self.process.send(SIGTERM)
    }

    /// How many messages it has received so far (without reading them).
    public func messageCount() throws -> Int {
        try FileManager.default.contentsOfDirectory(atPath: self.folder.path).filter { $0.hasSuffix(".json") }.count
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
