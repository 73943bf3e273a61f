import Foundation
import HearthCore

// The words the rules of tasks speak. The service's Messages.swift maps them to and from the
// protobuf messages; the rules and the stores never see those.

/// A part of the day, which a prompt's question fits. Stored by these numbers (a prompt's and
/// a check-in's `time_of_day`): never renumbered.
enum PartOfDay: Int, Sendable, CaseIterable {
    case morning = 1
    case afternoon = 2
    case evening = 3
    case lateNight = 4
}

/// A check-in time as a request names it: a part of the day's preset (nil: none known), a
/// custom local "HH:MM", or neither.
enum RequestedTime: Sendable, Equatable {
    case preset(PartOfDay?)
    case custom(String)
    case missing
}

/// A task as CreateTask asks for it, before its rules have checked it.
struct TaskDraft: Sendable, Equatable {
    var title: String
    var checkInTimes: [RequestedTime]
    var durationDays: Int
    var timeZone: String
    /// "YYYY-MM-DD", or empty for today.
    var startDate: String
    var clientRequestID: String
    /// What the caller asked to read in: the task's prompts are written in it.
    var language: UserLanguage
}

/// What a task has become, at a moment.
enum TaskState: Sendable, Equatable {
    case active
    case completed
    case cancelled
}

/// What a prompt has become, at a moment.
enum PromptState: Sendable, Equatable {
    case scheduled
    case due
    case responded
    case missed
    case dismissed
    case cancelled
}
