public import Foundation
public import HearthCore
public import PostgresNIO

/// This process's clock is too far from the database's for leases that processes on several
/// machines compare: a process whose clock runs ahead takes claims that have not lapsed.
public struct ClockSkew: Error, CustomStringConvertible {
    /// How far the process's clock is ahead of the database's (negative: behind), in seconds.
    public let offset: TimeInterval
    public let tolerance: TimeInterval

    public var description: String {
        let direction = self.offset > 0 ? "ahead of" : "behind"
        return String(
            format:
                "this machine's clock is %.1f s %@ the database's; processes sharing it need clocks within %.0f s (run NTP)",
            abs(self.offset),
            direction,
            self.tolerance
        )
    }
}

extension PostgresConnection {
    /// How far `clock` is ahead of the database server's clock (negative: behind), the round
    /// trip's middle taken as the moment the server read its own.
    public func clockOffset(of clock: any WallClock) async throws -> TimeInterval {
        let sent = clock.now()
        let server = try await self.first("SELECT clock_timestamp()") { try $0.date(0) }
        let received = clock.now()
        guard let server else { return 0 }
        return sent.addingTimeInterval(received.timeIntervalSince(sent) / 2).timeIntervalSince(server)
    }

    /// Throws ``ClockSkew`` unless `clock` is within `tolerance` of the server's.
    public func checkClock(_ clock: any WallClock, within tolerance: TimeInterval) async throws {
        let offset = try await self.clockOffset(of: clock)
        guard abs(offset) <= tolerance else { throw ClockSkew(offset: offset, tolerance: tolerance) }
    }
}
