import Foundation

/// How a push of the switch shows on the phone, as the plan asks of the warnings: "Critical
/// (sound + vibration)", "Opens app directly to check-in button", an "I'm Safe" quick action.
/// The last warning before the alarm is critical, the earlier ones time-sensitive; the daily
/// reminder is an ordinary notification with the same check-in button. Pure: the service maps
/// it to the webhook's fields.
struct PushPresentation: Equatable, Sendable {
    enum Urgency: Sendable {
        case active
        case timeSensitive
        case critical
    }

    /// What a button does.
    enum ActionKind: String, Sendable, CaseIterable {
        /// Records a check-in (RecordHeartbeat).
        case imSafe = "IM_SAFE"
        /// Moves the deadline 24 h later (Snooze).
        case snooze = "SNOOZE"
    }

    struct Action: Equatable, Sendable {
        var kind: ActionKind
        /// In the user's language.
        var title: String
    }

    var urgency: Urgency
    /// The category the app registers the actions under; nil for a plain notification.
    var category: String?
    var actions: [Action]
    /// Tapping it opens the app at its check-in button.
    var opensCheckIn: Bool

    /// A warning: check in or snooze.
    static let warningCategory = "SAFETY_WARNING"
    /// The daily reminder: check in.
    static let reminderCategory = "SAFETY_REMINDER"
    /// Anything else the switch pushes (tests, news of contacts): shown plainly.
    static let plain = PushPresentation(urgency: .active, category: nil, actions: [], opensCheckIn: false)
}

extension AlertTexts {
    /// How the push of an alert row of `kind` (``DueItem/kind``, ``MessageKind``) shows.
    func presentation(ofPush kind: String) -> PushPresentation {
        let last = SafetyRules.warningMinutes.min().map { DueItem.warning(minutesBefore: $0).kind }
        let isWarning = SwitchClock.items.contains { $0.kind == kind && $0 != .alert }
        if isWarning {
            return PushPresentation(
                urgency: kind == last ? .critical : .timeSensitive,
                category: PushPresentation.warningCategory,
                actions: [self.action(.imSafe), self.action(.snooze)],
                opensCheckIn: true
            )
        }
        if kind == MessageKind.reminder {
            return PushPresentation(
                urgency: .active,
                category: PushPresentation.reminderCategory,
                actions: [self.action(.imSafe)],
                opensCheckIn: true
            )
        }
        return .plain
    }

    /// A button, titled in the user's language.
    func action(_ kind: PushPresentation.ActionKind) -> PushPresentation.Action {
        let title =
            switch (kind, self.language) {
            case (.imSafe, .english): "I'm safe"
            case (.imSafe, .simplifiedChinese), (.imSafe, .traditionalChinese): "我很安全"
            case (.snooze, .english): "Snooze 24 h"
            case (.snooze, .simplifiedChinese): "延后 24 小时"
            case (.snooze, .traditionalChinese): "延後 24 小時"
            }
        return PushPresentation.Action(kind: kind, title: title)
    }
}
