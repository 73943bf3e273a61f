import Foundation
import HearthCore
import HearthRPC

/// The rules of routines, as pure functions: no clock, no storage.
enum RoutineRules {
    static let maxTitleCharacters = 100
    static let maxCategoryCharacters = 50
    static let maxActionCharacters = 280
    static let maxActions = 10
    static let maxRoutinesPerNest = 100
    /// The longest GetHistory range, and how far back a streak is counted.
    static let maxHistoryDays = 366
    /// The most nests an erasure or an export (EraseUser, ExportUser) names as the user's own.
    static let maxOwnedNests = 1_000

    /// A title trimmed of surrounding white space, 1-100 user-perceived characters.
    static func title(_ raw: String) -> Result<String, FieldViolation> {
        FieldChecks.trimmed(raw, field: "title", characters: 1...Self.maxTitleCharacters)
    }

    /// A folder name trimmed, 0-50 characters (empty: no folder).
    static func category(_ raw: String) -> Result<String, FieldViolation> {
        FieldChecks.trimmed(raw, field: "category", characters: 0...Self.maxCategoryCharacters)
    }

    /// An action's text trimmed, 1-280 characters.
    static func actionText(_ raw: String, field: String = "text") -> Result<String, FieldViolation> {
        FieldChecks.trimmed(raw, field: field, characters: 1...Self.maxActionCharacters)
    }

    /// Every violation of a new routine at once.
    static func newRoutine(title: String, category: String, actions: [String]) -> Result<
        (title: String, category: String, actions: [String]), RPCError
    > {
        var violations: [FieldViolation] = []
        let title = Self.title(title)
        let category = Self.category(category)
        if case .failure(let violation) = title { violations.append(violation) }
        if case .failure(let violation) = category { violations.append(violation) }
        var texts: [String] = []
        for (index, raw) in actions.enumerated() {
            switch Self.actionText(raw, field: "actions[\(index)]") {
            case .success(let text): texts.append(text)
            case .failure(let violation): violations.append(violation)
            }
        }
        if actions.count > Self.maxActions {
            violations.append(
                FieldViolation(
                    field: "actions",
                    description: "has \(actions.count) actions; a routine has at most \(Self.maxActions)"
                )
            )
        }
        guard violations.isEmpty, case .success(let t) = title, case .success(let c) = category else {
            return .failure(.invalidArgument(violations))
        }
        return .success((t, c, texts))
    }

    /// The nests an erasure or an export names as the user's own (`owned_nest_ids`): at most
    /// 1,000, none empty (an empty id names no nest: the caller lost track of one). A repeat is
    /// harmless: an erasure finds nothing left the second time, an export reads each nest once.
    static func ownedNests(_ ids: [String]) -> Result<[String], FieldViolation> {
        guard ids.count <= Self.maxOwnedNests else {
            return .failure(
                FieldViolation(
                    field: "owned_nest_ids",
                    description: "has \(ids.count) ids; a call names at most \(Self.maxOwnedNests)"
                )
            )
        }
        if let index = ids.firstIndex(where: \.isEmpty) {
            return .failure(FieldViolation(field: "owned_nest_ids", description: "[\(index)] is empty"))
        }
        return .success(ids)
    }

    /// An action as it bears on a day's total: it counts on every day at whose end it existed.
    struct ActionLife: Sendable, Equatable {
        var id: String
        var createdAt: Date
        var removedAt: Date?

        /// Whether it existed when a day ended at `end`: added before then, removed after.
        func counts(onDayEndingAt end: Date) -> Bool {
            self.createdAt < end && (self.removedAt.map { $0 >= end } ?? true)
        }
    }

    /// One day's done and total: today's total drops an action removed today, while a past
    /// day keeps the actions it had when it ended (and their ticks).
    static func day(
        _ date: LocalDate,
        actions: [ActionLife],
        doneActionIDs: Set<String>,
        in zone: TimeZone
    ) -> (done: [String], total: Int) {
        let end = date.adding(days: 1).start(in: zone)
        let counted = actions.filter { $0.counts(onDayEndingAt: end) }
        return (counted.map(\.id).filter(doneActionIDs.contains), counted.count)
    }

    /// Consecutive days with every action done, counting back from today; today counts once
    /// it is complete (until then the streak runs to yesterday). `isComplete` answers per day.
    static func streak(today: LocalDate, limit: Int = maxHistoryDays, isComplete: (LocalDate) -> Bool) -> Int {
        var date = isComplete(today) ? today : today.adding(days: -1)
        var streak = 0
        while streak < limit, isComplete(date) {
            streak += 1
            date = date.adding(days: -1)
        }
        return streak
    }
}
