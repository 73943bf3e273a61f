public import Foundation
import HearthCore
public import NIOCore
public import PostgresNIO

/// A date in a `timestamptz` column, to the millisecond, as every Hearth store keeps dates: what
/// is written reads back equal (PostgresNIO's own `Date` coding truncates to the microsecond
/// through a `Double`, which does not always give back the same `Date`).
public struct PostgresTime: Sendable, Equatable, PostgresNonThrowingEncodable, PostgresDecodable {
    public var date: Date

    public init(_ date: Date) {
        self.date = date
    }

    /// `date` to the millisecond, as the store reads it back.
    public static func rounded(_ date: Date) -> Date {
        Self.date(milliseconds: date.millisecondsSince1970)
    }

    /// The date of a count of milliseconds since 1970, added up as the SQLite stores read
    /// theirs (``StoredDate``: the day's start, then the time of day), to the last bit: a record
    /// copied from one store to the other reads back equal.
    private static func date(milliseconds: Int64) -> Date {
        let (days, inDay) = Self.floorDivision(milliseconds, 86_400_000)
        let dayStart = days * 86_400 - 978_307_200
        let timeOfDay = Double(inDay / 1000) + Double((inDay % 1000) * 1_000_000) / 1e9
        return Date(timeIntervalSinceReferenceDate: Double(dayStart) + timeOfDay)
    }

    private static func floorDivision(_ value: Int64, _ divisor: Int64) -> (quotient: Int64, remainder: Int64) {
        let (quotient, remainder) = value.quotientAndRemainder(dividingBy: divisor)
        return remainder < 0 ? (quotient - 1, remainder + divisor) : (quotient, remainder)
    }

    /// PostgreSQL counts microseconds from 2000-01-01.
    private static let epochOffsetMilliseconds: Int64 = 946_684_800_000

    public static var psqlType: PostgresDataType { .timestamptz }
    public static var psqlFormat: PostgresFormat { .binary }

    public func encode<JSONEncoder: PostgresJSONEncoder>(
        into byteBuffer: inout ByteBuffer,
        context: PostgresEncodingContext<JSONEncoder>
    ) {
        byteBuffer.writeInteger((self.date.millisecondsSince1970 - Self.epochOffsetMilliseconds) * 1000)
    }

    public init<JSONDecoder: PostgresJSONDecoder>(
        from buffer: inout ByteBuffer,
        type: PostgresDataType,
        format: PostgresFormat,
        context: PostgresDecodingContext<JSONDecoder>
    ) throws {
        guard type == .timestamptz || type == .timestamp, format == .binary, buffer.readableBytes == 8,
            let microseconds = buffer.readInteger(as: Int64.self)
        else { throw PostgresDecodingError.Code.typeMismatch }
        // Floor division: a value written by hand with microseconds reads as its millisecond.
        self.date = Self.date(
            milliseconds: Self.floorDivision(microseconds, 1000).quotient + Self.epochOffsetMilliseconds
        )
    }
}

extension Date {
    /// This date for a `timestamptz` column (``PostgresTime``).
    public var postgres: PostgresTime { PostgresTime(self) }
}

extension Optional where Wrapped == Date {
    public var postgres: PostgresTime? { self.map(PostgresTime.init) }
}
