import Foundation

// The words the rules of location offers speak. The service's ActivityMessages.swift maps them
// to and from the protobuf messages. Those stored are stored by their numbers (the wire's
// numbers too): never renumbered.

/// How often an activity is done: once for good, or once a day.
enum Recurrence: Int, Sendable {
    case once = 1
    case daily = 2
}

/// What a location rule offers on: arriving at its place or leaving it.
enum Trigger: Int, Sendable {
    case arrive = 1
    case leave = 2

    /// As the contract spells it.
    var name: String {
        switch self {
        case .arrive: "ARRIVE"
        case .leave: "LEAVE"
        }
    }
}

/// How an offer reaches the user: in the app in front, or as a notification.
enum OfferChannel: Int, Sendable {
    case inApp = 1
    case notification = 2
}

/// An answer to an offer.
enum OfferAction: Int, Sendable, CaseIterable {
    case markDone = 1
    case snooze15 = 2
    case snooze60 = 3
    case disable = 4
    case dismiss = 5
}

/// Why a location event made no offer (stored as 0 when it made one).
enum SuppressionReason: Int, Sendable {
    case disabled = 1
    case noRule = 2
    case ruleDisabled = 3
    case triggerMismatch = 4
    case staleEvent = 5
    case duplicateEvent = 6
    case notConfirmed = 7
    case eventCooldown = 8
    case alreadyDone = 9
    case quietHours = 10
    case dailyCap = 11
    case minSpacing = 12
    case permissionMissing = 13
    /// Set on an arrival afterwards, when a leave within the rule's minimum dwell dropped its
    /// held offer; or answered to an arrival whose stay is already known to have ended.
    case dwellNotMet = 14
}

/// What the phone allows the app, as it last reported; nil: never reported, taken as allowed.
struct Permissions: Sendable, Equatable {
    enum Location: Int, Sendable {
        case always = 1
        case whenInUse = 2
        case denied = 3
    }

    enum Notifications: Int, Sendable {
        case allowed = 1
        case denied = 2
    }

    var location: Location?
    var notifications: Notifications?
}

/// What an offer is at a moment.
enum OfferState: Sendable, Equatable {
    case scheduled
    case pending
    case answered
    case cancelled
    case expired
}

/// Offer preferences as SetOfferPreferences asks for them; nil: not given.
struct PreferencesDraft: Sendable, Equatable {
    struct QuietHours: Sendable, Equatable {
        var start: String
        var end: String
    }

    var enabled: Bool?
    var dailyCap: UInt32?
    var minSpacingMinutes: UInt32?
    var defaultCooldownMinutes: UInt32?
    var quietHours: QuietHours?
    var timeZone: String
}

/// A location rule as SetLocationRule asks for it; nil: not given.
struct RuleDraft: Sendable, Equatable {
    struct Place: Sendable, Equatable {
        var label = ""
        var latitude = 0.0
        var longitude = 0.0
        var radiusMeters: UInt32 = 0
    }

    var place: Place?
    /// Nil: none, or one the rules do not know.
    var trigger: Trigger?
    var delayMinutes: UInt32
    var cooldownMinutes: UInt32?
    var onlyIfIncomplete: Bool?
    var enabled: Bool?
    var minDwellMinutes: UInt32 = 0
}
