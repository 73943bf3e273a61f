import ArgumentParser
import Testing

@testable import HearthCommandLine
@testable import HearthCommands

/// Command-line limits pinned at their boundary: the last value accepted and the first refused.
@Suite("Command-line boundaries")
struct CommandBoundaryTests {
    @Test("--role-cache: 30s is accepted (and is the default); anything longer is refused when parsing")
    func roleCacheBoundary() throws {
        #expect(try PeerOptions.parse([]).roleCache.duration == .seconds(30))
        #expect(try PeerOptions.parse(["--role-cache", "30s"]).roleCache.duration == .seconds(30))
        for over in ["30.001s", "31s", "1m"] {
            do {
                _ = try PeerOptions.parse(["--role-cache", over])
                Issue.record("--role-cache \(over) was accepted")
            } catch {
                let message = PeerOptions.message(for: error)
                #expect(message.contains("--role-cache is at most 30s"), "\(over): \(message)")
            }
        }
        // The same through the command that takes it.
        #expect(throws: Never.self) { try Serve.parse(["routines", "--role-cache", "30s"]) }
        #expect(throws: (any Error).self) { try Serve.parse(["routines", "--role-cache", "30.001s"]) }
    }
}
