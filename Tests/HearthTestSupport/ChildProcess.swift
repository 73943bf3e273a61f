public import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A child process started with `posix_spawn`: what the tests use instead of Foundation's
/// `Process`.
///
/// In the Foundation of Swift 6.3.1, `Process.run()` looks for the highest open descriptor by
/// copying each /proc/self/fd entry as a whole 256-byte name, past the end of glibc's directory
/// buffer: when an entry ends near an unmapped page, the copy faults (SIGSEGV). The more
/// descriptors the test process holds, the likelier; it brought down a whole CI run
/// (swift-corelibs-foundation #5472, fixed upstream after 6.3.1). This type never lists
/// descriptors: the child closes every one above stderr itself (`closefrom`).
public final class ChildProcess: Sendable {
    /// Where the child's standard input comes from.
    public enum Input {
        case null
        /// The read end of `pipe`; this process keeps the write end.
        case pipe(Pipe)
    }

    /// Where the child's standard output or error goes.
    public enum Output {
        case null
        /// The test process's own (a child holding it open keeps `swift test` waiting: use sparingly).
        case inherit
        /// The write end of `pipe`; this process keeps the read end.
        case pipe(Pipe)
    }

    /// How the child ended.
    public enum Termination: Equatable, Sendable {
        case exited(Int32)
        case signalled(Int32)

        /// The exit status as a shell reports it: the code, or 128 + the signal.
        public var status: Int32 {
            switch self {
            case .exited(let code): code
            case .signalled(let signal): 128 + signal
            }
        }
    }

    public let pid: pid_t
    private let termination = Mutex<Termination?>(nil)

    /// Starts `executable` with `arguments`, in a process group of its own, with every signal at
    /// its default and none blocked. `environment` nil: this process's own.
    public init(
        _ executable: URL,
        _ arguments: [String],
        environment: [String: String]? = nil,
        input: Input = .null,
        output: Output = .null,
        error: Output = .null
    ) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        switch input {
        case .null: posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        case .pipe(let pipe): posix_spawn_file_actions_adddup2(&actions, pipe.fileHandleForReading.fileDescriptor, 0)
        }
        for (target, choice) in [(Int32(1), output), (2, error)] {
            switch choice {
            case .null: posix_spawn_file_actions_addopen(&actions, target, "/dev/null", O_WRONLY, 0)
            case .inherit: break
            case .pipe(let pipe):
                posix_spawn_file_actions_adddup2(&actions, pipe.fileHandleForWriting.fileDescriptor, target)
            }
        }
        try check(Self.addCloseFrom(&actions, 3), "closing inherited descriptors")

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var signals = sigset_t()
        sigfillset(&signals)
        posix_spawnattr_setsigdefault(&attributes, &signals)
        sigemptyset(&signals)
        posix_spawnattr_setsigmask(&attributes, &signals)
        let flags = POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK
        posix_spawnattr_setflags(&attributes, Int16(flags))

        let argv = ([executable.path] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        let pairs = environment.map { $0.map { "\($0.key)=\($0.value)" } }
        let envp = pairs.map { $0.map { strdup($0) } + [nil] }
        defer { for pointer in envp ?? [] { free(pointer) } }
        var pid = pid_t()
        let result =
            if let envp {
                posix_spawn(&pid, executable.path, &actions, &attributes, argv, envp)
            } else {
                posix_spawn(&pid, executable.path, &actions, &attributes, argv, environ)
            }
        try check(result, "starting \(executable.path)")
        self.pid = pid

        // The child's ends belong to the child now: an open copy here would hide its EOF.
        if case .pipe(let pipe) = input { try? pipe.fileHandleForReading.close() }
        for case .pipe(let pipe) in [output, error] { try? pipe.fileHandleForWriting.close() }
    }

    deinit {
        _ = self.poll()
    }

    /// Sends `signal` to the child (unless it has been reaped: its pid may be another's by then).
    public func send(_ signal: Int32) {
        self.termination.withLock { ended in
            if ended == nil { _ = kill(self.pid, signal) }
        }
    }

    public var isRunning: Bool { self.poll() == nil }

    /// Blocks until the child has ended (call it off the task pool: see `offThePool`).
    @discardableResult
    public func waitUntilExit() -> Termination {
        while true {
            if let ended = self.poll() { return ended }
            usleep(2_000)
        }
    }

    /// How the child ended, reaping it the first time; nil while it runs.
    private func poll() -> Termination? {
        self.termination.withLock { ended in
            if let ended { return ended }
            var status: Int32 = 0
            guard waitpid(self.pid, &status, WNOHANG) == self.pid else { return nil }
            let signal = status & 0x7f
            ended = signal == 0 ? .exited((status >> 8) & 0xff) : .signalled(signal)
            return ended
        }
    }

    /// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34 and later), which Swift's Glibc
    /// module does not declare.
    private static let addCloseFrom: @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32 =
        {
            guard let symbol = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np") else {
                fatalError("glibc 2.34 or later is needed: posix_spawn_file_actions_addclosefrom_np is missing")
            }
            return unsafeBitCast(
                symbol,
                to: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32).self
            )
        }()
}

private func check(_ result: Int32, _ doing: String) throws {
    guard result != 0 else { return }
    throw ChildProcessFailed(description: "\(doing): \(String(cString: strerror(result)))")
}

public struct ChildProcessFailed: Error, CustomStringConvertible {
    public var description: String
}
