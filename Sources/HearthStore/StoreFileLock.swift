import Foundation
import Synchronization

/// One process per store file. Two copies of a service on one data folder would each take
/// the other's messages under way for ones a killed process left (and send them again), and
/// each send every due push: a store file is locked (`flock` on `FILE.lock` beside it) by the
/// first process that opens it, for as long as that process lives. A process that finds it
/// held waits a while (the one it replaces may still be draining); within a process it may be
/// opened again (tests reopen a store to play a restart).
enum StoreFileLock {
    /// The files this process holds, by canonical path; their lock files stay open until exit.
    private static let held = Mutex<Set<String>>([])

    /// Takes the lock of the store at `path` (whose folder exists), waiting up to `wait` for
    /// another process to let it go.
    static func hold(_ path: String, wait: TimeInterval) throws {
        let file = URL(fileURLWithPath: path)
        guard let folder = realpath(file.deletingLastPathComponent().path, nil) else {
            throw StoreLockFailed(path: path, reason: String(cString: strerror(errno)))
        }
        let canonical = String(cString: folder) + "/" + file.lastPathComponent
        free(folder)
        if Self.held.withLock({ $0.contains(canonical) }) { return }
        let lockPath = canonical + ".lock"
        let descriptor = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw StoreLockFailed(path: lockPath, reason: String(cString: strerror(errno)))
        }
        // Waited for without holding `held`: other stores of this process open meanwhile.
        let giveUp = Date().addingTimeInterval(wait)
        var told = false
        while flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
            // This process took it meanwhile, through another descriptor.
            if Self.held.withLock({ $0.contains(canonical) }) {
                close(descriptor)
                return
            }
            guard Date() < giveUp else {
                let holder = (try? String(contentsOfFile: lockPath, encoding: .utf8))?
                    .trimmingCharacters(in: .whitespacesAndNewlines)
                close(descriptor)
                throw StoreLocked(path: canonical, holder: holder.map { "process \($0)" } ?? "another process")
            }
            if !told {
                told = true
                FileHandle.standardError.write(
                    Data("\(canonical) is held by another process; waiting up to \(Int(wait)) s for it to stop\n".utf8)
                )
            }
            usleep(100_000)
        }
        // Who holds it, for the next one's message.
        let pid = Array("\(getpid())\n".utf8)
        _ = ftruncate(descriptor, 0)
        _ = pid.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, 0) }
        Self.held.withLock { _ = $0.insert(canonical) }
    }
}

/// Another process has the store file open.
public struct StoreLocked: Error, CustomStringConvertible {
    public var path: String
    public var holder: String
    public var description: String {
        "\(self.path) is in use by \(self.holder): one process per store; "
            + "stop the other, or give this one its own --data folder"
    }
}

/// The store's lock file could not be made (a folder this process may not write, say).
public struct StoreLockFailed: Error, CustomStringConvertible {
    public var path: String
    public var reason: String
    public var description: String { "cannot open \(self.path): \(self.reason)" }
}
