public import Foundation
public import GRDB

extension Row {
    /// The date in `column`, read as ``StoredDate`` reads it: GRDB's own text with integer
    /// arithmetic, not through GRDB's `Date` decoding, which builds `DateComponents` and asks a
    /// calendar for every date (the larger part of a list's reading).
    public func date(_ column: String) throws -> Date {
        try self.decode(StoredDate.self, forColumn: column).date
    }

    /// As ``date(_:)``, nil for NULL.
    public func optionalDate(_ column: String) throws -> Date? {
        try self.decode(StoredDate?.self, forColumn: column)?.date
    }
}
