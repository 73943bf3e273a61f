public import Foundation
public import HearthCore

/// Checks of request fields that several services share, each naming the field it checks.
public enum FieldChecks {
    /// Text trimmed of surrounding white space, with a user-perceived character count in
    /// `characters`.
    public static func trimmed(_ raw: String, field: String, characters: ClosedRange<Int>) -> Result<
        String, FieldViolation
    > {
        let text = raw.trimmingCharacters(in: .whitespacesAndNewlines)
        guard characters.contains(text.count) else {
            let description =
                characters.lowerBound == 0
                ? "has \(text.count) characters; at most \(characters.upperBound)"
                : "must have \(characters.lowerBound) to \(characters.upperBound) characters (has \(text.count))"
            return .failure(FieldViolation(field: field, description: description))
        }
        return .success(text)
    }

    /// The zone a request names; a violation unless it is an IANA zone.
    public static func zone(_ identifier: String, field: String = "time_zone") -> Result<TimeZone, FieldViolation> {
        guard let zone = TimeZone(iana: identifier) else {
            return .failure(
                FieldViolation(
                    field: field,
                    description: "'\(identifier)' is not an IANA time zone such as Asia/Taipei"
                )
            )
        }
        return .success(zone)
    }

    /// A `YYYY-MM-DD` date a request names.
    public static func date(_ text: String, field: String) -> Result<LocalDate, FieldViolation> {
        guard let date = LocalDate(text) else {
            return .failure(FieldViolation(field: field, description: "'\(text)' is not a date YYYY-MM-DD"))
        }
        return .success(date)
    }
}
