import Foundation
import GRDB
import HearthTestSupport
import Testing

/// An acknowledged write survives `kill -9`: a child process commits rows and prints "ack N"
/// after each commit returns; the test kills it mid-stream and reopens the file.
@Suite("Durability", .timeLimit(.minutes(2)))
struct DurabilityTests {
    @Test("every acknowledged row is present after SIGKILL, five times over")
    func killNine() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-kill-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }

        for round in 1...5 {
            let path = folder.appendingPathComponent("round\(round).sqlite").path
            let output = Pipe()
            let process = try ChildProcess(
                try builtProduct(named: "hearth-store-probe"),
                [path, "1000000"],
                output: .pipe(output),
                error: .inherit
            )

            // Read acknowledgements until a round-dependent number, then kill without warning.
            let killAfter = 50 * round
            let reader = output.fileHandleForReading
            let acknowledged = try await offThePool { Self.readAcknowledgements(from: reader, atLeast: killAfter) }
            try #require(acknowledged >= killAfter, "the probe stopped early")
            process.send(SIGKILL)
            let ended = try await offThePool { process.waitUntilExit() }
            #expect(ended == .signalled(SIGKILL))

            let queue = try DatabaseQueue(path: path)
            let (count, maxID) = try await queue.read { db in
                (
                    try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM ack")!,
                    try Int.fetchOne(db, sql: "SELECT MAX(id) FROM ack") ?? 0
                )
            }
            #expect(maxID >= acknowledged, "round \(round): acknowledged \(acknowledged), found up to \(maxID)")
            #expect(count == maxID, "round \(round): rows are contiguous")
            try queue.close()
        }
    }

    /// Reads the probe's "ack N" lines until N reaches `target` or the output ends; the highest N.
    private static func readAcknowledgements(from reader: FileHandle, atLeast target: Int) -> Int {
        var acknowledged = 0
        var pending = Data()
        while acknowledged < target {
            let chunk = reader.availableData
            if chunk.isEmpty { break }
            pending.append(chunk)
            let lines = String(decoding: pending, as: UTF8.self).split(
                separator: "\n",
                omittingEmptySubsequences: false
            )
            pending = Data(lines.last!.utf8)
            for line in lines.dropLast() where line.hasPrefix("ack ") {
                acknowledged = max(acknowledged, Int(line.dropFirst(4))!)
            }
        }
        return acknowledged
    }
}
