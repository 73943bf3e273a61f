import Foundation
import HearthCore
import HearthRPC

// The answers to prompts and the task summary they add up to.
extension TaskRules {
    // MARK: Answers

    /// A check-in's content: the same content sent twice is one answer.
    struct Answer: Sendable, Equatable {
        var text: String
        var energy: Int?
        var mood: Int?
        var focus: Int?
        var questionType: String?
        var insights: [String]
    }

    /// Every violation of an answer at once.
    static func answer(
        text: String,
        energy: UInt32?,
        mood: UInt32?,
        focus: UInt32?,
        questionType: String?,
        insights: [String]
    ) -> Result<Answer, RPCError> {
        var violations: [FieldViolation] = []
        // An answer may run over several lines (a name, a title or a label may not).
        let text = FieldChecks.trimmed(
            text,
            field: "response_text",
            characters: 1...Self.maxResponseCharacters,
            allowingLineFeeds: true
        )
        if case .failure(let violation) = text { violations.append(violation) }
        for (field, score) in [("energy", energy), ("mood", mood), ("focus", focus)] {
            if let score, !Self.scores.contains(Int(score)) {
                violations.append(FieldViolation(field: field, description: "must be 1 to 5 (is \(score))"))
            }
        }
        var type: String?
        if let questionType {
            switch FieldChecks.trimmed(
                questionType,
                field: "question_type",
                characters: 1...Self.maxQuestionTypeCharacters
            ) {
            case .success(let value): type = value
            case .failure(let violation): violations.append(violation)
            }
        }
        if insights.count > Self.maxInsights {
            violations.append(
                FieldViolation(field: "insights", description: "has \(insights.count); at most \(Self.maxInsights)")
            )
        }
        var cleanInsights: [String] = []
        for (index, insight) in insights.enumerated() {
            switch FieldChecks.trimmed(
                insight,
                field: "insights[\(index)]",
                characters: 1...Self.maxInsightCharacters,
                allowingLineFeeds: true
            ) {
            case .success(let value): cleanInsights.append(value)
            case .failure(let violation): violations.append(violation)
            }
        }
        guard violations.isEmpty, case .success(let text) = text else { return .failure(.invalidArgument(violations)) }
        return .success(
            Answer(
                text: text,
                energy: energy.map(Int.init),
                mood: mood.map(Int.init),
                focus: focus.map(Int.init),
                questionType: type,
                insights: cleanInsights
            )
        )
    }

    // MARK: Summary

    struct Summary: Sendable, Equatable {
        struct Day: Sendable, Equatable {
            var localDate: String
            var checkIns: Int
            var energy: Double?
            var mood: Double?
            var focus: Double?
        }

        var scheduled = 0
        var answered = 0
        var missed = 0
        var dismissed = 0
        var responseRate = 0.0
        var days: [Day] = []
    }

    /// Whether a prompt's time has come, for the response rate: never for one dismissed ahead
    /// of it (the user said beforehand they would not answer it), not even once it passed.
    static func timeHasCome(scheduledAt: Date, dismissedAt: Date?, now: Date) -> Bool {
        scheduledAt <= now && !(dismissedAt.map { $0 < scheduledAt } ?? false)
    }

    /// Counts over the prompts' states, and per local day the average of each score given.
    /// The response rate is answered over prompts whose time has come (``timeHasCome(scheduledAt:dismissedAt:now:)``,
    /// not cancelled): one dismissed before its time does not count against it.
    static func summary(
        prompts: [(state: PromptState, timeHasCome: Bool)],
        checkIns: [(localDate: String, energy: Int?, mood: Int?, focus: Int?)]
    ) -> Summary {
        var summary = Summary()
        var come = 0
        for (state, timeHasCome) in prompts {
            switch state {
            case .cancelled: continue
            case .responded: summary.answered += 1
            case .missed: summary.missed += 1
            case .dismissed: summary.dismissed += 1
            default: break
            }
            summary.scheduled += 1
            if timeHasCome { come += 1 }
        }
        summary.responseRate = come == 0 ? 0 : Double(summary.answered) / Double(come)
        func average(_ values: [Int?]) -> Double? {
            let given = values.compactMap { $0 }
            return given.isEmpty ? nil : Double(given.reduce(0, +)) / Double(given.count)
        }
        let byDay = Dictionary(grouping: checkIns, by: \.localDate)
        summary.days = byDay.keys.sorted().map { date in
            let day = byDay[date]!
            return Summary.Day(
                localDate: date,
                checkIns: day.count,
                energy: average(day.map(\.energy)),
                mood: average(day.map(\.mood)),
                focus: average(day.map(\.focus))
            )
        }
        return summary
    }
}
