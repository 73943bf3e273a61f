import Foundation
import Synchronization

/// One process per store file. Two copies of a service on one data folder would each take
/// the other's messages under way for ones a killed process left (and send them again), and
/// each send every due push: a store file is locked (`flock` on `FILE.lock` beside it) by the
/// first process that opens it, for as long as that process lives. Within a process it may be
/// opened again (tests reopen a store to play a restart).
enum StoreFileLock {
    /// The files this process holds, by canonical path; their lock files stay open until exit.
    private static let held = Mutex<Set<String>>([])

    static func hold(_ path: String) throws {
        let canonical = URL(fileURLWithPath: path).standardizedFileURL.resolvingSymlinksInPath().path
        try Self.held.withLock { held in
            guard !held.contains(canonical) else { return }
            let lockPath = canonical + ".lock"
            let descriptor = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
            guard descriptor >= 0 else {
                throw StoreLocked(
                    path: canonical,
                    holder: "cannot open \(lockPath): \(String(cString: strerror(errno)))"
                )
            }
            guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
                let holder = (try? String(contentsOfFile: lockPath, encoding: .utf8))?
                    .trimmingCharacters(in: .whitespacesAndNewlines)
                close(descriptor)
                throw StoreLocked(path: canonical, holder: holder.map { "held by process \($0)" } ?? "held")
            }
            // Who holds it, for the next one's message.
            let pid = Array("\(getpid())\n".utf8)
            _ = ftruncate(descriptor, 0)
            _ = pid.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, 0) }
            held.insert(canonical)
        }
    }
}

/// Another process has the store file open.
public struct StoreLocked: Error, CustomStringConvertible {
    public var path: String
    public var holder: String
    public var description: String {
        "\(self.path) is in use by another Hearth process (\(self.holder)): one process per store; "
            + "stop the other, or give this one its own --data folder"
    }
}
