import Foundation
import HearthContracts
import HearthCore
import SwiftProtobuf

extension ActivityWithRule {
    func message(now: Date, zone: TimeZone) -> Hearth_Tasks_V1_Activity {
        var activity = Hearth_Tasks_V1_Activity()
        activity.id = self.activity.id
        activity.title = self.activity.title
        activity.repeat = Hearth_Tasks_V1_Repeat(rawValue: self.activity.repeatKind) ?? .unspecified
        activity.priority = UInt32(self.activity.priority)
        activity.done = ActivityStore.isDone(self.activity, on: LocalDate(now, in: zone), in: zone)
        if let completedAt = self.activity.lastCompletedAt {
            activity.completedAt = Google_Protobuf_Timestamp(millisecondsOf: completedAt)
        }
        if let rule = self.rule {
            activity.rule = .with {
                $0.place = rule.place
                $0.trigger = Hearth_Tasks_V1_Trigger(rawValue: rule.trigger) ?? .unspecified
                $0.delayMinutes = UInt32(rule.delayMinutes)
                if let cooldown = rule.cooldownMinutes { $0.cooldownMinutes = UInt32(cooldown) }
                $0.onlyIfIncomplete = rule.onlyIfIncomplete
                $0.enabled = rule.enabled
                $0.minDwellMinutes = UInt32(rule.minDwellMinutes)
                $0.updatedAt = Google_Protobuf_Timestamp(millisecondsOf: rule.updatedAt)
            }
        }
        activity.createdAt = Google_Protobuf_Timestamp(millisecondsOf: self.activity.createdAt)
        activity.updatedAt = Google_Protobuf_Timestamp(millisecondsOf: self.activity.updatedAt)
        return activity
    }
}

extension RuleRecord {
    var place: Hearth_Tasks_V1_Place {
        .with {
            $0.label = self.label
            $0.latitude = self.latitude
            $0.longitude = self.longitude
            $0.radiusM = UInt32(self.radiusM)
        }
    }
}

extension OfferRecord {
    /// The offer, its words in `language` (the reader's: an offer is read, never pushed).
    func message(now: Date, language: UserLanguage) -> Hearth_Tasks_V1_Offer {
        var offer = Hearth_Tasks_V1_Offer()
        offer.offerID = self.id
        offer.activityID = self.activityID
        offer.channel = Hearth_Tasks_V1_Channel(rawValue: self.channel) ?? .unspecified
        offer.deliverAt = Google_Protobuf_Timestamp(millisecondsOf: self.deliverAt)
        let texts = OfferRules.texts(title: self.title, language: language)
        offer.title = texts.title
        offer.body = texts.body
        offer.actions = OfferRules.actions.map { .init($0) }
        offer.state = .init(
            OfferRules.offerState(
                answered: self.action != nil,
                cancelled: self.cancelledAt != nil,
                deliverAt: self.deliverAt,
                now: now
            )
        )
        if let action = self.action { offer.action = Hearth_Tasks_V1_OfferAction(rawValue: action) ?? .unspecified }
        offer.snoozed = self.snoozed
        offer.trigger = Hearth_Tasks_V1_Trigger(rawValue: self.trigger) ?? .unspecified
        return offer
    }
}

extension PermissionsRecord {
    var message: Hearth_Tasks_V1_Permissions {
        .with {
            $0.location = Hearth_Tasks_V1_LocationPermission(rawValue: self.location) ?? .unspecified
            $0.notifications = Hearth_Tasks_V1_NotificationPermission(rawValue: self.notifications) ?? .unspecified
            $0.reportedAt = Google_Protobuf_Timestamp(millisecondsOf: self.reportedAt)
        }
    }
}

extension OfferRules.Preferences {
    /// With the phone's permissions as last reported (none: never).
    func message(permissions: PermissionsRecord?) -> Hearth_Tasks_V1_OfferPreferences {
        var preferences = Hearth_Tasks_V1_OfferPreferences()
        preferences.enabled = self.enabled
        preferences.dailyCap = UInt32(self.dailyCap)
        preferences.minSpacingMinutes = UInt32(self.minSpacingMinutes)
        preferences.defaultCooldownMinutes = UInt32(self.defaultCooldownMinutes)
        if let quiet = self.quietHours {
            preferences.quietHours = .with {
                $0.start = TaskRules.DailyTime(hour: quiet.start / 60, minute: quiet.start % 60).text
                $0.end = TaskRules.DailyTime(hour: quiet.end / 60, minute: quiet.end % 60).text
            }
        }
        preferences.timeZone = self.timeZone
        if let permissions { preferences.permissions = permissions.message }
        return preferences
    }
}

extension Hearth_Tasks_V1_OfferAction {
    /// As the contract spells it (and a client sends it in JSON).
    var protoName: String {
        switch self {
        case .unspecified: "OFFER_ACTION_UNSPECIFIED"
        case .markDone: "MARK_DONE"
        case .snooze15: "SNOOZE_15"
        case .snooze60: "SNOOZE_60"
        case .disable: "DISABLE"
        case .dismiss: "DISMISS"
        case .UNRECOGNIZED(let value): "\(value)"
        }
    }
}

// MARK: Between the rules' words and the protobuf messages

extension RuleDraft {
    init(_ request: Hearth_Tasks_V1_SetLocationRuleRequest) {
        self.init(
            place: request.hasPlace
                ? Place(
                    label: request.place.label,
                    latitude: request.place.latitude,
                    longitude: request.place.longitude,
                    radiusMeters: request.place.radiusM
                ) : nil,
            trigger: Trigger(rawValue: request.trigger.rawValue),
            delayMinutes: request.delayMinutes,
            cooldownMinutes: request.hasCooldownMinutes ? request.cooldownMinutes : nil,
            onlyIfIncomplete: request.hasOnlyIfIncomplete ? request.onlyIfIncomplete : nil,
            enabled: request.hasEnabled ? request.enabled : nil,
            minDwellMinutes: request.minDwellMinutes
        )
    }
}

extension PreferencesDraft {
    init(_ request: Hearth_Tasks_V1_SetOfferPreferencesRequest) {
        self.init(
            enabled: request.hasEnabled ? request.enabled : nil,
            dailyCap: request.hasDailyCap ? request.dailyCap : nil,
            minSpacingMinutes: request.hasMinSpacingMinutes ? request.minSpacingMinutes : nil,
            defaultCooldownMinutes: request.hasDefaultCooldownMinutes ? request.defaultCooldownMinutes : nil,
            quietHours: request.hasQuietHours
                ? QuietHours(start: request.quietHours.start, end: request.quietHours.end) : nil,
            timeZone: request.timeZone
        )
    }
}

// The stored enums have the wire's numbers.

extension Hearth_Tasks_V1_OfferAction {
    init(_ action: OfferAction) { self = Self(rawValue: action.rawValue) ?? .unspecified }
}

extension Hearth_Tasks_V1_SuppressionReason {
    init(_ reason: SuppressionReason) { self = Self(rawValue: reason.rawValue) ?? .unspecified }
}

extension Hearth_Tasks_V1_OfferState {
    init(_ state: OfferState) {
        self =
            switch state {
            case .scheduled: .scheduled
            case .pending: .pending
            case .answered: .answered
            case .cancelled: .cancelled
            case .expired: .expired
            }
    }
}
