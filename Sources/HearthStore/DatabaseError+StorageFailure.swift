import GRDB
public import HearthCore

extension DatabaseError: StorageFailure {
    /// A full disk, an I/O error, a lock held past the busy timeout, memory: the storage's
    /// state, not the request's. (Not a read-only or vanished file: that lasts until someone
    /// acts, and stays INTERNAL.)
    public var mayPass: Bool {
        switch self.resultCode {
        case .SQLITE_FULL, .SQLITE_IOERR, .SQLITE_BUSY, .SQLITE_LOCKED, .SQLITE_NOMEM:
            true
        default:
            false
        }
    }

    public var isStoreFault: Bool {
        switch self.resultCode {
        case .SQLITE_FULL, .SQLITE_IOERR, .SQLITE_READONLY, .SQLITE_CORRUPT, .SQLITE_NOTADB, .SQLITE_CANTOPEN,
            .SQLITE_PERM:
            true
        default:
            false
        }
    }
}
