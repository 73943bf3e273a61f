import Foundation
import GRDB
import HearthTestSupport
import Testing

/// An acknowledged write survives `kill -9`: a child process commits rows and prints "ack N"
/// after each commit returns; the test kills it mid-stream and reopens the file.
@Suite("Durability", .timeLimit(.minutes(2)))
struct DurabilityTests {
    @Test("every acknowledged row is present after SIGKILL, five times over")
    func killNine() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-kill-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }

        for round in 1...5 {
            let path = folder.appendingPathComponent("round\(round).sqlite").path
            let process = Process()
            process.executableURL = try builtProduct(named: "hearth-store-probe")
            process.arguments = [path, "1000000"]
            let output = Pipe()
            process.standardOutput = output
            try process.run()

            // Read acknowledgements until a round-dependent number, then kill without warning.
            let killAfter = 50 * round
            var acknowledged = 0
            var pending = Data()
            while acknowledged < killAfter {
                let chunk = output.fileHandleForReading.availableData
                try #require(!chunk.isEmpty, "the probe stopped early")
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
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            #expect(process.terminationReason == .uncaughtSignal)

            let queue = try DatabaseQueue(path: path)
            let (count, maxID) = try queue.read { db in
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
}
