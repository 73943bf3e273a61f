import Foundation
import HearthCore
import HearthRPC

/// The rules of check-ins, as pure functions: no clock, no storage.
enum CheckinRules {
    static let maxCaptionCharacters = 280
    static let maxAltTextCharacters = 1_000
    static let maxPerLocalDay = 10
    static let maxFutureSkew: TimeInterval = 5 * 60
    static let lateArrival: TimeInterval = 24 * 3600
    static let maxNestNameCharacters = 100
    /// Nests one user may own (a nest cannot be deleted).
    static let maxNestsPerOwner = 100
    /// Sessions of one nest not yet ended (a sitter a week, planned two years ahead): each
    /// names its sitter, whose list of nests reads them.
    static let maxOpenSessionsPerNest = 100
    static let maxTemplateCharacters = 100
    static let maxTemplatesPerNest = 50
    static let defaultTemplates = ["Pet fed", "All good", "Walk done", "Home secure"]

    /// Whether two quick captions are the same to their owner: equal but for case in any
    /// script ("КОТ" and "кот", "CAFÉ" and "café"), and with accents composed or not.
    static func sameTemplate(_ one: String, _ other: String) -> Bool {
        one.compare(other, options: .caseInsensitive) == .orderedSame
    }

    /// A caption trimmed of surrounding white space; at most 280 user-perceived characters (an
    /// emoji or a letter with its accents is one), of 64 bytes each on average at most (see
    /// ``FieldChecks/trimmed(_:field:characters:)``); empty only with a photo.
    static func caption(_ raw: String, hasPhoto: Bool) -> Result<String, FieldViolation> {
        FieldChecks.trimmed(raw, field: "caption", characters: 0...Self.maxCaptionCharacters).flatMap { caption in
            caption.isEmpty && !hasPhoto
                ? .failure(FieldViolation(field: "caption", description: "must not be empty without a photo"))
                : .success(caption)
        }
    }

    /// A photo's description for screen readers, trimmed; at most 1,000 user-perceived
    /// characters (each may take many bytes: a timeline page ends early to fit its frame).
    static func altText(_ raw: String) -> Result<String, FieldViolation> {
        FieldChecks.trimmed(raw, field: "photo_alt_text", characters: 0...Self.maxAltTextCharacters)
    }

    /// Whether a session was ended before it began (EndSession then sets its end to its
    /// start; a session is made with its start before its end): it takes no check-ins and
    /// lets its sitter see nothing.
    static func calledOff(startsAt: Date, endsAt: Date) -> Bool {
        endsAt <= startsAt
    }

    /// Why a check-in captured at `capturedAt` and received at `now` does not fit `session`, if
    /// it does not: it must be taken within the session (and not more than 5 minutes ahead of
    /// now), and arrive no later than 24 hours after the session ends (queued offline). A
    /// session ended before it began (its end moved to its start) takes none.
    static func timingViolation(capturedAt: Date, now: Date, startsAt: Date, endsAt: Date) -> FieldViolation? {
        if Self.calledOff(startsAt: startsAt, endsAt: endsAt) {
            return FieldViolation(field: "session_id", description: "was ended before it began; it takes no check-ins")
        }
        if capturedAt < startsAt {
            return FieldViolation(field: "captured_at", description: "is before the session starts")
        }
        if capturedAt > endsAt {
            return FieldViolation(field: "captured_at", description: "is after the session ends")
        }
        if capturedAt > now.addingTimeInterval(Self.maxFutureSkew) {
            return FieldViolation(field: "captured_at", description: "is more than 5 minutes in the future")
        }
        if now > endsAt.addingTimeInterval(Self.lateArrival) {
            return FieldViolation(
                field: "session_id",
                description: "ended more than 24 hours ago; check-ins are closed"
            )
        }
        return nil
    }

    /// A trimmed nest name, 1-100 characters.
    static func nestName(_ raw: String) -> Result<String, FieldViolation> {
        FieldChecks.trimmed(raw, field: "name", characters: 1...Self.maxNestNameCharacters)
    }

    /// A trimmed template text, 1-100 characters.
    static func templateText(_ raw: String) -> Result<String, FieldViolation> {
        FieldChecks.trimmed(raw, field: "text", characters: 1...Self.maxTemplateCharacters)
    }

    /// A session's sitter, time window and zone, checked together (`startsAt` and `endsAt`
    /// nil when missing or invalid: the caller reports those).
    static func sessionViolations(
        sitter: String,
        owner: String,
        startsAt: Date?,
        endsAt: Date?,
        timeZone: String
    ) -> [FieldViolation] {
        var violations: [FieldViolation] = []
        if sitter.isEmpty {
            violations.append(FieldViolation(field: "sitter_user_id", description: "is required"))
        } else if sitter == owner {
            violations.append(
                FieldViolation(field: "sitter_user_id", description: "must be someone other than the owner")
            )
        }
        if let startsAt, let endsAt, endsAt <= startsAt {
            violations.append(FieldViolation(field: "ends_at", description: "must be after starts_at"))
        }
        if TimeZone(iana: timeZone) == nil {
            violations.append(FieldViolation(field: "time_zone", description: "'\(timeZone)' is not an IANA time zone"))
        }
        return violations
    }
}

/// Who a user is to a nest.
enum NestRole: Sendable, Equatable {
    case owner
    /// A sitter with a session in the nest active now.
    case sitter
    case none
}

/// Who a user is to a nest, by the rules.
enum NestRoleRule {
    /// OWNER for the owner; SITTER while the user has a session in the nest active at `now`.
    static func role(user: String, owner: String, sitterSessions: [(startsAt: Date, endsAt: Date)], now: Date)
        -> NestRole
    {
        if user == owner { return .owner }
        if sitterSessions.contains(where: { $0.startsAt <= now && now < $0.endsAt }) { return .sitter }
        return .none
    }

    /// Whether `user` may see the nest at all (its name, captions, sessions): its owner, or a
    /// sitter with a session under way, to come, or ended less than a day ago (while late
    /// check-ins are still taken). A sitter whose sessions all ended longer ago sees it no
    /// more; their own sessions and check-ins stay theirs to read by id.
    static func canSee(user: String, owner: String, sitterSessions: [(startsAt: Date, endsAt: Date)], now: Date)
        -> Bool
    {
        user == owner
            || sitterSessions.contains {
                !CheckinRules.calledOff(startsAt: $0.startsAt, endsAt: $0.endsAt)
                    && now <= $0.endsAt.addingTimeInterval(CheckinRules.lateArrival)
            }
    }
}
