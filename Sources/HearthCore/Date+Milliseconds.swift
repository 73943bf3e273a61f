public import Foundation

extension Date {
    /// Whole milliseconds since 1970, rounded: the unit stores keep dates in, so page tokens and
    /// timestamps made from a stored date name exactly that date.
    public var millisecondsSince1970: Int64 { Int64((self.timeIntervalSince1970 * 1000).rounded()) }
}
