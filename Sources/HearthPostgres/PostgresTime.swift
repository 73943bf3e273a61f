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

    private static func date(milliseconds: Int64) -> Date {
        Date(timeIntervalSince1970: Double(milliseconds) / 1000)
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
        let (quotient, remainder) = microseconds.quotientAndRemainder(dividingBy: 1000)
        self.date = Self.date(milliseconds: (remainder < 0 ? quotient - 1 : quotient) + Self.epochOffsetMilliseconds)
    }
}

extension Date {
    /// This date for a `timestamptz` column (``PostgresTime``).
    public var postgres: PostgresTime { PostgresTime(self) }
}

extension Optional where Wrapped == Date {
    public var postgres: PostgresTime? { self.map(PostgresTime.init) }
}
