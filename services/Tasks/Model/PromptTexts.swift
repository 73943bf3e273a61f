/// A prompt's words: a question that quotes the task's title and fits the time of day, and a
/// context line that says where in the task it falls.
struct PromptTexts: Sendable, Equatable {
    var question: String
    var context: String
    var questionType: String

    init(title: String, part: PartOfDay, day: Int, of days: Int) {
        let quoted = "\u{201C}\(title)\u{201D}"
        switch part {
        case .morning:
            self.question = "Good morning! Let's check in on \(quoted). What feels most important about it today?"
            self.questionType = "morning_intention"
        case .afternoon:
            self.question = "Good afternoon! How is \(quoted) sitting with you so far today?"
            self.questionType = "afternoon_progress"
        case .evening:
            self.question = "Good evening! Looking back on today, what did you notice about \(quoted)?"
            self.questionType = "evening_reflection"
        case .lateNight:
            self.question = "Before you rest: any last thoughts on \(quoted) tonight?"
            self.questionType = "late_night_wind_down"
        }
        self.context = "Day \(day) of \(days): \(Self.name(of: part)) check-in for \(quoted)"
    }

    static func name(of part: PartOfDay) -> String {
        switch part {
        case .morning: "morning"
        case .afternoon: "afternoon"
        case .evening: "evening"
        case .lateNight: "late-night"
        }
    }
}
