import Foundation
import HearthTestSupport
import Testing

/// The short version of scripts/faults: the tasks process behind a real gateway is killed with
/// SIGKILL three times while two writers create activities through the gateway. The runs against
/// safety and checkins (`scripts/faults KILLS SECONDS safety|checkins`) are not run here: with
/// the whole suite beside them on two cores, three such runs in a row starved timing-bound wire
/// tests past their time limits; RELIABILITY.md records their figures.
@Suite("Faults (short run)", .serialized, .timeLimit(.minutes(3)))
struct FaultTests {
    @Test(
        "kill -9 of a service under write load loses no acknowledged write; the gateway answers UNAVAILABLE meanwhile"
    )
    func killsUnderLoad() async throws {
        try await Self.faults(["3", "8"])
    }

    /// Runs scripts/faults with `arguments` and checks its verdict and figures.
    private static func faults(_ arguments: [String]) async throws {
        var environment = ProcessInfo.processInfo.environment
        environment["HEARTH_BIN"] = try builtProduct(named: "hearth").path
        // Two writers: enough to have calls in flight at each kill, light enough not to slow
        // the tests that run beside it.
        environment["FAULT_WRITERS"] = "2"
        // A call that should succeed is not failed by a loaded machine's pauses (the gateway's
        // 15 s route timeout still names a hung service DEADLINE_EXCEEDED).
        environment["FAULT_CALL_TIMEOUT"] = "30s"
        let run = try await runProcess(
            URL(fileURLWithPath: "/bin/bash"),
            [repositoryRoot.appendingPathComponent("scripts/faults").path] + arguments,
            environment: environment
        )
        #expect(run.status == 0, "\(run.stdout)\n\(run.stderr)")
        #expect(run.stdout.contains("kills: 3;") && run.stdout.contains("lost: 0"), "\(run.stdout)")
        let service = arguments.count > 2 ? arguments[2] : "tasks"
        #expect(run.stdout.contains("service: \(service);"), "\(run.stdout)")
        let failures = run.stdout.split(separator: "\n").first { $0.hasPrefix("failed calls:") } ?? ""
        #expect(!failures.contains("DEADLINE_EXCEEDED") && !failures.contains("INTERNAL"), "\(failures)")
    }
}
