import GRDB
public import HearthCore

extension DatabaseError: StorageFailure {
    /// A full disk, an I/O error, a lock held past the busy timeout, memory or a file that
    /// cannot be opened: the storage's state, not the request's.
    public var mayPass: Bool {
        switch self.resultCode {
        case .SQLITE_FULL, .SQLITE_IOERR, .SQLITE_BUSY, .SQLITE_LOCKED, .SQLITE_NOMEM, .SQLITE_CANTOPEN,
            .SQLITE_READONLY:
            true
        default:
            false
        }
    }
}
