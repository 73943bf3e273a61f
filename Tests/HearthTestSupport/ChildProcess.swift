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
        /// Reaped by something else in this process: how it ended is not known.
        case unknown

        /// The exit status as a shell reports it: the code, or 128 + the signal.
        public var status: Int32 {
            switch self {
            case .exited(let code): code
            case .signalled(let signal): 128 + signal
            case .unknown: -1
            }
        }
    }

    public let pid: pid_t
    private let termination = Mutex<Termination?>(nil)

    /// Starts `executable` with `arguments`, in a process group of its own (a Ctrl-C of the test
    /// run does not reach it: the run's end does, see `deinit`), with every signal at its
    /// default and none blocked. `environment` nil: this process's own.
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
        case .null:
            try check(posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0), "opening /dev/null")
        case .pipe(let pipe):
            let end = pipe.fileHandleForReading.fileDescriptor
            try check(posix_spawn_file_actions_adddup2(&actions, end, 0), "passing a pipe")
        }
        for (target, choice) in [(Int32(1), output), (2, error)] {
            switch choice {
            case .null:
                try check(
                    posix_spawn_file_actions_addopen(&actions, target, "/dev/null", O_WRONLY, 0),
                    "opening /dev/null"
                )
            case .inherit: break
            case .pipe(let pipe):
                let end = pipe.fileHandleForWriting.fileDescriptor
                try check(posix_spawn_file_actions_adddup2(&actions, end, target), "passing a pipe")
            }
        }
        guard let addCloseFrom = Self.addCloseFrom else {
            throw ChildProcessFailed(
                description: "glibc 2.34 or later is needed: posix_spawn_file_actions_addclosefrom_np is missing"
            )
        }
        try check(addCloseFrom(&actions, 3), "closing inherited descriptors")

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

    /// A child still running when nothing refers to it any more is killed and reaped: no test
    /// leaves a process or a zombie behind.
    deinit {
        guard self.poll() == nil else { return }
        kill(self.pid, SIGKILL)
        var status: Int32 = 0
        while waitpid(self.pid, &status, 0) == -1, errno == EINTR {}
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
            switch waitpid(self.pid, &status, WNOHANG) {
            case self.pid: break
            case -1 where errno != EINTR:
                ended = .unknown
                return ended
            default: return nil
            }
            let signal = status & 0x7f
            ended = signal == 0 ? .exited((status >> 8) & 0xff) : .signalled(signal)
            return ended
        }
    }

    /// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34 and later), which Swift's Glibc
    /// module does not declare; nil before 2.34.
    private static let addCloseFrom: AddCloseFrom? = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np").map {
        unsafeBitCast($0, to: AddCloseFrom.self)
    }

    private typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
}

private func check(_ result: Int32, _ doing: String) throws {
    guard result != 0 else { return }
    throw ChildProcessFailed(description: "\(doing): \(String(cString: strerror(result)))")
}

public struct ChildProcessFailed: Error, CustomStringConvertible {
    public var description: String
}
