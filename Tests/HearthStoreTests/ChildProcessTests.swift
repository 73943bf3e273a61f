import Foundation
import HearthTestSupport
import Testing

/// The tests' own way to start a child process (Foundation's `Process.run()` crashes in Swift
/// 6.3.1 when the test process holds many descriptors).
@Suite("Child processes")
struct ChildProcessTests {
    static let python = URL(fileURLWithPath: "/usr/bin/python3")

    @Test("a child inherits no descriptor above stderr, however many this process holds")
    func noInheritedDescriptors() async throws {
        // Enough open descriptors that /proc/self/fd no longer fits one 32 KiB directory read
        // (what made Foundation's listing of it fault), within the soft limit, leaving the tests
        // beside this one room.
        var limit = rlimit()
        try #require(getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0)
        let count = min(1_500, Int(limit.rlim_cur) / 2)
        let held = (0..<count).map { _ in open("/dev/null", O_RDONLY) }
        defer { for descriptor in held { close(descriptor) } }
        try #require(held.allSatisfy { $0 >= 0 })
        let listed = try await runProcess(
            Self.python,
            ["-c", "import os; print(' '.join(sorted(os.listdir('/proc/self/fd'), key=int)))"]
        )
        // 3 is the descriptor listdir itself opened.
        #expect(listed.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "0 1 2 3", "\(listed.stderr)")
        #expect(listed.status == 0)
    }

    @Test("output, error, environment and exit code come back; a killed child reports its signal")
    func outputAndTermination() async throws {
        let ran = try await runProcess(
            Self.python,
            ["-c", "import os, sys; print(os.environ['GREETING']); print('oops', file=sys.stderr); sys.exit(3)"],
            environment: ["GREETING": "hello"]
        )
        #expect(ran.stdout == "hello\n")
        #expect(ran.stderr == "oops\n")
        #expect(ran.status == 3)

        let sleeper = try ChildProcess(Self.python, ["-c", "import time; time.sleep(60)"])
        #expect(sleeper.isRunning)
        sleeper.send(SIGKILL)
        let ended = try await offThePool { sleeper.waitUntilExit() }
        #expect(ended == .signalled(SIGKILL))
        #expect(ended.status == 128 + SIGKILL)
        #expect(!sleeper.isRunning)
    }

    @Test("a program that cannot start is an error naming it")
    func missingProgram() throws {
        #expect {
            _ = try ChildProcess(URL(fileURLWithPath: "/nonexistent/program"), [])
        } throws: { error in
            "\(error)".contains("/nonexistent/program")
        }
    }
}
