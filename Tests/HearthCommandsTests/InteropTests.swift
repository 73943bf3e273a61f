import Foundation
import HearthTestSupport
import Testing

/// A C client built with protobuf-c speaks the protocol: pipelined requests, out-of-order
/// answers, a failure status, PING/PONG. Missing tools fail the test; scripts/bootstrap installs them.
@Suite("protobuf-c interop", .timeLimit(.minutes(2)))
struct InteropTests {
    @Test("the C client passes all its checks against a real echo server")
    func cClient() async throws {
        let out = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-interop-\(UUID())")
        defer { try? FileManager.default.removeItem(at: out) }
        let build = try await runProcess(
            URL(fileURLWithPath: "/bin/bash"),
            [repositoryRoot.appendingPathComponent("Tests/Interop/build.sh").path, out.path]
        )
        try #require(build.status == 0, "building the C client failed:\n\(build.stdout)\n\(build.stderr)")

        try await withEchoServer { port in
            let run = try await runProcess(out.appendingPathComponent("interop_client"), ["127.0.0.1", "\(port)"])
            #expect(run.status == 0, "\(run.stdout)\n\(run.stderr)")
            #expect(run.stdout.contains(" 0 failed"))
            #expect(!run.stdout.contains("not ok"))
        }
    }
}
