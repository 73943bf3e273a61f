import HearthCore

/// A prompt's words, in the task's language: a question that quotes the task's title and fits
/// the time of day, and a context line that says where in the task it falls.
struct PromptTexts: Sendable, Equatable {
    var question: String
    var context: String
    var questionType: String

    init(title: String, part: PartOfDay, day: Int, of days: Int, language: UserLanguage) {
        let texts = TaskText.catalog
        let (question, name): (TaskText, TaskText)
        switch part {
        case .morning:
            (question, name, self.questionType) = (.morningQuestion, .morning, "morning_intention")
        case .afternoon:
            (question, name, self.questionType) = (.afternoonQuestion, .afternoon, "afternoon_progress")
        case .evening:
            (question, name, self.questionType) = (.eveningQuestion, .evening, "evening_reflection")
        case .lateNight:
            (question, name, self.questionType) = (.lateNightQuestion, .lateNight, "late_night_wind_down")
        }
        self.question = texts.text(question, language, ["title": title])
        self.context = texts.text(
            .promptContext,
            language,
            ["day": "\(day)", "days": "\(days)", "part": texts.text(name, language), "title": title]
        )
    }
}
